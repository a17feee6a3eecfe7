/*
 * mfsdp.c -- Megatron-FSDP (Megatron-LM --use-megatron-fsdp, version 1,
 * megatron/core/distributed/fsdp/ @ d98e8a64ddf34856e74b24714e3bedb2f5a39553;
 * below "buffer.py" is src/megatron_fsdp/param_and_grad_buffer.py,
 * "mfsdp.py" src/megatron_fsdp/megatron_fsdp.py, "adapter.py"
 * mcore_fsdp_adapter.py, "arguments.py" megatron/training/arguments.py):
 * which sharding strategy a strategy runs as, the buffers it allocates,
 * and what Megatron-LM refuses of it.
 *
 * What it shards (buffer.py:2324-2349, _init_each_parameter_group_buffers):
 * optim_grads shards the fp32 main weights (with the optimizer states the
 * distributed optimizer keeps beside them) and the main gradients;
 * optim_grads_params shards the bf16 model weights too.  The per-parameter
 * bytes are the megatron profile's (a bf16 weight, an fp32 main weight and
 * Adam's two moments, main gradients in --megatron-fsdp-main-grads-dtype,
 * which the launch writes as training.grad_reduce_in_fp32 says): the
 * model states of memory.c unchanged.  What differs is its buffers:
 *
 *  - FSDP units are the decoder layers (TransformerLayer, MoETransformer-
 *    Layer, MambaLayer: adapter.py:166-173).  Every other module (the
 *    embedding, the output layer, the final norm) is gathered once and
 *    kept unsharded for the whole run: only units get a post-forward
 *    release hook (mfsdp.py:1089-1099), AllGatherPipeline.reset keeps
 *    non-unit buckets (buffer.py:4339-4372, preserve_non_fsdp_units), and
 *    "Non-unit modules should remain persistently allocated" (buffer.py:
 *    4637-4642, release_bucket).
 *  - The parameter all-gather of a unit prefetches the next units until
 *    the prefetched elements reach suggested_AG_prefetch_size (buffer.py:
 *    4487-4516), half of suggested_communication_unit_size (mfsdp.py:444),
 *    whose default is max(1e9, 2 x the mean unit's elements) under
 *    optim_grads_params and 1e9 otherwise (mfsdp.py:420-441: the "cap" is
 *    a floor).  A unit's gathered bucket is freed when the next gather
 *    asks for a buffer (lazy release, mfsdp.py:981-998, recycled at
 *    buffer.py:4707-4708 before the new bucket is allocated), so while a
 *    unit computes it and the prefetched ones are held.
 *  - Each unit's gradients are copied into an unsharded bucket of the main
 *    gradient dtype (mfsdp.py:647-661) and reduce-scattered every
 *    micro-batch (mfsdp.py:760-781); a bucket is freed only when the
 *    reduce queue holds more than suggested_communication_unit_size
 *    elements (buffer.py:3918-3944, wait_for_previous_grad_reduce).
 *
 *
 * With --fsdp-double-buffer (training.fsdp_double_buffer; --use-nccl-ub
 * forces it, arguments.py:1172-1176) the unit buckets come from a pool of
 * two per kind (FixedPoolAllocator, UB_BUFFER_NUM = 2, buffer.py:2524-
 * 2576), kept once allocated: the prefetch stops at two units (buffer.py:
 * 4420-4431, 4475-4483) and the reduce queue keeps at most two units'
 * buckets (_enforce_double_buffer_limit, buffer.py:3956-3980); buckets
 * outside units stay dynamic.
 *
 * HSDP (fsdp_degree and dp_degree > 1) runs as --num-distributed-
 * optimizer-instances dp_degree (adapter.py:343-430): every instance is
 * fsdp_degree x cp consecutive ranks of the dp_cp group (parallel_state.py
 * :922-1000, the intra-partial data-parallel group), which shards as
 * above; the gradient shard is all-reduced across the instances once per
 * step, on the last micro-batch's reduce (mfsdp.py:776-786, buffer.py:
 * 4135-4160, outer_dp_sharding_strategy no_shard, Megatron's default), and
 * the routed experts shard over the expert-data-parallel ranks of one
 * instance (moe.c aps_moe_expert_shard).  Its buffers are the plain
 * sharding's over the smaller group.
 *
 * Not modelled: outer_dp_sharding_strategy optim (HFSDP), Megatron-FSDP
 * version 2, --use-nccl-ub's registration itself.
 */
#include <math.h>
#include "internal.h"

/** Elements a Megatron-FSDP communication unit holds by default, the floor
 *  of its default suggested_communication_unit_size (mfsdp.py:436-441). */
#define APS_MFSDP_COMM_UNIT_FLOOR 1e9

aps_mfsdp_sharding aps_mfsdp_sharding_of(const aps_training *t,
                                         const aps_strategy *s)
{
    if (t->framework != APS_FW_MEGATRON ||
        t->fsdp_impl != APS_FSDP_IMPL_MEGATRON_FSDP)
        return APS_MFSDP_NONE;
    if (s->fsdp_degree > 1 || s->zero_stage == 3)
        return APS_MFSDP_OPTIM_GRADS_PARAMS;
    if (s->zero_stage == 2)
        return APS_MFSDP_OPTIM_GRADS;
    return APS_MFSDP_NONE;
}

/** suggested_communication_unit_size in elements for units of `unit`
 *  elements (training's, else Megatron's default: mfsdp.py:420-441, with
 *  apsearch's uniform layers the mean unit is the largest). */
static double comm_unit(const aps_training *t, aps_mfsdp_sharding sh,
                        double unit)
{
    if (t->suggested_communication_unit_size > 0)
        return t->suggested_communication_unit_size;
    double u = sh == APS_MFSDP_OPTIM_GRADS_PARAMS ? 2.0 * unit : 0.0;
    return u > APS_MFSDP_COMM_UNIT_FLOOR ? u : APS_MFSDP_COMM_UNIT_FLOOR;
}

/**
 * Units gathered at once: the current one and those the prefetch adds
 * while the prefetched elements are below U / 2 (buffer.py:4498-4516),
 * ceil(U / 2u) of units of u elements, at most the rest of the rank's
 * `layers`.  0 without layers.
 */
static double gathered_units(double U, double u, double layers)
{
    if (layers < 1 || u <= 0)
        return 0.0;
    double ahead = ceil(0.5 * U / u);
    return 1.0 + (ahead < layers - 1.0 ? ahead : layers - 1.0);
}

/** Units of the double-buffer pool: two, at most the rank's layers. */
#define APS_MFSDP_DOUBLE_BUFFER_UNITS 2.0

/**
 * Unsharded gradient elements alive at once: the reduce queue keeps
 * buckets while it holds at most U elements (floor(U / u) units), then
 * takes the next unit's, while the unit after it fills its own (+2); at
 * most the rank's psi parameters.
 */
static double reducing_elems(double U, double u, double psi)
{
    double e = u > 0 ? (floor(U / u) + 2.0) * u : psi;
    return e < psi ? e : psi;
}

double aps_mfsdp_buffers(const aps_model *m, const aps_training *t,
                         const aps_layout *lay, const aps_dp_plan *plan,
                         const aps_moe_held *held, int64_t i, double psi)
{
    double u = aps_largest_layer_params(m, lay, i);
    double um = aps_stage_layer_matmul_params(m, lay, i) / (double)lay->t;
    double layers = (double)aps_layout_run_layers(lay, i);
    /* an MoE layer's unit: its router, shared expert and local experts
     * (gathered over the expert-data-parallel group) in place of the
     * dense FFN (adapter.py:166-173, 398-430); the largest unit where
     * dense layers share the rank */
    double gm_moe;
    u += aps_moe_unit_growth(held, layers, true, &gm_moe);
    um += gm_moe;
    psi += held->psi + held->experts;
    double U = comm_unit(t, plan->mfsdp, u);
    double outside = aps_stage_nonunit_params(m, lay, i);
    double pool = layers < APS_MFSDP_DOUBLE_BUFFER_UNITS
                      ? layers : APS_MFSDP_DOUBLE_BUFFER_UNITS;
    double reducing = reducing_elems(U, u, psi);
    /* double buffer, a second limit: the pool's units, and the dynamic
     * buckets outside them queued beside (the output layer's first, the
     * embedding's last) */
    if (t->fsdp_double_buffer && pool * u + outside < reducing)
        reducing = pool * u + outside;
    double bytes = plan->bytes.grad * reducing;
    if (plan->mfsdp != APS_MFSDP_OPTIM_GRADS_PARAMS)
        return bytes; /* optim_grads: whole weights, counted as params */
    double units = t->fsdp_double_buffer ? pool : gathered_units(U, u, layers);
    double gathered = units * u + outside;
    /* linear weights: the units' (the output layer is not a TE GEMM);
     * their quantized copies counted for every gathered unit, an upper
     * bound: a prefetched unit is quantized when it runs */
    double gm = units * um;
    return bytes + aps_gathered_param_bytes(t, gathered, gm < gathered ? gm
                                                                      : gathered);
}

aps_reason aps_mfsdp_check(const aps_training *t, const aps_strategy *s,
                           char *msg, size_t n)
{
    if (t->framework != APS_FW_MEGATRON ||
        t->fsdp_impl != APS_FSDP_IMPL_MEGATRON_FSDP)
        return APS_REASON_NONE;
    /* HSDP runs as --num-distributed-optimizer-instances dp_degree
     * (adapter.py:343-430); parallel_state.py:1447-1449 asserts the
     * expert-data-parallel ranks split into the instances */
    int64_t edp = aps_moe_edp(s);
    if (s->fsdp_degree > 1 && s->dp_degree > 1 && edp % s->dp_degree != 0) {
        aps_fmt(msg, n, "megatron: HSDP with Megatron-FSDP runs as "
                "--num-distributed-optimizer-instances %lld, and %lld expert-"
                "data-parallel ranks do not split into %lld instances: "
                "\"Expert data parallel size should be divisible by partial "
                "DistOpt shard factor\" (parallel_state.py)",
                (long long)s->dp_degree, (long long)edp,
                (long long)s->dp_degree);
        return APS_REASON_FRAMEWORK_UNSUPPORTED;
    }
    /* mfsdp.py:1089-1099: under optim_grads_params every unit's
     * parameters are released after its forward */
    if (s->fsdp_degree > 1 && !s->reshard_after_forward) {
        aps_fmt(msg, n, "megatron: reshard_after_forward = false with "
                "Megatron-FSDP (fsdp_degree = %lld): optim_grads_params "
                "releases each layer's parameters after its forward "
                "(megatron_fsdp.py); for ZeRO-2 use zero_stage 2 over "
                "dp_degree (optim_grads)", (long long)s->fsdp_degree);
        return APS_REASON_FRAMEWORK_UNSUPPORTED;
    }
    /* adapter.py:751-832: _get_dp_tp_mesh and _get_hsdp_tp_mesh lay
     * torch.arange(world_size) out as (dp_cp ep tp), the pipeline ranks
     * left out, so with PP every rank's einops.rearrange fails at start-up
     * ("Shape mismatch"); no functional test runs it with PP */
    if (s->pp_degree > 1 && aps_mfsdp_sharding_of(t, s) != APS_MFSDP_NONE) {
        aps_fmt(msg, n, "megatron: Megatron-FSDP with pp_degree = %lld: its "
                "adapter lays the whole world out as (dp_cp ep tp) without "
                "the pipeline ranks (mcore_fsdp_adapter.py _get_dp_tp_mesh), "
                "and every rank fails building the mesh at start-up; use "
                "pp_degree 1, or zero_stage 1 (the distributed optimizer) "
                "with pipelines", (long long)s->pp_degree);
        return APS_REASON_FRAMEWORK_UNSUPPORTED;
    }
    /* mcore_fsdp_adapter.py:182-187 @ d98e8a64: the 1F1B overlap with
     * Megatron-FSDP asserts cuda_graph_impl in ("none", "full_iteration");
     * the launch file writes per-layer TE graphs for every scope but
     * full_iteration and none, unless full recompute or CPU offloading
     * force the full-iteration graph (launch/megatron.lua graph_flags) */
    bool per_layer = t->cuda_graphs && t->cuda_graph_scope != APS_CG_NONE &&
                     t->cuda_graph_scope != APS_CG_FULL_ITERATION &&
                     s->layer_recompute != APS_RECOMPUTE_FULL &&
                     t->activation_offload_layers == 0;
    if (t->overlap_moe_expert_parallel_comm && per_layer &&
        aps_mfsdp_sharding_of(t, s) != APS_MFSDP_NONE) {
        aps_fmt(msg, n, "megatron: overlap_moe_expert_parallel_comm with "
                "Megatron-FSDP and per-layer CUDA graphs: \"1F1B overlap with "
                "FSDP does not support per-layer CUDA graphs\" "
                "(mcore_fsdp_adapter.py); use cuda_graph_scope full_iteration "
                "or none");
        return APS_REASON_FRAMEWORK_UNSUPPORTED;
    }
    return APS_REASON_NONE;
}
