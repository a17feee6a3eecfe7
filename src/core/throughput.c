/*
 * throughput.c -- FLOPs of one training step and what derives from the
 * step time (MODELING.md s.4, "Derived"): tokens/s, tokens/s per GPU,
 * model TFLOP/s per GPU, MFU and HFU.
 *
 * FLOPs (Narayanan et al. SC'21 eq. 3 counts the same terms; compute.c for
 * the per-layer derivation): per sequence and layer, forward 2 s (matmul
 * parameters) + attention core 4 s keys a d (keys per query: s, s/2 when
 * causal, less under a sliding window, aps_attention_keys), logits
 * 2 s h V; backward 2 x forward, so a step is 3 x forward plus the
 * recomputed forwards.  MFU counts model FLOPs (causal attention, no
 * recompute, unpadded V) against the devices' peak in the training
 * precision (PaLM, Chowdhery et al. 2022 appendix B); HFU adds the
 * recomputed forwards.
 */
#include "internal.h"

/** Tera: model TFLOP/s = FLOP/s / 1e12. */
#define APS_TERA 1e12

/** FLOPs of one step with `recomputed` layers fully recomputed (summed
 *  over stages) and, if selective, what selective recompute repeats in
 *  every layer: the attention core (Megatron) or, with the fsdp2 profile,
 *  the even-numbered matmuls of TorchTitan's op-level checkpointing. */
/** Forward FLOPs per sequence of the mean layer of mix w beyond its
 *  matmuls: its share of the attention core, of the Mamba-2 scan and
 *  conv beyond its projections' 2 S params (hybrid.c aps_mamba_flops),
 *  of the Gated DeltaNet delta rule and conv (gdn.c aps_gdn_flops). */
static double mix_mixer_flops(const aps_model *m, const aps_hybrid_counts *w,
                              double S, bool causal)
{
    aps_attn_kind x[APS_ATTN_KINDS];
    int n = aps_attn_kinds(m, x);
    double core = 0.0; /* heads x keys x head width of the mean layer */
    for (int i = 0; i < n; i++)
        core += x[i].share * x[i].a * aps_attn_kind_keys(m, &x[i], S, causal) *
                (0.5 * (x[i].d + x[i].dv)); /* QK^T d wide, PV dv */
    double f = w->attn_share * 4.0 * S * core;
    if (w->mamba_share > 0)
        f += w->mamba_share * (aps_mamba_flops(m, S) -
                               2.0 * S * aps_mamba_matmul_params(m));
    if (w->gdn_share > 0)
        f += w->gdn_share * (aps_gdn_flops(m, S, S) -
                             2.0 * S * aps_gdn_matmul_params(m));
    return f;
}

/** Forward FLOPs per sequence of one MTP depth's layers: a hybrid model's
 *  mtp_layer_pattern (as training.py get_hybrid_layer_counts counts them,
 *  l.1338-1346), else one layer of the last decoder layer's type
 *  (l.1042-1046); matmul + attn is the model's mean layer. */
static double mtp_layers_flops(const aps_model *m, double S, bool causal,
                               double matmul, double attn)
{
    if (!aps_model_is_hybrid(m))
        return matmul + attn +
               aps_moe_flops_layer_delta(m, S, causal, m->num_layers);
    aps_hybrid_counts w = {0};
    aps_hybrid_mtp_counts(m, 1, &w);
    double n = (double)(w.attn + w.mlp + w.mamba);
    w.attn_share = (double)w.attn / n;
    w.mlp_share = (double)w.mlp / n;
    w.mamba_share = (double)w.mamba / n;
    return n * (2.0 * S * aps_mix_matmul_params(m, &w) +
                mix_mixer_flops(m, &w, S, causal)) +
           (double)w.moe * aps_moe_ffn_flops_delta(m, S);
}

static double flops_step(const aps_model *m, const aps_training *t,
                         bool causal, double recomputed, bool selective)
{
    double B = (double)t->global_batch_size, S = (double)t->seq_length;
    double L = (double)m->num_layers, h = (double)m->hidden_size;
    aps_hybrid_counts w;
    aps_hybrid_mix(m, &w);
    double attn = mix_mixer_flops(m, &w, S, causal);
    double matmul = 2.0 * S * aps_layer_matmul_params(m);
    double fwd = B * (L * (matmul + attn) + 2.0 * S * h * (double)m->vocab_size +
                      aps_moe_flops_delta(m, S, causal));
    /* multi-token prediction, per depth (Megatron-LM d98e8a64 megatron/
     * training/training.py:1042-1046, 1285-1303): its layers, the norms
     * (3 h per token) and eh_proj (2 h^2) and one more output layer
     * (hybrid_flops, l.964-1010, leaves the norms and eh_proj out: they
     * are computed, so counted here as for a transformer) */
    double D = (double)t->mtp_num_layers;
    if (D > 0)
        fwd += B * D * (mtp_layers_flops(m, S, causal, matmul, attn) +
                        2.0 * S * (3.0 * h + 2.0 * h * h) +
                        2.0 * S * h * (double)m->vocab_size);
    /* DeepSeek Sparse Attention's indexer on every layer and MTP depth:
     * its forward, and when trained its loss's target and its backward
     * (dsa.c); a recomputed layer runs its forward again */
    double indexer = aps_dsa_indexer_flops(m, S) + aps_dsv4_indexer_flops(m, S) +
                     aps_msa_indexer_flops(m, S);
    /* a recomputed layer runs its forward again: the mean layer's, its
     * MLA and MoE differences included */
    double flops = 3.0 * fwd +
                   B * (L + D) * (indexer + aps_dsa_indexer_train_flops(m, t, S)) +
                   B * recomputed * (matmul + attn + indexer +
                                     aps_moe_flops_delta(m, S, causal) / L);
    if (selective)
        flops += B * L * (aps_profile(t)->op_sac_selective
                              ? 2.0 * S * aps_op_sac_recompute_params(m, t) +
                                    (aps_op_sac_attention_recomputed(t) ? attn : 0.0)
                              : attn);
    return flops;
}

double aps_flops_per_step(const aps_model *m, const aps_training *t,
                          const aps_strategy *s, bool causal,
                          bool with_recompute)
{
    double rc = 0.0;
    if (with_recompute && s->layer_recompute == APS_RECOMPUTE_FULL) {
        int64_t layers[APS_MAX_STAGES];
        /* the split the framework runs: AutoModel and TorchTitan take
         * DSA splits Megatron refuses (pipeline.c aps_stage_layers_dsa) */
        if (aps_stage_layers_dsa(m, t, s, layers, NULL, 0) == APS_REASON_NONE)
            for (int64_t i = 0; i < s->pp_degree; i++)
                rc += (double)aps_given_recompute(s, i, layers[i]);
    }
    return flops_step(m, t, causal, rc,
                      with_recompute &&
                          s->layer_recompute == APS_RECOMPUTE_SELECTIVE);
}

void aps_throughput(const aps_model *m, const aps_cluster *c,
                    const aps_training *t, const aps_strategy *s,
                    const aps_layout *lay, aps_estimate *out)
{
    double recomputed = 0.0;
    for (int64_t i = 0; i < lay->p; i++)
        recomputed += (double)aps_layout_run_recompute(lay, i);
    out->model_flops_per_step = flops_step(m, t, true, 0.0, false);
    out->hardware_flops_per_step = flops_step(
        m, t, true, recomputed, s->layer_recompute == APS_RECOMPUTE_SELECTIVE);
    double B = (double)t->global_batch_size, S = (double)t->seq_length;
    double n = (double)out->devices_used;
    double peak = aps_peak_flops(&c->device, t->precision);
    out->tokens_per_s = B * S / out->step_time;
    out->tokens_per_s_per_gpu = out->tokens_per_s / n;
    out->model_tflops_per_gpu =
        out->model_flops_per_step / out->step_time / n / APS_TERA;
    out->mfu = out->model_flops_per_step / (out->step_time * n * peak);
    out->hfu = out->hardware_flops_per_step / (out->step_time * n * peak);
}
