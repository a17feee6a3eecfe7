/*
 * internal.h -- helpers shared by the core sources; not installed.
 */
#ifndef APS_CORE_INTERNAL_H
#define APS_CORE_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include "apsearch/core.h"

/** snprintf into msg when msg is non-NULL (n > 0); always NUL-terminated;
 *  a message longer than n - 1 bytes ends in "..." where it was cut. */
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
/** The bit of precision p in a set of precisions (aps_framework_profile
 *  tp_gather_quantized). */
#define APS_PREC_BIT(p) (1u << (unsigned)(p))

typedef struct {
    double weight_bytes;         /**< per parameter, before sharding */
    double grad_bytes;           /**< default main-gradient dtype, also
                                      the reduce dtype (recipe.c) */
    bool grads_follow_params;    /**< sharded grads take the sharded
                                      (fp32) parameter's dtype whatever
                                      the reduce dtype (PyTorch FSDP) */
    double optimizer_bytes_adam; /**< master copy + Adam m, v */
    double optimizer_bytes_sgd;  /**< master copy + momentum */
    double logits_bytes;         /**< per logit, the loss at its peak */
    double logits_bytes_compiled;/**< the same with training.torch_compile
                                      when the framework compiles the
                                      loss; 0 = not compiled */
    bool sp_saves_gathered;      /**< under sequence parallelism the
                                      column-parallel linears save their
                                      all-gathered input (DTensor
                                      Replicate), not the sequence shard */
    double logits_bytes_loss_parallel; /**< per logit of the rank's vocab
                                      shard, the eager loss under TP when
                                      the framework runs it vocab-parallel;
                                      0 = as logits_bytes */
    int64_t loss_chunks;         /**< chunks of the output layer and loss
                                      (training.loss_chunks); 0 = 1 */
    int64_t vocab_divisor;       /**< default vocab_size_divisible_by */
    bool transformer_engine;     /**< fp8 through TransformerEngine: fp8
                                      weight caches, fp8 saved GEMM inputs */
    bool te_gemm_workspaces;     /**< every GEMM through TransformerEngine
                                      (Megatron-Core's TE layer spec, also
                                      in bf16): its cuBLAS workspaces are
                                      allocated (memory.c te_workspaces) */
    bool op_sac_selective;       /**< "selective" = TorchTitan op-level AC */
    bool eager_unfused_swiglu;   /**< without training.torch_compile the
                                      SwiGLU runs as w2(silu(w1 x) * w3 x)
                                      in eager PyTorch, keeping the SiLU's
                                      output too (memory.c) */
    unsigned tp_gather_quantized;/**< bit (1u << aps_precision) set: under
                                      that precision the sequence-parallel
                                      all-gathers of GEMM inputs (forward)
                                      and output gradients (backward) carry
                                      the quantized tensor */
    bool shard_over_cp;          /**< FSDP over dp_shard x cp when cp > 1 */
    bool experts_replicated;     /**< under HSDP the routed experts are
                                      sharded within a replica and copied
                                      across dp_replicate, not sharded over
                                      the whole expert-dp group
                                      (aps_moe_expert_shard) */
    bool sync_every_microbatch;  /**< DDP / HSDP reduce per micro-batch */
    bool recompute_count_per_chunk; /**< one recompute count applies to
                                      every model chunk (Megatron
                                      --recompute-num-layers) */
    bool pp_unsharded_grads;     /**< FSDP under pipeline parallelism keeps
                                      parameters and gradients unsharded
                                      across micro-batches, reducing once
                                      per pass (aps_layout passes) */
    bool torch_pipelining;       /**< pipelines run by torch.distributed.
                                      pipelining under a trainer that runs
                                      a step as passes of training.
                                      local_batch_size sequences, each one
                                      schedule (TorchTitan trainer.py,
                                      AutoModel train_ft.py); its
                                      Interleaved1F1B takes any m that is a
                                      multiple of its rounds (aps_torch_
                                      interleaved_group) */
    bool defer_grad_sync;        /**< without pipeline parallelism, FSDP
                                      gradients of micro-batches before the
                                      last are not reduced: they accumulate
                                      unsharded, in fp32, and are reduce-
                                      scattered once per step (parameters
                                      still reshard after each backward) */
    bool first_last_partition_only; /**< balanced splits keep the middle
                                         stages equal (what per-stage flags
                                         express; any split runs as a
                                         layout) */
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
    bool dropout;                /**< its models' default hidden and
                                      attention dropout is on */
    bool dropout_option;         /**< its models can train with dropout
                                      (training.dropout = true) */
    bool expandable_segments;    /**< its launcher sets PYTORCH_CUDA_
                                      ALLOC_CONF=expandable_segments:True */
    bool grad_stats_world_group; /**< the distributed optimizer reduces the
                                      gradient norm over the whole world, a
                                      communicator of its own; without it
                                      over the model-parallel (TP x PP)
                                      group (Megatron-LM core_v0.6.0
                                      optimizer/distrib_optimizer.py:523-528,
                                      optimizer.py:122; d98e8a64
                                      optimizer/__init__.py:674, the
                                      INTRA_DISTRIBUTED_OPTIMIZER_INSTANCE_
                                      GROUP of parallel_state.py:1561-1576,
                                      all ranks of the one instance) */
    bool tied_embedding_group;   /**< with PP and tied embeddings the first
                                      and last stage all-reduce the word
                                      embedding's gradient over a group of
                                      their own (core_v0.6.0 parallel_state
                                      _EMBEDDING_GROUP; distributed/
                                      finalize_model_grads.py) */
    bool kv_head_replication;    /**< fewer KV heads (query groups) than
                                      TP ranks run when the ranks divide
                                      them: each rank all-gathers the QKV
                                      output and keeps one KV head and its
                                      a / t query heads (Megatron-Core
                                      attention.py l.353-379 and
                                      get_query_key_value_tensors l.1851-
                                      1868 @ d98e8a64); without it the TP
                                      degree must divide the KV heads
                                      (TorchTitan decoder.py l.195-199 @
                                      b5bcd76c) */
    double moe_score_operand_bytes; /**< per element of the routed tokens
                                      (T k rows x h) the routing-score
                                      multiply outside the experts keeps
                                      for the scores' gradient, eager;
                                      0 = the scores multiply inside the
                                      experts' activation (Megatron) */
    double moe_score_operand_bytes_compiled; /**< the same with
                                      training.torch_compile */
} aps_framework_profile;

/** The profile of the training config's framework (profile.c). */
const aps_framework_profile *aps_profile(const aps_training *t);

/** Bytes of one activation element in the training precision: 2 for bf16,
 *  fp16 and fp8 (TransformerEngine keeps activations between layers in bf16). */
#define APS_ACT_BYTES 2.0
/** Bytes of an fp32 element (softmax statistics, fp32 logits, main grads). */
#define APS_FP32_BYTES 4.0
/** Adam's state tensors besides the master weight: exp_avg and exp_avg_sq
 *  (Kingma & Ba 2015, Algorithm 1: m_t and v_t). */
#define APS_ADAM_MOMENTS 2.0
/** Bytes of a dropout mask element (torch.bool / uint8). */
#define APS_MASK_BYTES 1.0
/** Bytes of an fp8 element (E4M3 / E5M2) and of an MXFP8 block scale
 *  (float8_e4m3fn data, float8_e8m0fnu scales; the paged stash keeps both
 *  as uint8, moe/paged_stash.py allocate_stash_buffers). */
#define APS_FP8_BYTES 1.0
/** MXFP8: one E8M0 scale byte per 32-element block (OCP MX v1.0 s.5); a
 *  columnwise copy's scales are num_tokens // 32 rows (moe/paged_stash.py
 *  SCALE_INV_BLOCK_SIZE = 32). */
#define APS_MXFP8_BLOCK 32.0

/** Layer counts per stage plus derived quantities every estimator needs. */
typedef struct {
    int64_t p, v, m, t, c, b, s_local; /**< s_local = s / c; m the
                                            micro-batches of one pass */
    int64_t passes;                    /**< pipeline schedules per step,
                                            each of m micro-batches
                                            (aps_step_passes) */
    int64_t layers[APS_MAX_STAGES];
    int64_t first[APS_MAX_STAGES];
    int64_t recompute[APS_MAX_STAGES]; /**< layers fully recomputed */
    int64_t chunk[APS_MAX_STAGES];     /**< layers per model chunk, p v
                                            entries in model order (rank
                                            of each: aps_chunk_stage) */
    bool chunks_valid;                 /**< chunk[] sums to layers[] (false
                                            once stages are rebalanced:
                                            then equal chunks) */
    double vocab_padded;
    int sched;                         /**< aps_pp_schedule */
    int64_t g;                         /**< micro-batches per group of the
                                            interleaved table (strategy
                                            microbatch_group_size; 0 = p) */
    int64_t mtp;                       /**< multi-token-prediction layers
                                            (training.mtp_num_layers), after
                                            the last model chunk's decoder
                                            layers (not in layers[] or
                                            chunk[]: aps_layout_run_layers);
                                            their eh_proj, norms, output
                                            layer and loss are the loss
                                            stage's */
    int64_t mtp_depth_layers;          /**< layers of one MTP depth: 1,
                                            a hybrid model's
                                            mtp_layer_pattern length
                                            (aps_hybrid_mtp_depth_layers) */
    int64_t mtp_held;                  /**< MTP depths whose weights are
                                            held: mtp, or 1 with
                                            training.mtp_repeated_layer */
    bool mtp_recompute;                /**< full recompute also rebuilds the
                                            MTP layers: the uniform method
                                            (multi_token_prediction.py
                                            _checkpointed_forward @ d98e8a64;
                                            block skips them, with a
                                            warning) */
    bool dsa_split_free;               /**< a model chunk may start on a
                                            layer that reuses an earlier
                                            layer's DSA top-k: the framework
                                            passes it across pipeline
                                            stages (aps_dsa_split_free) */
} aps_layout;

/** FSDP gradients held unsharded in fp32 until the step's last
 *  micro-batch: under PP (profile pp_unsharded_grads) or with deferred
 *  gradient sync and more than one micro-batch (defer_grad_sync);
 *  memory.c. */
bool aps_fsdp_grads_deferred(const aps_training *t, const aps_layout *lay);

/** FSDP holds every parameter of the stage unsharded (not only the
 *  current and the prefetched unit): parameters not resharded after
 *  forward, or AutoModel's pipeline stages (profile pp_unsharded_grads:
 *  moe/fsdp_mixin.py patched_backward_maybe_with_nosync keeps them
 *  gathered until the last micro-batch); memory.c. */
bool aps_fsdp_holds_stage(const aps_training *t, const aps_strategy *s,
                          const aps_layout *lay);

/** Layers fully recomputed on pipeline rank i of k layers as the strategy
 *  gives them (before auto_recompute): none unless layer_recompute is
 *  full; recompute_num_layers[i] (-1: all) under the block method; all
 *  of them under uniform, whose recompute_num_layers is the group size. */
int64_t aps_given_recompute(const aps_strategy *s, int64_t i, int64_t k);

/** One recompute count n for every model chunk (Megatron's
 *  --recompute-num-layers, block method): the smallest n that gives each
 *  rank at least its lay->recompute[i] layers, then each rank's
 *  recompute set to what n gives it, the sum over its chunks of
 *  min(n, chunk layers) (pipeline.c). */
void aps_layout_one_recompute_count(aps_layout *lay);

/** aps_dsa_chunks_check on the layout's model chunks (after balancing:
 *  balance.c's layouts are checked here, not by aps_chunk_layers). */
aps_reason aps_layout_dsa_check(const aps_model *m, const aps_layout *lay,
                                char *msg, size_t n);
/** Layers of model chunk k (0 .. v-1) of pipeline rank i: lay->chunk, or
 *  the rank's layers split as evenly as they go (pipeline.c). */
int64_t aps_layout_chunk(const aps_layout *lay, int64_t i, int64_t k);
/** Rank i's decoder layers as ranges of the model's layer indices, one
 *  per model chunk in its place (chunk k of rank i is the model's chunk
 *  k p + i, Megatron's interleaving): start[k] .. start[k] + len[k] - 1
 *  for k < the count returned (v; 1 without virtual stages: first[i],
 *  layers[i]).  start and len hold APS_MAX_STAGES entries (pipeline.c). */
int64_t aps_layout_rank_spans(const aps_layout *lay, int64_t i,
                              int64_t *start, int64_t *len);
/** Multi-token-prediction depths rank i runs: aps_layout.mtp on the rank
 *  holding the last model chunk, 0 elsewhere. */
int64_t aps_layout_mtp_depths(const aps_layout *lay, int64_t i);
/** Multi-token-prediction depths rank i runs on the weights of another
 *  depth (training.mtp_repeated_layer: all but one), whose parameters it
 *  does not hold. */
int64_t aps_layout_mtp_shared_depths(const aps_layout *lay, int64_t i);
/** Multi-token-prediction layers rank i runs: its depths x
 *  aps_layout.mtp_depth_layers. */
int64_t aps_layout_mtp_layers(const aps_layout *lay, int64_t i);
/** Transformer layers rank i runs: its decoder layers (layers[i]) and its
 *  multi-token-prediction layers, each a layer of the last decoder
 *  layer's type.  What a layer costs in time and memory is counted over
 *  these; the split and recompute are over the decoder layers. */
int64_t aps_layout_run_layers(const aps_layout *lay, int64_t i);
/** Transformer layers rank i fully recomputes: its decoder layers'
 *  lay->recompute[i] and, under the uniform method
 *  (aps_layout.mtp_recompute), its multi-token-prediction layers. */
int64_t aps_layout_run_recompute(const aps_layout *lay, int64_t i);

/** Micro-batches of strategy s in one step: its micro_batch_num, else
 *  B / (b * D) with D = dp x fsdp (0 when D b is 0). */
int64_t aps_step_microbatches(const aps_training *t, const aps_strategy *s);
/** Pipeline schedules a step of strategy s runs: (B / D) / L with L =
 *  training.local_batch_size under pipeline parallelism (TorchTitan
 *  trainer.py gradient_accumulation_steps, AutoModel step_scheduler.py
 *  grad_acc_steps), else 1 (without PP the micro-batch is the local
 *  batch; one step of m micro-batches).  Assumes aps_check_pp passed
 *  (L a multiple of b dividing B / D). */
int64_t aps_step_passes(const aps_training *t, const aps_strategy *s);

/** Rounds of PyTorch's multi-stage schedules (Interleaved1F1B,
 *  InterleavedZeroBubble) on m micro-batches and p ranks: max(1, m // p)
 *  (torch/distributed/pipelining/schedules.py @ pytorch 1fd7abc2
 *  number_of_rounds); 1 for p < 1. */
int64_t aps_torch_rounds(int64_t m, int64_t p);
/** Micro-batches per round of PyTorch's ScheduleInterleaved1F1B on m
 *  micro-batches and p ranks: m / aps_torch_rounds(m, p)
 *  (torch/distributed/pipelining/schedules.py @ pytorch 1fd7abc2
 *  ScheduleInterleaved1F1B.__init__: microbatches_per_round).  Its order
 *  is Megatron's interleaved table with that group size (warm-up
 *  (v - 1) G + 2 (p - 1 - rank), a chunk change every G micro-batches),
 *  so the simulation runs it as microbatch_group_size G. */
int64_t aps_torch_interleaved_group(int64_t m, int64_t p);

/** Fills the layout; returns a reason when the partition is invalid. */
aps_reason aps_layout_build(const aps_model *m, const aps_training *t,
                            const aps_strategy *s, aps_layout *out,
                            char *msg, size_t n);

/** Per-micro-batch times of every pipeline rank: forward, backward and
 *  the backward's weight-gradient part (tf, tb, tw), and the rank's fixed
 *  work within each (ef, eb, ew: the embedding on rank 0, the output
 *  layer and loss on rank p - 1). */
typedef struct {
    double tf[APS_MAX_STAGES], tb[APS_MAX_STAGES], tw[APS_MAX_STAGES];
    double ef[APS_MAX_STAGES], eb[APS_MAX_STAGES], ew[APS_MAX_STAGES];
} aps_stage_times;

/** Pipeline time of one step (schedule.c), seconds, into *step: builds
 *  the forward, backward and weight-gradient time of every model chunk
 *  from its rank's, scaled by the chunk's share of the rank's layers (the
 *  layer part, tf[i] - ef[i]) and with the rank's fixed work on the first
 *  stage (embedding) and the last (output layer and loss), the p2p
 *  transfer times between consecutive stages (aps_pipeline_p2p), and
 *  simulates lay->sched (aps_schedule_simulate), recording into tl.
 *  Without a timeline (tl NULL): when aps_schedule_lower_bound already
 *  exceeds `cutoff` seconds, *step is that bound (> cutoff) and nothing
 *  is simulated, O(p v) instead of O(p v m); and a simulation of the same
 *  inputs this thread remembers (aps_schedule_memo_find) returns its
 *  step.  Returns what aps_schedule_simulate returns (APS_OK when not
 *  simulated). */
aps_status aps_pipeline_step(const aps_model *m, const aps_cluster *c,
                             const aps_strategy *s, const aps_layout *lay,
                             const aps_stage_times *r, aps_timeline *tl,
                             double cutoff, double *step);

/** True for the schedules that place a rank's two model chunks in a V
 *  (stages i and 2p - 1 - i: ZBVZeroBubble, DualPipeV; PyTorch
 *  generate_stage_to_rank_mapping style "v"). */
static inline bool aps_schedule_v_shaped(int sched)
{
    return sched == APS_PP_ZBV || sched == APS_PP_DUALPIPEV;
}

/** The stage (the model's j-th chunk, 0 .. p v - 1) that model chunk k of
 *  pipeline rank i runs: i + k p (Megatron's interleaving, PyTorch style
 *  "loop"), or on the V (v = 2) i for k = 0 and 2p - 1 - i for k = 1
 *  (torch/distributed/pipelining/schedules.py
 *  generate_stage_to_rank_mapping, style "v"). */
static inline int64_t aps_chunk_stage(int sched, int64_t p, int64_t i,
                                      int64_t k)
{
    if (aps_schedule_v_shaped(sched) && k < 2) /* v = 2 (aps_check_pp) */
        return k == 0 ? i : 2 * p - 1 - i;
    return i + k * p;
}

/** The pipeline rank holding the model's last chunk (the final norm, the
 *  output layer and the loss): rank 0 on the V, whose second chunk is
 *  stage 2p - 1 (aps_chunk_stage), else p - 1. */
static inline int64_t aps_layout_last_rank(const aps_layout *lay)
{
    return lay->p > 1 && aps_schedule_v_shaped(lay->sched) ? 0 : lay->p - 1;
}

/** Micro-batches per group of Megatron's interleaved schedule table: g
 *  (strategy microbatch_group_size, --microbatch-group-size-per-virtual-
 *  pipeline-stage), or for g = 0 Megatron's default, p (ModelParallel
 *  Config.__post_init__, megatron/core/model_parallel_config.py:567-568
 *  at d98e8a64). */
static inline int64_t aps_schedule_group(int64_t p, int64_t g)
{
    return g > 0 ? g : p;
}

/** The schedule a strategy runs: its pp_schedule when pipelined, else
 *  1F1B (one stage has no order to choose). */
static inline int aps_strategy_sched(const aps_strategy *s)
{
    return s->pp_degree > 1 ? (int)s->pp_schedule : APS_PP_1F1B;
}

/** The timeline the running aps_estimate_timeline records into on this
 *  thread, NULL otherwise (timeline.c). */
aps_timeline *aps_timeline_capture(void);
/** Marks tl recorded for the simulation of in, every rank's count and
 *  busy time 0 (timeline.c). */
void aps_timeline_begin(aps_timeline *tl, const aps_schedule_in *in);
/** Appends op ev to rank i's timeline (timeline.c). */
void aps_timeline_add(aps_timeline *tl, int64_t i,
                      const aps_schedule_event *ev);

/** aps_schedule_simulate for the zero-bubble schedules (in->schedule !=
 *  APS_PP_1F1B, p > 1), arguments checked (schedule_zb.c). */
aps_status aps_schedule_simulate_zb(const aps_schedule_in *in,
                                    aps_schedule_out *out);

/* ---- schedule_memo.c: the steps of simulations run before ---- */

/** The step of an earlier simulation of in on this thread (the same p, v,
 *  m, schedule and, bit for bit, t_fwd, t_bwd, t_wgt, weight and p2p,
 *  all five non-NULL) into *step; false when none is remembered.  *h
 *  gets in's hash, for aps_schedule_memo_store (schedule_memo.c). */
bool aps_schedule_memo_find(const aps_schedule_in *in, double *step,
                            uint64_t *h);
/** Remembers step as the simulation of in (h from aps_schedule_memo_find
 *  on the same in), in place of whatever had the same slot; nothing when
 *  out of memory (schedule_memo.c). */
void aps_schedule_memo_store(const aps_schedule_in *in, uint64_t h,
                             double step);
/** The peak aps_schedule_inflight(p, v, m, G, i, w) returned before on
 *  this thread for the same arguments (G the group size, already resolved
 *  by aps_schedule_group; w's v doubles bit for bit) into *peak; false
 *  when none is remembered (schedule_memo.c). */
bool aps_inflight_memo_find(int64_t p, int64_t v, int64_t m, int64_t G,
                            int64_t i, const double *w, double *peak);
/** Remembers peak as aps_schedule_inflight(p, v, m, G, i, w)
 *  (schedule_memo.c). */
void aps_inflight_memo_store(int64_t p, int64_t v, int64_t m, int64_t G,
                             int64_t i, const double *w, double peak);

/* ---- schedule_order.c, schedule_run.c: a schedule's ops in one fixed
 * dependency order, and its simulation on that order ---- */

/** One op of one rank's order: what the rank runs next. */
typedef struct {
    int32_t j, mb;   /**< virtual stage, micro-batch */
    int16_t kind;    /**< aps_op_kind */
    int16_t overlap; /**< 1: half of a DualPipeV OVERLAP_F_B pair */
} aps_rank_op;

/** One op of a schedule in its fixed dependency order: the position of
 *  the op whose finish it waits for (n, past the last op: a sentinel
 *  finish of 0, for ops that wait for nothing), and its slot, kind x p v
 *  + stage, in a run's tables of op times and p2p hops
 *  (schedule_run.c). */
typedef struct {
    int32_t dep;
    uint16_t slot;
    uint8_t rank;    /**< p <= APS_MAX_STAGES = 256 */
    uint8_t overlap; /**< aps_rank_op.overlap */
} aps_fixed_op;

/** Every rank's order of a schedule and all their ops in one order in
 *  which each op follows the op it waits for and the rank's op before
 *  it, so that simulating them in that order needs no event loop. */
typedef struct {
    int sched;                 /**< aps_pp_schedule; 1F1B for p = 1 */
    int64_t p, v, m;
    int64_t g;                 /**< group size of Megatron's interleaved
                                    table (aps_schedule_group; p under
                                    the other schedules and for v = 1) */
    int64_t n;                 /**< ops of all ranks */
    int64_t placed;            /**< ops placed so far (while built) */
    aps_fixed_op *ops;         /**< n, in dependency order */
    bool ops_owned;            /**< ops (and rank_ops after them)
                                    allocated for this order alone, else
                                    in the arena of schedule_mem.c */
    aps_rank_op *rank_ops;     /**< n: rank 0's order, rank 1's, ...;
                                    NULL under 1F1B (kept for the
                                    zero-bubble schedules' inflight) */
    int64_t start[APS_MAX_STAGES + 1]; /**< rank i's: start[i] .. start[i+1] */
    size_t bytes;              /**< heap bytes of ops and rank_ops */
} aps_schedule_order;

/** The fixed order of schedule `sched` (APS_PP_1F1B for Megatron's
 *  (interleaved) 1F1B, which also runs every schedule at p = 1) for p
 *  ranks, v chunks per rank, m micro-batches and, under interleaved 1F1B,
 *  groups of g micro-batches in Megatron's table (0 = p; ignored by the
 *  other schedules and for v = 1) (checked by the caller:
 *  p v <= APS_MAX_STAGES, m p v <= APS_MAX_SCHEDULE_CELLS) into *o.
 *  Built once and kept in a per-thread cache (most recently used first,
 *  APS_SCHEDULE_ORDER_CACHE_BYTES at most beyond the newest); *o stays
 *  valid until this thread's next call.  APS_EINVAL when the ranks'
 *  orders deadlock (a rank waits for an op that waits for it: Megatron's
 *  interleaved order with some m not a multiple of p, e.g. p = 4, v = 3,
 *  m = 5; the event loop refused these the same way), APS_ERANGE when out
 *  of memory (schedule_order.c). */
aps_status aps_schedule_order_get(int sched, int64_t p, int64_t v, int64_t m,
                                  int64_t g, const aps_schedule_order **o);

/* ---- schedule_mem.c: the per-thread memory of the simulation ---- */

/** Bytes of address space each per-thread buffer of schedule_mem.c
 *  reserves (pages are touched, and so counted, only as used): the
 *  largest scratch buffer kept between calls, and the arena of the
 *  cached orders. */
#define APS_SCHEDULE_RESERVE_BYTES ((size_t)64 << 20)

/** The per-thread scratch buffers of schedule_order.c and
 *  schedule_run.c. */
enum {
    APS_SCRATCH_RANK_OPS, /**< the rank orders while an order is built,
                               and while a timeline is recorded */
    APS_SCRATCH_PLACED,   /**< where each finish cell was placed */
    APS_SCRATCH_FINISH,   /**< a run's finish times */
    APS_RESERVED_MEMO,    /**< the keys of schedule_memo.c (kept) */
    APS_SCRATCH_KINDS
};

/** Scratch buffer `which` (APS_SCRATCH_*) of at least `bytes`: this
 *  thread's reserved buffer when bytes <= APS_SCHEDULE_RESERVE_BYTES
 *  (reserved once, so its pages are touched once however the sizes
 *  asked grow), else allocated for this use; NULL when out of memory.
 *  Its contents are undefined; hand it back with
 *  aps_schedule_scratch_done (schedule_mem.c). */
void *aps_schedule_scratch(int which, size_t bytes);
/** Frees mem unless it is the reserved buffer `which` (schedule_mem.c). */
void aps_schedule_scratch_done(int which, void *mem);
/** This thread's reserved buffer `which` (APS_SCHEDULE_RESERVE_BYTES,
 *  the same memory at every call, its contents kept), reserved on first
 *  use; NULL when it cannot be (schedule_mem.c). */
void *aps_schedule_reserved(int which);
/** Hands back this thread's schedule memory after an allocation failed
 *  (APS_ENOMEM): the cached orders, the remembered steps and every
 *  reserved buffer are freed, and no buffer is reserved again in this
 *  thread (each use then allocates what it needs), so a process near its
 *  address-space limit (ulimit -v) has that room back for what follows
 *  (schedule_mem.c). */
void aps_schedule_release(void);
/** Frees every cached order of this thread (schedule_order.c). */
void aps_schedule_order_flush(void);
/** Forgets every remembered step of this thread (schedule_memo.c). */
void aps_schedule_memo_clear(void);
/** `bytes` of this thread's arena (APS_SCHEDULE_RESERVE_BYTES, reserved
 *  on first use), 64-byte aligned, valid until aps_schedule_arena_reset;
 *  NULL when they do not fit in what is left of it, or when it cannot be
 *  reserved (schedule_mem.c). */
void *aps_schedule_arena_take(size_t bytes);
/** Empties this thread's arena: what it gave is free to give again
 *  (schedule_mem.c). */
void aps_schedule_arena_reset(void);

/** Simulates in on its fixed order o (a list scheduler: each op starts
 *  when its rank is free and its input has arrived, one p2p hop after
 *  the op it waits for; hop_always: a hop between any two consecutive
 *  stages, as Megatron's 1F1B counts them, else only between stages on
 *  different ranks), recording into in->timeline.  Fills out's step,
 *  busy_max, bubble and slowest_rank (not inflight): the same doubles as
 *  the event loop it replaces, summed in the same order per rank.
 *  APS_EINVAL when an op would wait for a negative finish time (which
 *  the event loop read as "not yet run": it never ran), APS_ERANGE when
 *  out of memory; out is then left as it was (schedule_run.c). */
aps_status aps_schedule_run_order(const aps_schedule_order *o,
                                  const aps_schedule_in *in, bool hop_always,
                                  aps_schedule_out *out);

/** Every rank's order under Megatron's (interleaved) 1F1B, its table in
 *  groups of g micro-batches (0 = p), into ops (2 m v p entries), rank
 *  after rank, rank i's from start[i] (start: p + 1 entries); returns
 *  their length, 2 m v p, or -1 when out of memory for the m v entries of
 *  Megatron's table (schedule.c). */
int64_t aps_schedule_orders_1f1b(int64_t p, int64_t v, int64_t m, int64_t g,
                                 aps_rank_op *ops, int64_t *start);

/** Entries aps_schedule_order_zb needs in ops for v chunks and m
 *  micro-batches: the order and its scratch (schedule_zb.c). */
size_t aps_schedule_order_slots(int64_t v, int64_t m);

/** Rank r's order under a zero-bubble schedule (APS_PP_INTERLEAVED_ZB, ZBV,
 *  DUALPIPEV) into ops (aps_schedule_order_slots entries); cnt: 2 p v
 *  counters of scratch; returns its length (schedule_zb.c). */
int64_t aps_schedule_order_zb(int sched, int64_t p, int64_t v, int64_t m,
                              int64_t r, aps_rank_op *ops, int64_t *cnt);

/** Peak of the activation sets held along rank order ops[0 .. n-1] of
 *  schedule `sched`, chunk k weighing w[k] (NULL: 1/v each): held from a
 *  chunk's F to its W or B (schedule_zb.c). */
double aps_schedule_peak_held(int sched, int64_t p, int64_t v,
                              const aps_rank_op *ops, int64_t n,
                              const double *w);

/** Seconds of one activation (or gradient) transfer between stage j and
 *  j + 1 into d[0 .. p v - 2], each on the link its two ranks use
 *  (aps_p2p_pair_link; the last rank passes to the first between model
 *  chunks) (schedule.c). */
void aps_pipeline_p2p(const aps_model *m, const aps_cluster *c,
                      const aps_strategy *s, const aps_layout *lay,
                      double *d);

/** Activation sets held on rank i at its peak, in units of the rank's
 *  whole set: each model chunk weighs its share of the rank's layers
 *  (schedule.c). */
double aps_layout_inflight(const aps_layout *lay, int64_t i);

/** The most micro-batches of model chunk k (0-based on rank i) whose
 *  activations rank i holds at once under the layout's schedule: what the
 *  tensors of one chunk only (the last chunk's final norm, output layer
 *  and MTP inputs) are held for; aps_layout_inflight's count when the
 *  rank has one chunk or the schedule is not (interleaved) 1F1B
 *  (schedule.c). */
double aps_layout_chunk_inflight(const aps_layout *lay, int64_t i, int64_t k);

/** Vocabulary padded to a multiple of vocab_size_divisible_by * t
 *  (Megatron megatron/training/tokenizer: _vocab_size_with_padding). */
double aps_padded_vocab(const aps_model *m, const aps_training *t, int64_t tp);

/** Parameters of one layer held on one TP rank: matrices / t, column-
 *  parallel biases / t, row-parallel biases and norms replicated
 *  (Shoeybi et al. 2019, s.3; megatron/core/tensor_parallel/layers.py). */
double aps_layer_params_tp(const aps_model *m, int64_t tp);
/** Parameters of one whole FFN of width f (a dense MLP, one routed
 *  expert or the shared expert): 3 h f gated or 2 h f, plus with mlp_bias
 *  the column-parallel biases (2 f gated, f) and the output bias h, plus
 *  xIELU's APS_XIELU_PARAMS scalars; 0 for f = 0. */
double aps_ffn_params(const aps_model *m, double f);
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
/** Matrix parameters of rank i's decoder and MTP layers on one of lay->t
 *  TP ranks (the TE linears whose quantized copies fp8 / fp4 keep). */
double aps_stage_matmul_params(const aps_model *m, const aps_layout *lay,
                               int64_t i);

/** Of aps_stage_params, those outside the decoder layers: the embedding
 *  (rank 0), the final norm, the output layer and the MTP depths' norms
 *  and eh_proj (rank p-1) -- the modules Megatron-FSDP does not wrap as
 *  units (mcore_fsdp_adapter.py:166-173 @ d98e8a64). */
double aps_stage_nonunit_params(const aps_model *m, const aps_layout *lay,
                                int64_t i);


/** Parameters of the largest decoder layer on rank i under TP (0 when it
 *  runs none): aps_layer_params_tp, or the largest layer kind of a hybrid
 *  model among the rank's layers, or of a Gated DeltaNet model. */
double aps_largest_layer_params(const aps_model *m, const aps_layout *lay,
                                int64_t i);

/** Parameters of the largest FSDP unit on rank i (one layer, the embedding
 *  or the output layer with the final norm; TorchTitan wraps each), the
 *  largest decoder layer holding `layer` parameters. */
double aps_largest_unit_params(const aps_model *m, const aps_layout *lay,
                               int64_t i, double layer);

/* ---- moe.c: mixture of experts and multi-head latent attention ---- */

/** Default training.moe_load_imbalance: tokens the busiest expert-parallel
 *  rank receives over its balanced share.  Switch Transformer (Fedus et
 *  al. 2021, arXiv:2101.03961, s.2.2 and Table 1) measured that a
 *  capacity factor of 1.25 -- room for 1.25 x the balanced load per
 *  expert -- drops under 1 % of the tokens with its auxiliary balancing
 *  loss: the busiest expert's load is then about 1.25 x the mean.
 *  Overridable per run (training.moe_load_imbalance); 1 = balanced
 *  (forced balance, or capacity 1 padded, as NVIDIA's benchmark recipes
 *  run). */
#define APS_MOE_LOAD_IMBALANCE 1.25

/** Megatron-Core's sync-free MoE and its paged stash (Megatron-LM
 *  d98e8a64; paged stash added by f007db77b9 "Paged Stashing (#4247)",
 *  2026-05-22).  Defaults of --moe-paged-stash-buffer-size-factor-cuda
 *  and --moe-paged-stash-page-size (transformer_config.py l.1367-1374). */
#define APS_PAGED_STASH_FACTOR_CUDA 1.10
#define APS_PAGED_STASH_PAGE_SIZE 64
/** Largest rank capacity factor or stash buffer factor apsearch takes: a
 *  bound on the buffers it sizes (a million times the balanced share is
 *  past any device), not a Megatron limit. */
#define APS_MOE_SYNC_FREE_FACTOR_MAX 1e6
/** The static expert-rank budget is rounded up to this many tokens: "TE's
 *  grouped-tensor and fused grouped-MLP kernels require 256-token
 *  alignment" (moe/moe_utils.py get_align_size_for_quantization with
 *  use_transformer_engine_op_fuser, which the capacity factor needs). */
#define APS_TE_GROUPED_ALIGN 256.0
/** Bytes per token of one micro-batch's inputs GPTDataset returns
 *  (megatron/core/datasets/gpt_dataset.py __getitem__ @ d98e8a64):
 *  tokens and labels (int64, 8 each), loss_mask (float32, 4),
 *  position_ids (int64, 8).  The attention mask, [1, s, s] bool, when
 *  the dataloader creates one (create_attention_mask), is not counted. */
#define APS_BATCH_BYTES_PER_TOKEN 28.0

/** What one MoE layer (against the dense-FFN layer of aps_layer_cost) and
 *  one MLA layer (against its GQA attention) add, per micro-batch on one
 *  rank; differences may be negative.  Seconds, bytes, parameters. */
typedef struct {
    double gemm_fwd;        /**< s: router, shared expert, experts minus
                                 the dense FFN's GEMMs */
    double membound_fwd;    /**< s: activation functions, permute,
                                 unpermute, router scores */
    double cast_fwd, cast_bwd; /**< s: quantized-GEMM casts */
    double bias_fwd, bias_bwd; /**< s: the experts' fc2 bias added expert
                                    by expert in PyTorch (moe.c
                                    eager_expert_bias) */
    double drop_mlp_tp;     /**< the layer's share of TP collectives that
                                 go with the dense FFN (its block's: 1 /
                                 blocks), 0 with a shared expert */
    double act;             /**< bytes saved for backward */
    double ep_fwd, ep_bwd;  /**< s: dispatch + combine, each pass */
    double ep_buffer;       /**< bytes of one layer's dispatch buffers */
    double dense_params;    /**< non-expert parameters minus the dense FFN */
    double dense_matmul_params; /**< of which in linear layers */
    double expert_params;   /**< routed-expert parameters on the rank */
    double expert_matmul_params; /**< of which in the experts' matrices */
    double mla_gemm_fwd;    /**< s: MLA projections minus Q/K/V/O */
    double mla_attn_fwd, mla_attn_bwd; /**< s: core attention difference */
    double mla_act;         /**< bytes saved, MLA minus GQA */
    double mla_params;      /**< parameters per rank, MLA minus GQA */
    double mla_matmul_params; /**< of which in linear layers */
    /* what Megatron's recompute modules re-run and free (per layer, one
     * micro-batch): forward seconds and saved bytes */
    double dense_mlp_fwd, dense_mlp_act; /**< the dense FFN an MoE layer
                                              replaces (mlp) */
    double moe_fwd, moe_int_act; /**< the whole MoE layer (moe), its
                                      dispatch and combine in ep_fwd */
    double shared_fwd, shared_act; /**< the shared expert (shared_experts) */
    double actfn_fwd, actfn_act;   /**< the experts' activation (moe_act) */
    double offload_act;    /**< bytes of one MoE layer's saved set the
                                expert offload modules move to host
                                (expert_fc1, moe_act, fused_group_mlp:
                                offload.c) */
    double mla_up_fwd, mla_up_act; /**< MLA up projections (mla_up_proj) */
    /* under op-level selective checkpointing (TorchTitan, AutoModel:
     * opsac.c), forward seconds the backward runs again beyond the dense
     * GQA layer's (moe.c op_sac_recompute); 0 otherwise */
    double sac_moe_fwd;    /**< s: per MoE layer (every expert GEMM) */
    double sac_mla_fwd;    /**< s: per MLA layer */
    double dsa_indexer_fwd; /**< s: the DSA indexer's forward (dsa.c) */
    double dsa_indexer_bwd; /**< s: its backward, when trained (dsa.c) */
    double router_fwd;      /**< s: of membound_fwd, the router's softmax /
                                 sigmoid and top-k over fp32 scores */
    double router_floor_fwd, router_floor_bwd; /**< s: what the router's and
                                 preprocess's kernels take beyond router_fwd
                                 (forward) and twice it (backward) at the
                                 device's shortest kernel each
                                 (aps_router_floor) */
    /* Megatron's sync-free experts (training.moe_expert_rank_capacity_
     * factor): rows of the static receive buffer and expert tensors, and
     * under the paged stash the balanced token copies one layer stashes
     * per micro-batch and the bytes per row of the tensors it stashes */
    double static_rows;     /**< budget B, 0 without a capacity factor */
    double stash_tokens;    /**< avg_num_tokens = B // cf, 0 unstashed */
    double stash_row_bytes; /**< stashed bytes per B row, 0 unstashed */
} aps_moe_cost;

/** The parameters of pipeline rank i's MoE layers beyond the model's mean
 *  dense layer, per TP rank (aps_moe_stage_params): what the rank holds
 *  of them (not the MTP depths that run another depth's weights). */
typedef struct {
    double moe_layers;      /**< MoE layers whose weights the rank holds */
    double psi, matmul;     /**< non-expert difference: router, shared
                                 expert, MLA less the dense FFN and GQA;
                                 of which in linear layers */
    double experts, expert_matmul; /**< the routed experts on the rank */
    double layer, layer_matmul; /**< one MoE layer's non-expert difference */
    double unit, unit_matmul; /**< the same, its local experts included */
} aps_moe_held;

/** The sums over pipeline rank i's layers of aps_moe_cost (seconds). */
typedef struct {
    double moe_layers;      /**< MoE layers on the rank */
    double comp_fwd, comp_bwd, wgrad, recompute;
    double ep_fwd, ep_bwd;  /**< dispatch + combine, one micro-batch */
    double drop_tp_layers;  /**< layers' worth of TP collectives that go
                                 with the MoE layers' dense FFNs */
    double drop_tp_recompute; /**< of them recomputed */
    double ep_hidden_fwd, ep_hidden_bwd; /**< of ep_fwd, ep_bwd: hidden
                                              behind the shared expert */
    double router_floor_fwd; /**< one MoE layer's router_floor_fwd (in
                                  comp_fwd), GPU time before the sync */
    double attn_delta_fwd;  /**< one layer's MLA / DSA attention forward
                                 beyond the layer cost's (comp_fwd adds it
                                 on every layer), 0 without */
} aps_moe_stage_cost;

/* ---- hybrid.c: hybrid Mamba-2 models (Nemotron-H) ---- */

/** Largest accepted Mamba-2 width (heads, head dim, state, groups, conv
 *  width, chunk): 2^20. */
#define APS_MAX_HYBRID_WIDTH (INT64_C(1) << 20)

/** A model's layers by kind and what the mean layer holds of each block
 *  (hybrid.c file comment): a transformer 1 attention + 1 MLP block
 *  (blocks 2); a hybrid pattern its counts over num_layers (blocks 1). */
typedef struct {
    int64_t mamba, attn, mlp;   /**< layers of each kind (hybrid only;
                                     attn also with Gated DeltaNet) */
    int64_t gdn;                /**< Gated DeltaNet layers (gdn.c) */
    int64_t moe;                /**< MoE layers 'E' (hybrid only; counted
                                     in mlp too, hybrid.c) */
    int64_t parallel;           /**< parallel layers 'P' (hybrid only;
                                     counted in mamba, attn and mlp too,
                                     hybrid.c) */
    double attn_share;          /**< attention blocks per layer */
    double mlp_share;           /**< dense MLP blocks per layer (MoE
                                     layers included: moe.c swaps them) */
    double mamba_share;         /**< Mamba-2 blocks per layer */
    double gdn_share;           /**< Gated DeltaNet blocks per layer */
    double blocks;              /**< blocks (pre-norm + residual) per layer */
    double parallel_share;      /**< P layers per layer: each a block with
                                     two mixers, so one TP pair more than
                                     its blocks (compute.c layer_tp) */
} aps_hybrid_counts;

/* ---- dsa.c: DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5) ---- */

/** True when the model has a lightning indexer (index_n_heads > 0). */
bool aps_model_has_dsa(const aps_model *m);
/** Checks the index_* fields (model.c calls it). */
aps_status aps_dsa_validate(const aps_model *m, char *err, size_t n);
/** True when the 0-based decoder layer i computes its own top-k (builds
 *  an indexer): always without cross-layer sharing (index_topk_freq <= 1),
 *  else Megatron-Core's is_dsa_skip_topk_layer (types.h). */
bool aps_dsa_layer_computes_topk(const aps_model *m, int64_t i);
/** Decoder layers with an indexer: num_layers without sharing, the
 *  computing layers with it; 0 without DSA. */
int64_t aps_dsa_indexer_layers(const aps_model *m);
/** APS_REASON_PP_PARTITION, with msg, when a non-empty model chunk of
 *  chunks[0 .. nchunks - 1] (layers per chunk in model order) starts on a
 *  layer that reuses another layer's top-k (Megatron-Core d98e8a64
 *  _validate_dsa_index_share_pipeline_split); NONE without sharing. */
/** True when the framework passes a DeepSeek Sparse Attention layer's
 *  top-k to the next pipeline stage, so that a model chunk may start on a
 *  layer that reuses it: NeMo AutoModel (glm_moe_dsa/model.py
 *  prev_topk_indices, threaded across stages); Megatron-Core refuses such
 *  a split (aps_dsa_chunks_check). */
bool aps_dsa_split_free(const aps_training *t);
aps_reason aps_dsa_chunks_check(const aps_model *m, const int64_t *chunks,
                                int64_t nchunks, char *msg, size_t n);
/** Linear weights of the mean layer's indexer: wq_b, wk, weights_proj,
 *  times the share of layers with an indexer (aps_dsa_indexer_layers /
 *  num_layers). */
double aps_dsa_indexer_matmul_params(const aps_model *m);
/** Parameters of the mean layer's indexer, its key LayerNorm included
 *  (whole on every TP rank), times that share; 0 without DSA. */
double aps_dsa_indexer_params(const aps_model *m);
/** Parameters of all the decoder layers' indexers, exactly: the layers
 *  with one (aps_dsa_indexer_layers) times one indexer's; 0 without DSA. */
double aps_dsa_indexer_params_sum(const aps_model *m);
/** What one MTP layer's indexer adds over the mean layer's: an MTP layer
 *  computes its own top-k (vLLM's GLM-5.2 schedule builds an indexer on
 *  every layer past num_hidden_layers), so one whole indexer less
 *  aps_dsa_indexer_params; 0 without cross-layer sharing. */
double aps_dsa_mtp_indexer_delta(const aps_model *m);
/** Keys one query attends to under DSA in an S-token sequence: the causal
 *  count capped at index_topk, min(i + 1, k) for query i, averaged:
 *  S / 2 for S <= k, else k - k^2 / (2 S); min(k, S) without causal
 *  skipping. */
double aps_dsa_keys(const aps_model *m, double S, bool causal);
/** Forward FLOPs of the mean layer's indexer per S-token sequence: its
 *  projections and the causal index scores (2 S (S / 2) Hi Di) times the
 *  share of layers with an indexer; no backward unless trained (dsa.c). */
double aps_dsa_indexer_flops(const aps_model *m, double S);
/** FLOPs of one layer's indexer training per S-token sequence
 *  (training.dsa_indexer_loss_coeff > 0): the loss's sparse target and
 *  the indexer's backward; 0 untrained. */
double aps_dsa_indexer_train_flops(const aps_model *m, const aps_training *t,
                                   double S);
/** What DSA adds to one MLA layer's aps_moe_cost: the indexer's forward,
 *  the absorbed sparse core beyond the dense MLA core, its saved bytes
 *  and the indexer's parameters. */
void aps_dsa_layer_cost(const aps_model *m, const aps_device *d,
                        const aps_training *t, const aps_strategy *s,
                        aps_moe_cost *out);

/* ---- msa.c: MiniMax-M3's block-sparse attention ---- */

/** True when the model has block-sparse attention layers (msa_layers). */
bool aps_model_has_msa(const aps_model *m);
/** Checks the msa_* fields (model.c calls it): EINVAL / ENOTIMPL naming
 *  the field. */
aps_status aps_msa_validate(const aps_model *m, char *err, size_t n);
/** Parameters of the mean layer's indexer: index_q_proj h Hi Di,
 *  index_k_proj h Di and two Gemma norms of Di, times msa_layers /
 *  num_layers; 0 without MSA. */
double aps_msa_indexer_params(const aps_model *m);
/** Parameters of all the MSA layers' indexers, exactly: msa_layers times
 *  one indexer's; 0 without MSA. */
double aps_msa_indexer_params_sum(const aps_model *m);
/** Keys one query of an MSA layer attends to in an S-token sequence:
 *  AutoModel's selected pairs over S (the first B K queries every causal
 *  key, each later one K - 1 blocks and its own up to itself), in the
 *  continuous causal form; min(B K, S) without causal skipping. */
double aps_msa_keys(const aps_model *m, double S, bool causal);
/** Forward FLOPs per S-token sequence of the mean layer's indexer: its
 *  projections and causal scores (2 S (S / 2) Hi Di), times the MSA
 *  layers' share; no backward (it runs under no_grad). */
double aps_msa_indexer_flops(const aps_model *m, double S);
/** What MSA adds to the mean layer's aps_moe_cost: the indexer's forward
 *  time (dsa_indexer_fwd), its parameters (mla_params,
 *  mla_matmul_params) and the saved block selection (mla_act). */
void aps_msa_layer_cost(const aps_model *m, const aps_device *d,
                        const aps_training *t, const aps_strategy *s,
                        aps_moe_cost *out);

/* ---- dsv4.c: DeepSeek-V4's attention and hyper-connections ---- */

/** True for a DeepSeek-V4 model (hc_mult > 0). */
bool aps_model_is_dsv4(const aps_model *m);
/** True when every layer's attention differs from the GQA block of its
 *  widths by an aps_moe_cost "mla_*" difference: MLA or DeepSeek-V4. */
bool aps_model_has_attn_delta(const aps_model *m);
/** Checks the DeepSeek-V4 fields (model.c calls it): all of them with
 *  hc_mult, none without; EINVAL / ENOTIMPL naming the field. */
aps_status aps_dsv4_validate(const aps_model *m, char *err, size_t n);
/** mHC parameters of one layer, both sites: 2 ((2 + n) n n h + (2 + n) n
 *  + 3); 0 without DeepSeek-V4. */
double aps_dsv4_hc_layer_params(const aps_model *m);
/** The final stream collapse (hc_head): n n h + n + 1; 0 without V4. */
double aps_dsv4_hc_head_params(const aps_model *m);
/** Exact sum over the decoder layers of what each has beyond the GQA
 *  layer of its widths (attention projections and norms, its kind's
 *  compressor and indexer, mHC); 0 without DeepSeek-V4. */
double aps_dsv4_layers_delta_params(const aps_model *m);
/** The same for one MTP layer (sliding-window attention, no compressor). */
double aps_dsv4_mtp_layer_delta_params(const aps_model *m);
/** Compressed keys one query reads on a CSA (csa) or HCA layer of an
 *  S-token sequence: the index_topk best of S / m causal entries
 *  (aps_dsa_keys), or S / (2 m') (all of S / m' without causal skipping). */
double aps_dsv4_compressed_keys(const aps_model *m, bool csa, double S,
                                bool causal);
/** Forward FLOPs per S-token sequence of the mean layer's indexer (CSA
 *  layers' share): projections and causal scores; no backward. */
double aps_dsv4_indexer_flops(const aps_model *m, double S);
/** Trained forward FLOPs per S-token sequence of the mean V4 layer over
 *  the GQA layer of its widths: projections, compressors, the core over
 *  the compressed keys, mHC; 0 without DeepSeek-V4. */
double aps_dsv4_flops_delta(const aps_model *m, double S, bool causal);
/** What DeepSeek-V4 adds to the mean layer's aps_moe_cost (mla_* and
 *  dsa_indexer_fwd fields). */
void aps_dsv4_layer_cost(const aps_model *m, const aps_device *d,
                         const aps_training *t, const aps_strategy *s,
                         aps_moe_cost *out);
/** Why a strategy of a DeepSeek-V4 model is not priced (tp or cp > 1,
 *  op-level selective recompute), with *code; NULL when it is. */
const char *aps_dsv4_refusal(const aps_training *t, const aps_strategy *s,
                             aps_reason *code);

/* ---- gdn.c: Gated DeltaNet linear-attention layers (Qwen3-Next) ---- */

/* ---- model.c: attention kinds (Gemma 4's full-attention layers) ---- */

/** Most attention shapes one model has (the windowed and the global). */
#define APS_ATTN_KINDS 2

/** How a kind's keys are counted: the model's mean over its layers
 *  (aps_attention_keys), within the window, or over the whole causal
 *  prefix. */
typedef enum { APS_KEYS_MEAN = 0, APS_KEYS_WINDOW, APS_KEYS_FULL } aps_keys_kind;

/** One kind of attention layer: how many, and its shape. */
typedef struct {
    double layers;  /**< layers of this kind */
    double share;   /**< layers / num_layers */
    double a;       /**< query heads */
    double k;       /**< KV heads */
    double d;       /**< head width */
    double v;       /**< V projections per KV head: 1, 0 when V is K's */
    double dv;      /**< V head width (attn_v_head_dim; else d) */
    double sinks;   /**< 1 when the kind has attention sinks, else 0 */
    aps_keys_kind keys;
} aps_attn_kind;

/** True when the layers without the window have a shape of their own
 *  (global_head_dim, global_num_attention_heads, global_num_query_groups,
 *  global_k_eq_v). */
static inline bool aps_model_has_global_attention(const aps_model *m)
{
    return m->global_head_dim > 0 || m->global_num_query_groups > 0 ||
           m->global_num_attention_heads > 0 || m->global_k_eq_v;
}
/** The KV heads (query groups) the attention core of a layer with k of
 *  them is built with on t TP ranks, the per-rank heads times t: k, or t
 *  where fewer KV heads than ranks are replicated, one per rank (Megatron-
 *  Core gives its core attention a config of num_query_groups = world_
 *  size, attention.py l.374-379 @ d98e8a64; check.c admits k < t only
 *  where the framework replicates, aps_framework_profile kv_head_
 *  replication).  What a rank keeps of K and V, norms, rotates and sends
 *  over CP is of core / t heads; its QKV weights stay k / t heads' worth
 *  (ColumnParallelLinear splits the fused projection evenly). */
static inline double aps_kv_core_groups(double k, double t)
{
    return k < t ? t : k;
}
/** The model's attention kinds into out; returns how many (1: every layer
 *  has the model's shape and the mean keys; 2: the windowed layers, then
 *  the global ones, either possibly without layers). */
int aps_attn_kinds(const aps_model *m, aps_attn_kind out[APS_ATTN_KINDS]);
/** Output columns of attention kind x's input projection (all TP ranks):
 *  Q (and the output gate) and K of d per head, V of dv unless V is K's
 *  output (Megatron-Core SelfAttention linear_qkv_out_dim, attention.py
 *  l.1690 @ d98e8a64). */
double aps_attn_kind_in_width(const aps_model *m, const aps_attn_kind *x);
/** Keys one query of kind x attends to in an S-token sequence. */
double aps_attn_kind_keys(const aps_model *m, const aps_attn_kind *x, double S,
                          bool causal);

/** True when the model has linear-attention layers: a
 *  linear_attention_period or a linear_attention_pattern. */
static inline bool aps_model_has_gdn(const aps_model *m)
{
    return m->linear_attention_period > 0 ||
           m->linear_attention_pattern[0] != '\0';
}
/** True when the linear-attention layers are Kimi Delta Attention. */
static inline bool aps_model_has_kda(const aps_model *m)
{
    return aps_model_has_gdn(m) && m->linear_attention == APS_LINEAR_KDA;
}
/** True when the linear layers are LFM2's gated short convolutions. */
static inline bool aps_model_has_short_conv(const aps_model *m)
{
    return aps_model_has_gdn(m) &&
           m->linear_attention == APS_LINEAR_SHORT_CONV;
}
/** True when the linear layers are MiniMax's lightning attention. */
static inline bool aps_model_has_lightning(const aps_model *m)
{
    return aps_model_has_gdn(m) &&
           m->linear_attention == APS_LINEAR_LIGHTNING;
}
/** True when the linear layers are Jamba's Mamba-1 mixers. */
static inline bool aps_model_has_mamba1(const aps_model *m)
{
    return aps_model_has_gdn(m) && m->linear_attention == APS_LINEAR_MAMBA1;
}
/** Adds the attention and Gated DeltaNet layers among the model's layers
 *  from .. from + n - 1 (0-based) to out's attn and gdn counts. */
void aps_gdn_count(const aps_model *m, int64_t from, int64_t n,
                   aps_hybrid_counts *out);
/** The attention and Gated DeltaNet shares of the layers counted in out
 *  (the MLP share and blocks stay). */
void aps_gdn_set_shares(aps_hybrid_counts *out);
/** The attention and Gated DeltaNet counts and shares of the mean layer
 *  into out (aps_hybrid_mix calls it; the MLP share and blocks stay). */
void aps_gdn_mix(const aps_model *m, aps_hybrid_counts *out);
/** Output width of the projections from the hidden state: Gated
 *  DeltaNet's in_proj, 2 nk dk + 2 nv dv + 2 nv (GatedDeltaNet @
 *  d98e8a64); KDA's q, k, v, the forget and output gates' down
 *  projections and beta, 2 nk dk + nv dv + 2 dv + nv; lightning
 *  attention's qkv_proj and output_gate, 4 H d (gdn.c). */
double aps_gdn_in_proj_width(const aps_model *m);
/** One GEMM of a mixer: n output columns over depth k, all TP ranks. */
typedef struct { double n, k; } aps_gemm_nk;
/** The GEMMs of a linear-attention mixer whose input is not the hidden
 *  state, into out; returns how many (at most 2): KDA's gate up
 *  projections (f_b, g_b: dv -> nv dv each, one GEMM of their widths),
 *  Mamba-1's x_proj (D -> R + 2N) and dt_proj (R -> D); none for the
 *  others (gdn.c). */
int aps_gdn_inner_gemms(const aps_model *m, aps_gemm_nk out[2]);
/** Channels of the depthwise conv, 2 nk dk + nv dv. */
double aps_gdn_conv_dim(const aps_model *m);
/** The projections' weights of one linear-attention mixer. */
double aps_gdn_matmul_params(const aps_model *m);
/** Parameters of one Gated DeltaNet mixer on one of tp ranks: projections,
 *  conv, dt_bias and A_log split over TP, the out_norm (dv) replicated;
 *  not the pre-norm. */
double aps_gdn_params_tp(const aps_model *m, int64_t tp);
/** Forward FLOPs of the chunked delta rule (lightning attention's block
 *  loop) over T tokens in sequences of seq tokens (gdn.c). */
double aps_gdn_scan_flops(const aps_model *m, double T, double seq);
/** Forward FLOPs of one Gated DeltaNet layer over T tokens: projections,
 *  conv and scan. */
double aps_gdn_flops(const aps_model *m, double T, double seq);
/** Bytes one Gated DeltaNet mixer saves for backward over T tokens on one
 *  of tp ranks, beyond its pre-norm's input and output. */
double aps_gdn_saved_bytes(const aps_model *m, const aps_training *t,
                           double T, double tp);
/** Output width of the mixer's core, out_proj's input: nv dv; a short
 *  convolution's h; a Mamba-1 mixer's D. */
double aps_gdn_out_width(const aps_model *m);
/** Elements one mixer's memory-bound kernels read and write a token, all
 *  TP ranks: the conv (in, out) and Gated DeltaNet's and KDA's L2 norms
 *  and gated RMSNorm, or a short convolution's two products and its
 *  transpose copy (gdn.c). */
double aps_gdn_elementwise_elems(const aps_model *m, double seq);
/** Forward kernels of one linear-attention mixer from Python per
 *  micro-batch: a constant per mixer, plus, for lightning attention,
 *  transformers' Python loop over the ceil(seq_length / cp /
 *  linear_block_size) blocks of a sequence (gdn.c). */
double aps_gdn_kernels(const aps_model *m, const aps_training *t,
                       const aps_strategy *s);
/** Checks the Gated DeltaNet fields (model.c calls it). */
aps_status aps_gdn_validate(const aps_model *m, char *err, size_t n);
/** The framework check of a model with linear-attention layers: APS_OK
 *  when training.framework is the engine that trains its mixer as priced
 *  (gdn.c MIXER_ENGINE), else APS_ENOTIMPL with "training.framework: ..."
 *  naming the model, its layers and that engine (training.c calls it once
 *  per policy). */
aps_status aps_gdn_framework(const aps_model *m, const aps_training *t,
                             char *err, size_t n);
/** Why a Gated DeltaNet model cannot be priced with this strategy, or
 *  NULL; *code is the reason (APS_REASON_NOT_MODELLED: apsearch's
 *  pricing, not Megatron-LM, refuses it). */
const char *aps_gdn_refusal(const aps_model *m, const aps_training *t,
                            const aps_strategy *s, aps_reason *code);
/** The share of the model's layers with full (softmax) attention: 1
 *  without linear attention. */
double aps_gdn_attn_share(const aps_model *m);

/* ---- selscan.c: Jamba's Mamba-1 mixer (linear_attention = mamba1) ---- */

/** Its GEMMs from inside the mixer into out (x_proj, dt_proj); returns 2. */
int aps_selscan_inner_gemms(const aps_model *m, aps_gemm_nk out[2]);
/** Its parameters outside the GEMMs: conv weights and bias, dt_proj's
 *  bias, A_log, D and the dt, B and C norms' weights. */
double aps_selscan_other_params(const aps_model *m);
/** State elements its selective scan updates over T tokens, T D N. */
double aps_selscan_state_elems(const aps_model *m, double T);
/** FLOPs of its selective scan over T tokens (selscan.c). */
double aps_selscan_scan_flops(const aps_model *m, double T);
/** Bytes it saves for backward a token (selscan.c). */
double aps_selscan_saved_per_token(const aps_model *m, const aps_training *t);
/** Elements its memory-bound kernels read and write a token. */
double aps_selscan_elementwise_elems(const aps_model *m);
/** Forward kernels of its layer's mixer block from Python. */
double aps_selscan_kernels(void);
/** Checks its fields: the three widths given with it only. */
aps_status aps_selscan_validate(const aps_model *m, char *err, size_t n);

/* ---- nas.c: heterogeneous layers (Llama-Nemotron NAS) ---- */

/** Most MLP widths nas_ffn_widths may list (letters a ..). */
#define APS_NAS_MAX_WIDTHS 26
/** True when the model has nas_attention_pattern or nas_ffn_pattern. */
bool aps_model_is_nas(const aps_model *m);
/** The MLP width of 0-based layer `layer` (0: none). */
double aps_nas_ffn_width(const aps_model *m, int64_t layer);
/** Adds the attention and MLP layers among layers from .. from + n - 1
 *  to out's attn and mlp counts and their MLP widths to *width_sum. */
void aps_nas_count(const aps_model *m, int64_t from, int64_t n,
                   aps_hybrid_counts *out, double *width_sum);
/** The shares of `layers` layers counted in out: attention blocks a
 *  layer, MLP width a layer over ffn_hidden_size, blocks a layer. */
void aps_nas_set_shares(const aps_model *m, int64_t layers, double width_sum,
                        aps_hybrid_counts *out);
/** The whole model's counts and shares into out. */
void aps_nas_mix(const aps_model *m, aps_hybrid_counts *out);
/** MLP blocks a layer of the mix (not width-weighted): host launches. */
double aps_nas_mlp_blocks(const aps_hybrid_counts *w);
/** Checks the patterns and widths (model.c calls it). */
aps_status aps_nas_validate(const aps_model *m, char *err, size_t n);
/** The first MLP width of nas_ffn_widths not divisible by tp, or 0. */
int64_t aps_nas_width_not_divisible(const aps_model *m, int64_t tp);
/** Why a heterogeneous model cannot be priced under t and s, or NULL. */
const char *aps_nas_refusal(const aps_training *t, const aps_strategy *s,
                            aps_reason *code);
/** The decoder layers' parameters summed layer by layer, given one
 *  attention block's and one norm's. */
double aps_nas_layers_params(const aps_model *m, double attn_block,
                             double norm);

/* ---- attnres.c: Kimi K3's block attention residuals ---- */

/** True when the model has attn_res_block_size. */
bool aps_model_has_attnres(const aps_model *m);
/** The mixes of the whole model (two a layer, less layer 0's attention
 *  input, plus the output's) into *mixes, and the values they mix (the
 *  blocks so far and the running sum) into *values; 0 without AttnRes. */
void aps_attnres_mixes(const aps_model *m, double *mixes, double *values);
/** Weights of one layer's mixes: two RMSNorms and two h -> 1 projections,
 *  4 h. */
double aps_attnres_layer_params(const aps_model *m);
/** Weights of the output mix, 2 h. */
double aps_attnres_model_params(const aps_model *m);
/** Bytes the mixes save for backward per token, the model's mean layer
 *  (not split over TP). */
double aps_attnres_saved_per_token(const aps_model *m);
/** Memory traffic of the mixes' forward per token, the mean layer, bytes. */
double aps_attnres_traffic_per_token(const aps_model *m);
/** Under full recompute of every layer, what stays per token, the mean
 *  layer: the checkpointed layers' block_residual inputs (one tensor of
 *  each size, shared within a block) and the output mix's saved set. */
double aps_attnres_kept_per_token(const aps_model *m);

/** True when the model has a hybrid_layer_pattern. */
static inline bool aps_model_is_hybrid(const aps_model *m)
{
    return m->hybrid_layer_pattern[0] != '\0';
}
/** True when the pipeline ranks of lay hold different layers than the
 *  model's mean layer: a hybrid Mamba-2 or Gated DeltaNet model over more
 *  than one stage (hybrid.c, gdn.c; a transformer's ranks differ only by
 *  their MoE layers, moe.c). */
static inline bool aps_hybrid_split(const aps_model *m, const aps_layout *lay)
{
    /* a hybrid model's MTP layers are the last rank's (hybrid.c) */
    return (lay->p > 1 && (aps_model_is_hybrid(m) || aps_model_has_gdn(m) ||
                           aps_model_is_nas(m))) ||
           (lay->mtp > 0 && aps_model_is_hybrid(m));
}
/** The pattern resolved into counts and per-layer shares. */
void aps_hybrid_mix(const aps_model *m, aps_hybrid_counts *out);
/** The counts and shares of pipeline rank i's decoder layers as laid out
 *  (its model chunks, aps_layout_rank_spans): the layers Megatron-LM's
 *  HybridModel builds on the rank (hybrid.c), or of a Gated DeltaNet
 *  model the layers GPTModel builds there (gdn.c).  aps_hybrid_mix
 *  without such a split (aps_hybrid_split). */
void aps_hybrid_stage_mix(const aps_model *m, const aps_layout *lay,
                          int64_t i, aps_hybrid_counts *out);
/** The counts and shares of the decoder layers in spans start[k] ..
 *  start[k] + len[k] - 1 (k < n) and mtp_depths multi-token-prediction
 *  depths, as aps_hybrid_stage_mix counts a rank's (hybrid.c). */
void aps_hybrid_spans_mix(const aps_model *m, const int64_t *start,
                          const int64_t *len, int64_t n, int64_t mtp_depths,
                          aps_hybrid_counts *out);
/** Output width of in_proj, 2 d + 2 G N + nh (MambaMixer @ d98e8a64). */
double aps_mamba_in_proj_width(const aps_model *m);
/** in_proj and out_proj weights of one Mamba-2 layer, h (2d + 2GN + nh)
 *  + d h. */
double aps_mamba_matmul_params(const aps_model *m);
/** Parameters of one Mamba-2 mixer on one of tp ranks: projections, conv
 *  (weight and bias), dt_bias, A_log, D, the gated norm; all split over
 *  TP (MambaMixer: tensor_model_parallel on each); not the pre-norm. */
double aps_mamba_params_tp(const aps_model *m, int64_t tp);
/** Forward FLOPs of one Mamba-2 layer over T tokens: 2 T h (2d + 2GN +
 *  nh) + 2 T conv_dim K + 7 T d N + 2 T d h (Megatron-LM training.py @
 *  d98e8a64 mamba_layer_flops, with the conv term it leaves out). */
double aps_mamba_flops(const aps_model *m, double T);
/** The SSD scan's share of it, 7 T d N. */
double aps_mamba_scan_flops(const aps_model *m, double T);
/** Channels of the depthwise conv, d + 2 G N. */
double aps_mamba_conv_dim(const aps_model *m);
/** Bytes one Mamba-2 mixer saves for backward over T tokens on one of tp
 *  ranks, beyond its pre-norm's input and output (mamba_ssm
 *  ssd_combined.py MambaSplitConv1dScanCombinedFn.forward
 *  save_for_backward: zxbcdt and out_x; Megatron's ExtendedRMSNorm saves
 *  its input y, out_proj its input). */
double aps_mamba_saved_bytes(const aps_model *m, const aps_training *t,
                             double T, double tp);
/** Forward kernels of one Mamba-2 layer from Python. */
double aps_mamba_kernels(void);
/** Checks the hybrid fields (model.c calls it from aps_model_validate). */
aps_status aps_hybrid_validate(const aps_model *m, char *err, size_t n);
/** Why a hybrid model cannot be priced with this strategy, or NULL; *code
 *  is the reason: APS_REASON_NOT_MODELLED where apsearch does not price
 *  what the framework runs, APS_REASON_FRAMEWORK_UNSUPPORTED where the
 *  framework refuses it. */
const char *aps_hybrid_refusal(const aps_model *m, const aps_training *t,
                               const aps_strategy *s, aps_reason *code);
/** Layers of one multi-token-prediction depth: a hybrid model's
 *  mtp_layer_pattern's length, a transformer's one layer (hybrid.c). */
int64_t aps_hybrid_mtp_depth_layers(const aps_model *m);
/** Adds the layer kinds of `depths` MTP depths of a hybrid model (its
 *  mtp_layer_pattern each) to out's counts; the shares are not set. */
void aps_hybrid_mtp_counts(const aps_model *m, int64_t depths,
                           aps_hybrid_counts *out);

/* ---- precision.c: GEMM precisions ---- */

/* TransformerEngine's GEMM benchmark with pre-quantized operands (kernel
 * time only: the scale-factor swizzle TE's general_gemm runs before a
 * Blackwell block-scaled GEMM included, no cast) on a B300: the 12 GEMMs
 * (fprop, dgrad, wgrad) of one layer of hidden 4,096, FFN 16,384 and
 * 15,872 tokens, milliseconds per precision (TransformerEngine 1609c890e
 * docs/examples/gemm_profiling/gemm_profiling.rst, "Autocast vs
 * Pre-quantized"; benchmarks/gemm/benchmark_gemm.py
 * benchmark_*_prequantized).  The precision rates of precision.c and
 * Blackwell's bf16 efficiency in presets.c come from these four times. */
#define APS_TE_B300_GEMM_MS_BF16 13.102
#define APS_TE_B300_GEMM_MS_FP8 6.812 /* per-tensor, Float8CurrentScaling */
#define APS_TE_B300_GEMM_MS_MXFP8 7.161
#define APS_TE_B300_GEMM_MS_NVFP4 3.764

/** fp8, mxfp8 or nvfp4: quantized GEMM inputs and weights. */
bool aps_prec_quantized(aps_precision p);
/** mxfp8 or nvfp4: block-scaled (Blackwell tensor cores). */
bool aps_prec_block_scaled(aps_precision p);
/** Bytes per element of a quantized tensor in one layout, scales
 *  included: fp8 1, mxfp8 1 + 1/32, nvfp4 1/2 + 1/16; 2 (bf16) for the
 *  unquantized precisions. */
double aps_quantized_bytes(aps_precision p);
/** Peak dense FLOP/s of the GEMMs in this precision: fp8 and mxfp8 at
 *  peak_flops_fp8, nvfp4 at peak_flops_fp4, else bf16 (a missing peak
 *  falls back to bf16; aps_inputs_validate refuses it first). */
double aps_peak_flops(const aps_device *d, aps_precision p);
/** Large-GEMM efficiency of the precision, a fraction of aps_peak_flops:
 *  gemm_efficiency for bf16 / fp16 (and a quantized format on a device
 *  without its faster peak); fp8_gemm_efficiency for per-tensor fp8; that
 *  times APS_MXFP8_GEMM_RATE (0.951) for MXFP8; for NVFP4 that times
 *  min(1, APS_NVFP4_GEMM_RATE (1.81) x peak_flops_fp8 / peak_flops_fp4)
 *  (precision.c: TransformerEngine's pre-quantized GEMM benchmark on B300). */
double aps_gemm_eta_max(const aps_device *d, aps_precision p);
/** Bytes per element of a saved linear-layer input: the quantized copy
 *  for the weight-gradient GEMM under TransformerEngine (megatron,
 *  deepspeed profiles), bf16 otherwise. */
double aps_gemm_input_bytes(const aps_training *t);
/** Bytes per element of a sequence-parallel all-gather of a GEMM input
 *  (forward) or output gradient (backward): the quantized element with
 *  its block scales (aps_quantized_bytes, one layout) when the framework
 *  gathers quantized tensors under the run's precision (profile
 *  tp_gather_quantized), else bf16 (APS_ACT_BYTES). */
double aps_tp_gather_bytes(const aps_training *t);
/** Bytes per matrix parameter of the quantized weight copies the GEMMs
 *  read (both layouts); 0 for bf16 / fp16. */
double aps_weight_copy_bytes(const aps_training *t);
/** HBM bytes per element of casting a GEMM operand to the precision in
 *  both layouts: by an unfused pass, and by a producer that quantizes its
 *  own output (fused). */
void aps_cast_bytes(const aps_training *t, double *unfused, double *fused);
/** HBM bytes per element of casting a norm's output (the QKV and MLP
 *  inputs): the fused figure of aps_cast_bytes where the framework fuses
 *  the cast into the norm (TransformerEngine: per-tensor fp8), the
 *  unfused one for the block-scaled formats (precision.c). */
double aps_norm_cast_bytes(const aps_training *t);

/* ---- recipe.c: recipe settings ---- */

/** training.grad_reduce_in_fp32 resolved against the framework default. */
bool aps_recipe_grad_reduce_in_fp32(const aps_training *t);
/** Bytes per parameter of the gradient kept on the device. */
double aps_recipe_grad_bytes(const aps_training *t);
/** Bytes per gradient element on the wire (the reduce dtype). */
double aps_recipe_grad_reduce_bytes(const aps_training *t);
/** fp8_param_gather in effect (on and a quantized precision). */
bool aps_recipe_fp8_param_gather(const aps_training *t);
/** Bytes of a parameter all-gather of psi parameters, matmul_psi of them
 *  in linear layers: bf16, the linear weights in the quantized format
 *  with fp8_param_gather (one layout, the other made after the gather). */
double aps_recipe_gather_bytes(const aps_training *t, double psi,
                               double matmul_psi);
/** Whether the loss runs compiled: training.compile_loss when set (TorchTitan
 *  compile.components with "loss", with or without "model"), else
 *  training.torch_compile; only for a framework with a compiled loss
 *  (profile logits_bytes_compiled > 0). */
bool aps_recipe_compile_loss(const aps_training *t);
/** Whether FSDP gradients are reduce-scattered once per step, after the
 *  last micro-batch: training.defer_fsdp_grad_sync when set (AutoModel
 *  FSDP2Config), else the profile's defer_grad_sync. */
bool aps_recipe_defer_grad_sync(const aps_training *t);

/** Bytes per element of the T k x h routed-token operand an MoE layer keeps
 *  for the gradient of its routing scores when the framework multiplies
 *  them outside the experts (profile moe_score_operand_bytes, or its
 *  _compiled value under training.torch_compile); 0 for Megatron, whose
 *  experts apply them inside the activation. */
double aps_recipe_moe_score_operand_bytes(const aps_training *t);
/** Whether TorchTitan projects Q, K and V by one fused wqkv
 *  (training.fuse_qkv; default yes, as TorchTitan since 3396a4b37,
 *  2026-06-24; framework fsdp2 only) (recipe.c). */
bool aps_recipe_fuse_qkv(const aps_training *t);
/** Whether TorchTitan's op-level selective checkpointing saves the
 *  all-to-all outputs (training.sac_save_alltoall; default yes, as
 *  TorchTitan since c4e2291, 2025-09-06) (recipe.c). */
bool aps_recipe_sac_save_a2a(const aps_training *t);
/** Bytes per logit held by the loss at its peak (compiled or eager),
 *  without tensor parallelism. */
double aps_recipe_logits_bytes(const aps_training *t);
/** Bytes per logit of the rank's vocabulary shard held by the loss at its
 *  peak with tp_degree tp: the eager loss runs vocab-parallel under TP
 *  where the profile says so (logits_bytes_loss_parallel), else as
 *  aps_recipe_logits_bytes (recipe.c). */
double aps_recipe_logits_bytes_tp(const aps_training *t, int64_t tp);
/** Whether the SwiGLU keeps the SiLU's output as well (an unfused
 *  w2(silu(w1 x) * w3 x)): training.unfused_swiglu, Hugging Face's eager
 *  layer, or a framework whose eager SwiGLU is unfused run without
 *  training.torch_compile (profile eager_unfused_swiglu) (recipe.c). */
bool aps_recipe_unfused_swiglu(const aps_training *t);
/** Chunks the output layer and the loss run in: training.loss_chunks,
 *  else the profile's, at least 1 (recipe.c). */
int64_t aps_recipe_loss_chunks(const aps_training *t);
/** Training settings that act only with another setting or framework:
 *  APS_EINVAL with the one-line reason when one is given without it
 *  (training.c). */
aps_status aps_training_dependencies(const aps_training *t, char *err,
                                     size_t n);
/** Hidden and attention dropout as the run trains: training.dropout, else
 *  the framework's default (its profile). */
bool aps_recipe_dropout(const aps_training *t);
/** Attention-probability dropout on: training.attention_dropout > 0 when
 *  given, else aps_recipe_dropout (recipe.c).  It masks the attention
 *  scores (a mask and the dropped scores without flash attention; inside
 *  the flash kernel, only its RNG state). */
bool aps_recipe_attention_dropout(const aps_training *t);
/** Hidden dropout on: training.hidden_dropout > 0 when given, else
 *  aps_recipe_dropout (recipe.c).  It masks the output of attention and
 *  of the MLP in every layer, and the embedding's (Megatron-Core
 *  hidden_dropout: transformer_layer.py self_attn_bda / mlp_bda,
 *  language_module embedding_dropout @ d98e8a64). */
bool aps_recipe_hidden_dropout(const aps_training *t);
/** PyTorch's expandable segments as the run sets them:
 *  training.expandable_segments, else the framework launcher's default. */
bool aps_recipe_expandable_segments(const aps_training *t);
/** Reserved over allocated bytes, less 1, under the run's allocator
 *  settings (training.allocator_fragmentation[_expandable]). */
double aps_recipe_fragmentation(const aps_training *t);
/** Exposed seconds of `comm` seconds of TP collectives next to `gemm`
 *  seconds of the GEMMs they feed, with tp_comm_overlap (first of tp
 *  chunks exposed, the rest where longer than the GEMMs, and never more
 *  than without it) or else the tp_overlap fraction hidden. */
double aps_recipe_tp_exposed(const aps_training *t, int64_t tp, double comm,
                             double gemm);
/** Activation offload of `layers` layers of `bytes` saved per layer and
 *  micro-batch, next to layers of `layer_fwd` / `layer_bwd` seconds:
 *  seconds of host-link copies in total (out and back) and exposed in the
 *  forward and the backward of one micro-batch. */
void aps_recipe_offload_times(const aps_device *d, int64_t layers,
                              double bytes, double layer_fwd,
                              double layer_bwd, double *total,
                              double *exposed_fwd, double *exposed_bwd);
/** Layers of a rank (of `layers`, in v model chunks) whose activations
 *  are offloaded: activation_offload_layers per chunk. */
int64_t aps_recipe_offload_layers(const aps_training *t, int64_t layers,
                                  int64_t v);
/** What the framework cannot run of the recipe settings
 *  (FRAMEWORK_UNSUPPORTED with the source), else APS_REASON_NONE. */
aps_reason aps_check_recipe(const aps_training *t, const aps_strategy *s,
                            char *msg, size_t n);

/* ---- mfsdp.c: Megatron-FSDP (--use-megatron-fsdp) ---- */

/** Megatron-FSDP's --data-parallel-sharding-strategy a strategy runs with
 *  (training.fsdp_impl = megatron_fsdp), or NONE: another implementation,
 *  or no sharding beyond Megatron's distributed optimizer. */
typedef enum {
    APS_MFSDP_NONE = 0,
    APS_MFSDP_OPTIM_GRADS,        /**< ZeRO-2: zero_stage 2, fsdp_degree 1 */
    APS_MFSDP_OPTIM_GRADS_PARAMS  /**< ZeRO-3: fsdp_degree > 1 or zero_stage 3 */
} aps_mfsdp_sharding;

/** The sharding strategy of (t, s): Megatron-FSDP under framework megatron
 *  with fsdp_impl megatron_fsdp, fsdp_degree > 1 or zero_stage 3 ->
 *  optim_grads_params, zero_stage 2 -> optim_grads; else NONE (zero_stage
 *  1 stays --use-distributed-optimizer, the same sharding as "optim"). */
aps_mfsdp_sharding aps_mfsdp_sharding_of(const aps_training *t,
                                         const aps_strategy *s);

/** What Megatron-LM refuses, or apsearch does not estimate, of Megatron-
 *  FSDP with (t, s) (HSDP whose expert-data-parallel ranks do not split
 *  into its instances, no reshard after forward, pipelines):
 *  FRAMEWORK_UNSUPPORTED with the reason in msg
 *  (n bytes), else APS_REASON_NONE. */
aps_reason aps_mfsdp_check(const aps_training *t, const aps_strategy *s,
                           char *msg, size_t n);

/** Bytes held by `gathered` unsharded parameters, `gm` of them in linear
 *  layers: the gather dtype (bf16, or the quantized format with
 *  fp8_param_gather) plus TransformerEngine's quantized copies of the
 *  linear weights (memory.c). */
double aps_gathered_param_bytes(const aps_training *t, double gathered,
                                double gm);

/** Data-parallel sharding plan derived from (R, S, c, zero_stage). */
typedef struct {
    int64_t shard_group;    /**< ranks model states are sharded over */
    int64_t replicate;      /**< HSDP replicate degree R, the instances
                                 of Megatron's partial distributed
                                 optimizer (1 otherwise) */
    int64_t dp_group;       /**< ranks gradients are synchronised over */
    bool fsdp_like;         /**< weights sharded: gathered every micro-batch */
    double grad_reduce;     /**< bytes per gradient element reduced */
    aps_state_bytes bytes;  /**< per-parameter bytes and shard flags */
    aps_mfsdp_sharding mfsdp; /**< Megatron-FSDP's strategy, or NONE */
} aps_dp_plan;

void aps_dp_plan_build(const aps_training *t, const aps_strategy *s,
                       aps_dp_plan *out);

/** Megatron-FSDP's buffers on rank i, bytes (aps_stage_memory's
 *  comm_buffers_fsdp): the unsharded parameters of the units in flight
 *  and of the modules outside units, and the unsharded gradient buckets
 *  queued for reduce-scatter; psi = the rank's parameters as the dense
 *  model counts them, held = its MoE layers' (an MoE layer's unit holds
 *  its local experts).  Source and formula: mfsdp.c. */
double aps_mfsdp_buffers(const aps_model *m, const aps_training *t,
                         const aps_layout *lay, const aps_dp_plan *plan,
                         const aps_moe_held *held, int64_t i, double psi);

/* ---- layerprog.c: the kernels a layer launches and the host's time ---- */

/** Kernels one block launches per micro-batch, forward and backward. */
typedef struct {
    double fwd, bwd;
} aps_launches;

/** One layer's launches per micro-batch after CUDA-graph capture
 *  (layerprog.c counts them): kernels from Python code, and from
 *  TransformerEngine's per-expert C++ loops, quantize kernels (moe_loop)
 *  and cuBLASLt GEMMs (moe_loop_gemm); a captured block is one graph
 *  launch each way. */
typedef struct {
    aps_launches attn;     /**< attention block (norm, QKV, RoPE, core,
                                projection) */
    aps_launches mlp;      /**< a dense MLP block */
    aps_launches moe_pre;  /**< MoE: norm, router, dispatcher preprocess */
    aps_launches moe_post; /**< MoE: dispatch, experts, combine, shared */
    aps_launches moe_loop; /**< MoE: per-expert quantizes (TE's loop) */
    aps_launches moe_loop_gemm; /**< MoE: per-expert cuBLASLt GEMMs (TE's
                                     multi-stream loop) */
    bool sync;             /**< a device-to-host sync between moe_pre and
                                moe_post (dropless all-to-all) */
    bool step_graphed;     /**< the whole step is one graph: no host time */
} aps_host_program;

/* aps_cuda_graph_effective_scope: public, apsearch/core.h */

/** True when scope g is a set of per-layer modules holding every bit of
 *  `module` (APS_CG_ATTN, APS_CG_MLP, APS_CG_MAMBA, APS_CG_MOE_ROUTER);
 *  false for whole layers, the whole iteration and none. */
static inline bool aps_cuda_graph_modules(aps_cuda_graph_scope g, int module)
{
    return g != APS_CG_FULL_ITERATION && g != APS_CG_NONE &&
           ((int)g & module) == module && module != 0;
}

/** True when the model has a layer with a dense MLP that Megatron-Core's
 *  "mlp" CUDA graph module may capture: a dense model, or an MoE model
 *  whose moe_layer_freq has dense layers; a hybrid MoE model takes
 *  Megatron's default moe_layer_freq of 1 and has none
 *  (transformer_config.py @ d98e8a64 l.2825-2836; layerprog.c). */
bool aps_model_has_dense_mlp_layer(const aps_model *m);

/** Builds the layer program of strategy s (layerprog.c) for the layer
 *  whose blocks are mix w (NULL: the model's mean layer, aps_hybrid_mix;
 *  a pipeline rank of a hybrid model: aps_hybrid_stage_mix). */
void aps_host_program_build(const aps_model *m, const aps_training *t,
                            const aps_strategy *s, const aps_hybrid_counts *w,
                            aps_host_program *out);
/** The same program with nothing captured (APS_CG_NONE): the kernels the
 *  GPU runs per micro-batch, graphed or not, which the GPU's gap between
 *  queued kernels (aps_device.gpu_seconds_per_kernel) is paid on. */
void aps_kernel_program_build(const aps_model *m, const aps_training *t,
                              const aps_strategy *s,
                              const aps_hybrid_counts *w,
                              aps_host_program *out);

/** The router's floor: the MoE block's router and preprocess kernels
 *  (the kernel program k's moe_pre, norm included) run at least
 *  d->gpu_min_kernel_seconds each, whatever bytes moe.c prices for them
 *  (mc->router_fwd forward, twice it backward); sets
 *  mc->router_floor_fwd and _bwd to what that adds, 0 at least. */
void aps_router_floor(const aps_device *d, const aps_host_program *k,
                      aps_moe_cost *mc);

/** Seconds per launch of each kind of a layer program: a kernel from
 *  Python (py), a kernel from a C++ loop (loop), a GEMM of TE's
 *  multi-stream cuBLASLt loop (gemm). */
typedef struct {
    double py, loop, gemm;
} aps_launch_costs;

/** The host's costs on device d: its host_seconds_per_kernel,
 *  _loop_kernel and _loop_gemm. */
aps_launch_costs aps_host_launch_costs(const aps_device *d);
/** The GPU's costs on device d: gpu_seconds_per_kernel for every kernel,
 *  whichever code launched it. */
aps_launch_costs aps_gpu_gap_costs(const aps_device *d);

/** Host seconds of one micro-batch on one pipeline rank. */
typedef struct {
    double fwd, bwd;       /**< all its layers; bwd with recomputed ones */
    double attn, moe_pre, moe_post; /**< one MoE layer's pieces, forward */
    double sync_layers;    /**< MoE layers with a device-to-host sync */
} aps_host_stage_time;

/** The seconds of a rank's launches at costs k (the host's,
 *  aps_host_launch_costs, or the GPU's gaps, aps_gpu_gap_costs) with
 *  layers layers (moe_layers of them MoE, recomputed of them recomputed
 *  in the backward): its forward, its backward and one MoE layer's
 *  forward pieces; a step-graphed program costs nothing. */
void aps_host_stage(const aps_launch_costs *k, const aps_host_program *hp,
                    double layers, double moe_layers, double recomputed,
                    aps_host_stage_time *out);
/** Forward seconds of a rank whose GPU needs gpu seconds when the host
 *  must launch h: the larger of the two where the host may run ahead;
 *  else, per synced MoE layer, the segment from its sync to the next
 *  (layerprog.c sync_segment: the host's post-sync launches then the next
 *  layer's pre-sync ones, against the GPU's g_post then g_pre, with the
 *  g_tail of g_post -- the combine -- launched after the experts' loop),
 *  plus the larger of the two over the rest; at most gpu + h->fwd, the
 *  two one after the other.  g_pre: the GPU's attention, norm and router
 *  of one layer; g_post: its experts, dispatch and combine. */
double aps_host_bound_fwd(const aps_host_stage_time *h, double gpu,
                          double g_pre, double g_post, double g_tail);

/** Costs of one transformer layer for one micro-batch on one device;
 *  identical on every stage, so computed once per strategy. */
typedef struct {
    double act_full;       /**< bytes saved, no recompute */
    double act_full_max;   /**< bytes saved by the largest kind of layer
                                among those of the mix (act_full for a
                                model whose layers are all alike) */
    double act_selective;  /**< bytes saved with selective recompute */
    double act_input;      /**< bytes saved with full recompute (input) */
    double offload_attn;   /**< of act_full, the mean layer's bytes the
                                core_attn / attn_proj offload modules move
                                to host (Q, K, V, the context; offload.c) */
    double offload_core;   /**< and the attention core's saved statistics
                                they move, unless core_attn recompute
                                frees them */
    double gemm_fwd;       /**< s, linear layers */
    double attn_fwd;       /**< s, attention core (bf16) */
    double attn_bwd;       /**< s */
    double selective_fwd;  /**< s recomputed per layer under "selective" */
    double membound_fwd;   /**< s, norms, residuals, activations, rope */
    double fp8_cast_fwd;   /**< s, fp8 casts of the GEMM inputs */
    double fp8_cast_bwd;   /**< s, fp8 casts of the GEMM output gradients */
    double tp_fwd;         /**< s, TP collectives in the forward */
    double tp_bwd;         /**< s */
    double kv_gather;      /**< s, each way: with replicated KV heads the
                                QKV output's all-gather forward, its
                                gradient's reduce-scatter backward, and
                                their concatenating copies (compute.c
                                kv_replication_comm); blocking, never
                                overlapped by tp_comm_overlap */
    double cp_fwd;         /**< s, CP communication total, forward */
    double cp_bwd;         /**< s */
    aps_moe_cost moe;      /**< MoE / MLA differences (moe.c) */
    aps_host_program host; /**< kernels launched per layer (layerprog.c) */
    aps_host_program kernels; /**< kernels the GPU runs per layer, graphed
                                   or not (aps_kernel_program_build) */
} aps_layer_cost;

/** Memory of pipeline rank i by category into st (memory.c). */
void aps_stage_memory(const aps_model *m, const aps_cluster *c,
                      const aps_training *t, const aps_strategy *s,
                      const aps_layout *lay, const aps_dp_plan *plan,
                      const aps_layer_cost *lc, int64_t i,
                      aps_stage_estimate *st);

/** Bytes one dense GQA layer saves per micro-batch on one rank under
 *  TorchTitan's op-level selective checkpointing (opsac.c). */
double aps_op_sac_bytes(const aps_model *m, const aps_training *t,
                        const aps_strategy *s);
/** Bytes one layer saves per micro-batch on one rank under TorchTitan's
 *  op-level selective checkpointing: attention MLA (mla) or GQA, FFN the
 *  MoE block (moe) or the dense FFN (opsac.c, from torchtitan
 *  activation_checkpoint.py's policy). */
double aps_op_sac_layer_bytes(const aps_model *m, const aps_training *t,
                              const aps_strategy *s, bool mla, bool moe);
/** Forward seconds on device d of the matmuls one layer's backward runs
 *  again under op-level selective checkpointing (TorchTitan, AutoModel),
 *  per micro-batch on one rank: the mms its walk does not save (opsac.c),
 *  the experts' grouped mms among them (aps_moe_grouped_fwd). */
double aps_op_sac_layer_recompute(const aps_model *m, const aps_device *d,
                                  const aps_training *t, const aps_strategy *s,
                                  bool mla, bool moe);
/** Matrix weight elements per token the backward multiplies again under
 *  TorchTitan's op-level selective checkpointing, the mean over the
 *  model's layers (dense and MoE): the even-numbered mms, the router
 *  gate and the routed experts' (k of them) matrices, full width
 *  (opsac.c; the hardware FLOPs, throughput.c). */
double aps_op_sac_recompute_params(const aps_model *m, const aps_training *t);
/** Whether strategy s recomputes by op-level selective checkpointing:
 *  layer_recompute selective under a framework whose selective is it
 *  (TorchTitan, NeMo AutoModel: profile.c op_sac_selective). */
bool aps_op_sac_on(const aps_training *t, const aps_strategy *s);
/** Whether the attention kernel runs again in the backward under
 *  op-level selective checkpointing: AutoModel's own model classes with
 *  TransformerEngine's attention (training.attn_backend te, their
 *  default), which its policy does not see (opsac.c). */
bool aps_op_sac_attention_recomputed(const aps_training *t);
/** Whether op-level selective checkpointing saves the MoE dispatch and
 *  combine outputs (TorchTitan's all-to-alls, training.sac_save_alltoall;
 *  not AutoModel's DeepEP / HybridEP calls): else the backward dispatches
 *  and combines again (opsac.c). */
bool aps_op_sac_saves_dispatch(const aps_training *t);

/** Activation bytes of one layer whose blocks are mix w (NULL: the
 *  model's mean layer, aps_hybrid_mix), per micro-batch on one rank
 *  (memory.c). */
void aps_layer_activations(const aps_model *m, const aps_training *t,
                           const aps_strategy *s, const aps_hybrid_counts *w,
                           aps_layer_cost *out);
/** Compute and communication seconds of one layer whose blocks are mix w
 *  (NULL: the model's mean layer), and its launches (compute.c). */
void aps_layer_times(const aps_model *m, const aps_cluster *c,
                     const aps_training *t, const aps_strategy *s,
                     const aps_hybrid_counts *w, aps_layer_cost *out);

/** Matrix parameters of the mean layer of mix w (its shares of an
 *  attention, an MLP, a Mamba-2 and a Gated DeltaNet block; model.c). */
double aps_mix_matmul_params(const aps_model *m, const aps_hybrid_counts *w);
/** aps_layer_params_tp and aps_layer_matmul_params of the mean layer of
 *  a hybrid model's pipeline rank i (aps_hybrid_stage_mix; model.c). */
double aps_hybrid_stage_params_tp(const aps_model *m, const aps_layout *lay,
                                  int64_t i);
double aps_hybrid_stage_matmul_params(const aps_model *m, const aps_layout *lay,
                                      int64_t i);
/** Parameters of the mean layer of pipeline rank i's decoder layers on one
 *  of lay->t TP ranks: aps_layer_params_tp unless a hybrid model is split
 *  over stages (aps_hybrid_split). */
static inline double aps_stage_layer_params_tp(const aps_model *m,
                                               const aps_layout *lay,
                                               int64_t i)
{
    return aps_hybrid_split(m, lay) ? aps_hybrid_stage_params_tp(m, lay, i)
                                    : aps_layer_params_tp(m, lay->t);
}
/** Matrix parameters (whole, not split over TP) of the mean layer of
 *  pipeline rank i's decoder layers: aps_layer_matmul_params unless a
 *  hybrid model is split over stages. */
static inline double aps_stage_layer_matmul_params(const aps_model *m,
                                                   const aps_layout *lay,
                                                   int64_t i)
{
    return aps_hybrid_split(m, lay) ? aps_hybrid_stage_matmul_params(m, lay, i)
                                    : aps_layer_matmul_params(m);
}

/** The mean layer of pipeline rank i's own layers (aps_hybrid_stage_mix)
 *  built into buf with lc's MoE terms (per MoE layer, the same on every
 *  rank); returns buf (hybrid.c). */
const aps_layer_cost *aps_hybrid_stage_cost(const aps_model *m,
                                            const aps_cluster *c,
                                            const aps_training *t,
                                            const aps_strategy *s,
                                            const aps_layout *lay,
                                            const aps_layer_cost *lc,
                                            int64_t i, aps_layer_cost *buf);

/** The layer cost of mix w (its activations and times, aps_layer_times)
 *  with the MoE terms moe of one MoE layer, into buf (hybrid.c). */
void aps_mix_layer_cost(const aps_model *m, const aps_cluster *c,
                        const aps_training *t, const aps_strategy *s,
                        const aps_hybrid_counts *w, const aps_moe_cost *moe,
                        aps_layer_cost *buf);

/* ---- bf16layers.c: Megatron's first and last layers in bf16 ---- */

/** Decoder layers as ranges of the model's layer indices, start[k] ..
 *  start[k] + len[k] - 1 for k < n; layers = the sum of len. */
typedef struct {
    int64_t start[2 * APS_MAX_STAGES], len[2 * APS_MAX_STAGES];
    int64_t n, layers;
} aps_layer_spans;

/** Layers at the model's start (resp. end) that training t runs in bf16:
 *  0 unless first_last_layers_bf16, else the count given or Megatron's
 *  default APS_BF16_LAYERS_DEFAULT. */
int64_t aps_bf16_layers_at_start(const aps_training *t);
int64_t aps_bf16_layers_at_end(const aps_training *t);
/** Pipeline rank i's decoder layers split into those run in bf16 (global
 *  index < the start count or >= num_layers - the end count, Megatron-LM
 *  fp8_utils.py is_first_last_bf16_layer @ d98e8a64) and the others,
 *  quantized; bf16 is empty unless t's GEMMs are quantized.  Its
 *  multi-token-prediction layers take no layer index there and stay
 *  quantized. */
void aps_bf16_rank_split(const aps_model *m, const aps_training *t,
                         const aps_layout *lay, int64_t i,
                         aps_layer_spans *bf16, aps_layer_spans *quant);
/** Pipeline rank i's layer cost when some of its layers run in bf16
 *  (aps_bf16_rank_split): per field the mean of its quantized layers'
 *  cost (base: lc or the hybrid rank's, else its quantized kinds') and
 *  its bf16 layers' cost (t at bf16), weighted by their counts, so the
 *  rank's sums are (L - k) quantized + k bf16 layers; MoE terms by its
 *  MoE layers, host launches by the blocks they count.  Returns base when
 *  the rank runs none in bf16 (unchanged bit for bit), else buf. */
const aps_layer_cost *aps_bf16_stage_cost(const aps_model *m,
                                          const aps_cluster *c,
                                          const aps_training *t,
                                          const aps_strategy *s,
                                          const aps_layout *lay,
                                          const aps_layer_cost *lc,
                                          const aps_layer_cost *base,
                                          int64_t i, aps_layer_cost *buf);
/** Strategy s's check of Megatron's bounds under fp8 and mxfp8: each
 *  count in [0, num_layers // pp_degree] (transformer_config.py
 *  l.1534-1560 @ d98e8a64); APS_REASON_PP_PARTITION with msg if not. */
aps_reason aps_check_bf16_layers(const aps_model *m, const aps_training *t,
                                 const aps_strategy *s, char *msg, size_t n);

/** The layer cost pipeline rank i's terms read: lc, the model's mean
 *  layer, when every rank holds it (a transformer, a hybrid model on one
 *  stage), else aps_hybrid_stage_cost into buf; with first/last layers
 *  in bf16 on the rank, aps_bf16_stage_cost over that.  aps_stage_memory
 *  and aps_stage_time_build call it, so a rank's sums over its layers are
 *  those of its layer kinds and precisions. */
static inline const aps_layer_cost *
aps_stage_layer_cost(const aps_model *m, const aps_cluster *c,
                     const aps_training *t, const aps_strategy *s,
                     const aps_layout *lay, const aps_layer_cost *lc,
                     int64_t i, aps_layer_cost *buf)
{
    const aps_layer_cost *base =
        aps_hybrid_split(m, lay)
            ? aps_hybrid_stage_cost(m, c, t, s, lay, lc, i, buf)
            : lc;
    return t->first_last_layers_bf16
               ? aps_bf16_stage_cost(m, c, t, s, lay, lc, base, i, buf)
               : base;
}

/** Backward / forward FLOP ratios: a GEMM (dgrad + wgrad), and
 *  FlashAttention (5 matmuls of the forward's 2, Dao 2023, arXiv:
 *  2307.08691 s.3.1). */
#define APS_GEMM_BWD_RATIO 2.0
#define APS_FLASH_BWD_RATIO 2.5

/** The recompute modules of Megatron's selective recompute for this
 *  strategy (bits of aps_recompute_module): strategy.recompute_modules, 0
 *  read as core_attn (Megatron's default); 0 under a profile whose
 *  selective recompute is TorchTitan's op-level checkpointing.  Whether
 *  selective recompute is on is layer_recompute's (compute.c). */
unsigned aps_recompute_modules(const aps_training *t, const aps_strategy *s);

/** Forward seconds of one dense MLP (ffn_hidden_size) on one TP rank for
 *  one micro-batch: its GEMMs and activation function (compute.c). */
double aps_mlp_fwd_time(const aps_model *m, const aps_device *d,
                        const aps_training *t, const aps_strategy *s);

/** fp32 tensors Kimi K3's SiTU keeps per element of the MLP width
 *  (memory.c aps_mlp_bytes_per_width). */
#define APS_SITU_SAVED_FP32 6.0
/** Bytes an MLP saves inside itself per token and element of its width:
 *  the fc1 outputs (gate and up with SwiGLU) in bf16, the fc2 input as the
 *  GEMM input dtype (Korthikanti et al. 2022 s.4.1), and with an unfused
 *  SwiGLU (aps_recipe_unfused_swiglu) the SiLU's output (memory.c); dense
 *  FFN, experts and shared experts alike (moe.c). */
double aps_mlp_bytes_per_width(const aps_model *m, const aps_training *t);

/** Bytes a dense MLP saves inside itself per micro-batch on one TP rank:
 *  aps_mlp_bytes_per_width x tokens x ffn_hidden_size / tp (memory.c). */
double aps_mlp_saved_bytes(const aps_model *m, const aps_training *t,
                           const aps_strategy *s);

/** HBM bytes per element of the MLP activation function in the forward
 *  (fused or eager, compute.c). */
double aps_act_fn_bytes(const aps_model *m, const aps_training *t);

/** Persistent model-state bytes (params, grads, optimizer states into
 *  mem[]) of psi parameters, matmul_psi of them in linear layers, under
 *  the plan (memory.c). */
void aps_model_states(const aps_training *t, const aps_dp_plan *plan,
                      double psi, double matmul_psi, double mem[]);

/** Fraction of the large-GEMM rate a GEMM of M x K by K x N reaches, in
 *  (0, 1]: tile quantization of M and N on gemm_tile_m x gemm_tile_n
 *  output tiles, wave quantization of the tiles over sm_count SMs, and
 *  the pipeline's K / (K + gemm_half_dim); a zero tile or SM count turns
 *  its term off (gemm.c). */
double aps_gemm_shape_factor(const aps_device *d, double M, double N,
                             double K);

/** Fraction of the bf16 peak the attention core runs at: the device's
 *  attention_efficiency with flash attention (fused kernels), its
 *  unfused_attention_efficiency without (batched QK^T and PV GEMMs;
 *  Megatron-LM's --attention-backend flash / unfused).  Dimensionless
 *  (compute.c). */
double aps_attention_efficiency(const aps_device *d, const aps_training *t);

/** State elements of Mamba-2's chunked SSD scan per byte per second of
 *  HBM bandwidth, the forward's rate in training (the backward is priced
 *  at twice the forward).  Derived from the one published training
 *  measurement of a pure Mamba-2 model on several GPUs, state-spaces/mamba
 *  issue 904 (2026-04-06): d_model 2048, 48 layers, 4 x 4,096 tokens,
 *  bf16, 239.2 TFLOP/s on an H200 and 102.5 on an A100.  The step those
 *  give (FLOPs per token the mean of 6N and apsearch's count, 6 % apart),
 *  less apsearch's estimate of the same job with the scan free (GEMMs,
 *  norms, conv, gated norm, loss, optimizer; no dropout: mamba_ssm's
 *  MixerModel has none), leaves the scan its time: H200 0.278 s for
 *  48 x 16,384 x 4,096 x 128 forward elements, 4.45e12 elements/s forward,
 *  0.927 per B/s of its 4.8 TB/s (scripts/derive-ssd-rate.sh).  The A100
 *  gives 0.977, 5.3 % apart: on Ampere and Hopper the kernels (mamba_ssm's
 *  Triton SSD forward and backward, the same
 *  mamba_split_conv1d_scan_combined Megatron-Core's MambaMixer runs) scale
 *  with memory bandwidth.  A quarter of the forward-only inference rate
 *  measured on one H100 (vLLM PR 27299: 1.262e7 tokens/s at 8,192 tokens,
 *  128 heads of 64, state 128, 3.95 per B/s), which this replaces:
 *  training's backward recomputes the chunk states and writes fp32
 *  gradients with atomics.  A device's ssd_scan_rate replaces it
 *  (Blackwell's presets: APS_SSD_SCAN_RATE_BLACKWELL).  (Until 2026-12-06
 *  0.960, derived with Megatron's default dropout in the priced job, which
 *  the measured run does not have.) */
#define APS_SSD_ELEMS_PER_HBM_BYTE 0.927

/** Forward rate of the same scan on Blackwell (B200, GB200, B300,
 *  GB300, all 8 TB/s), state elements per second: the GB200 column of
 *  the same measurement (360.4 TFLOP/s; the scan 0.249 s of a 0.378 s
 *  step), 4.97e12, 0.622 per B/s, two thirds of the Hopper rule: the
 *  Triton kernels gain 1.12x from H200 to GB200 where the bandwidth gains
 *  1.67x and the GEMMs 2.44x (the issue's aten::mm times, 1,324 and 543
 *  ms).  The presets set it as their ssd_scan_rate (presets.c).  (Until
 *  2026-12-06 5.088e12, derived with dropout in the priced job.) */
#define APS_SSD_SCAN_RATE_BLACKWELL 4.972e12

/** Forward rate of Mamba-2's chunked SSD scan on device d, state
 *  elements (tokens x d_inner x d_state) per second: its ssd_scan_rate
 *  when set, else APS_SSD_ELEMS_PER_HBM_BYTE x hbm_bandwidth (compute.c).
 *  > 0 for a validated device. */
double aps_ssd_scan_rate(const aps_device *d);

/** Memory-bound seconds for `bytes` of HBM traffic: bytes /
 *  (hbm_bandwidth x hbm_efficiency) (compute.c). */
double aps_hbm_time(const aps_device *d, double bytes);

/** Usable bytes per device: training.memory_limit_bytes when set, else
 *  the device's memory_bytes less training.memory_margin_bytes
 *  (memory.c). */
double aps_memory_limit(const aps_cluster *c, const aps_training *t);
/** The figure of stage estimate st the memory limit bounds: device memory
 *  in use against the device's capacity (no memory_limit_bytes), else
 *  training.memory_limit_kind's (default max reserved). */
double aps_memory_checked(const aps_training *t, const aps_stage_estimate *st);

/** Devices a strategy occupies: dp x fsdp x tp x pp x cp (training.c). */
int64_t aps_strategy_devices(const aps_strategy *s);

/** Seconds a communication of `total` seconds costs the critical path when
 *  `exposed` of it is not hidden: the exposed part plus
 *  training.overlap_interference of the hidden rest (NCCL kernels share
 *  SMs and HBM with the compute they overlap; training.c,
 *  APS_OVERLAP_INTERFERENCE) (comm.c). */
double aps_interfered(const aps_training *t, double total, double exposed);

/** Sets performance category k of out: seconds per step in total and on
 *  the critical path. */
static inline void aps_set_perf(aps_estimate *out, aps_perf_category k,
                                double total, double exposed)
{
    out->perf_total[k] = total;
    out->perf_exposed[k] = exposed;
}

/* ---- stagetime.c: one micro-batch on one pipeline rank ---- */

/** Seconds of one micro-batch on one pipeline rank by category: compute,
 *  and each communication in total and on the critical path of the
 *  forward (_fwd) and the backward (_bwd). */
typedef struct {
    double comp_fwd, comp_bwd, recompute;
    double tp_total, tp_exposed_fwd, tp_exposed_bwd;
    double cp_total, cp_exposed_fwd, cp_exposed_bwd;
    double ag_total, ag_exposed, rs_total, rs_exposed; /**< FSDP gathers
                                            and gradient reduce-scatters */
    double fsdp_exposed_fwd, fsdp_exposed_bwd;
    double offload_total, offload_exposed_fwd, offload_exposed_bwd;
    double wgrad; /**< the weight-gradient GEMMs within comp_bwd */
    double ep_total, ep_exposed_fwd, ep_exposed_bwd; /**< MoE dispatch and
                                            combine (all-to-all) */
    aps_host_stage_time host; /**< the host's launches (layerprog.c) */
    aps_host_stage_time gaps; /**< the GPU's gaps between its queued
                                   kernels (layerprog.c), GPU time */
    double moe_g_pre, moe_g_post; /**< GPU forward of one MoE layer before
                                       and after its dispatch sync, its
                                       kernel gaps included */
    double moe_g_tail; /**< of moe_g_post, the combine's exposed
                            all-to-all: launched after the experts */
} aps_stage_time;

/** Times of one micro-batch on pipeline rank i as laid out into st; with
 *  edges, the embedding on rank 0 and the output layer and loss on rank
 *  p - 1 are included (without, the same rank's layers alone). */
void aps_stage_time_build(const aps_model *m, const aps_cluster *c,
                          const aps_training *t, const aps_strategy *s,
                          const aps_layout *lay, const aps_dp_plan *plan,
                          const aps_layer_cost *lc, int64_t i, bool edges,
                          aps_stage_time *st);

/** Forward and backward seconds of one micro-batch on a rank: compute
 *  plus the exposed TP, CP, FSDP and offload time inside it (the backward
 *  with its recompute). */
void aps_stage_fwd_bwd(const aps_stage_time *st, double *tf, double *tb);

/** Times of one micro-batch on pipeline rank i with the fixed work where
 *  the schedule runs it: the embedding on rank 0, the output layer and
 *  loss on rank p - 1, or on rank 0 under the V of ZB-V and DualPipeV
 *  (their last stage, 2p - 1, is rank 0's second chunk). */
void aps_stage_time_placed(const aps_model *m, const aps_cluster *c,
                           const aps_training *t, const aps_strategy *s,
                           const aps_layout *lay, const aps_dp_plan *plan,
                           const aps_layer_cost *lc, int64_t i,
                           aps_stage_time *tm);

/** Rank i's times into tm, its fixed work where the schedule runs it
 *  (the embedding on rank 0; the output layer and loss on rank p - 1, or
 *  on rank 0 under the V of ZB-V and DualPipeV, whose last stage is rank
 *  0's second chunk), and its entries of r: tf, tb, tw with the rank's
 *  own edges, and on the first and last rank of a pipeline (p > 1) the
 *  fixed work ef, eb, ew that the embedding or the output layer and loss
 *  add (0 elsewhere), which aps_pipeline_schedule places on stage 0 and
 *  stage p v - 1. */
void aps_stage_time_rank(const aps_model *m, const aps_cluster *c,
                         const aps_training *t, const aps_strategy *s,
                         const aps_layout *lay, const aps_dp_plan *plan,
                         const aps_layer_cost *lc, int64_t i,
                         aps_stage_time *tm, aps_stage_times *r);

/** The per-step categories inside the stages: m micro-batches of the
 *  slowest stage's compute, recompute, TP, CP, FSDP and offload time. */
void aps_stage_time_perf(const aps_stage_time *slow, int64_t m,
                         aps_estimate *out);

/* ---- schedule.c: the pipeline's per-step terms ---- */

/** PP_BUBBLE and PP_P2P of a pipeline (lay->p > 1) into out.  Bubble: the
 *  slowest rank's idle time in the simulated schedule of the ranks' times
 *  r (aps_pipeline_step) beyond m (tf + tb), tf and tb the slowest
 *  stage's forward and backward per micro-batch; a strategy over the
 *  memory limit (out->mem_peak > out->mem_limit) keeps the closed form
 *  (p - 1)/v (tf + tb) (Narayanan et al. SC'21 s.2.2).  P2P: 2 m v
 *  activation transfers, hidden by training.pp_p2p_overlap, or by
 *  Megatron's --overlap-p2p-communication under the interleaved schedule.
 *  Returns APS_OK, or what the simulation returns. */
aps_status aps_pipeline_perf(const aps_model *m, const aps_cluster *c,
                             const aps_training *t, const aps_strategy *s,
                             const aps_layout *lay, const aps_stage_times *r,
                             double tf, double tb, aps_estimate *out);

/* ---- balance.c: layers and recompute per pipeline rank ---- */

/** The layout's layers per rank balanced when the strategy asks
 *  (balance_stages, p > 1, no stage_partition given): of the layouts the
 *  bottleneck search and a hill-climb visit, the one that fits `limit`
 *  bytes with the shortest step (the simulated pipeline as estimate.c
 *  runs it, plus DP sync and optimizer); then, under auto_recompute with
 *  full recompute, the fewest recomputed layers per rank that fit `limit`
 *  (balance.c's header comment). */
void aps_balance_layout(const aps_model *m, const aps_cluster *c,
                        const aps_training *t, const aps_strategy *s,
                        aps_layout *lay, const aps_dp_plan *plan,
                        const aps_layer_cost *lc, double limit);

/* ---- sync.c: data-parallel and sharding communication, optimizer ---- */

/** FSDP / ZeRO-3 parameter all-gathers and gradient reduce-scatters of
 *  one micro-batch on rank i into st (ag_*, rs_*, fsdp_exposed_*), hidden
 *  behind training.fsdp_overlap of st's compute; first / last: the rank
 *  holds the embedding / the output layer as FSDP units of their own; mc
 *  the layer's MoE costs (the MoE layers' parameters, the routed experts
 *  over their own shard group).  Needs st's comp_fwd, comp_bwd and
 *  recompute; nothing when the plan does not shard weights. */
void aps_fsdp_stage_times(const aps_model *m, const aps_cluster *c,
                          const aps_training *t, const aps_strategy *s,
                          const aps_layout *lay, const aps_dp_plan *plan,
                          const aps_moe_cost *mc, int64_t i, bool first,
                          bool last, aps_stage_time *st);

/** The once-per-step terms of data parallelism and the optimizer on the
 *  rank holding the most parameters (out->stages[0 .. p-1]): DP gradient
 *  sync (all-reduce, or ZeRO-1/2 reduce-scatter + parameter all-gather),
 *  HSDP replicate all-reduce, optimizer step; tf, tb: the slowest stage's
 *  forward and backward per micro-batch, which hide them. */
void aps_sync_perf(const aps_model *m, const aps_cluster *c,
                   const aps_training *t, const aps_strategy *s,
                   const aps_layout *lay, const aps_dp_plan *plan,
                   double tf, double tb, aps_estimate *out);

/* ---- throughput.c: FLOPs per step and what derives from the step ---- */

/** Model and hardware FLOPs per step, tokens/s (total and per GPU), model
 *  TFLOP/s per GPU, MFU and HFU of out->step_time on
 *  out->devices_used devices, recompute as laid out. */
void aps_throughput(const aps_model *m, const aps_cluster *c,
                    const aps_training *t, const aps_strategy *s,
                    const aps_layout *lay, aps_estimate *out);

/* ---- check.c: the memory limit ---- */

/** MEMORY_LIMIT with a message naming the stage, its bytes against the
 *  limit (and which peak, training.memory_limit_kind) and its largest
 *  category when out->mem_limited exceeds out->mem_limit (p pipeline
 *  ranks), or, under a user limit on max reserved or max allocated, when
 *  the device memory in use exceeds the device's capacity less
 *  training.memory_margin_gib (c's device); else APS_REASON_NONE. */
aps_reason aps_check_memory_limit(const aps_cluster *c, const aps_training *t,
                                  aps_estimate *out,
                                  int64_t p);

/* ---- moe.c ---- */

/** Resolved expert degrees: ep (0 -> 1), etp (0 -> tp_degree), and the
 *  expert-data-parallel size world / (etp ep pp). */
int64_t aps_moe_ep(const aps_strategy *s);
int64_t aps_moe_etp(const aps_strategy *s);
int64_t aps_moe_edp(const aps_strategy *s);
/** Ranks each routed expert's weights, gradients and optimizer states
 *  are sharded over: aps_moe_edp, divided by the replicas of an HSDP plan
 *  under a profile with experts_replicated (TorchTitan's efsdp mesh
 *  leaves dp_replicate out) or under Megatron-FSDP, and by the instances
 *  of Megatron's partial distributed optimizer (one instance's
 *  expert-data-parallel ranks; moe.c). */
int64_t aps_moe_expert_shard(const aps_training *t, const aps_strategy *s,
                             const aps_dp_plan *plan);
/** Busiest rank's load over the balanced share: training.moe_load_
 *  imbalance (0: APS_MOE_LOAD_IMBALANCE) capped by the capacity factor. */
double aps_moe_load_factor(const aps_training *t, const aps_strategy *s);
/** Rows the busiest rank's experts run per MoE layer and micro-batch:
 *  the tokens entering the block (b s / cp, / tp under SP) x k x etp x
 *  the load factor (aps_moe_load_factor). */
double aps_moe_expert_rows(const aps_model *m, const aps_training *t,
                           const aps_strategy *s);
/** Forward seconds of the experts' grouped GEMMs on the busiest rank per
 *  MoE layer and micro-batch, down projection (down) or gate and up:
 *  the E / ep local experts, each aps_moe_expert_rows / local rows, over
 *  the expert width (aps_moe_expert_width) and fe / etp. */
double aps_moe_grouped_fwd(const aps_model *m, const aps_device *d,
                           const aps_training *t, const aps_strategy *s,
                           bool down);
/** Expected NVLink domains, other than the sender's, that one token's K
 *  routed experts (of E, spread evenly over `domains` domains) fall in:
 *  DeepEP's RDMA copies per token.  Uniform routing, or DeepSeek-V3's
 *  group-limited routing when its groups are the domains
 *  (moe_router_num_groups = domains: at most moe_router_group_topk of
 *  them; moe.c says how). */
double aps_moe_flex_remote_domains(const aps_model *m, double E, double K,
                                   double domains);
/** MoE layers among pipeline rank i's layers as laid out. */
/** Fill out with what pipeline rank i holds of its MoE layers' parameters
 *  (aps_moe_held; zeros for a dense model), mc the layer's MoE costs. */
void aps_moe_stage_params(const aps_model *m, const aps_layout *lay,
                          const aps_moe_cost *mc, int64_t i,
                          aps_moe_held *out);
/** How much an FSDP unit of one of the rank's MoE layers (of `layers`
 *  decoder layers) adds to the rank's largest dense-layer unit: its
 *  difference (with its local experts when `experts`: Megatron-FSDP's
 *  units hold them, FSDP2's wrap them apart) where it is larger or every
 *  layer is an MoE layer, else 0; *matmul the linear layers' share. */
double aps_moe_unit_growth(const aps_moe_held *h, double layers, bool experts,
                           double *matmul);
int64_t aps_moe_stage_moe_layers(const aps_model *m, const aps_layout *lay,
                                 int64_t i);
/** Megatron's --recompute-modules: known bits; under selective recompute
 *  (ignored otherwise, as Megatron does) Megatron only, mla_up_proj with
 *  MLA, moe_act with grouped GEMM
 *  (INVALID_DEGREE / FRAMEWORK_UNSUPPORTED with a message; check.c). */
/* ------------------------------------------------ offload.c: fine-grained
 * activation offloading (Megatron-Core --offload-modules) */

/** training.activation_offload_fraction, 1 when unset. */
double aps_offload_fraction(const aps_training *t);
/** bytes of one saved tensor of `elements` elements that offload module
 *  bit `module` moves to host: bytes when the module is offloaded and the
 *  tensor has at least Megatron's min_offloaded_tensor_size elements
 *  (1,048,576), else 0. */
double aps_offload_tensor(const aps_training *t, unsigned module,
                          double bytes, double elements);
/** The share of a model chunk's `groups` offload groups (module x layer)
 *  that activation_offload_fraction offloads: all but
 *  int(groups x (1 - fraction)) of them; 1 for fewer than one group. */
double aps_offload_share(const aps_training *t, double groups);
/** Offload modules of bit set mods that act in one layer: all of them on
 *  an MoE layer, the attention ones elsewhere. */
int aps_offload_module_count(unsigned mods, bool moe_layer);
/** The training-only rules of transformer_config.py for the offload
 *  modules (Megatron only, not with activation_offload_layers, attn_proj
 *  with core_attn, fused_group_mlp with the op fuser and alone among the
 *  expert modules, none with the paged stash); APS_EINVAL naming them. */
aps_status aps_offload_dependencies(const aps_training *t, char *err,
                                    size_t n);
/** The model and device rules: a host link; expert modules on an MoE
 *  model; the attention modules on MHA / GQA attention (APS_ENOTIMPL for
 *  MLA and the compressed attentions). */
aps_status aps_offload_inputs(const aps_model *m, const aps_cluster *c,
                              const aps_training *t, char *err, size_t n);
/** Bytes rank i's layers move to host per micro-batch under the offload
 *  modules: its layers not fully recomputed, their attention modules'
 *  (lc->offload_attn, offload_core unless core_attn recompute frees it)
 *  and its MoE layers' (lc->moe.offload_act), times the share the
 *  offload fraction keeps (aps_offload_share over a chunk's groups);
 *  *margin what of it stays on the device all the same (the last group of
 *  each module name: one attention and one MoE layer's). */
double aps_offload_stage_bytes(const aps_model *m, const aps_training *t,
                               const aps_strategy *s, const aps_layout *lay,
                               const aps_layer_cost *lc, int64_t i,
                               double *margin);
/** Expert offload modules beside the moe recompute module: refused as
 *  Megatron-Core asserts. */
aps_reason aps_check_offload(const aps_model *m, const aps_training *t,
                             const aps_strategy *s, char *msg, size_t n);

aps_reason aps_check_recompute_modules(const aps_model *m,
                                      const aps_training *t,
                                      const aps_strategy *s, char *msg,
                                      size_t n);
/** Expert-parallel constraints (EP_DIVISIBILITY, TP_DIVISIBILITY,
 *  INVALID_DEGREE, FRAMEWORK_UNSUPPORTED), message naming the field. */
aps_reason aps_check_moe(const aps_model *m, const aps_training *t,
                         const aps_strategy *s, char *msg, size_t n);
/** Per-layer MoE and MLA differences (zero for a dense model). */
void aps_moe_layer_cost(const aps_model *m, const aps_cluster *c,
                        const aps_training *t, const aps_strategy *s,
                        aps_moe_cost *out);
/** Rank i's sums of the differences. */
void aps_moe_stage(const aps_model *m, const aps_training *t,
                   const aps_strategy *s, const aps_layout *lay,
                   const aps_moe_cost *mc, int64_t i, aps_moe_stage_cost *out);
/** Full recompute of rc layers on rank i: the layer inputs kept
 *  (*kept_inputs: one per layer; uniform: one per group of
 *  recompute_num_layers layers of each model chunk) and the layers of the
 *  largest group rebuilt at once in the backward (*group) (memory.c). */
void aps_recompute_groups(const aps_strategy *s, const aps_layout *lay,
                          int64_t i, double rc, double *kept_inputs,
                          double *group);
/** Adds rank i's MoE / MLA model states (expert states over the expert-
 *  data-parallel group), activations (per_layer_kept: in-flight micro-
 *  batches) and dispatch buffers to st. */
void aps_moe_stage_memory(const aps_model *m, const aps_training *t,
                          const aps_strategy *s, const aps_layout *lay,
                          const aps_dp_plan *plan, const aps_moe_cost *mc,
                          int64_t i, double per_layer_kept,
                          aps_stage_estimate *st);
/** Static rows of one expert rank's receive buffer and expert tensors
 *  under the rank capacity factor cf for `copies` balanced routed token
 *  copies (moe/token_dispatcher.py setup_metadata l.1098-1110 @
 *  d98e8a64): floor(copies x cf) rounded up to APS_TE_GROUPED_ALIGN; 0
 *  when cf is unset. */
double aps_moe_static_rows(double copies, double cf);
/** Bytes of the paged stash's CUDA buffers when `live` layers' routed
 *  tensors are saved at once, each layer's avg_num_tokens `avg`
 *  (moe/paged_stash.py allocate_stash_buffers and PagedStashBuffer):
 *  per stashed tensor floor(live x tokens x factor) tokens, in whole
 *  pages of page_size tokens, times its width and element size. */
double aps_moe_stash_bytes(const aps_model *m, const aps_training *t,
                           const aps_strategy *s, double avg, double live);
/** Latent MoE (model.moe_latent_size) under the training: priced for
 *  Megatron-LM only, and not with moe_shared_expert_overlap, which
 *  Megatron's MoE layer refuses (moe_layer.py @ d98e8a64).  Writes the
 *  reason to msg; APS_REASON_NONE when the model has no latent MoE or
 *  the training suits it (moe.c). */
aps_reason aps_moe_check_latent(const aps_model *m, const aps_training *t,
                                char *msg, size_t n);
/** Forward FLOPs per sequence of one MoE layer's FFN over the dense FFN
 *  (moe.c): routed experts at top-k at their width, the latent
 *  projections, the shared expert in place of the dense FFN; the router
 *  is not counted. */
double aps_moe_ffn_flops_delta(const aps_model *m, double S);
/** The width the routed experts take and give and the dispatcher moves:
 *  moe_latent_size with latent MoE, else hidden_size (moe.c). */
double aps_moe_expert_width(const aps_model *m);
/** Parameters of one MoE block's latent projections, fc1 h x l and fc2
 *  l x h (+ their biases with mlp_bias), whole on every TP rank; 0
 *  without latent MoE (moe.c). */
double aps_moe_latent_params(const aps_model *m);
/** Parameters of one routed expert at the expert width, its biases with
 *  mlp_bias (moe.c). */
double aps_moe_expert_params(const aps_model *m);
/** The router's parameters beside its h x E weight: E score biases
 *  (moe_router_bias), E logit biases (moe_router_linear_bias), h input
 *  and E per-expert scales (moe_router_scales). */
double aps_moe_router_extra_params(const aps_model *m);
/** Model FLOPs of one sequence's forward pass over all layers as Megatron-
 *  Core's num_floating_point_operations counts them minus the dense
 *  count of flops_step (2 S matmul params + 4 S keys a d per layer). */
double aps_moe_flops_delta(const aps_model *m, double S, bool causal);
/** The same for layer i alone (MLA and, on an MoE layer, the experts);
 *  i past the decoder is a multi-token-prediction layer, of the last
 *  decoder layer's type (aps_model_is_moe_layer). */
double aps_moe_flops_layer_delta(const aps_model *m, double S, bool causal,
                                 int64_t i);

#endif
