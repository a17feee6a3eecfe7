/*
 * Fine-grained activation offloading (Megatron-Core
 * --fine-grained-activation-offloading --offload-modules ...): which of a
 * layer's saved tensors go to host memory, which stay, and what copying
 * them costs.
 *
 * Source: NVIDIA/Megatron-LM d98e8a64 (2026-08-22)
 *  - megatron/core/transformer/transformer_config.py l.1323-1361 (the
 *    options), l.2127-2203 (their checks);
 *  - megatron/core/pipeline_parallel/fine_grained_activation_offload.py:
 *    every tensor autograd saves inside an offloaded module's context is
 *    one "group" per module and layer (ChunkOffloadHandler), copied to
 *    pinned host memory on a side stream in the forward and reloaded one
 *    layer ahead in the backward; tensors of fewer than
 *    min_offloaded_tensor_size elements stay (tensor_need_offloading_
 *    checker l.1077-1090); after the warm-up step the last group of each
 *    module name in the chunk whose backward runs first stays on the
 *    device ("so that the reloading won't block the computing stream",
 *    post_warmup_callback l.609-639), and activation_offload_fraction
 *    keeps the latest groups of each chunk in forward order (l.649-668);
 *  - docs/user-guide/features/fine_grained_activation_offloading.md.
 * The saved tensors each module holds are those memory.c (attention) and
 * moe.c (experts) count.
 */
#include <math.h>
#include "internal.h"

/** Megatron-Core's min_offloaded_tensor_size default, elements
 *  (transformer_config.py l.1343 @ d98e8a64): smaller saved tensors stay
 *  on the device. */
#define APS_MIN_OFFLOADED_TENSOR_ELEMENTS 1048576.0

/** Offload modules that act inside an MoE layer's experts. */
#define APS_OFM_EXPERTS \
    (APS_OFM_EXPERT_FC1 | APS_OFM_MOE_ACT | APS_OFM_FUSED_GROUP_MLP)

double aps_offload_fraction(const aps_training *t)
{
    return t->activation_offload_fraction == APS_DEFAULT
               ? 1.0 : t->activation_offload_fraction;
}

double aps_offload_tensor(const aps_training *t, unsigned module,
                          double bytes, double elements)
{
    if (!(t->offload_modules & module) || !(bytes > 0))
        return 0.0;
    return elements >= APS_MIN_OFFLOADED_TENSOR_ELEMENTS ? bytes : 0.0;
}

double aps_offload_share(const aps_training *t, double groups)
{
    if (!(groups >= 1.0))
        return 1.0;
    /* int(count * (1 - fraction)) groups of the chunk stay, the latest */
    double g = floor(groups);
    double kept = floor(g * (1.0 - aps_offload_fraction(t)));
    return (g - kept) / g;
}

int aps_offload_module_count(unsigned mods, bool moe_layer)
{
    int count = 0;
    for (int b = 0; b < APS_OFM_COUNT; b++) {
        unsigned bit = 1u << b;
        if ((mods & bit) && (moe_layer || !(bit & APS_OFM_EXPERTS)))
            count++;
    }
    return count;
}

aps_status aps_offload_dependencies(const aps_training *t, char *err,
                                    size_t n)
{
    unsigned mods = t->offload_modules;
    if (mods == 0u) {
        if (t->activation_offload_fraction != APS_DEFAULT) {
            aps_fmt(err, n, "training.activation_offload_fraction: %g needs "
                    "training.offload_modules", t->activation_offload_fraction);
            return APS_EINVAL;
        }
        return APS_OK;
    }
    if (mods >> APS_OFM_COUNT) {
        aps_fmt(err, n, "training.offload_modules = 0x%x: unknown module bits",
                mods);
        return APS_EINVAL;
    }
    if (t->framework != APS_FW_MEGATRON) {
        aps_fmt(err, n, "training.offload_modules: Megatron-Core's "
                "--fine-grained-activation-offloading (framework megatron; "
                "got %s)", aps_framework_name(t->framework));
        return APS_EINVAL;
    }
    if (t->activation_offload_layers > 0) {
        aps_fmt(err, n, "training.offload_modules with "
                "activation_offload_layers = %lld: \"fine_grained_activation_"
                "offloading cannot be enabled with cpu_offloading\" "
                "(transformer_config.py)",
                (long long)t->activation_offload_layers);
        return APS_EINVAL;
    }
    if ((mods & APS_OFM_ATTN_PROJ) && !(mods & APS_OFM_CORE_ATTN)) {
        aps_fmt(err, n, "training.offload_modules attn_proj without core_attn: "
                "\"the input of attn_proj is the output of core_attn, which "
                "is needed in core_attn.backward()\" (transformer_config.py)");
        return APS_EINVAL;
    }
    if ((mods & APS_OFM_FUSED_GROUP_MLP) && !t->cutedsl_fused_grouped_mlp) {
        aps_fmt(err, n, "training.offload_modules fused_group_mlp: \"requires "
                "use_transformer_engine_op_fuser\" (transformer_config.py); "
                "set training.cutedsl_fused_grouped_mlp");
        return APS_EINVAL;
    }
    if ((mods & APS_OFM_FUSED_GROUP_MLP) &&
        (mods & (APS_OFM_EXPERT_FC1 | APS_OFM_MOE_ACT))) {
        aps_fmt(err, n, "training.offload_modules: fused_group_mlp \"offloads "
                "the whole fused grouped MLP and cannot be combined with "
                "expert_fc1 or moe_act\" (transformer_config.py)");
        return APS_EINVAL;
    }
    if (t->moe_paged_stash && (mods & APS_OFM_EXPERTS)) {
        aps_fmt(err, n, "training.offload_modules with moe_paged_stash: "
                "\"offload_modules must not include expert_fc1, moe_act, or "
                "fused_group_mlp (paged stash covers those activations)\" "
                "(transformer_config.py)");
        return APS_EINVAL;
    }
    return APS_OK;
}

aps_status aps_offload_inputs(const aps_model *m, const aps_cluster *c,
                              const aps_training *t, char *err, size_t n)
{
    unsigned mods = t->offload_modules;
    if (mods == 0u)
        return APS_OK;
    if (!(c->device.host_bandwidth > 0)) {
        aps_fmt(err, n, "training.offload_modules with no host link "
                "(cluster.device.host_bandwidth = 0)");
        return APS_EINVAL;
    }
    if ((mods & APS_OFM_EXPERTS) && !aps_model_is_moe(m)) {
        aps_fmt(err, n, "training.offload_modules expert_fc1 / moe_act / "
                "fused_group_mlp: %s has no experts", m->name);
        return APS_EINVAL;
    }
    /* the attention modules are priced on the attention memory.c counts
     * (MHA / GQA, windows, gates); the other attentions keep their saved
     * tensors in their own terms (moe.c's MLA difference, dsa.c, dsv4.c,
     * msa.c), whose split by module is not modelled */
    if ((mods & APS_OFM_CORE_ATTN) &&
        (m->kv_lora_rank > 0 || aps_model_is_dsv4(m) || aps_model_has_msa(m))) {
        aps_fmt(err, n, "training.offload_modules core_attn / attn_proj with "
                "%s's %s attention: not modelled (apsearch splits the saved "
                "tensors of multi-head and grouped-query attention by "
                "module)", m->name,
                m->kv_lora_rank > 0 ? "multi-latent" : "compressed sparse");
        return APS_ENOTIMPL;
    }
    return APS_OK;
}

aps_reason aps_check_offload(const aps_model *m, const aps_training *t,
                             const aps_strategy *s, char *msg, size_t n)
{
    (void)m;
    if (!(t->offload_modules & APS_OFM_EXPERTS) ||
        s->layer_recompute != APS_RECOMPUTE_SELECTIVE ||
        !(aps_recompute_modules(t, s) & APS_RCM_MOE))
        return APS_REASON_NONE;
    aps_fmt(msg, n, "offload_modules inside the experts with recompute module "
            "moe: \"Cannot offload ... while recomputing the entire MoE "
            "layer\" (Megatron-LM transformer_config.py)");
    return APS_REASON_FRAMEWORK_UNSUPPORTED;
}

double aps_offload_stage_bytes(const aps_model *m, const aps_training *t,
                               const aps_strategy *s, const aps_layout *lay,
                               const aps_layer_cost *lc, int64_t i,
                               double *margin)
{
    *margin = 0.0;
    unsigned mods = t->offload_modules;
    if (mods == 0u)
        return 0.0;
    double L = (double)aps_layout_run_layers(lay, i);
    double kept = L - (double)aps_layout_run_recompute(lay, i);
    if (!(kept > 0))
        return 0.0;
    /* under full recompute a layer saves its input only: nothing inside
     * its modules to offload */
    double nm = (double)aps_moe_stage_moe_layers(m, lay, i) * kept / L;
    bool core_rc = s->layer_recompute == APS_RECOMPUTE_SELECTIVE &&
                   (aps_recompute_modules(t, s) & APS_RCM_CORE_ATTN);
    double attn = lc->offload_attn + (core_rc ? 0.0 : lc->offload_core);
    double moe = lc->moe.offload_act;
    aps_hybrid_counts w;
    aps_hybrid_mix(m, &w);
    double attn_layers = kept * w.attn_share;
    double groups = (attn_layers * aps_offload_module_count(mods, false) +
                     nm * (aps_offload_module_count(mods, true) -
                           aps_offload_module_count(mods, false))) /
                    (double)lay->v;
    double total = aps_offload_share(t, groups) * (kept * attn + nm * moe);
    /* the last group of each module name stays: one attention layer's and
     * one MoE layer's */
    double keep = (attn > 0 && w.attn_share > 0 ? attn / w.attn_share : 0.0) +
                  (nm > 0 ? moe : 0.0);
    *margin = keep < total ? keep : total;
    return total;
}
