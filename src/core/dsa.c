/*
 * dsa.c -- DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5): the lightning
 * indexer's parameters, FLOPs and time, the sparse attention's capped key
 * count, and what the sparse MLA core adds over the dense MLA core.
 *
 * Sources (Megatron-LM d98e8a64, megatron/core/transformer/
 * experimental_attention_variant/): dsa.py DSAIndexer builds, per layer,
 *   linear_wq_b          q_lora_rank (hidden_size without one) -> Hi Di
 *   linear_wk            h -> Di
 *   k_norm               LayerNorm(Di): weight and bias
 *   linear_weights_proj  h -> Hi
 * all parallel_mode="duplicated": whole on every TP rank (their gradients
 * averaged over TP); transformers DeepseekV32Indexer has the same four
 * (wq_b, wk, k_norm = nn.LayerNorm(index_head_dim), weights_proj, no
 * biases on the linears).  The indexer scores every query against its
 * causal keys, q k^T over Hi heads of Di (_compute_index_scores), and keeps
 * the index_topk best; DSAttention feeds x and qr to it detached, so it
 * gets no gradient from the model's loss: without the indexer KL loss
 * (dsa_indexer_loss_coeff unset, Megatron's default) it runs under
 * no_grad, forward only, and saves nothing.  The attention is
 * AbsorbedMLASelfAttention (experimental_attention_variant_module_specs.py
 * get_dsa_module_spec_for_backend): the query absorbed into the latent,
 * scores over kv_lora_rank + qk_rope_head_dim channels against one shared
 * latent key, the latent (kv_lora_rank) as the value, then the per-head
 * V up-projection (absorbed_mla.py); the absorption's einsums do the
 * FLOPs of the kv up-projection they replace.  The fused sparse kernel
 * (ops/sparse_mla.py SparseMLA, --dsa-kernel-backend tilelang) saves q,
 * the latent kv and the int32 top-k indices, and its backward recomputes
 * the forward ("backward recomputes them").
 */
#include "internal.h"

/** Weights and biases of the indexer's key LayerNorm per channel
 *  (dsa.py DSAIndexer k_norm, normalization "LayerNorm"; transformers
 *  nn.LayerNorm(index_head_dim)). */
#define APS_DSA_KNORM_PER_CHANNEL 2.0
/** Bytes of one saved top-k index: int32 (ops/tilelang_dsa.py topk_out
 *  dtype=torch.int32; sparse_mla.py SparseMLA saves the indices). */
#define APS_DSA_INDEX_BYTES 4.0
/** Forward passes SparseMLA's backward runs again before its gradient
 *  kernel (ops/sparse_mla.py: sparse_mla_fwd_interface in backward). */
#define APS_DSA_BWD_RECOMPUTE 1.0
/** Largest accepted indexer width or top-k, 2^24: model.c's limit on
 *  every model width. */
#define APS_DSA_MAX_WIDTH (INT64_C(1) << 24)

bool aps_model_has_dsa(const aps_model *m)
{
    /* DeepSeek-V4's indexer reads compressed entries: dsv4.c prices it */
    return m->index_n_heads > 0 && !aps_model_is_dsv4(m);
}

/** True when layers share top-k across layers (index_topk_freq > 1). */
static bool shares_topk(const aps_model *m)
{
    return aps_model_has_dsa(m) && m->index_topk_freq > 1;
}

bool aps_dsa_layer_computes_topk(const aps_model *m, int64_t i)
{
    if (!shares_topk(m))
        return true;
    /* dsa.py is_dsa_skip_topk_layer on the 1-based layer number i + 1:
     * "the default offset 0 must still start at layer 1" */
    int64_t off = m->index_skip_topk_offset > 1 ? m->index_skip_topk_offset : 1;
    int64_t past = i + 1 - off;
    return (past > 0 ? past : 0) % m->index_topk_freq == 0;
}

int64_t aps_dsa_indexer_layers(const aps_model *m)
{
    if (!aps_model_has_dsa(m))
        return 0;
    if (!shares_topk(m))
        return m->num_layers;
    int64_t n = 0;
    for (int64_t i = 0; i < m->num_layers; i++)
        n += aps_dsa_layer_computes_topk(m, i);
    return n;
}

/** Indexers per decoder layer: the share of layers that compute their
 *  own top-k (1 without sharing), so that the mean layer's indexer terms
 *  sum over the L layers to the computing layers' (as dsv4.c prices its
 *  CSA layers' share). */
static double indexer_share(const aps_model *m)
{
    if (!shares_topk(m) || m->num_layers < 1)
        return 1.0;
    return (double)aps_dsa_indexer_layers(m) / (double)m->num_layers;
}

/** The 1-based number of the computing layer whose top-k the 0-based
 *  layer i reuses (dsa.py source_dsa_compute_layer). */
static int64_t source_layer(const aps_model *m, int64_t i)
{
    int64_t off = m->index_skip_topk_offset > 1 ? m->index_skip_topk_offset : 1;
    int64_t n = i + 1;
    return n <= off ? n : n - (n - off) % m->index_topk_freq;
}

bool aps_dsa_split_free(const aps_training *t)
{
    /* NVIDIA-NeMo/Automodel 36044ad3 nemo_automodel/components/models/
     * glm_moe_dsa/model.py:227 (prev_topk_indices: the previous pipeline
     * stage's IndexShare selection), :293 */
    return t != NULL && t->framework == APS_FW_AUTOMODEL;
}

aps_reason aps_dsa_chunks_check(const aps_model *m, const int64_t *chunks,
                                int64_t nchunks, char *msg, size_t n)
{
    if (!shares_topk(m))
        return APS_REASON_NONE;
    int64_t first = 0;
    for (int64_t j = 0; j < nchunks; j++) {
        if (chunks[j] <= 0)
            continue;
        if (!aps_dsa_layer_computes_topk(m, first)) {
            int64_t next = first + 1; /* the next layer that computes */
            while (next < m->num_layers && !aps_dsa_layer_computes_topk(m, next))
                next++;
            aps_fmt(msg, n, "model chunk %lld starts on layer %lld (1-based), "
                    "which reuses layer %lld's top-k (index_topk_freq %lld, "
                    "offset %lld): Megatron-Core refuses it "
                    "(_validate_dsa_index_share_pipeline_split); start it on "
                    "layer %lld or %lld", (long long)j + 1,
                    (long long)first + 1, (long long)source_layer(m, first),
                    (long long)m->index_topk_freq,
                    (long long)m->index_skip_topk_offset,
                    (long long)source_layer(m, first), (long long)next + 1);
            return APS_REASON_PP_PARTITION;
        }
        first += chunks[j];
    }
    return APS_REASON_NONE;
}

aps_status aps_dsa_validate(const aps_model *m, char *err, size_t n)
{
    int64_t hi = m->index_n_heads, di = m->index_head_dim, k = m->index_topk;
    if (aps_model_is_dsv4(m) &&
        (m->index_topk_freq > 1 || m->index_skip_topk_offset > 0)) {
        aps_fmt(err, n, "model.index_topk_freq: cross-layer top-k sharing "
                "(GLM-5.2's) given with DeepSeek-V4's compressed attention "
                "(hc_mult), which has none");
        return APS_EINVAL;
    }
    if (aps_model_is_dsv4(m)) /* checked by aps_dsv4_validate */
        return APS_OK;
    if (m->index_topk_freq < 0 || m->index_topk_freq > APS_DSA_MAX_WIDTH ||
        m->index_skip_topk_offset < 0 ||
        m->index_skip_topk_offset > APS_DSA_MAX_WIDTH) {
        bool f = m->index_topk_freq < 0 || m->index_topk_freq > APS_DSA_MAX_WIDTH;
        aps_fmt(err, n, "model.%s: must be in [0, %lld] (got %lld)",
                f ? "index_topk_freq" : "index_skip_topk_offset",
                (long long)APS_DSA_MAX_WIDTH,
                (long long)(f ? m->index_topk_freq : m->index_skip_topk_offset));
        return APS_EINVAL;
    }
    if (hi == 0 && (m->index_topk_freq > 1 || m->index_skip_topk_offset > 0)) {
        aps_fmt(err, n, "model.%s: %lld given without index_n_heads",
                m->index_topk_freq > 1 ? "index_topk_freq"
                                       : "index_skip_topk_offset",
                (long long)(m->index_topk_freq > 1 ? m->index_topk_freq
                                                   : m->index_skip_topk_offset));
        return APS_EINVAL;
    }
    if (hi == 0) {
        if (m->index_rope_interleave) {
            aps_fmt(err, n, "model.index_rope_interleave: given without "
                    "index_n_heads");
            return APS_EINVAL;
        }
        if (di != 0 || k != 0) {
            aps_fmt(err, n, "model.%s: %lld given without index_n_heads",
                    di != 0 ? "index_head_dim" : "index_topk",
                    (long long)(di != 0 ? di : k));
            return APS_EINVAL;
        }
        return APS_OK;
    }
    const struct { const char *f; int64_t v; } w[] = {
        {"index_n_heads", hi}, {"index_head_dim", di}, {"index_topk", k}};
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
        if (w[i].v < 1 || w[i].v > APS_DSA_MAX_WIDTH) {
            aps_fmt(err, n, "model.%s: must be in [1, %lld] with DeepSeek "
                    "Sparse Attention (got %lld)", w[i].f,
                    (long long)APS_DSA_MAX_WIDTH, (long long)w[i].v);
            return APS_EINVAL;
        }
    if (m->kv_lora_rank == 0) {
        aps_fmt(err, n, "model.index_n_heads: %lld given without multi-head "
                "latent attention (kv_lora_rank): DeepSeek Sparse Attention "
                "is built on MLA only", (long long)hi);
        return APS_EINVAL;
    }
    if (di < m->qk_rope_head_dim) {
        aps_fmt(err, n, "model.index_head_dim: %lld is narrower than "
                "qk_rope_head_dim %lld (the indexer rotates its first "
                "qk_rope_head_dim channels)", (long long)di,
                (long long)m->qk_rope_head_dim);
        return APS_EINVAL;
    }
    return APS_OK;
}

/** Width of the indexer's query input: q_lora_rank, else hidden_size
 *  (DSAIndexer.__init__). */
static double indexer_q_in(const aps_model *m)
{
    return (double)(m->q_lora_rank > 0 ? m->q_lora_rank : m->hidden_size);
}

/** Linear weights of one indexer: wq_b, wk, weights_proj. */
static double one_indexer_matmul_params(const aps_model *m)
{
    double h = (double)m->hidden_size;
    double hi = (double)m->index_n_heads, di = (double)m->index_head_dim;
    return indexer_q_in(m) * hi * di + h * di + h * hi;
}

double aps_dsa_indexer_matmul_params(const aps_model *m)
{
    if (!aps_model_has_dsa(m))
        return 0.0;
    return indexer_share(m) * one_indexer_matmul_params(m);
}

double aps_dsa_indexer_params(const aps_model *m)
{
    if (!aps_model_has_dsa(m))
        return 0.0;
    return indexer_share(m) *
           (one_indexer_matmul_params(m) +
            APS_DSA_KNORM_PER_CHANNEL * (double)m->index_head_dim);
}

double aps_dsa_indexer_params_sum(const aps_model *m)
{
    if (!aps_model_has_dsa(m))
        return 0.0;
    return (double)aps_dsa_indexer_layers(m) *
           (one_indexer_matmul_params(m) +
            APS_DSA_KNORM_PER_CHANNEL * (double)m->index_head_dim);
}

double aps_dsa_mtp_indexer_delta(const aps_model *m)
{
    if (!shares_topk(m))
        return 0.0;
    double one = one_indexer_matmul_params(m) +
                 APS_DSA_KNORM_PER_CHANNEL * (double)m->index_head_dim;
    return one - aps_dsa_indexer_params(m);
}

double aps_dsa_keys(const aps_model *m, double S, bool causal)
{
    double k = (double)m->index_topk;
    if (!causal)
        return k < S ? k : S;
    /* query i (0-based) attends min(i + 1, k) keys; in the continuous form
     * of the causal S / 2: S / 2 for S <= k, else (S k - k^2 / 2) / S */
    if (k >= S)
        return 0.5 * S;
    return k - 0.5 * k * k / S;
}

double aps_dsa_indexer_flops(const aps_model *m, double S)
{
    if (!aps_model_has_dsa(m))
        return 0.0;
    double hi = (double)m->index_n_heads, di = (double)m->index_head_dim;
    /* projections 2 S params; index scores q k^T over the causal keys,
     * S / 2 per query, 2 Hi Di FLOPs each */
    return indexer_share(m) * (2.0 * S * one_indexer_matmul_params(m) +
                               2.0 * S * (0.5 * S) * hi * di);
}

/** Forward FLOPs per token and key of the indexer loss's sparse target:
 *  every head's scores over the top-k keys at the absorbed width,
 *  2 a (kr + dr) (ops/tilelang_indexer_loss.py sparse_indexer_target). */
static double target_flops_per_pair(const aps_model *m)
{
    return 2.0 * (double)m->num_attention_heads *
           (double)(m->kv_lora_rank + m->qk_rope_head_dim);
}

/** Backward FLOPs per token and key of the trained indexer's scores: the
 *  gradients of its q and k over the top-k, 2 x 2 Hi Di
 *  (ops/tilelang_indexer_bwd.py). */
static double indexer_bwd_flops_per_pair(const aps_model *m)
{
    return 4.0 * (double)m->index_n_heads * (double)m->index_head_dim;
}

double aps_dsa_indexer_train_flops(const aps_model *m, const aps_training *t,
                                   double S)
{
    if (!aps_model_has_dsa(m) || t->dsa_indexer_loss_coeff <= 0)
        return 0.0;
    double keys = aps_dsa_keys(m, S, true);
    /* the target forward, the scores' backward, the projections' weight
     * gradients (their inputs are detached: no input gradients), on the
     * layers with an indexer */
    return indexer_share(m) *
           (S * keys * (target_flops_per_pair(m) + indexer_bwd_flops_per_pair(m)) +
            2.0 * S * one_indexer_matmul_params(m));
}

/** Score and value widths of the absorbed sparse MLA core per head and
 *  key, minus those of the dense MLA core: (kr + dr) + kr against
 *  (dn + dr) + dv. */
static double absorbed_width_delta(const aps_model *m)
{
    double kr = (double)m->kv_lora_rank, dr = (double)m->qk_rope_head_dim;
    double dn = (double)m->qk_nope_head_dim, dv = (double)m->v_head_dim;
    return (2.0 * kr + dr) - (dn + dr + dv);
}

/* The indexer trained with its sparse KL loss (dsa.py DSAttention,
 * use_indexer_loss; ops/tilelang_dsa.py fused_qk_topk_lighting_with_
 * streaming_sparse_kl): forward, the target's scores over the top-k keys
 * on the rank's a / t heads; backward, the scores' gradients to the
 * indexer's q and k (whole on every TP rank) and its projections' weight
 * gradients (GEMMs the size of the forward's); saved, the indexer's q, k
 * (all-gathered over CP) and head weights in bf16 and the loss's fp32
 * logit gradients over the top-k (SparseIndexerKLLoss). */
static void trained_indexer_cost(const aps_model *m, const aps_device *d,
                                 const aps_training *t, const aps_strategy *s,
                                 aps_moe_cost *out)
{
    double tp = (double)s->tp_degree, b = (double)s->micro_batch_size;
    double S = (double)t->seq_length, T = b * S / (double)s->cp_degree;
    double hi = (double)m->index_n_heads, di = (double)m->index_head_dim;
    double keys = aps_dsa_keys(m, S, true), k = (double)m->index_topk;
    double rate = d->peak_flops_bf16 * aps_attention_efficiency(d, t);
    double gemms = aps_gemm_time(d, t->precision, T, hi * di, indexer_q_in(m)) +
                   aps_gemm_time(d, t->precision, T, di, (double)m->hidden_size) +
                   aps_gemm_time(d, t->precision, T, hi, (double)m->hidden_size);
    double f = indexer_share(m); /* only layers with an indexer train it */
    out->dsa_indexer_fwd += f * T * keys * target_flops_per_pair(m) / tp / rate;
    out->dsa_indexer_bwd = f * (T * keys * indexer_bwd_flops_per_pair(m) / rate + gemms);
    out->mla_act += f * (APS_ACT_BYTES * (T * hi * di + b * S * di + T * hi) +
                         APS_FP32_BYTES * T * (k < S ? k : S));
}

void aps_dsa_layer_cost(const aps_model *m, const aps_device *d,
                        const aps_training *t, const aps_strategy *s,
                        aps_moe_cost *out)
{
    if (!aps_model_has_dsa(m))
        return;
    aps_precision prec = t->precision;
    double tp = (double)s->tp_degree, b = (double)s->micro_batch_size;
    double S = (double)t->seq_length, sl = S / (double)s->cp_degree;
    double T = b * sl, h = (double)m->hidden_size, A = APS_ACT_BYTES;
    double a = (double)m->num_attention_heads;
    double hi = (double)m->index_n_heads, di = (double)m->index_head_dim;
    double kr = (double)m->kv_lora_rank, dr = (double)m->qk_rope_head_dim;
    double dn = (double)m->qk_nope_head_dim, dv = (double)m->v_head_dim;
    double rate = d->peak_flops_bf16 * aps_attention_efficiency(d, t);
    /* the indexer, whole on every TP rank over the rank's sl queries
     * (sequence-parallel inputs gathered): its projections and the causal
     * index scores (the keys all-gathered over CP) */
    /* (of the mean layer: with cross-layer sharing only the computing
     * layers run one, indexer_share) */
    double scores = 2.0 * T * (0.5 * S) * hi * di, f = indexer_share(m);
    out->dsa_indexer_fwd = f * (aps_gemm_time(d, prec, T, hi * di, indexer_q_in(m)) +
                                aps_gemm_time(d, prec, T, di, h) +
                                aps_gemm_time(d, prec, T, hi, h) + scores / rate);
    /* the sparse core at the absorbed widths over the capped keys
     * (aps_attention_keys, as moe.c counts them), beyond the dense MLA
     * core moe.c prices; its backward recomputes the whole forward first */
    double keys = aps_attention_keys(m, S, t->flash_attention);
    double core = 2.0 * T * keys * a * (2.0 * kr + dr) / tp;
    double extra = 2.0 * T * keys * a * absorbed_width_delta(m) / tp;
    double bwd = t->flash_attention ? APS_FLASH_BWD_RATIO : APS_GEMM_BWD_RATIO;
    out->mla_attn_fwd += extra / rate;
    out->mla_attn_bwd += (extra * bwd + APS_DSA_BWD_RECOMPUTE * core) / rate;
    /* saved: the int32 top-k indices, min(k, S) per query (dsa.py
     * topk_k = min(index_topk, sk)); the absorbed query (a (kr + dr)),
     * q_nope for the absorption einsum (a dn) and the latent output
     * (a kr) in place of the dense core's Q, K (a (dn + dr) each) and V
     * (a dv); the latent kv is moe.c's compressed kv */
    double kept = (double)m->index_topk < S ? (double)m->index_topk : S;
    /* a layer reusing a top-k saves the same index tensor as its source
     * (dsa.py topk_holder): one copy per computing layer */
    out->mla_act += f * T * kept * APS_DSA_INDEX_BYTES +
                    A * T * a * ((kr + dr) + dn + kr -
                                 (2.0 * (dn + dr) + dv)) / tp;
    if (t->dsa_indexer_loss_coeff > 0)
        trained_indexer_cost(m, d, t, s, out);
    /* parameters: the indexer whole on every rank */
    out->mla_params += aps_dsa_indexer_params(m);
    out->mla_matmul_params += aps_dsa_indexer_matmul_params(m);
}
