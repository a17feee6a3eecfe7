/*
 * apsearch/core.h -- the estimator API (pure C11, no Lua).
 *
 * Error style: functions that can fail return aps_status and, when err is
 * non-NULL, write a one-line message naming the field and the value into
 * err (at most errlen bytes, always NUL-terminated).  An infeasible strategy
 * is not an error: aps_estimate_run() returns APS_OK with feasible = false
 * and a reason code plus a message carrying the numbers.
 *
 * The formulas are those of shared/design/MODELING.md; each function cites
 * the paper equation or framework file it implements.
 */
#ifndef APSEARCH_CORE_H
#define APSEARCH_CORE_H

#include <stddef.h>
#include "apsearch/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ names/codes */

/** Stable reason code, e.g. "TP_DIVISIBILITY"; "UNKNOWN" if out of range. */
const char *aps_reason_code(aps_reason r);
/** memory_breakdown key, e.g. "optimizer_states"; NULL if out of range. */
const char *aps_mem_category_name(aps_mem_category c);
/** performance_breakdown key, e.g. "fsdp_allgather"; NULL if out of range. */
const char *aps_perf_category_name(aps_perf_category c);
/** Short status name, e.g. "EINVAL". */
const char *aps_status_name(aps_status s);
/** Precision name as policies spell it, e.g. "mxfp8"; "UNKNOWN" if out of
 *  range. */
const char *aps_precision_name(aps_precision p);
/** Framework name as policies spell it, e.g. "fsdp2"; "UNKNOWN" if out of
 *  range. */
const char *aps_framework_name(aps_framework f);
/** pp_schedule value as policies spell it, e.g. "dualpipev"; "UNKNOWN" if
 *  out of range. */
const char *aps_pp_schedule_name(aps_pp_schedule s);
/** cp_comm_type value as policies spell it ("p2p", "all_gather", "a2a");
 *  "UNKNOWN" if out of range. */
const char *aps_cp_comm_name(aps_cp_comm c);
/** pipeline_split value as policies spell it ("even", "embedding_loss",
 *  "deepspeed_type", "fill_last"; the rules are in pipeline.c
 *  split_rule); "UNKNOWN" if out of range. */
const char *aps_pipeline_split_name(aps_pipeline_split s);
/** Megatron's name of recompute module bit b (0 <= b < APS_RCM_COUNT:
 *  "core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe",
 *  "shared_experts", as --recompute-modules spells them); NULL beyond. */
const char *aps_recompute_module_name(int b);
/** Megatron's name of offload module bit b (0 <= b < APS_OFM_COUNT:
 *  "expert_fc1", "moe_act", "fused_group_mlp", "core_attn", "attn_proj",
 *  as --offload-modules spells them); NULL beyond. */
const char *aps_offload_module_name(int b);

/* ------------------------------------------------------------------ model */

/** Llama-style defaults (rmsnorm, swiglu, rope, no biases, 2 norms/layer);
 *  every size 0 so validation names what the caller forgot. */
void aps_model_defaults(aps_model *m);

/** Checks every size > 0, a divisible by k, head_dim set (or h % a == 0,
 *  then head_dim := h / a is filled in), learned positions with a length.
 *  Sizes above 2^31 are refused as absurd.  Errors: APS_EINVAL. */
aps_status aps_model_validate(aps_model *m, char *err, size_t errlen);

/** Parameter counts of the whole model (no TP/PP), with vocab V as given.
 *  Source: Llama / GPT architecture (MODELING.md s.2); matches the
 *  published counts of shared/models exactly, and the total and active
 *  counts of shared/models/moe/param_counts.csv (Mixtral, Qwen-MoE,
 *  DeepSeek-V2/V3 with MLA). */
typedef struct {
    double embedding;      /**< V*h (+ positions if learned) */
    double per_layer;      /**< one transformer layer */
    double layers;         /**< L * per_layer */
    double final_norm;
    double output_layer;   /**< V*h, 0 when tied */
    double total;
    /* mixture of experts (dense model: active = total, the rest 0) */
    double active;         /**< weights one token uses: embedding, output
                                layer, attention, norms, router, shared
                                experts and top-k routed experts */
    double moe_layers;     /**< number of layers with routed experts;
                                per_layer is then a dense-FFN layer */
    double per_moe_layer;  /**< one MoE layer, all experts */
    double per_moe_layer_active; /**< one MoE layer, top-k experts */
    double mtp;            /**< multi-token-prediction modules, not in
                                total (DeepSeek-V3: 13,463,426,304) */
    double mtp_active;     /**< their weights one token uses, without the
                                embedding and output copies */
    /* hybrid Mamba-2 models (hybrid.c): per_layer is then the pattern's
     * mean layer; each kind with its pre-norm (transformer: all 0) */
    double mamba_layers, attention_layers, mlp_layers; /**< layers by kind */
    double per_mamba_layer;     /**< one Mamba-2 layer */
    double per_attention_layer; /**< one attention layer */
    double per_mlp_layer;       /**< one MLP layer */
} aps_param_counts;

void aps_model_param_counts(const aps_model *m, aps_param_counts *out);

/** Whether layer i (0-based) of a validated model has routed experts. */
bool aps_model_is_moe_layer(const aps_model *m, int64_t i);
/** How many layers i in [lo, hi) (0-based; i >= num_layers are the
 *  multi-token-prediction layers, each of the last decoder layer's type)
 *  of a validated model m have routed experts: the count of
 *  aps_model_is_moe_layer over the range, in closed form from
 *  moe_first_dense_layers, moe_layer_freq / moe_layer_phase and
 *  moe_dense_layers (a hybrid model's pattern is walked: it has at most
 *  APS_MAX_HYBRID_LAYERS), so a 65,536-layer model costs no more than a
 *  short one.  0 when hi <= lo or the model has no experts. */
int64_t aps_model_moe_layers_in(const aps_model *m, int64_t lo, int64_t hi);
/** What whole-layer CUDA graphs capture of a dropless MoE model m:
 *  Megatron-Core cannot graph its experts (their shapes change each step;
 *  its "moe" module needs drop-padding, transformer_config.py @ d98e8a64
 *  l.2837-2840), so the modules it can -- attention, the router with its
 *  preprocess, a hybrid model's Mamba-2 mixers, the dense MLP layers of a
 *  model whose moe_layer_freq has them -- which the estimate prices and
 *  the Megatron launch file writes (src/core/layerprog.c). */
aps_cuda_graph_scope aps_cuda_graph_dropless_modules(const aps_model *m);
/** What training t's CUDA graphs capture under strategy s: none when they
 *  are off; the whole iteration under full recompute or CPU offloading,
 *  which take no other scope (Megatron-LM transformer_config.py @
 *  d98e8a64, l.2800 and l.2854-2857; the launchers write so). */
aps_cuda_graph_scope aps_cuda_graph_effective_scope(const aps_training *t,
                                                    const aps_strategy *s);
/** What the CUDA graphs of estimate e (of s under t) capture: as
 *  aps_cuda_graph_effective_scope of the strategy the estimate priced --
 *  full recompute under auto_recompute that recomputes no layer on any
 *  stage (e->stages[i].recompute_layers all 0) runs, and is priced, as no
 *  recompute (estimate.c run_strategy), so it takes the training's own
 *  scope, not the whole iteration. */
aps_cuda_graph_scope aps_estimate_graph_scope(const aps_training *t,
                                              const aps_strategy *s,
                                              const aps_estimate *e);

/** A model with routed experts or multi-head latent attention (issue 13),
 *  whose MoE and MLA terms moe.c adds to the dense estimate. */
bool aps_model_is_moe(const aps_model *m);

/** Matrix parameters of one layer (Q, K, V, O, MLP), the ones that cost
 *  2 FLOPs per token in a forward pass (Kaplan et al. 2020, C_fwd = 2N). */
double aps_layer_matmul_params(const aps_model *m);

/* ---------------------------------------------------------------- cluster */

/** Seconds of one GEMM of M x K by K x N on device d in precision p (M:
 *  rows, e.g. tokens; N: output features; K: depth; each > 0, else 0 s):
 *  gemm_fixed_seconds + 2 M N K / (peak(p) x eta_max(p) x shape factor),
 *  the shape factor being tile and wave quantization over the device's
 *  gemm_tile_m x gemm_tile_n tiles and sm_count SMs and the pipeline's
 *  K / (K + gemm_half_dim) (src/core/gemm.c, which cites its sources).
 *  The time every GEMM of the estimate is priced at. */
double aps_gemm_time(const aps_device *d, aps_precision p, double M,
                     double N, double K);

/** Seconds of an attention core of `flops` forward FLOPs (QK^T and PV:
 *  2 x batch x queries x keys per query x heads x (dh + dv), keys per
 *  query S / 2 under a causal mask) on device d: at the bf16 peak times
 *  attention_efficiency for fused (flash) kernels, else
 *  unfused_attention_efficiency; the backward at 2.5x the forward's time
 *  for fused kernels (FlashAttention-2's five matmuls to the forward's
 *  two) and 2x for unfused batched GEMMs (src/core/compute.c; the ratios
 *  are internal.h APS_FLASH_BWD_RATIO and APS_GEMM_BWD_RATIO). */
double aps_attention_core_time(const aps_device *d, bool flash,
                               bool backward, double flops);

/** Number of built-in device presets, and their names (NULL past the end). */
size_t aps_device_preset_count(void);
const char *aps_device_preset_name(size_t i);
/** Source text of preset i (datasheet citation). */
const char *aps_device_preset_source(size_t i);
/** Copies the preset called name (case-insensitive) into out.
 *  Errors: APS_EINVAL if no preset has that name. */
aps_status aps_device_preset(const char *name, aps_device *out);

/** Checks capacity, peaks, bandwidths > 0, latencies >= 0, efficiencies in
 *  (0, 1], N and G >= 1, N a whole number of hosts when above one host,
 *  nvlink_domain_size 0 or a multiple of G in [G, 1024] (NVLink Switch
 *  System: up to 576 GPUs per domain, GB200 NVL72 datasheet).  A job may
 *  use part of a domain.  Errors: APS_EINVAL naming the field. */
aps_status aps_cluster_validate(const aps_cluster *c, char *err, size_t errlen);

/* --------------------------------------------------------------- training */

/** bf16, adam, megatron, flash on, dropout off, and the documented defaults
 *  of every overlap and overhead parameter (see training.c). */
void aps_training_defaults(aps_training *t);
aps_status aps_training_validate(const aps_training *t, char *err,
                                 size_t errlen);

/** Checks that span inputs, after each passed its own validation: a memory
 *  limit above the device capacity, fp8 on a device without fp8
 *  (APS_ENOTIMPL), a mixture-of-experts or MLA model (APS_ENOTIMPL, issue
 *  13), a sequence longer than learned positions.  Errors name
 *  the field. */
aps_status aps_inputs_validate(const aps_model *m, const aps_cluster *c,
                               const aps_training *t, char *err, size_t n);

/** The recipe settings as the framework runs them: each training option
 *  left to the framework's default resolved, and the bytes per parameter
 *  they give (recipe.c; docs/modeling.md "Recipe settings"). */
typedef struct {
    bool grad_reduce_in_fp32;     /**< main grads kept / reduced in fp32 */
    bool fp8_param_gather;        /**< weights held and gathered quantized */
    bool compile_loss;            /**< the loss compiled (fused kernels) */
    bool dropout;                 /**< any dropout (either below) */
    bool attention_dropout;       /**< attention-probability dropout */
    bool hidden_dropout;          /**< dropout of the layers' outputs and
                                       the embedding */
    bool expandable_segments;     /**< PyTorch expandable segments */
    double fragmentation;         /**< reserved / allocated - 1 */
    double grad_bytes;            /**< per parameter, on the device */
    double grad_reduce_bytes;     /**< per gradient element on the wire */
    double logits_bytes;          /**< per logit at the loss's peak */
} aps_recipe;

/** Resolves the recipe settings of a validated training config. */
void aps_recipe_resolve(const aps_training *t, aps_recipe *out);

/* --------------------------------------------------------------- strategy */

/** All degrees 1, b = 1, m derived, SP on, zero_stage 0, no recompute,
 *  reshard_after_forward on, recompute_num_layers all -1. */
void aps_strategy_defaults(aps_strategy *s);

/**
 * The cheap constraint checks of MODELING.md s.5, each on its own so a rule
 * file can call one.  Each returns APS_REASON_NONE or its reason code, with
 * a message carrying the numbers in msg.
 */
aps_reason aps_check_degrees(const aps_strategy *s, char *msg, size_t n);
aps_reason aps_check_tp(const aps_model *m, const aps_training *t,
                        const aps_strategy *s, char *msg, size_t n);
/** seq_length divisible by 2 * cp_degree (the load-balanced causal split);
 *  with cp_comm_type a2a, the query heads and the query groups of a TP
 *  rank divisible by cp_degree (TransformerEngine's a2a assertion). */
aps_reason aps_check_cp(const aps_model *m, const aps_training *t,
                        const aps_strategy *s, char *msg, size_t n);
/** Stage partition (aps_stage_layers), vpp_degree > 1 only with
 *  pp_degree > 1, and the interleaved schedule's micro_batch_num
 *  divisible by pp_degree (megatron/core/pipeline_parallel/schedules.py). */
aps_reason aps_check_pp(const aps_model *m, const aps_training *t,
                        const aps_strategy *s, char *msg, size_t n);
aps_reason aps_check_batch(const aps_training *t, const aps_strategy *s,
                           char *msg, size_t n);
/** False, with the numbers in msg, when the pipeline schedule of s (pp_degree
 *  > 1) would simulate more than APS_MAX_SCHEDULE_CELLS micro-batch x model
 *  chunk cells: a size limit on the input, checked before the estimate
 *  allocates them (the simulators refuse such a schedule with APS_ERANGE). */
bool aps_check_schedule_size(const aps_training *t, const aps_strategy *s,
                             char *msg, size_t n);
aps_reason aps_check_devices(const aps_cluster *c, const aps_strategy *s,
                             char *msg, size_t n);
aps_reason aps_check_zero(const aps_strategy *s, char *msg, size_t n);
/** What the framework profile can run (FRAMEWORK_UNSUPPORTED), so that a
 *  ranked strategy always has a launch config: megatron has no HSDP, no
 *  ZeRO-2/3 over plain DDP and no uneven model chunks with interleaving;
 *  fsdp2 (TorchTitan) no ZeRO-1/2 and no TP without SP; fsdp (FSDP1,
 *  llm-foundry) no TP, PP or CP, no ZeRO-1/2; deepspeed no HSDP and no CP.
 *  Sources in check.c. */
aps_reason aps_check_framework(const aps_training *t, const aps_strategy *s,
                               char *msg, size_t n);
/** aps_check_framework plus what a framework refuses for the model: with
 * Megatron-LM's --use-torch-fsdp2, tied embeddings (and pipeline and expert
 * parallelism, fp16), validate_args @ d98e8a64; context parallelism with
 * a sliding window over p2p, or with attention sinks (TransformerEngine
 * attn_forward_func_with_cp @ d0067d0d).  aps_check_all's last step. */
aps_reason aps_check_framework_model(const aps_model *m, const aps_training *t,
                                     const aps_strategy *s, char *msg, size_t n);
/** All of the above; the first failure wins, in this order: degrees, zero,
 *  tp, cp, batch, pp, devices, framework (the model-shape reasons before
 *  the device count, so a tp_degree that cannot divide the heads says so
 *  rather than that devices are left idle; what the strategy is before
 *  whether an engine can run it). */
aps_reason aps_check_all(const aps_model *m, const aps_cluster *c,
                         const aps_training *t, const aps_strategy *s,
                         char *msg, size_t n);

/* ---------------------------------------------------------- pipeline */

/** Entries of stage_partition given: 0 (none), pp_degree (per rank) or
 *  pp_degree x vpp_degree (per model chunk, when any entry past the
 *  first pp_degree is set). */
int64_t aps_partition_entries(const aps_strategy *s);

/** True when aps_chunk_layers splits by the pipeline_split rule: pp_degree
 *  > 1, a split other than even, and no stage_partition, layer_offset or
 *  balancing (balance_stages), which take precedence over the rule. */
bool aps_split_by_rule(const aps_strategy *s);

/** Layers per model chunk, p v entries in model order (chunk j on
 *  pipeline rank j mod p; under pp_schedule zbv_zero_bubble and dualpipev
 *  on the V, rank j for j < p, 2p - 1 - j after), from stage_partition
 *  (per chunk, or per rank split equally over its chunks), the
 *  pipeline_split rule (pipeline.c: embedding_loss, deepspeed_type,
 *  fill_last, with their sources), or the even split plus layer_offset.
 *  Returns APS_REASON_NONE or PP_DIVISIBILITY / PP_PARTITION /
 *  VPP_INVALID with a message. */
aps_reason aps_chunk_layers(const aps_model *m, const aps_strategy *s,
                            int64_t *chunks, char *msg, size_t n);

/** aps_chunk_layers, and PP_PARTITION when a model with cross-layer top-k
 *  sharing (model.index_topk_freq > 1) has a chunk that starts on a layer
 *  reusing another's top-k where the framework refuses it: Megatron-Core
 *  (and t NULL); not NeMo AutoModel, which passes the top-k across stages
 *  (src/core/dsa.c aps_dsa_split_free).  balance_stages' split is checked
 *  after balancing instead. */
aps_reason aps_chunk_layers_dsa(const aps_model *m, const aps_training *t,
                                const aps_strategy *s, int64_t *chunks,
                                char *msg, size_t n);

/** Layers per pipeline rank into layers[0..p-1]: the sums of its model
 *  chunks (aps_chunk_layers_dsa for Megatron-Core).  Returns as
 *  aps_chunk_layers_dsa. */
aps_reason aps_stage_layers(const aps_model *m, const aps_strategy *s,
                            int64_t *layers, char *msg, size_t n);

/** aps_stage_layers with the framework's top-k sharing rule
 *  (aps_chunk_layers_dsa). */
aps_reason aps_stage_layers_dsa(const aps_model *m, const aps_training *t,
                                const aps_strategy *s, int64_t *layers,
                                char *msg, size_t n);

/** Activation sets alive on pipeline rank i (0-based) at its peak.
 *  v = 1 (1F1B): min(p - i, m) (Narayanan et al. SC'21 s.2.2.1).
 *  v > 1 (interleaved): Megatron's warm-up count of model chunks,
 *  min(2(p-i-1) + (v-1)p + 1, m v), expressed in units of the rank's whole
 *  layer set (divided by v); for i = 0 this equals p(1 + (p-1)/(p v)),
 *  Korthikanti et al. 2022 s.4.2.3 (megatron/core/pipeline_parallel/
 *  schedules.py, forward_backward_pipelining_with_interleaving). */
double aps_inflight_microbatches(int64_t p, int64_t v, int64_t m, int64_t i);

/* --------------------------------------------------------- schedule */

/** Kind of one op of a pipeline schedule, named as PyTorch pipelining's
 *  _ComputationType prints them (torch/distributed/pipelining/
 *  schedules.py, pytorch 00722e64): F forward; B full backward (input and
 *  weight gradients together); I backward for the input gradient only;
 *  W the weight gradient of an earlier I. */
typedef enum {
    APS_OP_F = 0,
    APS_OP_B,
    APS_OP_I,
    APS_OP_W
} aps_op_kind;

/** One op of a simulated timeline: times in s from the start of the
 *  step's pipeline (the first forward of stage 0). */
typedef struct {
    int32_t kind;    /**< aps_op_kind */
    int32_t mb;      /**< micro-batch, 0-based */
    int32_t stage;   /**< virtual stage j, 0 .. p v - 1 */
    int32_t chunk;   /**< model chunk of the rank, 0 .. v - 1 */
    int32_t overlap; /**< 1: half of a DualPipeV OVERLAP_F_B pair (the F
                          and the B of two micro-batches issued as one
                          action) */
    double start, end;
} aps_schedule_event;

/** What the simulation gives. */
typedef struct {
    double step;        /**< pipeline time: start to the last backward */
    double busy_max;    /**< largest compute time of one rank */
    double bubble;      /**< step - busy_max: idle time of that rank */
    int64_t slowest_rank; /**< the rank of busy_max */
    double inflight[APS_MAX_STAGES]; /**< peak activation sets per rank */
} aps_schedule_out;

/** Where a simulation records its timeline (aps_schedule_in.timeline).
 *  The caller sets keep and events; the simulation fills the rest.  Per
 *  rank it keeps the first `keep` ops and the last `keep` (a rank runs
 *  its ops one after another, so that is its start and its end in time);
 *  a rank that ran more than 2 keep ops has the middle ones counted, not
 *  stored.  Read it with aps_timeline_kept / aps_timeline_event. */
typedef struct {
    int64_t keep;                /**< ops stored at each end per rank, >= 1 */
    aps_schedule_event *events;  /**< ranks_cap x 2 keep entries */
    int64_t ranks_cap;           /**< ranks the buffer holds (>= p) */
    int64_t p, v, m;             /**< of the simulation recorded */
    int schedule;                /**< aps_pp_schedule simulated */
    bool recorded;               /**< a simulation ran into it */
    int64_t count[APS_MAX_STAGES]; /**< ops rank i ran */
    double busy[APS_MAX_STAGES];   /**< s of compute of rank i */
    aps_schedule_out result;       /**< the simulation's summary */
} aps_timeline;

/** Inputs of a pipeline schedule simulation (schedule.c).  Stage j = i +
 *  k p (0 .. p v - 1, schedule order) is model chunk k of rank i. */
typedef struct {
    int64_t p, v, m;       /**< ranks, model chunks per rank, micro-batches */
    const double *t_fwd;   /**< p v: seconds of one micro-batch's forward
                                of stage j */
    const double *t_bwd;   /**< p v: the same for the backward */
    const double *p2p;     /**< p v - 1: seconds of one transfer between
                                stage j and j + 1 (either way); NULL = 0 */
    const double *weight;  /**< p v: stage j's share of its rank's
                                activation set; NULL = 1/v each */
    int schedule;          /**< aps_pp_schedule (0 = 1F1B) */
    const double *t_wgt;   /**< p v: the weight-gradient part of t_bwd
                                (zero-bubble schedules run it apart as
                                W); NULL = none */
    aps_timeline *timeline; /**< NULL, or where to record every op */
    int64_t g;             /**< interleaved 1F1B (v > 1): micro-batches
                                per group of Megatron's schedule table
                                (microbatch_group_size_per_vp_stage);
                                0 = p, Megatron's default */
} aps_schedule_in;

/** Warm-up chunk forwards of rank i (Megatron schedules.py
 *  get_pp_rank_microbatches, l.958-977 at d98e8a64): v = 1,
 *  min(p - i - 1, m); v > 1, min(2(p - i - 1) + (v - 1) G, m v), G = g
 *  micro-batches per group of the schedule table (0: p). */
int64_t aps_schedule_warmup(int64_t p, int64_t v, int64_t m, int64_t g,
                            int64_t i);

/** Peak activation sets on rank i under (interleaved) 1F1B, groups of g
 *  micro-batches (0: p), chunk k weighing w[k] of the rank's set (NULL:
 *  1/v each, which gives min(warm-up + 1, m v) / v). */
double aps_schedule_inflight(int64_t p, int64_t v, int64_t m, int64_t g,
                             int64_t i, const double *w);

/** The same under any schedule (aps_pp_schedule; g only for 1F1B):
 *  zero-bubble schedules hold a chunk's activations from its forward to
 *  its weight-gradient op W (schedule.c). */
double aps_schedule_inflight_of(int schedule, int64_t p, int64_t v,
                                int64_t m, int64_t g, int64_t i,
                                const double *w);

/** Simulates the schedule: a list scheduler over each rank's op order
 *  (an op starts when its rank is free and its input has arrived), run
 *  as one pass over the ops in a fixed dependency order that is built
 *  once per (schedule, p, v, m, g) and cached per thread; O(p v m) ops.
 *  APS_EINVAL for bad arguments and for orders that deadlock (some
 *  interleaved orders with m not a multiple of p), APS_ERANGE past
 *  APS_MAX_SCHEDULE_CELLS, APS_ENOMEM when out of memory. */
aps_status aps_schedule_simulate(const aps_schedule_in *in,
                                 aps_schedule_out *out);

/** A lower bound on the step aps_schedule_simulate returns for in, in
 *  seconds, in O(p v): the largest over ranks i of fill_i + m busy_i
 *  (+ drain_i under (interleaved) 1F1B), where busy_i is the forward plus
 *  backward of rank i's stages (each rank runs its ops one at a time),
 *  fill_i = sum_{j<i} (t_fwd[j] + p2p[j]) the earliest its first op can
 *  start (micro-batch 0's forward through stages 0 .. i-1, which are the
 *  chunk 0 of ranks 0 .. i-1 in both the loop and the V placement), and
 *  drain_i = sum_{j<i} (t_bwd[j] + p2p[j]) what must follow its last op,
 *  the chunk-0 backward of the last micro-batch (Megatron's order,
 *  schedule.c; zero-bubble orders may end on a W, so no drain there).
 *  With m = 2, v = 1 and a last stage no faster than any other's backward
 *  it is the simulated step: sum_i (t_f + t_b) + t_f,p-1 + t_b,p-1 + 2
 *  sum_j p2p[j] (tests/c/test_schedule.c).  0 for inputs the simulation
 *  refuses. */
double aps_schedule_lower_bound(const aps_schedule_in *in);

/** Ops of rank i stored in tl: min(count, 2 keep); 0 for a rank out of
 *  range or before a simulation recorded (timeline.c). */
int64_t aps_timeline_kept(const aps_timeline *tl, int64_t i);

/** The q-th stored op of rank i in time order (q < aps_timeline_kept);
 *  ops q < keep are the rank's first, the rest its last; NULL out of
 *  range (timeline.c). */
const aps_schedule_event *aps_timeline_event(const aps_timeline *tl,
                                             int64_t i, int64_t q);

/** The time windows whose ops are all stored: [0, *head_end] and
 *  [*tail_start, step].  Returns false (and *head_end = *tail_start =
 *  step) when every op of every rank is stored (or the ops left out take
 *  no time); else *head_end is the
 *  least end of the keep-th op over the ranks with ops left out and
 *  *tail_start the largest start of their (count - keep)-th op, so every
 *  op that overlaps a window is stored (timeline.c). */
bool aps_timeline_windows(const aps_timeline *tl, double step,
                          double *head_end, double *tail_start);

/** Windows [0, *head_end] and [*tail_start, step] of the stored ops that
 *  hold at most max_ops / 2 ops each (an op counts where it overlaps:
 *  start < *head_end, end > *tail_start), within the stored ones
 *  (aps_timeline_windows); the latest head end and the earliest tail start
 *  that do, to a relative 2^-50 of step.  Returns false (both = step) when
 *  every op is stored and there are at most max_ops: one window, the
 *  whole step (timeline.c). */
bool aps_timeline_select(const aps_timeline *tl, double step, int64_t max_ops,
                         double *head_end, double *tail_start);

/** aps_estimate_run that also records the pipeline schedule it simulates
 *  into tl (tl->keep, events and ranks_cap set by the caller; ranks_cap
 *  >= pp_degree, else APS_EINVAL); the recorder is installed for the
 *  calling thread only, so estimates on other threads are unaffected.  tl->recorded is false when nothing
 *  was simulated: pp_degree 1, a strategy refused by a check, or one over
 *  the memory limit (whose bubble takes the closed form) (timeline.c). */
aps_status aps_estimate_timeline(const aps_model *m, const aps_cluster *c,
                                 const aps_training *t,
                                 const aps_strategy *s, aps_timeline *tl,
                                 aps_estimate *out);

/** Pipeline bubble as a fraction of the ideal compute time: (p-1)/(v m)
 *  (Narayanan et al. SC'21, s.2.2.1 and s.2.2.2). */
double aps_bubble_fraction(int64_t p, int64_t v, int64_t m);

/* ----------------------------------------------------------- memory */

/** Activation bytes one layer saves for backward for one micro-batch on
 *  one device, by tensor (derivation in memory.c, Korthikanti et al. 2022
 *  s.4; GQA, SwiGLU and flash-attention terms per MODELING.md s.3.2).
 *  recompute: the granularity applied to this layer. */
double aps_layer_activation_bytes(const aps_model *m, const aps_training *t,
                                  const aps_strategy *s, aps_recompute rc);

/** Bytes per parameter of weights, gradients and optimizer states under the
 *  framework profile and ZeRO stage (MODELING.md s.3.1). */
typedef struct {
    double weight;       /**< per parameter, before sharding */
    double grad;
    double optimizer;    /**< master copy + optimizer moments */
    int shard_weights;   /**< 1 if sharded over the sharding group */
    int shard_grads;
    int shard_optimizer;
    double shard_group;  /**< size of the sharding group */
} aps_state_bytes;

void aps_model_state_bytes(const aps_training *t, const aps_strategy *s,
                           aps_state_bytes *out);

/* ------------------------------------------------------------- comm */

/** Ring all-reduce of bytes (the full tensor) over n ranks:
 *  2(n-1)/n * bytes/bw + 2(n-1)*alpha (Thakur et al. 2005; NCCL
 *  PERFORMANCE.md bus bandwidth).  0 for n <= 1. */
double aps_allreduce_time(int64_t n, double bytes, double bw, double alpha);
/** Ring all-gather / reduce-scatter: (n-1)/n * bytes/bw + (n-1)*alpha. */
double aps_allgather_time(int64_t n, double bytes, double bw, double alpha);
double aps_reducescatter_time(int64_t n, double bytes, double bw,
                              double alpha);
/** All-to-all over n ranks, each sending `bytes` in total split evenly
 *  over the n ranks (its own share stays): (n-1)/n * bytes/bw + (n-1) *
 *  alpha, pairwise exchange (Thakur et al. 2005 s.4.6; NCCL's all-to-all
 *  is n - 1 send/recv pairs).  0 for n <= 1. */
double aps_alltoall_time(int64_t n, double bytes, double bw, double alpha);

/** Effective bandwidth and per-step latency of a process group of `size`
 *  ranks whose members are `stride` ranks apart in the tp-cp-fsdp-dp-pp
 *  order.  The NVLink domain D is max(devices_per_node,
 *  nvlink_domain_size), capped by num_devices: one host, or a GB200/GB300
 *  NVL72 rack of 4-GPU trays (NVIDIA GB200 NVL72 datasheet, 2024).  A
 *  group whose span stride*size divides D sits in one domain: NVLink
 *  (intra_node_bandwidth, intra_node_latency).  Across domains with g
 *  members per domain (g = D/stride when stride divides D, else 1, at
 *  most size): every ring link carries (n-1)/n of the tensor and NCCL
 *  drives one ring per NIC, one NIC per GPU, so bw = min(B_nvlink,
 *  g * B_nic); with g = 1 this is the per-GPU NIC.  (MODELING.md s.4 says
 *  "inter-node bandwidth per GPU" for every cross-node group; that holds
 *  for g = 1 but undercounts a group filling whole nodes g-fold:
 *  NVIDIA/nccl issues 412 and 687 on rail-aligned rings.)  Bandwidths
 *  include collective_efficiency, in bytes/s; alpha in s.
 *  Returns 1 if the group is inside one NVLink domain, 0 otherwise. */
int aps_group_link(const aps_cluster *c, int64_t stride, int64_t size,
                   double *bw, double *alpha);

/** Link of point-to-point sends inside a group (PP send/recv, the CP
 *  ring's K/V passing): NVLink if the group sits in one NVLink domain (D
 *  as in aps_group_link: a host, or nvlink_domain_size GPUs of an NVL72
 *  rack), else one NIC per GPU, since a send between domains leaves
 *  through the sender's NIC and a ring of sends moves at its slowest hop
 *  (unlike NCCL collectives, aps_group_link, whose channels spread over
 *  all of a domain's NICs).  Bandwidth in bytes/s with
 *  collective_efficiency, alpha in s.  Returns 1 if inside one domain. */
int aps_p2p_link(const aps_cluster *c, int64_t stride, int64_t size,
                 double *bw, double *alpha);

/** Link between ranks a and b (0-based) of a pipeline group whose ranks
 *  are `stride` apart: NVLink when both sit in one NVLink domain (ranks
 *  fill domains one after the other), else one NIC.  Returns 1 if
 *  inside one domain. */
int aps_p2p_pair_link(const aps_cluster *c, int64_t stride, int64_t a,
                      int64_t b, double *bw, double *alpha);

/** Members of a group of ranks `stride` apart in one NVLink domain (a
 *  host, or nvlink_domain_size GPUs of an NVL72 rack): the group's size
 *  when it sits inside one domain, else G / stride (1 when stride does
 *  not divide the domain size G). */
int64_t aps_group_domain_members(const aps_cluster *c, int64_t stride,
                                 int64_t size);

/** All-to-all on a group of `size` ranks `stride` apart whose members
 *  send `intra` bytes each to members in their own NVLink domain and
 *  `inter` bytes to members in other domains.  Inside one domain: NVLink,
 *  aps_alltoall_time on intra + inter.  Across domains every rank's
 *  remote share leaves through its own NIC -- unlike a ring collective
 *  there is no rail to share it with, each GPU's data is its own -- while
 *  its local share moves on NVLink at the same time: max(inter / NIC,
 *  intra / NVLink) + (size - 1) inter-node latencies (DeepEP's measured
 *  internode dispatch runs at about one NIC per GPU, 40-58 GB/s on 50 GB/s
 *  CX7 NICs: deepseek-ai/DeepEP README, "Normal kernels with NVLink and
 *  RDMA forwarding").  Bandwidths with collective_efficiency; s. */
double aps_group_alltoall_time(const aps_cluster *c, int64_t stride,
                               int64_t size, double intra, double inter);

/** Keys one query attends to in the attention core, averaged over the
 *  layers, for a sequence of S tokens: S without causal skipping, S/2 with
 *  it, and with a sliding window w < S on sliding_window_layers of the
 *  layers (S w - w^2/2) / S on those (Beltagy et al. 2020, Longformer s.3.1;
 *  FlashAttention-2 window_size skips the blocks outside the band); with
 *  chunked attention of C < S tokens on chunked_attention_layers of them
 *  (Llama 4) (q C^2 + r^2) / (2 S) on those, S = q C + r (each query
 *  attends within its own chunk; the flex-attention block mask skips the
 *  blocks outside the chunks).
 *  Attention FLOPs of a layer = 4 x tokens x keys x a x d. */
double aps_attention_keys(const aps_model *m, double S, bool causal);

/* ------------------------------------------------------------ flops */

/** FLOPs of one training step of the whole model (all devices), unpadded
 *  vocabulary: forward 2 x (matmul params) per token per layer, attention
 *  core 4 s^2 a d per sequence per layer (halved when causal), logits
 *  2 s h V per sequence; backward 2 x forward.  with_recompute adds the
 *  recomputed forwards of s->layer_recompute (full: every recomputed layer
 *  per recompute_num_layers; selective: the attention core).  With
 *  causal = false and full recompute of every layer this is Narayanan et
 *  al. SC'21 eq. 3, 96 B s L h^2 (1 + s/(6h) + V/(16 L h)), for GPT shapes.
 *  Inputs must be valid (as for aps_estimate_run). */
double aps_flops_per_step(const aps_model *m, const aps_training *t,
                          const aps_strategy *s, bool causal,
                          bool with_recompute);

/* --------------------------------------------------------- estimate */

/** Evaluates one strategy: checks (aps_check_all), per-stage memory, time
 *  per step, derived throughput.  Inputs must have passed their
 *  aps_*_validate() and aps_inputs_validate().  Returns APS_OK (feasible
 *  or not, see out->feasible), APS_EINVAL for a NULL argument, APS_ERANGE
 *  for a pipeline schedule past APS_MAX_SCHEDULE_CELLS (the policy checks
 *  refuse such strategies first), or APS_ENOMEM when an allocation of the
 *  schedule simulation fails.  Every field of out before
 *  `stages` is overwritten; stages[0 .. num_stages-1] are filled and later
 *  entries are left as they were (num_stages is 0 when a check failed). */
aps_status aps_estimate_run(const aps_model *m, const aps_cluster *c,
                            const aps_training *t, const aps_strategy *s,
                            aps_estimate *out);

#ifdef __cplusplus
}
#endif
#endif /* APSEARCH_CORE_H */
