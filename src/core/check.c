/*
 * check.c -- the cheap constraint checks of MODELING.md s.5, run before any
 * estimate (the requirement's early filtering), and the memory limit, checked
 * on the estimate.  Each check names the field and the numbers in its
 * message.
 */
#include <math.h>
#include <string.h>
#include "internal.h"

/** Bytes per GiB, the unit of the memory-limit message. */
#define APS_GIB (1024.0 * 1024.0 * 1024.0)
/** Decimals of the memory-limit message: at least this many, more (up to
 *  APS_MEM_MSG_MAX_DECIMALS) until the two numbers differ as printed. */
#define APS_MEM_MSG_MIN_DECIMALS 2
#define APS_MEM_MSG_MAX_DECIMALS 6

aps_reason aps_check_degrees(const aps_strategy *s, char *msg, size_t n)
{
    struct { const char *f; int64_t v; } deg[] = {
        {"dp_degree", s->dp_degree},     {"fsdp_degree", s->fsdp_degree},
        {"tp_degree", s->tp_degree},     {"pp_degree", s->pp_degree},
        {"vpp_degree", s->vpp_degree},   {"cp_degree", s->cp_degree},
        {"micro_batch_size", s->micro_batch_size},
    };
    for (size_t i = 0; i < sizeof deg / sizeof deg[0]; i++) {
        if (deg[i].v < 1 || deg[i].v > APS_MAX_DEGREE) {
            aps_fmt(msg, n, "%s = %lld: must be in [1, %lld]", deg[i].f,
                    (long long)deg[i].v, (long long)APS_MAX_DEGREE);
            return APS_REASON_INVALID_DEGREE;
        }
    }
    if (s->pp_degree > APS_MAX_STAGES) {
        aps_fmt(msg, n, "pp_degree = %lld: at most %d pipeline stages",
                (long long)s->pp_degree, APS_MAX_STAGES);
        return APS_REASON_INVALID_DEGREE;
    }
    if (s->micro_batch_num < 0 || s->micro_batch_num > APS_MAX_DEGREE) {
        aps_fmt(msg, n, "micro_batch_num = %lld: must be 0 (derived) or in "
                "[1, %lld]", (long long)s->micro_batch_num,
                (long long)APS_MAX_DEGREE);
        return APS_REASON_INVALID_DEGREE;
    }
    if (s->microbatch_group_size < 0 ||
        s->microbatch_group_size > APS_MAX_DEGREE) {
        aps_fmt(msg, n, "microbatch_group_size = %lld: must be 0 (pp_degree) "
                "or in [1, %lld]", (long long)s->microbatch_group_size,
                (long long)APS_MAX_DEGREE);
        return APS_REASON_INVALID_DEGREE;
    }
    if ((unsigned)s->layer_recompute > APS_RECOMPUTE_FULL ||
        (unsigned)s->cp_comm_type > APS_CP_A2A ||
        (unsigned)s->recompute_method > APS_RECOMPUTE_UNIFORM ||
        (unsigned)s->pipeline_split > APS_SPLIT_FILL_FIRST ||
        (unsigned)s->pp_schedule > APS_PP_DUALPIPEV) {
        aps_fmt(msg, n, "layer_recompute, cp_comm_type, recompute_method, "
                "pipeline_split or pp_schedule out of range");
        return APS_REASON_INVALID_DEGREE;
    }
    bool uniform = s->layer_recompute == APS_RECOMPUTE_FULL &&
                   s->recompute_method == APS_RECOMPUTE_UNIFORM;
    /* auto picks a count of layers per stage (block); uniform recomputes
     * every layer and recompute_num_layers is its group, one for all
     * stages in Megatron: no launch config runs the mix */
    if (uniform && s->auto_recompute) {
        aps_fmt(msg, n, "recompute_num_layers = auto with recompute_method "
                "= uniform: auto chooses per-stage layer counts (block); "
                "give uniform a group size");
        return APS_REASON_INVALID_DEGREE;
    }
    for (int64_t i = 0; i < s->pp_degree; i++) {
        if (s->recompute_num_layers[i] < -1) {
            aps_fmt(msg, n, "recompute_num_layers[%lld] = %lld: must be >= 0 "
                    "(or -1 for all layers)", (long long)i + 1,
                    (long long)s->recompute_num_layers[i]);
            return APS_REASON_INVALID_DEGREE;
        }
        /* transformer_block.py _checkpointed_forward (uniform) steps
         * through the layers by recompute_num_layers: 0 never advances */
        if (uniform && s->recompute_num_layers[i] == 0) {
            aps_fmt(msg, n, "recompute_num_layers[%lld] = 0 with "
                    "recompute_method = uniform: a group needs >= 1 layer",
                    (long long)i + 1);
            return APS_REASON_INVALID_DEGREE;
        }
    }
    return APS_REASON_NONE;
}

/** Whether kind x's KV heads, fewer than the tp ranks that divide them,
 *  leave its fused K and V columns (k (d + v dv)) indivisible by tp:
 *  Megatron-Core's ColumnParallelLinear splits the fused QKV output evenly
 *  (divide(output_size, world_size), tensor_parallel/layers.py @
 *  d98e8a64); the query columns are a d with tp | a. */
static bool kv_columns_indivisible(const aps_attn_kind *x, int64_t tp)
{
    double cols = x->k * (x->d + x->v * x->dv);
    return fmod(cols, (double)tp) != 0.0;
}

/** Query groups v of field f against tp_degree tp, into msg: none when
 *  tp divides them, or when the framework replicates fewer groups over
 *  ranks that are a multiple of them (aps_kv_core_groups; not MLA); else
 *  TP_DIVISIBILITY, naming the framework's rule. */
static aps_reason check_tp_groups(const aps_model *m, const aps_training *t,
                                  const char *f, int64_t v, int64_t tp,
                                  char *msg, size_t n)
{
    if (v % tp == 0)
        return APS_REASON_NONE;
    /* MLA builds no query groups: Megatron's script writes none (its
     * num_query_groups is then the heads), and the replication above is
     * SelfAttention's */
    bool rep = aps_profile(t)->kv_head_replication && m->kv_lora_rank <= 0;
    if (rep && v > 0 && tp % v == 0)
        return APS_REASON_NONE;
    if (rep)
        aps_fmt(msg, n, "%s = %lld is neither a multiple nor a divisor of "
                "tp_degree = %lld (Megatron-Core's TransformerConfig)", f,
                (long long)v, (long long)tp);
    else
        aps_fmt(msg, n, "%s = %lld is not divisible by tp_degree = %lld%s",
                f, (long long)v, (long long)tp,
                v < tp ? " (this framework shards whole KV heads over the TP "
                         "ranks; framework megatron replicates fewer heads, "
                         "as Megatron-Core does)"
                       : "");
    return APS_REASON_TP_DIVISIBILITY;
}

/** Fused K and V columns of every kind whose KV heads are replicated
 *  (kv_columns_indivisible). */
static aps_reason check_tp_kv_columns(const aps_model *m, int64_t tp,
                                      char *msg, size_t n)
{
    aps_attn_kind x[APS_ATTN_KINDS];
    int nk = aps_attn_kinds(m, x);
    for (int i = 0; i < nk; i++) {
        if (x[i].k >= (double)tp || x[i].layers <= 0 ||
            !kv_columns_indivisible(&x[i], tp))
            continue;
        aps_fmt(msg, n, "the QKV projection's %.0f key and value columns "
                "(%.0f KV head%s) are not divisible by tp_degree = %lld "
                "(ColumnParallelLinear splits them evenly)",
                x[i].k * (x[i].d + x[i].v * x[i].dv), x[i].k,
                x[i].k == 1.0 ? "" : "s", (long long)tp);
        return APS_REASON_TP_DIVISIBILITY;
    }
    return APS_REASON_NONE;
}

aps_reason aps_check_tp(const aps_model *m, const aps_training *t,
                        const aps_strategy *s, char *msg, size_t n)
{
    aps_reason r0 = aps_check_degrees(s, msg, n);
    if (r0 != APS_REASON_NONE)
        return r0; /* keeps this check safe to call on its own */
    int64_t tp = s->tp_degree;
    struct { const char *f; int64_t v; } div[] = {
        /* MambaMixer @ d98e8a64 asserts nheads % tp == 0 and
         * ngroups % tp == 0 (0 for a transformer: divisible); first, so
         * that a pure Mamba-2 model, whose attention fields are its
         * mixer's (hf.lua builders.mamba2), is told of its mixer */
        {"mamba_num_heads", m->mamba_num_heads},
        {"mamba_num_groups", m->mamba_num_groups},
        {"num_attention_heads", m->num_attention_heads},
        {"num_query_groups", m->num_query_groups},
        {"global_num_attention_heads", m->global_num_attention_heads},
        {"global_num_query_groups", m->global_num_query_groups},
        {"hidden_size", m->hidden_size},
        {"ffn_hidden_size", m->ffn_hidden_size},
        /* Megatron TransformerConfig.__post_init__ @ d98e8a64 (gated delta
         * net): linear_num_key_heads and linear_num_value_heads % (tp x
         * cp) == 0 (CP > 1 is refused for them, aps_gdn_refusal) */
        {"linear_num_key_heads", m->linear_num_key_heads},
        {"linear_num_value_heads", m->linear_num_value_heads},
    };
    for (size_t i = 0; i < sizeof div / sizeof div[0]; i++) {
        if (strstr(div[i].f, "query_groups") != NULL) {
            aps_reason r = check_tp_groups(m, t, div[i].f, div[i].v, tp, msg,
                                           n);
            if (r != APS_REASON_NONE)
                return r;
        } else if (div[i].v % tp != 0) {
            aps_fmt(msg, n, "%s = %lld is not divisible by tp_degree = %lld",
                    div[i].f, (long long)div[i].v, (long long)tp);
            return APS_REASON_TP_DIVISIBILITY;
        }
    }
    r0 = check_tp_kv_columns(m, tp, msg, n);
    if (r0 != APS_REASON_NONE)
        return r0;
    /* every heterogeneous layer's MLP is column parallel (nas.c) */
    int64_t w = aps_nas_width_not_divisible(m, tp);
    if (w != 0) {
        aps_fmt(msg, n, "nas_ffn_widths: %lld is not divisible by tp_degree = "
                "%lld", (long long)w, (long long)tp);
        return APS_REASON_TP_DIVISIBILITY;
    }
    if (tp > 1 && s->sequence_parallel) {
        int64_t local = t->seq_length / s->cp_degree;
        if (local % tp != 0) {
            aps_fmt(msg, n, "seq_length / cp_degree = %lld is not divisible by "
                    "tp_degree = %lld (sequence_parallel)",
                    (long long)local, (long long)tp);
            return APS_REASON_TP_DIVISIBILITY;
        }
    }
    return APS_REASON_NONE;
}

/** a2a scatters each TP rank's heads over the CP group: AttnFuncWithCPAnd
 *  QKVOA2A asserts "cp_comm_type='a2a' requires num_heads % cp_size == 0
 *  for Q, K, V" on the heads of a TP rank (transformer_engine/pytorch/
 *  attention/dot_product_attention/context_parallel.py:4246-4249 @
 *  d0067d0d; DotProductAttention passes a / t query heads and k / t query
 *  groups, dot_product_attention.py:739, 1712-1713).  A TP degree that
 *  does not divide the heads is aps_check_tp's. */
static aps_reason check_cp_a2a_heads(const aps_model *m, const aps_strategy *s,
                                     char *msg, size_t n)
{
    int64_t t = s->tp_degree, c = s->cp_degree;
    struct { const char *f; int64_t v; } heads[] = {
        {"num_attention_heads", m->num_attention_heads},
        {"num_query_groups", m->num_query_groups},
        {"global_num_attention_heads", m->global_num_attention_heads},
        {"global_num_query_groups", m->global_num_query_groups},
    };
    for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++) {
        int64_t v = heads[i].v;
        /* replicated KV heads: one per rank (aps_kv_core_groups) */
        if (v > 0 && v < t && strstr(heads[i].f, "query_groups") != NULL)
            v = t;
        if (v % t != 0 || (v / t) % c == 0)
            continue;
        if (v != heads[i].v)
            aps_fmt(msg, n, "cp_comm_type = a2a: %s = %lld < tp_degree = "
                    "%lld leaves one replicated KV head per TP rank, not "
                    "divisible by cp_degree = %lld (TransformerEngine "
                    "asserts \"cp_comm_type='a2a' requires num_heads %% "
                    "cp_size == 0 for Q, K, V\", context_parallel.py)",
                    heads[i].f, (long long)heads[i].v, (long long)t,
                    (long long)c);
        else
            aps_fmt(msg, n, "cp_comm_type = a2a: %s / tp_degree = %lld / %lld "
                    "= %lld is not divisible by cp_degree = %lld "
                    "(TransformerEngine asserts \"cp_comm_type='a2a' "
                    "requires num_heads %% cp_size == 0 for Q, K, V\", "
                    "context_parallel.py)", heads[i].f, (long long)v,
                    (long long)t, (long long)(v / t), (long long)c);
        return APS_REASON_CP_DIVISIBILITY;
    }
    return APS_REASON_NONE;
}

aps_reason aps_check_cp(const aps_model *m, const aps_training *t,
                        const aps_strategy *s, char *msg, size_t n)
{
    aps_reason r0 = aps_check_degrees(s, msg, n);
    if (r0 != APS_REASON_NONE)
        return r0; /* keeps this check safe to call on its own */
    int64_t c = s->cp_degree;
    /* Load-balanced causal split: 2c chunks, rank i takes i and 2c-1-i
     * (Megatron context_parallel, get_batch_on_this_cp_rank). */
    if (c > 1 && t->seq_length % (2 * c) != 0) {
        aps_fmt(msg, n, "seq_length = %lld is not divisible by 2 * cp_degree "
                "= %lld", (long long)t->seq_length, (long long)(2 * c));
        return APS_REASON_CP_DIVISIBILITY;
    }
    if (c > 1 && s->cp_comm_type == APS_CP_A2A)
        return check_cp_a2a_heads(m, s, msg, n);
    return APS_REASON_NONE;
}

/** Micro-batches of one pipeline schedule (aps_step_passes). */
static int64_t microbatches(const aps_training *t, const aps_strategy *s)
{
    return aps_step_microbatches(t, s) / aps_step_passes(t, s);
}

bool aps_check_schedule_size(const aps_training *t, const aps_strategy *s,
                             char *msg, size_t n)
{
    int64_t p = s->pp_degree, v = s->vpp_degree, m = microbatches(t, s);
    /* out-of-range degrees are aps_check_degrees' to refuse */
    if (p <= 1 || v < 1 || p > APS_MAX_DEGREE || v > APS_MAX_DEGREE || m < 1)
        return true; /* m <= global_batch_size <= 2^30: m p fits */
    if (m * p <= APS_MAX_SCHEDULE_CELLS / v)
        return true;
    aps_fmt(msg, n, "micro_batch_num = %lld x pp_degree = %lld x vpp_degree "
            "= %lld = %.0f schedule cells, over the simulation's limit of "
            "%lld (use fewer micro-batches or stages)", (long long)m,
            (long long)p, (long long)v, (double)m * (double)p * (double)v,
            (long long)APS_MAX_SCHEDULE_CELLS);
    return false;
}

aps_reason aps_check_batch(const aps_training *t, const aps_strategy *s,
                           char *msg, size_t n)
{
    aps_reason r0 = aps_check_degrees(s, msg, n);
    if (r0 != APS_REASON_NONE)
        return r0; /* keeps this check safe to call on its own */
    int64_t D = s->dp_degree * s->fsdp_degree;
    int64_t per = s->micro_batch_size * D;
    if (t->global_batch_size % per != 0) {
        aps_fmt(msg, n, "global_batch_size = %lld is not divisible by "
                "micro_batch_size * data-parallel size = %lld * %lld = %lld",
                (long long)t->global_batch_size, (long long)s->micro_batch_size,
                (long long)D, (long long)per);
        return APS_REASON_BATCH_DIVISIBILITY;
    }
    int64_t m = t->global_batch_size / per;
    if (s->micro_batch_num > 0 && s->micro_batch_num != m) {
        aps_fmt(msg, n, "micro_batch_num = %lld but global_batch_size / "
                "(micro_batch_size * data-parallel size) = %lld / %lld = %lld",
                (long long)s->micro_batch_num, (long long)t->global_batch_size,
                (long long)per, (long long)m);
        return APS_REASON_BATCH_DIVISIBILITY;
    }
    return APS_REASON_NONE;
}

aps_reason aps_check_devices(const aps_cluster *c, const aps_strategy *s,
                             char *msg, size_t n)
{
    aps_reason r0 = aps_check_degrees(s, msg, n);
    if (r0 != APS_REASON_NONE)
        return r0; /* keeps this check safe to call on its own */
    /* Each factor is <= 2^24, so the product of five fits in a double
     * exactly enough to compare; compute in double to avoid overflow. */
    double used = (double)s->dp_degree * (double)s->fsdp_degree *
                  (double)s->tp_degree * (double)s->pp_degree *
                  (double)s->cp_degree;
    if (used > (double)c->num_devices) {
        aps_fmt(msg, n, "dp %lld x fsdp %lld x tp %lld x pp %lld x cp %lld = "
                "%.0f devices > num_devices = %lld",
                (long long)s->dp_degree, (long long)s->fsdp_degree,
                (long long)s->tp_degree, (long long)s->pp_degree,
                (long long)s->cp_degree, used, (long long)c->num_devices);
        return APS_REASON_DEVICE_COUNT;
    }
    if (used < (double)c->num_devices && !s->allow_idle_devices) {
        aps_fmt(msg, n, "dp %lld x fsdp %lld x tp %lld x pp %lld x cp %lld = "
                "%.0f devices leaves %.0f of num_devices = %lld idle "
                "(allow_idle_devices is off)",
                (long long)s->dp_degree, (long long)s->fsdp_degree,
                (long long)s->tp_degree, (long long)s->pp_degree,
                (long long)s->cp_degree, used,
                (double)c->num_devices - used, (long long)c->num_devices);
        return APS_REASON_IDLE_DEVICES;
    }
    if (s->hsdp && (s->fsdp_degree < 2 || s->dp_degree < 2)) {
        aps_fmt(msg, n, "HSDP needs hsdp_shard_degree > 1 and "
                "hsdp_replicate_degree > 1 (got shard %lld, replicate %lld)",
                (long long)s->fsdp_degree, (long long)s->dp_degree);
        return APS_REASON_HSDP_INVALID;
    }
    return APS_REASON_NONE;
}

aps_reason aps_check_zero(const aps_strategy *s, char *msg, size_t n)
{
    if (s->zero_stage < 0 || s->zero_stage > 3) {
        aps_fmt(msg, n, "zero_stage = %lld: must be 0, 1, 2 or 3",
                (long long)s->zero_stage);
        return APS_REASON_ZERO_STAGE_INVALID;
    }
    /* With S > 1 the sharding is FSDP's (full shard, or shard_grad_op when
     * reshard_after_forward is off); a ZeRO stage on top is meaningless. */
    if (s->fsdp_degree > 1 && s->zero_stage != 0 && s->zero_stage != 3) {
        aps_fmt(msg, n, "zero_stage = %lld with fsdp_degree = %lld: FSDP "
                "shards fully (set zero_stage 0 or 3, or "
                "reshard_after_forward = false for ZeRO-2-like)",
                (long long)s->zero_stage, (long long)s->fsdp_degree);
        return APS_REASON_ZERO_STAGE_INVALID;
    }
    return APS_REASON_NONE;
}

/** Megatron's interleaved 1F1B (pp_schedule 1f1b with vpp_degree > 1,
 *  the order schedule.c simulates) on m micro-batches in groups of G =
 *  microbatch_group_size (0: pp_degree): forward_backward_pipelining_
 *  with_interleaving (megatron/core/pipeline_parallel/schedules.py at
 *  d98e8a64) raises ValueError unless p <= G <= m (l.1160-1168) and
 *  RuntimeError when the last group, m mod G, is non-empty but smaller
 *  than p (l.1170-1180: "dependency bubbles").  With G = p both reduce
 *  to m a multiple of p. */
static aps_reason check_interleaved_groups(const aps_strategy *s, int64_t m,
                                           char *msg, size_t n)
{
    int64_t p = s->pp_degree;
    int64_t G = aps_schedule_group(p, s->microbatch_group_size);
    if (G == p && m % p != 0) { /* both rules, at the default group size */
        aps_fmt(msg, n, "interleaved schedule (vpp_degree = %lld) needs "
                "micro_batch_num = %lld divisible by pp_degree = %lld "
                "(microbatch_group_size = pp_degree: Megatron schedules.py:"
                "1160-1180)", (long long)s->vpp_degree, (long long)m,
                (long long)p);
        return APS_REASON_VPP_INVALID;
    }
    if (G < p || G > m) {
        aps_fmt(msg, n, "interleaved schedule (vpp_degree = %lld) needs "
                "microbatch_group_size = %lld in [pp_degree = %lld, "
                "micro_batch_num = %lld] (Megatron schedules.py:1160-1168)",
                (long long)s->vpp_degree, (long long)G, (long long)p,
                (long long)m);
        return APS_REASON_VPP_INVALID;
    }
    int64_t last = m % G;
    if (last > 0 && last < p) {
        aps_fmt(msg, n, "interleaved schedule (vpp_degree = %lld) needs "
                "micro_batch_num = %lld mod microbatch_group_size = %lld "
                "to be 0 or >= pp_degree = %lld (got %lld; Megatron "
                "schedules.py:1170-1180)", (long long)s->vpp_degree,
                (long long)m, (long long)G, (long long)p, (long long)last);
        return APS_REASON_VPP_INVALID;
    }
    return APS_REASON_NONE;
}

/** training.local_batch_size L against strategy s, whose data-parallel
 *  rank takes m micro-batches of b sequences a step: TorchTitan
 *  (pytorch/torchtitan b5bcd76c trainer.py l.409-428: the gradient
 *  accumulation steps divide the step's tokens by a pass's) and NeMo
 *  AutoModel (36044ad3 components/training/step_scheduler.py l.109-123;
 *  recipes/llm/train_ft.py l.542-548: a pass is one pipeline schedule of
 *  local_batch_size / pp_microbatch_size micro-batches, at least pp_size
 *  of them) take L a multiple of b dividing m b under pipeline
 *  parallelism, and L = b without it (the local batch is the
 *  micro-batch). */
static aps_reason check_local_batch(const aps_training *t,
                                    const aps_strategy *s, char *msg,
                                    size_t n)
{
    int64_t L = t->local_batch_size, b = s->micro_batch_size;
    int64_t per_rank = aps_step_microbatches(t, s) * b;
    if (L > 0 && s->pp_degree <= 1 && b != L) {
        aps_fmt(msg, n, "training.local_batch_size = %lld: without pipeline "
                "parallelism the local batch is the micro-batch, so "
                "micro_batch_size must be %lld (got %lld)", (long long)L,
                (long long)L, (long long)b);
        return APS_REASON_BATCH_DIVISIBILITY;
    }
    if (L > 0 && s->pp_degree > 1 && (L % b != 0 || per_rank % L != 0)) {
        aps_fmt(msg, n, "training.local_batch_size = %lld must be a multiple "
                "of micro_batch_size = %lld that divides the %lld sequences "
                "a data-parallel rank takes per step (global_batch_size / "
                "data-parallel size)", (long long)L, (long long)b,
                (long long)per_rank);
        return APS_REASON_BATCH_DIVISIBILITY;
    }
    return APS_REASON_NONE;
}

/** A torch.distributed.pipelining schedule (profile torch_pipelining) of
 *  mb < p micro-batches: AutoModel asserts at least pp_size of them
 *  (recipes/llm/train_ft.py:547 @ 36044ad3), PyTorch's Schedule1F1B
 *  raises (schedules.py @ pytorch 00722e64 Schedule1F1B.__init__), and
 *  its Interleaved1F1B runs with stages idle, which is not simulated.
 *  Each message says what gives a schedule enough micro-batches. */
static aps_reason check_torch_fill(const aps_training *t,
                                   const aps_strategy *s, int64_t mb,
                                   char *msg, size_t n)
{
    int64_t p = s->pp_degree;
    if (!aps_profile(t)->torch_pipelining || p <= 1 || mb >= p)
        return APS_REASON_NONE;
    char fix[160];
    if (t->local_batch_size > 0)
        aps_fmt(fix, sizeof fix, "raise training.local_batch_size to %lld "
                "(pp_degree x micro_batch_size) or more, or use fewer stages",
                (long long)(p * s->micro_batch_size));
    else
        aps_fmt(fix, sizeof fix, "a larger global_batch_size, a smaller "
                "micro_batch_size or fewer stages");
    if (t->framework == APS_FW_AUTOMODEL) {
        aps_fmt(msg, n, "automodel: micro-batches per pipeline schedule = "
                "%lld < pp_degree = %lld: AutoModel asserts pp_batch_size // "
                "pp_microbatch_size >= pp_size (recipes/llm/train_ft.py:547); "
                "%s", (long long)mb, (long long)p, fix);
        return APS_REASON_FRAMEWORK_UNSUPPORTED;
    }
    if (s->pp_schedule == APS_PP_1F1B && s->vpp_degree == 1) {
        aps_fmt(msg, n, "%s: PyTorch's Schedule1F1B raises \"Number of "
                "microbatches (%lld) must be greater than or equal to the "
                "number of stages (%lld)\"; %s",
                aps_framework_name(t->framework), (long long)mb, (long long)p,
                fix);
        return APS_REASON_FRAMEWORK_UNSUPPORTED;
    }
    if (s->pp_schedule == APS_PP_1F1B) {
        aps_fmt(msg, n, "Interleaved1F1B (vpp_degree = %lld) with micro-"
                "batches per schedule = %lld < pp_degree = %lld: PyTorch runs "
                "it with stages idle, apsearch does not simulate it; %s",
                (long long)s->vpp_degree, (long long)mb, (long long)p, fix);
        return APS_REASON_NOT_MODELLED;
    }
    return APS_REASON_NONE;
}

/** PyTorch's ScheduleInterleaved1F1B (torch/distributed/pipelining/
 *  schedules.py @ pytorch 1fd7abc2, TorchTitan's and AutoModel's
 *  Interleaved1F1B) on the m >= p micro-batches of one schedule
 *  (check_torch_fill): m a multiple of its rounds, max(1, m // p) (its
 *  ValueError). */
static aps_reason check_torch_interleaved(const aps_strategy *s, int64_t m,
                                          char *msg, size_t n)
{
    int64_t rounds = aps_torch_rounds(m, s->pp_degree);
    if (m % rounds != 0) {
        aps_fmt(msg, n, "Interleaved1F1B (vpp_degree = %lld) needs the %lld "
                "micro-batches per schedule to be a multiple of its rounds, "
                "max(1, m // pp_degree) = %lld (PyTorch "
                "ScheduleInterleaved1F1B)", (long long)s->vpp_degree,
                (long long)m, (long long)rounds);
        return APS_REASON_VPP_INVALID;
    }
    return APS_REASON_NONE;
}

aps_reason aps_check_pp(const aps_model *m, const aps_training *t,
                        const aps_strategy *s, char *msg, size_t n)
{
    aps_reason r0 = aps_check_degrees(s, msg, n);
    if (r0 != APS_REASON_NONE)
        return r0; /* keeps this check safe to call on its own */
    int64_t layers[APS_MAX_STAGES];
    aps_reason rl = check_local_batch(t, s, msg, n);
    if (rl != APS_REASON_NONE)
        return rl;
    if (s->vpp_degree > 1 && s->pp_degree < 2) {
        aps_fmt(msg, n, "vpp_degree = %lld needs pp_degree > 1 (got %lld)",
                (long long)s->vpp_degree, (long long)s->pp_degree);
        return APS_REASON_VPP_INVALID;
    }
    aps_reason r = aps_stage_layers_dsa(m, t, s, layers, msg, n);
    if (r != APS_REASON_NONE)
        return r;
    /* megatron/training/arguments.py (d98e8a64) asserts (num_layers + 2)
     * divisible by pp x vpp with both --account-for-embedding-in-pipeline-
     * split and --account-for-loss-in-pipeline-split; only a split by the
     * rule is written with them (a layer_offset or balancing is not).  A
     * hybrid model's split is the '|' segments of its pattern, which take
     * any chunks (and no account flags: arguments.py:827-836) */
    int64_t S = s->pp_degree * s->vpp_degree;
    if (t->framework == APS_FW_MEGATRON && !aps_model_is_hybrid(m) &&
        aps_split_by_rule(s) &&
        s->pipeline_split == APS_SPLIT_EMBEDDING_LOSS &&
        (m->num_layers + 2) % S != 0) {
        aps_fmt(msg, n, "megatron: pipeline_split = embedding_loss needs "
                "num_layers + 2 = %lld divisible by pp_degree x vpp_degree = "
                "%lld (megatron/training/arguments.py); give stage_partition "
                "per model chunk (--pipeline-model-parallel-layout) or "
                "layer_offset = \"balanced\"",
                (long long)(m->num_layers + 2), (long long)S);
        return APS_REASON_FRAMEWORK_UNSUPPORTED;
    }
    int64_t mb = microbatches(t, s);
    /* torch/distributed/pipelining/schedules.py (pytorch 1fd7abc2,
     * 00722e64): ScheduleZBVZeroBubble and ScheduleDualPipeV require
     * "exactly 2 stages per rank"; DualPipeV "at least as many
     * microbatches as stages" (2p); ScheduleInterleavedZeroBubble needs
     * the micro-batches a multiple of its rounds, max(1, m / p) */
    if (s->pp_degree > 1 && aps_schedule_v_shaped(s->pp_schedule) &&
        s->vpp_degree != 2) {
        aps_fmt(msg, n, "pp_schedule = %s needs vpp_degree = 2 (two stages "
                "per rank, the V; got %lld)",
                aps_pp_schedule_name(s->pp_schedule),
                (long long)s->vpp_degree);
        return APS_REASON_VPP_INVALID;
    }
    if (s->pp_degree > 1 && s->pp_schedule == APS_PP_DUALPIPEV &&
        mb < 2 * s->pp_degree) {
        aps_fmt(msg, n, "pp_schedule = dualpipev needs micro_batch_num = "
                "%lld >= its 2 x pp_degree = %lld stages (PyTorch "
                "ScheduleDualPipeV)", (long long)mb,
                (long long)(2 * s->pp_degree));
        return APS_REASON_VPP_INVALID;
    }
    int64_t rounds = aps_torch_rounds(mb, s->pp_degree);
    if (s->pp_degree > 1 && s->pp_schedule == APS_PP_INTERLEAVED_ZB &&
        mb % rounds != 0) {
        aps_fmt(msg, n, "pp_schedule = interleaved_zero_bubble needs "
                "micro_batch_num = %lld a multiple of max(1, m / pp_degree) "
                "= %lld (PyTorch ScheduleInterleavedZeroBubble)",
                (long long)mb, (long long)rounds);
        return APS_REASON_VPP_INVALID;
    }
    /* PyTorch's zero-bubble orders take any m (beyond their own checks
     * above): ScheduleZBVZeroBubble builds its order for max(2p - 1, m)
     * micro-batches and drops the ops of those >= m, ScheduleDualPipeV
     * takes any m >= 2p */
    aps_reason rf = check_torch_fill(t, s, mb, msg, n);
    if (rf != APS_REASON_NONE)
        return rf;
    if (s->vpp_degree > 1 && s->pp_degree > 1 &&
        s->pp_schedule == APS_PP_1F1B)
        return aps_profile(t)->torch_pipelining
                   ? check_torch_interleaved(s, mb, msg, n)
                   : check_interleaved_groups(s, mb, msg, n);
    /* a group size anywhere else would be a setting nothing reads (the
     * search gives such candidates 0; --strategy may not) */
    if (s->microbatch_group_size != 0) {
        aps_fmt(msg, n, "microbatch_group_size = %lld applies to Megatron's "
                "interleaved schedule only (pp_degree > 1, vpp_degree > 1, "
                "pp_schedule 1f1b; got pp_degree = %lld, vpp_degree = %lld)",
                (long long)s->microbatch_group_size, (long long)s->pp_degree,
                (long long)s->vpp_degree);
        return APS_REASON_VPP_INVALID;
    }
    return aps_check_bf16_layers(m, t, s, msg, n);
}

/**
 * Megatron's partial distributed optimizer (training.distributed_
 * optimizer_instances = I > 1, --num-distributed-optimizer-instances) at
 * Megatron-LM d98e8a64: it needs the distributed optimizer
 * ("Partial DistOpt cannot be used without DistOpt",
 * distributed_data_parallel.py:357-360), dp x cp and the expert-data-
 * parallel ranks divisible by I (parallel_state.py:922-926, 1447-1449);
 * apsearch takes it beside zero_stage 1 without FSDP (Megatron-FSDP's
 * HSDP is dp_degree x fsdp_degree). FRAMEWORK_UNSUPPORTED with the
 * reason in msg, else APS_REASON_NONE.
 */
static aps_reason check_dist_opt_instances(const aps_training *t,
                                           const aps_strategy *s, char *msg,
                                           size_t n)
{
    int64_t I = t->distributed_optimizer_instances;
    if (I <= 1)
        return APS_REASON_NONE;
    if (s->zero_stage != 1 || s->fsdp_degree > 1) {
        aps_fmt(msg, n, "megatron: training.distributed_optimizer_instances = "
                "%lld needs the distributed optimizer (zero_stage 1, no "
                "fsdp_degree; got zero_stage %lld, fsdp_degree %lld): "
                "\"Partial DistOpt cannot be used without DistOpt\" "
                "(distributed_data_parallel.py)%s", (long long)I,
                (long long)s->zero_stage, (long long)s->fsdp_degree,
                s->fsdp_degree > 1 ? "; Megatron-FSDP's HSDP is dp_degree x "
                "fsdp_degree" : "");
        return APS_REASON_FRAMEWORK_UNSUPPORTED;
    }
    int64_t dpc = s->dp_degree * s->cp_degree, edp = aps_moe_edp(s);
    if (dpc % I != 0 || edp % I != 0) {
        aps_fmt(msg, n, "megatron: training.distributed_optimizer_instances = "
                "%lld does not divide %s (%lld): \"%s parallel size should "
                "be divisible by partial DistOpt shard factor\" "
                "(parallel_state.py)", (long long)I,
                dpc % I != 0 ? "dp_degree x cp_degree" : "the expert-data-"
                "parallel ranks", (long long)(dpc % I != 0 ? dpc : edp),
                dpc % I != 0 ? "Data" : "Expert data");
        return APS_REASON_FRAMEWORK_UNSUPPORTED;
    }
    return APS_REASON_NONE;
}

aps_reason aps_check_framework(const aps_training *t, const aps_strategy *s,
                               char *msg, size_t n)
{
    aps_reason r0 = aps_check_degrees(s, msg, n);
    if (r0 != APS_REASON_NONE)
        return r0;
    bool hsdp = s->fsdp_degree > 1 && s->dp_degree > 1;
    switch (t->framework) {
    case APS_FW_MEGATRON:
        /* megatron/training/arguments.py: --use-torch-fsdp2 shards over the
         * whole data-parallel group; --use-distributed-optimizer is ZeRO-1;
         * interleaving splits every rank into equal model chunks. */
        if (t->fsdp_impl == APS_FSDP_IMPL_MEGATRON_FSDP) {
            aps_reason r = aps_mfsdp_check(t, s, msg, n);
            if (r != APS_REASON_NONE)
                return r;
        } else if (hsdp) {
            aps_fmt(msg, n, "megatron: HSDP (fsdp_degree = %lld x dp_degree = "
                    "%lld) with --use-torch-fsdp2, which shards over the whole "
                    "data-parallel group; Megatron-FSDP runs HSDP without "
                    "pipelines (training.fsdp_impl = megatron_fsdp)",
                    (long long)s->fsdp_degree, (long long)s->dp_degree);
            return APS_REASON_FRAMEWORK_UNSUPPORTED;
        }
        /* Megatron-FSDP's optim_grads is ZeRO-2 over the DP group */
        if (s->fsdp_degree == 1 && s->zero_stage >= 2 &&
            aps_mfsdp_sharding_of(t, s) != APS_MFSDP_OPTIM_GRADS) {
            aps_fmt(msg, n, "megatron: zero_stage = %lld over DDP does not "
                    "exist (distributed optimizer = ZeRO-1; use fsdp_degree "
                    "for full sharding%s)", (long long)s->zero_stage,
                    s->zero_stage == 2 ? "; fsdp_impl = megatron_fsdp "
                    "runs ZeRO-2 as optim_grads" : "");
            return APS_REASON_FRAMEWORK_UNSUPPORTED;
        }
        {
            aps_reason r = check_dist_opt_instances(t, s, msg, n);
            if (r != APS_REASON_NONE)
                return r;
        }
        /* --overlap-moe-expert-parallel-comm does not run with full
         * recompute (TransformerConfig __post_init__, Megatron-LM b0cc2706
         * transformer_config.py:1852-1888; its other conditions:
         * aps_check_moe).  Said here, whatever the expert degrees, so that
         * this check alone tells the search that no full-recompute
         * strategy runs (search.space_of: "none" is then enumerated on its
         * own, not as full recompute of no layer). */
        if (t->overlap_moe_expert_parallel_comm &&
            s->layer_recompute == APS_RECOMPUTE_FULL) {
            aps_fmt(msg, n, "training.overlap_moe_expert_parallel_comm does "
                    "not run with full recompute "
                    "(megatron/core/transformer/transformer_config.py)");
            return APS_REASON_FRAMEWORK_UNSUPPORTED;
        }
        /* --decoder-first/last-pipeline-num-layers make only the first
         * and last stage differ, the split balance.c gives; any other
         * per-rank split runs as --pipeline-model-parallel-layout (the
         * launch writes it; f62dda4 removed the middle-stage check); with
         * interleaving (--num-virtual-stages-per-pipeline-rank) each
         * rank's layers split into vpp_degree equal chunks
         * (megatron/core/transformer/transformer_layer.py
         * get_transformer_layer_offset), which the layout requires. */
        break;
    case APS_FW_FSDP2:
        /* torchtitan/config/job_config.py [parallelism]: the replicate
         * dimension is DDP, the shard dimension FSDP2; tensor parallelism is
         * always sequence-parallel (parallelize_llama). */
        if (s->fsdp_degree == 1 && s->cp_degree == 1 && s->zero_stage >= 1) {
            aps_fmt(msg, n, "fsdp2: zero_stage = %lld over DDP does not exist "
                    "in TorchTitan (shard with data_parallel_shard_degree)",
                    (long long)s->zero_stage);
            return APS_REASON_FRAMEWORK_UNSUPPORTED;
        }
        /* torchtitan/distributed/parallel_dims.py: "DDP has not supported
         * > 1D parallelism" (replicate without shard, with TP or PP).
         * Lifted at pytorch/torchtitan e1847f43 (2026-03-09): HEAD
         * (b5bcd76c) replicates with fully_shard over dp_replicate and
         * accepts TP/PP with it; still refused here until the estimate
         * models that path. */
        if (s->fsdp_degree == 1 && s->cp_degree == 1 && s->dp_degree > 1 &&
            (s->tp_degree > 1 || s->pp_degree > 1)) {
            aps_fmt(msg, n, "fsdp2: DDP (dp_degree = %lld, fsdp_degree = 1) "
                    "with tp_degree = %lld, pp_degree = %lld; TorchTitan's DDP "
                    "is data parallelism only", (long long)s->dp_degree,
                    (long long)s->tp_degree, (long long)s->pp_degree);
            return APS_REASON_FRAMEWORK_UNSUPPORTED;
        }
        /* torchtitan/distributed/context_parallel/api.py @ b5bcd76c:
         * PyTorch's context parallel attention (torch.distributed.tensor.
         * experimental._attention), ring attention with a load balancer;
         * no head-scattering all-to-all */
        if (s->cp_degree > 1 && s->cp_comm_type == APS_CP_A2A) {
            aps_fmt(msg, n, "fsdp2: cp_comm_type = a2a; TorchTitan's context "
                    "parallelism is ring attention (PyTorch's context_parallel), "
                    "with no all-to-all (Ulysses) mode");
            return APS_REASON_FRAMEWORK_UNSUPPORTED;
        }
        if (s->tp_degree > 1 && !s->sequence_parallel) {
            aps_fmt(msg, n, "fsdp2: TorchTitan's tensor parallelism "
                    "(tp_degree = %lld) is always sequence-parallel",
                    (long long)s->tp_degree);
            return APS_REASON_FRAMEWORK_UNSUPPORTED;
        }
        break;
    case APS_FW_AUTOMODEL:
        /* NeMo AutoModel (NVIDIA-NeMo/Automodel 36044ad3) builds its
         * meshes in nemo_automodel/components/distributed/mesh_utils.py
         * _create_device_meshes: strategy fsdp2 (FSDP2Config) shards over
         * dp_shard (x cp), replicates over dp_replicate_size, which "must
         * be less than dp_size since DDP usecase is not supported by
         * FSDP2" (l.310-314); strategy ddp refuses tensor, pipeline,
         * context and expert parallelism (l.96-99, _require_size_one).
         * Replicas with fsdp_degree 1 are dp_replicate_size = dp_size
         * under fsdp2 whatever cp is (FSDP over the CP ranks alone is
         * dp_shard 1), so they need strategy ddp and none of those. */
        if (s->fsdp_degree == 1 && s->dp_degree > 1 &&
            (s->tp_degree > 1 || s->pp_degree > 1 || s->cp_degree > 1 ||
             aps_moe_ep(s) > 1)) {
            aps_fmt(msg, n, "automodel: DDP (dp_degree = %lld, fsdp_degree "
                    "= 1) with tp %lld, pp %lld, cp %lld, ep %lld: strategy "
                    "ddp refuses them, fsdp2 needs dp_replicate_size < "
                    "dp_size (distributed/mesh_utils.py)",
                    (long long)s->dp_degree, (long long)s->tp_degree,
                    (long long)s->pp_degree, (long long)s->cp_degree,
                    (long long)aps_moe_ep(s));
            return APS_REASON_FRAMEWORK_UNSUPPORTED;
        }
        /* (with cp > 1 and dp 1 the CP ranks are the FSDP group: a
         * zero_stage would be ignored, so it is refused too) */
        if (s->fsdp_degree == 1 && s->zero_stage >= 1) {
            aps_fmt(msg, n, "automodel: zero_stage = %lld over DDP does not "
                    "exist in AutoModel (strategies fsdp2, megatron_fsdp, "
                    "ddp: nemo_automodel/components/distributed/config.py); "
                    "shard with fsdp_degree", (long long)s->zero_stage);
            return APS_REASON_FRAMEWORK_UNSUPPORTED;
        }
        /* context parallelism is TransformerEngine's attention with
         * cp_comm_type "p2p", the one AutoModel passes (components/
         * distributed/parallelizer.py:577, moe/parallelizer.py apply_cp
         * default) */
        if (s->cp_degree > 1 && s->cp_comm_type != APS_CP_P2P) {
            aps_fmt(msg, n, "automodel: cp_comm_type = %s; AutoModel runs "
                    "context parallelism with cp_comm_type = \"p2p\" (ring; "
                    "nemo_automodel/components/distributed/parallelizer.py, "
                    "moe/parallelizer.py apply_cp)",
                    aps_cp_comm_name(s->cp_comm_type));
            return APS_REASON_FRAMEWORK_UNSUPPORTED;
        }
        break;
    case APS_FW_FSDP:
        /* llm-foundry trains with PyTorch FSDP (FULL_SHARD, SHARD_GRAD_OP,
         * HYBRID_SHARD) or DDP only. */
        if (s->tp_degree > 1 || s->pp_degree > 1 || s->cp_degree > 1) {
            aps_fmt(msg, n, "fsdp: tp_degree = %lld, pp_degree = %lld, "
                    "cp_degree = %lld; PyTorch FSDP1 (llm-foundry) shards data "
                    "parallelism only", (long long)s->tp_degree,
                    (long long)s->pp_degree, (long long)s->cp_degree);
            return APS_REASON_FRAMEWORK_UNSUPPORTED;
        }
        if (s->fsdp_degree == 1 && s->zero_stage >= 1) {
            aps_fmt(msg, n, "fsdp: zero_stage = %lld over DDP does not exist "
                    "in PyTorch FSDP1", (long long)s->zero_stage);
            return APS_REASON_FRAMEWORK_UNSUPPORTED;
        }
        break;
    case APS_FW_DEEPSPEED:
        /* DeepSpeed ZeRO shards over the data-parallel group; its sequence
         * parallelism (Ulysses) is all-to-all, not ring attention. */
        if (hsdp) {
            aps_fmt(msg, n, "deepspeed: HSDP (fsdp_degree = %lld x dp_degree "
                    "= %lld) is not ZeRO; use fsdp_degree or dp_degree",
                    (long long)s->fsdp_degree, (long long)s->dp_degree);
            return APS_REASON_FRAMEWORK_UNSUPPORTED;
        }
        if (s->cp_degree > 1) {
            aps_fmt(msg, n, "deepspeed: cp_degree = %lld; DeepSpeed has no "
                    "ring or all-gather context parallelism, and its Ulysses "
                    "all-to-all is not estimated for it",
                    (long long)s->cp_degree);
            return APS_REASON_FRAMEWORK_UNSUPPORTED;
        }
        /* deepspeed/runtime/pipe/engine.py: "ZeRO-2 and ZeRO-3 are
         * incompatible with pipeline parallelism". */
        if (s->pp_degree > 1 && (s->fsdp_degree > 1 || s->zero_stage >= 2)) {
            aps_fmt(msg, n, "deepspeed: pp_degree = %lld with ZeRO-2/3 "
                    "(zero_stage = %lld, fsdp_degree = %lld); DeepSpeed's "
                    "pipeline engine allows ZeRO-0/1 only",
                    (long long)s->pp_degree, (long long)s->zero_stage,
                    (long long)s->fsdp_degree);
            return APS_REASON_FRAMEWORK_UNSUPPORTED;
        }
        break;
    }
    return aps_check_recipe(t, s, msg, n);
}

/* Megatron-LM's --use-torch-fsdp2: framework megatron with fsdp_impl
 * torch_fsdp2 and fsdp_degree > 1 or zero_stage 2 / 3 (apsearch.launch.
 * megatron). */
static bool megatron_torch_fsdp2(const aps_training *t, const aps_strategy *s)
{
    return t->framework == APS_FW_MEGATRON &&
           t->fsdp_impl == APS_FSDP_IMPL_TORCH_FSDP2 &&
           (s->fsdp_degree > 1 || s->zero_stage >= 2);
}

/* validate_args (megatron/training/arguments.py @ d98e8a64ddf34856e74b24
 * 714e3bedb2f5a39553, l.1031-1047) asserts pipeline_model_parallel_size ==
 * 1, expert_model_parallel_size == 1 ("--use-torch-fsdp2 is not supported
 * with expert parallelism", l.1036), untie_embeddings_and_output_weights
 * and not fp16 with --use-torch-fsdp2. */
static aps_reason check_megatron_fsdp2(const aps_model *m, const aps_training *t,
                                       const aps_strategy *s, char *msg, size_t n)
{
    if (!megatron_torch_fsdp2(t, s))
        return APS_REASON_NONE;
    const char *why = NULL;
    if (s->pp_degree > 1)
        why = "is not supported with pipeline parallelism";
    else if (aps_moe_ep(s) > 1)
        why = "is not supported with expert parallelism (ep_degree > 1)";
    else if (m->tie_word_embeddings)
        why = "requires --untie-embeddings-and-output-weights (the model ties them)";
    else if (t->precision == APS_PREC_FP16)
        why = "not supported with fp16 yet";
    if (!why)
        return APS_REASON_NONE;
    aps_fmt(msg, n, "megatron: --use-torch-fsdp2 (fsdp_degree = %lld, zero_stage "
            "= %lld, pp_degree = %lld, ep_degree = %lld) %s (validate_args, "
            "megatron/training/arguments.py)", (long long)s->fsdp_degree,
            (long long)s->zero_stage, (long long)s->pp_degree,
            (long long)aps_moe_ep(s), why);
    return APS_REASON_FRAMEWORK_UNSUPPORTED;
}

/* validate_args sets fp8_param_gather False under --use-torch-fsdp2 with
 * TransformerEngine >= 2.0 (arguments.py l.1051-1057 @ d98e8a64: the job
 * gathers bf16), so an estimate of fp8 gathers there is of a job Megatron
 * does not run; fp4_param_gather stays on from TE 2.7, which every NVFP4
 * run has (l.1058-1063).  The message stays under APS_REASON_LEN with the
 * remedies last. */
static aps_reason check_megatron_fsdp2_fp8_gather(const aps_training *t,
                                                  const aps_strategy *s,
                                                  char *msg, size_t n)
{
    if (!megatron_torch_fsdp2(t, s) || !aps_recipe_fp8_param_gather(t) ||
        t->precision == APS_PREC_NVFP4)
        return APS_REASON_NONE;
    aps_fmt(msg, n, "megatron: --use-torch-fsdp2 (fsdp_degree = %lld, "
            "zero_stage = %lld) turns --fp8-param-gather off (TE >= 2.0, "
            "arguments.py) and gathers bf16, not fp8 as estimated; set "
            "training.fp8_param_gather = false or fsdp_impl = "
            "\"megatron_fsdp\"", (long long)s->fsdp_degree,
            (long long)s->zero_stage);
    return APS_REASON_FRAMEWORK_UNSUPPORTED;
}

/* Megatron-LM's context parallelism runs in TransformerEngine, and the
 * launch writes the model's window as --window-size (W - 1, 0) on the
 * windowed layers (whatever the sequence length) and its attention sinks as
 * --softmax-type learnable (apsearch.launch.megatron window_args,
 * attention_extras).  attn_forward_func_with_cp (transformer_engine/
 * pytorch/attention/dot_product_attention/context_parallel.py @ d0067d0d)
 * asserts "Context parallelism does not support sliding window attention
 * with cp_comm_type='p2p'" (l.5057-5060: a2a and all_gather only),
 * "Context parallelism only supports softmax_type='learnable' with
 * FusedAttention backend" (l.5062-5064) and "... with cp_comm_type =
 * 'a2a'" (l.5065-5067); get_attention_backend (utils.py:1272-1281 @
 * d0067d0d) disables FusedAttention under a2a when the heads or the query
 * groups of a TP rank are odd, so sinks need both even. */
static aps_reason check_megatron_cp_attention(const aps_model *m,
                                              const aps_training *t,
                                              const aps_strategy *s,
                                              char *msg, size_t n)
{
    if (t->framework != APS_FW_MEGATRON || s->cp_degree < 2)
        return APS_REASON_NONE;
    /* transformer_config.py @ d98e8a64 __post_init__, experimental_
     * attention_variant == "dsa" */
    if (aps_model_has_dsa(m) && s->cp_comm_type != APS_CP_ALL_GATHER) {
        aps_fmt(msg, n, "megatron: cp_degree = %lld, cp_comm_type = %s with "
                "DeepSeek Sparse Attention: TransformerConfig asserts "
                "\"DSAttention context parallelism currently supports "
                "cp_comm_type=allgather only\"; use all_gather",
                (long long)s->cp_degree, aps_cp_comm_name(s->cp_comm_type));
        return APS_REASON_FRAMEWORK_UNSUPPORTED;
    }
    if (s->cp_comm_type == APS_CP_P2P && m->sliding_window > 0) {
        aps_fmt(msg, n, "megatron: cp_degree = %lld, cp_comm_type = p2p with "
                "a %lld-token sliding window: TransformerEngine asserts "
                "\"Context parallelism does not support sliding window "
                "attention with cp_comm_type='p2p'\" (context_parallel.py); "
                "use a2a or all_gather", (long long)s->cp_degree,
                (long long)m->sliding_window);
        return APS_REASON_FRAMEWORK_UNSUPPORTED;
    }
    if (!m->attention_sinks)
        return APS_REASON_NONE;
    if (s->cp_comm_type != APS_CP_A2A) {
        aps_fmt(msg, n, "megatron: cp_degree = %lld, cp_comm_type = %s with "
                "attention sinks (--softmax-type learnable): TransformerEngine "
                "asserts \"Context parallelism only supports softmax_type="
                "'learnable' with cp_comm_type = 'a2a'\" (context_parallel.py)"
                "; use a2a", (long long)s->cp_degree,
                aps_cp_comm_name(s->cp_comm_type));
        return APS_REASON_FRAMEWORK_UNSUPPORTED;
    }
    int64_t ah = m->num_attention_heads / s->tp_degree;
    int64_t kh = m->num_query_groups / s->tp_degree;
    if (ah % 2 != 0 || kh % 2 != 0) {
        aps_fmt(msg, n, "megatron: cp_comm_type = a2a with attention sinks "
                "and %lld heads, %lld query groups per TP rank: "
                "TransformerEngine's FusedAttention needs both even under a2a "
                "(utils.py get_attention_backend) and sinks need "
                "FusedAttention under CP (context_parallel.py)",
                (long long)ah, (long long)kh);
        return APS_REASON_FRAMEWORK_UNSUPPORTED;
    }
    return APS_REASON_NONE;
}

aps_reason aps_check_recompute_modules(const aps_model *m,
                                      const aps_training *t,
                                      const aps_strategy *s, char *msg,
                                      size_t n)
{
    unsigned mods = s->recompute_modules;
    if (mods == 0u)
        return APS_REASON_NONE;
    if (mods >> APS_RCM_COUNT) {
        aps_fmt(msg, n, "recompute_modules = 0x%x: unknown module bits", mods);
        return APS_REASON_INVALID_DEGREE;
    }
    /* Megatron reads the modules under selective granularity only
     * (TransformerConfig.__post_init__): elsewhere they are ignored */
    if (s->layer_recompute != APS_RECOMPUTE_SELECTIVE)
        return APS_REASON_NONE;
    if (t->framework != APS_FW_MEGATRON) {
        aps_fmt(msg, n, "recompute_modules: Megatron-Core's "
                "--recompute-modules; %s recomputes its own way",
                aps_framework_name(t->framework));
        return APS_REASON_FRAMEWORK_UNSUPPORTED;
    }
    /* TransformerConfig.__post_init__ (transformer_config.py @ d98e8a64) */
    if ((mods & APS_RCM_MLA_UP_PROJ) && m->kv_lora_rank == 0) {
        aps_fmt(msg, n, "recompute_modules mla_up_proj needs multi-latent "
                "attention (%s has none)", m->name);
        return APS_REASON_FRAMEWORK_UNSUPPORTED;
    }
    if ((mods & APS_RCM_MOE_ACT) && s->moe_grouped_gemm == 0) {
        aps_fmt(msg, n, "recompute_modules moe_act needs moe_grouped_gemm");
        return APS_REASON_FRAMEWORK_UNSUPPORTED;
    }
    return APS_REASON_NONE;
}

/** Megatron with per-layer TransformerEngine CUDA graphs that capture the
 *  MoE router (--cuda-graph-modules moe_router, which the launch file
 *  writes for the moe_router and attn+moe_router scopes and for
 *  whole-layer graphs of a dropless MoE model: launch/megatron.lua
 *  graph_modules) and selective recompute of the whole MoE block (`moe`):
 *  TransformerConfig.__post_init__ asserts "moe recompute is not
 *  supported with moe_router CUDA graph" (Megatron-LM d98e8a64
 *  transformer_config.py l.2862-2868).  Full recompute and CPU offloading
 *  take the full-iteration graph instead (layerprog.c). */
static aps_reason check_megatron_graph_recompute(const aps_model *m,
                                                 const aps_training *t,
                                                 const aps_strategy *s,
                                                 char *msg, size_t n)
{
    if (t->framework != APS_FW_MEGATRON || !t->cuda_graphs ||
        !aps_model_is_moe(m) || s->layer_recompute != APS_RECOMPUTE_SELECTIVE ||
        t->activation_offload_layers > 0)
        return APS_REASON_NONE;
    aps_cuda_graph_scope g = t->cuda_graph_scope;
    bool router = aps_cuda_graph_modules(g, APS_CG_MOE_ROUTER) ||
                  (g == APS_CG_LAYER && s->moe_capacity_factor <= 0);
    if (!router || !(aps_recompute_modules(t, s) & APS_RCM_MOE))
        return APS_REASON_NONE;
    aps_fmt(msg, n, "recompute_modules moe with a CUDA graph of the MoE router "
            "(cuda_graph_scope %s%s): Megatron-Core refuses it "
            "(transformer_config.py); recompute moe_act, or graph attn only",
            g == APS_CG_LAYER ? "layer" : "with moe_router",
            g == APS_CG_LAYER ? " on a dropless model" : "");
    return APS_REASON_FRAMEWORK_UNSUPPORTED;
}

/** TorchTitan's chunked loss splits the micro-batch's tokens into equal
 *  chunks: ChunkedLossWrapper asserts "sequence length must be divisible
 *  by num_chunks" on them (torchtitan/components/loss.py:603-606 @
 *  b5bcd76c), micro_batch_size x seq_length / cp_degree tokens on a rank
 *  (the batch folded into the sequence). */
static aps_reason check_loss_chunks(const aps_model *m, const aps_training *t,
                                    const aps_strategy *s, char *msg, size_t n)
{
    int64_t c = aps_recipe_loss_chunks(t);
    int64_t tokens = s->micro_batch_size * (t->seq_length / s->cp_degree);
    if (c <= 1 || t->mtp_num_layers > 0 || m == NULL || tokens % c == 0)
        return APS_REASON_NONE;
    aps_fmt(msg, n, "%s: loss_chunks = %lld does not divide the micro-batch's "
            "%lld tokens (micro_batch_size x seq_length / cp_degree); "
            "TorchTitan's ChunkedLossWrapper asserts it (components/loss.py)",
            aps_framework_name(t->framework), (long long)c, (long long)tokens);
    return APS_REASON_FRAMEWORK_UNSUPPORTED;
}

/** A global attention shape (Gemma 4) or V heads narrower than Q/K's
 *  (MiMo-V2-Flash) under the op-level selective recompute of TorchTitan
 *  and AutoModel (opsac.c): its walk alternates saved and recomputed
 *  matmuls over one shape of layer with V as wide as K, and a layer
 *  without V projection shifts the alternation; not modelled. */
static const char *global_attention_refusal(const aps_training *t,
                                            const aps_strategy *s,
                                            aps_reason *code)
{
    *code = APS_REASON_NOT_MODELLED;
    if (aps_op_sac_on(t, s))
        return "selective recompute of a model with a global attention "
               "shape (global_head_dim, global_num_query_groups, "
               "global_k_eq_v: Gemma 4) or attn_v_head_dim (MiMo-V2-Flash) "
               "under op-level selective activation checkpointing is not "
               "modelled";
    return NULL;
}

/** DeepSeek Sparse Attention under op-level selective checkpointing: its
 *  indexer's scores are an fp32 aten.bmm over every head and key (b x
 *  index heads x s x s per layer, AutoModel models/deepseek_v32/
 *  layers.py:232-245 @ 36044ad3), which the policy's save set keeps
 *  until the layer's backward; not modelled. */
static const char *dsa_sac_refusal(const aps_training *t,
                                   const aps_strategy *s, aps_reason *code)
{
    *code = APS_REASON_NOT_MODELLED;
    if (aps_op_sac_on(t, s))
        return "selective recompute of a DeepSeek Sparse Attention model "
               "under op-level selective checkpointing is not modelled: "
               "its indexer's fp32 scores (aten.bmm, b x index heads x s x "
               "s per layer) are in the policy's save set; layer_recompute "
               "= full or none is priced";
    return NULL;
}

/* NeMo AutoModel's Muse Glimmer (the model with weightless per-head Q/K
 * norms read here) declares no pipeline parallelism:
 * MuseGlimmerForConditionalGeneration.ModelCapabilities supports_pp =
 * False (components/models/muse_glimmer/model.py l.689-693 @ 36044ad3). */
static aps_reason check_automodel_muse(const aps_model *m,
                                       const aps_training *t,
                                       const aps_strategy *s, char *msg,
                                       size_t n)
{
    if (!m->qk_norm_weightless || t->framework != APS_FW_AUTOMODEL ||
        s->pp_degree <= 1)
        return APS_REASON_NONE;
    aps_fmt(msg, n, "NeMo AutoModel's Muse Glimmer has no pipeline parallelism "
            "(ModelCapabilities supports_pp = False)");
    return APS_REASON_FRAMEWORK_UNSUPPORTED;
}

aps_reason aps_check_framework_model(const aps_model *m, const aps_training *t,
                                     const aps_strategy *s, char *msg, size_t n)
{
    aps_reason r = aps_check_framework(t, s, msg, n);
    if (r != APS_REASON_NONE)
        return r;
    r = check_megatron_cp_attention(m, t, s, msg, n);
    if (r != APS_REASON_NONE)
        return r;
    r = check_megatron_graph_recompute(m, t, s, msg, n);
    if (r != APS_REASON_NONE)
        return r;
    r = check_loss_chunks(m, t, s, msg, n);
    if (r != APS_REASON_NONE)
        return r;
    r = check_automodel_muse(m, t, s, msg, n);
    if (r != APS_REASON_NONE)
        return r;
    aps_reason code = APS_REASON_NONE;
    const char *why = aps_model_is_nas(m)      ? aps_nas_refusal(t, s, &code)
                      : aps_model_is_hybrid(m) ? aps_hybrid_refusal(m, t, s, &code)
                      : aps_model_has_gdn(m) ? aps_gdn_refusal(m, t, s, &code)
                      : aps_model_has_dsa(m) ? dsa_sac_refusal(t, s, &code)
                      : (aps_model_has_global_attention(m) ||
                         m->attn_v_head_dim > 0)
                          ? global_attention_refusal(t, s, &code)
                          : NULL;
    if (why != NULL) {
        aps_fmt(msg, n, "%s", why);
        return code;
    }
    r = check_megatron_fsdp2(m, t, s, msg, n);
    if (r != APS_REASON_NONE)
        return r;
    return check_megatron_fsdp2_fp8_gather(t, s, msg, n);
}

aps_reason aps_check_all(const aps_model *m, const aps_cluster *c,
                         const aps_training *t, const aps_strategy *s,
                         char *msg, size_t n)
{
    aps_reason r;
    if ((r = aps_check_degrees(s, msg, n)) != APS_REASON_NONE) return r;
    if ((r = aps_check_zero(s, msg, n)) != APS_REASON_NONE) return r;
    /* DeepSeek-V4: TP and CP are not priced (dsv4.c), said before the
     * generic head-divisibility checks would name its one KV head */
    if (m != NULL && aps_model_is_dsv4(m)) {
        const char *why = aps_dsv4_refusal(t, s, &r);
        if (why != NULL) {
            aps_fmt(msg, n, "%s", why);
            return r;
        }
    }
    if ((r = aps_check_tp(m, t, s, msg, n)) != APS_REASON_NONE) return r;
    if ((r = aps_check_cp(m, t, s, msg, n)) != APS_REASON_NONE) return r;
    if ((r = aps_check_batch(t, s, msg, n)) != APS_REASON_NONE) return r;
    if ((r = aps_check_pp(m, t, s, msg, n)) != APS_REASON_NONE) return r;
    /* a schedule past the simulation's size: filtered as any candidate
     * apsearch cannot price, not an error of the whole search */
    if (!aps_check_schedule_size(t, s, msg, n)) return APS_REASON_NOT_MODELLED;
    if ((r = aps_check_devices(c, s, msg, n)) != APS_REASON_NONE) return r;
    if ((r = aps_check_moe(m, t, s, msg, n)) != APS_REASON_NONE) return r;
    if ((r = aps_check_recompute_modules(m, t, s, msg, n)) != APS_REASON_NONE)
        return r;
    if ((r = aps_check_offload(m, t, s, msg, n)) != APS_REASON_NONE)
        return r;
    /* last: what the strategy is comes before whether an engine runs it */
    if ((r = aps_check_framework_model(m, t, s, msg, n)) != APS_REASON_NONE) return r;
    return APS_REASON_NONE;
}

/** GiB of `bytes` rounded to `dec` decimals, as an integer of 10^-dec GiB. */
static int64_t gib_rounded(double bytes, int dec)
{
    return (int64_t)(bytes / APS_GIB * pow(10, dec) + 0.5);
}

/** " max reserved" / " max allocated" after the figure a user limit
 *  bounds (aps_memory_checked); "" for device memory in use, the figure
 *  the device's capacity bounds. */
static const char *limited_kind(const aps_training *t)
{
    if (!(t->memory_limit_bytes > 0) ||
        t->memory_limit_kind == APS_MEM_KIND_DEVICE)
        return "";
    return t->memory_limit_kind == APS_MEM_KIND_ALLOCATED ? " max allocated"
                                                          : " max reserved";
}

/** The largest memory category of stage w. */
static int largest_category(const aps_stage_estimate *w)
{
    int big = 0;
    for (int k = 1; k < APS_MEM_COUNT; k++)
        if (w->mem[k] > w->mem[big])
            big = k;
    return big;
}

/** MEMORY_LIMIT when a user limit on max reserved or max allocated holds
 *  but the device memory in use (out->mem_peak: with the CUDA context and
 *  NCCL's buffers) exceeds the device's capacity less
 *  training.memory_margin_gib, the physical bound every run is under.  A
 *  limit above the capacity (which policies refuse; the C API's way to
 *  estimate a breakdown without a bound) lifts it. */
static aps_reason check_device_capacity(const aps_cluster *c,
                                        const aps_training *t,
                                        aps_estimate *out, int64_t p)
{
    double cap = c->device.memory_bytes - t->memory_margin_bytes;
    if (!(t->memory_limit_bytes > 0) ||
        t->memory_limit_bytes > c->device.memory_bytes ||
        t->memory_limit_kind == APS_MEM_KIND_DEVICE || !(out->mem_peak > cap))
        return APS_REASON_NONE;
    const aps_stage_estimate *w = &out->stages[out->worst_stage];
    int big = largest_category(w);
    aps_fmt(out->reason_msg, sizeof out->reason_msg,
            "stage %lld of %lld needs %.2f GiB of device memory in use > the "
            "device's %.2f GiB less the margin, %.2f GiB (largest: %s %.2f GiB)",
            (long long)out->worst_stage + 1, (long long)p,
            out->mem_peak / APS_GIB, c->device.memory_bytes / APS_GIB,
            cap / APS_GIB, aps_mem_category_name((aps_mem_category)big),
            w->mem[big] / APS_GIB);
    return APS_REASON_MEMORY_LIMIT;
}

aps_reason aps_check_memory_limit(const aps_cluster *c, const aps_training *t,
                                  aps_estimate *out, int64_t p)
{
    if (!(out->mem_limited > out->mem_limit))
        return check_device_capacity(c, t, out, p);
    int64_t worst = out->worst_stage;
    const aps_stage_estimate *w = &out->stages[worst];
    int big = largest_category(w);
    int dec = APS_MEM_MSG_MIN_DECIMALS;
    while (dec < APS_MEM_MSG_MAX_DECIMALS &&
           gib_rounded(out->mem_limited, dec) <= gib_rounded(out->mem_limit, dec))
        dec++;
    aps_fmt(out->reason_msg, sizeof out->reason_msg,
            "stage %lld of %lld needs %.*f GiB%s > memory limit %.*f GiB "
            "(largest: %s %.2f GiB)",
            (long long)worst + 1, (long long)p, dec, out->mem_limited / APS_GIB,
            limited_kind(t), dec, out->mem_limit / APS_GIB,
            aps_mem_category_name((aps_mem_category)big), w->mem[big] / APS_GIB);
    return APS_REASON_MEMORY_LIMIT;
}
