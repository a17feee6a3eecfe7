/*
 * compute.c -- FLOPs and seconds of one transformer layer for one
 * micro-batch on one device: GEMMs, attention core, memory-bound kernels,
 * and the TP and CP communication that sits inside the layer.
 *
 * FLOPs (MODELING.md s.4; Narayanan et al. SC'21 eq. 3 counts the same
 * terms): a GEMM of M x K by K x N is 2 M N K.  Per layer forward,
 * 2 b s (matmul params) + attention core 4 b s^2 a d, the latter halved
 * for causal masking when flash attention skips the masked blocks.
 * Backward = 2 x forward for GEMMs; FlashAttention's backward does 5
 * matmuls of the forward's 2 (it recomputes the scores), 2.5 x (Dao 2023,
 * arXiv:2307.08691 s.3.1).  Per device: matmuls / t, tokens / c.
 */
#include "internal.h"

/** FlashAttention backward / forward FLOP ratio (5 matmuls vs 2). */
#define APS_FLASH_BWD_RATIO 2.5
/** HBM bytes per element of the memory-bound ops, forward, bf16 (2 B)
 *  tensors.  Fused (one kernel: read the input, write the output): 2 + 2
 *  for a norm and RoPE, 2 + 2 + 2 for SwiGLU's silu(gate) * up.  Eager
 *  PyTorch, op by op as TorchTitan writes them
 *  (torchtitan/models/llama3/model.py, norms.py): RMSNorm = x.float()
 *  (2 + 4), pow(2) (4 + 4), mean (4), x * rsqrt (4 + 4), type_as (4 + 2),
 *  * weight (2 + 2) = 36; RoPE = float() (2 + 4), complex multiply
 *  (4 + 4), type_as (4 + 2) = 20; SwiGLU = silu (2 + 2), multiply
 *  (2 + 2 + 2) = 10.  LayerNorm and GELU are single kernels either way. */
#define APS_FUSED_ELEMENTWISE_BYTES 4.0
#define APS_FUSED_SWIGLU_BYTES 6.0
#define APS_EAGER_RMSNORM_BYTES 36.0
#define APS_EAGER_ROPE_BYTES 20.0
#define APS_EAGER_SWIGLU_BYTES 10.0

/** Backward / forward FLOP ratio of a GEMM (dgrad + wgrad). */
#define APS_GEMM_BWD_RATIO 2.0

double aps_gemm_time(const aps_device *d, aps_precision p, double M,
                     double N, double K)
{
    double x = M < N ? M : N;
    x = x < K ? x : K;
    double eta_max = aps_gemm_eta_max(d, p);
    /* Efficiency saturates with the smallest GEMM dimension: tiles on the
     * small side are partly empty and the kernel is memory-bound. */
    double eta = eta_max * x / (x + d->gemm_half_dim);
    return 2.0 * M * N * K / (aps_peak_flops(d, p) * eta);
}

double aps_hbm_time(const aps_device *d, double bytes)
{
    return bytes / (d->hbm_bandwidth * d->hbm_efficiency);
}

double aps_op_sac_recompute_params(const aps_model *m)
{
    double h = (double)m->hidden_size, a = (double)m->num_attention_heads;
    double k = (double)m->num_query_groups, d = (double)m->head_dim;
    double f = (double)m->ffn_hidden_size;
    return h * k * d + a * d * h + h * f; /* wk, wo, and w3 or fc2 */
}

void aps_layer_times(const aps_model *m, const aps_cluster *c,
                     const aps_training *t, const aps_strategy *s,
                     aps_layer_cost *out)
{
    const aps_device *d = &c->device;
    double A = APS_ACT_BYTES;
    double tp = (double)s->tp_degree, cp = (double)s->cp_degree;
    double S = (double)t->seq_length, sl = S / cp;
    double b = (double)s->micro_batch_size;
    double h = (double)m->hidden_size, a = (double)m->num_attention_heads;
    double k = (double)m->num_query_groups, dh = (double)m->head_dim;
    double f = (double)m->ffn_hidden_size;
    double T = b * sl; /* tokens of one micro-batch on this device */
    double rep = (s->tp_degree > 1 && s->sequence_parallel) ? tp : 1.0;
    aps_precision prec = t->precision;

    /* GEMMs of one layer, forward. */
    double mlp_up = (m->mlp == APS_MLP_SWIGLU ? 2.0 : 1.0) * f / tp;
    out->gemm_fwd = aps_gemm_time(d, prec, T, (a + 2.0 * k) * dh / tp, h) +
                    aps_gemm_time(d, prec, T, h, a * dh / tp) +
                    aps_gemm_time(d, prec, T, mlp_up, h) +
                    aps_gemm_time(d, prec, T, h, f / tp);

    /* Attention core in bf16: QK^T and PV, 2 GEMMs of 2 b s' s a d each. */
    /* flash attention skips the masked blocks (and those outside a sliding
     * window); CP balances the halves.  Without it the scores are dense. */
    double keys = aps_attention_keys(m, S, t->flash_attention);
    double attn_flops = 4.0 * b * sl * keys * a * dh / tp;
    double attn_rate = d->peak_flops_bf16 * d->attention_efficiency;
    out->attn_fwd = attn_flops / attn_rate;
    out->attn_bwd = attn_flops *
                    (t->flash_attention ? APS_FLASH_BWD_RATIO
                                        : APS_GEMM_BWD_RATIO) / attn_rate;

    /* Memory-bound kernels, bytes read + written in the forward. */
    bool eager = !t->torch_compile && aps_profile(t)->eager_elementwise;
    double norm_b = (eager && m->norm == APS_NORM_RMSNORM)
                        ? APS_EAGER_RMSNORM_BYTES : APS_FUSED_ELEMENTWISE_BYTES;
    double rope_b = m->position_embedding != APS_POS_ROPE ? 0.0
                    : eager ? APS_EAGER_ROPE_BYTES : APS_FUSED_ELEMENTWISE_BYTES;
    double act_b = m->mlp != APS_MLP_SWIGLU ? APS_FUSED_ELEMENTWISE_BYTES
                   : eager ? APS_EAGER_SWIGLU_BYTES : APS_FUSED_SWIGLU_BYTES;
    double hrep = T * h / rep;
    double bytes = (double)m->norms_per_layer * norm_b * hrep /* norms */
                   + 2.0 * 3.0 * A * hrep                    /* residuals */
                   + rope_b * T * (a + k) * dh / tp;         /* RoPE: q, k */
    bytes += act_b * T * f / tp;                             /* activation */
    if (t->dropout)
        bytes += 3.0 * (2.0 * A + APS_MASK_BYTES) * hrep;
    if (!t->flash_attention) /* softmax (and dropout) over the scores */
        bytes += (2.0 * A + (t->dropout ? 2.0 * A + 1.0 : 0.0)) * a * sl *
                 S * b / tp;
    /* fp8, mxfp8, nvfp4: every GEMM input (forward) and output gradient
     * (backward) is quantized in both layouts (aps_cast_bytes); SwiGLU's gate and up share one input.
     * The QKV and MLP inputs come from a norm, the MLP output's input from
     * the activation, the MLP input's gradient from the activation's
     * backward: fused casts where the framework fuses them.  With SP the
     * norm outputs are cast on the local sequence shard, before the fp8
     * all-gather (TE LayerNormLinear; torchao Float8ColwiseParallel). */
    out->membound_fwd = aps_hbm_time(d, bytes);
    out->fp8_cast_fwd = out->fp8_cast_bwd = 0.0;
    if (aps_prec_quantized(prec)) {
        double cast, fused;
        aps_cast_bytes(t, &cast, &fused);
        out->fp8_cast_fwd = aps_hbm_time(
            d, fused * T * (2.0 * h / rep + f / tp) + cast * T * a * dh / tp);
        out->fp8_cast_bwd = aps_hbm_time(
            d, cast * T * ((a + 2.0 * k) * dh / tp + 2.0 * h) +
                   fused * T * mlp_up);
    }

    /* Selective recompute: Megatron recomputes the attention core; with the
     * fsdp2 profile TorchTitan's op-level checkpointing recomputes the
     * even-numbered matmuls (wk, wo, w3 or fc2) and every elementwise op. */
    if (aps_profile(t)->op_sac_selective) {
        double kd = k * dh / tp;
        out->selective_fwd = aps_gemm_time(d, prec, T, kd, h) +
                             aps_gemm_time(d, prec, T, h, a * dh / tp) +
                             (m->mlp == APS_MLP_SWIGLU
                                  ? aps_gemm_time(d, prec, T, f / tp, h)
                                  : aps_gemm_time(d, prec, T, h, f / tp)) +
                             out->membound_fwd;
    } else {
        out->selective_fwd = out->attn_fwd;
    }

    /* TP: per layer two collectives each way on the full activation
     * (Shoeybi et al. 2019 fig. 4: f and g operators; with SP each
     * all-reduce becomes an all-gather + reduce-scatter pair,
     * Korthikanti et al. 2022 s.4.2.2). */
    out->tp_fwd = out->tp_bwd = 0.0;
    if (s->tp_degree > 1) {
        double bw, alpha;
        aps_group_link(c, 1, s->tp_degree, &bw, &alpha);
        double act = A * T * h;
        double one = s->sequence_parallel
                         ? aps_allgather_time(s->tp_degree, act, bw, alpha) +
                               aps_reducescatter_time(s->tp_degree, act, bw,
                                                      alpha)
                         : aps_allreduce_time(s->tp_degree, act, bw, alpha);
        out->tp_fwd = 2.0 * one;
        out->tp_bwd = 2.0 * one;
    }

    /* CP: ring attention passes each rank's K,V chunk round the ring, c-1
     * steps forward and twice that (K,V and dK,dV) backward (Liu et al.
     * 2023, Ring Attention; Megatron context_parallel).  All-gather
     * variant: gather K,V forward, reduce-scatter dK,dV backward (Llama 3,
     * Dubey et al. 2024 s.3.3.2). */
    out->cp_fwd = out->cp_bwd = 0.0;
    if (s->cp_degree > 1) {
        double bw, alpha;
        if (s->cp_comm_type == APS_CP_ALL_GATHER)
            aps_group_link(c, s->tp_degree, s->cp_degree, &bw, &alpha);
        else
            aps_p2p_link(c, s->tp_degree, s->cp_degree, &bw, &alpha);
        double kv_chunk = 2.0 * A * b * sl * k * dh / tp;
        double steps = cp - 1.0;
        if (s->cp_comm_type == APS_CP_ALL_GATHER) {
            out->cp_fwd = aps_allgather_time(s->cp_degree, kv_chunk * cp, bw,
                                             alpha);
            out->cp_bwd = out->cp_fwd + aps_reducescatter_time(
                              s->cp_degree, kv_chunk * cp, bw, alpha);
        } else {
            out->cp_fwd = steps * (kv_chunk / bw + alpha);
            out->cp_bwd = 2.0 * out->cp_fwd;
        }
    }
}
