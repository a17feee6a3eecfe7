--- TorchTitan job config (TOML) for one strategy: [job], [model],
-- [training], [parallelism] and [activation_checkpoint] (field names from
-- apsearch.launch.options, read from torchtitan/config/job_config.py).
--
-- Mapping (apsearch strategy field -> TorchTitan key):
--
-- * dp_degree -> data_parallel_replicate_degree, fsdp_degree ->
--   data_parallel_shard_degree (both > 1: HSDP), reshard_after_forward ->
--   fsdp_reshard_after_forward = "always" | "never"
-- * tp_degree -> tensor_parallel_degree (TorchTitan always shards the
--   sequence with TP: sequence_parallel = false is NOT EXPRESSIBLE)
-- * pp_degree -> pipeline_parallel_degree, schedule "1F1B" (vpp = 1) or
--   "Interleaved1F1B" with pipeline_parallel_layers_per_stage = L/(p v);
--   an uneven split -> pipeline_parallel_split_points ("layers.<first>")
-- * cp_degree -> context_parallel_degree, cp_comm_type p2p (ring) ->
--   context_parallel_rotate_method "alltoall" (KV shards rotated),
--   all_gather -> "allgather"
-- * batch: local_batch_size = micro_batch_size (no PP; TorchTitan
--   accumulates gradients up to global_batch_size) or micro_batch_size x
--   micro_batch_num with pipeline_parallel_microbatch_size =
--   micro_batch_size (PP)
-- * layer_recompute: none -> mode "none"; full on every layer -> "full";
--   full on r of n layers -> "selective" with selective_ac_option = n/r
--   (every (n/r)-th layer; APPROXIMATE when the stages differ or n/r is
--   not whole); selective -> "selective" with "op"
--   (APPROXIMATE: per-op SAC, not core-attention only)
-- * precision fp8 -> converter "float8", mxfp8 -> "mx"; nvfp4 NOT
--   EXPRESSIBLE; fp8_param_gather (fp8, FSDP) -> [float8]
--   enable_fsdp_float8_all_gather
-- * training.compile compiles model and loss: compile_loss = false NOT
--   EXPRESSIBLE; tp_comm_overlap -> enable_async_tensor_parallel
-- * zero_stage 1/2 without FSDP: NOT EXPRESSIBLE (TorchTitan shards with
--   FSDP or not at all)
-- @module apsearch.launch.torchtitan
local options = require "apsearch.launch.options"
local launch_util = require "apsearch.launch"

local M = {}

local function toml_value(v)
  if type(v) == "string" then
    return '"' .. v:gsub('\\', '\\\\'):gsub('"', '\\"') .. '"'
  elseif type(v) == "table" then
    local parts = {}
    for i, x in ipairs(v) do parts[i] = toml_value(x) end
    return "[" .. table.concat(parts, ", ") .. "]"
  end
  return tostring(v)
end

-- TorchTitan's llama3 flavors by parameter count
local function llama3_flavor(name)
  local n = tostring(name or ""):lower()
  if not n:match("llama") then return nil end
  for _, f in ipairs({ "405b", "70b", "8b" }) do
    if n:match("%-" .. f .. "$") or n:match("%-" .. f .. "%-") then return f:upper() end
  end
  return nil
end

--- Renders the TOML.
-- @tparam table c context (apsearch.launch.context)
-- @treturn string
-- @treturn table notes
function M.render(c)
  local r, m, tr = c.rec, c.model, c.training
  local sections, order, notes = {}, {}, {}
  local function S(name)
    if not sections[name] then sections[name] = {} order[#order + 1] = name end
    return sections[name]
  end
  local function K(sec, key, value, comment)
    assert(options.torchtitan.sections[sec] and options.torchtitan.sections[sec][key],
      "torchtitan: key not in the list: " .. sec .. "." .. key)
    local t = S(sec)
    t[#t + 1] = { key, value, comment }
  end
  local function N(kind, text) notes[#notes + 1] = kind .. ": " .. text end

  local tp, pp, cp, vpp = r.tp_degree or 1, r.pp_degree or 1, r.cp_degree or 1, r.vpp_degree or 1
  local R, Sd, z = r.dp_degree or 1, r.fsdp_degree or 1, r.zero_stage or 0
  local L = m.num_layers
  local b = r.micro_batch_size or 1

  K("job", "description", c.header[1])
  local flavor = llama3_flavor(m.name)
  if flavor then
    K("model", "name", "llama3")
    K("model", "flavor", flavor)
  else
    N("NOTE", "set [model] name and flavor for " .. tostring(m.name) ..
      " (TorchTitan ships llama3 8B / 70B / 405B flavors)")
  end
  if (m.sliding_window or 0) > 0 then
    N("NOTE", string.format("the estimate assumes a %d-token sliding window on %d of %d layers; " ..
      "the model definition must implement it", m.sliding_window,
      m.sliding_window_layers or m.num_layers, m.num_layers))
  end
  -- quantisation converters (torchtitan/components/quantization/*.py
  -- register_model_converter names)
  local prec = tr.precision
  if prec == "fp8" then
    K("model", "converters", { "float8" })
  elseif prec == "mxfp8" then
    -- torchao MX linears ([mx] recipe_name defaults to "mxfp8")
    K("model", "converters", { "mx" })
  elseif prec == "nvfp4" then
    N("NOT EXPRESSIBLE in TorchTitan", "nvfp4 matmuls: this TorchTitan has only the float8 and " ..
      "mx (mxfp8) converters; no converter written")
  end
  if tr.fp8_param_gather == true then
    if prec == "fp8" and Sd > 1 then
      -- tensorwise scaling (recipe_name unset) gathers float8 weights
      K("float8", "enable_fsdp_float8_all_gather", true)
      K("float8", "precompute_float8_dynamic_scale_for_fsdp", true)
    else
      N("NOT EXPRESSIBLE in TorchTitan", "fp8_param_gather with " .. tostring(prec) ..
        (Sd > 1 and "" or " without FSDP") .. ": only the float8 converter gathers " ..
        "FSDP parameters in fp8 (enable_fsdp_float8_all_gather)")
    end
  end
  if tr.store_param_remainders then
    N("NOT EXPRESSIBLE in TorchTitan", "store_param_remainders (apex DistributedFusedAdam, NeMo 1.x)")
  end

  if pp > 1 then
    K("training", "local_batch_size", b * (r.micro_batch_num or 1))
  else
    K("training", "local_batch_size", b)
  end
  K("training", "global_batch_size", tr.global_batch_size)
  K("training", "seq_len", tr.seq_length)
  -- the estimate's elementwise kernels: fused when compiled, eager otherwise
  -- (Megatron and DeepSpeed estimates assume fused kernels: compile)
  local pytorch = tr.framework == "fsdp2" or tr.framework == "fsdp"
  local compile = tr.torch_compile == true or not pytorch
  K("training", "compile", compile)
  -- the loss is compiled with the model (torchtitan/components/loss.py
  -- build_cross_entropy_loss); separate components came later (compile.components)
  if compile and tr.compile_loss == false then
    N("NOT EXPRESSIBLE in TorchTitan", "compiling the model but not the loss (compile_loss = false): " ..
      "training.compile compiles both")
  end
  if (tr.activation_offload_layers or 0) > 0 then
    N("NOT EXPRESSIBLE in TorchTitan", "activation offload to host (activation_offload_layers = " ..
      tr.activation_offload_layers .. "): TorchTitan's CPU offload moves parameters, gradients and " ..
      "optimizer states (training.enable_cpu_offload), not activations")
  end
  if tr.cuda_graphs then
    N("NOT EXPRESSIBLE in TorchTitan", "CUDA graphs (no TorchTitan key)")
  end
  if tr.precision == "fp16" then
    N("NOT EXPRESSIBLE in TorchTitan", "fp16 mixed precision (mixed_precision_param takes bfloat16 or float32)")
  else
    K("training", "mixed_precision_param", "bfloat16")
  end

  K("parallelism", "data_parallel_replicate_degree", R)
  K("parallelism", "data_parallel_shard_degree", Sd)
  if Sd > 1 then
    -- explicit: "default" keeps the gathered parameters under PP
    -- (torchtitan/distributed/fsdp.py get_fsdp_reshard_after_forward_policy)
    K("parallelism", "fsdp_reshard_after_forward", r.reshard_after_forward == false and "never" or "always")
  end
  if Sd == 1 and (z == 1 or z == 2) then
    N("NOT EXPRESSIBLE in TorchTitan", string.format(
      "ZeRO-%d (optimizer%s sharded, parameters replicated): TorchTitan shards with FSDP " ..
      "(data_parallel_shard_degree) or replicates; written as plain data parallel", z, z == 2 and " and gradients" or ""))
  elseif Sd == 1 and z == 3 then
    N("NOT EXPRESSIBLE in TorchTitan", "zero_stage=3 over the replicate group: use data_parallel_shard_degree instead")
  end
  K("parallelism", "tensor_parallel_degree", tp)
  if tp > 1 then
    -- async TP pipelines the TP collectives with the matmuls (tp_comm_overlap);
    -- "currently only effective when compile is enabled" (job_config.py)
    K("parallelism", "enable_async_tensor_parallel", tr.tp_comm_overlap == true)
    if tr.tp_comm_overlap and not compile then
      N("NOTE", "enable_async_tensor_parallel only takes effect with training.compile = true")
    end
    if not r.sequence_parallel then
      N("NOT EXPRESSIBLE in TorchTitan", "tensor parallel without sequence parallel (TorchTitan shards the sequence with TP)")
    end
  end
  K("parallelism", "pipeline_parallel_degree", pp)
  if pp > 1 then
    K("parallelism", "pipeline_parallel_schedule", vpp > 1 and "Interleaved1F1B" or "1F1B")
    K("parallelism", "pipeline_parallel_microbatch_size", b)
    local layers = c.layers
    if vpp > 1 then
      if L % (pp * vpp) == 0 and (#layers ~= pp or launch_util.all_equal(layers)) then
        K("parallelism", "pipeline_parallel_layers_per_stage", L // (pp * vpp))
      else
        N("NOT EXPRESSIBLE in TorchTitan", string.format(
          "%d layers over %d x %d virtual stages unevenly (%s per rank)", L, pp, vpp, table.concat(layers, ":")))
      end
    elseif #layers == pp and not launch_util.all_equal(layers) then
      local pts = {}
      for i = 2, pp do pts[#pts + 1] = "layers." .. tostring(c.stages[i].first_layer) end
      K("parallelism", "pipeline_parallel_split_points", pts, "uneven split " .. table.concat(layers, ":"))
    end
  end
  K("parallelism", "context_parallel_degree", cp)
  if cp > 1 then
    K("parallelism", "context_parallel_rotate_method", r.cp_comm_type == "all_gather" and "allgather" or "alltoall",
      r.cp_comm_type == "all_gather" and "K/V all-gathered" or "ring: K/V shards rotated")
  end

  if r.layer_recompute == "full" then
    local all = #c.recompute > 0
    for i = 1, #c.recompute do if c.recompute[i] ~= c.layers[i] then all = false end end
    if all then
      K("activation_checkpoint", "mode", "full")
    else
      -- the overall fraction of layers recomputed, as every k-th layer
      local n, rc = 0, 0
      for i = 1, #c.layers do n, rc = n + c.layers[i], rc + (c.recompute[i] or 0) end
      if rc == 0 then
        K("activation_checkpoint", "mode", "none")
        N("NOTE", "full recompute with no layer recomputed on any stage")
      else
        local every = math.max(1, math.floor(n / rc + 0.5))
        K("activation_checkpoint", "mode", "selective")
        K("activation_checkpoint", "selective_ac_option", tostring(every), "checkpoint every " .. every .. "-th layer")
        if n % rc ~= 0 or not launch_util.all_equal(c.recompute) then
          N("APPROXIMATE", string.format("recompute counts %s of %s layers per stage as every %d-th layer",
            table.concat(c.recompute, ":"), table.concat(c.layers, ":"), every))
        end
      end
    end
  elseif r.layer_recompute == "selective" then
    K("activation_checkpoint", "mode", "selective")
    K("activation_checkpoint", "selective_ac_option", "op")
    -- with the fsdp2 profile apsearch models TorchTitan's per-op selective
    -- checkpointing itself; other profiles estimated Megatron's
    if tr.framework ~= "fsdp2" then
      N("APPROXIMATE", "apsearch's selective recompute (core attention only, the " ..
        tostring(tr.framework) .. " profile) as TorchTitan's per-op selective AC")
    end
  else
    K("activation_checkpoint", "mode", "none")
  end

  local out = {}
  for _, h in ipairs(c.header) do out[#out + 1] = "# " .. h end
  out[#out + 1] = "# TorchTitan keys checked against " .. options.cite(options.torchtitan)
  out[#out + 1] = "# Add your dataset, tokenizer, optimizer, checkpoint and step settings."
  for _, n in ipairs(notes) do out[#out + 1] = "# " .. n end
  for _, name in ipairs(order) do
    out[#out + 1] = ""
    out[#out + 1] = "[" .. name .. "]"
    for _, kv in ipairs(sections[name]) do
      out[#out + 1] = kv[1] .. " = " .. toml_value(kv[2]) .. (kv[3] and ("  # " .. kv[3]) or "")
    end
  end
  return table.concat(out, "\n") .. "\n", notes
end

return M
