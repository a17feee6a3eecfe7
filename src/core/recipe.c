/*
 * recipe.c -- the recipe settings frameworks' performance configurations
 * turn on, resolved against each framework's default, and what each one
 * changes: gradient dtype, fp8 parameter gather, activation offload to
 * host memory, TP communication overlap, the compiled loss.  Which
 * framework can run which setting is aps_check_recipe (FRAMEWORK_
 * UNSUPPORTED, with its source).  Defaults and sources: docs/modeling.md
 * "Recipe settings".
 */
#include "internal.h"

bool aps_recipe_grad_reduce_in_fp32(const aps_training *t)
{
    if (t->grad_reduce_in_fp32 != APS_DEFAULT)
        return t->grad_reduce_in_fp32 != 0;
    return aps_profile(t)->grad_bytes >= APS_FP32_BYTES;
}

double aps_recipe_grad_bytes(const aps_training *t)
{
    const aps_framework_profile *fw = aps_profile(t);
    /* PyTorch FSDP keeps the sharded gradient in the dtype of the sharded
     * (fp32) parameter whatever it reduces in (FSDP2 MixedPrecisionPolicy
     * reduce_dtype casts for the reduce-scatter only) */
    if (fw->grads_follow_params)
        return t->bf16_weights ? APS_ACT_BYTES : fw->grad_bytes;
    return aps_recipe_grad_reduce_in_fp32(t) ? APS_FP32_BYTES : APS_ACT_BYTES;
}

double aps_recipe_grad_reduce_bytes(const aps_training *t)
{
    return aps_recipe_grad_reduce_in_fp32(t) ? APS_FP32_BYTES : APS_ACT_BYTES;
}

bool aps_recipe_fp8_param_gather(const aps_training *t)
{
    return t->fp8_param_gather > 0 && aps_prec_quantized(t->precision);
}

double aps_recipe_gather_bytes(const aps_training *t, double psi,
                               double matmul_psi)
{
    double bytes = APS_ACT_BYTES * psi;
    if (aps_recipe_fp8_param_gather(t))
        bytes -= (APS_ACT_BYTES - aps_quantized_bytes(t->precision)) *
                 matmul_psi;
    return bytes;
}

bool aps_recipe_compile_loss(const aps_training *t)
{
    bool on = t->compile_loss == APS_DEFAULT ? t->torch_compile
                                             : t->compile_loss > 0;
    return on && aps_profile(t)->logits_bytes_compiled > 0;
}

bool aps_recipe_defer_grad_sync(const aps_training *t)
{
    return t->defer_fsdp_grad_sync == APS_DEFAULT
               ? aps_profile(t)->defer_grad_sync
               : t->defer_fsdp_grad_sync > 0;
}

double aps_recipe_moe_score_operand_bytes(const aps_training *t)
{
    const aps_framework_profile *f = aps_profile(t);
    return t->torch_compile ? f->moe_score_operand_bytes_compiled
                            : f->moe_score_operand_bytes;
}

bool aps_recipe_fuse_qkv(const aps_training *t)
{
    /* torchtitan 3396a4b37 (PR 3714, 2026-06-24): fuse_qkv = True in the
     * llama3, qwen3 and gpt_oss builders */
    return t->framework == APS_FW_FSDP2 && t->fuse_qkv != 0;
}

bool aps_recipe_sac_save_a2a(const aps_training *t)
{
    /* torchtitan c4e2291 (PR 1672) added
     * _c10d_functional.all_to_all_single to the op-SAC save lists */
    return t->sac_save_alltoall != 0;
}

double aps_recipe_logits_bytes(const aps_training *t)
{
    return aps_recipe_logits_bytes_tp(t, 1);
}

/** Bytes per logit of an eager F.cross_entropy over bf16 logits: the
 *  profile's fp32 accounting (log-softmax, its dense gradient and the
 *  input gradient alive entering the backward, 4 + 4 + 4: profile.c
 *  fsdp2) in the logits' own dtype, 2 + 2 + 2 (AutoModel's
 *  MaskedCrossEntropy with fp32_upcast false skips logits.float(),
 *  loss/masked_ce.py:74-83 @ 36044ad3). */
#define APS_LOGITS_BF16_EAGER 6.0

double aps_recipe_logits_bytes_tp(const aps_training *t, int64_t tp)
{
    const aps_framework_profile *fw = aps_profile(t);
    /* training.logits_bytes: what a release's loss holds, when it is not
     * the profile's (Megatron-LM before core 0.8, lua/apsearch/stacks.lua) */
    if (t->logits_bytes > 0)
        return t->logits_bytes;
    if (t->loss_fp32_upcast == 0) /* training.c: automodel only */
        return APS_LOGITS_BF16_EAGER;
    if (aps_recipe_compile_loss(t))
        return fw->logits_bytes_compiled;
    if (tp > 1 && fw->logits_bytes_loss_parallel > 0)
        return fw->logits_bytes_loss_parallel;
    return fw->logits_bytes;
}

bool aps_recipe_unfused_swiglu(const aps_training *t)
{
    return t->hf_eager_layer || t->unfused_swiglu ||
           (!t->torch_compile && aps_profile(t)->eager_unfused_swiglu);
}

int64_t aps_recipe_loss_chunks(const aps_training *t)
{
    int64_t c = t->loss_chunks > 0 ? t->loss_chunks
                                   : aps_profile(t)->loss_chunks;
    return c > 1 ? c : 1;
}

bool aps_recipe_dropout(const aps_training *t)
{
    if (t->dropout != APS_DEFAULT)
        return t->dropout != 0;
    return aps_profile(t)->dropout;
}

bool aps_recipe_attention_dropout(const aps_training *t)
{
    if (t->attention_dropout != APS_DEFAULT)
        return t->attention_dropout > 0.0;
    return aps_recipe_dropout(t);
}

bool aps_recipe_hidden_dropout(const aps_training *t)
{
    if (t->hidden_dropout != APS_DEFAULT)
        return t->hidden_dropout > 0.0;
    return aps_recipe_dropout(t);
}

bool aps_recipe_expandable_segments(const aps_training *t)
{
    if (t->expandable_segments != APS_DEFAULT)
        return t->expandable_segments != 0;
    return aps_profile(t)->expandable_segments;
}

double aps_recipe_fragmentation(const aps_training *t)
{
    return aps_recipe_expandable_segments(t)
               ? t->allocator_fragmentation_expandable
               : t->allocator_fragmentation;
}

double aps_recipe_tp_exposed(const aps_training *t, int64_t tp, double comm,
                             double gemm)
{
    if (comm <= 0.0)
        return 0.0;
    double plain = comm * (1.0 - t->tp_overlap);
    if (!t->tp_comm_overlap || tp < 2)
        return plain;
    /* The collective is split into tp chunks, each chunk's GEMM running
     * while the next chunk moves (TE userbuffers ring exchange,
     * transformer_engine/pytorch/module/base.py initialize_ub; PyTorch
     * async TP, torch/distributed/_symmetric_memory micro-pipelined
     * all-gather matmul): the first chunk is always exposed, the rest
     * wherever the GEMMs are shorter than the transfer. */
    double first = comm / (double)tp;
    double rest = comm - first - gemm * (double)(tp - 1) / (double)tp;
    double chunked = first + (rest > 0.0 ? rest : 0.0);
    /* never more exposed than without it (a tp_overlap above 1 - 1/tp
     * already hides more than the first chunk) */
    return chunked < plain ? chunked : plain;
}

/** Seconds of copying `bytes` over the host link not hidden by `window`
 *  seconds of compute. */
static double offload_exposed(const aps_device *d, double bytes,
                              double window)
{
    double copy = bytes / d->host_bandwidth;
    return copy > window ? copy - window : 0.0;
}

void aps_recipe_offload_times(const aps_device *d, int64_t layers,
                              double bytes, double layer_fwd,
                              double layer_bwd, double *total,
                              double *exposed_fwd, double *exposed_bwd)
{
    *total = *exposed_fwd = *exposed_bwd = 0.0;
    if (layers <= 0 || bytes <= 0.0)
        return;
    double n = (double)layers;
    /* each offloaded layer's saved set goes to host while the next
     * layer's forward runs and comes back while the layer after it runs
     * its backward (TE get_cpu_offload_context, double-buffered) */
    *total = 2.0 * n * bytes / d->host_bandwidth;
    *exposed_fwd = n * offload_exposed(d, bytes, layer_fwd);
    *exposed_bwd = n * offload_exposed(d, bytes, layer_bwd);
}

int64_t aps_recipe_offload_layers(const aps_training *t, int64_t layers,
                                  int64_t v)
{
    int64_t n = t->activation_offload_layers * v;
    return n < layers ? n : layers;
}

void aps_recipe_resolve(const aps_training *t, aps_recipe *out)
{
    out->grad_reduce_in_fp32 = aps_recipe_grad_reduce_in_fp32(t);
    out->fp8_param_gather = aps_recipe_fp8_param_gather(t);
    out->compile_loss = aps_recipe_compile_loss(t);
    out->grad_bytes = aps_recipe_grad_bytes(t);
    out->grad_reduce_bytes = aps_recipe_grad_reduce_bytes(t);
    out->logits_bytes = aps_recipe_logits_bytes(t);
    out->attention_dropout = aps_recipe_attention_dropout(t);
    out->hidden_dropout = aps_recipe_hidden_dropout(t);
    out->dropout = out->attention_dropout || out->hidden_dropout;
    out->expandable_segments = aps_recipe_expandable_segments(t);
    out->fragmentation = aps_recipe_fragmentation(t);
}

/** microbatch_group_size is Megatron-LM's alone: --microbatch-group-size-
 *  per-virtual-pipeline-stage (ModelParallelConfig, megatron/core/
 *  model_parallel_config.py:431-436 at d98e8a64) regroups its own
 *  interleaved table; PyTorch pipelining's Interleaved1F1B (TorchTitan,
 *  AutoModel) and DeepSpeed's PipeSchedule have no such setting. */
static aps_reason check_group_size(const aps_training *t,
                                   const aps_strategy *s, char *msg, size_t n)
{
    if (s->microbatch_group_size == 0 || t->framework == APS_FW_MEGATRON)
        return APS_REASON_NONE;
    aps_fmt(msg, n, "%s: microbatch_group_size = %lld is Megatron-LM's "
            "(--microbatch-group-size-per-virtual-pipeline-stage); this "
            "framework's pipeline schedules take no group size (use 0)",
            aps_framework_name(t->framework),
            (long long)s->microbatch_group_size);
    return APS_REASON_FRAMEWORK_UNSUPPORTED;
}

aps_reason aps_check_recipe(const aps_training *t, const aps_strategy *s,
                            char *msg, size_t n)
{
    const char *fw = aps_framework_name(t->framework);
    /* split rules: Megatron-LM and TorchTitan count the embedding and the
     * loss (--account-for-*-in-pipeline-split; TorchTitan's default) and
     * take any per-chunk split, fill_last's and fill_first's too
     * (--pipeline-model-parallel-layout; module_fqns_per_model_part);
     * Megatron-DeepSpeed
     * partitions by layer type and has no per-part list (PipelineModule
     * partition_method uniform | parameters | type:, deepspeed/runtime/
     * pipe/module.py _partition_layers, microsoft/DeepSpeed 38327e07) */
    bool ds = t->framework == APS_FW_DEEPSPEED;
    bool am = t->framework == APS_FW_AUTOMODEL;
    if (s->pp_degree > 1 && s->pipeline_split != APS_SPLIT_EVEN && !am &&
        ds != (s->pipeline_split == APS_SPLIT_DEEPSPEED_TYPE)) {
        aps_fmt(msg, n, "%s: pipeline_split = %s is not offered (Megatron-LM "
                "and TorchTitan: even, embedding_loss, fill_last, "
                "fill_first; Megatron-DeepSpeed: even, deepspeed_type; NeMo "
                "AutoModel: even, fill_first)", fw,
                aps_pipeline_split_name(s->pipeline_split));
        return APS_REASON_FRAMEWORK_UNSUPPORTED;
    }
    /* NeMo AutoModel splits the layers L // S per stage, one more to each
     * of the first L mod S, the embedding on the first and the norm and
     * lm_head on the last without counting them (NVIDIA-NeMo/Automodel
     * 36044ad3 nemo_automodel/components/distributed/pipelining/
     * functional.py generate_hf_model_fqn_per_model_part, l.138-151) */
    if (s->pp_degree > 1 && s->pipeline_split != APS_SPLIT_EVEN &&
        s->pipeline_split != APS_SPLIT_FILL_FIRST && am) {
        aps_fmt(msg, n, "%s: pipeline_split = %s; AutoModel splits L // S "
                "per stage, the first L mod S one more (pipelining/"
                "functional.py generate_hf_model_fqn_per_model_part): use "
                "fill_first, even or stage_partition", fw,
                aps_pipeline_split_name(s->pipeline_split));
        return APS_REASON_FRAMEWORK_UNSUPPORTED;
    }
    /* pipeline schedules: Megatron-LM runs its own (interleaved) 1F1B
     * (megatron/core/pipeline_parallel/schedules.py, d98e8a64
     * get_forward_backward_func: no zero-bubble schedule), DeepSpeed its
     * PipeSchedule TrainSchedule (1F1B, deepspeed/runtime/pipe/
     * schedule.py); TorchTitan takes any PyTorch pipelining class
     * (parallelism.pipeline_parallel_schedule -> get_schedule_class,
     * torchtitan b5bcd76c, which imports ScheduleDualPipeV and places its
     * stages in a V); llm-foundry's FSDP has no pipeline (check.c) */
    if (s->pp_degree > 1 && s->pp_schedule != APS_PP_1F1B &&
        (t->framework == APS_FW_MEGATRON ||
         t->framework == APS_FW_DEEPSPEED)) {
        aps_fmt(msg, n, "%s: pp_schedule = %s is not offered (Megatron-LM "
                "and DeepSpeed run 1F1B, interleaved with vpp; zero-bubble "
                "and DualPipeV schedules: TorchTitan, fsdp2)", fw,
                aps_pp_schedule_name(s->pp_schedule));
        return APS_REASON_FRAMEWORK_UNSUPPORTED;
    }
    aps_reason r = check_group_size(t, s, msg, n);
    if (r != APS_REASON_NONE)
        return r;
    /* megatron/training/arguments.py (d98e8a64): CPU offloading asserts
     * pipeline parallelism off and no recompute */
    if (t->activation_offload_layers > 0 && t->framework == APS_FW_MEGATRON &&
        (s->pp_degree > 1 || s->layer_recompute != APS_RECOMPUTE_NONE)) {
        aps_fmt(msg, n, "megatron: activation_offload_layers = %lld with "
                "pp_degree = %lld, layer_recompute = %s; Megatron-LM's "
                "--cpu-offloading needs pipeline parallelism and recompute "
                "off (megatron/training/arguments.py)",
                (long long)t->activation_offload_layers,
                (long long)s->pp_degree,
                s->layer_recompute == APS_RECOMPUTE_NONE ? "none"
                : s->layer_recompute == APS_RECOMPUTE_FULL ? "full"
                                                             : "selective");
        return APS_REASON_FRAMEWORK_UNSUPPORTED;
    }
    /* --tp-comm-overlap asserts --sequence-parallel (arguments.py) */
    if (t->tp_comm_overlap && t->framework == APS_FW_MEGATRON &&
        s->tp_degree > 1 && !s->sequence_parallel) {
        aps_fmt(msg, n, "megatron: tp_comm_overlap needs sequence_parallel "
                "(megatron/training/arguments.py)");
        return APS_REASON_FRAMEWORK_UNSUPPORTED;
    }
    /* (fp8_param_gather without a quantized precision, or under FSDP1:
     * the training's own inconsistency, aps_training_dependencies) */
    /* TorchTitan's full activation checkpointing and llm-foundry's wrap
     * each block on its own (torchtitan/distributed/
     * activation_checkpoint.py): groups of several layers are Megatron's
     * (and Megatron-DeepSpeed's --checkpoint-num-layers) */
    if (s->layer_recompute == APS_RECOMPUTE_FULL &&
        s->recompute_method == APS_RECOMPUTE_UNIFORM &&
        s->recompute_num_layers[0] > 1 &&
        (t->framework == APS_FW_FSDP2 || t->framework == APS_FW_FSDP ||
         t->framework == APS_FW_AUTOMODEL)) {
        aps_fmt(msg, n, "%s: recompute_method = uniform in groups of %lld "
                "layers; its activation checkpointing wraps each block on "
                "its own", fw, (long long)s->recompute_num_layers[0]);
        return APS_REASON_FRAMEWORK_UNSUPPORTED;
    }
    /* Megatron checkpoints a multi-token-prediction layer under uniform
     * full recompute only one layer per group: Megatron-LM d98e8a64
     * megatron/core/transformer/multi_token_prediction.py:1621-1627
     * asserts recompute_num_layers == 1 in the first forward (after
     * validate_args has passed) */
    if (s->layer_recompute == APS_RECOMPUTE_FULL &&
        s->recompute_method == APS_RECOMPUTE_UNIFORM &&
        s->recompute_num_layers[0] > 1 && t->mtp_num_layers > 0 &&
        t->framework == APS_FW_MEGATRON) {
        aps_fmt(msg, n, "%s: recompute_method = uniform in groups of %lld "
                "layers with mtp_num_layers = %lld; Megatron-LM asserts "
                "recompute_num_layers == 1 for MTP recompute "
                "(multi_token_prediction.py)", fw,
                (long long)s->recompute_num_layers[0],
                (long long)t->mtp_num_layers);
        return APS_REASON_FRAMEWORK_UNSUPPORTED;
    }
    /* TorchTitan's MX and NVFP4 linears keep bf16 weights and gather
     * them in bf16 (torchtitan/components/quantization/mx.py; only the
     * float8 tensorwise recipe had a float8 all-gather) */
    if (t->fp8_param_gather > 0 && t->framework == APS_FW_FSDP2 &&
        aps_prec_block_scaled(t->precision)) {
        aps_fmt(msg, n, "%s: fp8_param_gather with %s does not exist in "
                "TorchTitan (its MX / NVFP4 linears gather bf16 weights; "
                "enable_fsdp_float8_all_gather is the float8 tensorwise "
                "recipe's)", fw, aps_precision_name(t->precision));
        return APS_REASON_FRAMEWORK_UNSUPPORTED;
    }
    /* NeMo AutoModel's float8 all-gather is torchao's
     * (FP8Config.enable_fsdp_float8_all_gather, nemo_automodel/components/
     * quantization/fp8.py:37 @ 36044ad3) on torch linears; its default
     * linears are TransformerEngine's (BackendConfig linear = "te",
     * models/common/utils.py:331), whose fp8 (te_fp8) apsearch models
     * with bf16 FSDP gathers */
    if (t->fp8_param_gather > 0 && t->framework == APS_FW_AUTOMODEL) {
        aps_fmt(msg, n, "%s: fp8_param_gather is torchao's "
                "enable_fsdp_float8_all_gather on torch linears "
                "(nemo_automodel/components/quantization/fp8.py); the "
                "estimate models AutoModel's default TransformerEngine "
                "linears, which gather bf16 weights", fw);
        return APS_REASON_FRAMEWORK_UNSUPPORTED;
    }
    /* Megatron --cpu-offloading (megatron/core/transformer/
     * transformer_config.py cpu_offloading_num_layers, TE
     * get_cpu_offload_context); TorchTitan, llm-foundry and
     * Megatron-DeepSpeed have no per-layer activation offload */
    if (t->activation_offload_layers > 0 && t->framework != APS_FW_MEGATRON) {
        aps_fmt(msg, n, "%s: activation_offload_layers = %lld; activation "
                "offload to host is Megatron-LM's --cpu-offloading-num-layers",
                fw, (long long)t->activation_offload_layers);
        return APS_REASON_FRAMEWORK_UNSUPPORTED;
    }
    /* MXFP8 / NVFP4 recipes are TransformerEngine's (Megatron) and
     * torchao's MX linears (TorchTitan); DeepSpeed and llm-foundry run
     * TE's per-tensor fp8 only */
    if (aps_prec_block_scaled(t->precision) &&
        (t->framework == APS_FW_DEEPSPEED || t->framework == APS_FW_FSDP)) {
        aps_fmt(msg, n, "%s: precision %s is not offered (block-scaled "
                "recipes: Megatron-LM --fp8-recipe mxfp8 / --fp4-format "
                "e2m1, TorchTitan mx converter)", fw,
                aps_precision_name(t->precision));
        return APS_REASON_FRAMEWORK_UNSUPPORTED;
    }
    return APS_REASON_NONE;
}
