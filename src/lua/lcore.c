/*
 * src/lua/lcore.c -- the `apsearch.core` Lua module: the C estimators as
 * seen from Lua.
 *
 *   local core = require "apsearch.core"
 *   local ctx  = core.context(model, cluster, training)
 *   local r    = ctx:evaluate{tp_degree = 2, pp_degree = 2, micro_batch_size = 1}
 *
 * Units are those of the core (apsearch/types.h): bytes, seconds, FLOPs,
 * FLOP/s, as Lua numbers; counts (layers, degrees, batches) as Lua integers.
 * Table field names are the C struct field names; enums are strings.
 *
 * Two error channels (ARCHITECTURE.md): misuse -- a wrong type, an unknown
 * field, an input that fails aps_*_validate() -- raises a Lua error whose
 * message starts with the table path and field ("model.hidden_size: ...");
 * an infeasible strategy is data: feasible = false, reason = code string,
 * message = the numbers.
 *
 * Memory: every C struct lives on the C stack of the call or inside the
 * context userdata, and tables are converted completely before the core
 * runs, so a raised error (longjmp) never leaks C memory.
 */
#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "apsearch/core.h"
#include "lconvert.h"

/** The validated inputs one search shares, plus the default strategy every
 *  candidate table is laid over. */
typedef struct {
    aps_model model;
    aps_cluster cluster;
    aps_training training;
    aps_strategy proto; /* aps_strategy_defaults() */
} apsl_context;

/* ------------------------------------------------------------- helpers */

/* Raises the message of a failed aps_*_validate() prefixed with the table:
 *   "hidden_size: must be > 0 (got 0)"  -> "model.hidden_size: ..."
 *   "memory_bytes: ..." (a device field) -> "cluster.device.memory_bytes: ..."
 *   "model.x: ..." (already prefixed)    -> unchanged
 *   anything else                         -> "model: ..." */
static int raise_validation(lua_State *L, const char *table, const char *err)
{
    size_t tl = strlen(table), n = 0;
    if (err == NULL || err[0] == '\0')
        return apsl_error(L, "%s: invalid (no message from the core)", table);
    if (strncmp(err, table, tl) == 0 && (err[tl] == '.' || err[tl] == ':'))
        return apsl_error(L, "%s", err);
    while (err[n] != '\0' &&
           (islower((unsigned char)err[n]) || isdigit((unsigned char)err[n]) ||
            err[n] == '_' || err[n] == '.' || err[n] == '[' || err[n] == ']'))
        n++;
    if (n > 0 && err[n] == ':') {
        if (strcmp(table, "cluster") == 0 && apsl_is_device_field(err, n))
            return apsl_error(L, "cluster.device.%s", err);
        return apsl_error(L, "%s.%s", table, err);
    }
    return apsl_error(L, "%s: %s", table, err);
}

static apsl_context *check_context(lua_State *L, int idx)
{
    return (apsl_context *)luaL_checkudata(L, idx, APSL_CONTEXT_MT);
}

/* --------------------------------------------------------- module functions */

/**
 * core.model_params(model) -> {embedding, per_layer, layers, final_norm,
 *                              output_layer, total, active; MoE: moe_layers,
 *                              per_moe_layer, per_moe_layer_active,
 *                              moe_pattern (per layer 1: routed experts,
 *                              0: dense FFN; aps_model_is_moe_layer),
 *                              dropless_graph_scope (what whole-layer CUDA
 *                              graphs of it capture when dropless,
 *                              aps_cuda_graph_dropless_modules); MTP:
 *                              mtp, mtp_active; hybrid Mamba-2: mamba_layers,
 *                              per_mamba_layer, attention_layers,
 *                              per_attention_layer, mlp_layers,
 *                              per_mlp_layer}
 * Parameter counts (numbers of parameters, not bytes) of the whole model,
 * no TP/PP, unpadded vocabulary (aps_model_param_counts).  model is a model
 * table (fields of aps_model).  Raises on a bad table or a model that fails
 * aps_model_validate ("model.<field>: ...").
 */
/*
 * core.chunk_layers(num_layers, strategy) -> array of layers per model
 * chunk in schedule order (chunk j on pipeline rank (j - 1) mod p), as the
 * estimator splits them (aps_chunk_layers: stage_partition, the
 * pipeline_split rule, the even split plus layer_offset) | nil, reason
 * code, message.  strategy: a strategy table (pp_degree, vpp_degree,
 * pipeline_split, stage_partition, layer_offset, ...).  The one place the
 * split rules live for the launch configs, validate and the report.
 */
static int l_chunk_layers(lua_State *L)
{
    lua_Integer layers = luaL_checkinteger(L, 1);
    if (layers < 1 || layers > (INT64_C(1) << 20))
        return luaL_error(L, "chunk_layers: num_layers must be in [1, 2^20] (got %I)",
                          (LUAI_UACINT)layers);
    aps_model m;
    aps_model_defaults(&m);
    m.num_layers = (int64_t)layers; /* the split reads the layer count only */
    aps_strategy proto, s;
    aps_strategy_defaults(&proto);
    apsl_check_strategy(L, 2, &proto, &s);
    int64_t chunks[APS_MAX_STAGES];
    char msg[APS_REASON_LEN] = "";
    aps_reason r = aps_chunk_layers(&m, &s, chunks, msg, sizeof msg);
    if (r != APS_REASON_NONE) {
        lua_pushnil(L);
        lua_pushstring(L, aps_reason_code(r));
        lua_pushstring(L, msg);
        return 3;
    }
    int64_t n = s.pp_degree * s.vpp_degree;
    lua_createtable(L, (int)n, 0);
    for (int64_t j = 0; j < n; j++) {
        lua_pushinteger(L, (lua_Integer)chunks[j]);
        lua_rawseti(L, -2, (lua_Integer)j + 1);
    }
    return 1;
}

/*
 * core.split_by_rule(strategy) -> true when the estimator splits the
 * layers by the strategy's pipeline_split rule (aps_split_by_rule: no
 * stage_partition, layer_offset or balancing in its place), the split a
 * launch config may write with the framework's own split flags.
 */
static int l_split_by_rule(lua_State *L)
{
    aps_strategy proto, s;
    aps_strategy_defaults(&proto);
    apsl_check_strategy(L, 1, &proto, &s);
    lua_pushboolean(L, aps_split_by_rule(&s));
    return 1;
}

static int l_model_params(lua_State *L)
{
    aps_model m;
    aps_param_counts pc;
    char err[APS_REASON_LEN];
    apsl_check_model(L, 1, &m);
    if (aps_model_validate(&m, err, sizeof err) != APS_OK)
        return raise_validation(L, "model", err);
    aps_model_param_counts(&m, &pc);
    lua_createtable(L, 0, 12);
    apsl_set_number(L, "embedding", pc.embedding);
    apsl_set_number(L, "per_layer", pc.per_layer);
    apsl_set_number(L, "layers", pc.layers);
    apsl_set_number(L, "final_norm", pc.final_norm);
    apsl_set_number(L, "output_layer", pc.output_layer);
    apsl_set_number(L, "total", pc.total);
    apsl_set_number(L, "active", pc.active);
    if (pc.moe_layers > 0) {
        apsl_set_number(L, "moe_layers", pc.moe_layers);
        apsl_set_number(L, "per_moe_layer", pc.per_moe_layer);
        apsl_set_number(L, "per_moe_layer_active", pc.per_moe_layer_active);
        lua_createtable(L, (int)m.num_layers, 0); /* moe_pattern */
        for (int64_t i = 0; i < m.num_layers; i++) {
            lua_pushinteger(L, aps_model_is_moe_layer(&m, i) ? 1 : 0);
            lua_rawseti(L, -2, (lua_Integer)i + 1);
        }
        lua_setfield(L, -2, "moe_pattern");
        apsl_push_graph_scope(L, (int)aps_cuda_graph_dropless_modules(&m));
        lua_setfield(L, -2, "dropless_graph_scope");
    }
    if (pc.mamba_layers > 0 || pc.attention_layers > 0 || pc.mlp_layers > 0) {
        apsl_set_number(L, "mamba_layers", pc.mamba_layers);
        apsl_set_number(L, "per_mamba_layer", pc.per_mamba_layer);
        apsl_set_number(L, "attention_layers", pc.attention_layers);
        apsl_set_number(L, "per_attention_layer", pc.per_attention_layer);
        apsl_set_number(L, "mlp_layers", pc.mlp_layers);
        apsl_set_number(L, "per_mlp_layer", pc.per_mlp_layer);
    }
    if (pc.mtp > 0) {
        apsl_set_number(L, "mtp", pc.mtp);
        apsl_set_number(L, "mtp_active", pc.mtp_active);
    }
    return 1;
}

/**
 * core.device_presets() -> { {name = "H100-SXM-80GB", source = "..."}, ... }
 * The built-in device presets in core order; source cites the datasheet.
 */
static int l_device_presets(lua_State *L)
{
    size_t n = aps_device_preset_count();
    lua_createtable(L, (int)n, 0);
    for (size_t i = 0; i < n; i++) {
        lua_createtable(L, 0, 2);
        lua_pushstring(L, aps_device_preset_name(i));
        lua_setfield(L, -2, "name");
        lua_pushstring(L, aps_device_preset_source(i));
        lua_setfield(L, -2, "source");
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    return 1;
}

/**
 * core.device_preset(name) -> device table (every aps_device field: name,
 * memory_bytes [B], peak_flops_* [FLOP/s], *_bandwidth [B/s], *_latency [s],
 * cuda_context_bytes, nccl_comm_bytes [B], efficiencies [fraction], the
 * GEMM shape terms gemm_half_dim, gemm_tile_m, gemm_tile_n [elements],
 * sm_count, gemm_fixed_seconds [s]).  name is case-insensitive.  Raises on an unknown name,
 * listing the known ones.
 */
static int l_device_preset(lua_State *L)
{
    aps_device d;
    luaL_checkstring(L, 1);
    apsl_check_device(L, 1, &d, "device");
    apsl_push_device(L, &d);
    return 1;
}

/**
 * core.gemm_seconds(device, precision, M, N, K) -> seconds
 * The time the estimate prices one GEMM of M x K by K x N at
 * (aps_gemm_time, src/core/gemm.c): device a preset name or a device
 * table (as a policy's cluster.device), precision one of bf16, fp16, fp8,
 * mxfp8, nvfp4, M N K element counts (finite, >= 0; 0 s when one is 0).
 * Raises on an unknown device or precision and on a negative, infinite or
 * NaN dimension.
 */
static int l_gemm_seconds(lua_State *L)
{
    static const char *const names[] = {"bf16", "fp16", "fp8", "mxfp8",
                                        "nvfp4", NULL};
    static const aps_precision precs[] = {APS_PREC_BF16, APS_PREC_FP16,
                                          APS_PREC_FP8, APS_PREC_MXFP8,
                                          APS_PREC_NVFP4};
    aps_device d;
    apsl_check_device(L, 1, &d, "device");
    aps_precision p = precs[luaL_checkoption(L, 2, NULL, names)];
    double dim[3];
    for (int i = 0; i < 3; i++) {
        dim[i] = luaL_checknumber(L, 3 + i);
        if (!(dim[i] >= 0 && dim[i] < HUGE_VAL))
            return luaL_argerror(L, 3 + i, "a finite number >= 0 expected");
    }
    lua_pushnumber(L, aps_gemm_time(&d, p, dim[0], dim[1], dim[2]));
    return 1;
}

/**
 * core.attention_seconds(device, flash, backward, batch, heads, queries,
 *                        keys, dh, dv, causal) -> seconds
 * The time the estimate prices one attention core at
 * (aps_attention_core_time): device a preset name or a device table,
 * flash a fused kernel (else the unfused batched GEMMs), backward the
 * backward pass; batch, query heads, queries and keys per sequence, the
 * Q/K and V head widths (finite, >= 0); causal halves the keys a query
 * sees (the continuous S / 2 of aps_attention_keys).  Forward FLOPs:
 * 2 x batch x queries x keys seen x heads x (dh + dv).  Raises on a bad
 * device or a negative, infinite or NaN size.
 */
static int l_attention_seconds(lua_State *L)
{
    aps_device d;
    apsl_check_device(L, 1, &d, "device");
    bool flash = lua_toboolean(L, 2), backward = lua_toboolean(L, 3);
    double v[6];
    for (int i = 0; i < 6; i++) {
        v[i] = luaL_checknumber(L, 4 + i);
        if (!(v[i] >= 0 && v[i] < HUGE_VAL))
            return luaL_argerror(L, 4 + i, "a finite number >= 0 expected");
    }
    double keys = lua_toboolean(L, 10) ? 0.5 * v[3] : v[3];
    double flops = 2.0 * v[0] * v[2] * keys * v[1] * (v[4] + v[5]);
    lua_pushnumber(L, aps_attention_core_time(&d, flash, backward, flops));
    return 1;
}

/**
 * core.defaults(kind) -> table
 * The defaults the core fills in before a table is laid over them, kind one
 * of "model" (sizes 0), "training" or "strategy" (as ctx:inputs() and
 * result.strategy show them).  Raises on another kind.
 */
static int l_defaults(lua_State *L)
{
    static const char *const kinds[] = {"model", "training", "strategy", NULL};
    switch (luaL_checkoption(L, 1, NULL, kinds)) {
    case 0: {
        aps_model m;
        aps_model_defaults(&m);
        apsl_push_model(L, &m);
        break;
    }
    case 1: {
        aps_training t;
        aps_training_defaults(&t);
        apsl_push_training(L, &t);
        break;
    }
    default: {
        aps_strategy s;
        aps_strategy_defaults(&s);
        apsl_push_strategy(L, &s);
        break;
    }
    }
    return 1;
}

/**
 * core.recipe(training) -> table
 * The recipe settings the framework runs a training table with
 * (aps_recipe_resolve: the framework profile's defaults under the table's
 * own settings), as ctx:estimate() gives them in `recipe`: the launch
 * writers read what the estimate ran from it rather than restate each
 * framework's defaults.  Raises on a wrong type, unknown field or enum
 * string, as core.context does for its training table.
 */
static int l_recipe(lua_State *L)
{
    aps_training t;
    apsl_check_training(L, 1, &t);
    apsl_push_recipe(L, &t);
    return 1;
}

/**
 * core.context(model, cluster, training) -> apsearch.context userdata
 * Converts the three tables (field names of aps_model, aps_cluster,
 * aps_training; cluster.device a preset name, {base = preset, overrides...}
 * or a table with every device field) and validates them with
 * aps_*_validate.  Raises "<table>.<field>: <what is wrong> (got <value>)"
 * on a wrong type, unknown field, unknown enum string or failed validation.
 */
static int l_context(lua_State *L)
{
    char err[APS_REASON_LEN];
    apsl_context *ctx;
    luaL_checktype(L, 1, LUA_TTABLE);
    luaL_checktype(L, 2, LUA_TTABLE);
    luaL_checktype(L, 3, LUA_TTABLE);
    ctx = (apsl_context *)lua_newuserdatauv(L, sizeof *ctx, 0);
    memset(ctx, 0, sizeof *ctx);
    luaL_setmetatable(L, APSL_CONTEXT_MT);
    apsl_check_model(L, 1, &ctx->model);
    if (aps_model_validate(&ctx->model, err, sizeof err) != APS_OK)
        return raise_validation(L, "model", err);
    apsl_check_cluster(L, 2, &ctx->cluster);
    if (aps_cluster_validate(&ctx->cluster, err, sizeof err) != APS_OK)
        return raise_validation(L, "cluster", err);
    apsl_check_training(L, 3, &ctx->training);
    if (aps_training_validate(&ctx->training, err, sizeof err) != APS_OK)
        return raise_validation(L, "training", err);
    aps_status st = aps_inputs_validate(&ctx->model, &ctx->cluster,
                                        &ctx->training, err, sizeof err);
    if (st == APS_ENOTIMPL)
        return apsl_error(L, "NotImplemented: %s", err);
    if (st != APS_OK)
        return apsl_error(L, "%s", err);
    aps_strategy_defaults(&ctx->proto);
    return 1;
}

/* ------------------------------------------------------- context methods */

/**
 * ctx:set_cluster(cluster) -> ctx
 * Reads the cluster table again into the context, checked as core.context
 * checks it (the cluster alone, then with the context's model and
 * training): what one step of a calibration fit changes (device
 * efficiencies), without reading the model and training again
 * (lua/apsearch/calibrate.lua, `validate --cv`).  Raises as core.context
 * does; the context keeps its cluster when it raises.
 */
static int ctx_set_cluster(lua_State *L)
{
    char err[APS_REASON_LEN];
    apsl_context *ctx = check_context(L, 1);
    aps_cluster c;
    luaL_checktype(L, 2, LUA_TTABLE);
    apsl_check_cluster(L, 2, &c);
    if (aps_cluster_validate(&c, err, sizeof err) != APS_OK)
        return raise_validation(L, "cluster", err);
    aps_status st = aps_inputs_validate(&ctx->model, &c, &ctx->training,
                                        err, sizeof err);
    if (st == APS_ENOTIMPL)
        return apsl_error(L, "NotImplemented: %s", err);
    if (st != APS_OK)
        return apsl_error(L, "%s", err);
    ctx->cluster = c;
    lua_settop(L, 1);
    return 1;
}

/* Reads the strategy table at sidx into *s; raises a one-line
 * "strategy: ..." error when its pipeline schedule is over the size limit
 * (aps_check_schedule_size), before the estimate allocates it. */
static void check_strategy(lua_State *L, apsl_context *ctx, int sidx,
                           aps_strategy *s)
{
    char msg[APS_REASON_LEN];
    apsl_check_strategy(L, sidx, &ctx->proto, s);
    if (!aps_check_schedule_size(&ctx->training, s, msg, sizeof msg))
        apsl_error(L, "strategy: %s", msg);
}

/* Raises the "strategy: ..." error of an estimate that returned st (not
 * APS_OK): out of memory says whose limit it is. */
static int estimate_failed(lua_State *L, aps_status st)
{
    if (st == APS_ENOMEM)
        return apsl_error(L, "strategy: estimate: out of memory (ENOMEM: the "
                             "process's memory limit, e.g. ulimit -v)");
    return apsl_error(L, "strategy: estimate failed (%s)",
                      aps_status_name(st));
}

/* Runs the estimate of the strategy table at sidx; *s and *e are the
 * caller's stack memory. */
static void run_estimate(lua_State *L, apsl_context *ctx, int sidx,
                         aps_strategy *s, aps_estimate *e)
{
    /* a schedule past the size limit is the estimate's NOT_MODELLED
     * (aps_check_all), refused before anything is allocated */
    apsl_check_strategy(L, sidx, &ctx->proto, s);
    aps_status st = aps_estimate_run(&ctx->model, &ctx->cluster,
                                     &ctx->training, s, e);
    if (st != APS_OK)
        estimate_failed(L, st);
}

/**
 * ctx:evaluate(strategy [, out]) -> {feasible, reason, message, mem_limited,
 *     step_time, mem_peak, tokens_per_s_per_gpu, mfu, micro_batch_num,
 *     worst_stage, layout}
 * The light result of the search hot loop.  strategy: a strategy table
 * (fields of aps_strategy, plus the aliases hsdp_shard_degree and
 * hsdp_replicate_degree); missing fields take the core defaults.
 * feasible: boolean; reason: code string ("TP_DIVISIBILITY", ...) and
 * message: the numbers, both nil when feasible; mem_limited [bytes, with a
 * reason only]: the worst stage's figure the memory limit bounds (device
 * memory in use, or max reserved / allocated under a limit given); step_time [s]; mem_peak
 * [bytes, worst stage]; tokens_per_s_per_gpu [tokens/s]; mfu [fraction];
 * micro_batch_num [count]; worst_stage [1-based, nil when no stage was
 * estimated]; layout [integer: a hash of the resolved micro-batch count and
 * per-stage layers and recomputed layers, equal for candidates that run
 * the same way].  The numbers are 0 when a cheap check failed before the
 * estimate.  If out (a table) is given it is filled and returned instead
 * of a new table (stale reason/message are cleared).  Raises on a bad
 * strategy table (unknown field, wrong type, array length != pp_degree).
 */
/** FNV-1a (64-bit) over what a strategy resolved to: the recompute mode,
 *  the micro-batch count and each stage's layers and recomputed layers,
 *  and under uniform recompute each stage's group size (groups of 1 and 2
 *  recompute the same layers but keep different inputs).
 *  Two candidates written differently (an even and a "balanced" split that
 *  comes out even, a recompute count above the stage's layers, full
 *  recompute of no layer and none, micro_batch_num 0 and its derived
 *  value) resolve to the same layout. */
static lua_Integer layout_signature(const aps_strategy *s,
                                    const aps_estimate *e)
{
    uint64_t h = UINT64_C(14695981039346656037);
    int64_t v[3 * APS_MAX_STAGES + 3];
    size_t n = 0;
    int64_t recomputed = 0;
    for (int64_t i = 0; i < e->num_stages && i < APS_MAX_STAGES; i++)
        recomputed += e->stages[i].recompute_layers;
    v[n++] = (s->layer_recompute == APS_RECOMPUTE_FULL && recomputed == 0)
                 ? APS_RECOMPUTE_NONE : (int64_t)s->layer_recompute;
    v[n++] = e->micro_batch_num;
    v[n++] = e->num_stages;
    bool uniform = s->layer_recompute == APS_RECOMPUTE_FULL &&
                   s->recompute_method == APS_RECOMPUTE_UNIFORM;
    for (int64_t i = 0; i < e->num_stages && i < APS_MAX_STAGES; i++) {
        v[n++] = e->stages[i].num_layers;
        v[n++] = e->stages[i].recompute_layers;
        /* the group as memory.c takes it: recompute_num_layers, or 1 */
        v[n++] = (uniform && e->stages[i].recompute_layers > 0)
                     ? (s->recompute_num_layers[i] > 0
                            ? s->recompute_num_layers[i] : 1)
                     : 0;
    }
    const unsigned char *p = (const unsigned char *)v;
    for (size_t i = 0; i < n * sizeof v[0]; i++) {
        h ^= p[i];
        h *= UINT64_C(1099511628211);
    }
    return (lua_Integer)h;
}

static int ctx_evaluate(lua_State *L)
{
    apsl_context *ctx = check_context(L, 1);
    aps_strategy s;
    aps_estimate e;
    if (!lua_isnoneornil(L, 3))
        luaL_checktype(L, 3, LUA_TTABLE);
    int reuse = lua_type(L, 3) == LUA_TTABLE;
    run_estimate(L, ctx, 2, &s, &e);
    if (reuse)
        lua_settop(L, 3);
    else
        lua_createtable(L, 0, 9);
    lua_pushboolean(L, e.feasible);
    lua_setfield(L, -2, "feasible");
    if (!e.feasible || e.reason != APS_REASON_NONE) {
        lua_pushstring(L, aps_reason_code(e.reason));
        lua_setfield(L, -2, "reason");
        lua_pushstring(L, e.reason_msg);
        lua_setfield(L, -2, "message");
        /* what the limit bounds (max reserved under a limit given): how
         * far a strategy is from fitting; read with the reason only */
        apsl_set_number(L, "mem_limited", e.mem_limited);
    } else if (reuse) {
        lua_pushnil(L);
        lua_setfield(L, -2, "reason");
        lua_pushnil(L);
        lua_setfield(L, -2, "message");
        lua_pushnil(L);
        lua_setfield(L, -2, "mem_limited");
    }
    apsl_set_number(L, "step_time", e.step_time);
    apsl_set_number(L, "mem_peak", e.mem_peak);
    apsl_set_number(L, "tokens_per_s_per_gpu", e.tokens_per_s_per_gpu);
    apsl_set_number(L, "mfu", e.mfu);
    lua_pushinteger(L, (lua_Integer)e.micro_batch_num);
    lua_setfield(L, -2, "micro_batch_num");
    if (e.worst_stage >= 0 && e.num_stages > 0)
        lua_pushinteger(L, (lua_Integer)e.worst_stage + 1);
    else
        lua_pushnil(L);
    lua_setfield(L, -2, "worst_stage");
    lua_pushinteger(L, layout_signature(&s, &e));
    lua_setfield(L, -2, "layout");
    return 1;
}

/**
 * ctx:estimate(strategy) -> full result table:
 *   feasible, reason, message (as evaluate), micro_batch_num (per step),
 *   gradient_accumulation_steps (pipeline schedules per step,
 *   training.local_batch_size), devices_used, num_stages [counts]; vocab_padded, params_total [parameters];
 *   worst_stage [1-based, nil when no stage was estimated]; mem_peak,
 *   mem_limit [bytes]; step_time [s]; tokens_per_s, tokens_per_s_per_gpu;
 *   model_flops_per_step, hardware_flops_per_step [FLOP]; model_tflops_per_gpu
 *   [1e12 FLOP/s]; mfu, hfu [fractions];
 *   memory_breakdown = {params, grads, optimizer_states, activations,
 *     comm_buffers = {tp, fsdp, dp, pp, cp, total}, logits_loss, reserved,
 *     total} [bytes, worst stage];
 *   performance_breakdown = {<category> = {total, exposed}, ...} [s per step]
 *     for the categories of aps_perf_category_name();
 *   recipe = the recipe settings as the framework runs them
 *     (aps_recipe_resolve): grad_reduce_in_fp32, fp8_param_gather,
 *     compile_loss [booleans], grad_bytes, grad_reduce_bytes,
 *     logits_bytes [bytes per parameter / element];
 *   cuda_graph_scope = with training.cuda_graphs, what the graphs the step
 *     is priced with capture ("full_iteration" under full recompute of a
 *     layer or CPU offloading whatever the training's scope; else its
 *     scope);
 *   stages = { {stage [1-based], first_layer [0-based], num_layers,
 *     recompute_layers, params, inflight_microbatches, memory_breakdown,
 *     time_fwd, time_bwd, host_fwd, host_bwd [s per micro-batch]}, ... };
 *   strategy = the normalized strategy (every field, defaults filled).
 * Raises on a bad strategy table, like evaluate.
 */
static int ctx_estimate(lua_State *L)
{
    apsl_context *ctx = check_context(L, 1);
    aps_strategy s;
    aps_estimate e;
    run_estimate(L, ctx, 2, &s, &e);
    apsl_push_estimate(L, &e, &s);
    apsl_push_recipe(L, &ctx->training);
    lua_setfield(L, -2, "recipe");
    /* what the CUDA graphs the step was priced with capture: the whole
     * iteration under full recompute (of at least one layer) or CPU
     * offloading, whatever the training's scope (aps_estimate_graph_scope) */
    if (ctx->training.cuda_graphs) {
        apsl_push_graph_scope(
            L, (int)aps_estimate_graph_scope(&ctx->training, &s, &e));
        lua_setfield(L, -2, "cuda_graph_scope");
    }
    return 1;
}

/** Most ops ctx:timeline stores while simulating (2^18 x 40 bytes = 10
 *  MiB): each rank's first and last 2^17 / pp_degree; a rank that runs
 *  more has its middle left out (aps_timeline). */
#define APSL_TIMELINE_STORE (INT64_C(1) << 18)
/** Most ops ctx:timeline returns (max_ops). */
#define APSL_TIMELINE_MAX_OPS (INT64_C(1) << 16)

/* Pushes the ops of rank i that overlap [0, head] or [tail, step] as an
 * array of {kind, mb, stage, chunk, start, end, overlap}; adds their
 * number to *n. */
static void push_rank_ops(lua_State *L, const aps_timeline *tl, int64_t i,
                          bool cut, double head, double tail, int64_t *n)
{
    static const char *const kinds[] = {"F", "B", "I", "W"};
    int64_t k = 0;
    lua_createtable(L, 0, 0);
    for (int64_t q = 0; q < aps_timeline_kept(tl, i); q++) {
        const aps_schedule_event *e = aps_timeline_event(tl, i, q);
        if (cut && !(e->start < head || e->end > tail))
            continue;
        lua_createtable(L, 0, 7);
        lua_pushstring(L, kinds[e->kind & 3]);
        lua_setfield(L, -2, "kind");
        lua_pushinteger(L, (lua_Integer)e->mb + 1);
        lua_setfield(L, -2, "mb");
        lua_pushinteger(L, (lua_Integer)e->stage + 1);
        lua_setfield(L, -2, "stage");
        lua_pushinteger(L, (lua_Integer)e->chunk + 1);
        lua_setfield(L, -2, "chunk");
        apsl_set_number(L, "start", e->start);
        apsl_set_number(L, "end", e->end);
        if (e->overlap) {
            lua_pushboolean(L, 1);
            lua_setfield(L, -2, "overlap");
        }
        lua_rawseti(L, -2, (lua_Integer)++k);
    }
    *n += k;
}

/**
 * ctx:timeline(strategy, max_ops) -> table | nil, code, message
 * The pipeline schedule the estimate of strategy simulates, op by op
 * (aps_estimate_timeline), with at most about max_ops ops (2 <= max_ops
 * <= 2^16): all of them when they fit, else those of a window at the start
 * and one at the end of the step, each holding max_ops / 2
 * (aps_timeline_select; while simulating each rank stores its first and
 * last 2^17 / pp_degree ops, and the windows stay within those).
 * Fields: pp_schedule (name), pp_degree, vpp_degree, micro_batch_num
 * [counts]; step [s, the pipeline: first forward to last backward],
 * busy_max [s, the busiest rank's compute], bubble [s, step - busy_max],
 * slowest_rank [1-based]; windows = array of {from, to} [s], one ({0,
 * step}) or two; ops [count, all ranks], ops_kept [count returned];
 * ranks = array per rank of {rank
 * [1-based], busy [s], ops [count run], events = array of the ops
 * overlapping a window in time order, {kind = "F"
 * forward | "B" full backward | "I" input-gradient backward | "W" weight
 * gradient, mb, stage (virtual stage, model order), chunk (of the rank)
 * [1-based], start, end [s], overlap = true on the two halves of a
 * DualPipeV OVERLAP_F_B pair}}.
 * nil, code, message when nothing was simulated: the reason code and
 * message of a refused strategy (a check, MEMORY_LIMIT: the closed form
 * prices its bubble), or "NO_PIPELINE" for pp_degree 1.  Raises on a bad
 * strategy table or max_ops.
 */
static int ctx_timeline(lua_State *L)
{
    apsl_context *ctx = check_context(L, 1);
    aps_strategy s;
    check_strategy(L, ctx, 2, &s);
    lua_Integer max_ops = luaL_checkinteger(L, 3);
    if (max_ops < 2 || max_ops > APSL_TIMELINE_MAX_OPS)
        return apsl_error(L, "timeline: max_ops must be in [2, %d] (got %I)",
                          (int)APSL_TIMELINE_MAX_OPS, (LUAI_UACINT)max_ops);
    int64_t p = s.pp_degree > 0 && s.pp_degree <= APS_MAX_STAGES
                    ? s.pp_degree : 1;
    /* a rank runs at most 3 ops per model chunk and micro-batch (F, I, W):
     * store them all when that fits */
    int64_t m = s.micro_batch_num, d = s.micro_batch_size * s.dp_degree *
                                       s.fsdp_degree;
    if (m <= 0)
        m = d > 0 ? ctx->training.global_batch_size / d : 1;
    int64_t keep = APSL_TIMELINE_STORE / (2 * p);
    if (m > 0 && s.vpp_degree > 0 && s.vpp_degree <= APS_MAX_STAGES &&
        (3 * m * s.vpp_degree + 1) / 2 < keep)
        keep = (3 * m * s.vpp_degree + 1) / 2;
    aps_timeline tl;
    memset(&tl, 0, sizeof tl);
    tl.keep = keep;
    tl.ranks_cap = p;
    tl.events = lua_newuserdatauv(L, (size_t)(2 * p * keep) *
                                         sizeof(aps_schedule_event), 0);
    aps_estimate e;
    aps_status st = aps_estimate_timeline(&ctx->model, &ctx->cluster,
                                          &ctx->training, &s, &tl, &e);
    if (st != APS_OK)
        return estimate_failed(L, st);
    if (!tl.recorded) {
        lua_pushnil(L);
        if (e.reason != APS_REASON_NONE) {
            lua_pushstring(L, aps_reason_code(e.reason));
            lua_pushstring(L, e.reason_msg);
        } else {
            lua_pushstring(L, "NO_PIPELINE");
            lua_pushstring(L, "pp_degree = 1: no pipeline schedule");
        }
        return 3;
    }
    lua_createtable(L, 0, 13);
    lua_pushstring(L, aps_pp_schedule_name((aps_pp_schedule)tl.schedule));
    lua_setfield(L, -2, "pp_schedule");
    lua_pushinteger(L, (lua_Integer)tl.p);
    lua_setfield(L, -2, "pp_degree");
    lua_pushinteger(L, (lua_Integer)tl.v);
    lua_setfield(L, -2, "vpp_degree");
    lua_pushinteger(L, (lua_Integer)tl.m);
    lua_setfield(L, -2, "micro_batch_num");
    apsl_set_number(L, "step", tl.result.step);
    apsl_set_number(L, "busy_max", tl.result.busy_max);
    apsl_set_number(L, "bubble", tl.result.bubble);
    lua_pushinteger(L, (lua_Integer)tl.result.slowest_rank + 1);
    lua_setfield(L, -2, "slowest_rank");
    double head, tail;
    bool cut = aps_timeline_select(&tl, tl.result.step, max_ops, &head,
                                   &tail);
    lua_createtable(L, cut ? 2 : 1, 0);
    double win[2][2] = {{0.0, cut ? head : tl.result.step},
                        {tail, tl.result.step}};
    for (int w = 0; w < (cut ? 2 : 1); w++) {
        lua_createtable(L, 2, 0);
        lua_pushnumber(L, win[w][0]);
        lua_rawseti(L, -2, 1);
        lua_pushnumber(L, win[w][1]);
        lua_rawseti(L, -2, 2);
        lua_rawseti(L, -2, w + 1);
    }
    lua_setfield(L, -2, "windows");
    int64_t ops = 0, kept = 0;
    lua_createtable(L, (int)tl.p, 0);
    for (int64_t i = 0; i < tl.p; i++) {
        ops += tl.count[i];
        lua_createtable(L, 0, 4);
        lua_pushinteger(L, (lua_Integer)i + 1);
        lua_setfield(L, -2, "rank");
        apsl_set_number(L, "busy", tl.busy[i]);
        lua_pushinteger(L, (lua_Integer)tl.count[i]);
        lua_setfield(L, -2, "ops");
        push_rank_ops(L, &tl, i, cut, head, tail, &kept);
        lua_setfield(L, -2, "events");
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "ranks");
    lua_pushinteger(L, (lua_Integer)ops);
    lua_setfield(L, -2, "ops");
    lua_pushinteger(L, (lua_Integer)kept);
    lua_setfield(L, -2, "ops_kept");
    return 1;
}

/**
 * ctx:check(name, strategy [, with_message]) -> true | false, code, message
 * One cheap constraint check of MODELING.md s.5 (aps_check_<name>): name is
 * "degrees", "tp", "cp", "pp", "batch", "devices", "zero", "framework" or "all".  code is
 * the reason code string ("TP_DIVISIBILITY"), message carries the numbers.
 * with_message false: the message is not formatted (issue 14: only the
 * messages kept as examples are) and false, code are returned.
 * Raises on an unknown name or a bad strategy table.
 */
static int ctx_check(lua_State *L)
{
    static const char *const names[] = {"degrees", "tp", "cp", "pp", "batch",
                                        "devices", "zero", "framework", "all",
                                        NULL};
    apsl_context *ctx = check_context(L, 1);
    int which = luaL_checkoption(L, 2, NULL, names);
    aps_strategy s;
    char msg[APS_REASON_LEN];
    aps_reason r = APS_REASON_NONE;
    apsl_check_strategy(L, 3, &ctx->proto, &s);
    bool with_message = lua_isnoneornil(L, 4) || lua_toboolean(L, 4);
    size_t n = with_message ? sizeof msg : 0; /* 0: aps_fmt writes nothing */
    msg[0] = '\0';
    switch (which) {
    case 0: r = aps_check_degrees(&s, msg, n); break;
    case 1: r = aps_check_tp(&ctx->model, &ctx->training, &s, msg, n); break;
    case 2: r = aps_check_cp(&ctx->model, &ctx->training, &s, msg, n); break;
    case 3: r = aps_check_pp(&ctx->model, &ctx->training, &s, msg, n); break;
    case 4: r = aps_check_batch(&ctx->training, &s, msg, n); break;
    case 5: r = aps_check_devices(&ctx->cluster, &s, msg, n); break;
    case 6: r = aps_check_zero(&s, msg, n); break;
    case 7: r = aps_check_framework_model(&ctx->model, &ctx->training, &s, msg, n); break;
    default:
        r = aps_check_all(&ctx->model, &ctx->cluster, &ctx->training, &s, msg,
                          n);
        break;
    }
    if (r == APS_REASON_NONE) {
        lua_pushboolean(L, 1);
        return 1;
    }
    lua_pushboolean(L, 0);
    lua_pushstring(L, aps_reason_code(r));
    if (!with_message)
        return 2;
    lua_pushstring(L, msg);
    return 3;
}

/**
 * ctx:flops(strategy, convention) -> FLOPs of one training step (all
 * devices) | nil, code, message when the strategy fails a cheap check.
 * convention: "model-causal" (the MFU convention), "model-noncausal"
 * (6N + 12 L h s per token), "hardware-causal", "hardware-noncausal"
 * (recompute counted; Narayanan et al. SC'21 eq. 3).  See
 * aps_flops_per_step().  Raises on an unknown convention or a bad table.
 */
static int ctx_flops(lua_State *L)
{
    static const char *const conv[] = {"model-causal", "model-noncausal",
                                       "hardware-causal",
                                       "hardware-noncausal", NULL};
    apsl_context *ctx = check_context(L, 1);
    aps_strategy s;
    apsl_check_strategy(L, 2, &ctx->proto, &s);
    int which = luaL_checkoption(L, 3, NULL, conv);
    char msg[APS_REASON_LEN];
    aps_reason r = aps_check_all(&ctx->model, &ctx->cluster, &ctx->training,
                                 &s, msg, sizeof msg);
    if (r != APS_REASON_NONE) {
        lua_pushnil(L);
        lua_pushstring(L, aps_reason_code(r));
        lua_pushstring(L, msg);
        return 3;
    }
    bool causal = which == 0 || which == 2;
    bool hw = which >= 2;
    lua_pushnumber(L, (lua_Number)aps_flops_per_step(&ctx->model,
                                                     &ctx->training, &s,
                                                     causal, hw));
    return 1;
}

/**
 * ctx:inputs() -> {model = {...}, cluster = {device = {...}, num_devices,
 *                  devices_per_node, nvlink_domain_size}, training = {...}}
 * The normalized inputs after validation: every struct field, defaults and
 * derived values (head_dim) filled, enums as strings, the device as a full
 * table.  core.context(t.model, t.cluster, t.training) rebuilds an equal
 * context, so a result reproduces.
 */
static int ctx_inputs(lua_State *L)
{
    apsl_context *ctx = check_context(L, 1);
    lua_createtable(L, 0, 3);
    apsl_push_model(L, &ctx->model);
    lua_setfield(L, -2, "model");
    apsl_push_cluster(L, &ctx->cluster);
    lua_setfield(L, -2, "cluster");
    apsl_push_training(L, &ctx->training);
    lua_setfield(L, -2, "training");
    return 1;
}

/** tostring(ctx) -> "apsearch.context: <model> L=.. h=.., N x <device> ..." */
static int ctx_tostring(lua_State *L)
{
    apsl_context *ctx = check_context(L, 1);
    lua_pushfstring(L,
        "%s: %s (L=%I h=%I), %I x %s (%I per node), B=%I s=%I %s",
        APSL_CONTEXT_MT, ctx->model.name[0] ? ctx->model.name : "model",
        (LUAI_UACINT)ctx->model.num_layers, (LUAI_UACINT)ctx->model.hidden_size,
        (LUAI_UACINT)ctx->cluster.num_devices, ctx->cluster.device.name,
        (LUAI_UACINT)ctx->cluster.devices_per_node,
        (LUAI_UACINT)ctx->training.global_batch_size,
        (LUAI_UACINT)ctx->training.seq_length,
        apsl_precision_name(ctx->training.precision));
    return 1;
}

/* ------------------------------------------------------------ registration */

#ifndef APS_VERSION
#define APS_VERSION "0.1.0"
#endif

static const luaL_Reg module_funcs[] = {
    {"model_params", l_model_params},
    {"chunk_layers", l_chunk_layers},
    {"split_by_rule", l_split_by_rule},
    {"device_presets", l_device_presets},
    {"device_preset", l_device_preset},
    {"gemm_seconds", l_gemm_seconds},
    {"attention_seconds", l_attention_seconds},
    {"defaults", l_defaults},
    {"recipe", l_recipe},
    {"context", l_context},
    {"fsync", apsl_fsync},
    {"getpid", apsl_getpid},
    {"realpath", apsl_realpath},
    {"monotime", apsl_monotime},
    {"isatty", apsl_isatty},
    {"rename_noreplace", apsl_rename_noreplace},
    {"rename_exchange", apsl_rename_exchange},
    {"remove_in_dir", apsl_remove_in_dir},
    {"chmod", apsl_chmod},
    {"lstat", apsl_lstat},
    {"chown", apsl_chown},
    {"read_regular", apsl_read_regular},
    {"write_file", apsl_write_file},
    {"syncfs", apsl_syncfs},
    {"dir_open", apsl_dir_open},
    {"ncpu", apsl_ncpu},
    {"pipe", apsl_pipe},
    {"fork", apsl_fork},
    {"fd_read", apsl_fd_read},
    {"fd_write", apsl_fd_write},
    {"fd_close", apsl_fd_close},
    {"poll", apsl_poll},
    {"waitpid", apsl_waitpid},
    {"kill", apsl_kill},
    {"exit_now", apsl_exit_now},
    {"fd_tmpfile", apsl_fd_tmpfile},
    {"fd_pread", apsl_fd_pread},
    {"fd_copy", apsl_fd_copy},
    {"csv_rows", apsl_csv_rows},
    {"json_encode", apsl_json_encode},
    {"json_duplicate_key", apsl_json_duplicate_key},
    {"json_decoded_bytes", apsl_json_decoded_bytes},
    {NULL, NULL}
};

static const luaL_Reg context_methods[] = {
    {"evaluate", ctx_evaluate},
    {"set_cluster", ctx_set_cluster},
    {"estimate", ctx_estimate},
    {"timeline", ctx_timeline},
    {"check", ctx_check},
    {"flops", ctx_flops},
    {"inputs", ctx_inputs},
    {NULL, NULL}
};

static const luaL_Reg context_meta[] = {
    {"__tostring", ctx_tostring},
    {"__index", NULL},   /* placeholder, set to the methods table */
    {NULL, NULL}
};

/* Pushes an array of the names f(0..n-1). */
static void push_names(lua_State *L, int n, const char *(*f)(int))
{
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        lua_pushstring(L, f(i));
        lua_rawseti(L, -2, i + 1);
    }
}

static const char *reason_name(int i) { return aps_reason_code((aps_reason)i); }
static const char *mem_name(int i)
{
    return aps_mem_category_name((aps_mem_category)i);
}
static const char *perf_name(int i)
{
    return aps_perf_category_name((aps_perf_category)i);
}

/**
 * require "apsearch.core" -> module table:
 *   model_params, device_presets, device_preset, gemm_seconds,
 *   attention_seconds, defaults, context
 *   (functions above); fsync, getpid, realpath, monotime, isatty,
 *   rename_noreplace, rename_exchange, chmod, read_regular, write_file, syncfs
 *   (lfsync.c);
 *   ncpu, pipe, fork, fd_read, fd_write, fd_close, poll, waitpid, kill,
 *   exit_now, fd_tmpfile, fd_pread, fd_copy (lproc.c); csv_rows, the row buffer of candidates.csv
 *   (lcsvrows.c); json_encode, the JSON text of a result (ljson.c);
 *   version: the CMake project version (APS_VERSION);
 *   MAX_STAGES: largest pp_degree (APS_MAX_STAGES);
 *   MAX_DEGREE: largest parallel degree or batch dimension (APS_MAX_DEGREE);
 *   reason_codes: array of every reason code, "NONE" first;
 *   memory_categories, performance_categories: arrays of the category names
 *   in core order (memory names as aps_mem_category_name gives them).
 */
LUAMOD_API int luaopen_apsearch_core(lua_State *L)
{
    luaL_checkversion(L);
    if (luaL_newmetatable(L, APSL_CONTEXT_MT)) { /* sets __name */
        luaL_setfuncs(L, context_meta, 0);
        luaL_newlibtable(L, context_methods);
        luaL_setfuncs(L, context_methods, 0);
        lua_setfield(L, -2, "__index");
    }
    lua_pop(L, 1);
    apsl_csv_rows_register(L);

    luaL_newlib(L, module_funcs);
    lua_pushinteger(L, APS_MAX_STAGES);
    lua_setfield(L, -2, "MAX_STAGES");
    lua_pushinteger(L, (lua_Integer)APS_MAX_DEGREE);
    lua_setfield(L, -2, "MAX_DEGREE");
    lua_pushstring(L, APS_VERSION);
    lua_setfield(L, -2, "version");
    push_names(L, APS_REASON_COUNT, reason_name);
    lua_setfield(L, -2, "reason_codes");
    push_names(L, APS_MEM_COUNT, mem_name);
    lua_setfield(L, -2, "memory_categories");
    push_names(L, APS_PERF_COUNT, perf_name);
    lua_setfield(L, -2, "performance_categories");
    return 1;
}
