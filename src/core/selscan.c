/*
 * selscan.c -- Jamba's Mamba-1 mixer (linear_attention = mamba1): the
 * selective scan of Gu & Dao (arXiv:2312.00752) as transformers'
 * JambaMambaMixer runs it in training (models/jamba/modular_jamba.py
 * cuda_kernels_forward @ 01596202, the same in modeling_jamba.py), with
 * mamba_ssm's selective_scan_fn (mamba_ssm/ops/selective_scan_interface.py
 * SelectiveScanFn @ 0e8d22c5) and causal_conv1d_fn.
 *
 * A Jamba layer is a transformer layer (input_layernorm, mixer, residual,
 * pre_ff_layernorm, MLP or experts, residual) whose mixer is attention on
 * the layers i % attn_layer_period == attn_layer_offset and this mixer on
 * the others; gdn.c places the layers (linear_attention_pattern) and
 * prices the mean layer as for the other linear-attention mixers.  With
 * D = linear_inner_size, N = linear_state_dim, R = linear_dt_rank, K =
 * linear_conv_kernel_dim:
 *   in_proj      h -> 2D, chunked into x and the gate z (no bias:
 *                mamba_proj_bias false)
 *   conv1d       depthwise causal over x: D channels, K weights and a bias
 *                each, SiLU (causal_conv1d_fn)
 *   x_proj       D -> R + 2N, split into dt, B, C (no bias)
 *   dt_layernorm, b_layernorm, c_layernorm   RMSNorms over R, N, N (eager
 *                JambaRMSNorm, weights)
 *   dt_proj      R -> D, its bias added inside the scan
 *   A_log        D x N; D (the skip), D
 *   selective scan   per channel and state: h = exp(dt A) h + dt B x,
 *                y = C h + D x, times SiLU(z)
 *   out_proj     D -> h (no bias)
 * Jamba's mixer cannot use mamba_ssm's fused mamba_inner_fn ("we have the
 * inner layernorms which isn't supported by this fused kernel"), so each
 * step is its own op and autograd keeps what each needs.  Nothing but
 * transformers has the layer among the engines apsearch writes for
 * (Megatron-Core's MambaMixer @ d98e8a64 is Mamba-2's SSD): NeMo AutoModel
 * trains transformers' JambaForCausalLM, FSDP2 only (its checkpoint
 * conversion lists jamba, components/checkpoint/conversion_mapping.py
 * @ 36044ad3; no model of its own; its refusals: gdn.c CLASS_REFUSAL).
 */
#include <math.h>
#include "internal.h"

/** FLOPs per token, channel and state of the selective scan, counted from
 *  mamba_ssm's selective_scan_ref (@ 0e8d22c5): dt A and its exp (2, the
 *  exp as one), dt B x (2), exp(dt A) h + dt B x (2), C h summed over the
 *  states (2).  Model FLOPs only: its time is its state elements at the
 *  device's scan rate (compute.c). */
#define APS_SELSCAN_FLOPS 8.0
/** Tokens per chunk of mamba_ssm's selective scan: SelectiveScanFn keeps
 *  the state at every 2048th token for the backward (n_chunks = ceil(L /
 *  2048), an fp32 tensor of D x 2N per chunk). */
#define APS_SELSCAN_CHUNK 2048.0
/** Forward kernels of a Jamba Mamba layer's mixer block from Python
 *  (JambaMambaDecoderLayer.forward, JambaMambaMixer.cuda_kernels_forward
 *  @ 01596202, no attention mask as in packed training): the eager
 *  input_layernorm (8: to fp32, pow, mean, add, rsqrt, multiply, to bf16,
 *  weight), in_proj (1), causal_conv1d_fn (1), x_proj (1) and the copy
 *  that lays the conv output out for it or for the scan (1), the three
 *  eager RMSNorms of dt, B and C (24), dt_proj with its bias swapped for
 *  zeros (2), A = -exp(A_log.float()) (3), the bias's and D's .float()
 *  (2), selective_scan_fn: delta, B, C and z made contiguous (4), the
 *  chunk states' zeros and their first entries set (2), the scan kernel
 *  (1); out_proj's input copy and GEMM (2), the residual add (1). */
#define APS_HK_MAMBA1 53.0

/** D, N, R as doubles. */
static double inner(const aps_model *m) { return (double)m->linear_inner_size; }
static double state(const aps_model *m) { return (double)m->linear_state_dim; }
static double rank(const aps_model *m) { return (double)m->linear_dt_rank; }

int aps_selscan_inner_gemms(const aps_model *m, aps_gemm_nk out[2])
{
    out[0] = (aps_gemm_nk){rank(m) + 2.0 * state(m), inner(m)}; /* x_proj */
    out[1] = (aps_gemm_nk){inner(m), rank(m)};                 /* dt_proj */
    return 2;
}

double aps_selscan_other_params(const aps_model *m)
{
    double D = inner(m), N = state(m), K = (double)m->linear_conv_kernel_dim;
    return D * K + D          /* conv1d weight and bias */
           + D                /* dt_proj bias */
           + D * N + D        /* A_log, D */
           + rank(m) + 2.0 * N; /* dt, B, C norms */
}

double aps_selscan_state_elems(const aps_model *m, double T)
{
    return T * inner(m) * state(m);
}

double aps_selscan_scan_flops(const aps_model *m, double T)
{
    return APS_SELSCAN_FLOPS * aps_selscan_state_elems(m, T);
}

/* What autograd keeps of cuda_kernels_forward: in_proj's output (the
 * conv's saved input x is a view of it, z too); the conv output (x_proj's
 * input and the scan's u) and its one re-laid copy; per norm of width w
 * the eager norm's fp32 input and bf16 normalized tensor (w = R, N, N),
 * then dt_proj's input (the normed dt); what SelectiveScanFn saves:
 * delta, B, C and z made contiguous, the chunk states (fp32, D x 2N per
 * 2048 tokens), its output before the gate; out_proj's input. */
double aps_selscan_saved_per_token(const aps_model *m, const aps_training *t)
{
    double A = APS_ACT_BYTES, F = APS_FP32_BYTES;
    double D = inner(m), N = state(m), R = rank(m);
    double L = (double)t->seq_length; /* one rank's whole sequence: no CP */
    double chunks = L > 0 ? ceil(L / APS_SELSCAN_CHUNK) / L : 0.0;
    return A * 2.0 * D            /* in_proj output: x, z */
           + A * 2.0 * D          /* conv output and its copy */
           + (F + A) * (R + 2.0 * N) /* the three norms */
           + A * R                /* dt_proj input */
           + A * (2.0 * D + 2.0 * N) /* delta, z, B, C contiguous */
           + F * D * 2.0 * N * chunks /* chunk states */
           + A * D                /* scan output before the gate */
           + aps_gemm_input_bytes(t) * D; /* out_proj input */
}

/* bf16 elements read and written a token (an fp32 one counts two): the
 * conv (in, out) and the copy of its output (in, out); the three eager
 * norms' passes, 18 a channel as lightning attention's (gdn.c); delta and
 * z made contiguous (in, out each), B and C (in, out each); out_proj's
 * input copy (in, out).  The scan's own traffic is in its rate. */
double aps_selscan_elementwise_elems(const aps_model *m)
{
    double D = inner(m), N = state(m);
    return 2.0 * D + 2.0 * D + 18.0 * (rank(m) + 2.0 * N) + 4.0 * D +
           4.0 * N + 2.0 * D;
}

double aps_selscan_kernels(void) { return APS_HK_MAMBA1; }

aps_status aps_selscan_validate(const aps_model *m, char *err, size_t n)
{
    const struct { const char *f; int64_t v; } w[] = {
        {"linear_inner_size", m->linear_inner_size},
        {"linear_state_dim", m->linear_state_dim},
        {"linear_dt_rank", m->linear_dt_rank},
    };
    bool on = aps_model_has_mamba1(m);
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
        bool bad = on ? w[i].v < 1 || w[i].v > APS_MAX_HYBRID_WIDTH
                      : w[i].v != 0;
        if (!bad)
            continue;
        aps_fmt(err, n, on ? "model.%s: must be in [1, 1048576] with Mamba-1 "
                             "layers (got %lld)"
                           : "model.%s: a Mamba-1 mixer's width, given "
                             "without linear_attention = mamba1 layers (got "
                             "%lld)", w[i].f, (long long)w[i].v);
        return APS_EINVAL;
    }
    if (on && m->kv_lora_rank > 0) {
        aps_fmt(err, n, "model.kv_lora_rank: Mamba-1 layers beside "
                "multi-latent attention are not modelled (Jamba's attention "
                "layers are GQA)");
        return APS_EINVAL;
    }
    return APS_OK;
}
