/*
 * nas.c -- heterogeneous layers (Llama-Nemotron NAS): the per-layer
 * attention and MLP patterns, their mean layer, exact parameter sums.
 *
 * Megatron-Core megatron/core/transformer/heterogeneous/
 * heterogeneous_config.py and models/gpt/heterogeneous/
 * heterogeneous_layer_specs.py @ d98e8a64 (the HF config's block_configs,
 * --heterogeneous-layers-config-path): each layer's attention is GQA of
 * num_attention_heads / n_heads_in_group query groups (validate_model_
 * config_args_from_heterogeneous_config asserts one value for every
 * layer), a no-op (IdentityOp, no input norm, no residual add) or a
 * linear replacement; each layer's MLP a SwiGLU of its own width
 * (ffn_mult_to_intermediate_size: int(2 ffn_mult h / 3) rounded up to a
 * multiple of 256), a no-op or a linear replacement.  apsearch reads the
 * attention and the MLP as patterns (nas_attention_pattern A / -,
 * nas_ffn_pattern a letter per width of nas_ffn_widths / -); linear
 * replacements are refused at import.
 *
 * Every per-layer term prices a rank's mean layer (hybrid.c): attn_share
 * the share of its layers with attention, mlp_share the sum of its MLP
 * widths over layers x ffn_hidden_size (the widest), so that the MLP's
 * parameters, FLOPs and saved bytes, linear in the width, sum exactly;
 * its GEMM times are the widest MLP's scaled by width (not each width's
 * own tile and wave quantization); blocks the present blocks (each its
 * norm and residual) a layer.
 */
#include <stdlib.h>
#include <string.h>
#include "internal.h"

/** Widest accepted MLP, 2^24 (model.c's bound on every width). */
#define APS_NAS_MAX_WIDTH (INT64_C(1) << 24)

/** Length of a NUL-terminated pattern of at most APS_MAX_HYBRID_LAYERS. */
static int64_t plen(const char *p)
{
    const char *end = memchr(p, '\0', APS_MAX_HYBRID_LAYERS + 1);
    return end ? (int64_t)(end - p) : APS_MAX_HYBRID_LAYERS + 1;
}

bool aps_model_is_nas(const aps_model *m)
{
    return m->nas_attention_pattern[0] != '\0' || m->nas_ffn_pattern[0] != '\0';
}

/** The widths of nas_ffn_widths into w (at most APS_NAS_MAX_WIDTHS);
 *  returns how many, or -1 when the list is not positive integers
 *  separated by commas. */
static int parse_widths(const aps_model *m, int64_t w[APS_NAS_MAX_WIDTHS])
{
    const char *p = m->nas_ffn_widths;
    int n = 0;
    while (*p != '\0') {
        if (*p < '0' || *p > '9') /* digits only: no sign, space, empty */
            return -1;
        char *end;
        long long v = strtoll(p, &end, 10);
        if (v < 1 || v > APS_NAS_MAX_WIDTH || n == APS_NAS_MAX_WIDTHS ||
            (*end != ',' && *end != '\0') || (*end == ',' && end[1] == '\0'))
            return -1;
        w[n++] = (int64_t)v;
        p = *end == ',' ? end + 1 : end;
    }
    return n;
}

double aps_nas_ffn_width(const aps_model *m, int64_t layer)
{
    int64_t w[APS_NAS_MAX_WIDTHS];
    char c = m->nas_ffn_pattern[layer];
    int n = parse_widths(m, w);
    return c >= 'a' && c - 'a' < n ? (double)w[c - 'a'] : 0.0;
}

void aps_nas_count(const aps_model *m, int64_t from, int64_t n,
                   aps_hybrid_counts *out, double *width_sum)
{
    int64_t w[APS_NAS_MAX_WIDTHS];
    int nw = parse_widths(m, w);
    for (int64_t l = from; l < from + n; l++) {
        out->attn += m->nas_attention_pattern[l] == 'A';
        char c = m->nas_ffn_pattern[l];
        if (c >= 'a' && c - 'a' < nw) {
            out->mlp += 1;
            *width_sum += (double)w[c - 'a'];
        }
    }
}

void aps_nas_set_shares(const aps_model *m, int64_t layers, double width_sum,
                        aps_hybrid_counts *out)
{
    double L = (double)layers;
    out->attn_share = L > 0 ? (double)out->attn / L : 0.0;
    out->mlp_share = L > 0 ? width_sum / (L * (double)m->ffn_hidden_size) : 0.0;
    out->blocks = L > 0 ? (double)(out->attn + out->mlp) / L : 0.0;
}

void aps_nas_mix(const aps_model *m, aps_hybrid_counts *out)
{
    double sum = 0.0;
    *out = (aps_hybrid_counts){0};
    aps_nas_count(m, 0, m->num_layers, out, &sum);
    aps_nas_set_shares(m, m->num_layers, sum, out);
}

double aps_nas_mlp_blocks(const aps_hybrid_counts *w)
{
    return w->blocks - w->attn_share; /* MLP blocks a layer, not widths */
}

aps_status aps_nas_validate(const aps_model *m, char *err, size_t n)
{
    if (!aps_model_is_nas(m))
        return APS_OK;
    int64_t w[APS_NAS_MAX_WIDTHS], widest = 0;
    int nw = parse_widths(m, w);
    if (nw < 1) {
        aps_fmt(err, n, "model.nas_ffn_widths: expected up to %d positive "
                "integers separated by commas", APS_NAS_MAX_WIDTHS);
        return APS_EINVAL;
    }
    for (int k = 0; k < nw; k++)
        widest = w[k] > widest ? w[k] : widest;
    struct { const char *f, *p; } pat[] = {
        {"nas_attention_pattern", m->nas_attention_pattern},
        {"nas_ffn_pattern", m->nas_ffn_pattern},
    };
    for (int i = 0; i < 2; i++) {
        if (plen(pat[i].p) != m->num_layers) {
            aps_fmt(err, n, "model.%s: needs one letter per layer, num_layers "
                    "= %lld (got %lld)", pat[i].f, (long long)m->num_layers,
                    (long long)plen(pat[i].p));
            return APS_EINVAL;
        }
        for (int64_t l = 0; l < m->num_layers; l++) {
            char c = pat[i].p[l];
            bool ok = c == '-' || (i == 0 ? c == 'A' : (c >= 'a' && c - 'a' < nw));
            if (!ok) {
                aps_fmt(err, n, "model.%s: letter %lld is '%c', expected %s",
                        pat[i].f, (long long)l + 1, c,
                        i == 0 ? "A (attention) or - (none)"
                               : "a letter naming a width of nas_ffn_widths "
                                 "or - (none)");
                return APS_EINVAL;
            }
        }
    }
    if (!memchr(m->nas_attention_pattern, 'A', (size_t)m->num_layers)) {
        aps_fmt(err, n, "model.nas_attention_pattern: no layer has attention "
                "(Megatron reads the query groups of the attention layers)");
        return APS_EINVAL;
    }
    if (m->mlp != APS_MLP_SWIGLU || m->glu_activation != APS_GLU_SILU ||
        m->mlp_bias || m->qkv_bias || m->attn_out_bias) {
        aps_fmt(err, n, "model.nas_ffn_pattern: heterogeneous layers are "
                "SwiGLU without biases (Megatron's heterogeneous config "
                "asserts SiLU; biases are not modelled)");
        return APS_EINVAL;
    }
    if (m->ffn_hidden_size != widest) {
        aps_fmt(err, n, "model.ffn_hidden_size: with nas_ffn_widths it is the "
                "widest, %lld (got %lld)", (long long)widest,
                (long long)m->ffn_hidden_size);
        return APS_EINVAL;
    }
    if (aps_model_is_moe(m) || aps_model_is_hybrid(m) || aps_model_has_gdn(m) ||
        m->sliding_window > 0 || m->mtp_layers > 0 ||
        aps_model_has_global_attention(m)) {
        aps_fmt(err, n, "model.nas_attention_pattern: heterogeneous layers "
                "with experts, MLA, hybrid or linear-attention layers, local "
                "attention or MTP layers are not modelled");
        return APS_EINVAL;
    }
    return APS_OK;
}

int64_t aps_nas_width_not_divisible(const aps_model *m, int64_t tp)
{
    int64_t w[APS_NAS_MAX_WIDTHS];
    int nw = aps_model_is_nas(m) ? parse_widths(m, w) : 0;
    for (int k = 0; k < nw; k++)
        if (w[k] % tp != 0)
            return w[k];
    return 0;
}

const char *aps_nas_refusal(const aps_training *t, const aps_strategy *s,
                            aps_reason *code)
{
    *code = APS_REASON_NOT_MODELLED;
    if (t->framework != APS_FW_MEGATRON)
        return "heterogeneous layers (Llama-Nemotron NAS) are priced for "
               "Megatron-LM only (--heterogeneous-layers-config-path)";
    /* gpt_builders.py:52 (and training/models/gpt.py:94) call
     * get_gpt_heterogeneous_layer_spec without vp_stage, whose
     * get_transformer_layer_offset asserts it with virtual stages */
    *code = APS_REASON_FRAMEWORK_UNSUPPORTED;
    if (s->vpp_degree > 1)
        return "Megatron-LM builds heterogeneous layers without virtual "
               "pipeline stages (gpt_builders.py calls "
               "get_gpt_heterogeneous_layer_spec without vp_stage, which "
               "get_transformer_layer_offset asserts)";
    return NULL;
}

double aps_nas_layers_params(const aps_model *m, double attn_block,
                             double norm)
{
    /* per layer: the attention block and its norm where present, the
     * MLP of its width (SwiGLU, no biases: validate) and its norm */
    double p = 0.0;
    for (int64_t l = 0; l < m->num_layers; l++) {
        if (m->nas_attention_pattern[l] == 'A')
            p += attn_block + norm;
        double f = aps_nas_ffn_width(m, l);
        if (f > 0)
            p += aps_ffn_params(m, f) + norm;
    }
    return p;
}
