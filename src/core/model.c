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
        {"norm_eps", m->norm_eps},
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
    if (m->low_freq_factor > 0 && m->high_freq_factor > 0 &&
        !(m->high_freq_factor > m->low_freq_factor)) {
        aps_fmt(err, n, "model.high_freq_factor: must be > low_freq_factor "
                "%g (got %g)", m->low_freq_factor, m->high_freq_factor);
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
    if ((unsigned)m->mlp > APS_MLP_GELU || (unsigned)m->norm > APS_NORM_LAYERNORM ||
        (unsigned)m->position_embedding > APS_POS_ALIBI ||
        (unsigned)m->rope_scaling_type > APS_ROPE_SCALING_YARN) {
        aps_fmt(err, n, "model: enum field out of range");
        return APS_EINVAL;
    }
    return validate_numerics(m, err, n);
}

/** Weights (+ biases) of one norm of width w. */
static double norm_params(const aps_model *m, double w)
{
    return (m->norm == APS_NORM_LAYERNORM && m->norm_bias) ? 2.0 * w : w;
}

double aps_layer_matmul_params(const aps_model *m)
{
    double h = (double)m->hidden_size, a = (double)m->num_attention_heads;
    double k = (double)m->num_query_groups, d = (double)m->head_dim;
    double f = (double)m->ffn_hidden_size;
    double attn = h * a * d + 2.0 * h * k * d + a * d * h;
    double mlp = (m->mlp == APS_MLP_SWIGLU ? 3.0 : 2.0) * h * f;
    return attn + mlp;
}

double aps_regathered_params(const aps_model *m, int64_t tp, double distance)
{
    if (!(distance > 0))
        return 0.0;
    double t = (double)tp;
    double h = (double)m->hidden_size, a = (double)m->num_attention_heads;
    double k = (double)m->num_query_groups, d = (double)m->head_dim;
    double f = (double)m->ffn_hidden_size;
    double w[] = {h * (a * d + 2.0 * k * d) / t, a * d * h / t,
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

double aps_attention_keys(const aps_model *m, double S, bool causal)
{
    if (!causal)
        return S;
    double full = 0.5 * S;
    double w = (double)m->sliding_window;
    if (w <= 0 || w >= S)
        return full;
    double L = (double)m->num_layers;
    double local = m->sliding_window_layers > 0
                       ? (double)m->sliding_window_layers : L;
    /* query i attends min(i, w) keys: (S w - w^2 / 2) / S on average */
    double windowed = w - 0.5 * w * w / S;
    return (local * windowed + (L - local) * full) / L;
}

/** Parameters of one layer split over tp ranks (tp = 1: the whole layer). */
double aps_layer_params_tp(const aps_model *m, int64_t tp)
{
    double t = (double)tp;
    double h = (double)m->hidden_size, a = (double)m->num_attention_heads;
    double k = (double)m->num_query_groups, d = (double)m->head_dim;
    double f = (double)m->ffn_hidden_size;
    double p = aps_layer_matmul_params(m) / t;
    if (m->qkv_bias) /* column parallel: split */
        p += (a * d + 2.0 * k * d) / t;
    if (m->attn_out_bias) /* row parallel: replicated */
        p += h;
    if (m->mlp_bias) /* fc1 (and gate) column parallel, fc2 row parallel */
        p += (m->mlp == APS_MLP_SWIGLU ? 2.0 * f : f) / t + h;
    if (m->qk_norm) /* one head_dim-wide norm each for Q and K, replicated */
        p += 2.0 * d;
    p += (double)m->norms_per_layer * norm_params(m, h);
    return p;
}

void aps_model_param_counts(const aps_model *m, aps_param_counts *out)
{
    double h = (double)m->hidden_size, V = (double)m->vocab_size;
    out->embedding = V * h;
    if (m->position_embedding == APS_POS_LEARNED)
        out->embedding += (double)m->max_position_embeddings * h;
    out->per_layer = aps_layer_params_tp(m, 1);
    out->layers = (double)m->num_layers * out->per_layer;
    out->final_norm = norm_params(m, h);
    out->output_layer = m->tie_word_embeddings ? 0.0 : V * h;
    out->total = out->embedding + out->layers + out->final_norm +
                 out->output_layer;
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

double aps_stage_params(const aps_model *m, const aps_layout *lay, int64_t i)
{
    double h = (double)m->hidden_size, t = (double)lay->t;
    double p = (double)lay->layers[i] * aps_layer_params_tp(m, lay->t);
    if (i == 0) {
        p += lay->vocab_padded * h / t; /* vocab-parallel embedding */
        if (m->position_embedding == APS_POS_LEARNED)
            p += (double)m->max_position_embeddings * h; /* replicated */
    }
    if (i == lay->p - 1) {
        p += norm_params(m, h);
        /* Untied: its own output layer.  Tied with p > 1: Megatron keeps a
         * copy of the word embeddings on the last stage (and all-reduces
         * their gradients with the first); tied with p = 1: shared. */
        if (!m->tie_word_embeddings || lay->p > 1)
            p += lay->vocab_padded * h / t;
    }
    return p;
}

double aps_largest_unit_params(const aps_model *m, const aps_layout *lay,
                               int64_t i)
{
    double h = (double)m->hidden_size, t = (double)lay->t;
    double unit = lay->layers[i] > 0 ? aps_layer_params_tp(m, lay->t) : 0.0;
    double vocab = lay->vocab_padded * h / t;
    if (i == 0 && vocab > unit)
        unit = vocab;
    if (i == lay->p - 1 && (!m->tie_word_embeddings || lay->p > 1) &&
        vocab + norm_params(m, h) > unit)
        unit = vocab + norm_params(m, h);
    return unit;
}
