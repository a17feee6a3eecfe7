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
#include <math.h>

#include "internal.h"

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
/** Kimi K3's SiTU in fp32 eager ops (SituAndMul @ 36044ad3), bytes moved
 *  per element of the MLP width (read + write): gate.float() (2 + 4),
 *  up.float() (2 + 4), gate / beta (4 + 4), tanh (4 + 4), beta x (4 + 4),
 *  sigmoid (4 + 4), their product (8 + 4), up / beta' (4 + 4), tanh
 *  (4 + 4), beta' x (4 + 4), the product (8 + 4), .to(bf16) (4 + 2); and
 *  the gate and up projections' torch.cat (4 + 4) in KimiK3MLP.forward
 *  (l.334), or the routing weights' product (4 + 4) in _weighted_situ
 *  (l.991) in the experts.  Compiled: a fused SwiGLU's. */
#define APS_EAGER_SITU_BYTES 106.0
/** Megatron-Core's unfused RoPE (rope_utils.py _apply_rotary_pos_emb_bshd
 *  @ d98e8a64 and d12f6c8c), bytes per element of Q or K forward: t * cos
 *  (2 + 2), _rotate_half's -x2 over half the elements (1 + 1) and
 *  cat((-x2, x1)) (2 + 2), * sin (2 + 2), the sum (2 + 2 + 2), and the
 *  closing cat((t, t_pass)) (2 + 2): 24. */
#define APS_MEGATRON_UNFUSED_ROPE_BYTES 24.0


double aps_hbm_time(const aps_device *d, double bytes)
{
    return bytes / (d->hbm_bandwidth * d->hbm_efficiency);
}

double aps_act_fn_bytes(const aps_model *m, const aps_training *t)
{
    bool eager = !t->torch_compile && aps_profile(t)->eager_elementwise;
    if (m->mlp == APS_MLP_SWIGLU && m->glu_activation == APS_GLU_SITU)
        return eager ? APS_EAGER_SITU_BYTES : APS_FUSED_SWIGLU_BYTES;
    return m->mlp != APS_MLP_SWIGLU ? APS_FUSED_ELEMENTWISE_BYTES
           : eager ? APS_EAGER_SWIGLU_BYTES : APS_FUSED_SWIGLU_BYTES;
}

/** Shapes of one layer on one device for one micro-batch. */
typedef struct {
    double tp, cp, S, sl, b, h, a, k, dh, f;
    double kc;     /**< KV heads the attention core is built with
                        (aps_kv_core_groups): kc / tp per rank */
    double v;      /**< V projections per KV head: 1, 0 when V is K's
                        output (aps_attn_kind) */
    double dv;     /**< V head width (aps_attn_kind dv) */
    double keys;   /**< keys per query of the attention core */
    double qa;     /**< query columns per head dim: a, 2a with the output
                        gate in q_proj (attention_output_gate), a + a / dh
                        with a gate per head (attention_head_gate) */
    double T;      /**< tokens of one micro-batch on this device, b s/c */
    double rep;    /**< t under SP (sequence-split tensors), else 1 */
    double mlp_up; /**< columns of the MLP input GEMM on one TP rank */
    aps_hybrid_counts w; /**< blocks of each kind in the mean layer */
} layer_shape;

/** Sets x's query heads a and the Q projection's columns per head dim
 *  qa (the gates' columns included) for head width x->dh. */
static void set_query_heads(const aps_model *m, layer_shape *x, double a)
{
    x->a = a;
    x->qa = m->attention_head_gate      ? a + a / x->dh
            : m->attention_output_gate ? 2.0 * a
                                       : a;
}

/** The shapes of strategy s's layer whose blocks are mix w (NULL: the
 *  model's mean layer, aps_hybrid_mix). */
static void shape_of(const aps_model *m, const aps_training *t,
                     const aps_strategy *s, const aps_hybrid_counts *w,
                     layer_shape *x)
{
    x->tp = (double)s->tp_degree;
    x->cp = (double)s->cp_degree;
    x->S = (double)t->seq_length;
    x->sl = x->S / x->cp;
    x->b = (double)s->micro_batch_size;
    x->h = (double)m->hidden_size;
    x->k = (double)m->num_query_groups;
    x->kc = aps_kv_core_groups(x->k, x->tp);
    x->dh = (double)m->head_dim;
    set_query_heads(m, x, (double)m->num_attention_heads);
    x->v = 1.0;
    x->dv = m->attn_v_head_dim > 0 ? (double)m->attn_v_head_dim : x->dh;
    x->keys = aps_attention_keys(m, x->S, t->flash_attention);
    x->f = (double)m->ffn_hidden_size;
    x->T = x->b * x->sl;
    x->rep = (s->tp_degree > 1 && s->sequence_parallel) ? x->tp : 1.0;
    x->mlp_up = (m->mlp == APS_MLP_SWIGLU ? 2.0 : 1.0) * x->f / x->tp;
    if (w != NULL)
        x->w = *w;
    else
        aps_hybrid_mix(m, &x->w);
}

/** Input width of the Mamba-2 mixer's out_proj: d_inner = nh P. */
static double mamba_out_in(const aps_model *m)
{
    return (double)m->mamba_num_heads * (double)m->mamba_head_dim;
}

double aps_ssd_scan_rate(const aps_device *d)
{
    return d->ssd_scan_rate > 0 ? d->ssd_scan_rate
                                : APS_SSD_ELEMS_PER_HBM_BYTE * d->hbm_bandwidth;
}

/** Forward of one Mamba-2 mixer on one TP rank: in_proj (column
 *  parallel, h -> (2d + 2GN + nh) / t), out_proj (row parallel, d / t ->
 *  h), and the chunked SSD scan (mamba_ssm's five Triton kernels) over
 *  its T d N / t state elements at the device's measured scan rate
 *  (aps_ssd_scan_rate): the kernels run far below the tensor-core rate
 *  their 7 T d N FLOPs would take at the attention efficiency (in
 *  training about 22 TFLOP/s on an H100, internal.h
 *  APS_SSD_ELEMS_PER_HBM_BYTE). */
static double mamba_fwd(const aps_model *m, const aps_device *d,
                        const aps_training *t, const layer_shape *x)
{
    double elems = x->T * mamba_out_in(m) * (double)m->mamba_state_dim;
    return aps_gemm_time(d, t->precision, x->T,
                         aps_mamba_in_proj_width(m) / x->tp, x->h) +
           aps_gemm_time(d, t->precision, x->T, x->h,
                         mamba_out_in(m) / x->tp) +
           elems / x->tp / aps_ssd_scan_rate(d);
}

/** Forward of one linear-attention mixer on one TP rank: the
 *  projections from h (Gated DeltaNet's in_proj, h -> (2K + 2V + 2nv) /
 *  t; KDA's q, k, v, gate downs and beta, aps_gdn_in_proj_width), KDA's
 *  gate ups (dv -> 2V / t) or Mamba-1's x_proj and dt_proj (aps_gdn_
 *  inner_gemms), out_proj (row parallel, V / t -> h), and the chunked
 *  delta rule (gdn.c aps_gdn_scan_flops / t; none in LFM2's short
 *  convolution, whose products are memory-bound) in FLA's Triton kernels,
 *  priced as the fused attention kernels are -- but Mamba-1's selective
 *  scan, mamba_ssm's CUDA kernel on the CUDA cores, at the device's
 *  measured rate per state element of Mamba-2's scan (aps_ssd_scan_rate:
 *  no published training measurement of the selective scan alone was
 *  found; docs/modeling.md "Jamba's Mamba-1 layers"). */
static double gdn_fwd(const aps_model *m, const aps_device *d,
                      const aps_training *t, const layer_shape *x)
{
    double rate = d->peak_flops_bf16 * aps_attention_efficiency(d, t);
    aps_gemm_nk g[2];
    double inner = 0.0;
    for (int i = 0, k = aps_gdn_inner_gemms(m, g); i < k; i++)
        inner += aps_gemm_time(d, t->precision, x->T, g[i].n / x->tp, g[i].k);
    double scan = aps_model_has_mamba1(m)
                      ? aps_selscan_state_elems(m, x->T) / x->tp /
                            aps_ssd_scan_rate(d)
                      : aps_gdn_scan_flops(m, x->T, x->sl) / x->tp / rate;
    return aps_gemm_time(d, t->precision, x->T,
                         aps_gdn_in_proj_width(m) / x->tp, x->h) +
           inner +
           aps_gemm_time(d, t->precision, x->T, x->h,
                         aps_gdn_out_width(m) / x->tp) +
           scan;
}

/** Output columns of the QKV projection (all TP ranks): Q (and the
 *  output gate) and K of dh per head, V of dv unless V is K's. */
static double qkv_width(const layer_shape *x)
{
    return (x->qa + x->k) * x->dh + x->v * x->k * x->dv;
}

/** GEMMs of one layer, forward: QKV, output projection, MLP in and out,
 *  each block by its share of the mean layer (aps_hybrid_mix), and the
 *  Mamba-2 mixer's projections and scan. */
static double layer_gemms(const aps_model *m, const aps_device *d,
                          const aps_training *t, const layer_shape *x)
{
    aps_precision prec = t->precision;
    double attn =
        aps_gemm_time(d, prec, x->T, qkv_width(x) / x->tp, x->h) +
        aps_gemm_time(d, prec, x->T, x->h, x->a * x->dv / x->tp);
    double mlp = aps_gemm_time(d, prec, x->T, x->mlp_up, x->h) +
                 aps_gemm_time(d, prec, x->T, x->h, x->f / x->tp);
    double g = x->w.attn_share * attn + x->w.mlp_share * mlp;
    if (x->w.mamba_share > 0)
        g += x->w.mamba_share * mamba_fwd(m, d, t, x);
    if (x->w.gdn_share > 0)
        g += x->w.gdn_share * gdn_fwd(m, d, t, x);
    return g;
}

double aps_attention_efficiency(const aps_device *d, const aps_training *t)
{
    return t->flash_attention ? d->attention_efficiency
                              : d->unfused_attention_efficiency;
}

/** Attention core in bf16: QK^T and PV, 2 b s' keys a dh and dv FLOPs;
 *  flash attention skips the masked blocks (and those outside a sliding
 *  window), CP balances the halves; without it the scores are dense and
 *  the two products run as batched GEMMs at the device's
 *  unfused_attention_efficiency (aps_attention_efficiency). */
static void layer_attention(const aps_device *d, const aps_training *t,
                            const layer_shape *x, aps_layer_cost *out)
{
    double attn_flops =
        2.0 * x->b * x->sl * x->keys * x->a * (x->dh + x->dv) / x->tp;
    out->attn_fwd = x->w.attn_share *
                    aps_attention_core_time(d, t->flash_attention, false,
                                            attn_flops);
    out->attn_bwd = x->w.attn_share *
                    aps_attention_core_time(d, t->flash_attention, true,
                                            attn_flops);
}

double aps_attention_core_time(const aps_device *d, bool flash,
                               bool backward, double flops)
{
    double eff = flash ? d->attention_efficiency
                       : d->unfused_attention_efficiency;
    double ratio = !backward ? 1.0
                   : flash   ? APS_FLASH_BWD_RATIO
                             : APS_GEMM_BWD_RATIO;
    return flops * ratio / (d->peak_flops_bf16 * eff);
}

/** HBM bytes per element of one norm in the forward, fused or eager. */
static double norm_elem_bytes(const aps_model *m, const aps_training *t)
{
    /* AutoModel's rms_norm "te": TransformerEngine's fused RMSNorm */
    bool eager = !t->torch_compile && aps_profile(t)->eager_elementwise &&
                 t->rms_norm_backend != APS_RMS_NORM_TE;
    return (eager && m->norm == APS_NORM_RMSNORM) ? APS_EAGER_RMSNORM_BYTES
                                                  : APS_FUSED_ELEMENTWISE_BYTES;
}

/** HBM bytes of one layer's norms in the forward (norms_per_layer of
 *  them over the hidden states, fused or eager): Megatron's "layernorm"
 *  recompute module (input_layernorm, pre_mlp_layernorm). */
static double layer_norm_bytes(const aps_model *m, const aps_training *t,
                               const layer_shape *x)
{
    return (double)m->norms_per_layer * norm_elem_bytes(m, t) * x->T * x->h /
           x->rep;
}

/** HBM bytes of the per-head norms on Q and K (qk_norm, Qwen3), forward:
 *  over the full local sequence and the rank's a / t query and kc / t key
 *  heads of head_dim each (aps_kv_core_groups), after the QKV projection
 *  (Megatron SelfAttention.get_query_key_value_tensors q_layernorm /
 *  k_layernorm; TorchTitan qwen3 Attention q_norm / k_norm).  Inside the
 *  attention, so not part of the "layernorm" recompute module. */
static double layer_qk_norm_bytes(const aps_model *m, const aps_training *t,
                                  const layer_shape *x)
{
    if (!m->qk_norm)
        return 0.0;
    return norm_elem_bytes(m, t) * x->T * (x->a + x->kc) * x->dh / x->tp;
}

/** HBM bytes of the memory-bound kernels of one layer's forward: norms
 *  (and the Q / K norms), residuals, RoPE on q and k, the activation
 *  function, dropout, and the softmax over the scores without flash
 *  attention. */
/** YaRN's cos/sin factor at scale s with log coefficient ms:
 *  0.1 ms ln s + 1, 1 for s <= 1 (Megatron-LM _yarn_get_mscale,
 *  transformers get_mscale). */
static double yarn_mscale(double s, double ms)
{
    return s <= 1.0 ? 1.0 : 0.1 * ms * log(s) + 1.0;
}

/** Whether Megatron-Core applies a GQA model's RoPE unfused: a YaRN
 *  scaling whose cos/sin factor is not 1, which TE's fused RoPE does not
 *  take ("mscale=... is not supported by TE's fused RoPE. Using unfused
 *  implementation.", rope_utils.py apply_rotary_pos_emb @ d98e8a64 and
 *  d12f6c8c; gpt-oss: factor 32, 1 + 0.1 ln 32 = 1.35).  The factor is
 *  transformers' attention_factor, which the launch file makes Megatron's
 *  _yarn_get_concentration_factor (lua/apsearch/launch/megatron.lua
 *  yarn_mscale): given outright, else the mscale ratio when both are
 *  given, else get_mscale(factor).  MLA applies its own RoPE kernels. */
static bool megatron_unfused_rope(const aps_model *m, const aps_training *t)
{
    if (t->framework != APS_FW_MEGATRON || m->position_embedding != APS_POS_ROPE ||
        m->rope_scaling_type != APS_ROPE_SCALING_YARN || m->kv_lora_rank > 0)
        return false;
    double f = m->rope_scaling_factor, c;
    if (m->yarn_attention_factor > 0.0)
        c = m->yarn_attention_factor;
    else if (m->yarn_mscale > 0.0 && m->yarn_mscale_all_dim > 0.0)
        c = yarn_mscale(f, m->yarn_mscale) / yarn_mscale(f, m->yarn_mscale_all_dim);
    else
        c = yarn_mscale(f, 1.0);
    return c != 1.0;
}

static double layer_membound_bytes(const aps_model *m, const aps_training *t,
                                   const layer_shape *x)
{
    double A = APS_ACT_BYTES;
    bool eager = !t->torch_compile && aps_profile(t)->eager_elementwise;
    double rope_b = m->position_embedding != APS_POS_ROPE ? 0.0
                    : eager ? APS_EAGER_ROPE_BYTES
                    : megatron_unfused_rope(m, t) ? APS_MEGATRON_UNFUSED_ROPE_BYTES
                                                  : APS_FUSED_ELEMENTWISE_BYTES;
    double act_b = aps_act_fn_bytes(m, t);
    double hrep = x->T * x->h / x->rep;
    const aps_hybrid_counts *w = &x->w;
    double attn = layer_qk_norm_bytes(m, t, x)               /* Q, K norms */
                  + rope_b * x->T * (x->a + x->kc) * x->dh / x->tp; /* RoPE */
    if (!t->flash_attention) /* softmax (and dropout) over the scores */
        attn += (2.0 * A + (aps_recipe_attention_dropout(t) ? 2.0 * A + 1.0
                                                            : 0.0)) *
                x->a * x->sl * x->S * x->b / x->tp;
    double bytes = layer_norm_bytes(m, t, x)                 /* norms */
                   + w->blocks * 3.0 * A * hrep              /* residuals */
                   + w->attn_share * attn
                   + w->mlp_share * act_b * x->T * x->f / x->tp; /* act. */
    /* Mamba-2: the conv (x, B, C in, out with SiLU), the gated RMSNorm
     * (y and z in, out) */
    if (w->mamba_share > 0)
        bytes += w->mamba_share * A * x->T *
                 (2.0 * aps_mamba_conv_dim(m) +
                  3.0 * (double)m->mamba_num_heads *
                      (double)m->mamba_head_dim) / x->tp;
    /* linear attention: the conv, norms, gates (gdn.c) */
    if (w->gdn_share > 0)
        bytes += w->gdn_share * A * x->T * aps_gdn_elementwise_elems(m, x->sl) / x->tp;
    /* the attention output gate: sigmoid and product (gate, output in,
     * product out) */
    if (m->attention_output_gate)
        bytes += w->attn_share * 3.0 * A * x->T * x->a * x->dh / x->tp;
    /* the per-head gate: softplus (gate in, out) and the product with the
     * context (context and gate in, product out) */
    if (m->attention_head_gate)
        bytes += w->attn_share * A * x->T * x->a * (2.0 * x->dh + 3.0) / x->tp;
    /* Kimi K3's attention residual mixes, eager fp32 (attnres.c) */
    bytes += aps_attnres_traffic_per_token(m) * x->T;
    /* hidden dropout: one per block, the two of a transformer layer
     * (Megatron-Core transformer_layer.py self_attn_bda, mlp_bda @
     * d98e8a64; transformers' GPT-2 resid_dropout and mlp dropout), as
     * memory.c keeps their two masks; the embedding's one dropout a
     * micro-batch is left out (one h-wide pass of L layers' 2L) */
    if (aps_recipe_hidden_dropout(t))
        bytes += w->blocks * (2.0 * A + APS_MASK_BYTES) * hrep;
    return bytes;
}

/** Cast bytes of one block whose two GEMMs take their input from the
 *  block's pre-norm and from an unfused producer: the first GEMM of
 *  in_w output columns (the TP rank's in_w / t) reads the norm's output
 *  (aps_norm_cast_bytes; with SP cast on the local sequence shard, before
 *  the fp8 all-gather: TE LayerNormLinear), the second reads out_in / t
 *  columns; backward their output gradients, in_w / t and h wide, come
 *  from unfused bf16 producers.  The attention block (QKV and the
 *  output projection), the Mamba-2 mixer (in_proj, out_proj) and the
 *  Gated DeltaNet mixer (in_proj, out_proj) are such blocks: Megatron-
 *  Core builds all three with a TELayerNormColumnParallelLinear and a
 *  TERowParallelLinear (megatron/core/models/hybrid/hybrid_layer_specs.py
 *  @ d98e8a64 hybrid_stack_spec: mamba_layer MambaMixerSubmodules,
 *  gdn_layer GatedDeltaNetSubmodules; models/gpt/experimental_attention_
 *  variant_module_specs.py the same for GPT's Gated DeltaNet), which run
 *  in the quantized format under fp8_autocast; the conv1d, the scan and
 *  the gated norm in between stay bf16 (ssm/mamba_mixer.py MambaMixer.
 *  forward: in_proj, the fused conv1d + SSD scan + gated RMSNorm of
 *  mamba_ssm, out_proj). */
static void proj_block_casts(const aps_training *t, const layer_shape *x,
                             double in_w, double out_in, double *fwd,
                             double *bwd)
{
    double cast, fused;
    aps_cast_bytes(t, &cast, &fused);
    *fwd = aps_norm_cast_bytes(t) * x->T * x->h / x->rep +
           cast * x->T * out_in / x->tp;
    *bwd = cast * x->T * (in_w / x->tp + x->h);
}

/** fp8, mxfp8, nvfp4: every GEMM input (forward) and output gradient
 *  (backward) is quantized in both layouts (aps_cast_bytes), each block
 *  of the mean layer by its share (aps_hybrid_mix: a transformer layer
 *  is one attention and one MLP block).  The attention and the
 *  Mamba-2 / Gated DeltaNet mixers: proj_block_casts.  The MLP's input
 *  comes from its norm, fc2's input from the activation and fc1's output
 *  gradient from the activation's backward: fused casts where the
 *  framework fuses them (SwiGLU's gate and up share one input).  An MoE
 *  layer swaps its dense MLP's casts for the experts' (moe.c). */
static void layer_casts(const aps_model *m, const aps_device *d,
                        const aps_training *t, const layer_shape *x,
                        aps_layer_cost *out)
{
    out->fp8_cast_fwd = out->fp8_cast_bwd = 0.0;
    if (!aps_prec_quantized(t->precision))
        return;
    const aps_hybrid_counts *w = &x->w;
    double cast, fused, f, b;
    aps_cast_bytes(t, &cast, &fused);
    proj_block_casts(t, x, qkv_width(x), x->a * x->dv, &f, &b);
    double fwd = w->attn_share * f, bwd = w->attn_share * b;
    fwd += w->mlp_share * (aps_norm_cast_bytes(t) * x->T * x->h / x->rep +
                           fused * x->T * x->f / x->tp);
    bwd += w->mlp_share * (cast * x->T * x->h + fused * x->T * x->mlp_up);
    if (w->mamba_share > 0) {
        proj_block_casts(t, x, aps_mamba_in_proj_width(m), mamba_out_in(m),
                         &f, &b);
        fwd += w->mamba_share * f;
        bwd += w->mamba_share * b;
    }
    if (w->gdn_share > 0) {
        proj_block_casts(t, x, aps_gdn_in_proj_width(m), aps_gdn_out_width(m), &f,
                         &b);
        fwd += w->gdn_share * f;
        bwd += w->gdn_share * b;
    }
    out->fp8_cast_fwd = aps_hbm_time(d, fwd);
    out->fp8_cast_bwd = aps_hbm_time(d, bwd);
}

unsigned aps_recompute_modules(const aps_training *t, const aps_strategy *s)
{
    if (aps_profile(t)->op_sac_selective)
        return 0u;
    return s->recompute_modules != 0u ? s->recompute_modules
                                      : (unsigned)APS_RCM_CORE_ATTN;
}

/** Forward seconds of a dense MLP on one TP rank: its two GEMMs (three
 *  matrices with SwiGLU's gate and up in one) and the activation
 *  function's HBM traffic. */
static double layer_mlp_fwd(const aps_model *m, const aps_device *d,
                            const aps_training *t, const layer_shape *x)
{
    return aps_gemm_time(d, t->precision, x->T, x->mlp_up, x->h) +
           aps_gemm_time(d, t->precision, x->T, x->h, x->f / x->tp) +
           aps_hbm_time(d, aps_act_fn_bytes(m, t) * x->T * x->f / x->tp);
}

double aps_mlp_fwd_time(const aps_model *m, const aps_device *d,
                        const aps_training *t, const aps_strategy *s)
{
    layer_shape x;
    shape_of(m, t, s, NULL, &x);
    return layer_mlp_fwd(m, d, t, &x);
}

/** Selective recompute: Megatron recomputes its recompute modules
 *  (aps_recompute_modules) -- of a layer the attention core (core_attn),
 *  the norms (layernorm) and a dense MLP (mlp; moe.c takes it off the MoE
 *  layers); op-level checkpointing (TorchTitan, AutoModel) recomputes the
 *  matmuls its walk does not save (opsac.c: under TorchTitan the
 *  even-numbered wk, wo, w3 or fc2; under AutoModel's TransformerEngine
 *  linears all of them), the attention kernel when the policy does not
 *  see it, and every elementwise op.  Needs out's attn_fwd and
 *  membound_fwd. */
static void layer_selective(const aps_model *m, const aps_device *d,
                            const aps_training *t, const aps_strategy *s,
                            const layer_shape *x, aps_layer_cost *out)
{
    if (!aps_profile(t)->op_sac_selective) {
        unsigned mods = aps_recompute_modules(t, s);
        out->selective_fwd =
            ((mods & APS_RCM_CORE_ATTN) ? out->attn_fwd : 0.0) +
            ((mods & APS_RCM_LAYERNORM)
                 ? aps_hbm_time(d, layer_norm_bytes(m, t, x)) : 0.0) +
            ((mods & APS_RCM_MLP)
                 ? x->w.mlp_share * layer_mlp_fwd(m, d, t, x) : 0.0);
        return;
    }
    out->selective_fwd =
        aps_op_sac_layer_recompute(m, d, t, s, false, false) +
        out->membound_fwd + out->fp8_cast_fwd +
        (aps_op_sac_attention_recomputed(t) ? out->attn_fwd : 0.0);
}

/** Fewer KV heads than TP ranks (x->k < x->kc): the all-gather of the
 *  QKV projection's output over the TP group forward, whose backward is
 *  the reduce-scatter of its gradient (get_query_key_value_tensors,
 *  all_gather_last_dim_from_tensor_parallel_region, attention.py l.1864
 *  @ d98e8a64), of the b s/c tokens by every column of the fused
 *  projection (qkv_width), in bf16, and the copy each makes of the whole
 *  tensor (tensor_parallel/mappings.py _gather_along_last_dim: torch.cat
 *  of the gathered chunks; _reduce_scatter_along_last_dim: torch.cat of
 *  the split before the reduce-scatter), read and written once; one way's
 *  time (the same both ways).  A plain blocking collective on the compute
 *  stream: no overlap hides it.  0 when tp divides the KV heads. */
static double kv_replication_comm(const aps_device *d, const aps_strategy *s,
                                  const layer_shape *x, double bw,
                                  double alpha)
{
    if (x->k >= x->kc)
        return 0.0;
    double bytes = APS_ACT_BYTES * x->T * qkv_width(x);
    return aps_allgather_time(s->tp_degree, bytes, bw, alpha) +
           aps_hbm_time(d, 2.0 * bytes);
}

/** TP: per layer two collectives each way on the full activation
 *  (Shoeybi et al. 2019 fig. 4: f and g operators; with SP each
 *  all-reduce becomes an all-gather + reduce-scatter pair, Korthikanti et
 *  al. 2022 s.4.2.2).  With SP the all-gathers (of the QKV and MLP
 *  inputs forward, of the projection and MLP output gradients backward)
 *  carry aps_tp_gather_bytes per element; the reduce-scatters and the
 *  all-reduces without SP carry bf16. */
static void layer_tp(const aps_cluster *c, const aps_training *t,
                     const aps_strategy *s, const layer_shape *x,
                     aps_layer_cost *out)
{
    out->tp_fwd = out->tp_bwd = out->kv_gather = 0.0;
    if (s->tp_degree <= 1)
        return;
    double bw, alpha;
    aps_group_link(c, 1, s->tp_degree, &bw, &alpha);
    double elems = x->T * x->h;
    double act = APS_ACT_BYTES * elems;
    double one = s->sequence_parallel
                     ? aps_allgather_time(s->tp_degree,
                                          aps_tp_gather_bytes(t) * elems, bw,
                                          alpha) +
                           aps_reducescatter_time(s->tp_degree, act, bw,
                                                  alpha)
                     : aps_allreduce_time(s->tp_degree, act, bw, alpha);
    /* one pair per block: attention, MLP, Mamba-2 (in_proj column
     * parallel, out_proj row parallel, as an MLP); a P layer's block holds
     * two mixers, each its own pair (Megatron-Bridge 067f987df
     * falconh1_layer_specs.py: the mixer's in_proj / out_proj and the
     * attention's linear_qkv / linear_proj parallel linears) */
    double pairs = x->w.blocks + x->w.parallel_share;
    out->tp_fwd = pairs * one;
    out->tp_bwd = pairs * one;
    out->kv_gather = x->w.attn_share *
                     kv_replication_comm(&c->device, s, x, bw, alpha);
}

/** Time of one all-to-all of a tensor of `elems` bf16 elements per rank
 *  over the CP group (c ranks tp apart), split evenly over its members
 *  (own share stays): aps_group_alltoall_time with the share to members
 *  of the sender's NVLink domain and the share to the others. */
static double cp_alltoall(const aps_cluster *c, const aps_strategy *s,
                          double elems)
{
    double bytes = APS_ACT_BYTES * elems, n = (double)s->cp_degree;
    int64_t gd = aps_group_domain_members(c, s->tp_degree, s->cp_degree);
    if (gd >= s->cp_degree)
        return aps_group_alltoall_time(c, s->tp_degree, s->cp_degree, bytes,
                                       0.0);
    return aps_group_alltoall_time(c, s->tp_degree, s->cp_degree,
                                   bytes * ((double)gd - 1.0) / n,
                                   bytes * (n - (double)gd) / n);
}

/** CP a2a (DeepSpeed-Ulysses, Jacobs et al. 2023 arXiv:2309.14509), as
 *  TransformerEngine runs it (AttnFuncWithCPAndQKVOA2A, transformer_engine/
 *  pytorch/attention/dot_product_attention/context_parallel.py @ d0067d0d):
 *  forward, one all_to_all_single each of Q, K, V (l.4339, [b, s/c, h, d]
 *  -> [b, s, h/c, d]) and of the output (l.4485); backward, of dO
 *  (l.4677) and of dQ, dK, dV (l.4837).  Each rank sends its whole local
 *  tensor, b s/c tokens of a/t (Q, O) or k/t (K, V) heads of d.
 *  flash_attn_a2a_communicate (l.387-536) overlaps a tensor's all-to-all
 *  with the previous one's reordering only, and the current stream waits
 *  for cp_stream (l.535) before the attention: all exposed.  The learnable
 *  softmax offset is split locally and its gradient all-gathered
 *  ([1, h, 1, 1], l.539-585): negligible.  The attention itself runs over the full sequence for
 *  a/(t c) heads, the same FLOPs as layer_attention's b s/c queries of a/t
 *  heads, and every rank gets the same causal mask: balanced. */
static void layer_cp_a2a(const aps_cluster *c, const aps_strategy *s,
                         const layer_shape *x, aps_layer_cost *out)
{
    double qk_head = x->b * x->sl * x->dh / x->tp;  /* elements per head */
    double v_head = x->b * x->sl * x->dv / x->tp;
    double q = cp_alltoall(c, s, x->a * qk_head);   /* Q; dQ */
    double o = cp_alltoall(c, s, x->a * v_head);    /* O; dO */
    double k = cp_alltoall(c, s, x->kc * qk_head);  /* K; dK */
    double v = cp_alltoall(c, s, x->kc * v_head);   /* V; dV */
    out->cp_fwd = (q + o) + (k + v);
    out->cp_bwd = out->cp_fwd;
}

/** CP: ring attention passes each rank's K,V chunk round the ring, c-1
 *  steps forward and twice that (K,V and dK,dV) backward (Liu et al.
 *  2023, Ring Attention; Megatron context_parallel).  All-gather variant:
 *  gather K,V forward, reduce-scatter dK,dV backward (Llama 3, Dubey et
 *  al. 2024 s.3.3.2).  a2a: layer_cp_a2a. */
static void layer_cp(const aps_cluster *c, const aps_strategy *s,
                     const layer_shape *x, aps_layer_cost *out)
{
    out->cp_fwd = out->cp_bwd = 0.0;
    if (s->cp_degree <= 1)
        return;
    if (s->cp_comm_type == APS_CP_A2A) {
        layer_cp_a2a(c, s, x, out);
        return;
    }
    double bw, alpha;
    bool gather = s->cp_comm_type == APS_CP_ALL_GATHER;
    if (gather)
        aps_group_link(c, s->tp_degree, s->cp_degree, &bw, &alpha);
    else
        aps_p2p_link(c, s->tp_degree, s->cp_degree, &bw, &alpha);
    double kv_chunk = APS_ACT_BYTES * x->b * x->sl * x->kc * (x->dh + x->dv) /
                      x->tp;
    if (gather) {
        out->cp_fwd = aps_allgather_time(s->cp_degree, kv_chunk * x->cp, bw,
                                         alpha);
        out->cp_bwd = out->cp_fwd + aps_reducescatter_time(
                          s->cp_degree, kv_chunk * x->cp, bw, alpha);
    } else {
        out->cp_fwd = (x->cp - 1.0) * (kv_chunk / bw + alpha);
        out->cp_bwd = 2.0 * out->cp_fwd;
    }
}

/** The times of the layer of shape x (one attention kind). */
static void layer_times_of(const aps_model *m, const aps_cluster *c,
                           const aps_training *t, const aps_strategy *s,
                           const layer_shape *x, aps_layer_cost *out)
{
    const aps_device *d = &c->device;
    out->gemm_fwd = layer_gemms(m, d, t, x);
    layer_attention(d, t, x, out);
    out->membound_fwd = aps_hbm_time(d, layer_membound_bytes(m, t, x));
    layer_casts(m, d, t, x, out);
    layer_selective(m, d, t, s, x, out);
    layer_tp(c, t, s, x, out);
    layer_cp(c, s, x, out);
}

/** The fields layer_times_of sets. */
#define APS_KIND_COST_FIELDS 12
static void kind_cost_fields(aps_layer_cost *c,
                             double *f[APS_KIND_COST_FIELDS])
{
    double *all[APS_KIND_COST_FIELDS] = {
        &c->gemm_fwd, &c->attn_fwd, &c->attn_bwd, &c->membound_fwd,
        &c->fp8_cast_fwd, &c->fp8_cast_bwd, &c->selective_fwd, &c->tp_fwd,
        &c->tp_bwd, &c->kv_gather, &c->cp_fwd, &c->cp_bwd};
    for (int i = 0; i < APS_KIND_COST_FIELDS; i++)
        f[i] = all[i];
}

/** The mean layer of a model with a global attention shape: each kind's
 *  times (its KV heads, head width, V projection and keys) by its share
 *  of the layers. */
static void layer_times_kinds(const aps_model *m, const aps_cluster *c,
                              const aps_training *t, const aps_strategy *s,
                              const layer_shape *x, aps_layer_cost *out)
{
    aps_attn_kind k[APS_ATTN_KINDS];
    int n = aps_attn_kinds(m, k);
    double *sum[APS_KIND_COST_FIELDS], *part_f[APS_KIND_COST_FIELDS];
    aps_layer_cost part = *out;
    kind_cost_fields(out, sum);
    kind_cost_fields(&part, part_f);
    for (int j = 0; j < APS_KIND_COST_FIELDS; j++)
        *sum[j] = 0.0;
    for (int i = 0; i < n; i++) {
        layer_shape y = *x;
        y.k = k[i].k;
        y.kc = aps_kv_core_groups(y.k, y.tp);
        y.dh = k[i].d;
        set_query_heads(m, &y, k[i].a);
        y.v = k[i].v;
        y.dv = k[i].dv;
        y.keys = aps_attn_kind_keys(m, &k[i], x->S, t->flash_attention);
        layer_times_of(m, c, t, s, &y, &part);
        for (int j = 0; j < APS_KIND_COST_FIELDS; j++)
            *sum[j] += k[i].share * *part_f[j];
    }
}

void aps_layer_times(const aps_model *m, const aps_cluster *c,
                     const aps_training *t, const aps_strategy *s,
                     const aps_hybrid_counts *w, aps_layer_cost *out)
{
    layer_shape x;
    shape_of(m, t, s, w, &x);
    if (aps_model_has_global_attention(m))
        layer_times_kinds(m, c, t, s, &x, out);
    else
        layer_times_of(m, c, t, s, &x, out);
    aps_host_program_build(m, t, s, w, &out->host);
    aps_kernel_program_build(m, t, s, w, &out->kernels);
}
