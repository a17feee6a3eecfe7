/*
 * dsv4.c -- DeepSeek-V4 (DeepSeek-V4-Flash, -Pro): its attention layers
 * (shared-KV multi-query attention with a low-rank query, a grouped
 * low-rank output projection and attention sinks over a sliding window,
 * plus on the compressed layers the KV compressor of compressed sparse
 * attention, CSA, with its lightning indexer, or of heavily compressed
 * attention, HCA) and its manifold-constrained hyper-connections (mHC),
 * priced as what they add to the GQA layer of the same widths (a heads,
 * one KV head of d) that compute.c and memory.c price: the aps_moe_cost
 * "mla_*" differences moe.c sums over every layer.
 *
 * Source: transformers src/transformers/models/deepseek_v4/
 * modeling_deepseek_v4.py @ 361455895daf94ca66f78cf6792b09af397b4b30
 * (configuration_deepseek_v4.py @ b5b741e52e24b1c394ae4a0b13df86846284a1d3),
 * per decoder layer (DeepseekV4DecoderLayer):
 *   self_attn (DeepseekV4Attention)
 *     q_a_proj h -> qr, q_a_norm (qr), q_b_proj qr -> a d, q_b_norm (no
 *     weight), kv_proj h -> d (K = V, one head), kv_norm (d), o_a_proj
 *     (DeepseekV4GroupedLinear: g groups of a d / g -> r, weight g r x
 *     a d / g), o_b_proj g r -> h, sinks (a)
 *     compressor, HCA layers (DeepseekV4HCACompressor, rate m'): kv_proj
 *       and gate_proj h -> d, position_bias m' x d, kv_norm (d)
 *     compressor, CSA layers (DeepseekV4CSACompressor, rate m): kv_proj
 *       and gate_proj h -> 2 d (two overlapping series), position_bias
 *       m x 2 d, kv_norm (d), and its indexer (DeepseekV4Indexer): kv_proj
 *       and gate_proj h -> 2 Di, position_bias m x 2 Di, kv_norm (Di),
 *       q_b_proj qr -> Hi Di, weights_proj h -> Hi
 *   mlp (DeepseekV4SparseMoeBlock): router, experts, shared expert as
 *     DeepSeek-V3's (moe.c); hash-routed layers choose experts by a
 *     tid2eid[input_ids] buffer but still run the gate GEMM for the
 *     weights (DeepseekV4HashRouter): the same cost
 *   input_layernorm, post_attention_layernorm (h each)
 *   attn_hc, ffn_hc (DeepseekV4HyperConnection, n = hc_mult streams):
 *     fn (2 + n) n x n h, base (2 + n) n, scale 3
 * and once per model (DeepseekV4Model) hc_head (DeepseekV4HyperHead):
 * hc_fn n x n h, hc_base n, hc_scale 1.  The MTP module (vLLM
 * vllm/model_executor/models/deepseek_v4_mtp.py @ 45292767, DeepSeek-
 * V4's checkpoint mtp.N.*): enorm, hnorm, e_proj h -> h, h_proj h -> h (the
 * 2 h^2 of DeepSeek-V3's eh_proj), its own hc_head, shared_head.norm and
 * one decoder layer whose attention is sliding-window only (compress_
 * ratios' last entry, 0, in both published configs).
 *
 * Work: the attention reads the window's keys (compute.c's sliding window)
 * plus the compressed entries: on an HCA layer all causal ones, S / m'
 * per sequence; on a CSA layer the index_topk the indexer keeps of the
 * S / m causal ones (the indexer's scores sum_h w ReLU(q k) over every
 * causal entry, eq. 13-17 of the paper).  The indexer's output are top-k
 * indices: no gradient reaches it from the loss (as DSA's without its
 * KL loss, dsa.c; Megatron-Bridge examples/models/deepseek_v4/README.md @
 * 067f987df: "Indexer loss are disabled"), so it runs forward only and
 * saves only the int32 indices.  mHC's mixing is a skinny GEMM (n h ->
 * (2 + n) n), the Sinkhorn iterations of an n x n matrix, the stream
 * collapse and the combine: memory-bound, priced by the bytes they move.
 */
#include "internal.h"

/** Residual streams' mixing outputs per stream pair and stream of mHC's
 *  mapping: pre (n), post (n) and comb (n x n) logits, (2 + n) n
 *  (DeepseekV4HyperConnection: mix = (2 + hc_mult) * hc_mult). */
#define APS_DSV4_HC_MIX_EXTRA 2.0
/** mHC learned scales per site: pre, post, comb (self.scale, 3). */
#define APS_DSV4_HC_SCALES 3.0
/** mHC sites per decoder layer: attn_hc and ffn_hc. */
#define APS_DSV4_HC_SITES 2.0
/** Overlapping series of a CSA compressor (Ca and Cb: kv_proj, gate_proj
 *  and position_bias are 2 d wide, DeepseekV4CSACompressor). */
#define APS_DSV4_CSA_SERIES 2.0
/** Projections of a compressor: kv_proj and gate_proj. */
#define APS_DSV4_COMPRESSOR_PROJ 2.0
/** FLOPs per element of one Sinkhorn iteration of the n x n comb matrix:
 *  a row sum and division and a column sum and division (2 + 2). */
#define APS_DSV4_SINKHORN_FLOPS 4.0
/** Bytes of one saved top-k index: int32, as dsa.c's (vLLM's DeepSeek-V4
 *  topk_indices_buffer dtype=torch.int32). */
#define APS_DSV4_INDEX_BYTES 4.0
/** Largest accepted V4 width, group count or rate: 2^24, model.c's limit
 *  on every model width. */
#define APS_DSV4_MAX_WIDTH (INT64_C(1) << 24)
/** Most mHC residual streams accepted: 64, sixteen times the model's 4
 *  (configuration_deepseek_v4.py hc_mult; the mixing matrices grow with
 *  its square and every activation with it): past any design, short of
 *  the nonsense 2^24 streams a typo gives. */
#define APS_DSV4_MAX_HC_MULT INT64_C(64)

bool aps_model_is_dsv4(const aps_model *m)
{
    return m->hc_mult > 0;
}

bool aps_model_has_attn_delta(const aps_model *m)
{
    return m->kv_lora_rank > 0 || aps_model_is_dsv4(m) || aps_model_has_msa(m);
}

aps_status aps_dsv4_validate(const aps_model *m, char *err, size_t n)
{
    const struct { const char *f; int64_t v; } w[] = {
        {"hc_mult", m->hc_mult}, {"hc_sinkhorn_iters", m->hc_sinkhorn_iters},
        {"o_groups", m->o_groups}, {"o_lora_rank", m->o_lora_rank},
        {"csa_compress_rate", m->csa_compress_rate},
        {"hca_compress_rate", m->hca_compress_rate},
        {"csa_layers", m->csa_layers}, {"hca_layers", m->hca_layers},
        {"moe_hash_layers", m->moe_hash_layers}};
    size_t nw = sizeof w / sizeof w[0];
    if (!aps_model_is_dsv4(m)) {
        for (size_t i = 0; i < nw; i++)
            if (w[i].v != 0) {
                aps_fmt(err, n, "model.%s: %lld given without hc_mult "
                        "(DeepSeek-V4)", w[i].f, (long long)w[i].v);
                return APS_EINVAL;
            }
        return APS_OK;
    }
    if (m->hc_mult > APS_DSV4_MAX_HC_MULT) {
        aps_fmt(err, n, "model.hc_mult: must be in [1, %lld] residual "
                "streams (got %lld)", (long long)APS_DSV4_MAX_HC_MULT,
                (long long)m->hc_mult);
        return APS_EINVAL;
    }
    /* the first six: widths and rates, >= 1; the layer counts >= 0 */
    for (size_t i = 0; i < nw; i++) {
        int64_t lo = i < 6 ? 1 : 0;
        if (w[i].v < lo || w[i].v > APS_DSV4_MAX_WIDTH) {
            aps_fmt(err, n, "model.%s: must be in [%lld, %lld] with "
                    "DeepSeek-V4 (got %lld)", w[i].f, (long long)lo,
                    (long long)APS_DSV4_MAX_WIDTH, (long long)w[i].v);
            return APS_EINVAL;
        }
    }
    if (m->csa_layers + m->hca_layers > m->num_layers ||
        m->moe_hash_layers > m->num_layers) {
        aps_fmt(err, n, "model.%s: %lld layers, more than num_layers %lld",
                m->moe_hash_layers > m->num_layers ? "moe_hash_layers"
                                                  : "csa_layers",
                (long long)(m->moe_hash_layers > m->num_layers
                                ? m->moe_hash_layers
                                : m->csa_layers + m->hca_layers),
                (long long)m->num_layers);
        return APS_EINVAL;
    }
    int64_t ad = m->num_attention_heads * m->head_dim;
    if (ad % m->o_groups != 0) {
        aps_fmt(err, n, "model.o_groups: %lld does not divide "
                "num_attention_heads x head_dim = %lld (DeepSeek-V4's grouped "
                "output projection)", (long long)m->o_groups, (long long)ad);
        return APS_EINVAL;
    }
    /* what the V4 attention is built of; each field named when missing */
    const char *missing =
        m->num_experts <= 0 ? "num_experts (DeepSeek-V4 is an MoE model)"
        : m->q_lora_rank <= 0 ? "q_lora_rank (its low-rank query)"
        : m->num_query_groups != 1 ? "num_query_groups (one shared KV head)"
        : m->sliding_window <= 0 ? "sliding_window (every layer's window)"
        : !(m->sliding_window_layers == 0 ||
            m->sliding_window_layers == m->num_layers)
            ? "sliding_window_layers (every layer is windowed)"
        : !m->attention_sinks ? "attention_sinks (its per-head sinks)"
        : (m->csa_layers > 0 && m->index_n_heads <= 0)
            ? "index_n_heads (the CSA layers' lightning indexer)"
            : NULL;
    if (missing != NULL) {
        aps_fmt(err, n, "model.hc_mult: DeepSeek-V4 needs %s", missing);
        return APS_EINVAL;
    }
    /* what its costs below do not combine with */
    const char *other =
        m->kv_lora_rank > 0 ? "kv_lora_rank"
        : aps_model_is_hybrid(m) ? "hybrid_layer_pattern"
        : aps_model_has_gdn(m) ? "linear_attention_period"
        : aps_model_has_global_attention(m) ? "global_head_dim"
        : m->attn_v_head_dim > 0 ? "attn_v_head_dim"
        : m->attention_chunk_size > 0 ? "attention_chunk_size"
        : m->attention_output_gate ? "attention_output_gate"
        : m->qk_norm ? "qk_norm"
        : m->qkv_bias ? "qkv_bias"
        : m->attn_out_bias ? "attn_out_bias"
        : m->moe_latent_size > 0 ? "moe_latent_size"
                                 : NULL;
    if (other != NULL) {
        aps_fmt(err, n, "model.%s: not modelled with DeepSeek-V4's "
                "attention (hc_mult)", other);
        return APS_ENOTIMPL;
    }
    if (m->index_n_heads > 0) {
        const struct { const char *f; int64_t v; } ix[] = {
            {"index_n_heads", m->index_n_heads},
            {"index_head_dim", m->index_head_dim},
            {"index_topk", m->index_topk}};
        for (size_t i = 0; i < sizeof ix / sizeof ix[0]; i++)
            if (ix[i].v < 1 || ix[i].v > APS_DSV4_MAX_WIDTH) {
                aps_fmt(err, n, "model.%s: must be in [1, %lld] with "
                        "DeepSeek-V4's indexer (got %lld)", ix[i].f,
                        (long long)APS_DSV4_MAX_WIDTH, (long long)ix[i].v);
                return APS_EINVAL;
            }
    }
    return APS_OK;
}

/* ------------------------------------------------------------ parameters */

/** Linear weights of one V4 attention block without its compressor, minus
 *  those of the GQA block of the same widths (h a d + 2 h k d + a d h,
 *  k = 1): q_a, q_b, kv, o_a (g x r x a d / g = r a d) and o_b. */
static double attn_matmul_delta(const aps_model *m)
{
    double h = (double)m->hidden_size, a = (double)m->num_attention_heads;
    double k = (double)m->num_query_groups, d = (double)m->head_dim;
    double qr = (double)m->q_lora_rank, r = (double)m->o_lora_rank;
    double g = (double)m->o_groups;
    double v4 = h * qr + qr * a * d + h * d + r * a * d + g * r * h;
    double gqa = h * a * d + 2.0 * h * k * d + a * d * h;
    return v4 - gqa;
}

/** Linear weights of one layer's compressor (and indexer) of the kind
 *  whose rate is `rate` (csa: CSA's, else HCA's). */
static double compressor_matmul(const aps_model *m, bool csa)
{
    double h = (double)m->hidden_size, d = (double)m->head_dim;
    if (!csa)
        return APS_DSV4_COMPRESSOR_PROJ * h * d;
    double qr = (double)m->q_lora_rank;
    double hi = (double)m->index_n_heads, di = (double)m->index_head_dim;
    return APS_DSV4_COMPRESSOR_PROJ * h * APS_DSV4_CSA_SERIES * d +
           APS_DSV4_COMPRESSOR_PROJ * h * APS_DSV4_CSA_SERIES * di +
           qr * hi * di + h * hi;
}

/** The indexer's share of compressor_matmul(m, true): what runs forward
 *  only. */
static double indexer_matmul(const aps_model *m)
{
    double h = (double)m->hidden_size, qr = (double)m->q_lora_rank;
    double hi = (double)m->index_n_heads, di = (double)m->index_head_dim;
    return APS_DSV4_COMPRESSOR_PROJ * h * APS_DSV4_CSA_SERIES * di +
           qr * hi * di + h * hi;
}

/** Parameters of one layer's compressor (and indexer): the projections,
 *  the position biases (rate x width) and the kv_norms. */
static double compressor_params(const aps_model *m, bool csa)
{
    double d = (double)m->head_dim;
    if (!csa)
        return compressor_matmul(m, false) +
               (double)m->hca_compress_rate * d + d;
    double rate = (double)m->csa_compress_rate, di = (double)m->index_head_dim;
    return compressor_matmul(m, true) +
           rate * APS_DSV4_CSA_SERIES * d + d +
           rate * APS_DSV4_CSA_SERIES * di + di;
}

/** mHC mixing weights (fn) of one site: (2 + n) n x n h. */
static double hc_matmul_site(const aps_model *m)
{
    double nh = (double)m->hc_mult;
    return (APS_DSV4_HC_MIX_EXTRA + nh) * nh * nh * (double)m->hidden_size;
}

double aps_dsv4_hc_layer_params(const aps_model *m)
{
    if (!aps_model_is_dsv4(m))
        return 0.0;
    double nh = (double)m->hc_mult;
    return APS_DSV4_HC_SITES * (hc_matmul_site(m) +
                                (APS_DSV4_HC_MIX_EXTRA + nh) * nh +
                                APS_DSV4_HC_SCALES);
}

double aps_dsv4_hc_head_params(const aps_model *m)
{
    if (!aps_model_is_dsv4(m))
        return 0.0;
    double nh = (double)m->hc_mult;
    /* hc_fn n x n h, hc_base n, hc_scale 1 */
    return nh * nh * (double)m->hidden_size + nh + 1.0;
}

/** What one V4 layer of a kind (0 sliding, 1 CSA, 2 HCA) has beyond the
 *  GQA layer apsearch's dense count holds (sinks counted there):
 *  attention projections, q_a_norm and kv_norm, compressor, mHC. */
static double kind_delta_params(const aps_model *m, int kind)
{
    double p = attn_matmul_delta(m) + (double)m->q_lora_rank +
               (double)m->head_dim + aps_dsv4_hc_layer_params(m);
    if (kind != 0)
        p += compressor_params(m, kind == 1);
    return p;
}

double aps_dsv4_layers_delta_params(const aps_model *m)
{
    if (!aps_model_is_dsv4(m))
        return 0.0;
    double csa = (double)m->csa_layers, hca = (double)m->hca_layers;
    double swa = (double)m->num_layers - csa - hca;
    return swa * kind_delta_params(m, 0) + csa * kind_delta_params(m, 1) +
           hca * kind_delta_params(m, 2);
}

double aps_dsv4_mtp_layer_delta_params(const aps_model *m)
{
    return aps_model_is_dsv4(m) ? kind_delta_params(m, 0) : 0.0;
}

/** The mean layer's delta parameters and, in *matmul, of them in linear
 *  layers (mHC's fn counted there: it is an F.linear weight). */
static double mean_delta_params(const aps_model *m, double *matmul)
{
    double L = (double)m->num_layers;
    double csa = (double)m->csa_layers, hca = (double)m->hca_layers;
    *matmul = attn_matmul_delta(m) +
              APS_DSV4_HC_SITES * hc_matmul_site(m) +
              (csa * compressor_matmul(m, true) +
               hca * compressor_matmul(m, false)) / L;
    return aps_dsv4_layers_delta_params(m) / L;
}

/* ------------------------------------------------------------------ work */

double aps_dsv4_compressed_keys(const aps_model *m, bool csa, double S,
                                bool causal)
{
    double rate = (double)(csa ? m->csa_compress_rate : m->hca_compress_rate);
    double entries = S / rate;
    if (csa) /* the index_topk best of the causal entries, dsa.c's count */
        return aps_dsa_keys(m, entries, causal);
    return causal ? 0.5 * entries : entries;
}

/** Mean compressed keys per query of the mean layer. */
static double mean_compressed_keys(const aps_model *m, double S, bool causal)
{
    double L = (double)m->num_layers;
    return ((double)m->csa_layers * aps_dsv4_compressed_keys(m, true, S, causal) +
            (double)m->hca_layers * aps_dsv4_compressed_keys(m, false, S, causal)) /
           L;
}

/** Forward FLOPs per token of mHC's two sites in one layer: the mixing
 *  GEMM 2 n h (2 + n) n, the stream collapse 2 n h, the residual combine
 *  comb^T x streams 2 n^2 h, the output placement post x out + combined
 *  2 n h, and the Sinkhorn iterations 4 n^2 t (DeepseekV4HyperConnection
 *  .forward, DeepseekV4DecoderLayer.forward). */
static double hc_flops_per_token(const aps_model *m)
{
    double nh = (double)m->hc_mult, h = (double)m->hidden_size;
    double t = (double)m->hc_sinkhorn_iters;
    return APS_DSV4_HC_SITES *
           (2.0 * hc_matmul_site(m) + 2.0 * nh * h + 2.0 * nh * nh * h +
            2.0 * nh * h + APS_DSV4_SINKHORN_FLOPS * nh * nh * t);
}

double aps_dsv4_indexer_flops(const aps_model *m, double S)
{
    if (!aps_model_is_dsv4(m) || m->csa_layers == 0)
        return 0.0;
    double hi = (double)m->index_n_heads, di = (double)m->index_head_dim;
    /* per CSA layer: its projections and the scores of every query over
     * its causal compressed entries, S / (2 m) each; the mean layer's */
    double entries = S / (double)m->csa_compress_rate;
    double per_csa = 2.0 * S * indexer_matmul(m) + 2.0 * S * (0.5 * entries) * hi * di;
    return (double)m->csa_layers * per_csa / (double)m->num_layers;
}

double aps_dsv4_flops_delta(const aps_model *m, double S, bool causal)
{
    if (!aps_model_is_dsv4(m))
        return 0.0;
    double L = (double)m->num_layers, a = (double)m->num_attention_heads;
    double d = (double)m->head_dim;
    /* trained linear layers: the attention's difference, the compressors
     * (the indexer apart: aps_dsv4_indexer_flops) */
    double trained = attn_matmul_delta(m) +
                     ((double)m->csa_layers *
                          (compressor_matmul(m, true) - indexer_matmul(m)) +
                      (double)m->hca_layers * compressor_matmul(m, false)) / L;
    /* core attention over the compressed keys: QK^T and PV, d wide each */
    double core = 2.0 * S * mean_compressed_keys(m, S, causal) * a * (d + d);
    return 2.0 * S * trained + core + S * hc_flops_per_token(m);
}

/** HBM bytes per token mHC moves in one layer's forward, both sites: the
 *  streams read for the norm (bf16) and written and read upcast (fp32)
 *  for the mixing GEMM, read again for the collapse and the combine,
 *  the collapsed input written, the block's output read, the new streams
 *  written. */
static double hc_bytes_per_token(const aps_model *m)
{
    double nh = (double)m->hc_mult, h = (double)m->hidden_size;
    double A = APS_ACT_BYTES, F = APS_FP32_BYTES;
    return APS_DSV4_HC_SITES *
           (nh * h * (A + 2.0 * F + A + A + A) + 2.0 * h * A);
}

/** HBM bytes per token of a compressor's pooling (kv and gate read, the
 *  softmax over each window, the pooled entry written): its two
 *  projections' outputs read twice, bf16. */
static double pool_bytes_per_token(double width)
{
    return 2.0 * APS_DSV4_COMPRESSOR_PROJ * width * APS_ACT_BYTES;
}

void aps_dsv4_layer_cost(const aps_model *m, const aps_device *d,
                         const aps_training *t, const aps_strategy *s,
                         aps_moe_cost *out)
{
    if (!aps_model_is_dsv4(m))
        return;
    aps_precision prec = t->precision;
    double tp = (double)s->tp_degree, b = (double)s->micro_batch_size;
    double S = (double)t->seq_length, T = b * S / (double)s->cp_degree;
    double L = (double)m->num_layers;
    double h = (double)m->hidden_size, a = (double)m->num_attention_heads;
    double k = (double)m->num_query_groups, dh = (double)m->head_dim;
    double qr = (double)m->q_lora_rank, r = (double)m->o_lora_rank;
    double g = (double)m->o_groups, nh = (double)m->hc_mult;
    double hi = (double)m->index_n_heads, di = (double)m->index_head_dim;
    double fc = (double)m->csa_layers / L, fh = (double)m->hca_layers / L;
    double A = APS_ACT_BYTES, Ain = aps_gemm_input_bytes(t);
    double hbm = d->hbm_bandwidth * d->hbm_efficiency;
    double csa_w = APS_DSV4_CSA_SERIES * dh, csa_iw = APS_DSV4_CSA_SERIES * di;
    /* GEMMs: V4's projections for the GQA block's QKV and O; the grouped
     * o_a is g GEMMs of a d / g -> r (torch.bmm); the trained compressors
     * kv_proj, gate_proj on the mean layer's share of compressed layers */
    double gm = -aps_gemm_time(d, prec, T, (a + 2.0 * k) * dh / tp, h) -
                aps_gemm_time(d, prec, T, h, a * dh / tp);
    gm += aps_gemm_time(d, prec, T, qr, h) +
          aps_gemm_time(d, prec, T, a * dh / tp, qr) +
          aps_gemm_time(d, prec, T, dh, h) +
          g * aps_gemm_time(d, prec, T, r / tp, a * dh / g) +
          aps_gemm_time(d, prec, T, h, g * r / tp);
    gm += APS_DSV4_COMPRESSOR_PROJ *
          (fc * aps_gemm_time(d, prec, T, csa_w, h) +
           fh * aps_gemm_time(d, prec, T, dh, h));
    /* memory-bound: mHC and the compressors' pooling */
    gm += T * (hc_bytes_per_token(m) + fc * pool_bytes_per_token(csa_w) +
               fh * pool_bytes_per_token(dh)) / hbm;
    out->mla_gemm_fwd = gm;
    /* the attention core over the compressed keys, beyond the window's
     * (compute.c): QK^T and PV, d wide */
    double rate = d->peak_flops_bf16 * aps_attention_efficiency(d, t);
    double core = 2.0 * T * mean_compressed_keys(m, S, t->flash_attention) *
                  a * (dh + dh) / tp;
    out->mla_attn_fwd = core / rate;
    out->mla_attn_bwd = core * (t->flash_attention ? APS_FLASH_BWD_RATIO
                                                   : APS_GEMM_BWD_RATIO) /
                        rate;
    /* the indexer (CSA layers), forward only: its projections, its own
     * compressor's pooling and the scores over the causal entries */
    double entries = S / (double)m->csa_compress_rate;
    if (m->csa_layers > 0)
        out->dsa_indexer_fwd =
            fc * (APS_DSV4_COMPRESSOR_PROJ * aps_gemm_time(d, prec, T, csa_iw, h) +
                  aps_gemm_time(d, prec, T, hi * di, qr) +
                  aps_gemm_time(d, prec, T, hi, h) +
                  2.0 * T * (0.5 * entries) * hi * di / rate +
                  T * pool_bytes_per_token(csa_iw) / hbm);
    /* saved, against GQA's Q, K, V and context: q_a_norm's input and
     * output (qr), q_b's output and the normed, rotated Q (a d each), kv
     * before and after its norm (d each), the context before the rotation
     * is undone and as o_a's input (a d), o_a's output (g r); the
     * compressors' kv and gate (2 w) with their fp32 softmax weights (w)
     * and the pooled entries before and after their norm (2 d per
     * entry); CSA's int32 top-k indices; mHC per site the streams (n h,
     * bf16), their fp32 normed copy (n h) and pre, post, comb (fp32) */
    double v4 = T * ((A + Ain) * qr + A * 2.0 * a * dh / tp + 2.0 * A * dh +
                     (A + Ain) * a * dh / tp + Ain * g * r / tp);
    double gqa = T * (A * (a * dh + 2.0 * k * dh) + Ain * a * dh) / tp;
    double topk = (double)m->index_topk < entries ? (double)m->index_topk
                                                  : entries;
    double comp = T * (fc * ((APS_DSV4_COMPRESSOR_PROJ * A + APS_FP32_BYTES) * csa_w +
                             2.0 * A * dh / (double)m->csa_compress_rate +
                             APS_DSV4_INDEX_BYTES * topk) +
                       fh * ((APS_DSV4_COMPRESSOR_PROJ * A + APS_FP32_BYTES) * dh +
                             2.0 * A * dh / (double)m->hca_compress_rate));
    double hc = T * APS_DSV4_HC_SITES *
                (A * nh * h + APS_FP32_BYTES * nh * h +
                 APS_FP32_BYTES * (APS_DSV4_HC_MIX_EXTRA + nh) * nh);
    out->mla_act = v4 - gqa + comp + hc;
    out->mla_params = mean_delta_params(m, &out->mla_matmul_params);
}

const char *aps_dsv4_refusal(const aps_training *t, const aps_strategy *s,
                             aps_reason *code)
{
    *code = APS_REASON_NOT_MODELLED;
    /* each under APS_REASON_LEN */
    if (s->tp_degree > 1)
        return "DeepSeek-V4 with tp_degree > 1: no framework read here "
               "splits its one shared KV head and grouped output projection "
               "over TP (Megatron-Bridge 067f987df: \"DSv4 currently requires "
               "TP=1\"; transformers, AutoModel 36044ad3: no TP plan)";
    if (s->cp_degree > 1)
        return "DeepSeek-V4 with cp_degree > 1: context parallelism of its "
               "compressed attention is not modelled (AutoModel 36044ad3 "
               "all-gathers K/V and the compressed K/V, models/deepseek_v4/"
               "cp.py; Megatron-Bridge: draft Megatron-LM PR #5087)";
    if (aps_op_sac_on(t, s))
        return "selective recompute of DeepSeek-V4 under op-level selective "
               "activation checkpointing is not modelled";
    return NULL;
}
