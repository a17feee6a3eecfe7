--- Readable full breakdown of one strategy (the `estimate` command): the
-- strategy, feasibility, memory per device by category (GiB = 2^30 bytes),
-- time per step by category (seconds, total and exposed), throughput, and
-- every pipeline stage.
-- @module apsearch.format.breakdown
local common = require "apsearch.format.common"

local M = {}

--- Narrowest the stage table's layers column folds to (the width of two
-- ranges of three-digit layers, "100-103, 204-207"), so that the table
-- stays within 120 columns with an MoE experts column and the longest
-- memory category.
M.MIN_LAYERS_COLUMN = 16

local function f3(x) return string.format("%.3f", x or 0) end
local function g(x) return string.format("%.2f", common.gib(x)) end

--- One-line strategy description: the degrees, and each setting that is
-- not its default (a pipeline schedule other than 1F1B, a split rule, ...).
-- @tparam table s strategy
-- @tparam[opt] integer derived_mbn the micro-batch count a
--   micro_batch_num of 0 stands for
-- @treturn string
function M.strategy_line(s, derived_mbn)
  local parts = {}
  -- micro_batch_num 0 is "derived": the count the estimate derived, or left out
  if s.micro_batch_num == 0 then
    s = setmetatable({ micro_batch_num = derived_mbn or false }, { __index = s })
  end
  for _, f in ipairs({ "dp_degree", "fsdp_degree", "zero_stage", "tp_degree",
    "sequence_parallel", "pp_degree", "vpp_degree", "cp_degree",
    "micro_batch_size", "micro_batch_num", "layer_recompute", "recompute_modules" }) do
    -- sequence parallelism only exists with tensor parallelism; the
    -- selective modules only with selective recompute
    local moot = (f == "sequence_parallel" and (s.tp_degree or 1) == 1)
      or (f == "recompute_modules" and (s.layer_recompute ~= "selective" or s[f] == ""))
    if s[f] ~= nil and s[f] ~= false and not moot then parts[#parts + 1] = f .. "=" .. tostring(s[f]) end
  end
  if s.fsdp_degree and s.fsdp_degree > 1 then
    parts[#parts + 1] = "reshard_after_forward=" .. tostring(s.reshard_after_forward)
  end
  if s.cp_degree and s.cp_degree > 1 then parts[#parts + 1] = "cp_comm_type=" .. tostring(s.cp_comm_type) end
  -- mixture of experts: only set for MoE strategies
  for _, f in ipairs({ "ep_degree", "etp_degree", "moe_token_dispatcher", "moe_capacity_factor" }) do
    if s[f] ~= nil and s[f] ~= 0 then parts[#parts + 1] = f .. "=" .. tostring(s[f]) end
  end
  if s.recompute_method == "uniform" and s.layer_recompute == "full" then
    parts[#parts + 1] = "recompute_method=uniform"
  end
  if s.pipeline_split and s.pipeline_split ~= "even" and (s.pp_degree or 1) > 1 then
    parts[#parts + 1] = "pipeline_split=" .. s.pipeline_split
  end
  if s.pp_schedule and s.pp_schedule ~= "1f1b" and (s.pp_degree or 1) > 1 then
    parts[#parts + 1] = "pp_schedule=" .. s.pp_schedule
  end
  local group = common.field_value(s, "microbatch_group_size")
  if group then parts[#parts + 1] = "microbatch_group_size=" .. tostring(group) end
  -- the split and recompute arrays as every output shows them
  -- (common.field_value: omitted at their neutral or moot value)
  for _, f in ipairs({ "stage_partition", "layer_offset", "recompute_num_layers" }) do
    local v = common.field_value(s, f)
    if type(v) == "table" then
      local every_all = true
      for _, n in ipairs(v) do every_all = every_all and n == "all" end
      if every_all then v = "all" end
    end
    if type(v) == "table" then
      local x = {}
      for i, n in ipairs(v) do x[i] = tostring(n) end
      parts[#parts + 1] = f .. "=" .. table.concat(x, ":")
    elseif v ~= nil and not (f == "recompute_num_layers" and v == "all") then
      parts[#parts + 1] = f .. "=" .. tostring(v)
    end
  end
  return table.concat(parts, " ")
end

--- One-line recipe settings as the framework runs them (the estimate's
-- resolved `recipe` and the training options it does not resolve).
-- @tparam table r est.recipe
-- @tparam table t training
-- @treturn string
function M.recipe_line(r, t)
  local function on(b) return b and "on" or "off" end
  local parts = {
    ("main grads %s"):format(r.grad_reduce_in_fp32 and "fp32" or "bf16"),
    "fp8_param_gather " .. on(r.fp8_param_gather),
    "tp_comm_overlap " .. on(t.tp_comm_overlap),
    "cuda_graphs " .. on(t.cuda_graphs),
  }
  if (t.activation_offload_layers or 0) > 0 then
    parts[#parts + 1] = ("activation_offload_layers %d"):format(t.activation_offload_layers)
  end
  if t.overlap_moe_expert_parallel_comm then
    parts[#parts + 1] = "EP overlap on (one layer's activations more)"
  end
  if t.store_param_remainders then parts[#parts + 1] = "store_param_remainders on" end
  if t.bf16_weights then parts[#parts + 1] = "bf16 weights, gradients and optimizer states (no fp32 master)" end
  if t.torch_compile then parts[#parts + 1] = "loss compiled " .. (r.compile_loss and "yes" or "no") end
  if r.dropout ~= nil then parts[#parts + 1] = "dropout " .. on(r.dropout) end
  if r.expandable_segments ~= nil then
    parts[#parts + 1] = ("expandable_segments %s (fragmentation %.0f%%)"):format(on(r.expandable_segments),
      100 * (r.allocator_fragmentation or 0))
  end
  return table.concat(parts, ", ")
end

--- Relative difference within which a device's attention efficiency is
-- the stack profile's (JSON keeps 14 significant digits).
M.PROFILE_MATCH = 1e-9

--- The training line's note of the software stack the estimate prices
-- (training.stack, else the framework's newest), with the attention
-- efficiency its profile sets when the device runs at it.
-- @tparam string|nil stack stack identifier (apsearch.stacks)
-- @tparam table cluster `ctx:inputs().cluster`
-- @treturn string "" without a stack, else "; stack <id>[ (...)]"
function M.stack_note(stack, cluster)
  if not stack then return "" end
  local dev = type(cluster) == "table" and type(cluster.device) == "table" and cluster.device or {}
  local prof = require("apsearch.stacks").profile_fields(stack, dev.base or dev.name)
  local eff = prof and prof.attention_efficiency
  -- a result's inputs (estimate --from) hold the value as JSON printed it
  local v = dev.attention_efficiency
  if eff and type(v) == "number" and math.abs(v - eff) <= M.PROFILE_MATCH * eff then
    return ("; stack %s (attention %.3f, benchmarked)"):format(stack, eff)
  end
  return "; stack " .. stack
end

--- Which peak the MFU divides by, when not the bf16 one
-- (common.bf16_peak_mfu): under fp8, mxfp8 or nvfp4 the estimate's line
-- gives the bf16 peak's MFU beside its own.
-- @tparam table est an estimate (model_tflops_per_gpu [TFLOP/s])
-- @tparam table inputs the core context's inputs (training.precision,
--   cluster.device.peak_flops_bf16 [FLOP/s])
-- @treturn string "" or ` (of the fp8 peak; MFU of the bf16 peak: 19.4%)`
function M.peak_text(est, inputs)
  local bf16 = common.bf16_peak_mfu(est, inputs)
  if not bf16 then return "" end
  return string.format(" (of the %s peak; MFU of the bf16 peak: %.1f%%)", inputs.training.precision, 100 * bf16)
end

--- Formats an estimate as text.
-- @tparam table est the table `ctx:estimate()` returned
-- @tparam[opt] table inputs `ctx:inputs()` (model, cluster, training)
-- @tparam[opt] string stack the policy's stack identifier, named on the
--   training line (M.stack_note)
-- @treturn string
function M.format(est, inputs, stack)
  local out = {}
  -- a labelled line ("strategy  ...") longer than the terminal width goes
  -- on under its text, at the label's width
  local function P(fmt, ...)
    local line = string.format(fmt, ...)
    local label = line:match("^(%l+ +)%S")
    if label and common.width(line) > common.TERMINAL_WIDTH then
      local body = common.fold(line:sub(#label + 1), common.TERMINAL_WIDTH - #label)
      line = label .. body:gsub("\n%s*", "\n" .. string.rep(" ", #label))
    end
    out[#out + 1] = line
  end
  if inputs then
    local m, c, t = inputs.model or {}, inputs.cluster or {}, inputs.training or {}
    local dev = type(c.device) == "table" and c.device.name or tostring(c.device)
    P("model     %s (%s parameters)", tostring(m.name), common.commas(est.params_total or 0))
    P("cluster   %s x %s, %s per node%s", tostring(c.num_devices), tostring(dev), tostring(c.devices_per_node),
      common.nvlink_domain_note(c))
    P("training  global batch %s sequences x %s tokens, %s, %s, %s%s%s",
      tostring(t.global_batch_size), tostring(t.seq_length), tostring(t.precision),
      tostring(t.optimizer), tostring(t.framework) .. (t.fsdp_impl == "megatron_fsdp" and " (Megatron-FSDP)" or ""),
      common.mtp_note(t, m), M.stack_note(stack, c))
    if est.recipe then P("recipe    %s", M.recipe_line(est.recipe, t)) end
  end
  local st = est.strategy or {}
  local mbn = (est.micro_batch_num or 0) > 0 and est.micro_batch_num or nil
  local gbs = inputs and inputs.training and inputs.training.global_batch_size
  local ranks = (st.micro_batch_size or 1) * (st.dp_degree or 1) * (st.fsdp_degree or 1)
  if not mbn and gbs and ranks > 0 and gbs % ranks == 0 then mbn = gbs // ranks end
  P("strategy  %s", M.strategy_line(st, mbn))
  if (est.num_stages or 0) > 0 then
    local passes = est.gradient_accumulation_steps or 1
    P("devices   %s used; micro-batches per step %s%s", tostring(est.devices_used), tostring(est.micro_batch_num),
      passes > 1 and (" in %d pipeline schedules of %d (training.local_batch_size)"):format(passes,
        est.micro_batch_num // passes) or "")
  end
  if est.feasible then
    P("feasible  yes")
  else
    P("feasible  NO: %s: %s", tostring(est.reason), tostring(est.message))
  end

  -- rejected before estimation: there is no breakdown to show
  if (est.num_stages or 0) == 0 then return table.concat(out, "\n") .. "\n" end

  local bd = est.memory_breakdown
  if bd then
    P("")
    P("memory per device, worst stage %s (GiB)", tostring(est.worst_stage))
    local rows = {}
    for _, cat in ipairs(common.memory_categories) do
      if cat == "comm_buffers" then
        local cb = bd.comm_buffers or {}
        local sub = {}
        for _, s in ipairs(common.comm_categories) do
          sub[#sub + 1] = string.format("%s %s", s, g(cb[s]))
        end
        rows[#rows + 1] = { cat, g(common.mem_value(bd, cat)), table.concat(sub, ", ") }
      else
        rows[#rows + 1] = { cat, g(bd[cat]), "" }
      end
    end
    local mi = est.mem_peak_interval
    rows[#rows + 1] = { "total", g(est.mem_peak or bd.total),
      mi and string.format("%d %% interval %s-%s", math.floor(mi.level * 100 + 0.5), g(mi.lo), g(mi.hi)) or "" }
    for _, p in ipairs(common.peak_rows(est, inputs and inputs.training)) do
      rows[#rows + 1] = { p[1], g(p[2]), p[3] }
    end
    rows[#rows + 1] = { "limit", g(est.mem_limit), common.limit_text(inputs and inputs.training) }
    out[#out + 1] = (common.align({ "category", "GiB", "" }, rows, { false, true, false }):gsub("\n$", ""))
    for _, c in ipairs(mi and mi.caveats or {}) do
      out[#out + 1] = common.fold_text("  " .. c, require("apsearch.format.table").max_width)
    end
  end

  local pb = est.performance_breakdown
  if pb then
    P("")
    P("time per step (s): total = time spent; exposed = on the critical path")
    local rows = {}
    for _, cat in ipairs(common.time_categories) do
      rows[#rows + 1] = { cat, f3(common.time_value(pb, cat, "total")), f3(common.time_value(pb, cat, "exposed")) }
    end
    rows[#rows + 1] = { "step time", "", f3(est.step_time) }
    out[#out + 1] = (common.align({ "category", "total (s)", "exposed (s)" }, rows, { false, true, true }):gsub("\n$", ""))
    -- the two categories no framework log names, said where they are
    -- nonzero (docs/outputs.md "Breakdowns")
    if common.time_value(pb, "host_launch", "total") > 0 or common.time_value(pb, "kernel_gaps", "total") > 0 then
      out[#out + 1] = common.fold_text("host_launch: the host launching the layers' kernels (exposed: what the GPU "
        .. "waits for it); kernel_gaps: the GPU idle between two queued kernels, every kernel's, always exposed "
        .. "(docs/modeling.md \"Host time\")", require("apsearch.format.table").max_width)
    end
    -- an estimate over the memory limit is not simulated (schedule.c
    -- pipeline_bubble): its bubble is the closed form on the slowest stage
    if est.feasible == false and ((est.strategy or {}).pp_degree or 1) > 1 then
      out[#out + 1] = common.fold_text("pp_bubble: the closed form (p - 1) / v x (forward + backward) of the "
        .. "slowest stage: a strategy over the memory limit is not simulated, so its schedule (pp_schedule) "
        .. "changes no more than the stages' layers", require("apsearch.format.table").max_width)
    end
    local si = est.step_time_interval
    if si then
      P("%d %% interval  %s-%s s (%s, %d published runs; out-of-sample errors, docs/accuracy.md)",
        math.floor(si.level * 100 + 0.5), f3(si.lo), f3(si.hi),
        si.pooled and "all classes" or tostring(si.class), si.rows or 0)
      for _, c in ipairs(si.caveats or {}) do
        out[#out + 1] = common.fold_text("  " .. c, require("apsearch.format.table").max_width)
      end
    end
    P("")
    P("throughput  %.0f tokens/s, %.0f tokens/s per GPU", est.tokens_per_s or 0, est.tokens_per_s_per_gpu or 0)
    P("            %.1f model TFLOP/s per GPU, MFU %.1f%%, HFU %.1f%%%s",
      est.model_tflops_per_gpu or 0, 100 * (est.mfu or 0), 100 * (est.hfu or 0), M.peak_text(est, inputs))
  end

  if est.stages and #est.stages > 0 then
    P("")
    P("pipeline stages")
    local rows = {}
    -- a rank's layers, one range per model chunk: with vpp > 1 a rank
    -- holds chunks i, i + p, ... (or the V of ZB-V and DualPipeV)
    local counts = {}
    for i, st in ipairs(est.stages) do counts[i] = st.num_layers or 0 end
    local chunks = common.chunk_layers(est.strategy or {}, counts)
    -- a mixture-of-experts rank holds its routed experts apart from the
    -- rest (`expert_params`, sharded by ep x etp, not by tp): "params" is
    -- every parameter on the rank, "experts" the routed ones among them
    local moe = false
    for _, st in ipairs(est.stages) do
      if (st.expert_params or 0) > 0 then moe = true end
    end
    -- the layers a stage recomputes whole; selective recompute (its
    -- modules on every layer) as "sel", not 0
    local sel = (est.strategy or {}).layer_recompute == "selective"
    for i, st in ipairs(est.stages) do
      local mb = st.memory_breakdown or {}
      local top = common.top_memory(mb)
      local recomp = (sel and (st.recompute_layers or 0) == 0) and "sel" or tostring(st.recompute_layers)
      local row = {
        tostring(st.stage), tostring(st.num_layers), recomp,
        string.format("%.1f", ((st.params or 0) + (st.expert_params or 0)) / 1e6),
      }
      if moe then row[#row + 1] = string.format("%.1f", (st.expert_params or 0) / 1e6) end
      for _, v in ipairs({ string.format("%.2f", st.inflight_microbatches or 0),
        g(mb.total), tostring(top), f3(st.time_fwd), f3(st.time_bwd) }) do
        row[#row + 1] = v
      end
      -- the layers last, folded: one range per model chunk grows with vpp
      row[#row + 1] = common.chunks_text(chunks[i] or {}) ..
        ((st.mtp_layers or 0) > 0 and (" +" .. st.mtp_layers .. " MTP") or "")
      rows[#rows + 1] = row
    end
    local head = { "stage", "n", "recomp", "params (M)" }
    local right = { true, true, true, true }
    if moe then
      head[#head + 1] = "experts (M)"
      right[#right + 1] = true
    end
    for _, h in ipairs({ "mb in flight", "memory (GiB)", "top memory", "fwd/mb (s)", "bwd/mb (s)", "layers" }) do
      head[#head + 1] = h
      right[#right + 1] = h ~= "top memory" and h ~= "layers"
    end
    -- (a range per chunk folds well: down to the width of "100-103, 204-207")
    out[#out + 1] = (common.fold_last_column(head, rows, right, nil, M.MIN_LAYERS_COLUMN):gsub("\n$", ""))
  end
  return table.concat(out, "\n") .. "\n"
end

return M
