/*
 * model.c -- normalized_model_config: defaults, validation, parameter counts.
 *
 * Parameter layout of a dense decoder-only transformer (MODELING.md s.2):
 * per layer Q h*a*d, K and V h*k*d each, O a*d*h, MLP 3*h*f (gated, SwiGLU:
 * gate, up, down) or 2*h*f (GELU: fc1, fc2), norms_per_layer norms of h
 * weights (+ h biases for LayerNorm with bias), optional biases and per-head
 * Q/K norms; embedding V*h, output layer V*h unless tied, final norm.
 * Checked against the published counts of shared/models (tests/c/test_model.c).
 */
#include <math.h>
#include <string.h>
#include <strings.h>
#include "internal.h"

/** Largest accepted value of a width (h, f, V, a, k, d): 2^24.  Larger is
 *  taken as a unit or typing mistake, not a model. */
#define APS_MAX_WIDTH (INT64_C(1) << 24)
/** Largest accepted layer count. */
#define APS_MAX_LAYERS (INT64_C(1) << 16)

void aps_model_defaults(aps_model *m)
{
    *m = (aps_model){0};
    m->norms_per_layer = 2;
    m->mlp = APS_MLP_SWIGLU;
    m->norm = APS_NORM_RMSNORM;
    m->position_embedding = APS_POS_ROPE;
    m->norm_bias = true; /* only read for LayerNorm */
}

static aps_status check_range(const char *field, int64_t v, int64_t max,
                              char *err, size_t n)
{
    if (v < 1) {
        aps_fmt(err, n, "model.%s: must be >= 1 (got %lld)", field,
                (long long)v);
        return APS_EINVAL;
    }
    if (v > max) {
        aps_fmt(err, n, "model.%s: absurd size %lld (limit %lld)", field,
                (long long)v, (long long)max);
        return APS_EINVAL;
    }
    return APS_OK;
}

/** A numeric model setting: finite and > 0, or 0 (not given / none). */
static aps_status check_optional(const char *field, double v, char *err,
                                 size_t n)
{
    if (!isfinite(v) || v < 0) {
        aps_fmt(err, n, "model.%s: must be 0 (not given) or finite and > 0 "
                "(got %g)", field, v);
        return APS_EINVAL;
    }
    return APS_OK;
}

/*
 * RoPE base, RoPE scaling and norm epsilon.  They change neither memory nor
 * FLOPs (no estimate reads them); they are checked so that a launch config
 * never carries a NaN or a negative value, and so that scaling parameters
 * are not given without a scaling to belong to.
 */
static aps_status validate_numerics(const aps_model *m, char *err, size_t n)
{
    struct { const char *f; double v; } nums[] = {
        {"rope_theta", m->rope_theta},
        {"rope_scaling_factor", m->rope_scaling_factor},
        {"low_freq_factor", m->low_freq_factor},
        {"high_freq_factor", m->high_freq_factor},
        {"yarn_beta_fast", m->yarn_beta_fast},
        {"yarn_beta_slow", m->yarn_beta_slow},
        {"yarn_mscale", m->yarn_mscale},
        {"yarn_mscale_all_dim", m->yarn_mscale_all_dim},
        {"yarn_attention_factor", m->yarn_attention_factor},
        {"norm_eps", m->norm_eps},
        {"rotary_percent", m->rotary_percent},
        {"glu_linear_offset", m->glu_linear_offset},
        {"glu_clamp", m->glu_clamp},
        {"attn_logit_softcapping", m->attn_logit_softcapping},
        {"final_logit_softcapping", m->final_logit_softcapping},
    };
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
        aps_status st = check_optional(nums[i].f, nums[i].v, err, n);
        if (st != APS_OK)
            return st;
    }
    if (m->original_max_position_embeddings < 0 ||
        m->original_max_position_embeddings > APS_MAX_WIDTH) {
        aps_fmt(err, n, "model.original_max_position_embeddings: must be 0 "
                "(not given) or in [1, 2^24] (got %lld)",
                (long long)m->original_max_position_embeddings);
        return APS_EINVAL;
    }
    /* partial RoPE rotates a fraction of each head (HF partial_rotary_
     * factor, Megatron --rotary-percent): at most all of it, and only
     * where RoPE is the position embedding */
    if (m->rotary_percent > 1) {
        aps_fmt(err, n, "model.rotary_percent: must be 0 (not given) or in "
                "(0, 1] (got %g)", m->rotary_percent);
        return APS_EINVAL;
    }
    if (m->rotary_percent != 0 && m->position_embedding != APS_POS_ROPE) {
        aps_fmt(err, n, "model.rotary_percent: given without RoPE "
                "(position_embedding is not rope)");
        return APS_EINVAL;
    }
    if (m->rotary_interleaved && (m->position_embedding != APS_POS_ROPE ||
                                  m->kv_lora_rank > 0)) {
        aps_fmt(err, n, "model.rotary_interleaved: given without RoPE or "
                "with latent attention (its RoPE is MLA's own)");
        return APS_EINVAL;
    }
    bool scaled = m->rope_scaling_type != APS_ROPE_SCALING_NONE;
    if (scaled && m->rope_scaling_factor == 0) {
        aps_fmt(err, n, "model.rope_scaling_factor: a rope_scaling_type is "
                "given without a factor");
        return APS_EINVAL;
    }
    if (!scaled && m->rope_scaling_factor != 0) {
        aps_fmt(err, n, "model.rope_scaling_factor: %g given without a "
                "rope_scaling_type", m->rope_scaling_factor);
        return APS_EINVAL;
    }
    if (!scaled && m->original_max_position_embeddings != 0) {
        aps_fmt(err, n, "model.original_max_position_embeddings: given "
                "without a rope_scaling_type");
        return APS_EINVAL;
    }
    if (m->rope_scaling_type != APS_ROPE_SCALING_LLAMA3 &&
        (m->low_freq_factor != 0 || m->high_freq_factor != 0)) {
        aps_fmt(err, n, "model.%s: only llama3 RoPE scaling has it",
                m->low_freq_factor != 0 ? "low_freq_factor"
                                        : "high_freq_factor");
        return APS_EINVAL;
    }
    if (m->rope_scaling_type != APS_ROPE_SCALING_YARN &&
        (m->yarn_beta_fast != 0 || m->yarn_beta_slow != 0 ||
         m->yarn_mscale != 0 || m->yarn_mscale_all_dim != 0 ||
         m->yarn_attention_factor != 0 || m->yarn_no_truncate)) {
        aps_fmt(err, n, "model.%s: only yarn RoPE scaling has it",
                m->yarn_beta_fast != 0          ? "yarn_beta_fast"
                : m->yarn_beta_slow != 0        ? "yarn_beta_slow"
                : m->yarn_mscale != 0           ? "yarn_mscale"
                : m->yarn_mscale_all_dim != 0   ? "yarn_mscale_all_dim"
                : m->yarn_attention_factor != 0 ? "yarn_attention_factor"
                                                : "yarn_no_truncate");
        return APS_EINVAL;
    }
    /* transformers' _compute_yarn_parameters: the ramp runs from beta_fast
     * rotations down to beta_slow (find_correction_range); equal ends are
     * a step, which linear_ramp_factor widens by 0.001 (Kimi-K2 ships
     * beta_fast = beta_slow = 1) */
    if (m->yarn_beta_fast > 0 && m->yarn_beta_slow > 0 &&
        !(m->yarn_beta_fast >= m->yarn_beta_slow)) {
        aps_fmt(err, n, "model.yarn_beta_fast: must be >= yarn_beta_slow %g "
                "(got %g)", m->yarn_beta_slow, m->yarn_beta_fast);
        return APS_EINVAL;
    }
    /* transformers' _compute_llama3_parameters: long wavelengths (beyond
     * original / low_freq_factor) divided by the factor, short ones (below
     * original / high_freq_factor) kept, a ramp between; equal factors are
     * a step with no ramp (Llama 4 Scout ships 1 and 1) */
    if (m->low_freq_factor > 0 && m->high_freq_factor > 0 &&
        !(m->high_freq_factor >= m->low_freq_factor)) {
        aps_fmt(err, n, "model.high_freq_factor: must be >= low_freq_factor "
                "%g (got %g)", m->low_freq_factor, m->high_freq_factor);
        return APS_EINVAL;
    }
    return APS_OK;
}

/* Multi-head latent attention: all four widths with kv_lora_rank, none
 * without it. */
static aps_status validate_mla(aps_model *m, char *err, size_t n)
{
    struct { const char *f; int64_t v; } mla[] = {
        {"q_lora_rank", m->q_lora_rank},
        {"qk_nope_head_dim", m->qk_nope_head_dim},
        {"qk_rope_head_dim", m->qk_rope_head_dim},
        {"v_head_dim", m->v_head_dim},
    };
    if (m->kv_lora_rank == 0) {
        /* DeepSeek-V4's low-rank query without MLA (dsv4.c checks it) */
        for (size_t i = aps_model_is_dsv4(m) ? 1 : 0;
             i < sizeof mla / sizeof mla[0]; i++)
            if (mla[i].v != 0) {
                aps_fmt(err, n, "model.%s: %lld given without kv_lora_rank "
                        "(multi-head latent attention)", mla[i].f,
                        (long long)mla[i].v);
                return APS_EINVAL;
            }
        return APS_OK;
    }
    aps_status st = check_range("kv_lora_rank", m->kv_lora_rank,
                                APS_MAX_WIDTH, err, n);
    for (size_t i = 1; st == APS_OK && i < sizeof mla / sizeof mla[0]; i++)
        st = check_range(mla[i].f, mla[i].v, APS_MAX_WIDTH, err, n);
    if (st != APS_OK)
        return st;
    if (m->q_lora_rank < 0 || m->q_lora_rank > APS_MAX_WIDTH) {
        aps_fmt(err, n, "model.q_lora_rank: must be 0 (no query compression) "
                "or in [1, 2^24] (got %lld)", (long long)m->q_lora_rank);
        return APS_EINVAL;
    }
    /* what the MLA count below does not have: these would be extra terms */
    if (m->qkv_bias || m->attn_out_bias || m->qk_norm ||
        m->attention_sinks) {
        aps_fmt(err, n, "model.%s: not modelled with multi-head latent "
                "attention (kv_lora_rank)",
                m->qkv_bias ? "qkv_bias"
                : m->attn_out_bias ? "attn_out_bias"
                : m->qk_norm ? "qk_norm" : "attention_sinks");
        return APS_ENOTIMPL;
    }
    return APS_OK;
}

/*
 * Router settings (moe_aux_loss_coeff ... moe_router_pre_softmax).  They
 * change no estimate (no memory, FLOP or time term reads them); they are
 * checked so that a launch config never carries a NaN, a negative value or
 * a grouping Megatron-LM's TransformerConfig refuses (transformer_config.py
 * @ d98e8a64: num_moe_experts % moe_router_num_groups == 0, group_topk <=
 * num_groups) or transformers' DeepSeek gate cannot run (the chosen groups
 * hold fewer than top-k experts).  Dense models: all must be 0 / false.
 */
static aps_status validate_router(const aps_model *m, char *err, size_t n)
{
    struct { const char *f; double v; } nums[] = {
        {"moe_aux_loss_coeff", m->moe_aux_loss_coeff},
        {"moe_router_topk_scaling_factor", m->moe_router_topk_scaling_factor},
    };
    struct { const char *f; int64_t v; } given[] = {
        {"moe_aux_loss_coeff", m->moe_aux_loss_coeff != 0},
        {"moe_seq_aux_loss", m->moe_seq_aux_loss},
        {"moe_router_num_groups", m->moe_router_num_groups},
        {"moe_router_group_topk", m->moe_router_group_topk},
        {"moe_router_group_score_topk", m->moe_router_group_score_topk},
        {"moe_router_topk_scaling_factor",
         m->moe_router_topk_scaling_factor != 0},
        {"moe_router_pre_softmax", m->moe_router_pre_softmax},
        {"moe_router_sigmoid", m->moe_router_sigmoid},
        {"moe_router_softmax_bias", m->moe_router_softmax_bias},
        {"moe_router_input_probs", m->moe_router_input_probs},
    };
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
        aps_status st = check_optional(nums[i].f, nums[i].v, err, n);
        if (st != APS_OK)
            return st;
    }
    if (m->num_experts == 0) {
        for (size_t i = 0; i < sizeof given / sizeof given[0]; i++)
            if (given[i].v != 0) {
                aps_fmt(err, n, "model.%s: given without num_experts "
                        "(a dense model)", given[i].f);
                return APS_EINVAL;
            }
        return APS_OK;
    }
    /* Megatron's experts assert it (experts.py: "only works with
     * moe_router_topk=1"); Llama 4 routes top-1 */
    if (m->moe_router_input_probs && m->experts_per_token != 1) {
        aps_fmt(err, n, "model.moe_router_input_probs: needs experts_per_token "
                "1 (got %lld)", (long long)m->experts_per_token);
        return APS_EINVAL;
    }
    if (m->moe_seq_aux_loss && m->moe_aux_loss_coeff == 0) {
        aps_fmt(err, n, "model.moe_seq_aux_loss: given without "
                "moe_aux_loss_coeff (a per-sequence loss needs its "
                "coefficient)");
        return APS_EINVAL;
    }
    int64_t E = m->num_experts, g = m->moe_router_num_groups;
    if (g == 0) {
        if (m->moe_router_group_topk != 0 ||
            m->moe_router_group_score_topk != 0) {
            aps_fmt(err, n, "model.%s: %lld given without "
                    "moe_router_num_groups",
                    m->moe_router_group_topk != 0
                        ? "moe_router_group_topk"
                        : "moe_router_group_score_topk",
                    (long long)(m->moe_router_group_topk != 0
                                    ? m->moe_router_group_topk
                                    : m->moe_router_group_score_topk));
            return APS_EINVAL;
        }
        return APS_OK;
    }
    if (g < 0 || g > E || E % g != 0) {
        aps_fmt(err, n, "model.moe_router_num_groups: must divide "
                "num_experts = %lld (got %lld)", (long long)E, (long long)g);
        return APS_EINVAL;
    }
    int64_t gk = m->moe_router_group_topk;
    if (gk < 1 || gk > g) {
        aps_fmt(err, n, "model.moe_router_group_topk: must be in [1, "
                "moe_router_num_groups = %lld] (got %lld)", (long long)g,
                (long long)gk);
        return APS_EINVAL;
    }
    if (gk * (E / g) < m->experts_per_token) {
        aps_fmt(err, n, "model.moe_router_group_topk: %lld groups of %lld "
                "experts hold fewer than experts_per_token = %lld",
                (long long)gk, (long long)(E / g),
                (long long)m->experts_per_token);
        return APS_EINVAL;
    }
    int64_t sk = m->moe_router_group_score_topk;
    if (sk < 0 || sk > E / g) {
        aps_fmt(err, n, "model.moe_router_group_score_topk: must be 0 (not "
                "given) or in [1, num_experts / moe_router_num_groups = "
                "%lld] (got %lld)", (long long)(E / g), (long long)sk);
        return APS_EINVAL;
    }
    return APS_OK;
}

/* Mixture of experts: every field 0 for a dense model; sizes, top-k within
 * the experts, a layer pattern that leaves at least one MoE layer. */
static aps_status validate_moe(aps_model *m, char *err, size_t n)
{
    if (m->mtp_layers < 0 || m->mtp_layers > APS_MAX_MTP_LAYERS) {
        aps_fmt(err, n, "model.mtp_layers: must be in [0, %d] (got %lld)",
                APS_MAX_MTP_LAYERS, (long long)m->mtp_layers);
        return APS_EINVAL;
    }
    if (m->num_experts == 0) {
        struct { const char *f; int64_t v; } moe[] = {
            {"experts_per_token", m->experts_per_token},
            {"moe_ffn_hidden_size", m->moe_ffn_hidden_size},
            {"shared_expert_ffn_hidden_size", m->shared_expert_ffn_hidden_size},
            {"shared_expert_gate", m->shared_expert_gate},
            {"moe_router_bias", m->moe_router_bias},
            {"moe_router_linear_bias", m->moe_router_linear_bias},
            {"moe_router_scales", m->moe_router_scales},
            /* Megatron-LM d98e8a64 megatron/training/arguments.py
             * l.1980-1982: "MoE latent projections are applicable only
             * for MoE models" */
            {"moe_latent_size", m->moe_latent_size},
            {"moe_first_dense_layers", m->moe_first_dense_layers},
            {"moe_layer_freq", m->moe_layer_freq},
            {"moe_layer_phase", m->moe_layer_phase},
            {"moe_dense_layers", m->moe_dense_layer_count},
        };
        for (size_t i = 0; i < sizeof moe / sizeof moe[0]; i++)
            if (moe[i].v != 0) {
                aps_fmt(err, n, "model.%s: given without num_experts "
                        "(a dense model)", moe[i].f);
                return APS_EINVAL;
            }
        return validate_router(m, err, n);
    }
    /* with experts, their top-k and width are required: a 0 is an absent
     * field, said so (a hand-written table that left it out) */
    if (m->experts_per_token == 0 || m->moe_ffn_hidden_size == 0) {
        aps_fmt(err, n, "model.%s: required with num_experts = %lld (got 0 "
                "or absent)", m->experts_per_token == 0 ? "experts_per_token"
                                                        : "moe_ffn_hidden_size",
                (long long)m->num_experts);
        return APS_EINVAL;
    }
    aps_status st = check_range("num_experts", m->num_experts,
                                INT64_C(1) << 16, err, n);
    if (st == APS_OK && m->experts_per_token > m->num_experts) {
        aps_fmt(err, n, "model.experts_per_token: %lld exceeds num_experts = "
                "%lld (a token is routed to that many distinct experts)",
                (long long)m->experts_per_token, (long long)m->num_experts);
        return APS_EINVAL;
    }
    if (st == APS_OK)
        st = check_range("experts_per_token", m->experts_per_token,
                         m->num_experts, err, n);
    if (st == APS_OK)
        st = check_range("moe_ffn_hidden_size", m->moe_ffn_hidden_size,
                         APS_MAX_WIDTH, err, n);
    if (st != APS_OK)
        return st;
    /* latent MoE: 0 (none) or a width > 0 (arguments.py l.1981 asserts
     * moe_latent_size > 0; Megatron takes any width, a latent wider than
     * h included) */
    if (m->moe_latent_size < 0 || m->moe_latent_size > APS_MAX_WIDTH) {
        aps_fmt(err, n, "model.moe_latent_size: must be 0 (none) or in "
                "[1, 2^24] (got %lld)", (long long)m->moe_latent_size);
        return APS_EINVAL;
    }
    if (m->shared_expert_ffn_hidden_size < 0 ||
        m->shared_expert_ffn_hidden_size > APS_MAX_WIDTH) {
        aps_fmt(err, n, "model.shared_expert_ffn_hidden_size: must be 0 "
                "(none) or in [1, 2^24] (got %lld)",
                (long long)m->shared_expert_ffn_hidden_size);
        return APS_EINVAL;
    }
    if (m->shared_expert_gate && m->shared_expert_ffn_hidden_size == 0) {
        aps_fmt(err, n, "model.shared_expert_gate: given without a shared "
                "expert (shared_expert_ffn_hidden_size = 0)");
        return APS_EINVAL;
    }
    if (m->moe_layer_freq == 0)
        m->moe_layer_freq = 1;
    if (m->moe_layer_freq < 1 || m->moe_layer_freq > m->num_layers) {
        aps_fmt(err, n, "model.moe_layer_freq: must be in [1, num_layers = "
                "%lld] (got %lld)", (long long)m->num_layers,
                (long long)m->moe_layer_freq);
        return APS_EINVAL;
    }
    if (m->moe_layer_phase < 0 || m->moe_layer_phase >= m->moe_layer_freq) {
        aps_fmt(err, n, "model.moe_layer_phase: must be in [0, moe_layer_freq "
                "= %lld) (got %lld)", (long long)m->moe_layer_freq,
                (long long)m->moe_layer_phase);
        return APS_EINVAL;
    }
    if (m->moe_first_dense_layers < 0 ||
        m->moe_first_dense_layers >= m->num_layers) {
        aps_fmt(err, n, "model.moe_first_dense_layers: must be in [0, "
                "num_layers = %lld) (got %lld)", (long long)m->num_layers,
                (long long)m->moe_first_dense_layers);
        return APS_EINVAL;
    }
    if (m->moe_dense_layer_count < 0 ||
        m->moe_dense_layer_count > APS_MAX_DENSE_LAYER_LIST) {
        aps_fmt(err, n, "model.moe_dense_layers: at most %d entries (got %lld)",
                APS_MAX_DENSE_LAYER_LIST, (long long)m->moe_dense_layer_count);
        return APS_EINVAL;
    }
    for (int64_t i = 0; i < m->moe_dense_layer_count; i++) {
        int64_t v = m->moe_dense_layers[i];
        if (v < 0 || v >= m->num_layers ||
            (i > 0 && v <= m->moe_dense_layers[i - 1])) {
            aps_fmt(err, n, "model.moe_dense_layers[%lld]: must be a layer "
                    "index in [0, %lld), ascending (got %lld)",
                    (long long)(i + 1), (long long)m->num_layers,
                    (long long)v);
            return APS_EINVAL;
        }
    }
    if (aps_model_moe_layers_in(m, 0, m->num_layers) == 0) {
        aps_fmt(err, n, "model.num_experts: %lld experts but no layer has "
                "them (moe_first_dense_layers, moe_layer_freq, "
                "moe_dense_layers)", (long long)m->num_experts);
        return APS_EINVAL;
    }
    return validate_router(m, err, n);
}

bool aps_model_is_moe(const aps_model *m)
{
    return m->num_experts > 0 || m->kv_lora_rank > 0;
}

bool aps_model_is_moe_layer(const aps_model *m, int64_t i)
{
    /* past the decoder: the multi-token-prediction layers, each of the
     * last decoder layer's type (Megatron-LM d98e8a64 megatron/training/
     * training.py:1044-1045, last_layer_is_moe) */
    if (i >= m->num_layers && m->num_layers > 0)
        i = m->num_layers - 1;
    if (m->num_experts <= 0 || i < m->moe_first_dense_layers)
        return false;
    /* a hybrid model: its pattern's E layers (hybrid.c) */
    if (aps_model_is_hybrid(m)) {
        const char *p = m->hybrid_layer_pattern;
        size_t len = sizeof m->hybrid_layer_pattern;
        const char *end = memchr(p, '\0', len);
        if (end)
            len = (size_t)(end - p);
        return i >= 0 && (size_t)i < len && p[i] == 'E';
    }
    int64_t k = m->moe_layer_freq > 0 ? m->moe_layer_freq : 1;
    if (i % k != m->moe_layer_phase)
        return false;
    for (int64_t j = 0; j < m->moe_dense_layer_count; j++)
        if (m->moe_dense_layers[j] == i)
            return false;
    return true;
}

/* Layers i in [0, x) with i mod k == phase (0 <= phase < k). */
static int64_t phase_count_below(int64_t x, int64_t k, int64_t phase)
{
    return x > phase ? (x - phase - 1) / k + 1 : 0;
}

int64_t aps_model_moe_layers_in(const aps_model *m, int64_t lo, int64_t hi)
{
    int64_t L = m->num_layers;
    if (m->num_experts <= 0 || hi <= lo || L <= 0)
        return 0;
    int64_t count = 0;
    if (hi > L) { /* the MTP layers: each of the last decoder layer's type */
        int64_t from = lo > L ? lo : L;
        count += (hi - from) * (int64_t)aps_model_is_moe_layer(m, L - 1);
        hi = from;
    }
    if (lo < 0)
        lo = 0;
    if (aps_model_is_hybrid(m)) { /* the pattern is at most APS_MAX_HYBRID_LAYERS */
        for (int64_t i = lo; i < hi; i++)
            count += aps_model_is_moe_layer(m, i);
        return count;
    }
    if (lo < m->moe_first_dense_layers)
        lo = m->moe_first_dense_layers;
    if (hi <= lo)
        return count;
    int64_t k = m->moe_layer_freq > 0 ? m->moe_layer_freq : 1;
    count += phase_count_below(hi, k, m->moe_layer_phase) -
             phase_count_below(lo, k, m->moe_layer_phase);
    for (int64_t j = 0; j < m->moe_dense_layer_count; j++) {
        int64_t d = m->moe_dense_layers[j]; /* ascending, distinct */
        count -= d >= lo && d < hi && d % k == m->moe_layer_phase;
    }
    return count;
}

/*
 * The windowed layers' period: with k > 0 the window is on every layer whose
 * 1-based number is not a multiple of k, so sliding_window_layers must be
 * L - floor(L / k); k = 1 would leave no layer windowed.
 */
static aps_status validate_window_period(const aps_model *m, char *err,
                                         size_t n)
{
    int64_t k = m->sliding_window_period;
    if (k == 0)
        return APS_OK;
    if (k < 2 || k > m->num_layers || m->sliding_window == 0) {
        aps_fmt(err, n, "model.sliding_window_period: must be 0 (not given) or "
                "in [2, num_layers = %lld] with a sliding_window (got %lld)",
                (long long)m->num_layers, (long long)k);
        return APS_EINVAL;
    }
    int64_t windowed = m->num_layers - m->num_layers / k;
    if (m->sliding_window_layers != windowed) {
        aps_fmt(err, n, "model.sliding_window_period: %lld puts the window on "
                "%lld of %lld layers, but sliding_window_layers is %lld",
                (long long)k, (long long)windowed, (long long)m->num_layers,
                (long long)m->sliding_window_layers);
        return APS_EINVAL;
    }
    return APS_OK;
}

/*
 * The windowed layers' layout: num_layers letters S (windowed) and F
 * (full), as many S as sliding_window_layers, with a window and without a
 * period (the period says the same of a periodic layout).
 */
static aps_status validate_window_layout(const aps_model *m, char *err,
                                         size_t n)
{
    const char *p = m->sliding_window_layout;
    if (p[0] == '\0')
        return APS_OK;
    size_t len = strlen(p);
    int64_t windowed = 0;
    for (size_t i = 0; i < len; i++) {
        if (p[i] != 'S' && p[i] != 'F') {
            aps_fmt(err, n, "model.sliding_window_layout: letter %zu is '%c' "
                    "(expected S, windowed, or F, full)", i + 1, p[i]);
            return APS_EINVAL;
        }
        windowed += p[i] == 'S';
    }
    if ((int64_t)len != m->num_layers || m->sliding_window == 0 ||
        m->sliding_window_period != 0 ||
        windowed != m->sliding_window_layers) {
        aps_fmt(err, n, "model.sliding_window_layout: must have num_layers = "
                "%lld letters, %lld of them S (sliding_window_layers), with a "
                "sliding_window and no sliding_window_period (got %zu "
                "letters, %lld S)", (long long)m->num_layers,
                (long long)m->sliding_window_layers, len, (long long)windowed);
        return APS_EINVAL;
    }
    return APS_OK;
}

/*
 * Llama 4's attention variants: weightless L2 Q/K norms (not with the
 * RMSNorm ones), NoPE layers every k-th layer of a RoPE model, chunked
 * attention (not together with a sliding window: aps_attention_keys
 * averages one restriction per layer).
 */
static aps_status validate_llama4_attention(const aps_model *m, char *err,
                                            size_t n)
{
    int64_t L = m->num_layers, k = m->nope_layer_period;
    if (m->qk_l2_norm && m->qk_norm) {
        aps_fmt(err, n, "model.qk_l2_norm: given with qk_norm (one Q/K norm "
                "per layer)");
        return APS_EINVAL;
    }
    if (k != 0 && (k < 2 || k > L || m->position_embedding != APS_POS_ROPE)) {
        aps_fmt(err, n, "model.nope_layer_period: must be 0 (none) or in [2, "
                "num_layers = %lld] with RoPE (got %lld)", (long long)L,
                (long long)k);
        return APS_EINVAL;
    }
    int64_t c = m->attention_chunk_size, cl = m->chunked_attention_layers;
    if (c < 0 || c > (INT64_C(1) << 26)) {
        aps_fmt(err, n, "model.attention_chunk_size: must be 0 (none) or in "
                "[1, 2^26] (got %lld)", (long long)c);
        return APS_EINVAL;
    }
    if (cl < 0 || cl > L || (c == 0 && cl != 0)) {
        aps_fmt(err, n, "model.chunked_attention_layers: must be in [0, "
                "num_layers = %lld] with an attention_chunk_size (got %lld)",
                (long long)L, (long long)cl);
        return APS_EINVAL;
    }
    if (c > 0 && m->sliding_window > 0) {
        aps_fmt(err, n, "model.attention_chunk_size: given with a "
                "sliding_window (not modelled together)");
        return APS_EINVAL;
    }
    return APS_OK;
}

/* Layers with the sliding window: sliding_window_layers, 0 meaning all
 * of them when there is a window. */
static double windowed_layers(const aps_model *m)
{
    if (m->sliding_window <= 0)
        return 0.0;
    return m->sliding_window_layers > 0 ? (double)m->sliding_window_layers
                                        : (double)m->num_layers;
}

/* Keys per query of a causal S-token sequence under a w-token window
 * (w < S): query i attends min(i, w) keys, (S w - w^2 / 2) / S on
 * average. */
static double window_keys(double w, double S)
{
    return w - 0.5 * w * w / S;
}

/* The attention variant a shape per kind does not combine with (its
 * costs assume one shape per layer), or NULL. */
static const char *attn_kind_conflict(const aps_model *m)
{
    return m->kv_lora_rank > 0 ? "kv_lora_rank"
           : aps_model_is_hybrid(m) ? "hybrid_layer_pattern"
           : aps_model_has_gdn(m) ? "linear_attention_period"
           : m->index_n_heads > 0 ? "index_n_heads"
           : m->attention_chunk_size > 0 ? "attention_chunk_size"
           : m->attention_output_gate ? "attention_output_gate"
                                      : NULL;
}

/*
 * The global layers' own attention shape (Gemma 4): widths in range, the
 * KV heads dividing the query heads, at least one layer without the
 * window, and none of the attention variants the kinds do not combine
 * with (their costs assume one shape per layer).
 */
static aps_status validate_global_attention(const aps_model *m, char *err,
                                            size_t n)
{
    if (!aps_model_has_global_attention(m))
        return APS_OK;
    struct { const char *f; int64_t v; } dims[] = {
        {"global_head_dim", m->global_head_dim},
        {"global_num_attention_heads", m->global_num_attention_heads},
        {"global_num_query_groups", m->global_num_query_groups},
    };
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++) {
        if (dims[i].v == 0)
            continue;
        aps_status st = check_range(dims[i].f, dims[i].v, APS_MAX_WIDTH, err, n);
        if (st != APS_OK)
            return st;
    }
    int64_t g = m->global_num_query_groups > 0 ? m->global_num_query_groups
                                               : m->num_query_groups;
    int64_t ga = m->global_num_attention_heads > 0
                     ? m->global_num_attention_heads
                     : m->num_attention_heads;
    if (ga % g != 0) {
        aps_fmt(err, n, "model.%s: %lld does not divide %s %lld",
                m->global_num_query_groups > 0 ? "global_num_query_groups"
                                               : "num_query_groups",
                (long long)g,
                m->global_num_attention_heads > 0 ? "global_num_attention_heads"
                                                  : "num_attention_heads",
                (long long)ga);
        return APS_EINVAL;
    }
    if (windowed_layers(m) >= (double)m->num_layers) {
        aps_fmt(err, n, "model.global_head_dim: a global attention shape "
                "with every layer windowed (no layer has it)");
        return APS_EINVAL;
    }
    const char *other = attn_kind_conflict(m);
    if (other != NULL) {
        aps_fmt(err, n, "model.%s: given with a global attention shape "
                "(global_head_dim, global_num_attention_heads, "
                "global_num_query_groups, global_k_eq_v; not modelled "
                "together)", other);
        return APS_EINVAL;
    }
    return APS_OK;
}

/*
 * MiMo-V2-Flash's attention: the V width in range, sinks on the windowed
 * layers only with sinks and a global attention shape (the layers that
 * have none), neither with the variants the kinds do not combine with.
 */
static aps_status validate_v_width_sinks(const aps_model *m, char *err,
                                         size_t n)
{
    if (m->attn_v_head_dim == 0 && !m->window_attention_sinks)
        return APS_OK;
    if (m->attn_v_head_dim != 0) {
        aps_status st = check_range("attn_v_head_dim", m->attn_v_head_dim,
                                    APS_MAX_WIDTH, err, n);
        if (st != APS_OK)
            return st;
    }
    if (m->window_attention_sinks &&
        (!m->attention_sinks || !aps_model_has_global_attention(m))) {
        aps_fmt(err, n, "model.window_attention_sinks: needs attention_sinks "
                "and a global attention shape (global_head_dim, "
                "global_num_query_groups, global_k_eq_v)");
        return APS_EINVAL;
    }
    const char *other = attn_kind_conflict(m);
    if (other != NULL) {
        aps_fmt(err, n, "model.%s: given with attn_v_head_dim or "
                "window_attention_sinks (not modelled together)", other);
        return APS_EINVAL;
    }
    return APS_OK;
}

/* The per-head output gate is priced on GQA attention only (q_proj_heads:
 * one more column per head), not beside the full-width gate. */
static aps_status validate_head_gate(const aps_model *m, char *err, size_t n)
{
    if (!m->attention_head_gate)
        return APS_OK;
    const char *other = m->attention_output_gate ? "attention_output_gate"
                        : m->kv_lora_rank > 0     ? "kv_lora_rank"
                        : aps_model_is_hybrid(m) ? "hybrid_layer_pattern"
                        : aps_model_has_gdn(m)   ? "linear_attention_period"
                        : m->hc_mult > 0         ? "hc_mult"
                                                 : NULL;
    if (other != NULL) {
        aps_fmt(err, n, "model.attention_head_gate: given with %s (not "
                "modelled together)", other);
        return APS_EINVAL;
    }
    return APS_OK;
}

/* The gated MLP's activation, offset and clamp belong to mlp = swiglu. */
static aps_status validate_glu(const aps_model *m, char *err, size_t n)
{
    if ((unsigned)m->glu_activation > APS_GLU_GELU) {
        aps_fmt(err, n, "model.glu_activation: enum field out of range");
        return APS_EINVAL;
    }
    bool gated = m->mlp == APS_MLP_SWIGLU;
    const char *f = m->glu_activation != APS_GLU_SILU ? "glu_activation"
                    : m->glu_linear_offset != 0      ? "glu_linear_offset"
                    : m->glu_clamp != 0              ? "glu_clamp"
                                                     : NULL;
    if (f != NULL && !gated) {
        aps_fmt(err, n, "model.%s: only a gated MLP (mlp = \"swiglu\") has "
                "it", f);
        return APS_EINVAL;
    }
    /* xIELU is Apertus's dense MLP; its scalars are counted per dense MLP
     * on every TP rank (layer_params_mix), not per expert or NAS block */
    if (m->mlp == APS_MLP_XIELU &&
        (m->num_experts > 0 || m->nas_ffn_pattern[0] != '\0')) {
        aps_fmt(err, n, "model.mlp: \"xielu\" is modelled for dense MLPs "
                "only (%s)", m->num_experts > 0 ? "num_experts > 0"
                                                : "nas_ffn_pattern");
        return APS_EINVAL;
    }
    return APS_OK;
}

aps_status aps_model_validate(aps_model *m, char *err, size_t n)
{
    if (m == NULL) {
        aps_fmt(err, n, "model: NULL");
        return APS_EINVAL;
    }
    if (!aps_text_ok(m->name, sizeof m->name)) {
        aps_fmt(err, n, "model.name: must be printable UTF-8 without control "
                "characters");
        return APS_EINVAL;
    }
    struct { const char *f; int64_t v, max; } dims[] = {
        {"num_layers", m->num_layers, APS_MAX_LAYERS},
        {"hidden_size", m->hidden_size, APS_MAX_WIDTH},
        {"num_attention_heads", m->num_attention_heads, APS_MAX_WIDTH},
        {"num_query_groups", m->num_query_groups, APS_MAX_WIDTH},
        {"ffn_hidden_size", m->ffn_hidden_size, APS_MAX_WIDTH},
        {"vocab_size", m->vocab_size, APS_MAX_WIDTH},
        {"norms_per_layer", m->norms_per_layer, 16},
    };
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++) {
        aps_status st = check_range(dims[i].f, dims[i].v, dims[i].max, err, n);
        if (st != APS_OK)
            return st;
    }
    if (m->num_attention_heads % m->num_query_groups != 0) {
        aps_fmt(err, n,
                "model.num_query_groups: %lld does not divide "
                "num_attention_heads %lld",
                (long long)m->num_query_groups,
                (long long)m->num_attention_heads);
        return APS_EINVAL;
    }
    if (m->head_dim == 0) {
        if (m->hidden_size % m->num_attention_heads != 0) {
            aps_fmt(err, n,
                    "model.head_dim: not given and hidden_size %lld is not "
                    "divisible by num_attention_heads %lld",
                    (long long)m->hidden_size,
                    (long long)m->num_attention_heads);
            return APS_EINVAL;
        }
        m->head_dim = m->hidden_size / m->num_attention_heads;
    }
    aps_status st = check_range("head_dim", m->head_dim, APS_MAX_WIDTH, err, n);
    if (st != APS_OK)
        return st;
    if (m->position_embedding == APS_POS_LEARNED) {
        st = check_range("max_position_embeddings",
                         m->max_position_embeddings, APS_MAX_WIDTH, err, n);
        if (st != APS_OK)
            return st;
    } else if (m->max_position_embeddings < 0) {
        aps_fmt(err, n, "model.max_position_embeddings: must be >= 0 (got %lld)",
                (long long)m->max_position_embeddings);
        return APS_EINVAL;
    }
    if (m->sliding_window < 0 || m->sliding_window > (INT64_C(1) << 26)) {
        aps_fmt(err, n, "model.sliding_window: must be 0 (none) or in [1, 2^26] "
                "(got %lld)", (long long)m->sliding_window);
        return APS_EINVAL;
    }
    if (m->sliding_window == 0 && m->sliding_window_layers != 0) {
        aps_fmt(err, n, "model.sliding_window_layers: %lld given without a "
                "sliding_window", (long long)m->sliding_window_layers);
        return APS_EINVAL;
    }
    if (m->sliding_window_layers < 0 || m->sliding_window_layers > m->num_layers) {
        aps_fmt(err, n, "model.sliding_window_layers: must be in [0, num_layers "
                "= %lld] (got %lld)", (long long)m->num_layers,
                (long long)m->sliding_window_layers);
        return APS_EINVAL;
    }
    if ((unsigned)m->mlp > APS_MLP_XIELU || (unsigned)m->norm > APS_NORM_LAYERNORM ||
        (unsigned)m->position_embedding > APS_POS_NONE ||
        (unsigned)m->rope_scaling_type > APS_ROPE_SCALING_LONGROPE) {
        aps_fmt(err, n, "model: enum field out of range");
        return APS_EINVAL;
    }
    st = validate_window_period(m, err, n);
    if (st == APS_OK)
        st = validate_window_layout(m, err, n);
    if (st != APS_OK)
        return st;
    st = aps_hybrid_validate(m, err, n);
    if (st != APS_OK)
        return st;
    st = aps_gdn_validate(m, err, n);
    if (st == APS_OK)
        st = aps_nas_validate(m, err, n);
    if (st != APS_OK)
        return st;
    st = validate_glu(m, err, n);
    if (st != APS_OK)
        return st;
    st = validate_llama4_attention(m, err, n);
    if (st != APS_OK)
        return st;
    st = validate_global_attention(m, err, n);
    if (st == APS_OK)
        st = validate_v_width_sinks(m, err, n);
    if (st == APS_OK)
        st = validate_head_gate(m, err, n);
    if (st != APS_OK)
        return st;
    if (m->qk_norm_full_width && !m->qk_norm) {
        aps_fmt(err, n, "model.qk_norm_full_width: given without qk_norm "
                "(it says how wide the Q/K norms are)");
        return APS_EINVAL;
    }
    if (m->qk_norm_weightless &&
        (!m->qk_norm || m->qk_norm_full_width || m->qk_norm_head_weights)) {
        aps_fmt(err, n, "model.qk_norm_weightless: given %s (it says the "
                "per-head Q/K norms have no weight)",
                m->qk_norm ? "with qk_norm_full_width or qk_norm_head_weights"
                           : "without qk_norm");
        return APS_EINVAL;
    }
    if (m->qk_norm_head_weights && (!m->qk_norm || m->qk_norm_full_width)) {
        aps_fmt(err, n, "model.qk_norm_head_weights: given %s (it says the "
                "per-head Q/K norms have a weight each)",
                m->qk_norm ? "with qk_norm_full_width" : "without qk_norm");
        return APS_EINVAL;
    }
    st = validate_numerics(m, err, n);
    if (st != APS_OK)
        return st;
    st = validate_mla(m, err, n);
    if (st != APS_OK)
        return st;
    st = aps_dsa_validate(m, err, n);
    if (st != APS_OK)
        return st;
    st = aps_dsv4_validate(m, err, n);
    if (st == APS_OK)
        st = aps_msa_validate(m, err, n);
    if (st != APS_OK)
        return st;
    return validate_moe(m, err, n);
}

/** Weights (+ biases) of one norm of width w; none when weightless. */
static double norm_params(const aps_model *m, double w)
{
    if (m->norm_weightless)
        return 0.0;
    return (m->norm == APS_NORM_LAYERNORM && m->norm_bias) ? 2.0 * w : w;
}

/* Query columns of kind x's Q projection per head dim: a, 2a with an
 * output gate (Qwen3NextAttention q_proj: a d 2 outputs, query and gate),
 * a + a / d with a gate per head (LagunaAttention g_proj h x a). */
static double q_proj_heads(const aps_model *m, const aps_attn_kind *x)
{
    double a = x->a;
    if (m->attention_head_gate)
        return a + a / x->d;
    return m->attention_output_gate ? 2.0 * a : a;
}

/* A quantity of one attention block of kind x on one of t ranks. */
typedef double (*attn_kind_fn)(const aps_model *m, const aps_attn_kind *x,
                               double t);

/* Its mean over the model's layers (aps_attn_kinds: with one kind, the
 * kind's value). */
static double attn_mean(const aps_model *m, double t, attn_kind_fn f)
{
    aps_attn_kind x[APS_ATTN_KINDS];
    int n = aps_attn_kinds(m, x);
    double mean = 0.0;
    for (int i = 0; i < n; i++)
        mean += x[i].share * f(m, &x[i], t);
    return mean;
}

/* Its largest value over the kinds that have layers. */
static double attn_max(const aps_model *m, double t, attn_kind_fn f)
{
    aps_attn_kind x[APS_ATTN_KINDS];
    int n = aps_attn_kinds(m, x);
    double best = 0.0;
    for (int i = 0; i < n; i++)
        if (x[i].layers > 0)
            best = fmax(best, f(m, &x[i], t));
    return best;
}

double aps_attn_kind_in_width(const aps_model *m, const aps_attn_kind *x)
{
    return q_proj_heads(m, x) * x->d + x->k * x->d + x->v * x->k * x->dv;
}

/* Input-projection weights of attention kind x on one of t ranks. */
static double kind_in_params(const aps_model *m, const aps_attn_kind *x,
                             double t)
{
    double h = (double)m->hidden_size;
    return h * aps_attn_kind_in_width(m, x) / t;
}

/* Output-projection weights of attention kind x on one of t ranks. */
static double kind_out_params(const aps_model *m, const aps_attn_kind *x,
                              double t)
{
    double h = (double)m->hidden_size;
    return x->a * x->dv * h / t;
}

/* Linear-layer weights of one attention block of kind x. */
static double kind_matmul_params(const aps_model *m, const aps_attn_kind *x,
                                 double t)
{
    (void)t;
    return kind_in_params(m, x, 1.0) + kind_out_params(m, x, 1.0);
}

/* Linear-layer weights of the mean layer's attention block: Q (and the
 * output gate), K, V, O. */
static double attn_matmul_params(const aps_model *m)
{
    return attn_mean(m, 1.0, kind_matmul_params);
}

/* Linear-layer weights of one dense MLP block. */
static double mlp_matmul_params(const aps_model *m)
{
    return (m->mlp == APS_MLP_SWIGLU ? 3.0 : 2.0) * (double)m->hidden_size *
           (double)m->ffn_hidden_size;
}

/** Matrix parameters of the mean layer: its share of an attention block,
 *  of an MLP block and of a Mamba-2 or Gated DeltaNet block
 *  (aps_hybrid_mix; a transformer layer is one attention and one MLP
 *  block).  They are the weights of the TransformerEngine linears, whose
 *  quantized copies fp8 / fp4 training keeps (memory.c aps_model_states):
 *  of a mixer in_proj and out_proj only (Megatron-LM d98e8a64
 *  megatron/core/models/hybrid/hybrid_layer_specs.py: TELayerNorm-
 *  ColumnParallelLinear and TERowParallelLinear; ssm/mamba_mixer.py keeps
 *  conv1d, dt_bias, A_log, D and the gated norm as plain parameters). */
double aps_mix_matmul_params(const aps_model *m, const aps_hybrid_counts *w)
{
    double p = w->attn_share * attn_matmul_params(m) +
               w->mlp_share * mlp_matmul_params(m);
    if (w->mamba_share > 0)
        p += w->mamba_share * aps_mamba_matmul_params(m);
    if (w->gdn_share > 0)
        p += w->gdn_share * aps_gdn_matmul_params(m);
    return p;
}

double aps_layer_matmul_params(const aps_model *m)
{
    aps_hybrid_counts w;
    aps_hybrid_mix(m, &w);
    return aps_mix_matmul_params(m, &w);
}

double aps_hybrid_stage_matmul_params(const aps_model *m, const aps_layout *lay,
                                      int64_t i)
{
    aps_hybrid_counts w;
    aps_hybrid_stage_mix(m, lay, i, &w);
    return aps_mix_matmul_params(m, &w);
}

double aps_regathered_params(const aps_model *m, int64_t tp, double distance)
{
    if (!(distance > 0))
        return 0.0;
    double t = (double)tp;
    double h = (double)m->hidden_size;
    double f = (double)m->ffn_hidden_size;
    double w[] = {attn_mean(m, t, kind_in_params),
                  attn_mean(m, t, kind_out_params),
                  (m->mlp == APS_MLP_SWIGLU ? 2.0 : 1.0) * h * f / t,
                  f * h / t};
    size_t nw = sizeof w / sizeof w[0];
    /* between a weight's use in the recomputed forward and in the
     * backward, the weights after it are fetched twice: forward, then
     * backward in reverse */
    double again = 0.0, after = 0.0;
    for (size_t i = nw; i-- > 0;) {
        if (2.0 * after > distance)
            again += w[i];
        after += w[i];
    }
    return again;
}

/* Keys per query of a causal S-token sequence cut into C-token chunks,
 * each query attending within its own chunk (transformers
 * create_chunked_causal_mask): S = q C + r gives q chunks of C^2 / 2 and
 * one of r^2 / 2 query-key pairs, in the continuous form of the causal S / 2
 * (S <= C: exactly S / 2). */
static double chunked_keys(double S, double C)
{
    double q = floor(S / C), r = S - q * C;
    return 0.5 * (q * C * C + r * r) / S;
}

double aps_attention_keys(const aps_model *m, double S, bool causal)
{
    if (aps_model_has_dsa(m)) /* every layer sparse (dsa.c) */
        return aps_dsa_keys(m, S, causal);
    if (aps_model_has_msa(m)) { /* msa_layers sparse, the rest dense */
        double L = (double)m->num_layers, n = (double)m->msa_layers;
        double dense = causal ? 0.5 * S : S;
        return (n * aps_msa_keys(m, S, causal) + (L - n) * dense) / L;
    }
    if (!causal)
        return S;
    double full = 0.5 * S;
    double c = (double)m->attention_chunk_size;
    if (c > 0 && c < S) {
        double L = (double)m->num_layers;
        double chunked = m->chunked_attention_layers > 0
                             ? (double)m->chunked_attention_layers : L;
        return (chunked * chunked_keys(S, c) + (L - chunked) * full) / L;
    }
    double w = (double)m->sliding_window;
    if (w <= 0 || w >= S)
        return full;
    double L = (double)m->num_layers;
    double local = windowed_layers(m);
    return (local * window_keys(w, S) + (L - local) * full) / L;
}

/* The V head width of a kind whose Q/K heads are d wide. */
static double kind_v_width(const aps_model *m, double d)
{
    return m->attn_v_head_dim > 0 ? (double)m->attn_v_head_dim : d;
}

int aps_attn_kinds(const aps_model *m, aps_attn_kind out[APS_ATTN_KINDS])
{
    double L = (double)m->num_layers, d = (double)m->head_dim;
    double sinks = m->attention_sinks ? 1.0 : 0.0;
    double a = (double)m->num_attention_heads;
    out[0] = (aps_attn_kind){L, 1.0, a, (double)m->num_query_groups, d, 1.0,
                             kind_v_width(m, d), sinks, APS_KEYS_MEAN};
    if (!aps_model_has_global_attention(m))
        return 1;
    double local = windowed_layers(m);
    out[0].layers = local;
    out[0].share = local / L;
    out[0].keys = APS_KEYS_WINDOW;
    double gd = (double)(m->global_head_dim > 0 ? m->global_head_dim
                                                : m->head_dim);
    out[1] = (aps_attn_kind){
        L - local, (L - local) / L,
        (double)(m->global_num_attention_heads > 0
                     ? m->global_num_attention_heads
                     : m->num_attention_heads),
        (double)(m->global_num_query_groups > 0 ? m->global_num_query_groups
                                                : m->num_query_groups),
        gd, m->global_k_eq_v ? 0.0 : 1.0, kind_v_width(m, gd),
        m->window_attention_sinks ? 0.0 : sinks, APS_KEYS_FULL};
    return 2;
}

double aps_attn_kind_keys(const aps_model *m, const aps_attn_kind *x, double S,
                          bool causal)
{
    double w = (double)m->sliding_window;
    if (x->keys == APS_KEYS_MEAN)
        return aps_attention_keys(m, S, causal);
    if (!causal)
        return S;
    if (x->keys == APS_KEYS_FULL || w <= 0 || w >= S)
        return 0.5 * S;
    return window_keys(w, S);
}

/* Q/K norm weights of one layer on one of tp ranks: per head, one
 * head_dim-wide norm each for Q and K, replicated (Qwen3Attention q_norm,
 * k_norm); full width, a*d and k*d, split with the heads they normalise
 * (OlmoeAttention q_norm = RMSNorm(hidden_size), k_norm = RMSNorm(
 * head_dim * num_key_value_heads)); per head with a weight each, the same
 * a*d and k*d split with the heads (CohereAttention q_norm, k_norm). */
static double qk_norm_params(const aps_model *m, const aps_attn_kind *x,
                             double t)
{
    if (!m->qk_norm || m->qk_norm_weightless)
        return 0.0;
    return (m->qk_norm_full_width || m->qk_norm_head_weights)
               ? (x->a + x->k) * x->d / t
               : 2.0 * x->d;
}

/* Attention-sink logits of one layer of kind x on one of tp ranks: one
 * per query head (GptOssAttention.sinks = Parameter(num_attention_heads);
 * MiMoV2Attention.attention_sink_bias on the windowed layers), split with
 * the heads. */
static double sink_params(const aps_model *m, const aps_attn_kind *x,
                         double t)
{
    (void)m;
    return x->sinks > 0 ? x->a / t : 0.0;
}

/* Attention parameters of kind x beside its linear weights on one of t
 * ranks: biases, Q/K norms, sinks. */
static double kind_extra_params(const aps_model *m, const aps_attn_kind *x,
                                double t)
{
    double h = (double)m->hidden_size;
    double attn = 0.0;
    if (m->qkv_bias) /* column parallel: split; none on the output gate */
        attn += (x->a * x->d + x->k * x->d + x->v * x->k * x->dv) / t;
    if (m->attn_out_bias) /* row parallel: replicated */
        attn += h;
    return attn + qk_norm_params(m, x, t) + sink_params(m, x, t);
}

/* The whole attention block of kind x on one of t ranks. */
static double kind_block_params(const aps_model *m, const aps_attn_kind *x,
                                double t)
{
    return kind_matmul_params(m, x, t) / t + kind_extra_params(m, x, t);
}

/** Parameters of the layer whose blocks are mix w split over tp ranks
 *  (tp = 1: the whole layer). */
static inline double layer_params_mix(const aps_model *m, int64_t tp,
                               const aps_hybrid_counts *w)
{
    double t = (double)tp;
    double h = (double)m->hidden_size;
    double f = (double)m->ffn_hidden_size;
    double attn = attn_mean(m, t, kind_extra_params), mlp = 0.0;
    if (m->mlp_bias) /* fc1 (and gate) column parallel, fc2 row parallel */
        mlp += (m->mlp == APS_MLP_SWIGLU ? 2.0 * f : f) / t + h;
    if (m->mlp == APS_MLP_XIELU) /* its scalars on every TP rank */
        mlp += APS_XIELU_PARAMS;
    double p = (w->attn_share * attn_matmul_params(m) +
                w->mlp_share * mlp_matmul_params(m)) / t +
               w->attn_share * attn + w->mlp_share * mlp;
    if (w->mamba_share > 0)
        p += w->mamba_share * aps_mamba_params_tp(m, tp);
    if (w->gdn_share > 0)
        p += w->gdn_share * aps_gdn_params_tp(m, tp);
    /* a heterogeneous layer's norms are its present blocks' (nas.c); a
     * hybrid layer's one per block (two in a P layer, hybrid.c) */
    p += (aps_model_is_nas(m) || aps_model_is_hybrid(m)
              ? w->blocks : (double)m->norms_per_layer) *
         norm_params(m, h);
    p += aps_attnres_layer_params(m); /* replicated (attnres.c) */
    return p;
}

double aps_layer_params_tp(const aps_model *m, int64_t tp)
{
    aps_hybrid_counts w;
    aps_hybrid_mix(m, &w);
    return layer_params_mix(m, tp, &w);
}

double aps_hybrid_stage_params_tp(const aps_model *m, const aps_layout *lay,
                                  int64_t i)
{
    aps_hybrid_counts w;
    aps_hybrid_stage_mix(m, lay, i, &w);
    return layer_params_mix(m, lay->t, &w);
}

/* Attention of one whole layer as aps_layer_params_tp counts it (tp = 1):
 * Q, K, V, O, their biases, per-head Q/K norms. */
static double gqa_attention_params(const aps_model *m)
{
    return attn_matmul_params(m) + attn_mean(m, 1.0, kind_extra_params);
}

/* Multi-head latent attention (DeepSeek-V2 arXiv:2405.04434 s.2.1;
 * modeling_deepseek.py DeepseekV2Attention): q_a h*qr + q_a_layernorm qr +
 * q_b qr*a*(dn+dr) (no query compression: q_proj h*a*(dn+dr));
 * kv_a_proj_with_mqa h*(kr+dr) + kv_a_layernorm kr + kv_b kr*a*(dn+dv);
 * o_proj a*dv*h.  The RMSNorms have weights only. */
static double mla_attention_params(const aps_model *m)
{
    double h = (double)m->hidden_size, a = (double)m->num_attention_heads;
    double qr = (double)m->q_lora_rank, kr = (double)m->kv_lora_rank;
    double dn = (double)m->qk_nope_head_dim, dr = (double)m->qk_rope_head_dim;
    double dv = (double)m->v_head_dim;
    double q = qr > 0 ? h * qr + qr + qr * a * (dn + dr) : h * a * (dn + dr);
    double gate = m->mla_output_gate ? h * a * dv : 0.0; /* Kimi K3 g_proj */
    return q + h * (kr + dr) + kr + kr * a * (dn + dv) + a * dv * h + gate;
}

double aps_ffn_params(const aps_model *m, double f)
{
    double h = (double)m->hidden_size;
    double p = (m->mlp == APS_MLP_SWIGLU ? 3.0 : 2.0) * h * f;
    if (m->mlp_bias && f > 0)
        p += (m->mlp == APS_MLP_SWIGLU ? 2.0 * f : f) + h;
    if (m->mlp == APS_MLP_XIELU && f > 0)
        p += APS_XIELU_PARAMS;
    return p;
}

/* The dense FFN of one layer (gated 3 h f or 2 h f, biases). */
static double dense_mlp_params(const aps_model *m)
{
    return aps_ffn_params(m, (double)m->ffn_hidden_size);
}

/* The FFN of one MoE layer with `experts` routed experts: router h*E
 * (+ E score biases, + E logit biases), the experts (+ their biases), the
 * shared expert (+ its biases, + its gate h).  transformers
 * MixtralSparseMoeBlock, Qwen2MoeSparseMoeBlock, DeepseekV3MoE; gpt-oss
 * GptOssTopKRouter (weight E x h, bias E) and GptOssExperts (gate_up_proj
 * E x h x 2f, gate_up_proj_bias E x 2f, down_proj E x f x h,
 * down_proj_bias E x h).  Latent MoE (Nemotron 3 Super, modeling_nemotron_h
 * NemotronHMOE; Megatron moe_layer.py l.279-304): each expert at the
 * latent width and fc1 / fc2_latent_proj (aps_moe_latent_params). */
static double moe_mlp_params(const aps_model *m, double experts)
{
    double h = (double)m->hidden_size, E = (double)m->num_experts;
    double p = h * E + aps_moe_router_extra_params(m);
    p += experts * aps_moe_expert_params(m) + aps_moe_latent_params(m);
    p += aps_ffn_params(m, (double)m->shared_expert_ffn_hidden_size);
    if (m->shared_expert_gate)
        p += h;
    return p;
}

/* Parameters of one layer of each kind of a hybrid model on one of tp
 * ranks, its pre-norm included: attention (Q, K, V, O, Q/K norms),
 * MLP, Mamba-2 (aps_mamba_params_tp). */
static void hybrid_kind_params(const aps_model *m, int64_t tp, double *attn,
                               double *mlp, double *mamba)
{
    double t = (double)tp, norm = norm_params(m, (double)m->hidden_size);
    *attn = attn_matmul_params(m) / t + attn_mean(m, t, qk_norm_params) + norm;
    *mlp = mlp_matmul_params(m) / t + norm;
    *mamba = aps_mamba_params_tp(m, tp) + norm;
}

/* The largest single layer among the layers of mix w of a hybrid model
 * on one of tp ranks (its FSDP unit). */
static double hybrid_largest_layer(const aps_model *m, int64_t tp,
                                   const aps_hybrid_counts *mix)
{
    double attn, mlp, mamba;
    hybrid_kind_params(m, tp, &attn, &mlp, &mamba);
    const aps_hybrid_counts w = *mix;
    /* a P layer: both mixers and the MLP, one norm fewer than three */
    double parallel = attn + mlp + mamba - norm_params(m, (double)m->hidden_size);
    return fmax(w.parallel ? parallel : 0.0,
                fmax(w.attn > w.parallel ? attn : 0.0,
                     fmax(w.mlp > w.moe + w.parallel ? mlp : 0.0,
                          w.mamba > w.parallel ? mamba : 0.0)));
}

/* The largest layer among the layers of mix w of a Gated DeltaNet model
 * on one of tp ranks (its FSDP unit): their mean layer with its mixer
 * share replaced by the larger whole mixer they hold, gated attention or
 * Gated DeltaNet. */
static double gdn_largest_layer(const aps_model *m, int64_t tp,
                                const aps_hybrid_counts *w)
{
    double attn = attn_mean(m, (double)tp, kind_block_params);
    double gdn = aps_gdn_params_tp(m, tp);
    double mean = w->attn_share * attn + w->gdn_share * gdn;
    return layer_params_mix(m, tp, w) - mean +
           fmax(w->attn ? attn : 0.0, w->gdn ? gdn : 0.0);
}

/* A hybrid model's layers kind by kind: the counts and per-layer
 * parameters into out, and out->layers their exact sum (not L times the
 * mean layer).  An MoE layer 'E' is its pre-norm and the MoE block
 * (transformers NemotronHBlock with NemotronHMOE: the router weight E x h,
 * e_score_correction_bias E, the experts' and the shared expert's up and
 * down projections). */
static void hybrid_param_counts(const aps_model *m, aps_param_counts *out)
{
    aps_hybrid_counts w;
    aps_hybrid_mix(m, &w);
    hybrid_kind_params(m, 1, &out->per_attention_layer, &out->per_mlp_layer,
                       &out->per_mamba_layer);
    double norm = norm_params(m, (double)m->hidden_size);
    out->mamba_layers = (double)w.mamba;
    out->attention_layers = (double)w.attn;
    out->mlp_layers = (double)(w.mlp - w.moe);
    out->moe_layers = (double)w.moe;
    if (w.moe > 0) {
        out->per_moe_layer = norm + moe_mlp_params(m, (double)m->num_experts);
        out->per_moe_layer_active =
            norm + moe_mlp_params(m, (double)m->experts_per_token);
    }
    /* a P layer is counted in each of its three kinds with a norm each:
     * it has two (hybrid.c) */
    out->layers = out->mamba_layers * out->per_mamba_layer +
                  out->attention_layers * out->per_attention_layer +
                  out->mlp_layers * out->per_mlp_layer +
                  out->moe_layers * out->per_moe_layer -
                  (double)w.parallel * norm;
}

/* The layers of one MTP depth of a hybrid model, its mtp_layer_pattern
 * by kind (out's per-kind counts), into *layer and, with the top-k
 * experts, *active; returns the embedding and output copies the depth
 * holds: none.  Nemotron 3 Super's checkpoint stores mtp.layers.{0,1}
 * (the "*E" depth), eh_proj and the three norms, and no embedding or
 * head of its own: Megatron-Bridge 067f987df
 * examples/model_verification_cards/nemotron-3-super-120b-a12b/card.yaml
 * counts 123,611,033,088 elements in the BF16 checkpoint, the decoder's
 * 120,668,707,840 plus this depth's 2,942,325,248 (tests/c/test_hybrid.c). */
static double hybrid_mtp_layers(const aps_model *m, const aps_param_counts *out,
                                double *layer, double *active)
{
    aps_hybrid_counts w = {0};
    aps_hybrid_mtp_counts(m, 1, &w);
    double dense = (double)w.mamba * out->per_mamba_layer +
                   (double)w.attn * out->per_attention_layer +
                   (double)(w.mlp - w.moe) * out->per_mlp_layer;
    *layer = dense + (double)w.moe * out->per_moe_layer;
    *active = dense + (double)w.moe * out->per_moe_layer_active;
    return 0.0;
}

/* The decoder layers of a model with a global attention shape, summed
 * kind by kind (exact integers, where L times the mean layer is not):
 * the layer without its attention block, moe of them with the MoE block
 * for the dense MLP, plus each kind's attention blocks. */
static double kinds_layer_params(const aps_model *m, double moe,
                                 double dense_ffn)
{
    aps_hybrid_counts w;
    aps_hybrid_mix(m, &w);
    w.attn_share = 0.0;
    double rest = layer_params_mix(m, 1, &w);
    double p = ((double)m->num_layers - moe) * rest;
    if (moe > 0)
        p += moe * (rest - dense_ffn + moe_mlp_params(m, (double)m->num_experts));
    aps_attn_kind x[APS_ATTN_KINDS];
    int n = aps_attn_kinds(m, x);
    for (int i = 0; i < n; i++)
        p += x[i].layers * kind_block_params(m, &x[i], 1.0);
    return p;
}

void aps_model_param_counts(const aps_model *m, aps_param_counts *out)
{
    double h = (double)m->hidden_size, V = (double)m->vocab_size;
    *out = (aps_param_counts){0};
    out->embedding = V * h;
    if (m->position_embedding == APS_POS_LEARNED)
        out->embedding += (double)m->max_position_embeddings * h;
    if (m->embedding_norm)
        out->embedding += norm_params(m, h);
    out->per_layer = aps_layer_params_tp(m, 1);
    if (m->kv_lora_rank > 0) /* on the full-attention layers (gdn.c) */
        out->per_layer += aps_gdn_attn_share(m) *
                          (mla_attention_params(m) - gqa_attention_params(m));
    /* what only some layers have, summed exactly below: DeepSeek-V4's
     * difference per layer; the indexers of GLM-5.2's computing layers
     * and of MiniMax-M3's sparse ones */
    double v4 = aps_dsv4_layers_delta_params(m) +
                aps_dsa_indexer_params_sum(m) + aps_msa_indexer_params_sum(m);
    out->per_layer += v4 / (double)m->num_layers;
    double L = (double)m->num_layers,
           moe = (double)aps_model_moe_layers_in(m, 0, m->num_layers);
    double dense_ffn = dense_mlp_params(m);
    if (moe > 0) {
        double rest = out->per_layer - dense_ffn;
        out->per_moe_layer =
            rest + moe_mlp_params(m, (double)m->num_experts);
        out->per_moe_layer_active =
            rest + moe_mlp_params(m, (double)m->experts_per_token);
    }
    out->moe_layers = moe;
    out->layers = (L - moe) * out->per_layer + moe * out->per_moe_layer;
    if (v4 != 0.0) /* exact: per_layer holds the mean */
        out->layers = (L - moe) * (out->per_layer - v4 / L) +
                      moe * (out->per_moe_layer - v4 / L) + v4;
    if (aps_model_has_global_attention(m))
        out->layers = kinds_layer_params(m, moe, dense_ffn);
    if (aps_model_is_nas(m)) /* layer by layer (nas.c) */
        out->layers = aps_nas_layers_params(m, gqa_attention_params(m),
                                            norm_params(m, h));
    /* linear attention: per_layer is the mean of attn and linear layers
     * (shares of L), so the sum is an integer up to the shares' rounding
     * (Kimi K3: 69 / 93 and 24 / 93 of half-trillion layer sums) */
    if (aps_model_has_gdn(m))
        out->layers = round(out->layers);
    if (aps_model_is_hybrid(m))
        hybrid_param_counts(m, out);
    /* DeepSeek-V4's hc_head collapses the streams before the norm */
    out->final_norm = norm_params(m, h) + aps_dsv4_hc_head_params(m) +
                      aps_attnres_model_params(m); /* K3's output mix */
    out->output_layer = (m->tie_word_embeddings ? 0.0 : V * h) +
                        (m->lm_head_bias ? V : 0.0);
    out->total = out->embedding + out->layers + out->final_norm +
                 out->output_layer;
    out->active = out->total - moe * (out->per_moe_layer -
                                      out->per_moe_layer_active);
    if (aps_model_has_global_attention(m)) /* exact: per_moe_layer holds
        * the fractional mean attention */
        out->active = out->total -
                      moe * (moe_mlp_params(m, (double)m->num_experts) -
                             moe_mlp_params(m, (double)m->experts_per_token));
    /* DeepSeek-V3 MTP module (modeling in its checkpoint, model.layers.61):
     * enorm, hnorm, eh_proj 2h*h, one transformer layer (MoE when the
     * model has experts), shared_head.norm, and its own copies of the
     * embedding and output layer; a token uses all of it but the copies.
     * Ling 2.0's (BailingMoeV2MTPLayer, Megatron-Bridge 067f987df
     * models/bailing/modeling_bailing_moe_v2.py l.894-907): enorm, hnorm,
     * eh_proj, its layer and final_layernorm, the model's word_embeddings
     * and lm_head shared: no copies (mtp_shared_embeddings). */
    if (m->mtp_layers > 0) {
        bool moe_mtp = m->num_experts > 0;
        double layer = moe_mtp ? out->per_moe_layer : out->per_layer;
        double layer_active = moe_mtp ? out->per_moe_layer_active
                                      : out->per_layer;
        double copies = m->mtp_shared_embeddings ? 0.0 : 2.0 * V * h;
        if (aps_model_is_hybrid(m))
            copies = hybrid_mtp_layers(m, out, &layer, &layer_active);
        double extra = 3.0 * norm_params(m, h) + 2.0 * h * h;
        layer += aps_dsa_mtp_indexer_delta(m);
        layer_active += aps_dsa_mtp_indexer_delta(m);
        if (aps_model_is_dsv4(m)) {
            /* DeepSeek-V4: its layer sliding-window only (the mean layer
             * less the mean difference plus that kind's), e_proj and
             * h_proj (the 2 h^2) and its own hc_head (vLLM
             * deepseek_v4_mtp.py @ 45292767) */
            double kind = aps_dsv4_mtp_layer_delta_params(m) - v4 / L;
            layer += kind;
            layer_active += kind;
            extra += aps_dsv4_hc_head_params(m);
        }
        double D = (double)m->mtp_layers;
        out->mtp_active = D * (layer_active + extra);
        out->mtp = D * (layer + extra + copies);
    }
}

double aps_padded_vocab(const aps_model *m, const aps_training *t, int64_t tp)
{
    /* 0: the framework's own default -- Megatron-LM (and Megatron-DeepSpeed)
     * pad to 128 x t; PyTorch frameworks do not pad. */
    int64_t div = t->vocab_size_divisible_by;
    if (div == 0)
        div = aps_profile(t)->vocab_divisor;
    int64_t mult = div * tp;
    if (mult < 1)
        mult = 1;
    int64_t padded = (m->vocab_size + mult - 1) / mult * mult;
    return (double)padded;
}

double aps_stage_nonunit_params(const aps_model *m, const aps_layout *lay,
                                int64_t i)
{
    double h = (double)m->hidden_size, t = (double)lay->t;
    double p = 0.0;
    if (i == 0) {
        p += lay->vocab_padded * h / t; /* vocab-parallel embedding */
        if (m->position_embedding == APS_POS_LEARNED)
            p += (double)m->max_position_embeddings * h; /* replicated */
        if (m->embedding_norm)
            p += norm_params(m, h); /* replicated */
    }
    if (i == aps_layout_last_rank(lay)) {
        p += norm_params(m, h) + aps_dsv4_hc_head_params(m); /* V4 hc_head */
        /* Untied: its own output layer.  Tied with p > 1: Megatron keeps a
         * copy of the word embeddings on the last stage (and all-reduces
         * their gradients with the first); tied with p = 1: shared. */
        if (!m->tie_word_embeddings || lay->p > 1)
            p += lay->vocab_padded * h / t;
        if (m->lm_head_bias) /* column-parallel: its vocab shard */
            p += lay->vocab_padded / t;
        /* MTP (multi_token_prediction.py @ d98e8a64): per depth enorm,
         * hnorm, the final norm and eh_proj (column-parallel 2h -> h;
         * its transformer layer is counted with the decoder layers',
         * aps_layout_run_layers); the input embedding is built on this
         * stage too (gpt_model.py:173), beside the output layer, tied or
         * not: the output layer allocates its weight on every stage but
         * the first (gpt_model.py:289-290, skip_weight_param_allocation =
         * pre_process and tied), and a tied model's head then uses the
         * embedding's (language_module.py:352-360) */
        double D = (double)lay->mtp_held; /* one with a repeated layer */
        p += D * (3.0 * norm_params(m, h) + 2.0 * h * h / t +
                  aps_dsv4_hc_head_params(m)); /* V4: its own hc_head */
        if (lay->mtp > 0 && lay->p > 1)
            p += lay->vocab_padded * h / t;
    }
    return p;
}

/* The layers of one MTP depth as the rank's mean layer counts them (an E
 * layer as an MLP block, moe.c adding the MoE difference) on one of tp
 * ranks: *params, and *matmul their whole matrices.  A transformer's is
 * one mean layer; a hybrid model's its mtp_layer_pattern kind by kind. */
static void mtp_depth_params(const aps_model *m, int64_t tp, double *params,
                             double *matmul)
{
    if (!aps_model_is_hybrid(m)) {
        *params = aps_layer_params_tp(m, tp);
        *matmul = aps_layer_matmul_params(m);
        return;
    }
    aps_hybrid_counts w = {0};
    aps_hybrid_mtp_counts(m, 1, &w);
    double attn, mlp, mamba;
    hybrid_kind_params(m, tp, &attn, &mlp, &mamba);
    *params = (double)w.attn * attn + (double)w.mlp * mlp +
              (double)w.mamba * mamba;
    *matmul = (double)w.attn * attn_matmul_params(m) +
              (double)w.mlp * mlp_matmul_params(m) +
              (double)w.mamba * aps_mamba_matmul_params(m);
}

double aps_stage_params(const aps_model *m, const aps_layout *lay, int64_t i)
{
    double p = 0.0, unused;
    int64_t shared = aps_layout_mtp_shared_depths(lay, i);
    if (shared > 0)
        mtp_depth_params(m, lay->t, &p, &unused);
    return (double)aps_layout_run_layers(lay, i) *
               aps_stage_layer_params_tp(m, lay, i) +
           aps_stage_nonunit_params(m, lay, i) - (double)shared * p;
}

double aps_stage_matmul_params(const aps_model *m, const aps_layout *lay,
                               int64_t i)
{
    double unused, mm = 0.0;
    int64_t shared = aps_layout_mtp_shared_depths(lay, i);
    if (shared > 0)
        mtp_depth_params(m, lay->t, &unused, &mm);
    return ((double)aps_layout_run_layers(lay, i) *
                aps_stage_layer_matmul_params(m, lay, i) -
            (double)shared * mm) /
           (double)lay->t;
}

/* The largest of rank i's heterogeneous layers on one of t ranks: its
 * attention block and norm where present, its MLP of its own width and
 * norm (nas.c). */
static double nas_largest_layer(const aps_model *m, const aps_layout *lay,
                                int64_t i)
{
    double t = (double)lay->t, norm = norm_params(m, (double)m->hidden_size);
    double attn = attn_mean(m, t, kind_block_params) + norm, best = 0.0;
    int64_t start[APS_MAX_STAGES], len[APS_MAX_STAGES];
    int64_t n = aps_layout_rank_spans(lay, i, start, len);
    for (int64_t k = 0; k < n; k++)
        for (int64_t l = start[k]; l < start[k] + len[k]; l++) {
            double f = aps_nas_ffn_width(m, l);
            double p = (m->nas_attention_pattern[l] == 'A' ? attn : 0.0) +
                       (f > 0 ? aps_ffn_params(m, f) / t + norm : 0.0);
            best = p > best ? p : best;
        }
    return best;
}

double aps_largest_layer_params(const aps_model *m, const aps_layout *lay,
                                int64_t i)
{
    if (aps_layout_run_layers(lay, i) <= 0)
        return 0.0;
    if (aps_model_has_global_attention(m)) /* the mean layer with the
        * larger attention block */
        return aps_layer_params_tp(m, lay->t) -
               attn_mean(m, (double)lay->t, kind_block_params) +
               attn_max(m, (double)lay->t, kind_block_params);
    if (aps_model_is_nas(m))
        return nas_largest_layer(m, lay, i);
    if (!aps_model_is_hybrid(m) && !aps_model_has_gdn(m))
        return aps_layer_params_tp(m, lay->t);
    aps_hybrid_counts w;
    aps_hybrid_stage_mix(m, lay, i, &w);
    return aps_model_is_hybrid(m) ? hybrid_largest_layer(m, lay->t, &w)
                                  : gdn_largest_layer(m, lay->t, &w);
}

double aps_largest_unit_params(const aps_model *m, const aps_layout *lay,
                               int64_t i, double layer)
{
    double h = (double)m->hidden_size, t = (double)lay->t;
    double unit = layer;
    double vocab = lay->vocab_padded * h / t;
    if (i == 0 && vocab > unit)
        unit = vocab;
    double head = vocab + norm_params(m, h) +
                  (m->lm_head_bias ? lay->vocab_padded / t : 0.0);
    if (i == aps_layout_last_rank(lay) && (!m->tie_word_embeddings || lay->p > 1) &&
        head > unit)
        unit = head;
    return unit;
}
