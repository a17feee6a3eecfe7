/*
 * gdn.c -- Gated DeltaNet linear-attention layers (Qwen3-Next): the
 * layer pattern, the layer's parameters, FLOPs, saved bytes and kernels.
 *
 * A Qwen3-Next layer is a transformer layer (pre-norm, mixer, residual,
 * pre-norm, MLP or MoE, residual) whose mixer is a Gated DeltaNet on most
 * layers and gated softmax attention on every k-th (transformers
 * Qwen3NextDecoderLayer, modeling_qwen3_next.py @ 7515843b; layer_types
 * from full_attention_interval k, configuration_qwen3_next.py @ 249ef816;
 * Megatron-Core --linear-attention-freq k, experimental_attention_variant_
 * module_specs.py get_linear_attention_pattern @ d98e8a64: layer i,
 * 1-based, is full attention when i % k == 0).  Like the hybrid Mamba-2
 * models (hybrid.c) the per-layer estimates price the mean layer, through
 * aps_hybrid_mix: attn_share = floor(L / k) / L of an attention block,
 * gdn_share of a Gated DeltaNet block, one MLP block.  Over pipeline
 * stages each rank's mean layer is that of its own layers
 * (aps_hybrid_stage_mix, aps_gdn_count over aps_layout_rank_spans):
 * Megatron-Core builds the whole model's layer specs from the global
 * pattern and keeps those of the rank's global layer ids, the layout's
 * or offset .. offset + num_layers_to_build - 1 of each virtual stage
 * (get_transformer_block_with_experimental_attention_variant_spec,
 * experimental_attention_variant_module_specs.py l.322-332 @ d98e8a64),
 * so the kinds follow the split as the MoE layers do (moe.c).
 *
 * Gated DeltaNet layer, K = nk dk, V = nv dv (Megatron-Core
 * megatron/core/ssm/gated_delta_net/common.py GatedDeltaNetBase @
 * d98e8a64; transformers Qwen3NextGatedDeltaNet):
 *   in_proj   h -> 2K + 2V + 2nv  ([q, k, v, z, beta, alpha]; column
 *             parallel, the pre-norm fused in: TELayerNormColumnParallel)
 *   conv1d    depthwise over q, k, v: 2K + V channels, kc weights each,
 *             no bias (conv_bias = False; HF bias=False), split over TP
 *   dt_bias, A_log  nv each, split over TP
 *   out_norm  gated RMSNorm over dv (one head), replicated
 *   out_proj  V -> h                 (row parallel)
 * The delta-rule scan runs per value head (q and k repeated nv / nk
 * times) in chunks of C = 64 tokens (gdn.py GatedDeltaNet._setup_variant_
 * attrs chunk_size = 64, FLA chunk_gated_delta_rule's BT).
 *
 * Kimi Delta Attention (Kimi Linear; linear_attention = kda), H heads of
 * d = dk = dv (NeMo AutoModel nemo_automodel/components/models/
 * kimi_linear/model.py @ 36044ad3 KimiDeltaAttention, l.517-571;
 * transformers models/kimi_linear KimiLinearDeltaAttention):
 *   q_proj, k_proj, v_proj   h -> H d each
 *   q/k/v_conv1d             FLA ShortConvolution, K weights a channel,
 *                            no bias, over 3 H d channels
 *   f_a_proj, f_b_proj       h -> d -> H d: the forget gate, one decay
 *                            per key channel
 *   b_proj                   h -> H (beta)
 *   A_log H, dt_bias H d     fp32
 *   g_a_proj, g_b_proj       h -> d -> H d: the output gate
 *   o_norm                   gated RMSNorm over d
 *   o_proj                   H d -> h
 * and FLA's chunk_kda for the rule (fla/ops/kda/chunk.py @ df21b259:
 * chunk_kda_fwd_intra, chunk_gated_delta_rule_fwd_h, chunk_gla_fwd_o_gk
 * over 64-token chunks).  Its chunked form is Gated DeltaNet's with the
 * decay folded into q and k per channel (Kimi Linear, arXiv:2510.26692
 * s.3), so its FLOPs are priced by the same count.  The layers are
 * placed by linear_attention_pattern (Kimi Linear's 1-based
 * full_attn_layers are not periodic: 4, 8, ..., 24, 27).
 *
 * LFM2's gated short convolution (linear_attention = short_conv; Liquid
 * AI's LFM2 and LFM2.5, transformers models/lfm2/modeling_lfm2.py
 * Lfm2ShortConv @ 0096ba4f), no heads, the width h = hidden_size:
 *   in_proj   h -> 3h, chunked into B, C, x (conv_bias: no bias)
 *   B x       element-wise product
 *   conv      depthwise causal conv over B x: h channels, conv_L_cache
 *             (3) weights each (causal_conv1d_fn with activation None)
 *   C conv    element-wise product, transposed back (.contiguous())
 *   out_proj  h -> h
 * No scan, no state beyond the conv's window, no norm inside.  The layers
 * are placed by linear_attention_pattern from layer_types (conv or
 * full_attention; older files full_attn_idxs).  NeMo AutoModel trains it
 * as transformers builds it (its checkpoint conversion lists lfm2_moe,
 * components/checkpoint/conversion_mapping.py @ 36044ad3; no model of its
 * own): FSDP2 only (aps_gdn_refusal).
 *
 * MiniMax-Text-01 / M1's lightning attention (linear_attention =
 * lightning), H heads of d (nk = nv = H, dk = dv = d; transformers
 * models/minimax/modular_minimax.py MiniMaxLightningAttention @ 008e5743):
 *   qkv_proj     h -> 3 H d, then SiLU (no bias)
 *   output_gate  h -> H d, sigmoid, times the normed output
 *   norm         RMSNorm over H d (MiniMaxRMSNorm, eager, fp32 inside)
 *   out_proj     H d -> h
 * and, per head, the decayed linear attention in blocks of B =
 * linear_block_size tokens (block_size, 256): within a block (Q K^T) *
 * decay times V, across blocks (Q * q_decay) S with the d x d state S
 * updated by (K * k_decay)^T V -- a Python loop over ceil(s / B) blocks of
 * small batched matmuls (its training path; no fused kernel in
 * transformers).  No conv, no state beyond S.  Nothing but transformers
 * has the layer among the engines apsearch writes for (Megatron-LM
 * @ d98e8a64 experimental_attention_variant gdn, gdn2, dsa; no
 * MiniMax-Text-01 model in NeMo AutoModel @ 36044ad3 or TorchTitan):
 * NeMo AutoModel trains transformers' MiniMaxForCausalLM, FSDP2 only
 * (aps_gdn_refusal).
 *
 * Jamba's Mamba-1 mixer (linear_attention = mamba1): its widths, saved
 * tensors, kernels and refusals are selscan.c's; the functions here hand
 * them on.
 */
#include <math.h>
#include <string.h>
#include "internal.h"

/** Chunk length of the chunked delta rule, tokens: Megatron-Core
 *  megatron/core/ssm/gated_delta_net/gdn.py @ d98e8a64 (chunk_size = 64,
 *  hard-coded; the torch reference torch_chunk_gated_delta_rule and FLA's
 *  chunk kernels use the same). */
#define APS_GDN_CHUNK 64.0
/** Forward kernels of a Gated DeltaNet layer from Python (GatedDeltaNet.
 *  forward @ d98e8a64 with FLA): the fused norm + in_proj GEMM (2),
 *  causal_conv1d (1), the L2 norm of q and k (1), the gates (1), FLA's
 *  chunk_gated_delta_rule: chunk_local_cumsum, chunk_scaled_dot_kkt,
 *  solve_tril, recompute_w_u, chunk_gated_delta_rule_fwd_h, chunk_fwd_o
 *  (6), the gated RMSNorm (1), out_proj (1), bias-dropout-add (1). */
#define APS_HK_GDN 14.0
/** Forward kernels of a KDA mixer from Python (KimiDeltaAttention.
 *  _kda_core @ 36044ad3 with FLA @ df21b259): q, k, v projections (3),
 *  their short convolutions (3), f_a and f_b (2), b_proj with its cast
 *  and sigmoid (3), the fp32 gate (1), chunk_kda: the L2 norms of q and
 *  k (2), chunk_local_cumsum (1), chunk_kda_fwd_intra (2),
 *  chunk_gated_delta_rule_fwd_h (1), chunk_gla_fwd_o_gk (1); g_a and
 *  g_b (2), o_norm (1), o_proj (1), the residual add (1). */
#define APS_HK_KDA 23.0
/** Forward kernels of a gated short convolution from Python
 *  (Lfm2ShortConv.cuda_kernels_forward @ 0096ba4f, causal_conv1d present):
 *  in_proj (1), B * x (1), causal_conv1d_fn (1), C * conv_out (1), the
 *  transpose's .contiguous() (1), out_proj (1), the residual add (1). */
#define APS_HK_SHORT_CONV 7.0
/** Forward kernels of a lightning-attention layer's attention block from
 *  Python, outside its block loop (MiniMaxDecoderLayer.forward and
 *  MiniMaxLightningAttention.forward @ 008e5743): the eager
 *  input_layernorm (to fp32, pow, mean, add, rsqrt, multiply, to bf16,
 *  weight: 8), qkv_proj and SiLU (2), the state's zeros (1), torch.cat of
 *  the blocks' outputs (1), the transpose-reshape copy (1), the eager
 *  norm (8), output_gate, sigmoid and the gating product (3), out_proj
 *  (1), the scaled residual, residual * alpha + out * beta (3). */
#define APS_HK_LIGHTNING 28.0
/** Forward kernels of one block of the loop: Q K^T, times the diagonal
 *  decay, times V (3); Q * q_decay, times the state, plus the intra part
 *  (3); the block decay exp(-slope * size) (3: negation, product, exp);
 *  K * k_decay, its transpose times V, the decayed state plus that (4). */
#define APS_HK_LIGHTNING_BLOCK 13.0

void aps_gdn_count(const aps_model *m, int64_t from, int64_t n,
                   aps_hybrid_counts *out)
{
    int64_t attn = 0;
    if (m->linear_attention_pattern[0] != '\0') {
        /* the pattern's letters, validated to num_layers of L and A */
        for (int64_t l = from; l < from + n; l++)
            attn += m->linear_attention_pattern[l] == 'A';
    } else {
        /* 0-based layer l is attention when (l + 1) % k == 0: those of
         * 0 .. x - 1 are floor(x / k) */
        int64_t k = m->linear_attention_period;
        attn = (from + n) / k - from / k;
    }
    out->attn += attn;
    out->gdn += n - attn;
}

void aps_gdn_set_shares(aps_hybrid_counts *out)
{
    double L = (double)(out->attn + out->gdn);
    out->attn_share = L > 0 ? (double)out->attn / L : 0.0;
    out->gdn_share = L > 0 ? (double)out->gdn / L : 0.0;
}

void aps_gdn_mix(const aps_model *m, aps_hybrid_counts *out)
{
    out->attn = out->gdn = 0;
    aps_gdn_count(m, 0, m->num_layers, out);
    aps_gdn_set_shares(out);
}

double aps_gdn_attn_share(const aps_model *m)
{
    if (!aps_model_has_gdn(m))
        return 1.0;
    aps_hybrid_counts w = {0};
    aps_gdn_mix(m, &w);
    return w.attn_share;
}

/** K = nk dk: the width of q (and of k); none in a short convolution. */
static double key_width(const aps_model *m)
{
    return (double)m->linear_num_key_heads * (double)m->linear_key_head_dim;
}

/** V = nv dv: the width of v (and of the gate z); a short convolution's
 *  x, h. */
static double value_width(const aps_model *m)
{
    if (aps_model_has_short_conv(m))
        return (double)m->hidden_size;
    if (aps_model_has_mamba1(m)) /* D */
        return (double)m->linear_inner_size;
    return (double)m->linear_num_value_heads *
           (double)m->linear_value_head_dim;
}

double aps_gdn_out_width(const aps_model *m) { return value_width(m); }

double aps_gdn_in_proj_width(const aps_model *m)
{
    double nv = (double)m->linear_num_value_heads;
    double dv = (double)m->linear_value_head_dim;
    if (aps_model_has_short_conv(m)) /* B, C, x */
        return 3.0 * value_width(m);
    if (aps_model_has_lightning(m)) /* qkv_proj; output_gate */
        return 4.0 * value_width(m);
    if (aps_model_has_mamba1(m)) /* x, z */
        return 2.0 * value_width(m);
    if (aps_model_has_kda(m)) /* q, k, v; f_a; g_a (or K3's g_proj); b */
        return 2.0 * key_width(m) + value_width(m) + dv +
               (m->linear_output_gate_full_rank ? value_width(m) : dv) + nv;
    return 2.0 * key_width(m) + 2.0 * value_width(m) + 2.0 * nv;
}

int aps_gdn_inner_gemms(const aps_model *m, aps_gemm_nk out[2])
{
    if (aps_model_has_mamba1(m))
        return aps_selscan_inner_gemms(m, out);
    if (!aps_model_has_kda(m))
        return 0;
    /* f_b, and g_b unless the output gate is one full-rank g_proj */
    out[0] = (aps_gemm_nk){
        (m->linear_output_gate_full_rank ? 1.0 : 2.0) * value_width(m),
        (double)m->linear_value_head_dim};
    return 1;
}

double aps_gdn_conv_dim(const aps_model *m)
{
    if (aps_model_has_lightning(m)) /* no conv */
        return 0.0;
    if (aps_model_has_mamba1(m)) /* over x */
        return value_width(m);
    return 2.0 * key_width(m) + value_width(m); /* short conv: K = 0 */
}

double aps_gdn_matmul_params(const aps_model *m)
{
    double h = (double)m->hidden_size;
    aps_gemm_nk g[2];
    double inner = 0.0;
    for (int i = 0, k = aps_gdn_inner_gemms(m, g); i < k; i++)
        inner += g[i].n * g[i].k;
    return h * aps_gdn_in_proj_width(m) + inner + value_width(m) * h;
}

double aps_gdn_params_tp(const aps_model *m, int64_t tp)
{
    double t = (double)tp;
    double conv = aps_gdn_conv_dim(m) * (double)m->linear_conv_kernel_dim;
    double nv = (double)m->linear_num_value_heads;
    if (aps_model_has_short_conv(m)) /* no gate parameters, no norm */
        return (aps_gdn_matmul_params(m) + conv) / t;
    if (aps_model_has_lightning(m)) /* the norm over H d; no TP (refused) */
        return aps_gdn_matmul_params(m) / t + value_width(m);
    if (aps_model_has_mamba1(m)) /* no TP (refused) */
        return (aps_gdn_matmul_params(m) + aps_selscan_other_params(m)) / t;
    /* A_log and dt_bias: nv each (GDN); nv and nv dv (KDA's per-channel
     * dt_bias, KimiKDAFp32Params) */
    double gates = aps_model_has_kda(m) ? nv + value_width(m) : 2.0 * nv;
    return (aps_gdn_matmul_params(m) + conv + gates) / t +
           (double)m->linear_value_head_dim; /* out_norm, replicated */
}

/** Tokens of one lightning-attention block of a seq-token sequence: the
 *  loop's first block is min(B, seq) long (MiniMaxLightningAttention:
 *  current_block_size = end_idx - start_idx), so a block longer than the
 *  sequence costs the sequence. */
static double lightning_block(const aps_model *m, double seq)
{
    double B = (double)m->linear_block_size;
    return seq >= 1.0 && seq < B ? seq : B;
}

double aps_gdn_scan_flops(const aps_model *m, double T, double seq)
{
    if (aps_model_has_short_conv(m)) /* two products, memory-bound */
        return 0.0;
    if (aps_model_has_mamba1(m))
        return aps_selscan_scan_flops(m, T);
    if (aps_model_has_lightning(m)) {
        /* multiply-adds per token and head of MiniMaxLightningAttention's
         * block loop: Q K^T and (.) V over the whole B x B block, 2 B d
         * (the decay mask zeroes the upper triangle after the product);
         * (Q q_decay) S and (K k_decay)^T V, 2 d^2 */
        double B = lightning_block(m, seq);
        double d = (double)m->linear_value_head_dim;
        return 2.0 * T * (double)m->linear_num_value_heads *
               (2.0 * B * d + 2.0 * d * d);
    }
    double C = APS_GDN_CHUNK, dk = (double)m->linear_key_head_dim;
    double dv = (double)m->linear_value_head_dim;
    /* multiply-adds per token and value head of the chunked form (Yang et
     * al. 2024, arXiv:2412.06464 s.3.3, as gdn.py torch_chunk_gated_delta_
     * rule computes it): K_beta K^T, A (K_beta g), A V_beta, Q K^T and
     * P V_new within the chunk, C (3 dk + 2 dv); the triangular solve,
     * sum_{i<C} i^2 / C = (C - 1)(2C - 1) / 6; W S, Q S and the state
     * update K^T V_new, 3 dk dv */
    double macs = C * (3.0 * dk + 2.0 * dv) + (C - 1.0) * (2.0 * C - 1.0) / 6.0 +
                  3.0 * dk * dv;
    return 2.0 * T * (double)m->linear_num_value_heads * macs;
}

double aps_gdn_flops(const aps_model *m, double T, double seq)
{
    return 2.0 * T * aps_gdn_matmul_params(m)                 /* projections */
           + 2.0 * T * aps_gdn_conv_dim(m) *
                 (double)m->linear_conv_kernel_dim            /* conv1d */
           + aps_gdn_scan_flops(m, T, seq);                   /* delta rule */
}

/* What the autograd graph of GatedDeltaNet.forward (gdn.py @ d98e8a64)
 * keeps: the in_proj output for the conv's backward, the conv output for
 * the L2 norm's, the normalised q and k, the fp32 gates and FLA's chunk-
 * local solve (C per token and head, fp32) for chunk_gated_delta_rule's
 * backward (FLA's source was not read at a commit here: the chunk states
 * are taken as rebuilt in the backward, as its chunk_gated_delta_rule_bwd
 * calls the forward's state pass), the scan output for the gated norm,
 * out_proj's input. */
static double gdn_saved_per_token(const aps_model *m, const aps_training *t)
{
    double A = APS_ACT_BYTES, K = key_width(m), V = value_width(m);
    double nv = (double)m->linear_num_value_heads;
    return A * aps_gdn_in_proj_width(m)    /* qkvzba, the conv input */
           + A * aps_gdn_conv_dim(m)       /* conv output (L2 norm in) */
           + A * 2.0 * K                   /* normalised q, k */
           + APS_FP32_BYTES * 2.0 * nv     /* g, beta */
           + APS_FP32_BYTES * nv * APS_GDN_CHUNK /* the chunk's A */
           + A * V                         /* scan output, norm input */
           + aps_gemm_input_bytes(t) * V;  /* out_proj input */
}

/* What KimiDeltaAttention._kda_core (@ 36044ad3) keeps: the projections'
 * outputs for the convs' backward (ShortConvolution keeps its input),
 * the gates' low-rank inputs (f_a, g_a outputs) and outputs (the forget
 * gate's input to the fp32 gate, the output gate for o_norm), and what
 * ChunkKDAFunction.forward saves (FLA fla/ops/kda/chunk.py @ df21b259
 * ctx.save_for_backward): the normalised q and k and v, the rstd of q and
 * k (fp32, one a head), g (fp32, one a key channel, AutoModel passes the
 * computed gate), beta (fp32), Aqk and Akk (C per token and head, taken
 * as fp32); then the kernel output (o_norm's input) and o_proj's input. */
static double kda_saved_per_token(const aps_model *m, const aps_training *t)
{
    double A = APS_ACT_BYTES, F = APS_FP32_BYTES;
    double K = key_width(m), V = value_width(m);
    double nk = (double)m->linear_num_key_heads;
    double nv = (double)m->linear_num_value_heads;
    double dv = (double)m->linear_value_head_dim;
    double downs = m->linear_output_gate_full_rank ? 1.0 : 2.0;
    return A * aps_gdn_conv_dim(m)            /* q, k, v proj outputs */
           + A * downs * dv                   /* f_a (and g_a) outputs */
           + A * 2.0 * V                      /* the two gates' outputs */
           + A * aps_gdn_conv_dim(m)          /* q, k (normed), v */
           + F * (2.0 * nk + K + nv)          /* rstd, g, beta */
           + F * 2.0 * nv * APS_GDN_CHUNK     /* Aqk, Akk */
           + A * V                            /* kernel output */
           + aps_gemm_input_bytes(t) * V;     /* o_proj input */
}

/* What Lfm2ShortConv.cuda_kernels_forward's autograd keeps: B * x keeps
 * B and x, views of in_proj's output (the 3h storage, C a view of it
 * too); causal_conv1d_fn its input B x; C * conv_out conv_out; out_proj
 * its input, the contiguous product.  .contiguous() keeps nothing. */
static double short_conv_saved_per_token(const aps_model *m,
                                         const aps_training *t)
{
    double A = APS_ACT_BYTES, h = value_width(m);
    return A * aps_gdn_in_proj_width(m)   /* B, C, x */
           + A * h                        /* B x, the conv input */
           + A * h                        /* conv output */
           + aps_gemm_input_bytes(t) * h; /* out_proj input */
}

/* What MiniMaxLightningAttention.forward's autograd keeps (@ 008e5743):
 * qkv_proj's output (SiLU's input) and SiLU's output (q, k, v: views the
 * block matmuls keep); per block the decayed Q K^T (H B B, which the
 * product with V keeps: H B a token), Q * q_decay and K * k_decay (the
 * matmuls with the state and with V keep them), the state entering the
 * block (H d d, kept by Q's matmul with it: H d^2 / B a token); the eager
 * RMSNorm's fp32 copy of its input and its bf16 normalised output (the
 * weight's product keeps it; the gating product keeps that output and
 * the sigmoid's); out_proj's input. */
static double lightning_saved_per_token(const aps_model *m,
                                        const aps_training *t)
{
    double A = APS_ACT_BYTES, F = APS_FP32_BYTES, V = value_width(m);
    double H = (double)m->linear_num_value_heads;
    double d = (double)m->linear_value_head_dim;
    double B = lightning_block(m, (double)t->seq_length); /* no CP */
    return A * 3.0 * V                  /* qkv_proj output, SiLU input */
           + A * 3.0 * V                /* SiLU output: q, k, v */
           + A * H * B                  /* decayed Q K^T per block */
           + A * 2.0 * V                /* Q * q_decay, K * k_decay */
           + A * H * d * d / B          /* the state entering each block */
           + F * V + A * V              /* the norm: fp32 copy, output */
           + A * V                      /* sigmoid(output_gate(x)) */
           + aps_gemm_input_bytes(t) * V; /* out_proj input */
}

double aps_gdn_saved_bytes(const aps_model *m, const aps_training *t,
                           double T, double tp)
{
    double per = aps_model_has_mamba1(m)     ? aps_selscan_saved_per_token(m, t)
                 : aps_model_has_lightning(m) ? lightning_saved_per_token(m, t)
                 : aps_model_has_short_conv(m) ? short_conv_saved_per_token(m, t)
                 : aps_model_has_kda(m)      ? kda_saved_per_token(m, t)
                                             : gdn_saved_per_token(m, t);
    return T * per / tp;
}

double aps_gdn_elementwise_elems(const aps_model *m, double seq)
{
    if (aps_model_has_mamba1(m))
        return aps_selscan_elementwise_elems(m);
    double conv = 2.0 * aps_gdn_conv_dim(m); /* the conv: in, out */
    /* short conv: B x and C conv_out (two in, one out each), the
     * transpose's copy (in, out) */
    if (aps_model_has_short_conv(m))
        return conv + (3.0 + 3.0 + 2.0) * value_width(m);
    if (aps_model_has_lightning(m)) {
        /* bf16 elements read and written a token (an fp32 one counts two):
         * SiLU over 3V (6V); q and k decays (4V); inter + intra (3V); cat
         * and the transpose copy (4V); the eager norm's to-fp32, pow,
         * mean, rsqrt product, to-bf16 and weight passes (3 + 4 + 2 + 4 +
         * 3 + 2 = 18V); sigmoid and the gating product (5V); the block's
         * decay mask over H B (in, out) and the state's decay and add over
         * H d^2 / B (5 passes) */
        double V = value_width(m), H = (double)m->linear_num_value_heads;
        double d = (double)m->linear_value_head_dim;
        double B = lightning_block(m, seq);
        return 40.0 * V + 2.0 * H * B + 5.0 * H * d * d / B;
    }
    /* Gated DeltaNet, KDA: the conv with SiLU, the L2 norm of q and k (in,
     * out), the gated RMSNorm (output and z in, out) */
    return conv + 4.0 * key_width(m) + 3.0 * value_width(m);
}

double aps_gdn_kernels(const aps_model *m, const aps_training *t,
                       const aps_strategy *s)
{
    if (aps_model_has_lightning(m)) {
        double sl = (double)t->seq_length / (double)s->cp_degree;
        double B = (double)m->linear_block_size;
        return APS_HK_LIGHTNING + APS_HK_LIGHTNING_BLOCK * ceil(sl / B);
    }
    if (aps_model_has_mamba1(m))
        return aps_selscan_kernels();
    return aps_model_has_short_conv(m) ? APS_HK_SHORT_CONV
           : aps_model_has_kda(m)      ? APS_HK_KDA
                                       : APS_HK_GDN;
}

/** The linear-attention widths: all in [1, APS_MAX_HYBRID_WIDTH] with a
 *  period or pattern, all 0 without; a short convolution's conv width
 *  alone (its heads' fields 0: its width is hidden_size). */
static aps_status validate_widths(const aps_model *m, char *err, size_t n)
{
    struct { const char *f; int64_t v; bool head; } f[] = {
        {"linear_num_key_heads", m->linear_num_key_heads, true},
        {"linear_num_value_heads", m->linear_num_value_heads, true},
        {"linear_key_head_dim", m->linear_key_head_dim, true},
        {"linear_value_head_dim", m->linear_value_head_dim, true},
        {"linear_conv_kernel_dim", m->linear_conv_kernel_dim, false},
    };
    bool lightning = aps_model_has_lightning(m);
    bool kind = m->linear_attention == APS_LINEAR_LIGHTNING;
    if (lightning ? m->linear_block_size < 1 ||
                        m->linear_block_size > APS_MAX_HYBRID_WIDTH
                  : m->linear_block_size != 0 && !kind) {
        aps_fmt(err, n, lightning
                    ? "model.linear_block_size: must be in [1, 1048576] with "
                      "lightning attention layers (got %lld)"
                    : "model.linear_block_size: lightning attention's block "
                      "length, given without linear_attention = lightning "
                      "(got %lld)", (long long)m->linear_block_size);
        return APS_EINVAL;
    }
    if (lightning && m->linear_conv_kernel_dim != 0) {
        aps_fmt(err, n, "model.linear_conv_kernel_dim: lightning attention "
                "has no convolution: give 0 (got %lld)",
                (long long)m->linear_conv_kernel_dim);
        return APS_EINVAL;
    }
    bool headless = aps_model_has_short_conv(m) || aps_model_has_mamba1(m);
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        bool sc_heads = headless && f[i].head;
        if (lightning && !f[i].head)
            continue; /* the conv: checked above */
        bool bad = aps_model_has_gdn(m) && !sc_heads
                       ? (f[i].v < 1 || f[i].v > APS_MAX_HYBRID_WIDTH)
                       : f[i].v != 0;
        if (bad && sc_heads) {
            aps_fmt(err, n, aps_model_has_mamba1(m)
                        ? "model.%s: a Mamba-1 mixer (linear_attention = "
                          "mamba1) has no heads, its width is "
                          "linear_inner_size: give 0 (got %lld)"
                        : "model.%s: a gated short convolution "
                          "(linear_attention = short_conv) has no heads, its "
                          "width is hidden_size: give 0 (got %lld)", f[i].f,
                    (long long)f[i].v);
            return APS_EINVAL;
        }
        if (bad) {
            aps_fmt(err, n, aps_model_has_gdn(m)
                        ? "model.%s: must be in [1, 1048576] with linear "
                          "attention layers (got %lld)"
                        : "model.%s: %lld given without a "
                          "linear_attention_period or "
                          "linear_attention_pattern", f[i].f, (long long)f[i].v);
            return APS_EINVAL;
        }
    }
    return APS_OK;
}

/** linear_attention_pattern: num_layers letters L and A, at least one
 *  of each, and not together with a period. */
static aps_status validate_pattern(const aps_model *m, char *err, size_t n)
{
    const char *p = m->linear_attention_pattern;
    if (p[0] == '\0')
        return APS_OK;
    if (m->linear_attention_period > 0) {
        aps_fmt(err, n, "model.linear_attention_pattern: give it or "
                "linear_attention_period, not both");
        return APS_EINVAL;
    }
    const char *end = memchr(p, '\0', APS_MAX_HYBRID_LAYERS + 1);
    size_t len = end ? (size_t)(end - p) : APS_MAX_HYBRID_LAYERS + 1;
    int64_t attn = 0;
    for (size_t i = 0; i < len; i++) {
        if (p[i] != 'L' && p[i] != 'A') {
            aps_fmt(err, n, "model.linear_attention_pattern: letter %zu is "
                    "'%c', expected L (linear attention) or A (full "
                    "attention)", i + 1, p[i]);
            return APS_EINVAL;
        }
        attn += p[i] == 'A';
    }
    /* no L: no linear layer, so the linear_* fields describe nothing */
    const char *why = (int64_t)len != m->num_layers
                          ? "needs one letter per layer, num_layers"
                      : attn == 0 ? "needs at least one full-attention layer A"
                      : attn == (int64_t)len
                          ? "needs at least one linear-attention layer L "
                            "(without one, leave the pattern and the "
                            "linear_* fields out)"
                          : NULL;
    if (why != NULL) {
        aps_fmt(err, n, "model.linear_attention_pattern: %s (got %zu letters, "
                "%lld A)", why, len, (long long)attn);
        return APS_EINVAL;
    }
    return APS_OK;
}

/** Kimi K3's fields: only on a KDA model (NeMo AutoModel's Kimi K3,
 *  components/models/kimi_k3 @ 36044ad3), each with what it acts on. */
static aps_status validate_k3(const aps_model *m, char *err, size_t n)
{
    if (m->attn_res_block_size < 0 || m->attn_res_block_size > m->num_layers) {
        aps_fmt(err, n, "model.attn_res_block_size: must be 0 (none) or in [1, "
                "num_layers = %lld] (got %lld)", (long long)m->num_layers,
                (long long)m->attn_res_block_size);
        return APS_EINVAL;
    }
    static const char *const kda = "Kimi Delta Attention layers "
                                   "(linear_attention = kda)";
    const struct { bool bad; const char *f, *needs; } c[] = {
        {m->attn_res_block_size > 0 && !aps_model_has_kda(m),
         "attn_res_block_size", kda},
        {m->linear_output_gate_full_rank && !aps_model_has_kda(m),
         "linear_output_gate_full_rank", kda},
        {m->mla_output_gate && m->kv_lora_rank == 0, "mla_output_gate",
         "multi-latent attention (kv_lora_rank)"},
        {m->moe_latent_norm && m->moe_latent_size == 0, "moe_latent_norm",
         "latent experts (moe_latent_size)"},
        /* SiTU: AutoModel's Kimi K3 only (SituAndMul); no other model or
         * framework has it */
        {m->glu_activation == APS_GLU_SITU && !aps_model_has_kda(m),
         "glu_activation", kda},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        if (c[i].bad) {
            aps_fmt(err, n, "model.%s: Kimi K3's setting given without %s",
                    c[i].f, c[i].needs);
            return APS_EINVAL;
        }
    return APS_OK;
}

/** A mixer with one key head per value head of one width (what names it
 *  in the error). */
static aps_status one_width(const aps_model *m, const char *what, char *err,
                            size_t n)
{
    if (m->linear_num_key_heads == m->linear_num_value_heads &&
        m->linear_key_head_dim == m->linear_value_head_dim)
        return APS_OK;
    aps_fmt(err, n, "model.linear_num_key_heads: %s has as many key heads as "
            "value heads of one width (got %lld x %lld keys, %lld x %lld "
            "values)", what, (long long)m->linear_num_key_heads,
            (long long)m->linear_key_head_dim,
            (long long)m->linear_num_value_heads,
            (long long)m->linear_value_head_dim);
    return APS_EINVAL;
}

/** Lightning attention: one width for q, k and v, as many key heads as
 *  value heads (MiniMaxLightningAttention splits qkv_proj's output into
 *  three H x d tensors), GQA on the full-attention layers (MiniMax's are
 *  MixtralAttention). */
static aps_status validate_lightning(const aps_model *m, char *err, size_t n)
{
    if (m->kv_lora_rank > 0) {
        aps_fmt(err, n, "model.kv_lora_rank: lightning attention beside "
                "multi-latent attention is not modelled (MiniMax's "
                "full-attention layers are GQA)");
        return APS_EINVAL;
    }
    aps_status st = one_width(m, "lightning attention", err, n);
    /* transformers builds num_attention_heads heads of head_dim (else
     * hidden_size / heads) on the lightning layers as on the others */
    int64_t d = m->head_dim > 0 ? m->head_dim
                                : m->hidden_size / m->num_attention_heads;
    if (st == APS_OK && (m->linear_num_key_heads != m->num_attention_heads ||
                         m->linear_key_head_dim != d)) {
        aps_fmt(err, n, "model.linear_num_key_heads: lightning attention has "
                "the attention's heads, num_attention_heads = %lld of "
                "head_dim = %lld (MiniMaxLightningAttention; got %lld x "
                "%lld)", (long long)m->num_attention_heads, (long long)d,
                (long long)m->linear_num_key_heads,
                (long long)m->linear_key_head_dim);
        return APS_EINVAL;
    }
    return st;
}

/** The mixer named by linear_attention needs linear layers; Kimi Delta
 *  Attention one key head per value head of one width (FLA's chunk_kda
 *  asserts q, k and g share a shape; AutoModel builds H heads of head_dim
 *  for q, k and v) and MLA without RoPE on its other layers. */
static aps_status validate_kda(const aps_model *m, char *err, size_t n)
{
    aps_status st = validate_k3(m, err, n);
    if (st != APS_OK || m->linear_attention == APS_LINEAR_GDN)
        return st;
    if (!aps_model_has_gdn(m)) {
        static const char *const name[] = {"gated_deltanet", "kda",
                                           "short_conv", "lightning",
                                           "mamba1"};
        aps_fmt(err, n, "model.linear_attention: %s given without a "
                "linear_attention_pattern or linear_attention_period",
                name[m->linear_attention]);
        return APS_EINVAL;
    }
    if (aps_model_has_lightning(m))
        return validate_lightning(m, err, n);
    if (aps_model_has_mamba1(m)) /* aps_selscan_validate: its widths */
        return APS_OK;
    /* LFM2's and LFM2-MoE's attention layers are GQA */
    if (aps_model_has_short_conv(m) && m->kv_lora_rank > 0) {
        aps_fmt(err, n, "model.kv_lora_rank: short convolutions beside "
                "multi-latent attention are not modelled (LFM2's attention "
                "layers are GQA)");
        return APS_EINVAL;
    }
    if (aps_model_has_short_conv(m))
        return APS_OK;
    /* query compression: Kimi K3's MLA has it, Kimi Linear's not (the
     * config reader tells them apart) */
    if (m->kv_lora_rank == 0 || m->position_embedding != APS_POS_NONE) {
        aps_fmt(err, n, "model.linear_attention: kda is priced as NeMo "
                "AutoModel's Kimi Linear and Kimi K3, whose full-attention "
                "layers are MLA without RoPE (KimiMLAAttention: kv_lora_rank "
                "> 0, position_embedding none; got %lld, %s)",
                (long long)m->kv_lora_rank,
                m->position_embedding == APS_POS_NONE ? "none" : "positions");
        return APS_EINVAL;
    }
    return one_width(m, "Kimi Delta Attention", err, n);
}

aps_status aps_gdn_validate(const aps_model *m, char *err, size_t n)
{
    int64_t k = m->linear_attention_period;
    if (k < 0 || (k > 0 && k > m->num_layers)) {
        aps_fmt(err, n, "model.linear_attention_period: must be in [1, "
                "num_layers = %lld] (got %lld)", (long long)m->num_layers,
                (long long)k);
        return APS_EINVAL;
    }
    aps_status st = validate_pattern(m, err, n);
    if (st == APS_OK)
        st = validate_widths(m, err, n);
    if (st == APS_OK)
        st = aps_selscan_validate(m, err, n);
    if (st == APS_OK)
        st = validate_kda(m, err, n);
    if (st != APS_OK || !aps_model_has_gdn(m))
        return st;
    if (!aps_model_has_short_conv(m) && !aps_model_has_mamba1(m) &&
        m->linear_num_value_heads % m->linear_num_key_heads != 0) {
        aps_fmt(err, n, "model.linear_num_value_heads: %lld is not a multiple "
                "of linear_num_key_heads %lld (Megatron TransformerConfig)",
                (long long)m->linear_num_value_heads,
                (long long)m->linear_num_key_heads);
        return APS_EINVAL;
    }
    if (aps_model_is_hybrid(m) || m->mtp_layers > 0 ||
        m->sliding_window > 0 || m->attention_chunk_size > 0 ||
        aps_model_is_dsv4(m) || aps_model_has_msa(m) || m->index_topk > 0) {
        aps_fmt(err, n, "model.%s: linear attention layers with a "
                "hybrid_layer_pattern, MTP layers, local or sparse "
                "attention are not modelled",
                k > 0 ? "linear_attention_period" : "linear_attention_pattern");
        return APS_EINVAL;
    }
    return APS_OK;
}

/** The engine that trains each linear-attention mixer as apsearch prices
 *  it, by aps_linear_attention: Gated DeltaNet Megatron-LM's
 *  (experimental_attention_variant gdn @ d98e8a64), Kimi Delta Attention
 *  NeMo AutoModel's own Kimi Linear / K3 (Megatron-LM has no KDA: gdn,
 *  gdn2, dsa), LFM2's, MiniMax's and Jamba's NeMo AutoModel's through
 *  transformers' class (no model of their own @ 36044ad3); no other engine apsearch
 *  writes for has any of them.  `layers` and `refusal` name them in the
 *  policy's error (aps_gdn_framework) and in a strategy's reason. */
static const struct {
    aps_framework fw;
    const char *engine, *key, *built, *layers, *refusal;
} MIXER_ENGINE[] = {
    [APS_LINEAR_GDN] = {APS_FW_MEGATRON, "Megatron-LM", "megatron", "",
                        "Gated DeltaNet layers",
                        "Gated DeltaNet models are priced for Megatron-LM "
                        "only"},
    [APS_LINEAR_KDA] = {APS_FW_AUTOMODEL, "NeMo AutoModel", "automodel", "",
                        "Kimi Delta Attention layers",
                        "Kimi Delta Attention models are priced for NeMo "
                        "AutoModel only (Megatron-LM, TorchTitan and "
                        "MindFormers have no KDA layer)"},
    [APS_LINEAR_SHORT_CONV] = {APS_FW_AUTOMODEL, "NeMo AutoModel",
                               "automodel",
                               ", which trains transformers' Lfm2ForCausalLM "
                               "or Lfm2MoeForCausalLM",
                               "LFM2's gated short convolutions",
                               "LFM2's gated short convolutions are priced "
                               "for NeMo AutoModel only (Megatron-LM, "
                               "TorchTitan and MindFormers have no such "
                               "layer)"},
    [APS_LINEAR_LIGHTNING] = {APS_FW_AUTOMODEL, "NeMo AutoModel", "automodel",
                              ", which trains transformers' "
                              "MiniMaxForCausalLM",
                              "MiniMax's lightning attention",
                              "MiniMax's lightning attention is priced for "
                              "NeMo AutoModel only (Megatron-LM, TorchTitan "
                              "and MindFormers have no such layer)"},
    [APS_LINEAR_MAMBA1] = {APS_FW_AUTOMODEL, "NeMo AutoModel", "automodel",
                           ", which trains transformers' JambaForCausalLM",
                           "Jamba's Mamba-1 layers",
                           "Jamba's Mamba-1 layers are priced for NeMo "
                           "AutoModel only (Megatron-LM, TorchTitan and "
                           "MindFormers have no Mamba-1 mixer)"},
};

aps_status aps_gdn_framework(const aps_model *m, const aps_training *t,
                             char *err, size_t n)
{
    if (!aps_model_has_gdn(m) ||
        t->framework == MIXER_ENGINE[m->linear_attention].fw)
        return APS_OK;
    aps_fmt(err, n, "training.framework: %s has %s, priced for %s only "
            "(framework = %s%s)%s", m->name,
            MIXER_ENGINE[m->linear_attention].layers,
            MIXER_ENGINE[m->linear_attention].engine,
            MIXER_ENGINE[m->linear_attention].key,
            MIXER_ENGINE[m->linear_attention].built,
            m->linear_attention == APS_LINEAR_GDN
                ? ""
                : ": Megatron-LM, TorchTitan and MindFormers have no such "
                  "layer");
    return APS_ENOTIMPL;
}

/** Why a Kimi Delta Attention model cannot be priced, or NULL: NeMo
 *  AutoModel is the framework that trains it (Megatron-LM @ d98e8a64 has
 *  no KDA: experimental_attention_variant gdn, gdn2, dsa), and its
 *  KimiLinear48BForCausalLM declares no tensor or pipeline parallelism
 *  (ModelCapabilities supports_tp = supports_pp = False, model.py
 *  l.1117-1123 @ 36044ad3); its context parallelism (FLA passing the
 *  recurrent state rank to rank, MLA gathering the latent) is not priced. */
static const char *kda_refusal(const aps_model *m, const aps_training *t,
                               const aps_strategy *s, aps_reason *code)
{
    *code = APS_REASON_FRAMEWORK_UNSUPPORTED;
    bool k3 = m->attn_res_block_size > 0;
    if (s->tp_degree > 1)
        return k3 ? "NeMo AutoModel's Kimi K3 has no tensor parallelism "
                    "(KimiK3ForCausalLM.ModelCapabilities supports_tp = False)"
                  : "NeMo AutoModel's Kimi Linear has no tensor parallelism "
                    "(KimiLinear48BForCausalLM.ModelCapabilities supports_tp = "
                    "False)";
    if (s->pp_degree > 1 && !k3)
        return "NeMo AutoModel's Kimi Linear has no pipeline parallelism "
               "(KimiLinear48BForCausalLM.ModelCapabilities supports_pp = "
               "False)";
    *code = APS_REASON_NOT_MODELLED;
    if (s->pp_degree > 1)
        return "Kimi K3 over pipeline stages (AutoModel splits it at "
               "attention-residual block boundaries and passes the block "
               "stack between stages, _partition_attn_residual_blocks) is not "
               "modelled";
    if (s->cp_degree > 1)
        return "Kimi Delta Attention under context parallelism (FLA's "
               "rank-to-rank state passing, MLA's gathered latent) is not "
               "modelled";
    /* opsac.c walks softmax-attention and MLA blocks: a KDA layer's
     * projections, short convolutions and chunked kernels are not */
    if (aps_op_sac_on(t, s))
        return "selective recompute of Kimi Delta Attention layers under "
               "op-level selective activation checkpointing is not modelled "
               "(layer_recompute = full or none is priced)";
    return NULL;
}

/** Why a model whose mixer NeMo AutoModel trains as transformers builds
 *  it cannot be priced with a strategy, by aps_linear_attention (no
 *  AutoModel model of its own @ 36044ad3), the reason's code beside each:
 *  - LFM2: its tensor parallelism would shard the LM head alone
 *    (Lfm2ForCausalLM._tp_plan = {"lm_head": "colwise_rep"}, no
 *    base_model_tp_plan; the parallelizer's _get_parallel_plan takes that
 *    HF plan); its pipeline forward for Hugging Face models reads
 *    model.rotary_emb and model.norm (pipelining/hf_utils.py l.177, 202),
 *    which Lfm2Model calls pos_emb and embedding_norm, and it refuses tied
 *    embeddings (validate_hf_model_for_pipeline_support); context
 *    parallelism would split the causal conv's window between ranks.
 *  - MiniMax's lightning attention: transformers' tensor-parallel plan
 *    (MiniMaxConfig.base_model_tp_plan @ 008e5743) shards the
 *    full-attention layers' q, k, v, o and the experts but names none of
 *    the lightning layers' projections, which would stay whole on every
 *    rank; its pipeline stages (AutoModel's Hugging Face pipeline forward
 *    with MiniMaxCache) and context parallelism (the block loop's state
 *    runs over the whole sequence on one rank) are not modelled.
 *  - Jamba's Mamba-1 layers (selscan.c): JambaForCausalLM._tp_plan is
 *    MixtralForCausalLM's, the LM head alone (JambaConfig has no
 *    base_model_tp_plan); the pipeline forward reads model.rotary_emb,
 *    which JambaModel does not have (no RoPE), and model.norm, which it
 *    calls final_layernorm; context parallelism would split the scan's
 *    state and the conv's window between ranks.
 *  `sac`: op-level SAC (opsac.c) walks a softmax-attention layer's
 *  matmuls, not the mixer's (the lightning layer's block loop, the
 *  Mamba-1 mixer's projections and scan, the short conv's in and out
 *  projections and convolution), so selective recompute under it is not
 *  modelled; NULL where it is priced. */
typedef struct {
    const char *tp, *pp, *cp, *sac;
    aps_reason pp_code;
} class_refusals;
static const class_refusals CLASS_REFUSAL[] = {
    [APS_LINEAR_SHORT_CONV] = {
        "LFM2 under tensor parallelism (AutoModel takes transformers' "
        "Lfm2ForCausalLM._tp_plan, which shards the LM head alone) is not "
        "modelled",
        "NeMo AutoModel cannot pipeline LFM2: its pipeline forward for "
        "Hugging Face models calls model.rotary_emb, which Lfm2Model names "
        "pos_emb (pipelining/hf_utils.py l.177 @ 36044ad3)",
        "LFM2 under context parallelism (the causal conv's window across the "
        "ranks' shards) is not modelled",
        "selective recompute of LFM2's short-convolution layers under "
        "op-level selective activation checkpointing is not modelled "
        "(layer_recompute = full or none is priced)",
        APS_REASON_FRAMEWORK_UNSUPPORTED},
    [APS_LINEAR_LIGHTNING] = {
        "MiniMax under tensor parallelism (transformers' base_model_tp_plan "
        "leaves the lightning layers' qkv_proj, output_gate and out_proj "
        "whole on every rank) is not modelled",
        "MiniMax's transformers class over pipeline stages is not modelled",
        "lightning attention under context parallelism (the block loop's "
        "state across the ranks' shards) is not modelled",
        "selective recompute of lightning-attention layers under op-level "
        "selective activation checkpointing is not modelled",
        APS_REASON_NOT_MODELLED},
    [APS_LINEAR_MAMBA1] = {
        "Jamba under tensor parallelism (AutoModel takes transformers' "
        "JambaForCausalLM._tp_plan, which shards the LM head alone) is not "
        "modelled",
        "NeMo AutoModel cannot pipeline Jamba: its pipeline forward for "
        "Hugging Face models calls model.rotary_emb, which JambaModel does "
        "not have (pipelining/hf_utils.py l.177 @ 36044ad3)",
        "Mamba-1 layers under context parallelism (the scan's state and the "
        "conv's window across the ranks' shards) are not modelled",
        "selective recompute of Mamba-1 layers under op-level selective "
        "activation checkpointing is not modelled",
        APS_REASON_FRAMEWORK_UNSUPPORTED},
};

/** CLASS_REFUSAL's reason for the model's mixer and strategy s, or NULL. */
static const char *class_refusal(const aps_model *m, const aps_training *t,
                                 const aps_strategy *s, aps_reason *code)
{
    const class_refusals *r = &CLASS_REFUSAL[m->linear_attention];
    *code = APS_REASON_NOT_MODELLED;
    if (s->tp_degree > 1)
        return r->tp;
    if (s->pp_degree > 1) {
        *code = r->pp_code;
        return r->pp;
    }
    if (s->cp_degree > 1)
        return r->cp;
    if (r->sac != NULL && aps_op_sac_on(t, s))
        return r->sac;
    return NULL;
}

const char *aps_gdn_refusal(const aps_model *m, const aps_training *t,
                            const aps_strategy *s, aps_reason *code)
{
    *code = APS_REASON_NOT_MODELLED; /* each refusal: apsearch's pricing */
    if (t->framework != MIXER_ENGINE[m->linear_attention].fw)
        return MIXER_ENGINE[m->linear_attention].refusal;
    if (CLASS_REFUSAL[m->linear_attention].tp != NULL)
        return class_refusal(m, t, s, code);
    if (aps_model_has_kda(m))
        return kda_refusal(m, t, s, code);
    /* pp_degree > 1 (with virtual stages) and full recompute: every rank
     * is priced by its own layers (aps_stage_layer_cost, the gdn.c file
     * comment), a recomputed layer as the rank's mean layer as for the
     * hybrid Mamba-2 models (TransformerBlock._checkpointed_forward runs
     * any TransformerLayer, transformer_block.py @ d98e8a64) */
    if (s->cp_degree > 1)
        return "Gated DeltaNet models: Megatron-Core splits the delta-rule "
               "scan over CP by an all-to-all of heads (gated_delta_net/"
               "common.py), which is not modelled";
    /* MLA on the full-attention layers is priced by the model's mean
     * share of them (moe.c aps_moe_layer_cost): one rank's own share is
     * not */
    if (m->kv_lora_rank > 0 && s->pp_degree > 1)
        return "linear attention with MLA full-attention layers over "
               "pipeline stages is not modelled";
    return NULL;
}
