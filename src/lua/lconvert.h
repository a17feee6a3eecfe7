/*
 * src/lua/lconvert.h -- Lua table <-> apsearch struct conversion.
 *
 * Internal to the bindings (src/lua/l*.c) and the host.  Nothing here
 * allocates C memory: every struct lives on the caller's C stack or inside a
 * userdata, so the apsl_check_* functions may raise a Lua error (longjmp)
 * without leaking anything.
 *
 * Error messages start with the table path and the field, then say what was
 * expected and what was got, e.g.
 *     model.hidden_size: expected an integer (got 2.5)
 *     training.precision: unknown value "fp7" (expected bf16, fp16, fp8)
 *     cluster: unknown field "gpus"
 *     strategy.stage_partition: length must equal pp_degree (got 3, pp_degree 4)
 *
 * Table field names are the struct field names of apsearch/types.h exactly.
 * Enums travel as strings (see the apsl_*_names tables in lconvert.c).
 */
#ifndef APSEARCH_LCONVERT_H
#define APSEARCH_LCONVERT_H

#include <stddef.h>

#include <lua.h>

#include "apsearch/core.h"
#include "apsearch/types.h"

/** Metatable name (and __name) of the context userdata. */
#define APSL_CONTEXT_MT "apsearch.context"

/** Entry point of the `apsearch.core` module (lcore.c).  Returns 1: the
 *  module table.  Used by require from a stock lua5.4 and preloaded by the
 *  host (host.c). */
LUAMOD_API int luaopen_apsearch_core(lua_State *L);

/** core.fsync, getpid, realpath, monotime, isatty, rename_noreplace,
 *  rename_exchange and chmod (lfsync.c, each documented there): for the
 *  atomic result sets of `apsearch run --out` (lua/apsearch/outdir.lua),
 *  a policy's hf() and the CLI's progress line. */
int apsl_fsync(lua_State *L);
int apsl_getpid(lua_State *L);
int apsl_realpath(lua_State *L);
int apsl_monotime(lua_State *L);
int apsl_isatty(lua_State *L);
int apsl_rename_noreplace(lua_State *L);
int apsl_rename_exchange(lua_State *L);
int apsl_chmod(lua_State *L);
int apsl_lstat(lua_State *L);
int apsl_chown(lua_State *L);
/** core.read_regular(path, max_bytes): an input file's contents, read
 *  only when it is a regular file within max_bytes (lfsync.c). */
int apsl_read_regular(lua_State *L);
/** core.write_file(path, text): a file written and closed, not synced;
 *  core.syncfs(path): the file system holding path flushed (lfsync.c). */
int apsl_write_file(lua_State *L);
int apsl_syncfs(lua_State *L);
int apsl_dir_open(lua_State *L);
/** core.remove_in_dir(dir, dev, ino, names): files removed relative to a
 *  directory opened without following links and checked to be (dev, ino)
 *  (lfsync.c). */
int apsl_remove_in_dir(lua_State *L);
/** core.ncpu, pipe, fork, fd_read, fd_write, fd_close, poll, waitpid,
 *  kill, exit_now, fd_tmpfile, fd_pread and fd_copy (lproc.c, each
 *  documented there): the worker processes of `apsearch run --jobs N`
 *  (lua/apsearch/parallel.lua) and their shares of candidates.csv. */
int apsl_ncpu(lua_State *L);
int apsl_pipe(lua_State *L);
int apsl_fork(lua_State *L);
int apsl_fd_read(lua_State *L);
int apsl_fd_write(lua_State *L);
int apsl_fd_close(lua_State *L);
int apsl_poll(lua_State *L);
int apsl_waitpid(lua_State *L);
int apsl_kill(lua_State *L);
int apsl_exit_now(lua_State *L);
int apsl_fd_tmpfile(lua_State *L);
int apsl_fd_pread(lua_State *L);
int apsl_fd_copy(lua_State *L);
/** core.csv_rows (lcsvrows.c, documented there): the row buffer of
 *  candidates.csv; apsl_csv_rows_register makes its metatable. */
int apsl_csv_rows(lua_State *L);
void apsl_csv_rows_register(lua_State *L);
/** core.json_encode (ljson.c, documented there): the JSON text of a
 *  result, keys sorted (lua/apsearch/format/json.lua). */
int apsl_json_encode(lua_State *L);
/** Pushes a CUDA graph scope (aps_cuda_graph_scope) as a policy spells it:
 *  "layer", "full_iteration", "none", or its modules joined by '+'
 *  (lconvert.c). */
void apsl_push_graph_scope(lua_State *L, int v);
/** core.json_duplicate_key (ljsondup.c, documented there): the first key
 *  a JSON object gives twice, and its line. */
int apsl_json_duplicate_key(lua_State *L);
/** core.json_decoded_bytes (ljsonsize.c, documented there): an upper
 *  estimate of the bytes decoding a JSON text allocates. */
int apsl_json_decoded_bytes(lua_State *L);

/* ------------------------------------------------------------ table -> C */

/** Reads the model table at idx into *m (aps_model_defaults first, then every
 *  field the table sets).  Does not validate ranges (aps_model_validate does).
 *  Raises on a non-table, an unknown field, a wrong type, a non-integer for
 *  an integer field, a non-finite number, an unknown enum string, a name
 *  longer than APS_NAME_LEN-1 bytes, or a Hugging Face expert key
 *  (num_local_experts, n_routed_experts, moe_num_experts > 1; the field is
 *  num_experts). */
void apsl_check_model(lua_State *L, int idx, aps_model *m);

/** Reads the cluster table at idx into *c: {device = "<preset>" |
 *  {base = "<preset>", <device field overrides>} | {<every device field>},
 *  num_devices = N, devices_per_node = G, nvlink_domain_size = D (optional,
 *  0 = one host)}.  Does not validate ranges.
 *  Raises like apsl_check_model; also on an unknown preset (listing the
 *  known ones) and on a base-less device table that misses a field. */
void apsl_check_cluster(lua_State *L, int idx, aps_cluster *c);

/** Reads a device description (preset name string or table, as in the
 *  cluster table) at idx into *d.  path names it in messages
 *  ("cluster.device"). */
void apsl_check_device(lua_State *L, int idx, aps_device *d, const char *path);

/** Reads the training table at idx into *t (aps_training_defaults first).
 *  Does not validate ranges. */
void apsl_check_training(lua_State *L, int idx, aps_training *t);

/** Reads the strategy table at idx into *s, starting from a copy of *proto
 *  (normally aps_strategy_defaults()).  One lua_next pass over the table.
 *  Accepts the aliases hsdp_shard_degree (= fsdp_degree) and
 *  hsdp_replicate_degree (= dp_degree); stage_partition and layer_offset are
 *  arrays of exactly pp_degree integers; recompute_num_layers is an integer
 *  (every stage) or such an array.  Integers must lie in [-2^31, 2^31-1].
 *  Out-of-range degrees are not errors here: the checks report them as
 *  filter reasons (data).  Raises on misuse as above. */
void apsl_check_strategy(lua_State *L, int idx, const aps_strategy *proto,
                         aps_strategy *s);

/* ------------------------------------------------------------ C -> table */

/** Push a table with every field of the struct, enums as strings. */
void apsl_push_model(lua_State *L, const aps_model *m);
void apsl_push_device(lua_State *L, const aps_device *d);
/** {device = <device table>, num_devices, devices_per_node,
 *  nvlink_domain_size}. */
void apsl_push_cluster(lua_State *L, const aps_cluster *c);
void apsl_push_training(lua_State *L, const aps_training *t);
/** Every strategy field; stage_partition, layer_offset and
 *  recompute_num_layers as arrays of min(max(pp_degree, 0), APS_MAX_STAGES)
 *  integers.  No aliases. */
void apsl_push_strategy(lua_State *L, const aps_strategy *s);

/** memory_breakdown: {params, grads, optimizer_states, activations,
 *  comm_buffers = {tp, fsdp, dp, pp, cp, total}, logits_loss, reserved,
 *  total}, bytes.  total is the sum of the categories (as computed by the
 *  core, passed in). */
void apsl_push_mem_breakdown(lua_State *L, const double mem[APS_MEM_COUNT],
                             double total);

/** The resolved recipe settings of a training config as a table
 *  (aps_recipe_resolve field names). */
void apsl_push_recipe(lua_State *L, const aps_training *t);

/** The full estimate table of ctx:estimate() (see lcore.c). */
void apsl_push_estimate(lua_State *L, const aps_estimate *e,
                        const aps_strategy *s);

/* ---------------------------------------------------------------- names */

/** Canonical enum strings; "unknown" for an out-of-range value. */
const char *apsl_mlp_name(aps_mlp v);
const char *apsl_norm_name(aps_norm v);
const char *apsl_pos_name(aps_pos v);
const char *apsl_precision_name(aps_precision v);
const char *apsl_optimizer_name(aps_optimizer v);
const char *apsl_framework_name(aps_framework v);
const char *apsl_recompute_name(aps_recompute v);
const char *apsl_cp_comm_name(aps_cp_comm v);

/** Key of memory category c inside memory_breakdown (or, for the comm
 *  buffer categories, inside memory_breakdown.comm_buffers: "tp", "fsdp",
 *  ...).  Derived from aps_mem_category_name(). */
const char *apsl_mem_key(aps_mem_category c);

/** 1 if name[0..len) is a field of aps_device (for message prefixes). */
int apsl_is_device_field(const char *name, size_t len);

/** Raises a Lua error with the formatted message (lua_pushvfstring
 *  formats) and, unlike luaL_error, no "chunk:line:" position, so the
 *  message starts with the table path.  Never returns. */
int apsl_error(lua_State *L, const char *fmt, ...);

/** Pushes a short description of the value at idx for error messages:
 *  `2.5`, `"fp7"`, `boolean true`, `table`.  Strings are cut at 40 bytes. */
const char *apsl_push_describe(lua_State *L, int idx);

/** t[k] = v for the table on top of the stack (a number). */
static inline void apsl_set_number(lua_State *L, const char *k, double v)
{
    lua_pushnumber(L, (lua_Number)v);
    lua_setfield(L, -2, k);
}

#endif /* APSEARCH_LCONVERT_H */
