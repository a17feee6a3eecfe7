-- tests/lua/launch_spec.lua -- launch configs (lua/apsearch/launch/*):
-- every option name a Megatron-LM script, TorchTitan TOML or MindFormers
-- YAML carries is one of the engine's own (apsearch.launch.options, which
-- cites the engine source), over strategies with FSDP, HSDP, ZeRO, TP with
-- and without SP, PP (even, uneven, interleaved), CP and every recompute
-- mode; the values reproduce the strategy (degrees multiply to the device
-- count, stage splits and recompute counts match the estimate); what an
-- engine cannot express is a NOT EXPRESSIBLE comment, never a flag.

local policy = require "apsearch.policy"
local search = require "apsearch.search"
local launch = require "apsearch.launch"
local options = require "apsearch.launch.options"

local ROOT = os.getenv("APS_ROOT") or "."

local function run_example(name, opts)
  return search.run(policy.load(ROOT .. "/examples/" .. name, opts))
end

-- Megatron script: flags inside MEGATRON_ARGS=( ... ), torchrun flags on
-- the exec lines; every other non-comment line is a variable or bash
local function parse_megatron(text)
  local flags, values, torchrun, in_args, in_exec = {}, {}, {}, false, false
  for line in text:gmatch("[^\n]*") do
    if line:match("^#") or line == "" then
      -- comment
    elseif line == "MEGATRON_ARGS=(" then
      in_args = true
    elseif in_args and line == ")" then
      in_args = false
    elseif in_args then
      local flag, value = line:match("^%s+(%-%-[%w%-]+)%s*(.*)$")
      assert(flag, "not a flag line: " .. line)
      flags[#flags + 1] = flag
      values[flag] = value ~= "" and (value:match("^'(.*)'$") or value) or true
    elseif line:match("^exec torchrun") or in_exec then
      in_exec = true
      for f in line:gmatch("(%-%-[%w%-]+)") do torchrun[#torchrun + 1] = f end
    else
      assert(line:match("^[%u_]+=") or line:match("^set %-euo pipefail$") or
        line:match("^export CUDA_DEVICE_MAX_CONNECTIONS=1  #") or
        line:match("^unset CUDA_DEVICE_MAX_CONNECTIONS  #"), "unexpected line: " .. line)
    end
  end
  return flags, values, torchrun
end

local function parse_toml(text)
  local keys, section = {}, nil
  for line in text:gmatch("[^\n]*") do
    line = line:gsub("%s+#.*$", "")
    if line:match("^#") or line:match("^%s*$") then
      -- skip
    elseif line:match("^%[") then
      section = assert(line:match("^%[([%w_]+)%]$"), "bad section: " .. line)
    else
      local k, v = line:match("^([%w_]+) = (.+)$")
      assert(k and section, "bad TOML line: " .. line)
      keys[#keys + 1] = { section = section, key = k, value = v }
    end
  end
  return keys
end

local function parse_yaml(text)
  local leaves, stack = {}, {}
  for line in text:gmatch("[^\n]*") do
    local body = line:gsub("%s+#.*$", "")
    if not (body:match("^%s*#") or body:match("^%s*$")) then
      local indent, key, rest = body:match("^(%s*)([%w_]+):%s*(.*)$")
      assert(key, "bad YAML line: " .. line)
      local depth = #indent // 2
      assert(#indent % 2 == 0, "odd indent: " .. line)
      for i = #stack, depth + 1, -1 do stack[i] = nil end
      stack[depth + 1] = key
      if rest ~= "" then
        leaves[#leaves + 1] = { path = table.concat(stack, ".", 1, depth + 1), value = rest }
      end
    end
  end
  return leaves
end

local function num(v) return tonumber((tostring(v):gsub('"', ""))) end

local function yaml_list(v)
  local out = {}
  for x in tostring(v):gmatch("%-?%d+") do out[#out + 1] = tonumber(x) end
  return out
end

-- checks every file of a result; returns them by rank and engine
local function check_all(r)
  local files = launch.render_all(r)
  assert.are.equal(3 * #r.top_k_strategies, #files)
  local by = {}
  for _, f in ipairs(files) do
    by[f.rank] = by[f.rank] or {}
    by[f.rank][f.engine] = f
    local rec = r.top_k_strategies[f.rank]
    local used = rec.devices_used
    if f.engine == "megatron" then
      local flags, _, tr = parse_megatron(f.text)
      assert.is_true(#flags > 10)
      for _, fl in ipairs(flags) do
        assert.is_true(options.megatron.options[fl] == true, "Megatron-LM has no option " .. fl)
      end
      assert.are.equal(5, #tr)
      for _, fl in ipairs(tr) do
        assert.is_true(options.torchrun.options[fl] == true, "torchrun has no option " .. fl)
      end
    elseif f.engine == "torchtitan" then
      local prod = 1
      for _, kv in ipairs(parse_toml(f.text)) do
        local sec = options.torchtitan.sections[kv.section]
        assert.is_truthy(sec, "TorchTitan has no section [" .. kv.section .. "]")
        assert.is_true(sec[kv.key] == true, "TorchTitan has no key " .. kv.section .. "." .. kv.key)
        local allowed = options.torchtitan.values[kv.section .. "." .. kv.key]
        if allowed then
          local v = kv.value:match('^"(.*)"$')
          assert.is_true(allowed[v] == true, kv.key .. " = " .. kv.value)
        end
        if kv.key:match("_degree$") then prod = prod * num(kv.value) end
      end
      assert.are.equal(used, prod, "TorchTitan degrees multiply to the devices")
    else
      local prod = 1
      for _, leaf in ipairs(parse_yaml(f.text)) do
        assert.is_true(options.mindformers.keys[leaf.path] == true, "MindFormers has no key " .. leaf.path)
        local degree = { ["parallel_config.data_parallel"] = true, ["parallel_config.model_parallel"] = true,
          ["parallel_config.context_parallel"] = true, ["parallel_config.pipeline_stage"] = true }
        if degree[leaf.path] then
          prod = prod * num(leaf.value)
        end
      end
      assert.are.equal(used, prod, "MindFormers degrees multiply to the devices")
    end
  end
  return by
end


-- one strategy estimated (ctx:estimate) and shaped as a search result, for
-- strategy fields the search space does not enumerate (recompute_method,
-- pipeline_split, per-chunk stage_partition)
local function estimated(tbl, strategy)
  local p = policy.from_table(tbl, ROOT .. "/examples/x.lua")
  local ctx = search.context(p)
  local est = ctx:estimate(strategy)
  local rec = { rank = 1, devices_used = est.devices_used,
    memory_cost = { total = est.mem_peak, limit = est.mem_limit },
    performance_cost = { step_time = est.step_time } }
  for k, v in pairs(est.strategy) do rec[k] = v end
  local stages = {}
  for i, st in ipairs(est.stages) do
    stages[i] = { stage = st.stage, first_layer = st.first_layer, num_layers = st.num_layers,
      recompute_layers = st.recompute_layers }
  end
  return { inputs = ctx:inputs(), top_k_strategies = { rec }, stage_summary = { { stages = stages } } }, est
end

local function b200_405b(training)
  local tr = { global_batch_size = 512, seq_length = 8192, framework = "megatron" }
  for k, v in pairs(training or {}) do tr[k] = v end
  return { model = "llama-3.1-405b", cluster = { device = "b200", nodes = 64, devices_per_node = 8 },
    training = tr, top_k = 1 }
end

local function chunks_16()
  local part = { 7 }
  for i = 2, 15 do part[i] = 8 end
  part[16] = 7
  return part
end

describe("launch configs", function()
  it("cite the engine source of every option list", function()
    for _, name in ipairs({ "megatron", "torchrun", "torchtitan", "mindformers" }) do
      local s = options[name].source
      assert.truthy(s.repo:match("^[%w%-]+/[%w%-]+$"), name)
      assert.truthy(s.path, name)
      assert.truthy(s.commit and s.commit:match("^%x+$") and #s.commit == 40, name)
    end
  end)

  it("use only the engines' option names (70B: FSDP, HSDP, TP, recompute)", function()
    local r = run_example("llama3_70b_h100.lua", { top_k = 10 })
    local by = check_all(r)
    local hsdp, fsdp = 0, 0
    for _, rec in ipairs(r.top_k_strategies) do
      local mg = by[rec.rank].megatron.text
      local _, values = parse_megatron(mg)
      assert.are.equal(tostring(rec.tp_degree), values["--tensor-model-parallel-size"])
      assert.are.equal(rec.tp_degree > 1 and rec.sequence_parallel, values["--sequence-parallel"] == true)
      assert.are.equal(tostring(rec.micro_batch_size), values["--micro-batch-size"])
      assert.are.equal("512", values["--global-batch-size"])
      if rec.dp_degree > 1 and rec.fsdp_degree > 1 then
        hsdp = hsdp + 1
        assert.truthy(mg:find("# NOT EXPRESSIBLE in Megatron-LM: HSDP", 1, true))
        assert.is_nil(values["--use-torch-fsdp2"])
        assert.is_nil(values["--use-distributed-optimizer"])
        -- TorchTitan and MindFormers express it
        local tt = by[rec.rank].torchtitan.text
        assert.truthy(tt:find("data_parallel_replicate_degree = " .. rec.dp_degree, 1, true))
        assert.truthy(tt:find("data_parallel_shard_degree = " .. rec.fsdp_degree, 1, true))
        assert.truthy(by[rec.rank].mindformers.text:find("optimizer_weight_shard_size: " .. rec.fsdp_degree, 1, true))
      elseif rec.fsdp_degree > 1 then
        fsdp = fsdp + 1
        assert.is_true(values["--use-torch-fsdp2"])
        assert.are.equal(rec.reshard_after_forward == false, values["--torch-fsdp2-no-reshard-after-forward"] == true)
      end
      local mode = by[rec.rank].torchtitan.text:match('mode = "(%w+)"')
      if rec.layer_recompute == "none" then assert.are.equal("none", mode)
      elseif rec.layer_recompute == "selective" then
        assert.are.equal("selective", values["--recompute-granularity"])
        assert.are.equal("selective", mode)
      else
        assert.are.equal("full", values["--recompute-granularity"])
        assert.are.equal("uniform", values["--recompute-method"])
        assert.are.equal("full", mode)
      end
    end
    assert.is_true(hsdp + fsdp > 0)
  end)

  it("express pipelines: interleaved, uneven (first/last stage), offsets, CP, ZeRO-1", function()
    local r = run_example("llama3_405b_h100_16k.lua", { top_k = 6 })
    local by = check_all(r)
    for _, rec in ipairs(r.top_k_strategies) do
      local layers = {}
      for i, st in ipairs(r.stage_summary[rec.rank].stages) do layers[i] = st.num_layers end
      local mg = by[rec.rank].megatron.text
      local _, v = parse_megatron(mg)
      assert.are.equal(tostring(rec.pp_degree), v["--pipeline-model-parallel-size"])
      assert.is_true(v["--use-distributed-optimizer"])           -- zero_stage 1
      if rec.vpp_degree > 1 then
        local per = v["--num-layers-per-virtual-pipeline-stage"]
        if per then assert.are.equal(126 // (rec.pp_degree * rec.vpp_degree), tonumber(per))
        else assert.are.equal(tostring(rec.vpp_degree), v["--num-virtual-stages-per-pipeline-rank"]) end
      end
      if rec.cp_degree > 1 then
        assert.are.equal(tostring(rec.cp_degree), v["--context-parallel-size"])
        assert.are.equal("p2p", v["--cp-comm-type"])
        assert.truthy(by[rec.rank].torchtitan.text:find('context_parallel_rotate_method = "alltoall"', 1, true))
        assert.truthy(by[rec.rank].mindformers.text:find('context_parallel_algo: "colossalai_cp"', 1, true))
      end
      -- MindFormers offsets reproduce the split: L // p + offset[i]
      local off
      for _, leaf in ipairs(parse_yaml(by[rec.rank].mindformers.text)) do
        if leaf.path == "model.model_config.offset" then off = leaf.value end
      end
      local uneven = false
      for i = 2, #layers do if layers[i] ~= layers[1] then uneven = true end end
      if uneven and rec.vpp_degree == 1 then
        local o = yaml_list(off)
        assert.are.equal(#layers, #o)
        for i, n in ipairs(layers) do assert.are.equal(n, 126 // rec.pp_degree + o[i]) end
      end
      -- TorchTitan cannot shard only the optimizer (ZeRO-1)
      assert.truthy(by[rec.rank].torchtitan.text:find("NOT EXPRESSIBLE in TorchTitan: ZeRO-1", 1, true))
    end
  end)

  it("write first/last stage sizes for an uneven split Megatron can express", function()
    local r = run_example("llama3_405b_h100_16k.lua", { top_k = 4,
      fix = { "vpp_degree=1", "pp_degree=16", "cp_degree=1" } })
    local by = check_all(r)
    local seen = 0
    for _, rec in ipairs(r.top_k_strategies) do
      local layers = {}
      for i, st in ipairs(r.stage_summary[rec.rank].stages) do layers[i] = st.num_layers end
      local mg = by[rec.rank].megatron.text
      local _, v = parse_megatron(mg)
      local middle_equal = true
      for i = 3, #layers - 1 do if layers[i] ~= layers[2] then middle_equal = false end end
      local even = true
      for i = 2, #layers do if layers[i] ~= layers[1] then even = false end end
      if rec.pipeline_split == "embedding_loss" and not rec.balance_stages then
        -- Megatron's own rule (the search's default where 126 does not
        -- divide): embedding and loss counted as a layer each
        assert.is_true(v["--account-for-embedding-in-pipeline-split"])
        assert.is_true(v["--account-for-loss-in-pipeline-split"])
        assert.is_nil(v["--decoder-first-pipeline-num-layers"])
        assert.are.equal(layers[2] - 1, layers[1])
        seen = seen + 1
      elseif even then
        assert.is_nil(v["--decoder-first-pipeline-num-layers"])
      elseif middle_equal then
        seen = seen + 1
        assert.are.equal(tostring(layers[1]), v["--decoder-first-pipeline-num-layers"])
        assert.are.equal(tostring(layers[#layers]), v["--decoder-last-pipeline-num-layers"])
      else
        -- the middle stages differ: a layout, one stage per rank
        local parts = {}
        for i, n in ipairs(layers) do parts[i] = (i == 1 and "E" or "") .. "t*" .. n .. (i == #layers and "L" or "") end
        assert.are.equal(table.concat(parts, "|"), v["--pipeline-model-parallel-layout"])
        assert.is_nil(v["--decoder-first-pipeline-num-layers"])
      end
      -- TorchTitan: split points at each stage's first layer
      if not even then
        local pts = by[rec.rank].torchtitan.text:match("pipeline_parallel_split_points = (%b[])")
        assert.truthy(pts)
        local i = 1
        for first in pts:gmatch('"layers%.(%d+)"') do
          i = i + 1
          assert.are.equal(r.stage_summary[rec.rank].stages[i].first_layer, tonumber(first))
        end
        assert.are.equal(#layers, i)
      end
      -- recompute counts per stage in MindFormers when not every layer
      if rec.layer_recompute == "full" then
        local rc = {}
        for i, st in ipairs(r.stage_summary[rec.rank].stages) do rc[i] = st.recompute_layers end
        local y = by[rec.rank].mindformers.text:match("\n  recompute: ([^\n#]+)")
        local all = true
        for i = 1, #rc do if rc[i] ~= layers[i] then all = false end end
        if all then assert.truthy(y:match("True")) else assert.are.same(rc, yaml_list(y)) end
      end
    end
    assert.is_true(seen > 0, "an uneven split with equal middle stages (126 layers over 16)")
  end)

  it("write TorchTitan's compile as estimated, and --qk-layernorm for a qk_norm model", function()
    local function first_files(framework, set)
      local p = policy.from_table({
        model = { num_layers = 8, hidden_size = 1024, num_attention_heads = 8, num_query_groups = 8,
          ffn_hidden_size = 4096, vocab_size = 32000, qk_norm = true },
        cluster = { device = "h100-sxm-80gb", nodes = 1, devices_per_node = 8 },
        training = { global_batch_size = 16, seq_length = 2048, framework = framework },
        search_space = { data_parallel = "auto" },
        top_k = 1,
      }, ROOT .. "/examples/x.lua", { set = set })
      local by = {}
      for _, f in ipairs(launch.render_all(search.run(p))) do by[f.engine] = f.text end
      return by
    end
    local function compile_of(text)
      for _, k in ipairs(parse_toml(text)) do
        if k.section == "training" and k.key == "compile" then return k.value end
      end
    end
    assert.are.equal("false", compile_of(first_files("fsdp2").torchtitan))   -- TorchTitan's default
    assert.are.equal("true", compile_of(first_files("fsdp2", { "training.torch_compile=true" }).torchtitan))
    local mg = first_files("megatron")                                        -- fused kernels assumed
    assert.are.equal("true", compile_of(mg.torchtitan))
    local _, v = parse_megatron(mg.megatron)
    assert.is_true(v["--qk-layernorm"])
  end)

  it("write only the first-stage count for two uneven stages (no middle stage to divide by)", function()
    local p = policy.from_table({
      model = "llama-3.1-8b",
      cluster = { device = "h100-sxm-80gb", nodes = 1, devices_per_node = 8 },
      training = { global_batch_size = 64, seq_length = 4096, framework = "megatron" },
      search_space = { data_parallel = "auto", zero_stage = { 1 }, pp_degree = { 2 }, vpp_degree = { 2 },
        stage_partition = { { 14, 18 } } },
      top_k = 1,
    }, ROOT .. "/examples/x.lua")
    local r = search.run(p)
    local by = check_all(r)
    local _, v = parse_megatron(by[1].megatron.text)
    assert.are.equal("14", v["--decoder-first-pipeline-num-layers"])
    assert.is_nil(v["--decoder-last-pipeline-num-layers"])
    assert.are.equal("2", v["--num-virtual-stages-per-pipeline-rank"])
  end)

  it("write an uneven split with interleaving as chunk counts (Megatron get_transformer_layer_offset)", function()
    local r = run_example("llama3_405b_h100_16k.lua", { top_k = 3,
      fix = { "vpp_degree=2", "pp_degree=16", "cp_degree=1" } })
    local by = check_all(r)
    local seen = 0
    for _, rec in ipairs(r.top_k_strategies) do
      local layers = {}
      for i, st in ipairs(r.stage_summary[rec.rank].stages) do layers[i] = st.num_layers end
      local _, v = parse_megatron(by[rec.rank].megatron.text)
      assert.are.equal("2", v["--num-virtual-stages-per-pipeline-rank"])
      assert.is_nil(v["--num-layers-per-virtual-pipeline-stage"])
      if rec.pipeline_split == "embedding_loss" and not rec.balance_stages then
        -- (126 + 2) / 32 = 4 per chunk, the first and last chunk 3
        seen = seen + 1
        assert.is_true(v["--account-for-embedding-in-pipeline-split"])
        assert.are.equal(7, layers[1])
        assert.are.equal(7, layers[16])
        for i = 2, 15 do assert.are.equal(8, layers[i]) end
      elseif layers[1] ~= layers[2] or layers[16] ~= layers[2] then
        seen = seen + 1
        assert.are.equal(tostring(layers[1]), v["--decoder-first-pipeline-num-layers"])
        assert.are.equal(tostring(layers[16]), v["--decoder-last-pipeline-num-layers"])
        -- each rank's layers split into 2 equal chunks
        for i = 1, 16 do assert.are.equal(0, layers[i] % 2) end
      end
      -- 0 = Megatron's own default (128); writing 0 would divide by zero
      assert.is_nil(v["--make-vocab-size-divisible-by"])
    end
    assert.is_true(seen > 0, "126 layers over 16 ranks x 2 chunks cannot be even")
  end)

  it("flag TP without SP and ZeRO-1 where an engine cannot express them (Qwen2.5-7B, Megatron)", function()
    local r = run_example("qwen25_7b_a100.lua", { top_k = 10,
      fix = { "sequence_parallel=false", "tp_degree=2", "zero_stage=0,1" } })
    local by = check_all(r)
    for _, rec in ipairs(r.top_k_strategies) do
      local _, v = parse_megatron(by[rec.rank].megatron.text)
      assert.is_nil(v["--sequence-parallel"])
      assert.is_true(v["--add-qkv-bias"])               -- Qwen2.5 has QKV biases only
      assert.is_true(v["--disable-bias-linear"])
      assert.are.equal(rec.zero_stage == 1, v["--use-distributed-optimizer"] == true)
      assert.truthy(by[rec.rank].torchtitan.text:find(
        "NOT EXPRESSIBLE in TorchTitan: tensor parallel without sequence parallel", 1, true))
      assert.truthy(by[rec.rank].mindformers.text:find("use_seq_parallel: False", 1, true))
    end
  end)

  it("write the recipe: mxfp8, fp8 param gather, bf16 grad reduce, TP overlap, embedding/loss split", function()
    local r, est = estimated(b200_405b({ precision = "mxfp8", fp8_param_gather = true,
      grad_reduce_in_fp32 = false, tp_comm_overlap = true }),
      { tp_degree = 8, sequence_parallel = true, pp_degree = 8, vpp_degree = 2, dp_degree = 8,
        zero_stage = 1, pipeline_split = "embedding_loss", layer_recompute = "selective" })
    assert.is_nil(est.reason, est.message)
    local by = check_all(r)
    local _, v = parse_megatron(by[1].megatron.text)
    assert.are.equal("e4m3", v["--fp8-format"])
    assert.are.equal("mxfp8", v["--fp8-recipe"])
    assert.is_true(v["--fp8-param-gather"])
    assert.is_true(v["--use-distributed-optimizer"])
    assert.is_true(v["--grad-reduce-in-bf16"])
    assert.is_true(v["--tp-comm-overlap"])
    assert.is_true(v["--account-for-embedding-in-pipeline-split"])
    assert.is_true(v["--account-for-loss-in-pipeline-split"])
    -- (126 + 2) / 16 chunks: the chunk count, not a size; no first/last counts
    assert.are.equal("2", v["--num-virtual-stages-per-pipeline-rank"])
    assert.is_nil(v["--num-layers-per-virtual-pipeline-stage"])
    assert.is_nil(v["--decoder-first-pipeline-num-layers"])
    assert.is_nil(v["--pipeline-model-parallel-layout"])
    assert.is_nil(v["--cuda-graph-impl"])
    local tt = by[1].torchtitan.text
    assert.truthy(tt:find('converters = ["mx"]', 1, true))
    assert.truthy(tt:find("enable_async_tensor_parallel = true", 1, true))
    assert.truthy(tt:find("NOT EXPRESSIBLE in TorchTitan: fp8_param_gather with mxfp8", 1, true))
    local mf = by[1].mindformers.text
    assert.truthy(mf:find("NOT EXPRESSIBLE in MindFormers: mxfp8 matmuls", 1, true))
    assert.truthy(mf:find("NOT EXPRESSIBLE in MindFormers: fp8_param_gather", 1, true))
  end)

  it("write a per-chunk stage_partition as --pipeline-model-parallel-layout, uniform recompute as uniform", function()
    local r, est = estimated(b200_405b({ precision = "bf16" }),
      { tp_degree = 8, sequence_parallel = true, pp_degree = 8, vpp_degree = 2, dp_degree = 8,
        zero_stage = 1, stage_partition = chunks_16(), layer_recompute = "full",
        recompute_method = "uniform", recompute_num_layers = { 2, 2, 2, 2, 2, 2, 2, 2 } })
    assert.is_nil(est.reason, est.message)
    assert.are.equal(16, #r.top_k_strategies[1].stage_partition)
    local by = check_all(r)
    local _, v = parse_megatron(by[1].megatron.text)
    -- by hand: chunk 1 (rank 0, virtual stage 0) holds the embedding and 7
    -- layers, chunks 2-15 8 layers, chunk 16 (rank 7, virtual stage 1) 7 and the loss
    assert.are.equal("Et*7|t*8|t*8|t*8|t*8|t*8|t*8|t*8|t*8|t*8|t*8|t*8|t*8|t*8|t*8|t*7L",
      v["--pipeline-model-parallel-layout"])
    assert.are.equal("126", v["--num-layers"])
    -- quoted: '|' and '*' are shell characters
    local sh = os.tmpname()
    local fh = assert(io.open(sh, "w"))
    fh:write(by[1].megatron.text)
    fh:close()
    assert.is_true(os.execute("bash -n '" .. sh .. "'") == true)
    os.remove(sh)
    assert.truthy(by[1].megatron.text:find("--pipeline-model-parallel-layout 'Et*7|", 1, true))
    -- the layout sets vpp: no other virtual-pipeline flag, no first/last counts
    assert.is_nil(v["--num-virtual-stages-per-pipeline-rank"])
    assert.is_nil(v["--num-layers-per-virtual-pipeline-stage"])
    assert.is_nil(v["--decoder-first-pipeline-num-layers"])
    assert.is_nil(v["--account-for-embedding-in-pipeline-split"])
    assert.are.equal("full", v["--recompute-granularity"])
    assert.are.equal("uniform", v["--recompute-method"])
    assert.are.equal("2", v["--recompute-num-layers"])
    assert.is_nil(v["--grad-reduce-in-bf16"])          -- absent: Megatron's fp32 main grads
  end)

  it("write nvfp4, fp4 param gather, CPU offload and CUDA graphs; notes where an engine lacks them", function()
    local tbl = b200_405b({ precision = "nvfp4", fp8_param_gather = true, activation_offload_layers = 4,
      cuda_graphs = true, store_param_remainders = true, torch_compile = true, compile_loss = false })
    tbl.model = "llama-3.1-8b"
    tbl.cluster.nodes = 1
    tbl.training.global_batch_size = 64
    local r, est = estimated(tbl, { tp_degree = 1, dp_degree = 8, zero_stage = 1 })
    assert.is_nil(est.reason, est.message)
    local by = check_all(r)
    local mg = by[1].megatron.text
    local _, v = parse_megatron(mg)
    assert.are.equal("e2m1", v["--fp4-format"])
    assert.are.equal("nvfp4", v["--fp4-recipe"])
    assert.is_nil(v["--fp8-format"])
    assert.is_true(v["--fp4-param-gather"])
    assert.are.equal("4", v["--cpu-offloading-num-layers"])
    -- CPU offloading: only the full-iteration graph (transformer_config.py)
    assert.are.equal("full_iteration", v["--cuda-graph-impl"])
    assert.is_true(v["--no-check-for-nan-in-loss-and-grad"])
    assert.truthy(mg:find("NOT EXPRESSIBLE in Megatron-LM: store_param_remainders", 1, true))
    local tt = by[1].torchtitan.text
    assert.truthy(tt:find("NOT EXPRESSIBLE in TorchTitan: nvfp4", 1, true))
    assert.truthy(tt:find("NOT EXPRESSIBLE in TorchTitan: activation offload", 1, true))
    assert.truthy(tt:find("NOT EXPRESSIBLE in TorchTitan: compiling the model but not the loss", 1, true))
    assert.is_nil(tt:find("converters =", 1, true))
    local mf = by[1].mindformers.text
    for _, what in ipairs({ "nvfp4 matmuls", "fp8_param_gather", "activation offload", "CUDA graphs" }) do
      assert.truthy(mf:find("NOT EXPRESSIBLE in MindFormers: " .. what, 1, true), what)
    end
  end)

  it("write per-layer TE CUDA graphs without full recompute, fp8 param gather for TorchTitan FSDP", function()
    local tbl = b200_405b({ precision = "fp8", cuda_graphs = true, fp8_param_gather = true,
      torch_compile = true })
    tbl.model = "llama-3.1-8b"
    tbl.cluster.nodes = 1
    tbl.training.global_batch_size = 64
    tbl.training.framework = "fsdp2"
    local r = estimated(tbl, { fsdp_degree = 8, layer_recompute = "selective" })
    local by = check_all(r)
    local _, v = parse_megatron(by[1].megatron.text)
    assert.are.equal("transformer_engine", v["--cuda-graph-impl"])
    -- estimated without dropout (Megatron's default is 0.1)
    assert.are.equal("0", v["--attention-dropout"])
    assert.are.equal("0", v["--hidden-dropout"])
    assert.are.equal("hybrid", v["--fp8-format"])
    assert.is_true(v["--fp8-param-gather"])
    assert.is_true(v["--use-torch-fsdp2"])
    local tt = by[1].torchtitan.text
    assert.truthy(tt:find('converters = ["float8"]', 1, true))
    assert.truthy(tt:find("enable_fsdp_float8_all_gather = true", 1, true))
    assert.truthy(tt:find("compile = true", 1, true))
  end)

  -- Megatron's per-chunk layer counts from the written flags (Lua copy of
  -- transformer_block.py get_num_layers_to_build and the layout parser @
  -- options.megatron.commit); chunks in schedule order (chunk j on rank j % p)
  local function megatron_chunks(v, L, pp, vpp)
    local out = {}
    local lay = v["--pipeline-model-parallel-layout"]
    if lay then
      for part in (lay .. "|"):gmatch("([^|]*)|") do
        local n = 0
        for rep in part:gmatch("t%*(%d+)") do n = n + tonumber(rep) end
        local bare = part:gsub("t%*%d+", ""):gsub("[^t]", "")
        out[#out + 1] = n + #bare
      end
      return out
    end
    local first, last = tonumber(v["--decoder-first-pipeline-num-layers"]), tonumber(v["--decoder-last-pipeline-num-layers"])
    local per = {}
    if first or last then
      local left, stages = L - (first or 0) - (last or 0), pp - (first and 1 or 0) - (last and 1 or 0)
      for r = 1, pp do per[r] = stages > 0 and left // stages or 0 end
      if first then per[1] = first end
      if last then per[pp] = last end
    else
      local n = L + (v["--account-for-embedding-in-pipeline-split"] and 1 or 0) +
        (v["--account-for-loss-in-pipeline-split"] and 1 or 0)
      for r = 1, pp do per[r] = n // pp end
    end
    for k = 0, vpp - 1 do for r = 1, pp do out[k * pp + r] = per[r] // vpp end end
    if v["--account-for-embedding-in-pipeline-split"] then out[1] = out[1] - 1 end
    if v["--account-for-loss-in-pipeline-split"] then out[#out] = out[#out] - 1 end
    return out
  end

  it("round trip: each Megatron script parses back into the estimated strategy, layers and model", function()
    local cases = {}
    for _, name in ipairs({ "llama3_70b_h100.lua", "llama3_8b_128k_cp.lua", "qwen25_7b_a100.lua" }) do
      cases[#cases + 1] = run_example(name, { top_k = 3 })
    end
    cases[#cases + 1] = (estimated(b200_405b({ precision = "mxfp8" }), { tp_degree = 8, pp_degree = 8,
      vpp_degree = 2, dp_degree = 8, zero_stage = 1, sequence_parallel = true, pipeline_split = "embedding_loss",
      layer_recompute = "full", recompute_method = "uniform", recompute_num_layers = { 2, 2, 2, 2, 2, 2, 2, 2 } }))
    cases[#cases + 1] = (estimated(b200_405b(), { tp_degree = 8, pp_degree = 8, vpp_degree = 2, dp_degree = 8,
      zero_stage = 1, sequence_parallel = true, stage_partition = chunks_16(), layer_recompute = "selective" }))
    local checked = 0
    for _, r in ipairs(cases) do
      local m, tr = r.inputs.model, r.inputs.training
      for _, f in ipairs(launch.render_all(r)) do
        if f.engine == "megatron" then
          checked = checked + 1
          local rec = r.top_k_strategies[f.rank]
          local stages = r.stage_summary[f.rank].stages
          assert.truthy(f.text:find(options.megatron.commit, 1, true), "names the Megatron-LM commit")
          local _, v = parse_megatron(f.text)
          for flag, val in pairs(v) do
            local fact = options.megatron.facts[flag]
            if val ~= true then
              assert.truthy(fact, "no fact for " .. flag)
              if fact.type == "int" then
                assert.truthy(math.tointeger(tonumber(val)), flag .. " " .. val)
                assert.is_true(tonumber(val) >= (fact.min or -math.huge), flag .. " " .. val)
              elseif fact.type == "int_pair" then
                assert.truthy(val:match("^%-?%d+,%-?%d+$"), flag .. " " .. val)
              end
              if fact.values then assert.is_true(fact.values[val] == true, flag .. " " .. val) end
            end
          end
          local N = function(k) return tonumber(v[k]) end
          local tp, pp, cp = N("--tensor-model-parallel-size"), N("--pipeline-model-parallel-size"), N("--context-parallel-size")
          local L = N("--num-layers")
          local chunks_written = v["--pipeline-model-parallel-layout"] and
            #megatron_chunks(v, L, pp, 1) // pp or nil
          local vpp = chunks_written or N("--num-virtual-stages-per-pipeline-rank") or
            (N("--num-layers-per-virtual-pipeline-stage") and L // (pp * N("--num-layers-per-virtual-pipeline-stage"))) or 1
          local dp = rec.devices_used // (tp * pp * cp)
          assert.are.same({ rec.tp_degree, rec.pp_degree, rec.cp_degree, rec.vpp_degree or 1, rec.dp_degree * rec.fsdp_degree },
            { tp, pp, cp, vpp, dp })
          assert.are.equal(rec.tp_degree > 1 and rec.sequence_parallel, v["--sequence-parallel"] == true)
          assert.are.equal(rec.micro_batch_size, N("--micro-batch-size"))
          assert.are.equal(tr.global_batch_size, N("--global-batch-size"))
          if (rec.micro_batch_num or 0) > 0 then -- 0: derived from the global batch, as Megatron does
            assert.are.equal(rec.micro_batch_num, N("--global-batch-size") // (N("--micro-batch-size") * dp))
          end
          assert.are.equal(tr.seq_length, N("--seq-length"))
          if tp > 1 or cp > 1 then
            assert.are.equal(v["--use-torch-fsdp2"] == true, f.text:find("\nunset CUDA_DEVICE_MAX_CONNECTIONS") ~= nil)
          end
          -- layers per pipeline rank and recompute per rank (per model chunk)
          local chunks = megatron_chunks(v, L, pp, vpp)
          for i = 1, pp do
            local n, rc = 0, 0
            for k = 0, vpp - 1 do
              local c = chunks[k * pp + i]
              n = n + c
              if v["--recompute-granularity"] == "full" then
                rc = rc + (v["--recompute-method"] == "uniform" and c or math.min(c, N("--recompute-num-layers")))
              end
            end
            assert.are.equal(stages[i].num_layers, n, "layers of pipeline rank " .. i)
            if rec.layer_recompute == "full" and not f.text:find("APPROXIMATE: recompute", 1, true) then
              assert.are.equal(stages[i].recompute_layers, rc, "recompute of pipeline rank " .. i)
            end
          end
          local want_gran = rec.layer_recompute ~= "none" and rec.layer_recompute or nil
          assert.are.equal(want_gran, v["--recompute-granularity"])
          -- precision and architecture
          local p = tr.precision
          assert.are.equal(p == "fp16", v["--fp16"] == true)
          assert.are.equal(p ~= "fp16", v["--bf16"] == true)
          assert.are.equal(p == "mxfp8" and "mxfp8" or nil, v["--fp8-recipe"])
          assert.are.same({ m.num_layers, m.hidden_size, m.ffn_hidden_size, m.num_attention_heads },
            { L, N("--hidden-size"), N("--ffn-hidden-size"), N("--num-attention-heads") })
          assert.are.equal(m.num_query_groups, N("--num-query-groups") or m.num_attention_heads)
          assert.are.equal(not m.tie_word_embeddings, v["--untie-embeddings-and-output-weights"] == true)
          assert.are.equal(m.qkv_bias and not m.attn_out_bias, v["--add-qkv-bias"] == true)
          assert.are.equal(m.norm == "rmsnorm" and "RMSNorm" or nil, v["--normalization"])
          assert.are.equal(m.mlp == "swiglu", v["--swiglu"] == true)
        end
      end
    end
    assert.is_true(checked >= 10)
  end)

  it("are valid bash, written atomically and executable", function()
    local r = run_example("llama3_70b_h100.lua", { top_k = 2 })
    local dir = os.tmpname()
    os.remove(dir)
    local files = launch.write(dir .. "/launch", r)
    assert.are.equal(6, #files)
    for _, f in ipairs(files) do
      local fh = assert(io.open(f.path, "rb"))
      assert.are.equal(f.text, fh:read("a"))
      fh:close()
      if f.name:match("%.sh$") then
        assert.is_true(os.execute("bash -n '" .. f.path .. "'") == true, f.name)
        assert.is_true(os.execute("test -x '" .. f.path .. "'") == true, f.name)
      end
    end
    os.execute("rm -rf '" .. dir .. "'")
  end)
end)
