/*
 * training.c -- training_config and strategy_config defaults and checks of
 * the training fields.  Every overhead or overlap default is named here with
 * the reason for its value; all are overridable from a policy.
 */
#include <math.h>
#include "internal.h"

/** Headroom kept below capacity for allocations not modelled (cuBLAS
 *  workspaces, NCCL buffer growth, Python objects). Assumed: 1 GiB. */
#define APS_MEMORY_MARGIN (1024.0 * 1024.0 * 1024.0)
/** max_reserved / max_allocated - 1 of PyTorch's caching allocator with
 *  fixed segments (the default).  Assumed 5 %, not measured: no published
 *  LLM pretraining run states both peaks.  It is what the seven TorchTitan
 *  peaks of tests/fixtures/public_cases.csv were checked with (within
 *  4.3 %, docs/accuracy.md).  The published A/B numbers come from
 *  workloads whose shapes change every step: torchtune issue 1185 (QLoRA,
 *  16.39 -> 10.83 GiB reserved), nvidia-cosmos/cosmos-rl PR 388 (RL,
 *  126.97 -> 96.61 GB reserved at 60.9 GB allocated).  Neither gives a
 *  peak-allocated ratio for fixed-shape pretraining, so neither is used. */
#define APS_FRAGMENTATION 0.05
/** The same with expandable segments (PYTORCH_CUDA_ALLOC_CONF=
 *  expandable_segments:True, which maps pages into one growing segment
 *  per stream; PyTorch PR 96995).  No published measurement of the ratio
 *  for LLM training: kept at APS_FRAGMENTATION.  The seven TorchTitan
 *  peaks above ran with it (run_llama_train.sh since a5e57e4a,
 *  2024-10-22), so that is the setting the 5 % was checked with. */
#define APS_FRAGMENTATION_EXPANDABLE 0.05
/** torch.nn.parallel.DistributedDataParallel bucket_cap_mb = 25 (MiB). */
#define APS_DDP_BUCKET (25.0 * 1024.0 * 1024.0)
/** DDP buckets alive at once: one being reduced while the next fills. */
#define APS_DDP_BUCKETS_IN_FLIGHT 2
/** Fraction of the last micro-batch's backward that hides the gradient
 *  all-reduce / reduce-scatter (Megatron --overlap-grad-reduce, DDP bucket
 *  overlap).  Assumed 0.8: compute and NCCL kernels share SMs and HBM. */
#define APS_DP_OVERLAP 0.8
/** Fraction of each micro-batch's forward/backward that hides FSDP
 *  all-gathers and reduce-scatters behind prefetch (FSDP2 implicit
 *  prefetch, one unit ahead).  Assumed 0.9. */
#define APS_FSDP_OVERLAP 0.9
/** TP collectives sit between dependent GEMMs: exposed unless the
 *  framework's comm-GEMM overlap (TE userbuffers) is on.  Default 0. */
#define APS_TP_OVERLAP 0.0
/** Fraction of the communication hidden behind compute that still costs
 *  time: NCCL's kernels hold SMs (one CTA per channel, 16-32 channels on
 *  NVLink and IB rings: 15-30 % of an A100's 108 or an H100's 132 SMs) and
 *  HBM bandwidth while the GEMMs they overlap run.  Assumed 0.2 from that
 *  SM share, not fitted. */
#define APS_OVERLAP_INTERFERENCE 0.2
/** PP send/recv overlap with compute where the schedule has no overlap of
 *  its own (1F1B's sends block).  Default 0 (conservative). */
#define APS_PP_P2P_OVERLAP 0.0

void aps_training_defaults(aps_training *t)
{
    *t = (aps_training){0};
    t->precision = APS_PREC_BF16;
    t->optimizer = APS_OPT_ADAM;
    t->framework = APS_FW_MEGATRON;
    t->flash_attention = true;
    t->dropout = APS_DEFAULT; /* the framework's (recipe.c) */
    t->attention_dropout = APS_DEFAULT; /* from dropout (recipe.c) */
    t->hidden_dropout = APS_DEFAULT;
    t->vocab_size_divisible_by = 0; /* the framework's default */
    t->memory_limit_bytes = 0;
    t->memory_margin_bytes = APS_MEMORY_MARGIN;
    t->allocator_fragmentation = APS_FRAGMENTATION;
    t->allocator_fragmentation_expandable = APS_FRAGMENTATION_EXPANDABLE;
    t->expandable_segments = APS_DEFAULT; /* the launcher's (recipe.c) */
    t->memory_limit_kind = APS_MEM_KIND_RESERVED;
    t->ddp_bucket_bytes = APS_DDP_BUCKET;
    t->ddp_buckets_in_flight = APS_DDP_BUCKETS_IN_FLIGHT;
    t->dp_overlap = APS_DP_OVERLAP;
    t->fsdp_overlap = APS_FSDP_OVERLAP;
    t->tp_overlap = APS_TP_OVERLAP;
    t->pp_p2p_overlap = APS_PP_P2P_OVERLAP;
    t->overlap_interference = APS_OVERLAP_INTERFERENCE;
    t->overlap_p2p_comm = true; /* Megatron-LM's default */
    /* TorchTitan's default (job_config.py: compile = False); llm-foundry
     * does not compile either.  apsearch's TorchTitan launch config writes
     * training.compile to match. */
    t->torch_compile = false;
    /* recipe settings (recipe.c): the framework's default unless set */
    t->fp8_param_gather = APS_DEFAULT;
    t->compile_loss = APS_DEFAULT;
    t->sac_save_alltoall = APS_DEFAULT;
    t->fuse_qkv = APS_DEFAULT;
    t->defer_fsdp_grad_sync = APS_DEFAULT;
    t->loss_fp32_upcast = APS_DEFAULT;
    t->loss_chunks = 0; /* the framework's (recipe.c) */
    t->grad_reduce_in_fp32 = APS_DEFAULT;
    t->activation_offload_layers = 0;
    t->offload_modules = 0u;
    t->activation_offload_fraction = APS_DEFAULT; /* Megatron's 1.0 */
    t->tp_comm_overlap = false;
    t->cuda_graphs = false;
    t->cuda_graph_scope = APS_CG_LAYER;
    /* NVIDIA's MoE recipes set it (Megatron-Bridge scripts/performance/
     * configs/qwen3/qwen3_llm_pretrain.py v0.2.0:39; Megatron-MoE-ModelZoo
     * model_configs); apsearch's Megatron launch file writes it */
    t->moe_router_fusion = true;
    t->moe_flex_dispatcher_backend = APS_FLEX_DEEPEP; /* Megatron's default */
    t->num_layers_at_start_in_bf16 = APS_DEFAULT; /* Megatron's, when on */
    t->num_layers_at_end_in_bf16 = APS_DEFAULT;
}

/** Largest byte count or size a training field may take (1e30: past any
 *  memory or bucket, yet a finite value every sum stays finite with). */
#define APS_MAX_TRAINING_AMOUNT 1e30

/** A NeMo AutoModel BackendConfig kernel, training.<name>_backend = v:
 *  0 (the framework's own) to max, and set only under framework
 *  automodel (another framework runs its own `kind` kernel). */
static aps_status automodel_backend(const aps_training *t, const char *name,
                                    int v, int max, const char *kind,
                                    char *err, size_t n)
{
    if (v < 0 || v > max) {
        aps_fmt(err, n, "training.%s_backend: unknown backend %d", name, v);
        return APS_EINVAL;
    }
    if (v != 0 && t->framework != APS_FW_AUTOMODEL) {
        aps_fmt(err, n, "training.%s_backend: NeMo AutoModel's "
                "BackendConfig.%s (framework automodel); framework %s runs "
                "its own %s kernel", name, name,
                aps_framework_name(t->framework), kind);
        return APS_EINVAL;
    }
    return APS_OK;
}

aps_status aps_training_validate(const aps_training *t, char *err, size_t n)
{
    if (t == NULL) {
        aps_fmt(err, n, "training: NULL");
        return APS_EINVAL;
    }
    if (t->global_batch_size < 1 || t->global_batch_size > (INT64_C(1) << 30)) {
        aps_fmt(err, n, "training.global_batch_size: must be in [1, 2^30] (got %lld)",
                (long long)t->global_batch_size);
        return APS_EINVAL;
    }
    if (t->seq_length < 1 || t->seq_length > (INT64_C(1) << 26)) {
        aps_fmt(err, n, "training.seq_length: must be in [1, 2^26] (got %lld)",
                (long long)t->seq_length);
        return APS_EINVAL;
    }
    if (t->vocab_size_divisible_by < 0 || t->vocab_size_divisible_by > 65536) {
        aps_fmt(err, n,
                "training.vocab_size_divisible_by: must be 0 (the framework's "
                "default) or in [1, 65536] (got %lld)",
                (long long)t->vocab_size_divisible_by);
        return APS_EINVAL;
    }
    if (automodel_backend(t, "rms_norm", (int)t->rms_norm_backend,
                          APS_RMS_NORM_TE, "norm", err, n) != APS_OK ||
        automodel_backend(t, "attn", (int)t->attn_backend, APS_ATTN_FLEX,
                          "attention", err, n) != APS_OK)
        return APS_EINVAL;
    if (t->transformers_model && t->attn_backend == APS_ATTN_TE) {
        aps_fmt(err, n, "training.attn_backend: te is the attention of NeMo "
                "AutoModel's own model classes (BackendConfig.attn); a model "
                "built through transformers (training.transformers_model) "
                "runs sdpa or flex");
        return APS_EINVAL;
    }
    if (t->fuse_qkv != APS_DEFAULT && t->framework != APS_FW_FSDP2) {
        aps_fmt(err, n, "training.fuse_qkv: TorchTitan's fused wqkv "
                "(framework fsdp2); framework %s builds its own projections",
                aps_framework_name(t->framework));
        return APS_EINVAL;
    }
    if (t->moe_flex_dispatcher_backend < APS_FLEX_DEEPEP ||
        t->moe_flex_dispatcher_backend > APS_FLEX_HYBRIDEP) {
        aps_fmt(err, n, "training.moe_flex_dispatcher_backend: unknown "
                "backend %d", (int)t->moe_flex_dispatcher_backend);
        return APS_EINVAL;
    }
    int g = (int)t->cuda_graph_scope;
    if (g != APS_CG_FULL_ITERATION && g != APS_CG_NONE &&
        (g & ~APS_CG_MODULES) != 0) {
        aps_fmt(err, n, "training.cuda_graph_scope: unknown scope %d",
                (int)t->cuda_graph_scope);
        return APS_EINVAL;
    }
    if (!t->cuda_graphs && t->cuda_graph_scope != APS_CG_LAYER) {
        aps_fmt(err, n, "training.cuda_graph_scope: a scope needs "
                "training.cuda_graphs = true (it says what the graphs capture)");
        return APS_EINVAL;
    }
    struct { const char *f; double v; } nonneg[] = {
        {"memory_limit_bytes", t->memory_limit_bytes},
        {"memory_margin_bytes", t->memory_margin_bytes},
        {"ddp_bucket_bytes", t->ddp_bucket_bytes},
        {"suggested_communication_unit_size",
         t->suggested_communication_unit_size},
        {"logits_bytes", t->logits_bytes},
    };
    for (size_t i = 0; i < sizeof nonneg / sizeof nonneg[0]; i++) {
        if (!(nonneg[i].v >= 0) || nonneg[i].v > APS_MAX_TRAINING_AMOUNT) {
            aps_fmt(err, n, "training.%s: must be in [0, %g] (got %g)",
                    nonneg[i].f, APS_MAX_TRAINING_AMOUNT, nonneg[i].v);
            return APS_EINVAL;
        }
    }
    struct { const char *f; double v; } frac[] = {
        {"allocator_fragmentation", t->allocator_fragmentation},
        {"allocator_fragmentation_expandable",
         t->allocator_fragmentation_expandable},
        {"dp_overlap", t->dp_overlap},
        {"fsdp_overlap", t->fsdp_overlap},
        {"tp_overlap", t->tp_overlap},
        {"pp_p2p_overlap", t->pp_p2p_overlap},
        {"overlap_interference", t->overlap_interference},
    };
    for (size_t i = 0; i < sizeof frac / sizeof frac[0]; i++) {
        if (!(frac[i].v >= 0 && frac[i].v <= 1)) {
            aps_fmt(err, n, "training.%s: must be in [0, 1] (got %g)",
                    frac[i].f, frac[i].v);
            return APS_EINVAL;
        }
    }
    /* a load over the balanced share: 1 = perfectly balanced */
    if (t->moe_load_imbalance != 0 &&
        !(t->moe_load_imbalance >= 1 && t->moe_load_imbalance <= 1e3)) {
        aps_fmt(err, n, "training.moe_load_imbalance: must be 0 (the default "
                "%g) or in [1, 1000] (got %g)", APS_MOE_LOAD_IMBALANCE,
                t->moe_load_imbalance);
        return APS_EINVAL;
    }
    if (t->ddp_buckets_in_flight < 0 || t->ddp_buckets_in_flight > 64) {
        aps_fmt(err, n, "training.ddp_buckets_in_flight: must be in [0, 64] (got %lld)",
                (long long)t->ddp_buckets_in_flight);
        return APS_EINVAL;
    }
    if (t->mtp_num_layers < 0 || t->mtp_num_layers > APS_MAX_MTP_LAYERS) {
        aps_fmt(err, n, "training.mtp_num_layers: must be in [0, %d] (got %lld)",
                APS_MAX_MTP_LAYERS, (long long)t->mtp_num_layers);
        return APS_EINVAL;
    }
    if (t->mtp_num_layers > 0 && t->framework != APS_FW_MEGATRON) {
        aps_fmt(err, n, "training.mtp_num_layers: multi-token prediction is "
                "modelled for Megatron-LM (--mtp-num-layers) only (got %lld "
                "with framework %s)", (long long)t->mtp_num_layers,
                aps_framework_name(t->framework));
        return APS_EINVAL;
    }
    if (t->mtp_repeated_layer && t->mtp_num_layers == 0) {
        aps_fmt(err, n, "training.mtp_repeated_layer: given without "
                "mtp_num_layers (no MTP depth to repeat)");
        return APS_EINVAL;
    }
    if (t->distributed_optimizer_instances < 0 ||
        t->distributed_optimizer_instances > APS_MAX_DEGREE) {
        aps_fmt(err, n, "training.distributed_optimizer_instances: must be 0 "
                "(one) or in [1, %lld] (got %lld)", (long long)APS_MAX_DEGREE,
                (long long)t->distributed_optimizer_instances);
        return APS_EINVAL;
    }
    if (t->distributed_optimizer_instances > 1 &&
        t->framework != APS_FW_MEGATRON) {
        aps_fmt(err, n, "training.distributed_optimizer_instances: Megatron-"
                "LM's --num-distributed-optimizer-instances (got %lld with "
                "framework %s)", (long long)t->distributed_optimizer_instances,
                aps_framework_name(t->framework));
        return APS_EINVAL;
    }
    if (t->local_batch_size < 0 || t->local_batch_size > APS_MAX_DEGREE) {
        aps_fmt(err, n, "training.local_batch_size: must be 0 (the whole "
                "step in one pass) or in [1, %lld] (got %lld)",
                (long long)APS_MAX_DEGREE, (long long)t->local_batch_size);
        return APS_EINVAL;
    }
    /* TorchTitan trainer.py l.419-424, AutoModel step_scheduler.py
     * l.114-118: the global batch is whole passes of every rank */
    if (t->local_batch_size > 0 && t->global_batch_size > 0 &&
        t->global_batch_size % t->local_batch_size != 0) {
        aps_fmt(err, n, "training.local_batch_size = %lld does not divide "
                "global_batch_size = %lld (a step is whole passes of "
                "local_batch_size sequences on every data-parallel rank)",
                (long long)t->local_batch_size,
                (long long)t->global_batch_size);
        return APS_EINVAL;
    }
    if (t->local_batch_size > 0 && !aps_profile(t)->torch_pipelining) {
        aps_fmt(err, n, "training.local_batch_size: set training.framework "
                "to fsdp2 or automodel, or leave it out (TorchTitan's and "
                "NeMo AutoModel's passes of a step; %s runs every "
                "micro-batch of a step in one schedule; got %lld)",
                aps_framework_name(t->framework),
                (long long)t->local_batch_size);
        return APS_EINVAL;
    }
    if (t->dp_collective_rails < 0 || t->dp_collective_rails > 64) {
        aps_fmt(err, n, "training.dp_collective_rails: must be 0 (the "
                "framework's default) or in [1, 64] (got %lld)",
                (long long)t->dp_collective_rails);
        return APS_EINVAL;
    }
    struct { const char *f; int v; } tri[] = {
        {"fp8_param_gather", t->fp8_param_gather},
        {"grad_reduce_in_fp32", t->grad_reduce_in_fp32},
        {"compile_loss", t->compile_loss},
        {"sac_save_alltoall", t->sac_save_alltoall},
        {"fuse_qkv", t->fuse_qkv},
        {"defer_fsdp_grad_sync", t->defer_fsdp_grad_sync},
        {"loss_fp32_upcast", t->loss_fp32_upcast},
        {"dropout", t->dropout},
        {"expandable_segments", t->expandable_segments},
    };
    for (size_t i = 0; i < sizeof tri / sizeof tri[0]; i++) {
        if (tri[i].v < APS_DEFAULT || tri[i].v > 1) {
            aps_fmt(err, n, "training.%s: must be true, false or the "
                    "framework's default (got %d)", tri[i].f, tri[i].v);
            return APS_EINVAL;
        }
    }
    struct { const char *f; int64_t v; } layers[] = {
        {"activation_offload_layers", t->activation_offload_layers},
    };
    for (size_t i = 0; i < sizeof layers / sizeof layers[0]; i++) {
        if (layers[i].v < 0 || layers[i].v > (INT64_C(1) << 20)) {
            aps_fmt(err, n, "training.%s: must be in [0, 2^20] (got %lld)",
                    layers[i].f, (long long)layers[i].v);
            return APS_EINVAL;
        }
    }
    /* 0 is the profile's count (types.h); a policy writes 1 to 2^20 */
    if (t->loss_chunks < 0 || t->loss_chunks > (INT64_C(1) << 20)) {
        aps_fmt(err, n, "training.loss_chunks: must be in [1, 2^20] (got %lld)",
                (long long)t->loss_chunks);
        return APS_EINVAL;
    }
    if ((unsigned)t->precision > APS_PREC_NVFP4 ||
        (unsigned)t->optimizer > APS_OPT_ADAMW ||
        (unsigned)t->framework > APS_FW_AUTOMODEL ||
        (unsigned)t->fsdp_impl > APS_FSDP_IMPL_MEGATRON_FSDP ||
        (unsigned)t->memory_limit_kind > APS_MEM_KIND_DEVICE) {
        aps_fmt(err, n, "training: enum field out of range");
        return APS_EINVAL;
    }
    return aps_training_dependencies(t, err, n);
}

/**
 * Settings that only act with another setting or framework, refused with
 * the reason rather than ignored (exit 2 from the CLI):
 * compile_loss = true needs a framework whose loss is a compile component
 * (TorchTitan compile.components; with torch_compile = false it is
 * compile.enable with components = ["loss"]: torchtitan b5bcd76c
 * torchtitan/components/loss.py _maybe_compile compiles the loss whenever
 * compile.enable and "loss" is a component, whatever the model's);
 * dropout = true (or a dropout probability above 0) needs a framework
 * whose models have dropout (TorchTitan's have none: torchtitan b5bcd76c
 * torchtitan/models, no nn.Dropout and no dropout option, so an estimate
 * with it describes a job TorchTitan cannot run); exp_avg_bf16
 * sets Adam's moments (Megatron --exp-avg-dtype); store_param_remainders
 * needs bf16 weights beside an fp32 master (apex DistributedFusedAdam);
 * fsdp_impl = megatron_fsdp and suggested_communication_unit_size are
 * Megatron-LM's (--use-megatron-fsdp, megatron/training/arguments.py);
 * defer_fsdp_grad_sync is NeMo AutoModel's (FSDP2Config); tp_comm_overlap
 * under TorchTitan needs torch_compile (async TP is a compile pass).
 */
/**
 * The sync-free MoE settings, refused as Megatron-LM refuses them
 * (d98e8a64 megatron/core/transformer/transformer_config.py
 * __post_init__ l.1868-1883 and l.2210-2226; paged stash added in
 * f007db77b9, 2026-05-22): --moe-expert-rank-capacity-factor needs the
 * flex dispatcher's HybridEP (or ncclEP, which apsearch does not model)
 * backend; --moe-paged-stash needs the capacity factor ("there is no need
 * to use paged stashing without it") and cannot run with CPU offloading.
 * Values Megatron takes but apsearch cannot price are refused as such: a
 * negative stash factor (sized from the capture step's actual token
 * counts, moe/paged_stash.py allocate_stash_buffers) and NVFP4, whose
 * fused grouped MLP stashes rowwise tensors too (TransformerEngine
 * d0067d0da ops/fused/grouped_mlp.py l.1749-1766).
 */
static aps_status moe_stash_dependencies(const aps_training *t, char *err,
                                         size_t n)
{
    double cf = t->moe_expert_rank_capacity_factor;
    double f = t->moe_paged_stash_buffer_size_factor_cuda;
    if (f < 0) {
        aps_fmt(err, n, "training.moe_paged_stash_buffer_size_factor_cuda: "
                "%g < 0 sizes the stash from the capture step's actual token "
                "counts (moe/paged_stash.py allocate_stash_buffers), which "
                "apsearch cannot know; give the avg-based factor (> 0)", f);
        return APS_EINVAL;
    }
    struct { const char *f; double v; } num[] = {
        {"moe_expert_rank_capacity_factor", cf},
        {"moe_paged_stash_buffer_size_factor_cuda", f},
    };
    for (size_t i = 0; i < sizeof num / sizeof num[0]; i++) {
        if (!(isfinite(num[i].v) && num[i].v >= 0 &&
              num[i].v <= APS_MOE_SYNC_FREE_FACTOR_MAX)) {
            aps_fmt(err, n, "training.%s: must be a finite number in (0, %g] "
                    "(got %g)", num[i].f, APS_MOE_SYNC_FREE_FACTOR_MAX,
                    num[i].v);
            return APS_EINVAL;
        }
        /* a budget or a stash below the balanced share overflows on every
         * step; Megatron then spills the stash to pinned host memory or
         * re-runs the step dropless, without the stash (moe/paged_stash.py
         * PagedStashBuffer host buffer, _MAX_RERUN_ATTEMPTS and
         * prepare_for_rerun @ d98e8a64), which apsearch does not price */
        if (num[i].v > 0 && num[i].v < 1.0) {
            aps_fmt(err, n, "training.%s = %g: below the balanced share (1) "
                    "every step overflows, and Megatron spills to host memory "
                    "or re-runs the step dropless (moe/paged_stash.py), which "
                    "apsearch does not model", num[i].f, num[i].v);
            return APS_ENOTIMPL;
        }
    }
    if (t->moe_paged_stash_page_size < 0 ||
        t->moe_paged_stash_page_size > (INT64_C(1) << 20)) {
        aps_fmt(err, n, "training.moe_paged_stash_page_size: must be in [1, "
                "2^20] tokens (got %lld)",
                (long long)t->moe_paged_stash_page_size);
        return APS_EINVAL;
    }
    if ((cf > 0 || t->moe_paged_stash) && t->framework != APS_FW_MEGATRON) {
        aps_fmt(err, n, "training.%s: Megatron-Core's sync-free MoE "
                "(framework megatron; got %s)",
                cf > 0 ? "moe_expert_rank_capacity_factor" : "moe_paged_stash",
                aps_framework_name(t->framework));
        return APS_EINVAL;
    }
    if (cf > 0 && t->moe_flex_dispatcher_backend != APS_FLEX_HYBRIDEP) {
        aps_fmt(err, n, "training.moe_expert_rank_capacity_factor = %g: "
                "\"requires moe_flex_dispatcher_backend to be 'hybridep' or "
                "'ncclep'\" (transformer_config.py); set "
                "training.moe_flex_dispatcher_backend = \"hybridep\"", cf);
        return APS_EINVAL;
    }
    if (t->moe_paged_stash && !(cf > 0)) {
        aps_fmt(err, n, "training.moe_paged_stash: \"requires "
                "moe_expert_rank_capacity_factor to be set\" "
                "(transformer_config.py)");
        return APS_EINVAL;
    }
    if (t->moe_paged_stash && t->activation_offload_layers > 0) {
        aps_fmt(err, n, "training.moe_paged_stash with "
                "activation_offload_layers = %lld: \"cannot be enabled with "
                "cpu_offloading\" (transformer_config.py)",
                (long long)t->activation_offload_layers);
        return APS_EINVAL;
    }
    /* the stash takes what TransformerEngine's fused grouped MLP marks,
     * a fusion of the block-scaled recipes only (ops/fused/grouped_mlp.py
     * l.842 @ d0067d0da): in bf16 or per-tensor fp8 nothing is stashed */
    if (t->moe_paged_stash && t->precision != APS_PREC_MXFP8 &&
        t->precision != APS_PREC_NVFP4) {
        aps_fmt(err, n, "training.moe_paged_stash with precision %s: the "
                "stash holds the tensors of TransformerEngine's fused "
                "grouped MLP, which runs in mxfp8 or nvfp4 only (nothing "
                "would be stashed)", aps_precision_name(t->precision));
        return APS_EINVAL;
    }
    if (t->moe_paged_stash && t->precision == APS_PREC_NVFP4) {
        aps_fmt(err, n, "training.moe_paged_stash with precision nvfp4: its "
                "stash (rowwise NVFP4 tensors too, TransformerEngine "
                "grouped_mlp.py) is not modelled by apsearch");
        return APS_ENOTIMPL;
    }
    if (!t->moe_paged_stash &&
        (f > 0 || t->moe_paged_stash_page_size > 0)) {
        aps_fmt(err, n, "training.%s: acts with moe_paged_stash only",
                f > 0 ? "moe_paged_stash_buffer_size_factor_cuda"
                      : "moe_paged_stash_page_size");
        return APS_EINVAL;
    }
    return APS_OK;
}

/** Most layers a bf16 count may name: 2^20, far past any model (the
 *  model-dependent bound is aps_check_bf16_layers'). */
#define APS_MAX_BF16_LAYERS (INT64_C(1) << 20)

/* Megatron-LM's first and last layers in bf16 (bf16layers.c): counts in
 * [0, 2^20] or unset (APS_DEFAULT), only with first_last_layers_bf16, and
 * a Megatron-Core setting.  Delayed scaling, which Megatron refuses with
 * it, is not apsearch's: its Megatron file writes --fp8-recipe tensorwise
 * then (launch/megatron.lua). */
static aps_status bf16_layers_dependencies(const aps_training *t, char *err,
                                           size_t n)
{
    struct { const char *f; int64_t v; } c[] = {
        {"num_layers_at_start_in_bf16", t->num_layers_at_start_in_bf16},
        {"num_layers_at_end_in_bf16", t->num_layers_at_end_in_bf16}};
    for (size_t k = 0; k < sizeof c / sizeof c[0]; k++) {
        if (c[k].v == APS_DEFAULT)
            continue;
        if (c[k].v < 0 || c[k].v > APS_MAX_BF16_LAYERS) {
            aps_fmt(err, n, "training.%s: must be in [0, 2^20] layers "
                    "(got %lld)", c[k].f, (long long)c[k].v);
            return APS_EINVAL;
        }
        if (!t->first_last_layers_bf16) {
            aps_fmt(err, n, "training.%s = %lld: acts with "
                    "first_last_layers_bf16 only", c[k].f, (long long)c[k].v);
            return APS_EINVAL;
        }
    }
    if (t->first_last_layers_bf16 && t->framework != APS_FW_MEGATRON) {
        aps_fmt(err, n, "training.first_last_layers_bf16: a Megatron-Core "
                "setting (framework megatron; got %s)",
                aps_framework_name(t->framework));
        return APS_EINVAL;
    }
    return APS_OK;
}

/* TransformerEngine's fused grouped MLP: a Megatron-Core module path
 * (TEGroupedMLP under --use-transformer-engine-op-fuser) whose fusion TE
 * applies to the block-scaled recipes only (ops/fused/grouped_mlp.py
 * l.842 @ d0067d0da: "recipe.mxfp8() or recipe.nvfp4()"); in bf16 or
 * per-tensor fp8 the flag would run the unfused ops, not the estimate. */
static aps_status fused_mlp_dependencies(const aps_training *t, char *err,
                                         size_t n)
{
    if (!t->cutedsl_fused_grouped_mlp)
        return APS_OK;
    if (t->framework != APS_FW_MEGATRON) {
        aps_fmt(err, n, "training.cutedsl_fused_grouped_mlp: a Megatron-Core "
                "setting (framework megatron; got %s)",
                aps_framework_name(t->framework));
        return APS_EINVAL;
    }
    if (!aps_prec_block_scaled(t->precision)) {
        aps_fmt(err, n, "training.cutedsl_fused_grouped_mlp with precision "
                "%s: TransformerEngine fuses the grouped MLP in mxfp8 or "
                "nvfp4 only (ops/fused/grouped_mlp.py)",
                aps_precision_name(t->precision));
        return APS_EINVAL;
    }
    return APS_OK;
}

/** The two dropout probabilities: unset (APS_DEFAULT) or in [0, 1), and
 *  not against an explicit training.dropout (false with a probability
 *  above 0, true with both given as 0). */
static aps_status check_dropout_probabilities(const aps_training *t,
                                              char *err, size_t n)
{
    const struct { const char *f; double p; } d[] = {
        {"attention_dropout", t->attention_dropout},
        {"hidden_dropout", t->hidden_dropout},
    };
    for (size_t i = 0; i < 2; i++) {
        if (d[i].p == APS_DEFAULT)
            continue;
        if (!(d[i].p >= 0.0 && d[i].p < 1.0)) {
            aps_fmt(err, n, "training.%s: must be a probability in [0, 1) "
                    "(got %g)", d[i].f, d[i].p);
            return APS_EINVAL;
        }
        if (t->dropout == 0 && d[i].p > 0.0) {
            aps_fmt(err, n, "training.%s: %g given with training.dropout = "
                    "false", d[i].f, d[i].p);
            return APS_EINVAL;
        }
    }
    if (t->dropout == 1 && t->attention_dropout == 0.0 &&
        t->hidden_dropout == 0.0) {
        aps_fmt(err, n, "training.dropout: true given with attention_dropout "
                "and hidden_dropout both 0");
        return APS_EINVAL;
    }
    return APS_OK;
}

aps_status aps_training_dependencies(const aps_training *t, char *err,
                                     size_t n)
{
    aps_status st = moe_stash_dependencies(t, err, n);
    if (st != APS_OK)
        return st;
    st = fused_mlp_dependencies(t, err, n);
    if (st != APS_OK)
        return st;
    st = aps_offload_dependencies(t, err, n);
    if (st != APS_OK)
        return st;
    st = bf16_layers_dependencies(t, err, n);
    if (st != APS_OK)
        return st;
    const char *fw = aps_framework_name(t->framework);
    bool pytorch = t->framework == APS_FW_FSDP2 || t->framework == APS_FW_FSDP ||
                   t->framework == APS_FW_AUTOMODEL;
    if (t->compile_loss == 1 && !(aps_profile(t)->logits_bytes_compiled > 0)) {
        aps_fmt(err, n, "training.compile_loss: %s has no compiled loss "
                "(TorchTitan's compile.components = [\"loss\"], fsdp2)", fw);
        return APS_EINVAL;
    }
    /* the weights gathered in fp8 need an fp8 recipe; llm-foundry's FSDP1
     * has none (llmfoundry/utils/config_utils.py wraps te.Linear under
     * FSDP FULL_SHARD) */
    if (t->fp8_param_gather > 0 && !aps_prec_quantized(t->precision)) {
        aps_fmt(err, n, "training.fp8_param_gather needs an fp8, mxfp8 or "
                "nvfp4 precision (got %s)", aps_precision_name(t->precision));
        return APS_EINVAL;
    }
    if (t->fp8_param_gather > 0 && t->framework == APS_FW_FSDP) {
        aps_fmt(err, n, "training.fp8_param_gather does not exist in PyTorch "
                "FSDP1 / llm-foundry (Megatron --fp8-param-gather, TorchTitan "
                "enable_fsdp_float8_all_gather; got %s)", fw);
        return APS_EINVAL;
    }
    /* TorchTitan's async TP is a compile pass: CompileConfig.__post_init__
     * raises "Async TP requires 'model' in --compile.components and
     * --compile.enable" (torchtitan/config/configs.py:306-313 @ b5bcd76c) */
    if (t->tp_comm_overlap && t->framework == APS_FW_FSDP2 && !t->torch_compile) {
        aps_fmt(err, n, "training.tp_comm_overlap: TorchTitan's async tensor "
                "parallelism needs training.torch_compile = true (\"Async TP "
                "requires 'model' in --compile.components and "
                "--compile.enable\", torchtitan/config/configs.py)");
        return APS_EINVAL;
    }
    /* an AutoModel option (FSDP2Config.defer_fsdp_grad_sync, distributed/
     * config.py:318 @ 36044ad3); TorchTitan reduce-scatters every
     * micro-batch, no option to defer it */
    if (t->defer_fsdp_grad_sync != APS_DEFAULT &&
        t->framework != APS_FW_AUTOMODEL) {
        aps_fmt(err, n, "training.defer_fsdp_grad_sync: NeMo AutoModel's "
                "FSDP2Config option (framework automodel; got %s)", fw);
        return APS_EINVAL;
    }
    /* NeMo AutoModel's bf16-cast models (training.bf16_weights: types.h);
     * the other frameworks keep fp32 weights or an fp32 master */
    /* AutoModel's MaskedCrossEntropy option (loss/masked_ce.py:24) */
    if (t->loss_fp32_upcast != APS_DEFAULT &&
        t->framework != APS_FW_AUTOMODEL) {
        aps_fmt(err, n, "training.loss_fp32_upcast: NeMo AutoModel's "
                "MaskedCrossEntropy option (framework automodel; got %s)",
                fw);
        return APS_EINVAL;
    }
    /* TorchTitan's ChunkedLossWrapper (components/loss.py @ b5bcd76c);
     * the other frameworks run one cross entropy over the logits */
    if (t->loss_chunks > 1 && t->framework != APS_FW_FSDP2) {
        aps_fmt(err, n, "training.loss_chunks: TorchTitan's chunked loss "
                "(ChunkedLossWrapper num_chunks, framework fsdp2; got %s "
                "with %lld chunks)", fw, (long long)t->loss_chunks);
        return APS_EINVAL;
    }
    if (t->transformers_model && t->framework != APS_FW_AUTOMODEL) {
        aps_fmt(err, n, "training.transformers_model: only with framework "
                "= automodel (NeMo AutoModel's fallback to the transformers "
                "class; got %s)", fw);
        return APS_EINVAL;
    }
    if (t->bf16_weights && t->framework != APS_FW_AUTOMODEL) {
        aps_fmt(err, n, "training.bf16_weights: NeMo AutoModel's bf16-cast "
                "models (framework automodel; got %s); for bf16 Adam "
                "moments with an fp32 master see exp_avg_bf16", fw);
        return APS_EINVAL;
    }
    st = check_dropout_probabilities(t, err, n);
    if (st != APS_OK)
        return st;
    const char *asked = t->dropout == 1              ? "dropout"
                        : t->attention_dropout > 0.0 ? "attention_dropout"
                        : t->hidden_dropout > 0.0    ? "hidden_dropout"
                                                     : NULL;
    if (asked && !aps_profile(t)->dropout_option) {
        aps_fmt(err, n, "training.%s: %s trains without dropout "
                "(TorchTitan's models have none: torchtitan/models); set it "
                "%s", asked, fw, t->dropout == 1 ? "false" : "0");
        return APS_EINVAL;
    }
    if (t->exp_avg_bf16 && t->optimizer == APS_OPT_SGD) {
        aps_fmt(err, n, "training.exp_avg_bf16: needs an Adam optimizer "
                "(SGD has no exp_avg / exp_avg_sq)");
        return APS_EINVAL;
    }
    if (t->framework != APS_FW_MEGATRON &&
        (t->fsdp_impl == APS_FSDP_IMPL_MEGATRON_FSDP ||
         t->suggested_communication_unit_size > 0 || t->fsdp_double_buffer)) {
        aps_fmt(err, n, "training.%s: Megatron-FSDP is Megatron-LM's "
                "(--use-megatron-fsdp); framework is %s (set training."
                "framework = megatron with it)",
                t->fsdp_impl == APS_FSDP_IMPL_MEGATRON_FSDP
                    ? "fsdp_impl = megatron_fsdp"
                : t->fsdp_double_buffer ? "fsdp_double_buffer"
                                        : "suggested_communication_unit_size",
                fw);
        return APS_EINVAL;
    }
    if (t->fsdp_double_buffer &&
        t->fsdp_impl != APS_FSDP_IMPL_MEGATRON_FSDP) {
        aps_fmt(err, n, "training.fsdp_double_buffer: acts with fsdp_impl = "
                "megatron_fsdp only (Megatron-FSDP's --fsdp-double-buffer)");
        return APS_EINVAL;
    }
    /* mcore_fsdp_adapter.py:177-181 @ d98e8a64 */
    if (t->fsdp_double_buffer && t->overlap_moe_expert_parallel_comm) {
        aps_fmt(err, n, "training.fsdp_double_buffer with "
                "overlap_moe_expert_parallel_comm: \"1F1B overlap with FSDP "
                "does not support double buffer\" (mcore_fsdp_adapter.py)");
        return APS_EINVAL;
    }
    if (t->suggested_communication_unit_size !=
        floor(t->suggested_communication_unit_size)) {
        aps_fmt(err, n, "training.suggested_communication_unit_size: a whole "
                "number of elements (Megatron's int flag; got %g)",
                t->suggested_communication_unit_size);
        return APS_EINVAL;
    }
    if (t->suggested_communication_unit_size > 0 &&
        t->fsdp_impl != APS_FSDP_IMPL_MEGATRON_FSDP) {
        aps_fmt(err, n, "training.suggested_communication_unit_size: acts "
                "with fsdp_impl = megatron_fsdp only (Megatron-FSDP's "
                "--suggested-communication-unit-size)");
        return APS_EINVAL;
    }
    if (t->store_param_remainders && pytorch) {
        aps_fmt(err, n, "training.store_param_remainders: %s keeps fp32 "
                "weights; the bf16 remainder is apex DistributedFusedAdam's "
                "(megatron, deepspeed)", fw);
        return APS_EINVAL;
    }
    return APS_OK;
}

int64_t aps_strategy_devices(const aps_strategy *s)
{
    return s->dp_degree * s->fsdp_degree * s->tp_degree * s->pp_degree *
           s->cp_degree;
}

void aps_strategy_defaults(aps_strategy *s)
{
    *s = (aps_strategy){0};
    s->dp_degree = 1;
    s->fsdp_degree = 1;
    s->zero_stage = 0;
    s->reshard_after_forward = true;
    s->tp_degree = 1;
    s->sequence_parallel = true;
    s->pp_degree = 1;
    s->vpp_degree = 1;
    s->cp_degree = 1;
    s->cp_comm_type = APS_CP_P2P;
    s->micro_batch_size = 1;
    s->micro_batch_num = 0;
    s->layer_recompute = APS_RECOMPUTE_NONE;
    for (int i = 0; i < APS_MAX_STAGES; i++)
        s->recompute_num_layers[i] = -1;
    s->allow_idle_devices = false;
    s->moe_grouped_gemm = APS_DEFAULT;
}

/** The per-layer CUDA graph modules the model has (Megatron-LM
 *  transformer_config.py @ d98e8a64 l.2825-2836): moe_router needs
 *  experts ("moe cuda graph is only supported for MoE"), mlp a dense MLP
 *  layer (an MoE model's moe_layer_freq with dense layers; a hybrid MoE
 *  model takes Megatron's default of 1: none), mamba Mamba-2 layers. */
static aps_status check_graph_modules(const aps_model *m,
                                      const aps_training *t, char *err,
                                      size_t n)
{
    aps_cuda_graph_scope g = t->cuda_graph_scope;
    if (!t->cuda_graphs)
        return APS_OK;
    const char *why =
        aps_cuda_graph_modules(g, APS_CG_MOE_ROUTER) && !aps_model_is_moe(m)
            ? "moe_router: the model has no experts"
        : aps_cuda_graph_modules(g, APS_CG_MLP) &&
                !aps_model_has_dense_mlp_layer(m)
            ? "mlp: every layer of the model is an MoE layer (Megatron-Core: "
              "\"mlp cuda graph is only supported for dense layers\")"
        : aps_cuda_graph_modules(g, APS_CG_MAMBA) && !aps_model_is_hybrid(m)
            ? "mamba: the model has no Mamba-2 layers"
            : NULL;
    if (why == NULL)
        return APS_OK;
    aps_fmt(err, n, "training.cuda_graph_scope: %s (%s)", why, m->name);
    return APS_EINVAL;
}

aps_status aps_inputs_validate(const aps_model *m, const aps_cluster *c,
                               const aps_training *t, char *err, size_t n)
{
    const aps_device *d = &c->device;
    if (t->memory_limit_bytes > d->memory_bytes) {
        double lim = t->memory_limit_bytes / 1073741824.0;
        double cap = d->memory_bytes / 1073741824.0;
        /* within 0.005 GiB the two would print alike ("79.65 GiB exceeds
         * ... 79.65 GiB", a breaker's report): bytes then */
        if (fabs(lim - cap) < 0.005)
            aps_fmt(err, n, "training.memory_limit_bytes: %.0f bytes exceeds "
                    "the device capacity %.0f bytes (cluster.device."
                    "memory_bytes)", t->memory_limit_bytes, d->memory_bytes);
        else
            aps_fmt(err, n, "training.memory_limit_bytes: %.2f GiB exceeds "
                    "the device capacity %.2f GiB (cluster.device."
                    "memory_bytes)", lim, cap);
        return APS_EINVAL;
    }
    if (t->memory_limit_bytes == 0 && !(d->memory_bytes - t->memory_margin_bytes > 0)) {
        aps_fmt(err, n, "training.memory_margin_bytes: %.2f GiB leaves no "
                "memory of the device's %.4g GiB (cluster.device.memory_bytes)",
                t->memory_margin_bytes / 1073741824.0,
                d->memory_bytes / 1073741824.0);
        return APS_EINVAL;
    }
    if (t->precision == APS_PREC_FP8 && !(d->peak_flops_fp8 > 0)) {
        aps_fmt(err, n, "training.precision: fp8 on %s, which has no fp8 "
                "tensor cores (cluster.device.peak_flops_fp8 = 0)", d->name);
        return APS_ENOTIMPL;
    }
    /* MXFP8 and NVFP4 GEMMs run on Blackwell's block-scaled tensor cores
     * (TransformerEngine: MXFP8 and NVFP4 need compute capability 10.0+),
     * priced on a device with an NVFP4 peak.  AMD's CDNA 4 has MX block-
     * scaled matrix cores but no NVFP4 (presets.c, mi355x-288gb): its
     * MXFP8 path (ROCm's TransformerEngine) is not priced, so both are
     * refused there too, and the message says what is missing. */
    if (aps_prec_block_scaled(t->precision) &&
        !(d->peak_flops_fp4 > 0 && d->peak_flops_fp8 > 0)) {
        aps_fmt(err, n, "training.precision: %s on %s, which has no NVFP4 "
                "peak (cluster.device.peak_flops_fp4 = 0): apsearch prices "
                "mxfp8 and nvfp4 only at NVIDIA Blackwell's block-scaled "
                "GEMM rates (TransformerEngine), which it knows a device "
                "by; other MX matrix cores (AMD CDNA 4) are not priced",
                aps_precision_name(t->precision), d->name);
        return APS_ENOTIMPL;
    }
    aps_status ost = aps_offload_inputs(m, c, t, err, n);
    if (ost != APS_OK)
        return ost;
    if (t->activation_offload_layers > 0 && !(d->host_bandwidth > 0)) {
        aps_fmt(err, n, "training.activation_offload_layers: %lld with no "
                "host link (cluster.device.host_bandwidth = 0)",
                (long long)t->activation_offload_layers);
        return APS_EINVAL;
    }
    /* megatron/core/transformer/transformer_config.py: CPU offloading
     * "can be done only for layers less than num_layers" */
    if (t->activation_offload_layers >= m->num_layers) {
        aps_fmt(err, n, "training.activation_offload_layers: %lld must be "
                "below the model's num_layers = %lld (Megatron-LM "
                "transformer_config.py cpu_offloading_num_layers)",
                (long long)t->activation_offload_layers,
                (long long)m->num_layers);
        return APS_EINVAL;
    }
    /* the fused grouped MLP is the experts' (TEGroupedMLP): Megatron-Core
     * fuses SwiGLU, quick GeGLU and weighted squared ReLU (experts.py
     * _is_fused_impl_supported @ d98e8a64); apsearch prices SwiGLU's */
    if (t->cutedsl_fused_grouped_mlp && m->moe_router_input_probs) {
        aps_fmt(err, n, "training.cutedsl_fused_grouped_mlp: %s scales the "
                "experts' input by the routing weight, which the fused "
                "grouped MLP does not (\"Pre-multiplying probs is not "
                "supported\", megatron/core/transformer/moe/experts.py)",
                m->name);
        return APS_EINVAL;
    }
    if (t->cutedsl_fused_grouped_mlp &&
        !(m->num_experts > 0 && m->mlp == APS_MLP_SWIGLU)) {
        aps_fmt(err, n, "training.cutedsl_fused_grouped_mlp: %s %s", m->name,
                m->num_experts > 0
                    ? "has no SwiGLU experts (apsearch prices the fused "
                      "grouped MLP of SwiGLU experts)"
                    : "has no experts");
        return m->num_experts > 0 && m->mlp == APS_MLP_RELU2 ? APS_ENOTIMPL
                                                              : APS_EINVAL;
    }
    /* --moe-shared-expert-overlap overlaps the shared expert; the combined
     * 1F1B schedule overlaps expert-parallel all-to-alls: neither acts on
     * a model without them */
    if (t->moe_shared_expert_overlap &&
        !(m->num_experts > 0 && m->shared_expert_ffn_hidden_size > 0)) {
        aps_fmt(err, n, "training.moe_shared_expert_overlap: %s has no "
                "shared expert (shared_expert_ffn_hidden_size = 0)", m->name);
        return APS_EINVAL;
    }
    /* FixedPoolAllocator (param_and_grad_buffer.py:647-760 @ d98e8a64)
     * pools the most common layer size; layers of other sizes fall back
     * to dynamic buckets, which mfsdp.c does not estimate */
    if (t->fsdp_double_buffer &&
        (aps_model_is_hybrid(m) || aps_model_has_gdn(m))) {
        aps_fmt(err, n, "training.fsdp_double_buffer: %s has layers of "
                "different sizes; Megatron-FSDP's double buffer pools one "
                "size and allocates the others dynamically, which apsearch "
                "does not estimate", m->name);
        return APS_EINVAL;
    }
    /* the indexer's loss (transformer_config.py dsa_indexer_loss_coeff) */
    if (t->dsa_indexer_loss_coeff != 0 &&
        !(isfinite(t->dsa_indexer_loss_coeff) &&
          t->dsa_indexer_loss_coeff > 0 && aps_model_has_dsa(m))) {
        aps_fmt(err, n, "training.dsa_indexer_loss_coeff: must be 0 (none) or "
                "finite and > 0 with DeepSeek Sparse Attention (got %g; %s "
                "has %s)", t->dsa_indexer_loss_coeff, m->name,
                aps_model_has_dsa(m) ? "an indexer" : "no indexer");
        return APS_EINVAL;
    }
    if ((t->moe_expert_rank_capacity_factor > 0 || t->moe_paged_stash) &&
        m->num_experts == 0) {
        aps_fmt(err, n, "training.%s: %s has no experts (num_experts = 0)",
                t->moe_paged_stash ? "moe_paged_stash"
                                   : "moe_expert_rank_capacity_factor",
                m->name);
        return APS_EINVAL;
    }
    /* model x training refusals that no strategy changes: said once, exit
     * 2, rather than as every candidate's reason (a breaker's finding) */
    if (aps_moe_check_latent(m, t, err, n) != APS_REASON_NONE)
        return APS_EINVAL;
    if (check_graph_modules(m, t, err, n) != APS_OK)
        return APS_EINVAL;
    /* each linear-attention mixer its engine's (gdn.c MIXER_ENGINE) */
    if (aps_gdn_framework(m, t, err, n) != APS_OK)
        return APS_ENOTIMPL;
    if (aps_model_is_hybrid(m) && t->mtp_num_layers > 0 &&
        m->mtp_layer_pattern[0] == '\0') {
        aps_fmt(err, n, "training.mtp_num_layers = %lld: a hybrid model's MTP "
                "depth needs its layers, model.mtp_layer_pattern (Megatron "
                "--hybrid-layer-pattern after '/'; a config's "
                "mtp_hybrid_override_pattern)", (long long)t->mtp_num_layers);
        return APS_ENOTIMPL;
    }
    /* the flex dispatcher's backend (default DeepEP) acts on an MoE
     * model's token dispatch only */
    if (t->moe_flex_dispatcher_backend != APS_FLEX_DEEPEP &&
        m->num_experts == 0) {
        aps_fmt(err, n, "training.moe_flex_dispatcher_backend: %s has no "
                "experts to dispatch (num_experts = 0)", m->name);
        return APS_EINVAL;
    }
    if (t->overlap_moe_expert_parallel_comm && m->num_experts == 0) {
        aps_fmt(err, n, "training.overlap_moe_expert_parallel_comm: %s has "
                "no experts (num_experts = 0)", m->name);
        return APS_EINVAL;
    }
    if (m->position_embedding == APS_POS_LEARNED &&
        t->seq_length > m->max_position_embeddings) {
        aps_fmt(err, n, "training.seq_length: %lld is longer than the model's "
                "learned positions (max_position_embeddings = %lld)",
                (long long)t->seq_length,
                (long long)m->max_position_embeddings);
        return APS_EINVAL;
    }
    return APS_OK;
}
