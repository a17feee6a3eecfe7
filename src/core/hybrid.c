/*
 * hybrid.c -- hybrid Mamba-2 models (Nemotron-H): the layer pattern and
 * the Mamba-2 layer's parameters, FLOPs, saved bytes and kernels.
 *
 * A hybrid model is a string of single-mixer layers (Megatron-Core
 * megatron/core/models/hybrid/hybrid_layer_allocation.py @ d98e8a64,
 * Symbols: M Mamba, * attention, - MLP, E MoE; transformers NemotronHBlock @
 * 008d9e95: one RMSNorm, then the mixer, then the residual add).  The
 * pattern is resolved once into counts (aps_hybrid_mix); every per-layer
 * estimate of apsearch prices "one layer" as attention + MLP, so for a
 * hybrid model a layer is priced as the pattern's mean layer: attn_share
 * of an attention block, mlp_share of an MLP block, mamba_share of a
 * Mamba-2 block (transformers: 1, 1, 0).  Over pipeline stages each
 * rank's mean layer is that of its own layers (aps_hybrid_stage_mix), so
 * a rank's sum over its layers is exact.
 *
 * An MoE layer 'E' is one norm and one MoE block (hybrid_layer_specs.py
 * @ d98e8a64: moe_layer, a TransformerLayer with IdentityOp attention and
 * the MoE MLP; transformers NemotronHBlock block_type "moe": NemotronHMOE).
 * It counts here as an MLP block (mlp_share) and is an MoE layer
 * (aps_model_is_moe_layer: pattern[i] == 'E'), so moe.c swaps its dense
 * FFN for the MoE block exactly as on a transformer's MoE layer: the sum
 * over the pattern is n_attn attention + n_mlp MLP + n_moe MoE + n_mamba
 * Mamba-2 blocks.
 *
 * A parallel layer 'P' (Falcon-H1; Megatron-Bridge 067f987df
 * src/megatron/bridge/models/falcon_h1/modeling_falconh1/falconh1_layer.py
 * FalconH1Layer, mamba_hybrid_layer_allocation.py Symbols.PARALLEL;
 * transformers FalconH1DecoderLayer) is one norm, then a Mamba-2 and an
 * attention mixer side by side on its output, their sum added to the
 * residual, then a second norm and an MLP with its residual add: it counts
 * as one layer of each kind (mamba, attn, mlp) and two blocks, so the
 * mean layer of a pattern holds its share of each (set_shares) and two
 * norms (model.c).  Side by side or one after the other, the GPU runs the
 * same kernels; each branch's input is its own tensor (the multipliers
 * make ssm_in_multiplier x and attention_in_multiplier x), as the
 * separate layers' inputs are.
 *
 * Multi-token prediction (Nemotron 3 Super): each of the
 * training.mtp_num_layers depths is an enorm, an hnorm, eh_proj (2h -> h)
 * and a HybridStack of mtp_layer_pattern's layers, then its own final
 * norm (Megatron-LM megatron/core/transformer/multi_token_prediction.py
 * @ d98e8a64 l.1157-1214; models/hybrid/hybrid_model.py l.295-307 builds
 * the block with mtp_layer_pattern where l.220-232 puts it, "on the final
 * pipeline stage").  Those
 * layers run on the rank holding the last model chunk after its decoder
 * layers (aps_layout_mtp_layers: depths x the pattern's length), so that
 * rank's mix counts them with its own (aps_hybrid_stage_mix) and a
 * hybrid model with MTP is priced rank by rank (aps_hybrid_split).
 *
 * Mamba-2 layer, d = nh P (d_inner), G N the grouped B / C width, nh the
 * heads, K the conv width (Megatron-Core megatron/core/ssm/mamba_mixer.py
 * @ d98e8a64 MambaMixer.__init__; transformers NemotronHMamba2Mixer):
 *   in_proj   h -> 2 d + 2 G N + nh   ([z, x, B, C, dt]; column parallel)
 *   conv1d    depthwise over x, B, C: conv_dim = d + 2 G N, K weights and
 *             a bias each (split over TP with the heads and groups)
 *   dt_bias, A_log, D: nh each (split over TP)
 *   norm      gated RMSNorm over d (split over TP; none with
 *             mamba_no_rmsnorm, MambaMixer rmsnorm=False)
 *   out_proj  d -> h                  (row parallel)
 *   plus the layer's pre-norm, h (fused into in_proj in Megatron's
 *   TELayerNormColumnParallelLinear).
 */
#include <string.h>
#include "internal.h"

/** Default conv width (transformers NemotronHConfig.conv_kernel = 4;
 *  Megatron MambaMixer d_conv = 4). */
#define APS_MAMBA_CONV_KERNEL 4
/** SSD scan FLOPs per token, per channel of d and per state element:
 *  Megatron-LM megatron/training/training.py @ d98e8a64
 *  num_floating_point_operations, mamba_layer_flops: 7 T d N ("scan"). */
#define APS_MAMBA_SCAN_FLOPS 7.0
/** Forward kernels of a Mamba-2 layer from Python (MambaLayer.forward and
 *  MambaMixer.forward @ d98e8a64 with mamba_ssm's
 *  mamba_split_conv1d_scan_combined): the fused norm + in_proj GEMM (2),
 *  causal conv1d (1), the SSD kernels _chunk_cumsum, _chunk_state,
 *  _state_passing, _bmm_chunk, _chunk_scan (5), the gated RMSNorm (1),
 *  out_proj (1), bias-dropout-add (1). */
#define APS_HK_MAMBA 11.0

/** Adds the kinds of pattern layers from .. from + n - 1 to out's counts
 *  (an E layer is an MLP block and an MoE layer, hybrid.c file comment). */
static void count_kinds(const char *pattern, int64_t from, int64_t n,
                        aps_hybrid_counts *out)
{
    for (const char *c = pattern + from; c < pattern + from + n; c++) {
        out->mamba += *c == 'M';
        out->attn += *c == '*';
        out->mlp += *c == '-' || *c == 'E';
        out->moe += *c == 'E';
        if (*c == 'P') { /* a Mamba-2 and an attention mixer, then an MLP */
            out->mamba++;
            out->attn++;
            out->mlp++;
            out->parallel++;
        }
    }
}

/** The shares of the mean layer of the layers counted in out: L layers
 *  (a P layer counted once, not in each of its three kinds), each one
 *  block but a P layer two (its mixers' and its MLP's). */
static void set_shares(aps_hybrid_counts *out)
{
    double L = (double)(out->mamba + out->attn + out->mlp -
                        2 * out->parallel);
    out->attn_share = L > 0 ? (double)out->attn / L : 0.0;
    out->mlp_share = L > 0 ? (double)out->mlp / L : 0.0;
    out->mamba_share = L > 0 ? (double)out->mamba / L : 0.0;
    out->blocks = L > 0 ? (L + (double)out->parallel) / L : 1.0;
    out->parallel_share = L > 0 ? (double)out->parallel / L : 0.0;
}

/** Length of a NUL-terminated pattern of at most APS_MAX_HYBRID_LAYERS. */
static int64_t pattern_len(const char *p)
{
    const char *end = memchr(p, '\0', APS_MAX_HYBRID_LAYERS + 1);
    return end ? (int64_t)(end - p) : APS_MAX_HYBRID_LAYERS + 1;
}

int64_t aps_hybrid_mtp_depth_layers(const aps_model *m)
{
    return aps_model_is_hybrid(m) ? pattern_len(m->mtp_layer_pattern) : 1;
}

void aps_hybrid_mtp_counts(const aps_model *m, int64_t depths,
                           aps_hybrid_counts *out)
{
    int64_t n = pattern_len(m->mtp_layer_pattern);
    for (int64_t d = 0; d < depths; d++)
        count_kinds(m->mtp_layer_pattern, 0, n, out);
}

void aps_hybrid_mix(const aps_model *m, aps_hybrid_counts *out)
{
    *out = (aps_hybrid_counts){0};
    if (aps_model_is_nas(m)) {
        aps_nas_mix(m, out);
        return;
    }
    if (!aps_model_is_hybrid(m)) {
        out->attn_share = out->mlp_share = 1.0;
        out->blocks = 2.0;
        if (aps_model_has_gdn(m))
            aps_gdn_mix(m, out);
        return;
    }
    count_kinds(m->hybrid_layer_pattern, 0, m->num_layers, out);
    set_shares(out);
}

void aps_hybrid_stage_mix(const aps_model *m, const aps_layout *lay,
                          int64_t i, aps_hybrid_counts *out)
{
    if (!aps_hybrid_split(m, lay)) {
        aps_hybrid_mix(m, out);
        return;
    }
    int64_t start[APS_MAX_STAGES], len[APS_MAX_STAGES];
    int64_t n = aps_layout_rank_spans(lay, i, start, len);
    aps_hybrid_spans_mix(m, start, len, n, aps_layout_mtp_depths(lay, i), out);
}

void aps_hybrid_spans_mix(const aps_model *m, const int64_t *start,
                          const int64_t *len, int64_t n, int64_t mtp_depths,
                          aps_hybrid_counts *out)
{
    if (aps_model_is_nas(m)) { /* the rank's own layers' blocks */
        double sum = 0.0, layers = 0.0;
        *out = (aps_hybrid_counts){0};
        for (int64_t k = 0; k < n; k++) {
            aps_nas_count(m, start[k], len[k], out, &sum);
            layers += (double)len[k];
        }
        aps_nas_set_shares(m, (int64_t)layers, sum, out);
        return;
    }
    if (aps_model_has_gdn(m)) { /* a transformer layer's MLP and blocks */
        aps_hybrid_mix(m, out);
        out->attn = out->gdn = 0;
        for (int64_t k = 0; k < n; k++)
            aps_gdn_count(m, start[k], len[k], out);
        aps_gdn_set_shares(out);
        return;
    }
    *out = (aps_hybrid_counts){0};
    for (int64_t k = 0; k < n; k++)
        count_kinds(m->hybrid_layer_pattern, start[k], len[k], out);
    aps_hybrid_mtp_counts(m, mtp_depths, out);
    set_shares(out);
}

const aps_layer_cost *aps_hybrid_stage_cost(const aps_model *m,
                                            const aps_cluster *c,
                                            const aps_training *t,
                                            const aps_strategy *s,
                                            const aps_layout *lay,
                                            const aps_layer_cost *lc,
                                            int64_t i, aps_layer_cost *buf)
{
    aps_hybrid_counts w;
    aps_hybrid_stage_mix(m, lay, i, &w);
    aps_mix_layer_cost(m, c, t, s, &w, &lc->moe, buf);
    return buf;
}

void aps_mix_layer_cost(const aps_model *m, const aps_cluster *c,
                        const aps_training *t, const aps_strategy *s,
                        const aps_hybrid_counts *w, const aps_moe_cost *moe,
                        aps_layer_cost *buf)
{
    buf->moe = *moe; /* per MoE layer: the same on every stage */
    aps_layer_activations(m, t, s, w, buf);
    aps_layer_times(m, c, t, s, w, buf);
}

/** d_inner = nh P. */
static double d_inner(const aps_model *m)
{
    return (double)m->mamba_num_heads * (double)m->mamba_head_dim;
}

/** G N: the width of B (and of C). */
static double bc_width(const aps_model *m)
{
    return (double)m->mamba_num_groups * (double)m->mamba_state_dim;
}

/** The conv width K (0: the default). */
static double conv_kernel(const aps_model *m)
{
    return m->mamba_conv_kernel > 0 ? (double)m->mamba_conv_kernel
                                    : (double)APS_MAMBA_CONV_KERNEL;
}

double aps_mamba_in_proj_width(const aps_model *m)
{
    return 2.0 * d_inner(m) + 2.0 * bc_width(m) +
           (double)m->mamba_num_heads;
}

double aps_mamba_matmul_params(const aps_model *m)
{
    double h = (double)m->hidden_size;
    return h * aps_mamba_in_proj_width(m) + d_inner(m) * h;
}

double aps_mamba_params_tp(const aps_model *m, int64_t tp)
{
    double t = (double)tp, d = d_inner(m), nh = (double)m->mamba_num_heads;
    double conv_dim = d + 2.0 * bc_width(m);
    double conv = conv_dim * conv_kernel(m) + conv_dim; /* weight, bias */
    double norm = m->mamba_no_rmsnorm ? 0.0 : d; /* the gated RMSNorm */
    return (aps_mamba_matmul_params(m) + conv + 3.0 * nh + norm) / t;
}

double aps_mamba_flops(const aps_model *m, double T)
{
    double h = (double)m->hidden_size, d = d_inner(m);
    double N = (double)m->mamba_state_dim;
    double conv_dim = d + 2.0 * bc_width(m);
    return 2.0 * T * h * aps_mamba_in_proj_width(m)   /* in_proj */
           + 2.0 * T * conv_dim * conv_kernel(m)       /* conv1d */
           + APS_MAMBA_SCAN_FLOPS * T * d * N          /* SSD scan */
           + 2.0 * T * d * h;                          /* out_proj */
}

double aps_mamba_scan_flops(const aps_model *m, double T)
{
    return APS_MAMBA_SCAN_FLOPS * T * d_inner(m) *
           (double)m->mamba_state_dim;
}

double aps_mamba_conv_dim(const aps_model *m)
{
    return d_inner(m) + 2.0 * bc_width(m);
}

double aps_mamba_saved_bytes(const aps_model *m, const aps_training *t,
                             double T, double tp)
{
    double A = APS_ACT_BYTES, d = d_inner(m);
    return T * (A * aps_mamba_in_proj_width(m) /* zxBCdt */
                + 2.0 * A * d                   /* out_x; y, the norm's input */
                + aps_gemm_input_bytes(t) * d)  /* out_proj input */
           / tp;
}

double aps_mamba_kernels(void)
{
    return APS_HK_MAMBA;
}

/** One Mamba-2 setting: in [1, max]. */
static aps_status check_mamba(const char *field, int64_t v, int64_t max,
                              char *err, size_t n)
{
    if (v < 1 || v > max) {
        aps_fmt(err, n, "model.%s: must be in [1, %lld] with a "
                "hybrid_layer_pattern (got %lld)", field, (long long)max,
                (long long)v);
        return APS_EINVAL;
    }
    return APS_OK;
}

/** The pattern's characters and length. */
static aps_status validate_pattern(const aps_model *m, char *err, size_t n)
{
    size_t len = 0;
    while (len < sizeof m->hybrid_layer_pattern &&
           m->hybrid_layer_pattern[len] != '\0')
        len++;
    for (size_t i = 0; i < len; i++) {
        char c = m->hybrid_layer_pattern[i];
        if (c == '|') {
            aps_fmt(err, n, "model.hybrid_layer_pattern: layer %zu is '|', "
                    "Megatron's pipeline separator: give the layers only "
                    "and the split as the strategy's stage_partition", i);
            return APS_EINVAL;
        }
        if (c != 'M' && c != '*' && c != '-' && c != 'E' && c != 'P') {
            aps_fmt(err, n, "model.hybrid_layer_pattern: layer %zu is '%c'; "
                    "apsearch models M (Mamba-2), * (attention), - (MLP), "
                    "E (MoE) and P (parallel Mamba-2 and attention, then an "
                    "MLP) layers", i, (c >= ' ' && c < 127) ? c : '?');
            return APS_EINVAL;
        }
    }
    if ((int64_t)len != m->num_layers) {
        aps_fmt(err, n, "model.hybrid_layer_pattern: %zu layers, but "
                "num_layers = %lld", len, (long long)m->num_layers);
        return APS_EINVAL;
    }
    return APS_OK;
}

/** The MTP depth's layers: the pattern's symbols, required with
 *  mtp_layers (Megatron-Bridge nemotron_h_bridge.py @ 067f987df
 *  _hf_mtp_config: "An HF config with num_nextn_predict_layers > 0 must
 *  define mtp_hybrid_override_pattern"), E only with experts. */
static aps_status validate_mtp_pattern(const aps_model *m, char *err,
                                       size_t n)
{
    const char *p = m->mtp_layer_pattern;
    int64_t len = pattern_len(p);
    if (len > APS_MAX_HYBRID_LAYERS) {
        aps_fmt(err, n, "model.mtp_layer_pattern: more than %d layers",
                APS_MAX_HYBRID_LAYERS);
        return APS_EINVAL;
    }
    for (int64_t i = 0; i < len; i++)
        if (strchr("M*-E", p[i]) == NULL ||
            (p[i] == 'E' && m->num_experts <= 0)) {
            aps_fmt(err, n, "model.mtp_layer_pattern: layer %lld is '%c'; "
                    "apsearch models M, *, - and E (with num_experts) "
                    "layers", (long long)i,
                    (p[i] >= ' ' && p[i] < 127) ? p[i] : '?');
            return APS_EINVAL;
        }
    if (m->mtp_layers > 0 && len == 0) {
        aps_fmt(err, n, "model.mtp_layers: %lld multi-token-prediction "
                "layers of a hybrid model need model.mtp_layer_pattern (HF "
                "mtp_hybrid_override_pattern)", (long long)m->mtp_layers);
        return APS_EINVAL;
    }
    return APS_OK;
}

/** The pattern's E layers are the MoE layers: experts iff an E, and
 *  none of the transformer's MoE layer placement fields. */
static aps_status validate_moe_layers(const aps_model *m, char *err, size_t n)
{
    bool has_e = strchr(m->hybrid_layer_pattern, 'E') != NULL;
    if (has_e != (m->num_experts > 0)) {
        aps_fmt(err, n, "model.hybrid_layer_pattern: %s", has_e
                ? "E (MoE) layers without num_experts"
                : "num_experts given without E (MoE) layers");
        return APS_EINVAL;
    }
    if (m->moe_first_dense_layers != 0 || m->moe_layer_freq > 1 ||
        m->moe_layer_phase != 0 || m->moe_dense_layer_count != 0) {
        aps_fmt(err, n, "model.hybrid_layer_pattern: its E layers place the "
                "experts; moe_first_dense_layers, moe_layer_freq, "
                "moe_layer_phase and moe_dense_layers must be left out");
        return APS_EINVAL;
    }
    return APS_OK;
}

aps_status aps_hybrid_validate(const aps_model *m, char *err, size_t n)
{
    /* required: the widths; optional (0: MambaMixer's default): the conv
     * width and the chunk */
    struct { const char *f; int64_t v; bool required; } f[] = {
        {"mamba_num_heads", m->mamba_num_heads, true},
        {"mamba_head_dim", m->mamba_head_dim, true},
        {"mamba_state_dim", m->mamba_state_dim, true},
        {"mamba_num_groups", m->mamba_num_groups, true},
        {"mamba_conv_kernel", m->mamba_conv_kernel, false},
        {"mamba_chunk_size", m->mamba_chunk_size, false},
    };
    size_t nf = sizeof f / sizeof f[0];
    if (!aps_model_is_hybrid(m) && m->mtp_layer_pattern[0] != '\0') {
        aps_fmt(err, n, "model.mtp_layer_pattern: given without a "
                "hybrid_layer_pattern (a transformer's MTP layer is of its "
                "last layer's type)");
        return APS_EINVAL;
    }
    if (!aps_model_is_hybrid(m) && m->mamba_no_rmsnorm) {
        aps_fmt(err, n, "model.mamba_no_rmsnorm: given without a "
                "hybrid_layer_pattern");
        return APS_EINVAL;
    }
    if (!aps_model_is_hybrid(m)) {
        for (size_t i = 0; i < nf; i++)
            if (f[i].v != 0) {
                aps_fmt(err, n, "model.%s: %lld given without a "
                        "hybrid_layer_pattern", f[i].f, (long long)f[i].v);
                return APS_EINVAL;
            }
        return APS_OK;
    }
    aps_status st = validate_pattern(m, err, n);
    for (size_t i = 0; i < nf && st == APS_OK; i++)
        if (f[i].v != 0 || f[i].required)
            st = check_mamba(f[i].f, f[i].v, APS_MAX_HYBRID_WIDTH, err, n);
    if (st != APS_OK)
        return st;
    if (m->mamba_num_heads % m->mamba_num_groups != 0) {
        aps_fmt(err, n, "model.mamba_num_groups: %lld does not divide "
                "mamba_num_heads %lld (Megatron MambaMixer)",
                (long long)m->mamba_num_groups, (long long)m->mamba_num_heads);
        return APS_EINVAL;
    }
    if (m->norms_per_layer != 1) {
        aps_fmt(err, n, "model.norms_per_layer: %lld; a hybrid model takes 1: "
                "its layers carry their norms, one per block (two in a P "
                "layer)", (long long)m->norms_per_layer);
        return APS_EINVAL;
    }
    if (m->qkv_bias || m->attn_out_bias || m->mlp_bias ||
        m->attention_sinks || m->sliding_window > 0 ||
        m->attention_chunk_size > 0) {
        aps_fmt(err, n, "model.hybrid_layer_pattern: a hybrid model with "
                "linear biases, attention sinks or local attention is not "
                "modelled");
        return APS_EINVAL;
    }
    if (m->kv_lora_rank > 0) {
        aps_fmt(err, n, "model.hybrid_layer_pattern: a hybrid model with "
                "MLA layers is not modelled");
        return APS_EINVAL;
    }
    st = validate_mtp_pattern(m, err, n);
    return st == APS_OK ? validate_moe_layers(m, err, n) : st;
}

/** What Megatron-Bridge's Falcon-H1 model, the one framework that builds
 *  parallel layers P, cannot run (067f987df src/megatron/bridge/models/
 *  falcon_h1): virtual pipeline stages (falconh1_provider.py:126,
 *  falconh1_block.py:244), a split other than num_layers / pp layers per
 *  rank (falconh1_block.py:242-249 _select_layers_for_pipeline_parallel
 *  builds num_layers // pp on each rank: the rest are never built, and a
 *  split of its own is not read), activation recompute
 *  (FalconH1Stack.forward checkpoints nothing), Megatron-FSDP (below),
 *  CUDA graphs of layers or modules (FalconH1Layer is a plain
 *  MegatronModule), MoE layers (its allocation's Symbols.VALID is M, *,
 *  -, P), multi-token prediction and activation offloading (no file of
 *  models/falcon_h1 has either); NULL when it runs. */
static const char *parallel_refusal(const aps_model *m, const aps_training *t,
                                    const aps_strategy *s)
{
    /* num_layers / pp on every rank: the default split, or a
     * stage_partition that writes it out (a result.json's record) */
    int64_t per_rank = m->num_layers / s->pp_degree;
    bool even = s->pipeline_split == APS_SPLIT_EVEN && !s->balance_stages &&
                m->num_layers % s->pp_degree == 0;
    for (int i = 0; i < APS_MAX_STAGES; i++)
        even = even && s->layer_offset[i] == 0 &&
               (s->stage_partition[i] == 0 ||
                (i < s->pp_degree && s->stage_partition[i] == per_rank));
    aps_cuda_graph_scope g = aps_cuda_graph_effective_scope(t, s);
    if (strchr(m->hybrid_layer_pattern, 'E'))
        return "parallel layers P (Falcon-H1) beside MoE layers E: "
               "Megatron-Bridge's FalconH1 layer allocation accepts M, *, - "
               "and P only (mamba_hybrid_layer_allocation.py:98)";
    if (t->mtp_num_layers > 0)
        return "parallel layers P (Falcon-H1): Megatron-Bridge's FalconH1 "
               "model has no multi-token prediction (falconh1_model.py)";
    if (t->activation_offload_layers > 0)
        return "parallel layers P (Falcon-H1): Megatron-Bridge's FalconH1 "
               "stack offloads no activations (FalconH1Stack.forward)";
    if (s->vpp_degree > 1)
        return "parallel layers P (Falcon-H1): Megatron-Bridge's FalconH1 "
               "model refuses virtual pipeline stages (falconh1_provider.py:"
               "126)";
    if (!even)
        return "parallel layers P (Falcon-H1): Megatron-Bridge's FalconH1 "
               "stack builds num_layers / pp_degree layers on every rank "
               "(falconh1_block.py:242); another split is not built";
    if (s->layer_recompute != APS_RECOMPUTE_NONE)
        return "parallel layers P (Falcon-H1): Megatron-Bridge's FalconH1 "
               "stack recomputes no activations (FalconH1Stack.forward)";
    /* Megatron-FSDP's units are TransformerLayer, MoETransformerLayer and
     * MambaLayer by default (Megatron-LM d98e8a64 megatron/core/
     * distributed/fsdp/mcore_fsdp_adapter.py:171; Megatron-Bridge sets no
     * other): a FalconH1Layer's parameters fall to the root unit, gathered
     * for the whole model at once, which the per-layer FSDP terms do not
     * price */
    if (s->fsdp_degree > 1)
        return "parallel layers P (Falcon-H1): Megatron-FSDP shards by "
               "TransformerLayer, MoETransformerLayer and MambaLayer units "
               "(mcore_fsdp_adapter.py:171); a FalconH1Layer is none, so "
               "its parameters would be gathered with the whole model";
    if (g != APS_CG_NONE && g != APS_CG_FULL_ITERATION)
        return "parallel layers P (Falcon-H1): Megatron-Bridge's "
               "FalconH1Layer is not graphable per layer or module; "
               "training.cuda_graph_scope = \"full_iteration\" is";
    return NULL;
}

const char *aps_hybrid_refusal(const aps_model *m, const aps_training *t,
                               const aps_strategy *s, aps_reason *code)
{
    *code = APS_REASON_NOT_MODELLED;
    if (t->mtp_num_layers > 0 && m->mtp_layer_pattern[0] == '\0')
        return "hybrid Mamba-2 models: training.mtp_num_layers needs the "
               "layers of an MTP depth, model.mtp_layer_pattern (Megatron "
               "--hybrid-layer-pattern after '/')";
    /* pp_degree > 1 (with virtual stages) and full recompute: every rank
     * is priced by its own layers (aps_stage_layer_cost); Megatron-LM's
     * HybridModel builds segment k p + i of the '|'-split pattern on rank
     * i's chunk k (hybrid_layer_allocation.py select_pipeline_segment @
     * d98e8a64), where aps_layout_rank_spans places it, Megatron running
     * (interleaved) 1F1B only (check.c refuses its other schedules) */
    if (s->cp_degree > 1)
        return "hybrid Mamba-2 models: context parallelism of the Mamba "
               "layers is not modelled";
    if (t->framework != APS_FW_MEGATRON)
        return "hybrid Mamba-2 models are priced for Megatron-LM only";
    /* the combined 1F1B schedule calls the model's build_schedule_plan,
     * which GPTModel has and HybridModel has not (Megatron-LM d98e8a64
     * megatron/core/pipeline_parallel/combined_1f1b.py l.377-382,
     * models/gpt/gpt_model.py l.843) */
    /* PyTorch FSDP2 as Megatron-LM applies it shards TransformerLayer,
     * LanguageModelEmbedding, RotaryEmbedding and ColumnParallelLinear
     * units (megatron/core/distributed/torch_fully_sharded_data_parallel.py
     * l.60-65 @ d98e8a64); MambaLayer is a GraphableMegatronModule
     * (ssm/mamba_layer.py l.59): its parameters fall to the root unit,
     * gathered for the whole step, which the per-layer FSDP terms do not
     * price.  Megatron-FSDP's units include MambaLayer. */
    if (s->fsdp_degree > 1 && t->fsdp_impl == APS_FSDP_IMPL_TORCH_FSDP2 &&
        strchr(m->hybrid_layer_pattern, 'M'))
        return "hybrid Mamba-2 models: Megatron-LM's torch FSDP2 shards "
               "TransformerLayer units, not MambaLayer "
               "(torch_fully_sharded_data_parallel.py:60): the Mamba layers' "
               "parameters would be gathered with the whole model, which is "
               "not priced; use training.fsdp_impl = \"megatron_fsdp\" or "
               "the distributed optimizer";
    *code = APS_REASON_FRAMEWORK_UNSUPPORTED;
    if (t->overlap_moe_expert_parallel_comm)
        return "hybrid Mamba-2 models: training.overlap_moe_expert_parallel_"
               "comm needs GPTModel's build_schedule_plan, which Megatron's "
               "HybridModel does not have";
    return strchr(m->hybrid_layer_pattern, 'P') ? parallel_refusal(m, t, s)
                                                : NULL;
}
