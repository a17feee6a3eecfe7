/*
 * msa.c -- MiniMax-M3's block-sparse attention (MSA): the selection-only
 * lightning indexer's parameters, FLOPs and time, the keys a query
 * attends to among the selected blocks, and what a sparse layer saves.
 *
 * Sources: NeMo AutoModel 00affc66 nemo_automodel/components/models/
 * minimax_m3_vl/layers.py.  MiniMaxM3Indexer builds, on each layer whose
 * sparse_attention_freq entry is non-zero,
 *   index_q_proj  h -> Hi Di      (sparse_num_index_heads x sparse_index_dim)
 *   index_k_proj  h -> Di         (one shared index key)
 *   index_q_norm, index_k_norm    Gemma RMSNorm(Di): a weight each
 * no biases, no index value or output projection (disable_index_value).
 * _select_sparse_blocks_chunk scores each query against every causal key
 * (idx_q . idx_k over Hi heads of Di), reduces the scores per block of
 * sparse_block_size keys (max), forces the query's own block
 * (sparse_local_block) and the first sparse_init_block blocks, and keeps
 * the sparse_topk_blocks best causal blocks; the attention (GQA, its
 * other shapes unchanged) then reads only those.  MiniMaxM3MSAAttention
 * runs the indexer under torch.no_grad(): forward only, nothing saved but
 * the block selection (q2k) the sparse kernel's backward reads.
 */
#include <math.h>
#include "internal.h"

/** Weights of the indexer's two Gemma RMSNorms per channel: one each
 *  (MiniMaxM3RMSNorm weight, no bias). */
#define APS_MSA_NORMS_PER_CHANNEL 2.0
/** Bytes of one selected block index: MSAMicrobatch.select_blocks returns
 *  "int32 [4, tokens, 16] document-local block ids, padded with -1"
 *  (AutoModel 00affc66 components/models/minimax_m3_vl/msa.py). */
#define APS_MSA_INDEX_BYTES 4.0
/** Largest accepted indexer width, block size or block count: model.c's
 *  limit on every model width. */
#define APS_MSA_MAX_WIDTH (INT64_C(1) << 24)

bool aps_model_has_msa(const aps_model *m)
{
    return m->msa_layers > 0;
}

/** The MSA fields, in the order errors name them. */
#define MSA_FIELDS(m)                                                       \
    {"msa_index_heads", (m)->msa_index_heads},                              \
    {"msa_index_dim", (m)->msa_index_dim},                                  \
    {"msa_block_size", (m)->msa_block_size},                                \
    {"msa_topk_blocks", (m)->msa_topk_blocks}

aps_status aps_msa_validate(const aps_model *m, char *err, size_t n)
{
    const struct { const char *f; int64_t v; } w[] = {MSA_FIELDS(m)};
    size_t nw = sizeof w / sizeof w[0];
    if (m->msa_layers == 0) {
        for (size_t i = 0; i < nw; i++)
            if (w[i].v != 0) {
                aps_fmt(err, n, "model.%s: %lld given without msa_layers",
                        w[i].f, (long long)w[i].v);
                return APS_EINVAL;
            }
        if (m->msa_init_blocks != 0 || m->msa_local_blocks != 0) {
            aps_fmt(err, n, "model.%s: given without msa_layers",
                    m->msa_init_blocks != 0 ? "msa_init_blocks"
                                            : "msa_local_blocks");
            return APS_EINVAL;
        }
        return APS_OK;
    }
    if (m->msa_layers < 0 || m->msa_layers > m->num_layers) {
        aps_fmt(err, n, "model.msa_layers: must be in [0, num_layers = %lld] "
                "(got %lld)", (long long)m->num_layers,
                (long long)m->msa_layers);
        return APS_EINVAL;
    }
    for (size_t i = 0; i < nw; i++)
        if (w[i].v < 1 || w[i].v > APS_MSA_MAX_WIDTH) {
            aps_fmt(err, n, "model.%s: must be in [1, %lld] with block-sparse "
                    "attention (got %lld)", w[i].f,
                    (long long)APS_MSA_MAX_WIDTH, (long long)w[i].v);
            return APS_EINVAL;
        }
    if (m->msa_local_blocks != 0 && m->msa_local_blocks != 1) {
        /* AutoModel's FLOPs and the kernels force the query's own block;
         * without it the count of keys below does not hold (0: not
         * given, taken as 1) */
        aps_fmt(err, n, "model.msa_local_blocks: only 1 (the query's own "
                "block always attended, MiniMax-M3's) is modelled (got "
                "%lld)", (long long)m->msa_local_blocks);
        return APS_ENOTIMPL;
    }
    if (m->num_attention_heads % m->msa_index_heads != 0) {
        /* build_block_sparse_attn_mask repeat-interleaves each index
         * head's selection over num_q_heads // H_idx query heads */
        aps_fmt(err, n, "model.msa_index_heads: %lld does not divide "
                "num_attention_heads %lld (each index head selects for "
                "a group of query heads)", (long long)m->msa_index_heads,
                (long long)m->num_attention_heads);
        return APS_EINVAL;
    }
    if (m->msa_init_blocks < 0 ||
        m->msa_init_blocks + m->msa_local_blocks > m->msa_topk_blocks) {
        aps_fmt(err, n, "model.msa_init_blocks: %lld forced blocks and the "
                "local one must fit msa_topk_blocks = %lld",
                (long long)m->msa_init_blocks, (long long)m->msa_topk_blocks);
        return APS_EINVAL;
    }
    if (m->num_experts <= 0) {
        aps_fmt(err, n, "model.msa_layers: block-sparse attention is priced "
                "on GQA mixture-of-experts models (MiniMax-M3) only: it "
                "needs num_experts");
        return APS_ENOTIMPL;
    }
    const char *other = m->kv_lora_rank > 0       ? "kv_lora_rank"
                        : m->index_n_heads > 0    ? "index_n_heads"
                        : m->sliding_window > 0   ? "sliding_window"
                        : m->attention_chunk_size > 0 ? "attention_chunk_size"
                        : aps_model_is_hybrid(m)  ? "hybrid_layer_pattern"
                        : aps_model_has_gdn(m)    ? "linear_attention_period"
                                                  : NULL;
    if (other != NULL) {
        aps_fmt(err, n, "model.msa_layers: block-sparse attention is not "
                "modelled together with %s", other);
        return APS_ENOTIMPL;
    }
    return APS_OK;
}

/** Layers with MSA over all layers: the mean layer's share. */
static double msa_share(const aps_model *m)
{
    return (double)m->msa_layers / (double)m->num_layers;
}

/** Linear weights of one indexer: index_q_proj and index_k_proj. */
static double indexer_matmul_params(const aps_model *m)
{
    double h = (double)m->hidden_size;
    double hi = (double)m->msa_index_heads, di = (double)m->msa_index_dim;
    return h * hi * di + h * di;
}

double aps_msa_indexer_params(const aps_model *m)
{
    if (!aps_model_has_msa(m))
        return 0.0;
    return msa_share(m) *
           (indexer_matmul_params(m) +
            APS_MSA_NORMS_PER_CHANNEL * (double)m->msa_index_dim);
}

double aps_msa_indexer_params_sum(const aps_model *m)
{
    if (!aps_model_has_msa(m))
        return 0.0;
    return (double)m->msa_layers *
           (indexer_matmul_params(m) +
            APS_MSA_NORMS_PER_CHANNEL * (double)m->msa_index_dim);
}

double aps_msa_keys(const aps_model *m, double S, bool causal)
{
    double B = (double)m->msa_block_size, K = (double)m->msa_topk_blocks;
    double budget = B * K;
    if (!causal)
        return budget < S ? budget : S;
    /* AutoModel's selected pairs (its MiniMax-M3 FLOPs): the first
     * P = min(S, B K) queries attend every causal key; each later query
     * K - 1 full blocks and its own block up to itself.  In the
     * continuous form of every causal count here (S / 2 keys, not
     * (S + 1) / 2): n (n + 1) / 2 pairs of a prefix of n taken as n^2 / 2 */
    double P = budget < S ? budget : S, tail = S - P;
    double full = floor(tail / B), rem = tail - full * B;
    double pairs = 0.5 * P * P + tail * (K - 1.0) * B +
                   full * 0.5 * B * B + 0.5 * rem * rem;
    return pairs / S;
}

double aps_msa_indexer_flops(const aps_model *m, double S)
{
    if (!aps_model_has_msa(m))
        return 0.0;
    double hi = (double)m->msa_index_heads, di = (double)m->msa_index_dim;
    /* projections 2 S params; scores idx_q . idx_k over the causal keys,
     * S / 2 per query, 2 Hi Di FLOPs each (the block max and the top-k are
     * element-wise) */
    return msa_share(m) * (2.0 * S * indexer_matmul_params(m) +
                           2.0 * S * (0.5 * S) * hi * di);
}

void aps_msa_layer_cost(const aps_model *m, const aps_device *d,
                        const aps_training *t, const aps_strategy *s,
                        aps_moe_cost *out)
{
    if (!aps_model_has_msa(m))
        return;
    double b = (double)s->micro_batch_size;
    double S = (double)t->seq_length, T = b * S / (double)s->cp_degree;
    double h = (double)m->hidden_size, f = msa_share(m);
    double hi = (double)m->msa_index_heads, di = (double)m->msa_index_dim;
    double rate = d->peak_flops_bf16 * aps_attention_efficiency(d, t);
    /* the indexer, whole on every TP rank over the rank's tokens, forward
     * only: its two projections and the causal scores */
    out->dsa_indexer_fwd = f * (aps_gemm_time(d, t->precision, T, hi * di, h) +
                                aps_gemm_time(d, t->precision, T, di, h) +
                                2.0 * T * (0.5 * S) * hi * di / rate);
    /* saved: the selected blocks the sparse kernel's backward reads, K
     * int32 per index head and query (select_blocks pads a short
     * sequence's to K with -1) */
    out->mla_act += f * APS_MSA_INDEX_BYTES * T * hi *
                    (double)m->msa_topk_blocks;
    out->mla_params += aps_msa_indexer_params(m);
    out->mla_matmul_params += f * indexer_matmul_params(m);
}
