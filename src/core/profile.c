/*
 * profile.c -- what the training framework decides about memory and time,
 * in one table: the estimators ask the profile, never the framework name.
 * (What each framework can run at all is check.c's aps_check_framework.)
 * Every entry cites the framework file or paper it comes from.
 */
#include "internal.h"

/** DeepSpeed ZeRO defaults, in elements (deepspeed/runtime/zero/config.py):
 *  stage3_max_live_parameters, reduce_bucket_size, allgather_bucket_size. */
#define APS_DS_MAX_LIVE_PARAMS 1e9
#define APS_DS_REDUCE_BUCKET 5e8
#define APS_DS_ALLGATHER_BUCKET 5e8
/** stage3_max_reuse_distance default, parameters (same file): a gathered
 *  parameter whose next use is further than this is released. */
#define APS_DS_MAX_REUSE_DISTANCE 1e9
/** fp8 casts, HBM bytes per element, both GEMM layouts of the tensor.
 *  TransformerEngine, delayed scaling: a cast-transpose pass reads bf16
 *  once and writes the fp8 tensor and its transpose, recording the amax for
 *  the next step's scale (transformer_engine cast_transpose): 2 + 1 + 1.
 *  Where TE fuses the cast into the kernel producing the tensor
 *  (LayerNormLinear, LayerNormMLP's activation, the activation's gradient)
 *  that kernel writes fp8 and a transpose pass follows: 1 + (1 + 1).
 *  torchao float8, dynamic tensorwise scaling (TorchTitan): the scale needs
 *  the amax first, a pass of its own (2), then a pass writing both layouts
 *  (2 + 1 + 1) -- torch.compile fuses the two casts (torchao docs,
 *  "Quantized Training": to_fp8 of the input and of its transpose, of the
 *  output gradient for dgrad and wgrad). */
#define APS_FP8_CAST_TE 4.0
#define APS_FP8_FUSED_CAST_TE 3.0
#define APS_FP8_CAST_DYNAMIC 6.0
/** TorchTitan ChunkedLossWrapper.Config.num_chunks default
 *  (torchtitan/components/loss.py:544 @ b5bcd76c). */
#define APS_TORCHTITAN_LOSS_CHUNKS 8

static const aps_framework_profile profiles[] = {
    [APS_FW_MEGATRON] = {
        /* bf16 weights, fp32 main grads, fp32 master + Adam m, v:
         * 2 + 4 + 12 = 18 B/param (Megatron-LM docs, distributed
         * optimizer; NVIDIA/Megatron-LM issue 654); bf16 training forces
         * fp32 gradient accumulation (arguments.py). */
        .weight_bytes = 2.0, .grad_bytes = 4.0,
        .optimizer_bytes_adam = 12.0, .optimizer_bytes_sgd = 8.0,
        /* fused vocab-parallel cross-entropy: bf16 logits + one fp32
         * buffer turned into the gradient in place
         * (megatron/core/tensor_parallel/cross_entropy.py) */
        .logits_bytes = 6.0,
        .vocab_divisor = APS_VOCAB_DIVISOR,
        .transformer_engine = true,
        /* transformer_impl "transformer_engine", Megatron-Core's default
         * (megatron/core/transformer/transformer_config.py:1314 @
         * d98e8a64): every linear and grouped linear is a TE module, in
         * bf16 as in fp8 */
        .te_gemm_workspaces = true,
        .fp8_cast_bytes = APS_FP8_CAST_TE,
        .fp8_fused_cast_bytes = APS_FP8_FUSED_CAST_TE,
        /* TE quantizes before the sequence-parallel all-gather of a GEMM
         * input (TransformerEngine d0067d0da transformer_engine/pytorch/
         * module/layernorm_linear.py and linear.py forward:
         * gather_along_first_dim(..., quantizer=input_quantizer)) and of
         * an output gradient (base.py grad_output_preprocess, the same
         * call with the grad_output quantizer); distributed.py gathers
         * Float8, MXFP8 and NVFP4 tensors (_all_gather_fp8, _mxfp8,
         * _nvfp4).  Reduce-scatters stay bf16. */
        .tp_gather_quantized = APS_PREC_BIT(APS_PREC_FP8) |
                               APS_PREC_BIT(APS_PREC_MXFP8) |
                               APS_PREC_BIT(APS_PREC_NVFP4),
        /* --decoder-first/last-pipeline-num-layers: the balanced split
         * makes only the first and last pipeline stage differ (any other
         * split is written as --pipeline-model-parallel-layout) */
        .first_last_partition_only = true,
        /* overlap_p2p_comm: the interleaved schedule posts a chunk's sends
         * and runs the next chunk (megatron/core/pipeline_parallel/
         * schedules.py; arguments.py --no-overlap-p2p-communication) */
        .interleaved_p2p_overlap = true,
        /* --recompute-num-layers: the first N layers of every model chunk
         * (megatron/core/transformer/transformer_block.py
         * _checkpointed_forward), one N for all */
        .recompute_count_per_chunk = true,
        /* the contiguous grad buffer is the grads themselves */
        .dp_buffers = APS_DP_BUFFERS_NONE,
        /* TransformerConfig hidden_dropout = attention_dropout = 0.1
         * (megatron/core/transformer/transformer_config.py:188, 191 @
         * d98e8a64; --hidden-dropout / --attention-dropout through
         * ArgumentGroupFactory(TransformerConfig), megatron/training/
         * arguments.py:2373) */
        .dropout = true,
        .dropout_option = true,
        /* Megatron-LM's examples set no PYTORCH_CUDA_ALLOC_CONF: PyTorch's
         * default, fixed segments (Megatron-Bridge's performance launcher
         * sets expandable segments: its stack line, lua/apsearch/
         * stacks.lua) */
        .expandable_segments = false,
        .grad_stats_world_group = true,
        .tied_embedding_group = true,
        /* TransformerConfig.__post_init__ takes num_query_groups that
         * are "a multiple or divisor of tensor_model_parallel_size"
         * (transformer_config.py l.1461-1468 @ d98e8a64) */
        .kv_head_replication = true,
    },
    [APS_FW_DEEPSPEED] = {
        /* fp16 weights and grads, fp32 master + Adam: 2 + 2 + 12 = 16
         * (Rajbhandari et al. 2020, ZeRO, s.3.1, K = 12) */
        .weight_bytes = 2.0, .grad_bytes = 2.0,
        .optimizer_bytes_adam = 12.0, .optimizer_bytes_sgd = 8.0,
        .logits_bytes = 6.0,            /* Megatron-DeepSpeed's loss */
        .vocab_divisor = APS_VOCAB_DIVISOR,
        .transformer_engine = true,
        .fp8_cast_bytes = APS_FP8_CAST_TE,
        .fp8_fused_cast_bytes = APS_FP8_FUSED_CAST_TE,
        .dp_buffers = APS_DP_BUFFERS_DEEPSPEED,
        .dp_reduce_bucket = APS_DS_REDUCE_BUCKET,
        .dp_allgather_bucket = APS_DS_ALLGATHER_BUCKET,
        /* ZeRO-3 gathers sub-module parameters up to a live budget and
         * reduces gradients in buckets, not whole layers */
        .gather_budget = APS_DS_MAX_LIVE_PARAMS,
        .reduce_budget = APS_DS_REDUCE_BUCKET,
        .reuse_distance = APS_DS_MAX_REUSE_DISTANCE,
        /* One NIC per GPU for its data-parallel collectives: measured,
         * not derived.  Narayanan et al. SC'21 Table 2 ran ZeRO-3 at a
         * fixed global batch on 384-1,536 (175B) and 640-2,240 (530B)
         * A100s; from 768 to 1,536 and from 1,120 to 2,240 GPUs the
         * aggregate throughput stays flat (47.1k and 25.0-25.5k tokens/s),
         * which is what gathers bound by a per-GPU link rate do (each GPU
         * moves the same volume however many there are), and the rate is
         * 16-21 GB/s per GPU: one 200 Gb/s NIC, where NCCL's rail-aligned
         * rings over eight NICs give 8x that (PyTorch FSDP on the
         * MosaicML runs).  Override: training.dp_collective_rails. */
        .dp_rails = 1,
        /* Megatron-DeepSpeed's megatron/arguments.py keeps Megatron-LM's
         * --hidden-dropout / --attention-dropout default 0.1 */
        .dropout = true,
        .dropout_option = true,
        .expandable_segments = false,
    },
    [APS_FW_FSDP2] = {
        /* sharded fp32 parameters are the master copy, fp32 grads, Adam
         * m, v (TorchTitan: mixed_precision_param bf16, reduce fp32) */
        .weight_bytes = 4.0, .grad_bytes = 4.0, .grads_follow_params = true,
        .optimizer_bytes_adam = 8.0, .optimizer_bytes_sgd = 4.0,
        /* eager F.cross_entropy(logits.float()): fp32 log-softmax, its
         * dense gradient and the input gradient alive entering the
         * backward, 4 + 4 + 4 */
        .logits_bytes = 12.0,
        /* compiled (training.compile, the loss among the compiled
         * components since 2025-04): the upcast, log-softmax and its
         * gradient fuse into kernels over the bf16 logits, which hold the
         * logits and their gradient: 2 + 2 */
        .logits_bytes_compiled = 4.0,
        /* under TP the output projection is ColwiseParallel with
         * output_layouts Shard(-1) and the loss runs in loss_parallel()
         * (torchtitan parallelize_llama.py @ 9dec370 and @ d66b72a,
         * disable_loss_parallel default false): its fused backward,
         * torch/distributed/tensor/parallel/loss.py
         * _nll_loss_and_log_softmax_backward, computes
         * (grad_input + torch.exp(x)) * grad_output over the shard with
         * grad_input = zeros_like(x): the fp32 log-softmax output x, the
         * zeros, exp(x) and their sum are alive at once, 4 + 4 + 4 + 4 */
        .logits_bytes_loss_parallel = 16.0,
        /* ChunkedLossWrapper, the loss of TorchTitan's model configs since
         * 786e26f8e (2026-04-27, PR 2937: llama3, qwen3, qwen3_5,
         * deepseek_v3, gpt_oss, kimi_k2_7 config_registry.py @ b5bcd76c),
         * Config.num_chunks = 8 (components/loss.py:544); runs of earlier
         * releases take 1 (lua/apsearch/stacks.lua) */
        .loss_chunks = APS_TORCHTITAN_LOSS_CHUNKS,
        /* SequenceParallel norms, then PrepareModuleInput all-gathers to
         * Replicate() in front of the ColwiseParallel linears, whose
         * autograd saves that gathered input (memory.c gemm_input_bytes) */
        .sp_saves_gathered = true,
        .vocab_divisor = 1,
        /* float8 linears with dynamic tensorwise scaling
         * (torchtitan/components/quantization/float8.py) */
        .fp8_cast_bytes = APS_FP8_CAST_DYNAMIC,
        /* torchtitan/models/llama3/model.py: RMSNorm, apply_rotary_emb and
         * silu(w1 x) * w3 x in PyTorch ops; fused only when compiled */
        .eager_elementwise = true,
        /* "selective" = selective_ac_option "op"
         * (torchtitan/distributed/activation_checkpoint.py) */
        .op_sac_selective = true,
        /* torchtitan/models/common/feed_forward.py:54 @ b5bcd76c:
         * self.w2(F.silu(self.w1(x)) * self.w3(x)); eager autograd keeps
         * w1's output (SiLU's input), the SiLU's output and w3's (the
         * multiply's), and the product (w2's input); compiled, the
         * partitioner recomputes the SiLU in the backward (the held-out
         * Qwen3-14B pair on 8 B200, memory_reports.csv hq14 / hq17: 20.2
         * GiB apart, 21.3 GiB by this term) */
        .eager_unfused_swiglu = true,
        /* float8 tensorwise under TP: Float8ColwiseParallel /
         * Float8RowwiseParallel cast the input to float8 before the
         * all-gather and NoopFwToFloat8BwDynamic casts the output gradient
         * before the backward's all-gather (pytorch/ao 36027d82d
         * torchao/float8/float8_tensor_parallel.py; TorchTitan
         * parallelize_llama.py at 3faaa1a0d picks them with float8
         * linears).  Its MX / NVFP4 linears run plain ColwiseParallel. */
        .tp_gather_quantized = APS_PREC_BIT(APS_PREC_FP8),
        /* fsdp_enabled = dp_shard_enabled or cp_enabled
         * (torchtitan/distributed/parallel_dims.py) */
        .shard_over_cp = true,
        /* the experts' sparse mesh pp x dp_replicate x efsdp x ep, efsdp =
         * dp_shard x cp x tp / ep (pytorch/torchtitan b5bcd76c torchtitan/
         * distributed/parallel_dims.py l.242, l.280-282; distributed/
         * fsdp.py l.29, l.81): sharded within a replica, copied across
         * replicas as the dense weights.  AutoModel's ep_shard spans the
         * replicas (distributed/mesh_utils.py l.316-319, 385-427 @
         * 36044ad3): false there. */
        .experts_replicated = true,
        /* gradient accumulation without no_sync / set_requires_all_reduce
         * (torchtitan train.py) */
        .sync_every_microbatch = true,
        /* torch/distributed/pipelining/stage.py (PyTorch, as TorchTitan
         * runs it): each micro-batch's backward sets
         * set_reshard_after_backward(False) and
         * set_requires_gradient_sync(False); the gradients, upcast to the
         * fp32 reduce dtype, accumulate unsharded and are reduce-scattered
         * once after the last micro-batch */
        .pp_unsharded_grads = true,
        /* a step's passes of training.local_batch_size (TorchTitan
         * trainer.py l.409-428 @ b5bcd76c; AutoModel step_scheduler.py
         * l.113-119, train_ft.py l.542-548 @ 36044ad3), each a
         * torch.distributed.pipelining schedule */
        .torch_pipelining = true,
        .dp_buffers = APS_DP_BUFFERS_DDP,
        /* torchtitan/models at b5bcd76c: no dropout module in any model */
        .dropout = false,
        /* run_train.sh:43 @ b5bcd76c: PYTORCH_ALLOC_CONF=
         * "expandable_segments:True" (since a5e57e4a, 2024-10-22,
         * run_llama_train.sh) */
        .expandable_segments = true,
        /* torchtitan/models/moe/moe.py MoE.forward @ 176498c (and
         * models/moe.py @ 99fee81): the routing scores multiply the
         * routed tokens outside the experts, (x.to(torch.float32) *
         * top_scores_experts_sorted).to(x.dtype), on the T k gathered
         * input (score_before_experts, Llama 4 / Qwen3) or on the
         * experts' combined output (DeepSeek-V3); autograd's mul keeps
         * the fp32 copy for the scores' gradient, 4 bytes.  Compiled, the
         * min-cut partitioner (torch/_functorch/partitioners.py) saves
         * the bf16 tensor the cast reads and recomputes the cast: 2 */
        .moe_score_operand_bytes = 4.0,
        .moe_score_operand_bytes_compiled = 2.0,
    },
    [APS_FW_FSDP] = {
        .weight_bytes = 4.0, .grad_bytes = 4.0, .grads_follow_params = true,
        .optimizer_bytes_adam = 8.0, .optimizer_bytes_sgd = 4.0,
        /* llm-foundry's default loss_fn = fused_crossentropy, flash-attn's
         * CrossEntropyLoss: bf16 logits + a bf16 gradient
         * (llmfoundry/models/mpt/modeling_mpt.py) */
        .logits_bytes = 4.0,
        .vocab_divisor = 1,
        /* llm-foundry's fp8 is TransformerEngine's te.Linear */
        .fp8_cast_bytes = APS_FP8_CAST_TE,
        .eager_elementwise = true,
        .fp8_fused_cast_bytes = APS_FP8_FUSED_CAST_TE,
        .dp_buffers = APS_DP_BUFFERS_DDP,
        /* MPTConfig resid_pdrop = emb_pdrop = 0.0 (llmfoundry/models/mpt/
         * configuration_mpt.py @ 0085285a), set > 0 to train with it */
        .dropout = false,
        .dropout_option = true,
        .expandable_segments = false,
    },
    /* NVIDIA NeMo AutoModel (NVIDIA-NeMo/Automodel 36044ad3, below "AM";
     * paths under nemo_automodel/components/): PyTorch FSDP2 over Hugging
     * Face models, like TorchTitan where not said otherwise. */
    [APS_FW_AUTOMODEL] = {
        /* the same states as TorchTitan's: FSDP2Config.mp_policy
         * param_dtype bf16, reduce_dtype fp32, output_dtype bf16 over fp32
         * sharded parameters (AM distributed/config.py:306-311, and
         * moe/parallelizer.py:665-671 for MoE models), optimizers from the
         * YAML (torch.optim.Adam / AdamW: fp32 m, v) */
        .weight_bytes = 4.0, .grad_bytes = 4.0, .grads_follow_params = true,
        .optimizer_bytes_adam = 8.0, .optimizer_bytes_sgd = 4.0,
        /* the recipes' default loss, MaskedCrossEntropy() (AM recipes/llm/
         * train_ft.py:161), fp32_upcast = True (loss/masked_ce.py:24):
         * logits.float() then F.cross_entropy (l.74-83), TorchTitan's
         * eager loss: 4 + 4 + 4.  No compiled loss (compile_loss refused);
         * no loss_parallel: under TP the loss sees the whole vocabulary */
        .logits_bytes = 12.0,
        /* DTensor parallel styles as TorchTitan's (distributed/
         * parallelizer.py, optimized_tp_plans.py) */
        .sp_saves_gathered = true,
        .vocab_divisor = 1,
        /* BackendConfig.linear = "te" when TransformerEngine is installed
         * (AM models/common/utils.py:331): every linear a TE module, its
         * fp8 TransformerEngine's (BackendConfig te_fp8; examples/
         * llm_benchmark/qwen/qwen3_moe_30b_te_fp8.yaml), its cuBLAS
         * workspaces allocated (the expert GEMMs are grouped_gemm /
         * torch._grouped_mm, utils.py:335, not TE: the MoE streams are
         * not counted apart) */
        .transformer_engine = true,
        .te_gemm_workspaces = true,
        .fp8_cast_bytes = APS_FP8_CAST_TE,
        .fp8_fused_cast_bytes = APS_FP8_FUSED_CAST_TE,
        /* BackendConfig.rms_norm = "torch_fp32" (utils.py:332): eager
         * norms (training.rms_norm_backend "te": TE's fused RMSNorm);
         * RoPE eager too: __post_init__ forces rope_fusion off (issue
         * #3027) */
        .eager_elementwise = true,
        /* activation_checkpointing = "selective": "TorchTitan-style per-op
         * selective activation checkpointing" (AM moe/parallelizer.py
         * apply_ac, l.461-464; distributed/activation_checkpointing.py) */
        .op_sac_selective = true,
        /* the FSDP mesh is dp_shard_cp when cp > 1 (AM distributed/
         * mesh_utils.py:330-334, moe/parallelizer.py:1078-1082) */
        .shard_over_cp = true,
        /* FSDP2Config.defer_fsdp_grad_sync = True (AM distributed/
         * config.py:318): set_requires_gradient_sync(is_optim_step)
         * (distributed/utils.py:254-256), so gradients are reduced after
         * the last micro-batch only; DDP runs no_sync (l.258-259) */
        .sync_every_microbatch = false,
        .defer_grad_sync = true,
        /* under PP parameters and gradients stay unsharded until a
         * schedule's last backward: the launch file's model.backend.
         * enable_fsdp_optimizations false leaves PyTorch's stage backward
         * in place (train_ft.py l.571-573, pipelining/functional.py
         * l.985-990 @ 36044ad3; its patch, moe/fsdp_mixin.py:281-289,
         * reduces at the same point for an FSDP-wrapped stage) */
        .pp_unsharded_grads = true,
        /* a step's passes of training.local_batch_size (TorchTitan
         * trainer.py l.409-428 @ b5bcd76c; AutoModel step_scheduler.py
         * l.113-119, train_ft.py l.542-548 @ 36044ad3), each a
         * torch.distributed.pipelining schedule */
        .torch_pipelining = true,
        .dp_buffers = APS_DP_BUFFERS_DDP,
        /* Hugging Face configs carry their dropout (policy reads it);
         * AutoModel's own MoE models (models/qwen3_moe, deepseek_v3)
         * build no dropout module: off by default, on when asked */
        .dropout = false,
        .dropout_option = true,
        /* the benchmark YAMLs set PYTORCH_CUDA_ALLOC_CONF=
         * "expandable_segments:True" in their env (AM examples/
         * llm_benchmark/gpt_oss/gptoss_120b_te_deepep.yaml:118,
         * qwen/qwen3_moe_30b_te_fp8.yaml:121; examples/convergence/tulu3/
         * training/launch.sh:34) */
        .expandable_segments = true,
        /* the routing probabilities multiply inside the experts'
         * activation, (inter * permuted_probs).to(x.dtype) (AM moe/
         * experts.py:769, swiglu_deepep; the all-gather path passes
         * permuted_probs to the same activation, l.692-716), as in
         * Megatron: nothing saved outside the experts */
        .moe_score_operand_bytes = 0.0,
    },
};

const aps_framework_profile *aps_profile(const aps_training *t)
{
    unsigned f = (unsigned)t->framework;
    if (f >= sizeof profiles / sizeof profiles[0])
        f = APS_FW_MEGATRON;
    return &profiles[f];
}
