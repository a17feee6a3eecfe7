/*
 * Megatron-LM's first and last decoder layers in bf16
 * (--first-last-layers-bf16, --num-layers-at-start-in-bf16 N,
 * --num-layers-at-end-in-bf16 M; TransformerConfig l.649-658 @ d98e8a64):
 * under fp8, mxfp8 or nvfp4, get_fp8_context (fp8_utils.py) and
 * get_fp4_context (fp4_utils.py) give a layer of global index < N or >=
 * num_layers - M no quantized autocast, so its GEMMs run in bf16, quantize
 * nothing and save bf16 inputs.  A hybrid model's index is its pattern's
 * (hybrid_block.py); the multi-token-prediction layers take the outer
 * context and stay quantized.
 *
 * Pricing: a rank holding k bf16 layers of its L is priced as L - k
 * quantized layers plus k layers of the same training at bf16: every
 * per-layer field of its layer cost becomes the count-weighted mean of the
 * two (aps_bf16_stage_cost), so each term that multiplies it by the rank's
 * layers reads (L - k) q + k b.  What this does not capture: the bf16
 * layers' kinds of a transformer with alternating attention kinds (priced
 * as the model's mean layer), which of them a partial recompute picks, and
 * weight memory (the quantized weight copies stay those of all layers).
 */
#include "internal.h"

#include <string.h>

/** A count given or Megatron's default when first_last_layers_bf16 is on. */
static int64_t resolved(const aps_training *t, int64_t v)
{
    if (!t->first_last_layers_bf16)
        return 0;
    return v == APS_DEFAULT ? APS_BF16_LAYERS_DEFAULT : v;
}

int64_t aps_bf16_layers_at_start(const aps_training *t)
{
    return resolved(t, t->num_layers_at_start_in_bf16);
}

int64_t aps_bf16_layers_at_end(const aps_training *t)
{
    return resolved(t, t->num_layers_at_end_in_bf16);
}

/** Appends a .. b - 1 to sp when not empty. */
static void add_span(aps_layer_spans *sp, int64_t a, int64_t b)
{
    if (b <= a)
        return;
    sp->start[sp->n] = a;
    sp->len[sp->n] = b - a;
    sp->n++;
    sp->layers += b - a;
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

void aps_bf16_rank_split(const aps_model *m, const aps_training *t,
                         const aps_layout *lay, int64_t i,
                         aps_layer_spans *bf16, aps_layer_spans *quant)
{
    *bf16 = *quant = (aps_layer_spans){0};
    int64_t start[APS_MAX_STAGES], len[APS_MAX_STAGES];
    int64_t n = aps_layout_rank_spans(lay, i, start, len);
    bool on = aps_prec_quantized(t->precision);
    int64_t L = m->num_layers;
    int64_t head = on ? min64(aps_bf16_layers_at_start(t), L) : 0;
    int64_t tail = on ? max64(L - aps_bf16_layers_at_end(t), head) : L;
    for (int64_t k = 0; k < n; k++) {
        int64_t a = start[k], b = start[k] + len[k];
        add_span(bf16, a, min64(b, head));
        add_span(quant, max64(a, head), min64(b, tail));
        add_span(bf16, max64(a, tail), b);
    }
}

/** MoE layers among the layers of sp. */
static int64_t span_moe_layers(const aps_model *m, const aps_layer_spans *sp)
{
    int64_t count = 0;
    if (m->num_experts <= 0)
        return 0;
    for (int64_t k = 0; k < sp->n; k++)
        count += aps_model_moe_layers_in(m, sp->start[k], sp->start[k] + sp->len[k]);
    return count;
}

/** The per-layer fields of aps_layer_cost a rank's terms multiply by its
 *  layers (act_full_max, the largest layer, is taken apart). */
#define APS_BF16_LAYER_FIELDS(X)                                             \
    X(act_full) X(act_selective) X(act_input) X(gemm_fwd) X(attn_fwd)        \
    X(attn_bwd) X(selective_fwd) X(membound_fwd) X(fp8_cast_fwd)             \
    X(fp8_cast_bwd) X(tp_fwd) X(tp_bwd) X(kv_gather) X(cp_fwd) X(cp_bwd)
/** The fields of aps_moe_cost (per MoE layer; ep_buffer taken apart). */
#define APS_BF16_MOE_FIELDS(X)                                               \
    X(gemm_fwd) X(membound_fwd) X(cast_fwd) X(cast_bwd) X(bias_fwd)          \
    X(bias_bwd) X(drop_mlp_tp)                                               \
    X(act) X(ep_fwd) X(ep_bwd) X(dense_params) X(dense_matmul_params)        \
    X(expert_params) X(expert_matmul_params) X(mla_gemm_fwd)                 \
    X(mla_attn_fwd) X(mla_attn_bwd) X(mla_act) X(mla_params)                 \
    X(mla_matmul_params) X(dense_mlp_fwd) X(dense_mlp_act) X(moe_fwd)        \
    X(moe_int_act) X(shared_fwd) X(shared_act) X(actfn_fwd) X(actfn_act)     \
    X(mla_up_fwd) X(mla_up_act) X(dsa_indexer_fwd) X(dsa_indexer_bwd)        \
    X(static_rows) X(stash_tokens) X(stash_row_bytes)

/** q + f (b - q): the mean of a set whose share f is b, the rest q (q
 *  itself when b equals it). */
static double blend(double q, double b, double f)
{
    return q + f * (b - q);
}

/** Launches of a block blended by share f of its count. */
static void blend_launches(aps_launches *q, const aps_launches *b, double f)
{
    q->fwd = blend(q->fwd, b->fwd, f);
    q->bwd = blend(q->bwd, b->bwd, f);
}

/** Shares of a rank's layers in bf16: of all (layers), of its MoE layers
 *  (moe) and of the others (dense), each the bf16 count over the rank's. */
typedef struct {
    double layers, moe, dense;
} bf16_shares;

/** A layer program's launches blended by the shares w: its attention by
 *  all layers', its MLP by the dense layers', its MoE blocks by the MoE
 *  layers'. */
static void blend_program(aps_host_program *q, const aps_host_program *b,
                          const bf16_shares *w)
{
    blend_launches(&q->attn, &b->attn, w->layers);
    blend_launches(&q->mlp, &b->mlp, w->dense);
    blend_launches(&q->moe_pre, &b->moe_pre, w->moe);
    blend_launches(&q->moe_post, &b->moe_post, w->moe);
    blend_launches(&q->moe_loop, &b->moe_loop, w->moe);
    blend_launches(&q->moe_loop_gemm, &b->moe_loop_gemm, w->moe);
}

/** q (the quantized layers' mean) blended with b (the bf16 layers') by
 *  the shares w, into q. */
static void blend_cost(aps_layer_cost *q, const aps_layer_cost *b,
                       const bf16_shares *w)
{
#define APS_BLEND_LAYER(f) q->f = blend(q->f, b->f, w->layers);
    APS_BF16_LAYER_FIELDS(APS_BLEND_LAYER)
#undef APS_BLEND_LAYER
#define APS_BLEND_MOE(f) q->moe.f = blend(q->moe.f, b->moe.f, w->moe);
    APS_BF16_MOE_FIELDS(APS_BLEND_MOE)
#undef APS_BLEND_MOE
    if (b->act_full_max > q->act_full_max)
        q->act_full_max = b->act_full_max;
    if (b->moe.ep_buffer > q->moe.ep_buffer)
        q->moe.ep_buffer = b->moe.ep_buffer;
    blend_program(&q->host, &b->host, w);
    blend_program(&q->kernels, &b->kernels, w);
}

/** k over n, 0 when n is 0. */
static double share(int64_t k, int64_t n)
{
    return n > 0 ? (double)k / (double)n : 0.0;
}

/** Pipeline rank i's bf16 shares for its bf16 layers bf16. */
static void rank_shares(const aps_model *m, const aps_layout *lay, int64_t i,
                        const aps_layer_spans *bf16, bf16_shares *w)
{
    int64_t L = aps_layout_run_layers(lay, i);
    int64_t moe = aps_moe_stage_moe_layers(m, lay, i);
    int64_t k_moe = span_moe_layers(m, bf16);
    w->layers = share(bf16->layers, L);
    w->moe = share(k_moe, moe);
    w->dense = share(bf16->layers - k_moe, L - moe);
}

const aps_layer_cost *aps_bf16_stage_cost(const aps_model *m,
                                          const aps_cluster *c,
                                          const aps_training *t,
                                          const aps_strategy *s,
                                          const aps_layout *lay,
                                          const aps_layer_cost *lc,
                                          const aps_layer_cost *base,
                                          int64_t i, aps_layer_cost *buf)
{
    aps_layer_spans bf16, quant;
    aps_bf16_rank_split(m, t, lay, i, &bf16, &quant);
    if (bf16.layers == 0)
        return base;
    aps_training tb = *t;
    tb.precision = APS_PREC_BF16;
    aps_moe_cost moe_b;
    aps_moe_layer_cost(m, c, &tb, s, &moe_b);
    aps_layer_cost b, q = *base; /* base may be buf */
    if (aps_model_is_hybrid(m) || aps_model_has_gdn(m)) {
        aps_hybrid_counts wq, wb;
        aps_hybrid_spans_mix(m, quant.start, quant.len, quant.n,
                             aps_layout_mtp_depths(lay, i), &wq);
        aps_hybrid_spans_mix(m, bf16.start, bf16.len, bf16.n, 0, &wb);
        aps_mix_layer_cost(m, c, t, s, &wq, &lc->moe, &q);
        aps_mix_layer_cost(m, c, &tb, s, &wb, &moe_b, &b);
    } else {
        aps_layer_activations(m, &tb, s, NULL, &b);
        aps_layer_times(m, c, &tb, s, NULL, &b);
        b.moe = moe_b;
    }
    bf16_shares w;
    rank_shares(m, lay, i, &bf16, &w);
    blend_cost(&q, &b, &w);
    *buf = q;
    return buf;
}

aps_reason aps_check_bf16_layers(const aps_model *m, const aps_training *t,
                                 const aps_strategy *s, char *msg, size_t n)
{
    /* Megatron's config.fp8 is set for fp8 and mxfp8; nvfp4 is fp4 */
    if (!t->first_last_layers_bf16 ||
        !(t->precision == APS_PREC_FP8 || t->precision == APS_PREC_MXFP8))
        return APS_REASON_NONE;
    int64_t per_stage = m->num_layers / s->pp_degree;
    struct { const char *f; int64_t v; } c[] = {
        {"num_layers_at_start_in_bf16", aps_bf16_layers_at_start(t)},
        {"num_layers_at_end_in_bf16", aps_bf16_layers_at_end(t)}};
    for (size_t k = 0; k < sizeof c / sizeof c[0]; k++)
        if (c[k].v > per_stage) {
            aps_fmt(msg, n, "%s (%lld) must be between 0 and number of "
                    "layers per pipeline stage (%lld) (Megatron-LM "
                    "transformer_config.py, num_layers // pp_degree)",
                    c[k].f, (long long)c[k].v, (long long)per_stage);
            return APS_REASON_PP_PARTITION;
        }
    return APS_REASON_NONE;
}
