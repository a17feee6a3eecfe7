/*
 * pipeline.c -- stage partition, in-flight micro-batches and the bubble.
 *
 * Sources: Narayanan et al., "Efficient Large-Scale Language Model Training
 * on GPU Clusters Using Megatron-LM", SC'21 (arXiv:2104.04473) s.2.2;
 * Korthikanti et al., "Reducing Activation Recomputation in Large
 * Transformer Models", 2022 (arXiv:2205.05198) s.4.2.3;
 * megatron/core/pipeline_parallel/schedules.py.
 */
#include "internal.h"

int64_t aps_partition_entries(const aps_strategy *s)
{
    int64_t p = s->pp_degree, chunks = p * s->vpp_degree;
    if (p < 1 || chunks > APS_MAX_STAGES)
        chunks = p < APS_MAX_STAGES ? p : APS_MAX_STAGES;
    for (int64_t j = chunks - 1; j >= 0; j--)
        if (s->stage_partition[j] != 0)
            return j >= p ? chunks : p;
    return 0;
}

bool aps_split_by_rule(const aps_strategy *s)
{
    int64_t p = s->pp_degree;
    if (p <= 1 || s->pipeline_split == APS_SPLIT_EVEN || s->balance_stages ||
        aps_partition_entries(s) > 0)
        return false;
    for (int64_t i = 0; i < p && i < APS_MAX_STAGES; i++)
        if (s->layer_offset[i] != 0)
            return false;
    return true;
}

/*
 * The split rules of the frameworks, over S = p v model chunks in model
 * order (chunk j runs on pipeline rank j mod p, or on the V of ZBV and
 * DualPipeV on rank j for j < p and 2p - 1 - j after: aps_chunk_stage).
 *
 * embedding_loss: the embedding and the loss each count as one layer, E =
 * L + 2 units over S chunks, E / S each and the first E mod S chunks one
 * more, then the first and the last chunk give up the unit the embedding
 * and the loss take (torchtitan/distributed/pipeline_parallel.py
 * generate_llm_fqn_per_model_part, first/last_stage_less_layers = 1;
 * Megatron --account-for-embedding-in-pipeline-split and --account-for-
 * loss-in-pipeline-split, megatron/core/transformer/transformer_block.py
 * get_num_layers_to_build, which require E mod S = 0, checked in
 * aps_check_pp, and allow a chunk of the embedding or the loss alone).
 * 126 layers, p = 8, v = 2: 7, 8 x 14, 7.
 *
 * deepspeed_type: Megatron-DeepSpeed --pp-partition-method
 * 'type:transformer|embedding' (bigscience-workshop/Megatron-DeepSpeed
 * 8387ae17, megatron/arguments.py) weighs each transformer layer and each
 * embedding (the input one, and the tied output one at the end) 1, the
 * final norm 0, and splits them with deepspeed/runtime/utils.py
 * partition_balanced (microsoft/DeepSpeed 38327e07), a dynamic program
 * minimising the heaviest minus the lightest part whose ties put the
 * larger parts first: (L + 2) / p units each, the first (L + 2) mod p
 * parts one more (96 layers over 8: 13, 13, 12 x 6 units).  A part's
 * layers are its units less the embeddings it holds.  No virtual stages
 * (DeepSpeed's pipeline engine has no interleaving).
 *
 * fill_last: every chunk ceil(L / S) layers, the last chunk the rest,
 * L - (S - 1) ceil(L / S), as NVIDIA writes DeepSeek-V3's 61 layers in
 * --pipeline-model-parallel-layout (NVIDIA/NeMo 8cfedd72 scripts/
 * performance/llm/pretrain_deepseek_v3.py map_pp_vp_to_layout; NVIDIA-
 * NeMo/Megatron-Bridge 067f987d src/megatron/bridge/recipes/deepseek/h100/
 * deepseek_v3.py _get_deepseek_v3_pipeline_layout): 61 over 4 x 1 chunks
 * 16, 16, 16, 13; over 8: 8 x 7, 5; over 16 (4 x 4, 8 x 2, 16 x 1):
 * 4 x 15, 1.  When that leaves the last chunk fewer than one layer, the
 * last chunk holds the loss (and any MTP layers) alone and the first
 * chunk, beside the embedding, the layers left: L - (S - 2) ceil(L / S),
 * as NVIDIA writes 61 over 32 (8 x 4), `Et|(tt|)*30L`, 1, 2 x 30, 0
 * (NVIDIA/Megatron-LM 3c1b98ef^ docs/discussions/deepseek-v3-gb200-
 * optimization, s.1; `Et|(tt|)*30mL`, NVIDIA-NeMo/Megatron-Bridge
 * 684a6861 (r0.1.0) scripts/performance/run_script.py, the H100 layout
 * of pp 8 x vp 4; Megatron's PipelineParallelLayerLayout takes a chunk of
 * the loss alone, pipeline_parallel_layer_layout.py "Ettt|(tt|)*29,m|L").
 * Refused (PP_PARTITION) when the first chunk is then left with fewer
 * than one layer (61 over 64: 1 x 62 > 61); a pipeline rank left without
 * layers is refused below (aps_chunk_layers).
 *
 * fill_first: floor(L / S) per chunk, one more to each of the first
 * L mod S, as NeMo AutoModel splits the layers over its S virtual stages
 * (NVIDIA-NeMo/Automodel 36044ad3 nemo_automodel/components/distributed/
 * pipelining/functional.py generate_hf_model_fqn_per_model_part,
 * l.138-151; the embedding and the head not counted): 61 over 32, 29 x 2
 * then 3 x 1.
 */
static aps_reason split_rule(const aps_model *m, const aps_strategy *s,
                             int64_t *chunks, char *msg, size_t n)
{
    int64_t p = s->pp_degree, v = s->vpp_degree, L = m->num_layers;
    int64_t S = p * v;
    if (s->pipeline_split == APS_SPLIT_EMBEDDING_LOSS) {
        int64_t E = L + 2;
        for (int64_t j = 0; j < S; j++)
            chunks[j] = E / S + (j < E % S ? 1 : 0);
        chunks[0] -= 1;
        chunks[S - 1] -= 1;
        return APS_REASON_NONE;
    }
    if (s->pipeline_split == APS_SPLIT_FILL_FIRST) {
        if (S > L) { /* functional.py l.135-136 raises */
            aps_fmt(msg, n, "pipeline_split = fill_first: %lld model chunks "
                    "for num_layers = %lld; AutoModel: \"Number of stages "
                    "cannot exceed number of layers\"", (long long)S,
                    (long long)L);
            return APS_REASON_PP_PARTITION;
        }
        for (int64_t j = 0; j < S; j++)
            chunks[j] = L / S + (j < L % S ? 1 : 0);
        return APS_REASON_NONE;
    }
    if (s->pipeline_split == APS_SPLIT_FILL_LAST) {
        int64_t fill = (L + S - 1) / S, last = L - (S - 1) * fill;
        int64_t first = fill;
        if (last < 1 && S > 1) {
            /* the loss alone in the last chunk, the rest in the first */
            first = L - (S - 2) * fill;
            last = 0;
        }
        if (last < 1 && first < 1) {
            aps_fmt(msg, n, "pipeline_split = fill_last: num_layers = %lld "
                    "is too few for %lld model chunks of ceil(%lld / %lld) "
                    "= %lld: the %lld middle chunks take %lld layers, the "
                    "last holds the loss alone and the first needs >= 1",
                    (long long)L, (long long)S, (long long)L, (long long)S,
                    (long long)fill, (long long)(S - 2),
                    (long long)((S - 2) * fill));
            return APS_REASON_PP_PARTITION;
        }
        for (int64_t j = 0; j < S - 1; j++)
            chunks[j] = fill;
        chunks[0] = first;
        chunks[S - 1] = last;
        return APS_REASON_NONE;
    }
    /* APS_SPLIT_DEEPSPEED_TYPE */
    if (v != 1) {
        aps_fmt(msg, n, "pipeline_split = deepspeed_type with vpp_degree = "
                "%lld: DeepSpeed's pipeline has no virtual stages",
                (long long)v);
        return APS_REASON_VPP_INVALID;
    }
    int64_t units = L + 2;
    for (int64_t i = 0; i < p; i++)
        chunks[i] = units / p + (i < units % p ? 1 : 0) - (i == 0 ? 1 : 0) -
                    (i == p - 1 ? 1 : 0);
    return APS_REASON_NONE;
}

/** The layers per model chunk the strategy asks for (aps_chunk_layers
 *  before the cross-layer top-k check). */
static aps_reason chunk_layers(const aps_model *m, const aps_strategy *s,
                               int64_t *chunks, char *msg, size_t n)
{
    int64_t p = s->pp_degree, v = s->vpp_degree, L = m->num_layers;
    int sched = aps_strategy_sched(s); /* which rank runs each chunk */
    if (p * v > APS_MAX_STAGES) {
        aps_fmt(msg, n, "pp_degree x vpp_degree = %lld x %lld model chunks; "
                "at most %d", (long long)p, (long long)v, APS_MAX_STAGES);
        return APS_REASON_PP_PARTITION;
    }
    bool offset = false;
    for (int64_t i = 0; i < p; i++)
        offset |= s->layer_offset[i] != 0;
    int64_t given = aps_partition_entries(s);
    if (given > 0 && (offset || s->balance_stages)) {
        aps_fmt(msg, n, "stage_partition and layer_offset%s both given; "
                "give one of them", s->balance_stages ? " = balanced" : "");
        return APS_REASON_PP_PARTITION;
    }
    int64_t layers[APS_MAX_STAGES];
    if (given == p * v && v > 1) {
        /* per model chunk, as Megatron's --pipeline-model-parallel-layout
         * writes them: chunks of one rank may differ */
        int64_t sum = 0;
        for (int64_t j = 0; j < p * v; j++) {
            chunks[j] = s->stage_partition[j];
            sum += chunks[j];
            if (chunks[j] < 0) {
                aps_fmt(msg, n, "stage_partition[%lld] = %lld: a model chunk "
                        "needs >= 0 layers", (long long)j + 1,
                        (long long)chunks[j]);
                return APS_REASON_PP_PARTITION;
            }
        }
        if (sum != L) {
            aps_fmt(msg, n, "stage_partition sums to %lld layers, model has "
                    "num_layers = %lld", (long long)sum, (long long)L);
            return APS_REASON_PP_PARTITION;
        }
        for (int64_t i = 0; i < p; i++) {
            int64_t r = 0;
            for (int64_t k = 0; k < v; k++)
                r += chunks[aps_chunk_stage(sched, p, i, k)];
            if (r < 1) {
                aps_fmt(msg, n, "stage %lld gets %lld layers, every stage "
                        "needs >= 1", (long long)i + 1, (long long)r);
                return APS_REASON_PP_PARTITION;
            }
        }
        return APS_REASON_NONE;
    }
    if (aps_split_by_rule(s)) {
        aps_reason why = split_rule(m, s, chunks, msg, n);
        if (why != APS_REASON_NONE)
            return why;
        for (int64_t i = 0; i < p; i++) {
            int64_t r = 0;
            for (int64_t k = 0; k < v; k++) {
                int64_t c = chunks[aps_chunk_stage(sched, p, i, k)];
                r += c < 0 ? -L : c;
            }
            if (r < 1) {
                aps_fmt(msg, n, "pipeline_split = %s leaves stage %lld "
                        "without layers (num_layers = %lld over %lld model "
                        "chunks)",
                        aps_pipeline_split_name(s->pipeline_split),
                        (long long)i + 1, (long long)L, (long long)(p * v));
                return APS_REASON_PP_PARTITION;
            }
        }
        return APS_REASON_NONE;
    }
    if (s->balance_stages && p > 1 && given == 0) {
        /* Placeholder split for the checks; aps_estimate_run replaces it
         * with the time-balanced partition (balance.c). */
        if (L < p * v || L % v != 0) {
            aps_fmt(msg, n, "num_layers = %lld cannot be balanced over "
                    "pp_degree x vpp_degree = %lld x %lld equal model chunks "
                    "per rank (give stage_partition per model chunk, "
                    "%lld entries)", (long long)L, (long long)p,
                    (long long)v, (long long)(p * v));
            return APS_REASON_PP_PARTITION;
        }
        int64_t U = L / v; /* layers move in units of v */
        for (int64_t i = 0; i < p; i++)
            layers[i] = (U / p + (i < U % p ? 1 : 0)) * v;
    } else if (given > 0) {
        int64_t sum = 0;
        for (int64_t i = 0; i < p; i++) {
            layers[i] = s->stage_partition[i];
            sum += layers[i];
        }
        if (sum != L) {
            aps_fmt(msg, n, "stage_partition sums to %lld layers, model has "
                    "num_layers = %lld", (long long)sum, (long long)L);
            return APS_REASON_PP_PARTITION;
        }
    } else {
        if (L % p != 0 || (!offset && L % (p * v) != 0)) {
            aps_fmt(msg, n, "num_layers = %lld is not divisible by pp_degree "
                    "x vpp_degree = %lld x %lld (give stage_partition, "
                    "layer_offset or pipeline_split for an uneven split)",
                    (long long)L, (long long)p, (long long)v);
            return APS_REASON_PP_DIVISIBILITY;
        }
        int64_t sum = 0;
        for (int64_t i = 0; i < p; i++) {
            layers[i] = L / p + s->layer_offset[i];
            sum += s->layer_offset[i];
        }
        if (sum != 0) {
            aps_fmt(msg, n, "layer_offset sums to %lld, must sum to 0",
                    (long long)sum);
            return APS_REASON_PP_PARTITION;
        }
    }
    for (int64_t i = 0; i < p; i++) {
        if (layers[i] < 1) {
            aps_fmt(msg, n, "stage %lld gets %lld layers, every stage needs "
                    ">= 1", (long long)i + 1, (long long)layers[i]);
            return APS_REASON_PP_PARTITION;
        }
        /* Given per rank, a rank's v model chunks are equal (Megatron-LM's
         * --num-layers-per-virtual-pipeline-stage, TorchTitan's
         * layers_per_stage); unequal chunks are given per chunk. */
        if (layers[i] % v != 0) {
            aps_fmt(msg, n, "stage %lld has %lld layers, not divisible into "
                    "vpp_degree = %lld equal model chunks (give "
                    "stage_partition per model chunk, pp_degree x "
                    "vpp_degree entries)", (long long)i + 1,
                    (long long)layers[i], (long long)v);
            return APS_REASON_PP_PARTITION;
        }
        for (int64_t k = 0; k < v; k++)
            chunks[aps_chunk_stage(sched, p, i, k)] = layers[i] / v;
    }
    return APS_REASON_NONE;
}

/** True when chunk_layers gives balance_stages' placeholder split, which
 *  aps_estimate_run replaces (balance.c). */
static bool balanced_placeholder(const aps_strategy *s)
{
    return s->balance_stages && s->pp_degree > 1 &&
           aps_partition_entries(s) == 0 && !aps_split_by_rule(s);
}

aps_reason aps_chunk_layers(const aps_model *m, const aps_strategy *s,
                            int64_t *chunks, char *msg, size_t n)
{
    return chunk_layers(m, s, chunks, msg, n);
}

aps_reason aps_chunk_layers_dsa(const aps_model *m, const aps_training *t,
                                const aps_strategy *s, int64_t *chunks,
                                char *msg, size_t n)
{
    aps_reason r = chunk_layers(m, s, chunks, msg, n);
    if (r != APS_REASON_NONE || balanced_placeholder(s) ||
        aps_dsa_split_free(t))
        return r;
    return aps_dsa_chunks_check(m, chunks, s->pp_degree * s->vpp_degree,
                                msg, n);
}

aps_reason aps_layout_dsa_check(const aps_model *m, const aps_layout *lay,
                                char *msg, size_t n)
{
    if (m->index_topk_freq <= 1 || lay->dsa_split_free)
        return APS_REASON_NONE; /* every estimate without sharing: no loop */
    int64_t chunks[APS_MAX_STAGES];
    for (int64_t i = 0; i < lay->p; i++)
        for (int64_t k = 0; k < lay->v; k++)
            chunks[aps_chunk_stage(lay->sched, lay->p, i, k)] =
                aps_layout_chunk(lay, i, k);
    return aps_dsa_chunks_check(m, chunks, lay->p * lay->v, msg, n);
}

aps_reason aps_stage_layers(const aps_model *m, const aps_strategy *s,
                            int64_t *layers, char *msg, size_t n)
{
    return aps_stage_layers_dsa(m, NULL, s, layers, msg, n);
}

aps_reason aps_stage_layers_dsa(const aps_model *m, const aps_training *t,
                                const aps_strategy *s, int64_t *layers,
                                char *msg, size_t n)
{
    int64_t chunks[APS_MAX_STAGES];
    aps_reason r = aps_chunk_layers_dsa(m, t, s, chunks, msg, n);
    if (r != APS_REASON_NONE)
        return r;
    for (int64_t i = 0; i < s->pp_degree; i++) {
        layers[i] = 0;
        for (int64_t k = 0; k < s->vpp_degree; k++)
            layers[i] += chunks[aps_chunk_stage(aps_strategy_sched(s),
                                                s->pp_degree, i, k)];
    }
    return APS_REASON_NONE;
}

int64_t aps_given_recompute(const aps_strategy *s, int64_t i, int64_t k)
{
    if (s->layer_recompute != APS_RECOMPUTE_FULL)
        return 0;
    int64_t want = s->recompute_num_layers[i];
    /* uniform recomputes every layer, in groups of `want` */
    return (want < 0 || want > k || s->recompute_method == APS_RECOMPUTE_UNIFORM)
               ? k : want;
}

int64_t aps_step_microbatches(const aps_training *t, const aps_strategy *s)
{
    if (s->micro_batch_num > 0)
        return s->micro_batch_num;
    int64_t per = s->micro_batch_size * s->dp_degree * s->fsdp_degree;
    return per > 0 ? t->global_batch_size / per : 0;
}

int64_t aps_torch_rounds(int64_t m, int64_t p)
{
    return p > 0 && m / p > 1 ? m / p : 1;
}

int64_t aps_torch_interleaved_group(int64_t m, int64_t p)
{
    return m / aps_torch_rounds(m, p);
}

int64_t aps_step_passes(const aps_training *t, const aps_strategy *s)
{
    int64_t L = t->local_batch_size;
    if (L <= 0 || s->pp_degree <= 1)
        return 1;
    int64_t per_rank = aps_step_microbatches(t, s) * s->micro_batch_size;
    return per_rank >= L ? per_rank / L : 1;
}

aps_reason aps_layout_build(const aps_model *m, const aps_training *t,
                            const aps_strategy *s, aps_layout *lay,
                            char *msg, size_t n)
{
    lay->p = s->pp_degree;
    lay->v = s->vpp_degree;
    lay->t = s->tp_degree;
    lay->c = s->cp_degree;
    lay->b = s->micro_batch_size;
    lay->s_local = t->seq_length / s->cp_degree;
    lay->passes = aps_step_passes(t, s);
    lay->m = aps_step_microbatches(t, s) / lay->passes;
    lay->vocab_padded = aps_padded_vocab(m, t, s->tp_degree);
    lay->sched = aps_strategy_sched(s);
    lay->g = s->microbatch_group_size;
    if (lay->g == 0 && lay->v > 1 && lay->sched == APS_PP_1F1B &&
        aps_profile(t)->torch_pipelining)
        lay->g = aps_torch_interleaved_group(lay->m, lay->p);
    lay->dsa_split_free = aps_dsa_split_free(t);
    aps_reason r = aps_chunk_layers_dsa(m, t, s, lay->chunk, msg, n);
    if (r != APS_REASON_NONE)
        return r;
    /* Megatron-LM d98e8a64 megatron/core/models/gpt/gpt_model.py:166
     * (mtp_on_this_rank: the post-process stage) builds the MTP block
     * after the decoder, in the last model chunk (aps_layout_run_layers) */
    lay->mtp = t->mtp_num_layers;
    lay->mtp_depth_layers = aps_hybrid_mtp_depth_layers(m);
    /* --mtp-use-repeated-layer builds one depth's layers and runs them
     * mtp_num_layers times (multi_token_prediction.py @ d98e8a64
     * l.1958-1968) */
    lay->mtp_held = t->mtp_repeated_layer && lay->mtp > 0 ? 1 : lay->mtp;
    lay->mtp_recompute = s->layer_recompute == APS_RECOMPUTE_FULL &&
                         s->recompute_method == APS_RECOMPUTE_UNIFORM;
    for (int64_t i = 0; i < lay->p; i++) {
        lay->layers[i] = 0;
        for (int64_t k = 0; k < lay->v; k++)
            lay->layers[i] += lay->chunk[aps_chunk_stage(lay->sched, lay->p,
                                                         i, k)];
    }
    lay->chunks_valid = true;
    int64_t first = 0;
    for (int64_t i = 0; i < lay->p; i++) {
        lay->first[i] = first;
        first += lay->layers[i];
        lay->recompute[i] = aps_given_recompute(s, i, lay->layers[i]);
    }
    return APS_REASON_NONE;
}

/** Layers rank i recomputes when each of its chunks recomputes its first
 *  n layers (Megatron block method). */
static int64_t chunk_recompute(const aps_layout *lay, int64_t i, int64_t n)
{
    int64_t r = 0;
    for (int64_t k = 0; k < lay->v; k++) {
        int64_t ck = aps_layout_chunk(lay, i, k);
        r += ck < n ? ck : n;
    }
    return r;
}

void aps_layout_one_recompute_count(aps_layout *lay)
{
    int64_t n = 0;
    for (int64_t i = 0; i < lay->p; i++) {
        int64_t need = lay->recompute[i];
        while (chunk_recompute(lay, i, n) < need)
            n++;
    }
    for (int64_t i = 0; i < lay->p; i++)
        lay->recompute[i] = chunk_recompute(lay, i, n);
}

int64_t aps_layout_mtp_depths(const aps_layout *lay, int64_t i)
{
    if (lay->mtp == 0) /* the search's common case: no loop */
        return 0;
    for (int64_t k = 0; k < lay->v; k++)
        if (aps_chunk_stage(lay->sched, lay->p, i, k) == lay->p * lay->v - 1)
            return lay->mtp;
    return 0;
}

int64_t aps_layout_mtp_shared_depths(const aps_layout *lay, int64_t i)
{
    int64_t d = aps_layout_mtp_depths(lay, i);
    return d > 0 ? d - lay->mtp_held : 0;
}

int64_t aps_layout_mtp_layers(const aps_layout *lay, int64_t i)
{
    return aps_layout_mtp_depths(lay, i) * lay->mtp_depth_layers;
}

int64_t aps_layout_run_layers(const aps_layout *lay, int64_t i)
{
    return lay->layers[i] + aps_layout_mtp_layers(lay, i);
}

int64_t aps_layout_run_recompute(const aps_layout *lay, int64_t i)
{
    return lay->recompute[i] +
           (lay->mtp_recompute ? aps_layout_mtp_layers(lay, i) : 0);
}

int64_t aps_layout_rank_spans(const aps_layout *lay, int64_t i,
                              int64_t *start, int64_t *len)
{
    if (lay->v <= 1) {
        start[0] = lay->first[i];
        len[0] = lay->layers[i];
        return 1;
    }
    int64_t at = 0;
    for (int64_t k = 0; k < lay->v; k++)
        for (int64_t r = 0; r < lay->p; r++) {
            int64_t n = aps_layout_chunk(lay, r, k);
            if (r == i) {
                start[k] = at;
                len[k] = n;
            }
            at += n;
        }
    return lay->v;
}

int64_t aps_layout_chunk(const aps_layout *lay, int64_t i, int64_t k)
{
    if (lay->chunks_valid)
        return lay->chunk[aps_chunk_stage(lay->sched, lay->p, i, k)];
    return lay->layers[i] / lay->v + (k < lay->layers[i] % lay->v ? 1 : 0);
}

double aps_inflight_microbatches(int64_t p, int64_t v, int64_t m, int64_t i)
{
    /* the order of schedule.c: warm-up chunk forwards plus one */
    return aps_schedule_inflight(p, v, m, 0, i, NULL);
}

double aps_bubble_fraction(int64_t p, int64_t v, int64_t m)
{
    if (p <= 1 || m < 1)
        return 0.0;
    return (double)(p - 1) / ((double)v * (double)m);
}
