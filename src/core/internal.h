/*
 * internal.h -- helpers shared by the core sources; not installed.
 */
#ifndef APS_CORE_INTERNAL_H
#define APS_CORE_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include "apsearch/core.h"

/** snprintf into msg when msg is non-NULL (n > 0); always NUL-terminated. */
void aps_fmt(char *msg, size_t n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/** True if the NUL-terminated string in a buffer of cap bytes is printable
 *  UTF-8 (no control characters) (names.c). */
bool aps_text_ok(const char *s, size_t cap);

/** Megatron-LM --make-vocab-size-divisible-by default (arguments.py). */
#define APS_VOCAB_DIVISOR 128

/** Data-parallel gradient buffers a framework keeps besides the grads. */
typedef enum {
    APS_DP_BUFFERS_NONE = 0,  /**< reduces in place (Megatron's grad buffer) */
    APS_DP_BUFFERS_DDP,       /**< torch DDP buckets (training ddp_bucket_*) */
    APS_DP_BUFFERS_DEEPSPEED  /**< reduce and all-gather buckets */
} aps_dp_buffers;

/** What the framework profile decides about memory and time (profile.c,
 *  one entry per aps_framework, each citing its source). */
typedef struct {
    double weight_bytes;         /**< per parameter, before sharding */
    double grad_bytes;           /**< also the gradient reduce dtype */
    double optimizer_bytes_adam; /**< master copy + Adam m, v */
    double optimizer_bytes_sgd;  /**< master copy + momentum */
    double logits_bytes;         /**< per logit, the loss at its peak */
    int64_t vocab_divisor;       /**< default vocab_size_divisible_by */
    bool transformer_engine;     /**< fp8 through TransformerEngine: fp8
                                      weight caches, fp8 saved GEMM inputs */
    bool op_sac_selective;       /**< "selective" = TorchTitan op-level AC */
    bool shard_over_cp;          /**< FSDP over dp_shard x cp when cp > 1 */
    bool sync_every_microbatch;  /**< DDP / HSDP reduce per micro-batch */
    bool first_last_partition_only; /**< only first/last stage may differ */
    aps_dp_buffers dp_buffers;
    double dp_reduce_bucket;     /**< elements (DEEPSPEED buffers) */
    double dp_allgather_bucket;  /**< elements (DEEPSPEED buffers) */
    double gather_budget;        /**< ZeRO-3 parameters gathered at once,
                                      elements; 0 = whole FSDP units */
    double reduce_budget;        /**< ZeRO-3 gradients reduced at once */
    double fp8_cast_bytes;       /**< HBM bytes per element cast to fp8
                                      for a GEMM (both layouts) */
    double fp8_fused_cast_bytes; /**< the same for a tensor whose producer
                                      (norm, activation, its gradient)
                                      writes fp8 itself; 0 = not fused */
    bool interleaved_p2p_overlap;/**< honours training.overlap_p2p_comm */
    bool eager_elementwise;      /**< without training.torch_compile its
                                      norms, RoPE and activation run as
                                      one kernel per PyTorch op */
    int64_t dp_rails;            /**< NICs per node its DP / sharding
                                      collectives reach; 0 = all */
    double reuse_distance;       /**< ZeRO-3: a parameter whose next use is
                                      more than this many parameters away
                                      is released and gathered again
                                      (recompute); 0 = kept */
} aps_framework_profile;

/** The profile of the training config's framework (profile.c). */
const aps_framework_profile *aps_profile(const aps_training *t);

/** Bytes of one activation element in the training precision: 2 for bf16,
 *  fp16 and fp8 (TransformerEngine keeps activations between layers in bf16). */
#define APS_ACT_BYTES 2.0
/** Bytes of an fp32 element (softmax statistics, fp32 logits, main grads). */
#define APS_FP32_BYTES 4.0
/** Bytes of a dropout mask element (torch.bool / uint8). */
#define APS_MASK_BYTES 1.0

/** Layer counts per stage plus derived quantities every estimator needs. */
typedef struct {
    int64_t p, v, m, t, c, b, s_local; /**< s_local = s / c */
    int64_t layers[APS_MAX_STAGES];
    int64_t first[APS_MAX_STAGES];
    int64_t recompute[APS_MAX_STAGES]; /**< layers fully recomputed */
    double vocab_padded;
} aps_layout;

/** Fills the layout; returns a reason when the partition is invalid. */
aps_reason aps_layout_build(const aps_model *m, const aps_training *t,
                            const aps_strategy *s, aps_layout *out,
                            char *msg, size_t n);

/** Vocabulary padded to a multiple of vocab_size_divisible_by * t
 *  (Megatron megatron/training/tokenizer: _vocab_size_with_padding). */
double aps_padded_vocab(const aps_model *m, const aps_training *t, int64_t tp);

/** Parameters of one layer held on one TP rank: matrices / t, column-
 *  parallel biases / t, row-parallel biases and norms replicated
 *  (Shoeybi et al. 2019, s.3; megatron/core/tensor_parallel/layers.py). */
double aps_layer_params_tp(const aps_model *m, int64_t tp);
/** Matrix parameters of one layer (split over tp ranks) that a ZeRO-3
 *  recompute gathers a second time: walking the layer's weights in forward
 *  order (QKV, output projection, MLP input, MLP output), between a
 *  weight's use in the recomputed forward and in the backward every weight
 *  after it is fetched twice (the rest of the forward, then the backward in
 *  reverse), so a weight is released and fetched again when twice the
 *  parameters after it exceed `distance` (DeepSpeed
 *  stage3_max_reuse_distance, deepspeed/runtime/zero/
 *  partitioned_param_coordinator.py).  distance <= 0: none. */
double aps_regathered_params(const aps_model *m, int64_t tp, double distance);

/** Parameters held by pipeline rank i under TP (embedding on rank 0, output
 *  layer and final norm on rank p-1; a tied output layer is a second copy
 *  there when p > 1, megatron/core/models/common/language_module). */
double aps_stage_params(const aps_model *m, const aps_layout *lay, int64_t i);

/** Parameters of the largest FSDP unit on rank i (one layer, the embedding
 *  or the output layer with the final norm; TorchTitan wraps each). */
double aps_largest_unit_params(const aps_model *m, const aps_layout *lay,
                               int64_t i);

/** Peak dense FLOP/s of the GEMMs in this precision. */
double aps_peak_flops(const aps_device *d, aps_precision p);

/** Data-parallel sharding plan derived from (R, S, c, zero_stage). */
typedef struct {
    int64_t shard_group;    /**< ranks model states are sharded over */
    int64_t replicate;      /**< HSDP replicate degree R (1 otherwise) */
    int64_t dp_group;       /**< ranks gradients are synchronised over */
    bool fsdp_like;         /**< weights sharded: gathered every micro-batch */
    aps_state_bytes bytes;  /**< per-parameter bytes and shard flags */
} aps_dp_plan;

void aps_dp_plan_build(const aps_training *t, const aps_strategy *s,
                       aps_dp_plan *out);

/** Costs of one transformer layer for one micro-batch on one device;
 *  identical on every stage, so computed once per strategy. */
typedef struct {
    double act_full;       /**< bytes saved, no recompute */
    double act_selective;  /**< bytes saved with selective recompute */
    double act_input;      /**< bytes saved with full recompute (input) */
    double gemm_fwd;       /**< s, linear layers */
    double attn_fwd;       /**< s, attention core (bf16) */
    double attn_bwd;       /**< s */
    double selective_fwd;  /**< s recomputed per layer under "selective" */
    double membound_fwd;   /**< s, norms, residuals, activations, rope */
    double fp8_cast_fwd;   /**< s, fp8 casts of the GEMM inputs */
    double fp8_cast_bwd;   /**< s, fp8 casts of the GEMM output gradients */
    double tp_fwd;         /**< s, TP collectives in the forward */
    double tp_bwd;         /**< s */
    double cp_fwd;         /**< s, CP communication total, forward */
    double cp_bwd;         /**< s */
} aps_layer_cost;

/** Memory of pipeline rank i by category into st (memory.c). */
void aps_stage_memory(const aps_model *m, const aps_cluster *c,
                      const aps_training *t, const aps_strategy *s,
                      const aps_layout *lay, const aps_dp_plan *plan,
                      const aps_layer_cost *lc, int64_t i,
                      aps_stage_estimate *st);

/** Bytes one layer saves per micro-batch under TorchTitan's op-level
 *  selective checkpointing (memory.c). */
double aps_op_sac_bytes(const aps_model *m, const aps_training *t,
                        const aps_strategy *s);
/** Bytes per element of a saved linear-layer input (memory.c). */
double aps_gemm_input_bytes(const aps_training *t);
/** Bytes per logit held by the loss at its peak, by framework (memory.c). */
double aps_logits_bytes_per_element(const aps_training *t);
/** Matrix parameters of one layer that TorchTitan's op-level selective
 *  checkpointing recomputes: the even-numbered matmuls (compute.c). */
double aps_op_sac_recompute_params(const aps_model *m);

/** Activation bytes (memory.c). */
void aps_layer_activations(const aps_model *m, const aps_training *t,
                           const aps_strategy *s, aps_layer_cost *out);
/** Compute and communication seconds (compute.c). */
void aps_layer_times(const aps_model *m, const aps_cluster *c,
                     const aps_training *t, const aps_strategy *s,
                     aps_layer_cost *out);

/** Seconds of a GEMM of M x K by K x N at the device's efficiency for its
 *  size (compute.c). */
double aps_gemm_time(const aps_device *d, aps_precision p, double M,
                     double N, double K);

#endif
