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
local mindspore = require "apsearch.launch.mindspore"
local mcore = require "apsearch.launch.mindspore_mcore"

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
        line:match("^unset CUDA_DEVICE_MAX_CONNECTIONS  #") or
        line:match("^export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True  #") or
        line:match("^export NCCL_GRAPH_REGISTER=0  #") or
        line:match("^echo 'apsearch: not runnable as written: validate_args asserts .*' >&2; exit 1$"),
        "unexpected line: " .. line)
    end
  end
  return flags, values, torchrun
end

-- Python literal (the subset the TorchTitan module writes) to Lua
local function py_value(v)
  v = v:gsub("^%s+", ""):gsub("%s+$", "")
  if v == "True" then return true elseif v == "False" then return false elseif v == "None" then return nil end
  if v:match("^%-?%d+$") then return math.tointeger(tonumber(v)) end
  -- a Python float literal: a dot or an exponent
  if v:match("^%-?%d+%.%d*$") or v:match("^%-?%d+%.?%d*[eE][%-+]?%d+$") then
    return assert(math.type(tonumber(v)) == "float" and tonumber(v))
  end
  if v:match('^"') then return (v:match('^"(.*)"$')) end
  if v:match("^%[") then
    local out = {}
    for x in v:sub(2, -2):gmatch('"([^"]*)"') do out[#out + 1] = x end
    return out
  end
  local ctor, args = v:match("^([%w_%.]+)%((.*)%)$")
  assert(ctor, "not a Python literal: " .. v)
  local t = { ctor = ctor, args = {} }
  -- keyword arguments: name=value, value a literal or a list of strings
  for k, x in (args .. ","):gmatch("([%w_]+)=(%b[]),") do t.args[k] = py_value(x) end
  for k, x in (args .. ","):gmatch("([%w_]+)=([^,%[%]]+),") do t.args[k] = py_value(x) end
  return t
end

-- TorchTitan config module: imports, one function assigning config.<path>;
-- returns fields (path -> Lua value), imports, the base function, the
-- model_registry call, module_fqns_per_model_part, the run line, and
-- layer_fields: what the `for layer in config.model_spec.model.layers:`
-- loop sets on every layer (path under the layer -> Lua value)
-- one argument of the model block: int, bool, string, a name, name(int)
-- or Ctor.Config(k=v, ...) (one level)
local function model_arg(v)
  local ctor, args = v:match("^([%w_]+%.Config)%((.*)%)$")
  if ctor then
    local out = { ctor = ctor, args = {} }
    for k, x in (args .. ", "):gmatch("([%w_]+)=(.-), ") do out.args[k] = model_arg(x) end
    return out
  end
  if v:match("^[%w_]+%(%d+%)$") or (v:match("^[%a_][%w_]*$") and v ~= "True" and v ~= "False") then
    return { name = v }
  end
  return py_value(v)
end

-- `config.model_spec.model = Llama3Model.Config(` ... `    )`: the
-- arguments, layers=_build_llama3_layers( ... ) as t.model.layers
local function parse_model_block(lines)
  local model, layers = { ctor = "Llama3Model.Config", args = {} }, nil
  for _, line in ipairs(lines) do
    line = line:gsub("%s+#.*$", "")
    if line == "        layers=_build_llama3_layers(" then
      layers = { ctor = "_build_llama3_layers", args = {} }
    elseif line == "        )," then
      model.args.layers = assert(layers, "layers closed twice")
      layers = nil
    else
      local indent, k, v = line:match("^(%s+)([%w_]+)=(.-),$")
      assert(k, "bad model line: " .. line)
      assert(#indent == (layers and 12 or 8), "bad indent: " .. line)
      local into = layers or model
      assert(into.args[k] == nil, "argument twice: " .. k)
      into.args[k] = model_arg(v)
    end
  end
  assert(model.args.layers, "no layers")
  return model
end

-- `config.model_spec.model.layers = <builder>(` ... `    )`: an MoE
-- family's layer builder, one `name=value,` argument a line
local function parse_family_layers(builder, lines)
  local out = { ctor = builder, args = {}, names = {} }
  for _, line in ipairs(lines) do
    local k, v = line:match("^        ([%w_]+)=(.-),$")
    assert(k, "bad layers line: " .. line)
    assert(not out.names[k], "argument twice: " .. k)
    out.names[k] = true
    if v ~= "None" then out.args[k] = model_arg(v) end
  end
  return out
end

-- what a family model's own head sets (torchtitan.family_head_config)
local HEAD_FIELDS = { dim = true, vocab_size = true, enable_weight_tying = true, tok_embeddings = true, norm = true,
  lm_head = true }

local function parse_titan(text)
  local t = { fields = {}, imports = {}, order = {}, layer_fields = {} }
  local in_fn, fqns, in_loop, mblock, lblock = false, nil, false, nil, nil
  for line in text:gmatch("[^\n]*") do
    if in_loop and not line:match("^        ") then in_loop = false end
    if lblock then
      if line == "    )" then t.family_layers = parse_family_layers(lblock.builder, lblock) lblock = nil
      else lblock[#lblock + 1] = line end
    elseif mblock then
      if line == "    )" then t.model = parse_model_block(mblock) mblock = nil
      else mblock[#mblock + 1] = line end
    elseif line:match("^#") then
      local run = line:match("^#%s+PYTHONPATH=%S+ (torchrun .*)$")
      if run then t.run = run end
    elseif line == "" then
      -- blank
    elseif line:match("^from ") then
      local mod, names = line:match("^from ([%w_%.]+) import ([%w_, ]+)$")
      assert(mod, "bad import: " .. line)
      for n in names:gmatch("[%w_]+") do t.imports[#t.imports + 1] = { mod, n } end
    elseif line:match("^def ") then
      t.fn = assert(line:match("^def ([%w_]+)%(%) %-> Trainer%.Config:$"), "bad def: " .. line)
      in_fn = true
    elseif fqns then
      if line == "    ]" then t.fields["parallelism.module_fqns_per_model_part"] = fqns fqns = nil
      else fqns[#fqns + 1] = py_value(assert(line:match("^        (%b[]),$"), "bad fqn line: " .. line)) end
    else
      assert(in_fn, "statement outside the function: " .. line)
      line = line:gsub("%s+#.*$", "")
      if line:match("^    #") or line:match("^%s*$") then
        -- comment
      elseif line:match("^    raise NotImplementedError%(") then
        -- an MoE model HEAD's families cannot build: the module stops
        -- before training HEAD's dense llama3 in its place
        assert(not t.raises and not t.base, "one raise, first in the function: " .. line)
        t.raises = py_value(line:match("^    raise NotImplementedError%((.*)%)$"))
      elseif line == "    return config" then
        t.returns = true
      elseif line:match("^    config = ") then
        t.base = assert(line:match("^    config = ([%w_]+)%(%)$"), "bad base: " .. line)
      elseif line:match("^    config%.model_spec = ") then
        local flavor, rest = line:match('^    config%.model_spec = model_registry%("([%w%-%.]+)"(.*)%)$')
        assert(flavor, "bad model_spec: " .. line)
        t.flavor = flavor
        local conv = rest:match("^, converters=%[(.*)%]$")
        if conv then t.converter = py_value(conv) end
      elseif line == "    config.model_spec.model = Llama3Model.Config(" then
        assert(not t.model, "one model config")
        mblock = {}
      elseif line:match("^    config%.model_spec%.model%.layers = [%w_]+%($") then
        assert(not t.model and not t.family_layers, "one model config")
        lblock = { builder = line:match("= ([%w_]+)%($") }
      elseif line:match("^    config%.model_spec%.model = .*%.build%(%)%.convert%(config%.model_spec%.model%)$") then
        -- one per converter, in order (the MoE experts' grouped converter after the linears')
        assert(t.model or t.family_layers, "a converter after the model config")
        t.converters = t.converters or {}
        t.converters[#t.converters + 1] = py_value(line:match("^    config%.model_spec%.model = (.*)%.build%(%)%.convert%("))
        t.converter = t.converters[1]
      elseif line:match("^    config%.loss = ") then
        t.loss = line:match("^    config%.loss = ([%w_%.]+)%(")
      elseif line == "    config.parallelism.module_fqns_per_model_part = [" then
        fqns = {}
      elseif line == "    for layer in config.model_spec.model.layers:" then
        assert(not t.loop, "one layer loop")
        t.loop, in_loop = true, true
      elseif line == "    for layer_id, layer in enumerate(config.model_spec.model.layers):" then
        assert(not t.gqa and not t.loop and t.model, "one head-dim loop, after the model, before the layer loop")
        t.gqa = {}
      elseif t.gqa and not t.gqa.call then
        local args = assert(line:match("^        layer%.attention = make_gqa_config%((.*)%)$"), "bad head-dim line: " .. line)
        t.gqa.call = true
        for k, v in args:gmatch("([%w_]+)=([^,]+)") do t.gqa[k] = tonumber(v) or v end
      elseif in_loop then
        local path, v = line:match("^        layer%.([%w_%.]+) = (.+)$")
        assert(path, "bad layer line: " .. line)
        assert(t.layer_fields[path] == nil, "set twice: layer." .. path)
        t.layer_fields[path] = v == "None" and "None" or py_value(v)
      elseif line:match("^    config%.model_spec%.model%.[%w_]+ = ") then
        -- a family model's own head (torchtitan.family_head_config)
        local k, v = line:match("^    config%.model_spec%.model%.([%w_]+) = (.+)$")
        assert(HEAD_FIELDS[k], "not a head field: " .. line)
        t.head = t.head or {}
        t.head[k] = model_arg(v)
      else
        local path, v = line:match("^    config%.([%w_%.]+) = (.+)$")
        assert(path, "bad line: " .. line)
        t.fields[path] = py_value(v)
        t.order[#t.order + 1] = path
        if v == "None" then t.fields[path] = "None" end
      end
    end
  end
  assert(t.returns and t.base and t.flavor and t.fn, "incomplete module")
  return t
end

-- every name in a parsed module against the fact table
local function check_titan_facts(t)
  local TT = options.torchtitan
  for _, im in ipairs(t.imports) do
    assert.is_true(TT.imports[im[1]] ~= nil and TT.imports[im[1]][im[2]] == true,
      "TorchTitan has no " .. im[1] .. "." .. im[2])
  end
  assert.is_true(TT.base_configs[t.base] == true, t.base)
  if t.family_layers then
    -- an MoE family's model: its flavour, base config and builder arguments
    local fam
    for _, f in pairs(TT.families) do if f.builder == t.family_layers.ctor then fam = f end end
    assert.is_truthy(fam, "TorchTitan has no MoE builder " .. t.family_layers.ctor)
    assert.is_truthy(fam.flavors[t.flavor], t.flavor)
    assert.are.equal(fam.base, t.base)
    for k, x in pairs(t.family_layers.args) do
      local fact = fam.args[k]
      assert.is_truthy(fact, t.family_layers.ctor .. " has no argument " .. k)
      if k == "rope" then
        assert.are.equal(fam.rope, x.ctor)
        for rk, rx in pairs(x.args) do
          assert.is_true(fam.rope_args[rk] ~= nil and options.torchtitan_value_ok(fam.rope_args[rk], rx),
            x.ctor .. "." .. rk .. " = " .. tostring(rx))
        end
      else
        assert.is_true(options.torchtitan_value_ok(fact, x), t.family_layers.ctor .. "." .. k .. " = " .. tostring(x))
      end
    end
  else
    assert.is_true(TT.flavors[t.flavor] == true, t.flavor)
  end
  for path, v in pairs(t.fields) do
    local fact = TT.fields[path]
    assert.is_truthy(fact, "TorchTitan has no field " .. path)
    if type(v) == "table" and v.ctor then
      local spec = TT.constructors[v.ctor]
      assert.is_truthy(spec, "TorchTitan has no " .. v.ctor)
      assert.truthy(fact.type:find(v.ctor, 1, true), path .. " takes " .. fact.type)
      for k, x in pairs(v.args) do
        assert.is_truthy(spec[k], v.ctor .. " has no field " .. k)
        assert.is_true(options.torchtitan_value_ok(spec[k], x), v.ctor .. "." .. k)
      end
    elseif v == "None" then
      assert.truthy(fact.type:find("None", 1, true), path .. " cannot be None")
    elseif path ~= "parallelism.module_fqns_per_model_part" then
      assert.is_true(options.torchtitan_value_ok(fact, v), path .. " = " .. tostring(v))
    end
  end
  for path, v in pairs(t.layer_fields) do
    local fact = TT.layer_fields[path]
    assert.is_truthy(fact, "TorchTitan's layer config has no field " .. path)
    if v == "None" then v = nil end
    assert.is_true(options.torchtitan_value_ok(fact, v), "layer." .. path .. " = " .. tostring(v))
    if fact.type == "float" and v ~= nil then
      assert.are.equal("float", math.type(v), "layer." .. path .. " a Python float")
    end
  end
  if t.model then
    -- every argument of the model block and its constructors in the fact table
    local function check(call)
      local spec = assert(TT.model[call.ctor], "TorchTitan has no " .. call.ctor)
      for k, x in pairs(call.args) do
        local fact = spec[k]
        assert.is_truthy(fact, call.ctor .. " has no argument " .. k)
        if fact.type == "init" then
          assert.is_true(TT.model.inits[x.name:match("^[%w_]+")] == true, call.ctor .. "." .. k .. " = " .. x.name)
        elseif type(x) == "table" and x.ctor then
          assert.are.equal(fact.type == "list" and "_build_llama3_layers" or fact.type, x.ctor)
          check(x)
        else
          assert.is_true(options.torchtitan_value_ok(fact, x), call.ctor .. "." .. k .. " = " .. tostring(x))
        end
      end
    end
    check(t.model)
  end
  for _, conv in ipairs(t.converters or { t.converter }) do
    local spec = TT.constructors[conv.ctor]
    assert.is_truthy(spec, "TorchTitan has no " .. conv.ctor)
    for k, x in pairs(conv.args) do
      assert.is_true(spec[k] ~= nil and options.torchtitan_value_ok(spec[k], x), conv.ctor .. "." .. k)
    end
  end
  -- the run line: torchrun's own options, then -m torchtitan.train --module --config
  assert.truthy(t.run, "no run line")
  local tr_part, train = t.run:match("^torchrun (.-) %-m torchtitan%.train (.*)$")
  assert.truthy(tr_part, t.run)
  for fl in tr_part:gmatch("(%-%-[%w%-]+)") do
    assert.is_true(options.torchrun.options[fl] == true, "torchrun has no option " .. fl)
  end
  for fl in train:gmatch("(%-%-[%w%-]+)") do
    assert.is_true(TT.train_options[fl] == true, "torchtitan.train has no option " .. fl)
  end
  assert.are.equal(t.fn, train:match("%-%-config ([%w_]+)"))
end

-- the model shape a parsed module builds: its Llama3Model.Config, else
-- the flavour's (options.torchtitan.flavor_shapes); the biases from the
-- layer loop
local function titan_shape(t)
  local s = {}
  if t.family_layers then
    -- a family's layers (what the builder fixes: fam.fixed); the
    -- embeddings and lm_head are the flavour's
    local a = t.family_layers.args
    local fam
    for _, f in pairs(options.torchtitan.families) do if f.builder == t.family_layers.ctor then fam = f end end
    local fl, x = fam.flavors[t.flavor], fam.fixed or {}
    if t.head then
      -- the model's own head over the flavour's
      local h = t.head
      fl = { dim = h.dim, vocab_size = h.vocab_size, tied = h.enable_weight_tying == true }
      assert.are.same({ h.vocab_size, h.dim }, { h.tok_embeddings.args.num_embeddings, h.tok_embeddings.args.embedding_dim })
      assert.are.same({ h.dim, h.vocab_size }, { h.lm_head.args.in_features, h.lm_head.args.out_features })
      assert.are.equal(fl.tied and fam.head.tied_embedding_init or fam.head.embedding_init,
        h.tok_embeddings.args.param_init.name, "the flavours' embedding init")
    end
    assert.are.equal(fl.dim, a.dim, "the flavour's dim is the layers'")
    s = { dim = a.dim, vocab_size = fl.vocab_size, enable_weight_tying = fl.tied == true, n_layers = a.n_layers,
      n_heads = a.n_heads or x.n_heads, n_kv_heads = a.n_kv_heads or x.n_kv_heads or a.n_heads,
      hidden_dim = a.dense_hidden_dim,
      head_dim = a.head_dim or x.head_dim or (a.qk_nope_head_dim + a.qk_rope_head_dim),
      max_context_length = a.rope.args.max_context_length }
    if not fam.moe then s.hidden_dim = a.hidden_dim end   -- a dense family's FFN width
    if fam.builder == "_build_gptoss_layers" then
      -- _make_gptoss_attn_config's and the experts' biases
      s.qkv_bias, s.attn_out_bias, s.mlp_bias = true, true, true
      return s
    end
  elseif t.model then
    local a, b = t.model.args, t.model.args.layers.args
    s = { dim = a.dim, vocab_size = a.vocab_size, enable_weight_tying = a.enable_weight_tying,
      n_layers = b.n_layers, n_heads = b.n_heads, n_kv_heads = b.n_kv_heads, hidden_dim = b.hidden_dim,
      head_dim = b.rope.args.dim, max_context_length = b.rope.args.max_context_length }
    -- the builder derives the head dim (make_gqa_config: dim // n_heads);
    -- another is each layer's attention rebuilt with it and the layer's
    -- own inner attention, RoPE and inits
    if t.gqa then
      local g = t.gqa
      assert.are.same({ a.dim, b.n_heads, b.n_kv_heads, s.head_dim }, { g.dim, g.n_heads, g.n_kv_heads, g.head_dim })
      assert.are_not.equal(a.dim // b.n_heads, g.head_dim, "rebuilt only when the builder's differs")
      assert.are.same({ "_LINEAR_INIT", "_depth_init(layer_id)", "layer.attention.inner_attention",
        "layer.attention.rope", "True" }, { g.wqkv_param_init, g.wo_param_init, g.inner_attention, g.rope, g.fuse_qkv })
    else
      assert.are.equal(a.dim // b.n_heads, s.head_dim, "RoPE dim is the builder's head dim")
    end
    assert.are.same({ a.vocab_size, a.dim }, { a.tok_embeddings.args.num_embeddings, a.tok_embeddings.args.embedding_dim })
    assert.are.same({ a.dim, a.vocab_size }, { a.lm_head.args.in_features, a.lm_head.args.out_features })
    assert.are.equal(a.dim, a.norm.args.normalized_shape)
    assert.are.equal(a.enable_weight_tying and "_EMBEDDING_SKIP_INIT" or "_EMBEDDING_INIT",
      a.tok_embeddings.args.param_init.name, "the flavours' embedding init")
  else
    for k, v in pairs(options.torchtitan.flavor_shapes[t.flavor]) do s[k] = v end
  end
  local L = t.layer_fields
  s.qkv_bias = L["attention.qkv_linear.wqkv.bias"] == true
  s.attn_out_bias = L["attention.wo.bias"] == true
  s.mlp_bias = L["feed_forward.w1.bias"] == true and L["feed_forward.w2.bias"] == true and L["feed_forward.w3.bias"] == true
  return s
end

-- what the estimate's model should give (r.inputs.model, seq_length, pp)
local function expected_shape(m, seq, pp)
  local mp = m.max_position_embeddings or 0
  return { dim = m.hidden_size, n_layers = m.num_layers, n_heads = m.num_attention_heads,
    n_kv_heads = m.num_query_groups or m.num_attention_heads, head_dim = m.head_dim or m.hidden_size // m.num_attention_heads,
    hidden_dim = m.ffn_hidden_size, vocab_size = m.vocab_size,
    enable_weight_tying = m.tie_word_embeddings == true and pp == 1,
    max_context_length = mp >= seq and mp or seq,
    qkv_bias = m.qkv_bias == true, attn_out_bias = m.attn_out_bias == true, mlp_bias = m.mlp_bias == true }
end

-- the strategy and training a parsed module describes: degrees, batch,
-- layers per pipeline rank (TorchTitan's split; stage to rank loop-style,
-- or on the V for ZBVZeroBubble and DualPipeV: pipeline_parallel.py
-- generate_stage_to_rank_mapping), recompute, compile, precision
local function titan_roundtrip(t)
  local f = t.fields
  local s = {
    dp_degree = f["parallelism.data_parallel_replicate_degree"],
    fsdp_degree = f["parallelism.data_parallel_shard_degree"],
    tp_degree = f["parallelism.tensor_parallel_degree"],
    pp_degree = f["parallelism.pipeline_parallel_degree"],
    cp_degree = f["parallelism.context_parallel_degree"],
    sequence_parallel = f["parallelism.enable_sequence_parallel"],
    micro_batch_num = f["parallelism.num_pp_microbatches"],
  }
  local seq = f["training.max_context_length"]
  s.micro_batch_size = f["training.num_tokens_per_microbatch_per_dp_rank"] // seq
  local tr = { seq_length = seq, global_batch_size = f["training.num_tokens_per_train_step"] // seq }
  local ac = f["activation_checkpoint"]
  s.layer_recompute = ac == "None" and "none" or (ac.ctor == "FullAC.Config" and "full" or "selective")
  tr.torch_compile = f["compile"].args.enable
  local comps = f["compile"].args.components
  tr.compile_loss = comps[2] == "loss"
  tr.tp_comm_overlap = f["compile"].args.enable_async_tensor_parallel
  local conv = t.converter and t.converter.ctor
  tr.precision = conv == "Float8LinearConverter.Config" and "fp8" or conv == "MXFP8LinearConverter.Config" and "mxfp8"
    or conv == "NVFP4LinearConverter.Config" and "nvfp4" or "bf16"
  if s.pp_degree > 1 then
    local p = s.pp_degree
    local parts = f["parallelism.module_fqns_per_model_part"]
    local chunks = {}
    if parts then
      for j, part in ipairs(parts) do
        chunks[j] = 0
        for _, name in ipairs(part) do if name:match("^layers%.") then chunks[j] = chunks[j] + 1 end end
      end
    else
      local L = t.num_layers
      local iw = f["parallelism.pipeline_parallel_first_stage_less_layers"]
      local ow = f["parallelism.pipeline_parallel_last_stage_less_layers"]
      local lps = f["parallelism.pipeline_parallel_layers_per_stage"]
      local S = lps and math.ceil((L + iw + ow) / lps)
        or p * (f["parallelism.pipeline_parallel_schedule"] == "1F1B" and 1 or 2)
      chunks = require("apsearch.launch.torchtitan").titan_split(S, L, iw, ow)
    end
    s.vpp_degree = #chunks // p
    s.layers = {}
    local sched = f["parallelism.pipeline_parallel_schedule"]
    local v_shaped = sched == "ZBVZeroBubble" or sched == "DualPipeV"
    for j, n in ipairs(chunks) do
      local i = v_shaped and (j <= p and j or 2 * p + 1 - j) or (j - 1) % p + 1
      s.layers[i] = (s.layers[i] or 0) + n
    end
  end
  return s, tr
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
local mf_value_ok

local function yaml_list(v)
  local out = {}
  for x in tostring(v):gmatch("%-?%d+") do out[#out + 1] = tonumber(x) end
  return out
end

-- a YAML value against a MindFormers fact (apsearch.launch.options)
mf_value_ok = function(spec, v)
  local t = spec.type
  if v == "null" then return spec.null == true end
  if t == "strings" or t == "floats" then
    local body = v:match("^%[(.*)%]$")
    if not body then return false end
    for item in body:gmatch("[^,]+") do
      local ok = mf_value_ok({ type = t == "strings" and "string" or "float", values = spec.values },
        item:match("^%s*(.-)%s*$"))
      if not ok then return false end
    end
    return true
  end
  if t == "bool" then return v == "True" or v == "False" end
  if t == "int" then
    local n = math.tointeger(tonumber(v))
    return n ~= nil and v:match("^%-?%d+$") ~= nil and n >= (spec.min or -math.huge)
  end
  if t == "float" then
    -- PyYAML's float resolver: a dot is needed, an exponent is signed
    local yaml11 = v:match("^[-+]?%d[%d_]*%.[%d_]*$") ~= nil or
      v:match("^[-+]?%d[%d_]*%.[%d_]*[eE][-+]%d+$") ~= nil
    return yaml11 and tonumber(v) > (spec.min or -math.huge)
  end
  if t == "string" then
    local s = v:match('^"(.*)"$')
    return s ~= nil and spec.values[s] == true
  end
  if t == "offset" then
    return v:match("^%-?%d+$") ~= nil or v:match("^%[[%d%s,%-%[%]]*%]$") ~= nil
  end
  if t == "layers" then
    return v == "True" or v == "False" or v:match("^%[[%d%s,%[%]]*%]$") ~= nil
  end
  if t == "patterns" then
    if v == "True" or v == "False" then return true end
    local body = v:match("^%[(.*)%]$")
    if not body then return false end
    for item in body:gmatch("[^,]+") do
      if not (item:match("^%s*'[%w_\\%.]+'%s*$") or item:match('^%s*"[%w_]+"%s*$')) then return false end
    end
    return true
  end
  return false
end

-- the YAML read back into a nested table (the subset the generator writes:
-- scalars, flow lists of numbers or quoted strings)
local function yaml_tree(text)
  local root, stack = {}, {}
  local function scalar(x)
    x = x:match("^%s*(.-)%s*$")
    if x == "True" then return true elseif x == "False" then return false end
    if x:match("^'.*'$") then return (x:sub(2, -2):gsub("''", "'")) end
    if x:match('^".*"$') then return x:sub(2, -2) end
    return assert(tonumber(x), "not a scalar: " .. x)
  end
  local function value(x)
    if x:sub(1, 1) ~= "[" then return scalar(x) end
    local pos = 1
    local function list()
      assert(x:sub(pos, pos) == "[")
      pos = pos + 1
      local out = {}
      while true do
        local c = x:sub(pos, pos)
        if c == "]" then pos = pos + 1 return out
        elseif c == "," or c == " " then pos = pos + 1
        elseif c == "[" then out[#out + 1] = list()
        else
          local item = x:match("^'[^']*'", pos) or x:match("^[^,%]]+", pos)
          pos = pos + #item
          out[#out + 1] = scalar(item)
        end
      end
    end
    return list()
  end
  for _, leaf in ipairs(parse_yaml(text)) do
    local n = root
    local segs = {}
    for seg in leaf.path:gmatch("[^%.]+") do segs[#segs + 1] = seg end
    for i = 1, #segs - 1 do
      n[segs[i]] = n[segs[i]] or {}
      n = n[segs[i]]
    end
    n[segs[#segs]] = value(leaf.value)
  end
  return root
end

-- MindFormers' LayerSetting (mindformers/models/utils.py @ fd4deebc) in
-- Lua: layers per pipeline stage and recomputed layers per stage for the
-- YAML's offset, pp_interleave_num and recompute
local function layer_setting(y, layers)
  local mc, pc = y.model.model_config, y.parallel_config
  local L, p = mc.num_layers or layers, pc.pipeline_stage   -- layers: num_hidden_layers + MTP layers
  local interleave = y.parallel and y.parallel.pipeline_config and y.parallel.pipeline_config.pipeline_interleave
  local v = interleave and (mc.pp_interleave_num or 1) or 1
  local off = mc.offset
  local function o(k, i)
    if type(off) == "number" then return off end
    if type(off[1]) == "table" then return off[k][i] end
    return off[i]
  end
  local chunk, sum = {}, 0
  for k = 1, v do
    chunk[k] = {}
    for i = 1, p do chunk[k][i] = L // (p * v) + o(k, i) sum = sum + chunk[k][i] end
  end
  assert(sum == L, "offsets do not add up to num_layers mod (p v)")
  local per_stage, rc = {}, {}
  for i = 1, p do
    per_stage[i] = 0
    for k = 1, v do per_stage[i] = per_stage[i] + chunk[k][i] end
  end
  local r = y.recompute_config.recompute
  for i = 1, p do
    if r == true then rc[i] = per_stage[i]
    elseif r == false then rc[i] = 0
    elseif type(r[1]) == "table" then
      rc[i] = 0
      for k = 1, v do rc[i] = rc[i] + math.min(r[k][i], chunk[k][i]) end
    else rc[i] = math.min(r[i], per_stage[i]) end   -- _alloc_recompute_layer
  end
  return per_stage, rc
end

-- checks every file of a result; returns them by rank and engine
local function check_all(r)
  local files = launch.render_all(r)
  assert.are.equal(#launch.engines * #r.top_k_strategies, #files)
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
      local t = parse_titan(f.text)
      t.num_layers = r.inputs.model.num_layers
      check_titan_facts(t)
      assert.are.equal(string.format("rank%d_torchtitan.py", f.rank), f.name)
      assert.truthy(f.text:find(options.torchtitan.source.commit, 1, true), "names the commit")
      local s, tr = titan_roundtrip(t)
      -- the module builds the estimate's model
      local want = expected_shape(r.inputs.model, r.inputs.training.seq_length, rec.pp_degree or 1)
      if t.family_layers and t.family_layers.ctor ~= "_build_qwen3_layers" and not t.family_layers.args.n_dense_layers then
        want.hidden_dim = nil   -- every layer MoE (_build_qwen3_moe_layers, _build_gptoss_layers): no dense FFN width
      end
      assert.are.same(want, titan_shape(t))
      local prod = s.dp_degree * s.fsdp_degree * s.tp_degree * s.pp_degree * s.cp_degree
      -- the round trip reproduces the strategy (ZeRO-1/2 over replicas as
      -- FSDP over them, dp_degrees) and the training
      local want_r, want_s = require("apsearch.launch.torchtitan").dp_degrees(rec)
      assert.are.equal(want_r, s.dp_degree)
      assert.are.equal(want_s, s.fsdp_degree)
      assert.are.equal(rec.tp_degree or 1, s.tp_degree)
      assert.are.equal(rec.pp_degree or 1, s.pp_degree)
      assert.are.equal(rec.cp_degree or 1, s.cp_degree)
      assert.are.equal(rec.micro_batch_size or 1, s.micro_batch_size)
      local tin = r.inputs.training
      assert.are.equal(tin.global_batch_size, tr.global_batch_size)
      assert.are.equal(tin.seq_length, tr.seq_length)
      if (rec.tp_degree or 1) > 1 then assert.are.equal(rec.sequence_parallel ~= false, s.sequence_parallel) end
      if (rec.pp_degree or 1) > 1 then
        assert.are.equal(rec.vpp_degree or 1, s.vpp_degree)
        local layers = {}
        for i, st in ipairs(r.stage_summary[rec.rank].stages) do layers[i] = st.num_layers end
        assert.are.same(layers, s.layers)
        if rec.micro_batch_num and rec.micro_batch_num > 0 then assert.are.equal(rec.micro_batch_num, s.micro_batch_num) end
      end
      assert.are.equal(rec.layer_recompute or "none", s.layer_recompute)
      local prec = tin.precision == "fp16" and "bf16" or tin.precision
      assert.are.equal(prec, tr.precision)
      if tin.framework == "fsdp2" or tin.framework == "fsdp" then
        assert.are.equal(tin.torch_compile == true, tr.torch_compile)
      end
      assert.are.equal(tin.compile_loss ~= false, tr.compile_loss)
      assert.are.equal(used, prod, "TorchTitan degrees multiply to the devices")
    elseif f.engine == "automodel" then
      -- tests/lua/launch_automodel_spec.lua checks its keys; here: only
      -- listed keys, and dp x cp x tp x pp = the devices
      local am = require "apsearch.launch.automodel"
      local prod = 1
      for _, leaf in ipairs(parse_yaml(f.text)) do
        assert.is_truthy(am.keys[leaf.path], "AutoModel key not listed: " .. leaf.path)
        local degree = { ["distributed.dp_size"] = true, ["distributed.tp_size"] = true,
          ["distributed.cp_size"] = true, ["distributed.pp_size"] = true }
        if degree[leaf.path] then prod = prod * num(leaf.value) end
      end
      if not f.text:find("\n  strategy: ddp", 1, true) then
        assert.are.equal(used, prod, "AutoModel degrees multiply to the devices")
      end
    else
      local prod = 1
      for _, leaf in ipairs(parse_yaml(f.text)) do
        local spec = options.mindformers.keys[leaf.path]
        assert.is_truthy(spec, "MindFormers has no key " .. leaf.path)
        assert.is_true(mf_value_ok(spec, leaf.value), leaf.path .. ": " .. leaf.value .. " is not a " .. spec.type)
        local degree = { ["parallel_config.data_parallel"] = true, ["parallel_config.model_parallel"] = true,
          ["parallel_config.context_parallel"] = true, ["parallel_config.pipeline_stage"] = true }
        if degree[leaf.path] then
          prod = prod * num(leaf.value)
        end
      end
      assert.are.equal(used, prod, "MindFormers degrees multiply to the devices")
      -- round trip: the YAML parsed back gives the strategy and training
      local y = yaml_tree(f.text)
      local pc, mc = y.parallel_config, y.model.model_config
      local tr, m = r.inputs.training, r.inputs.model
      assert.are.equal(rec.tp_degree, pc.model_parallel)
      assert.are.equal(rec.pp_degree, pc.pipeline_stage)
      assert.are.equal(rec.cp_degree, pc.context_parallel)
      assert.are.equal(rec.dp_degree * rec.fsdp_degree, pc.data_parallel)
      assert.are.equal(rec.tp_degree > 1 and rec.sequence_parallel == true, pc.use_seq_parallel)
      assert.are.equal(rec.micro_batch_size, y.runner_config.batch_size)
      local mbn = rec.pp_degree > 1 and pc.micro_batch_num or y.runner_config.gradient_accumulation_steps
      if (rec.micro_batch_num or 0) > 0 then assert.are.equal(rec.micro_batch_num, mbn) end
      assert.are.equal(tr.global_batch_size, pc.data_parallel * y.runner_config.batch_size * mbn)
      assert.are.equal(rec.vpp_degree, mc.pp_interleave_num or 1)
      assert.are.equal(tr.seq_length, mc.seq_length)
      local shapes = #mindspore.shape_lacks(m) == 0
      -- else MindFormers' qwen3 / qwen3_moe / deepseek_v3 model (use_legacy False)
      local fam, fam_lacks = mcore.family(m, tr.seq_length)
      local mcore_ok = not shapes and #fam_lacks == 0
      -- a model neither holds: no architecture key, and the note
      assert.are.equal(shapes or mcore_ok, f.text:find("\n# NOT WRITTEN: the model's architecture", 1, true) == nil)
      assert.are.equal(shapes, mc.type == "LlamaConfig")
      assert.are.equal(mcore_ok and fam or nil, mc.model_type)
      if shapes and (m.num_experts or 0) > 0 then assert.is_table(y.moe_config) end
      if mcore_ok then
        assert.is_false(y.use_legacy)
        assert.is_nil(y.moe_config)
        assert.are.same({ m.num_layers, m.hidden_size, m.num_attention_heads, m.num_query_groups, m.ffn_hidden_size,
          m.vocab_size }, { mc.num_hidden_layers, mc.hidden_size, mc.num_attention_heads, mc.num_key_value_heads,
          mc.intermediate_size, mc.vocab_size })
        if (m.num_experts or 0) > 0 then
          assert.are.equal(m.num_experts, mc.num_experts or mc.n_routed_experts)
          assert.are.equal(m.moe_ffn_hidden_size, mc.moe_intermediate_size)
          assert.are.equal(rec.ep_degree, pc.expert_parallel)
        end
      end
      if shapes then
        assert.are.equal(m.num_layers, mc.num_layers)
        assert.are.equal(m.hidden_size, mc.hidden_size)
        assert.are.equal(m.num_attention_heads, mc.num_heads)
        assert.are.equal(m.num_query_groups, mc.n_kv_heads)
        assert.are.equal(mindspore.intermediate_size(m), mc.intermediate_size)
        assert.are.equal(m.vocab_size, mc.vocab_size)
      elseif not mcore_ok then
        assert.is_nil(mc.num_layers or mc.hidden_size or mc.intermediate_size or y.moe_config or y.use_legacy)
      end
      assert.are.equal(tr.flash_attention ~= false, mc.use_flash_attention)
      -- use_legacy False: TransformerConfig reads select_recompute from model_config only
      local sel = mcore_ok and mc.select_recompute or y.recompute_config.select_recompute
      assert.are.equal(rec.layer_recompute == "selective", type(sel) == "table")
      if not f.text:find("NOT EXPRESSIBLE in MindFormers: [^\n]*model chunks") then
        -- DeepSeek-V3's MTP layers: LayerSetting places them last
        local mtp = mc.num_nextn_predict_layers or 0
        local per_stage, rc = layer_setting(y, m.num_layers + mtp)
        local ss = r.stage_summary[rec.rank].stages
        for i = 1, rec.pp_degree do
          assert.are.equal(ss[i].num_layers + (i == rec.pp_degree and mtp or 0), per_stage[i], "layers of stage " .. i)
          if rec.layer_recompute == "full" then
            assert.are.equal(ss[i].recompute_layers or 0, rc[i], "recomputed layers of stage " .. i)
          else
            assert.are.equal(0, rc[i])
          end
        end
      end
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

-- Llama-3.1-8B on 8 H100 with Megatron-LM (global batch 128 x 8192), the
-- training fields given over it
local function h100_8b(training)
  local tr = { global_batch_size = 128, seq_length = 8192, framework = "megatron" }
  for k, v in pairs(training) do tr[k] = v end
  return { model = "llama-3.1-8b", cluster = { device = "h100-sxm-80gb", nodes = 1, devices_per_node = 8 },
    training = tr, top_k = 1 }
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
        assert.truthy(tt:find("config.parallelism.data_parallel_replicate_degree = " .. rec.dp_degree, 1, true))
        assert.truthy(tt:find("config.parallelism.data_parallel_shard_degree = " .. rec.fsdp_degree, 1, true))
        assert.truthy(by[rec.rank].mindformers.text:find("optimizer_weight_shard_size: " .. rec.fsdp_degree, 1, true))
      elseif rec.fsdp_degree > 1 then
        fsdp = fsdp + 1
        assert.is_true(values["--use-torch-fsdp2"])
        assert.are.equal(rec.reshard_after_forward == false, values["--torch-fsdp2-no-reshard-after-forward"] == true)
      end
      local ac = by[rec.rank].torchtitan.text:match("config%.activation_checkpoint = (%w+)")
      local mode = ({ FullAC = "full", SelectiveAC = "selective", None = "none" })[ac]
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

  it("write all-to-all CP as Megatron's --cp-comm-type a2a, MindFormers ulysses_cp; TorchTitan cannot", function()
    -- Llama-3.1-8B (8 query groups) on 8 H100, tp 2 x pp 2 x cp 2: 4 groups a TP rank over 2
    local tbl = { model = "llama-3.1-8b", cluster = { device = "h100-sxm-80gb", nodes = 1, devices_per_node = 8 },
      training = { global_batch_size = 8, seq_length = 65536, framework = "megatron" }, top_k = 1 }
    local strat = { tp_degree = 2, pp_degree = 2, cp_degree = 2, cp_comm_type = "a2a", micro_batch_size = 1,
      layer_recompute = "full" }
    local r, est = estimated(tbl, strat)
    assert.is_true(est.feasible, est.reason_msg)
    local by = check_all(r)[1]
    local _, v = parse_megatron(by.megatron.text)
    assert.are.equal("2", v["--context-parallel-size"])
    assert.are.equal("a2a", v["--cp-comm-type"])
    assert.falsy(by.megatron.text:find("NOT ", 1, true))
    assert.truthy(by.torchtitan.text:find("NOT EXPRESSIBLE in TorchTitan: cp_comm_type = a2a: TorchTitan's " ..
      "context parallelism is ring attention", 1, true))
    assert.truthy(by.mindformers.text:find('context_parallel_algo: "ulysses_cp"', 1, true))
    -- MindFormers' YAMLs: device_target "Ascend" (only supports "Ascend"):
    -- the file says its header's estimate is of another framework's job
    -- on the cluster's devices (a new user's Ascend device table read it
    -- as about the device alone)
    assert.truthy(by.mindformers.text:find("# NOTE: MindFormers runs on Ascend NPUs only (context.device_target " ..
      '"Ascend"); the estimate above is of a training.framework = ' .. r.inputs.training.framework .. " job on " ..
      r.inputs.cluster.device.name .. ", so this file carries the layout", 1, true))
    -- the release's TOML: its rotate methods are ring attention too
    r.inputs.torchtitan_version = "v0.2.2"
    for _, f in ipairs(launch.render_all(r)) do
      if f.engine == "torchtitan" then
        assert.truthy(f.text:find("NOT EXPRESSIBLE in TorchTitan: cp_comm_type = a2a: the release's", 1, true))
        assert.falsy(f.text:find("\ncontext_parallel_rotate_method =", 1, true))
      end
    end
    -- all_gather as TransformerEngine spells it (the help's "allgather" raises in TE)
    strat.cp_comm_type = "all_gather"
    r = estimated(tbl, strat)
    by = check_all(r)[1]
    _, v = parse_megatron(by.megatron.text)
    assert.are.equal("all_gather", v["--cp-comm-type"])
    -- TorchTitan HEAD all-gathers K/V (decoder_sharding.py
    -- set_gqa_inner_attention_local_map): all_gather is what it builds,
    -- the p2p ring is not
    assert.truthy(by.torchtitan.text:find("NOTE: cp_comm_type = all_gather: TorchTitan all-gathers K/V", 1, true))
    assert.falsy(by.torchtitan.text:find("NOT EXPRESSIBLE in TorchTitan: cp_comm_type", 1, true))
    strat.cp_comm_type = "p2p"
    r = estimated(tbl, strat)
    assert.truthy(check_all(r)[1].torchtitan.text:find("NOT EXPRESSIBLE in TorchTitan: cp_comm_type = p2p (the " ..
      "ring): TorchTitan all-gathers K/V", 1, true))
    -- the release's "alltoall" rotate method passes K/V round the ring
    r.inputs.torchtitan_version = "v0.2.2"
    for _, f in ipairs(launch.render_all(r)) do
      if f.engine == "torchtitan" then
        assert.truthy(f.text:find('\ncontext_parallel_rotate_method = "alltoall"', 1, true), f.text)
      end
    end
  end)

  -- TorchTitan HEAD's files write moe_comm_backend "standard", its
  -- all-to-all dispatcher (config_utils.py @ b5bcd76c l.416-420)
  it("say the TorchTitan file's dispatcher differs from an all-gather or flex estimate", function()
    local tbl = { model = "qwen3-30b-a3b", cluster = { device = "h100-sxm-80gb", nodes = 2, devices_per_node = 8 },
      training = { global_batch_size = 64, seq_length = 4096, framework = "megatron" }, top_k = 1 }
    local strat = { dp_degree = 16, ep_degree = 8, zero_stage = 1, micro_batch_size = 1, layer_recompute = "full",
      moe_token_dispatcher = "allgather" }
    local r, est = estimated(tbl, strat)
    assert.is_true(est.feasible, est.reason_msg)
    local tt = check_all(r)[1].torchtitan.text
    assert.truthy(tt:find('moe_comm_backend="standard"', 1, true), tt)
    assert.truthy(tt:find("NOT EXPRESSIBLE in TorchTitan: moe_token_dispatcher = allgather: written with " ..
      "moe_comm_backend \"standard\"", 1, true), tt)
    strat.moe_token_dispatcher = "alltoall"
    tt = check_all((estimated(tbl, strat)))[1].torchtitan.text
    assert.falsy(tt:find("moe_token_dispatcher", 1, true))
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
        assert.truthy(by[rec.rank].torchtitan.text:find('context_parallel_load_balancer = "headtail"', 1, true))
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

  it("write DualPipeV for TorchTitan, its stages on the V; Megatron and MindFormers refuse it", function()
    -- 70B: 80 layers + embedding + loss over 8 chunks (11 11 10 x 6, the
    -- first and last one fewer): rank 1 holds chunks 1 and 8 (10 + 9)
    local r = run_example("llama3_70b_h100.lua", { top_k = 2, set = { "search_space.pp_degree=4",
      "search_space.vpp_degree=2", "search_space.pp_schedule=dualpipev", "search_space.pipeline_split=embedding_loss" } })
    assert.is_true(#r.top_k_strategies > 0)
    local by = check_all(r)
    for _, rec in ipairs(r.top_k_strategies) do
      assert.are.equal("dualpipev", rec.pp_schedule)
      local t = parse_titan(by[rec.rank].torchtitan.text)
      assert.are.equal("DualPipeV", t.fields["parallelism.pipeline_parallel_schedule"])
      local layers = {}
      for i, st in ipairs(r.stage_summary[rec.rank].stages) do layers[i] = st.num_layers end
      assert.are.same({ 19, 21, 20, 20 }, layers)
      assert.truthy(by[rec.rank].megatron.text:find("NOT EXPRESSIBLE in Megatron-LM: pp_schedule = dualpipev", 1, true))
      assert.truthy(by[rec.rank].mindformers.text:find("NOT EXPRESSIBLE in MindFormers: pp_schedule = dualpipev", 1, true))
    end
  end)

  it("write Megatron's micro-batch group size; the other engines note it NOT EXPRESSIBLE", function()
    -- 8B on PP 4 x VPP 2: G = 8 groups of the interleaved table (Megatron
    -- --microbatch-group-size-per-virtual-pipeline-stage), written as
    -- searched; G = 0 (Megatron's default, pp) writes nothing, and G = pp
    -- is the same candidate
    local r = run_example("llama3_8b_h100.lua", { top_k = 6, set = { "training.framework=megatron",
      "search_space.pp_degree=4", "search_space.vpp_degree=2", "search_space.microbatch_group_size=0,4,8",
      "search_space.micro_batch_size=1", "search_space.layer_recompute=full" } })
    local by, groups = check_all(r), {}
    for _, rec in ipairs(r.top_k_strategies) do
      local G = rec.microbatch_group_size or 0
      assert.are_not.equal(4, G)
      groups[G] = true
      local _, values = parse_megatron(by[rec.rank].megatron.text)
      local flag = values["--microbatch-group-size-per-virtual-pipeline-stage"]
      assert.are.equal(G == 8 and "8" or nil, flag)
      local titan = by[rec.rank].torchtitan.text
      assert.are.equal(G == 8, titan:find("NOT EXPRESSIBLE in TorchTitan: microbatch_group_size = 8", 1, true) ~= nil)
    end
    assert.is_true(groups[8] and groups[0], "both among the top 6")
  end)

  it("write one stage per rank for InterleavedZeroBubble at vpp 1 (HEAD's default for it is two)", function()
    -- a looped schedule gets 2 stages per rank from TorchTitan unless told
    -- (pipeline_parallel.py _get_pipeline_metadata), and layers_per_stage
    -- cannot give it 1 ("Multi-stage schedule requires at least 2 stages
    -- per rank"): the pp stages are spelled out; 8B, pp 2: 32 + 2 units,
    -- 17 each, less the embedding and the loss: 16, 16
    local r = run_example("llama3_8b_h100.lua", { top_k = 3, set = { "search_space.pp_degree=2",
      "search_space.vpp_degree=1", "search_space.tp_degree=2", "search_space.pp_schedule=interleaved_zero_bubble" } })
    assert.is_true(#r.top_k_strategies > 0)
    local by = check_all(r)
    for _, rec in ipairs(r.top_k_strategies) do
      assert.are.equal("interleaved_zero_bubble", rec.pp_schedule)
      assert.are.equal(1, rec.vpp_degree)
      local t = parse_titan(by[rec.rank].torchtitan.text)
      assert.are.equal("InterleavedZeroBubble", t.fields["parallelism.pipeline_parallel_schedule"])
      assert.are.equal(2, #t.fields["parallelism.module_fqns_per_model_part"])
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
      -- TorchTitan: the split comes back through the round trip (check_all)
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
      return tostring(parse_titan(text).fields["compile"].args.enable)
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

  it("write the exact model: RoPE base, llama3 scaling and norm epsilon (Llama-3.1-8B, Qwen2.5-7B)", function()
    local function files(model)
      local p = policy.from_table({
        model = model,
        cluster = { device = "h100-sxm-80gb", nodes = 1, devices_per_node = 8 },
        training = { global_batch_size = 64, seq_length = 4096, framework = "megatron" },
        search_space = { data_parallel = "auto", zero_stage = { 1 }, pp_degree = { 2 } },
        top_k = 1,
      }, ROOT .. "/examples/x.lua")
      return check_all(search.run(p))[1]
    end
    local by = files("llama-3.1-8b")
    local mg = by.megatron.text
    -- as Megatron parses them: --rotary-base type=int, the others float
    assert.truthy(mg:find("--rotary-base 500000\n  --use-rope-scaling\n  --rope-scaling-factor 8\n" ..
      "  --norm-epsilon 1e-05\n", 1, true), mg)
    local _, v = parse_megatron(mg)
    assert.are.equal(500000, math.tointeger(tonumber(v["--rotary-base"])))
    assert.are.equal(8, tonumber(v["--rope-scaling-factor"]))
    assert.are.equal(1e-5, tonumber(v["--norm-epsilon"]))
    assert.is_nil(mg:find("set --rotary-base", 1, true))
    assert.is_nil(mg:find("NOT EXPRESSIBLE in Megatron-LM: llama3", 1, true))
    local mc = yaml_tree(by.mindformers.text).model.model_config
    assert.are.equal(500000, mc.theta)
    assert.are.equal(1e-5, mc.rms_norm_eps)
    assert.are.equal("LLAMA3", mc.extend_method)
    assert.are.same({ factor = 8, low_freq_factor = 1, high_freq_factor = 4,
      original_max_position_embeddings = 8192 }, mc.scaling_factor)
    assert.truthy(by.mindformers.text:find(" factor: 8.0\n", 1, true))       -- a float for FreqsMgr
    assert.truthy(by.mindformers.text:find(" rms_norm_eps: 1.0e-05\n", 1, true)) -- a float for yaml.safe_load
    assert.is_nil(by.mindformers.text:find("NOT WRITTEN", 1, true))
    -- Qwen2.5: base 1e6, no scaling, epsilon 1e-6
    by = files("qwen2.5-7b")
    _, v = parse_megatron(by.megatron.text)
    assert.are.equal("1000000", v["--rotary-base"])
    assert.is_nil(v["--use-rope-scaling"])
    assert.are.equal("1e-06", v["--norm-epsilon"])
    mc = yaml_tree(by.mindformers.text).model.model_config
    assert.are.equal(1e6, mc.theta)
    assert.are.equal(1e-6, mc.rms_norm_eps)
    assert.is_nil(mc.extend_method)
    -- Qwen2.5-7B with the YaRN its model card adds for 128K tokens
    -- (rope_scaling type yarn, factor 4, original 32768): MindFormers' YARN
    -- mapping with transformers' defaults, betas 32 / 1 and cos/sin
    -- get_mscale(4) = 0.1 ln 4 + 1 (mscale 1 over mscale_all_dim 0)
    local hf = require "apsearch.hf"
    local f = assert(io.open(ROOT .. "/examples/models/qwen2.5-7b.json"))
    local cfg = require("cjson").decode(f:read("a")) f:close()
    cfg.rope_scaling = { type = "yarn", factor = 4.0, original_max_position_embeddings = 32768 }
    by = files(hf.from_config(cfg, "qwen2.5-7b-yarn/config.json"))
    mc = yaml_tree(by.mindformers.text).model.model_config
    assert.are.equal("YARN", mc.extend_method)
    assert.are.same({ factor = 4, original_max_position_embeddings = 32768, beta_fast = 32, beta_slow = 1,
      mscale = 1, mscale_all_dim = 0 }, mc.scaling_factor)
    assert.is_nil(by.mindformers.text:find("NOT WRITTEN", 1, true))
    -- Megatron: GPTModel's yarn positions with the same ramp (gpt_model.py
    -- @ d98e8a64), the cos/sin factor Megatron's default 1.0 / 0.0
    _, v = parse_megatron(by.megatron.text)
    assert.are.same({ "yarn", "4", "32768", "32", "1" }, { v["--position-embedding-type"],
      v["--rotary-scaling-factor"], v["--yarn-original-max-position-embeddings"], v["--yarn-beta-fast"],
      v["--yarn-beta-slow"] })
    assert.is_nil(v["--mscale"])
    assert.is_nil(by.megatron.text:find("RoPE scaling", 1, true))
    -- mscale_all_dim 0.707 alone and truncate false: transformers' factor
    -- stays get_mscale(4) (mscale 1 over 0; LlamaConfig's softmax does not
    -- read mscale_all_dim); FreqsMgr always rounds the ramp (noted)
    cfg.rope_scaling.mscale_all_dim, cfg.rope_scaling.truncate = 0.707, false
    by = files(hf.from_config(cfg, "qwen2.5-7b-yarn/config.json"))
    mc = yaml_tree(by.mindformers.text).model.model_config
    assert.are.same({ 1, 0 }, { mc.scaling_factor.mscale, mc.scaling_factor.mscale_all_dim })
    assert.truthy(by.mindformers.text:find("NOT EXPRESSIBLE in MindFormers: yarn truncate false", 1, true))
    _, v = parse_megatron(by.megatron.text)
    assert.is_true(v["--no-yarn-correction-range-round-to-int"])
    assert.is_nil(v["--mscale"]) assert.is_nil(v["--mscale-all-dim"])
    cfg.rope_scaling.mscale_all_dim, cfg.rope_scaling.truncate = nil, nil
    -- OLMo 3's attention_factor, 0.1 ln 8 + 1 (= get_mscale(8)), at factor 8:
    -- the solved --mscale is 1 up to float error, Megatron's default, not written
    cfg.rope_scaling.factor, cfg.rope_scaling.attention_factor = 8.0, 1.2079441541679836
    _, v = parse_megatron(files(hf.from_config(cfg, "qwen2.5-7b-yarn/config.json")).megatron.text)
    assert.are.same({ "8" }, { v["--rotary-scaling-factor"], v["--mscale"] })
    cfg.rope_scaling.attention_factor = 1.5 -- (1.5 x 1 - 1) / (0.1 ln 8) = 2.40449...
    _, v = parse_megatron(files(hf.from_config(cfg, "qwen2.5-7b-yarn/config.json")).megatron.text)
    assert.near(0.5 / (0.1 * math.log(8)), tonumber(v["--mscale"]), 1e-9)
    cfg.rope_scaling.factor, cfg.rope_scaling.attention_factor = 4.0, nil
    -- an original context above max_position_embeddings (131072 in this
    -- config.json): refused by _check_yarn_scaling_factor, so not written
    cfg.rope_scaling.original_max_position_embeddings = 262144
    by = files(hf.from_config(cfg, "qwen2.5-7b-yarn/config.json"))
    assert.is_nil(yaml_tree(by.mindformers.text).model.model_config.extend_method)
    assert.truthy(by.mindformers.text:find("NOT EXPRESSIBLE in MindFormers: yarn RoPE scaling factor 4.0 with " ..
      "original context 262144", 1, true), by.mindformers.text)
  end)

  it("write the model's RoPE and norm epsilon on every TorchTitan layer (Llama-2-7B, Llama-3.1-8B)", function()
    local function titan(model, set)
      local p = policy.from_table({
        model = model,
        cluster = { device = "h100-sxm-80gb", nodes = 1, devices_per_node = 8 },
        training = { global_batch_size = 64, seq_length = 4096, framework = "fsdp2" },
        search_space = { data_parallel = "auto", tp_degree = { 1 }, fsdp_degree = { 8 } },
        top_k = 1,
      }, ROOT .. "/examples/x.lua", { set = set })
      local r = search.run(p)
      assert.are.equal(1, #r.top_k_strategies)
      local by = check_all(r)[1]
      return parse_titan(by.torchtitan.text), by.torchtitan.text
    end
    -- Llama-2-7B: base 10000, no scaling (HEAD's flavour has 500000 with llama scaling)
    local t, text = titan("llama-2-7b")
    local L = t.layer_fields
    assert.are.equal(10000.0, L["attention.rope.theta"])
    assert.are.equal("none", L["attention.rope.scaling"])
    assert.is_nil(L["attention.rope.scaling_factor"])
    assert.are.equal(1e-5, L["attention_norm.eps"])
    assert.are.equal(1e-5, L["ffn_norm.eps"])
    assert.are.equal(1e-5, t.fields["model_spec.model.norm.eps"])
    assert.truthy(text:find("        layer.attention.rope.theta = 10000.0\n", 1, true), text)
    assert.truthy(text:find("\n    for layer in config.model_spec.model.layers:\n", 1, true))
    assert.is_nil(text:find("NOT EXPRESSIBLE in TorchTitan: llama3", 1, true))
    -- Llama-3.1-8B: 500000 with llama scaling 8 (1, 4, 8192), as the flavour
    t = titan("llama-3.1-8b")
    L = t.layer_fields
    assert.are.equal(500000.0, L["attention.rope.theta"])
    assert.are.equal("llama", L["attention.rope.scaling"])
    assert.are.equal(8.0, L["attention.rope.scaling_factor"])
    assert.are.equal(1.0, L["attention.rope.low_freq_factor"])
    assert.are.equal(4.0, L["attention.rope.high_freq_factor"])
    assert.are.equal(8192, L["attention.rope.original_max_position_embeddings"])
    assert.are.equal("8B", t.flavor)
    -- Qwen2.5-7B: base 1e6, epsilon 1e-6
    t = titan("qwen2.5-7b")
    assert.are.equal(1e6, t.layer_fields["attention.rope.theta"])
    assert.are.equal("none", t.layer_fields["attention.rope.scaling"])
    assert.are.equal(1e-6, t.fields["model_spec.model.norm.eps"])
    -- linear scaling: not expressible, written without scaling
    t, text = titan("llama-2-7b", { "model.rope_scaling_type=linear", "model.rope_scaling_factor=2" })
    assert.are.equal("none", t.layer_fields["attention.rope.scaling"])
    assert.truthy(text:find("# NOT EXPRESSIBLE in TorchTitan: linear RoPE scaling (factor 2.0)", 1, true), text)
    -- no rope_theta given: the model's own config keeps RoPE.Config's default, with a NOTE
    t, text = titan({ num_layers = 8, hidden_size = 1024, num_attention_heads = 8, num_query_groups = 8,
      ffn_hidden_size = 4096, vocab_size = 32000 })
    assert.is_nil(t.layer_fields["attention.rope.theta"])
    assert.truthy(text:find("the model gives no rope_theta: RoPE.Config's default (theta 10000, no scaling)", 1, true))
  end)

  it("build the estimated model's shape in TorchTitan: the flavour when it is one, else Llama3Model.Config", function()
    local function titan(model, search_space)
      local p = policy.from_table({
        model = model,
        cluster = { device = "h100-sxm-80gb", nodes = 1, devices_per_node = 8 },
        training = { global_batch_size = 64, seq_length = 4096, framework = "fsdp2" },
        search_space = search_space or { data_parallel = "auto", tp_degree = { 1 }, fsdp_degree = { 8 } },
        top_k = 1,
      }, ROOT .. "/examples/x.lua")
      local r = search.run(p)
      assert.are.equal(1, #r.top_k_strategies)
      local by = check_all(r)[1]   -- compares titan_shape with the model
      local t = parse_titan(by.torchtitan.text)
      return t, titan_shape(t), by.torchtitan.text
    end
    -- Llama-2-7B: none of the flavours; MHA, SwiGLU 11008 (no multiple_of
    -- and multiplier needed: the builder takes the final width), vocab 32000
    local t, s, text = titan("llama-2-7b")
    assert.truthy(t.model, "an explicit model config")
    assert.are.equal("8B", t.flavor)   -- the ModelSpec's parallelize / pipelining functions
    assert.are.equal("llama-2-7b", t.fields["model_spec.flavor"])
    assert.are.same({ dim = 4096, n_layers = 32, n_heads = 32, n_kv_heads = 32, head_dim = 128, hidden_dim = 11008,
      vocab_size = 32000, enable_weight_tying = false, max_context_length = 4096, qkv_bias = false,
      attn_out_bias = false, mlp_bias = false }, s)
    assert.are.equal(true, t.model.args.layers.args.fuse_qkv)
    assert.are.equal("flex", t.model.args.layers.args.attn_backend)
    assert.is_nil(text:find("replace model_spec", 1, true))
    assert.is_nil(text:find("NOT EXPRESSIBLE", 1, true))
    -- Qwen2.5-7B: 28 layers, GQA 28/4, SwiGLU 18944, vocab 152064; the q, k, v
    -- biases on the fused wqkv (Linear.Config bias)
    t, s, text = titan("qwen2.5-7b")
    assert.are.same({ dim = 3584, n_layers = 28, n_heads = 28, n_kv_heads = 4, head_dim = 128, hidden_dim = 18944,
      vocab_size = 152064, enable_weight_tying = false, max_context_length = 131072, qkv_bias = true,
      attn_out_bias = false, mlp_bias = false }, s)
    assert.truthy(text:find("        layer.attention.qkv_linear.wqkv.bias = True", 1, true))
    assert.truthy(text:find("# NOTE: HEAD's llama3 state-dict adapter (models/llama3/state_dict_adapter.py) maps no " ..
      "q, k, v biases", 1, true), text)
    assert.is_nil(text:find("NOT EXPRESSIBLE", 1, true))
    -- Mistral-7B: the shape is written, the sliding window is not expressible
    t, s, text = titan("mistral-7b-v0.1")
    assert.are.equal(14336, s.hidden_dim)
    assert.are.equal(8, s.n_kv_heads)
    assert.are.equal(32768, s.max_context_length)
    assert.truthy(text:find("# NOT EXPRESSIBLE in TorchTitan: the 4096-token sliding window on 32 of 32 layers", 1, true))
    -- Mistral-Small-3.1-24B's text model (its config.json: head_dim 128,
    -- 5120 over 32 heads would derive 160): each layer's attention
    -- rebuilt by make_gqa_config with head_dim 128, RoPE over 128
    local hf0 = require "apsearch.hf"
    local ms = hf0.from_config({ architectures = { "MistralForCausalLM" }, model_type = "mistral",
      hidden_size = 5120, intermediate_size = 32768, num_hidden_layers = 40, num_attention_heads = 32,
      num_key_value_heads = 8, head_dim = 128, vocab_size = 131072, max_position_embeddings = 131072,
      rms_norm_eps = 1e-5, rope_theta = 1000000000.0, hidden_act = "silu", tie_word_embeddings = false,
      sliding_window = nil }, "Mistral-Small-3.1-24B/config.json")
    t, s, text = titan(ms, { data_parallel = "auto", tp_degree = { 1 }, fsdp_degree = { 8 },
      layer_recompute = { "full" }, micro_batch_size = { 1 } })
    assert.are.equal(128, s.head_dim)
    assert.are.same({ dim = 5120, n_heads = 32, n_kv_heads = 8, head_dim = 128 },
      { dim = t.gqa.dim, n_heads = t.gqa.n_heads, n_kv_heads = t.gqa.n_kv_heads, head_dim = t.gqa.head_dim })
    assert.are.equal(128, t.model.args.layers.args.rope.args.dim)
    assert.truthy(text:find("\n        layer.attention = make_gqa_config(dim=5120, n_heads=32, n_kv_heads=8, " ..
      "head_dim=128, wqkv_param_init=_LINEAR_INIT, wo_param_init=_depth_init(layer_id), " ..
      "inner_attention=layer.attention.inner_attention, rope=layer.attention.rope, fuse_qkv=True)\n", 1, true), text)
    assert.is_nil(text:find("NOT WRITTEN", 1, true), text)
    -- TorchTitan's own FLOP count takes dim // n_heads (a helper's run of
    -- HEAD's get_nparams_and_flops on this module: 160, ~1.4 % high)
    assert.truthy(text:find("# NOTE: TorchTitan's logged TFLOPs and MFU count attention with dim // n_heads = 160, " ..
      "not this model's head dim 128", 1, true), text)
    -- Llama-3.1-8B: exactly HEAD's 8B flavour, so model_registry("8B") as is
    t, s = titan("llama-3.1-8b")
    assert.is_nil(t.model)
    assert.are.equal("8B", t.flavor)
    assert.are.equal(14336, s.hidden_dim)
    -- Llama-3.2-1B (its Hugging Face config): HEAD's 1B flavour, tied embeddings
    local hf = require "apsearch.hf"
    local cfg = { architectures = { "LlamaForCausalLM" }, model_type = "llama", hidden_size = 2048,
      intermediate_size = 8192, num_hidden_layers = 16, num_attention_heads = 32, num_key_value_heads = 8,
      head_dim = 64, vocab_size = 128256, max_position_embeddings = 131072, tie_word_embeddings = true,
      rms_norm_eps = 1e-5, rope_theta = 500000.0, hidden_act = "silu",
      rope_scaling = { rope_type = "llama3", factor = 32.0, low_freq_factor = 1.0, high_freq_factor = 4.0,
        original_max_position_embeddings = 8192 } }
    local m1 = hf.from_config(cfg, "Llama-3.2-1B/config.json")
    t, s = titan(m1)
    assert.is_nil(t.model)
    assert.are.equal("1B", t.flavor)
    assert.is_true(s.enable_weight_tying)
    assert.are.equal(32.0, t.layer_fields["attention.rope.scaling_factor"])
    -- the same shape under another name and 20 layers: an explicit tied config
    cfg.num_hidden_layers = 20
    t, s = titan((hf.from_config(cfg, "my-model/config.json")))
    assert.truthy(t.model)
    assert.are.equal(20, s.n_layers)
    assert.is_true(t.model.args.enable_weight_tying)
    assert.are.equal("_EMBEDDING_SKIP_INIT", t.model.args.tok_embeddings.args.param_init.name)
    -- tied embeddings with PP: TorchTitan refuses, written untied
    local _, _, ptext = titan((hf.from_config(cfg, "my-model/config.json")),
      { data_parallel = "auto", tp_degree = { 1 }, pp_degree = { 2 }, fsdp_degree = { 4 } })
    assert.truthy(ptext:find("NOT EXPRESSIBLE in TorchTitan: tied input and output embeddings with pipeline", 1, true))
    assert.truthy(ptext:find("enable_weight_tying=False", 1, true))
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
      -- TorchTitan (since enable_sequence_parallel) expresses it
      assert.truthy(by[rec.rank].torchtitan.text:find(
        "config.parallelism.enable_sequence_parallel = False", 1, true))
      assert.truthy(by[rec.rank].mindformers.text:find("use_seq_parallel: False", 1, true))
    end
  end)

  it("write --overlap-grad-reduce and --overlap-param-gather only when the estimate overlaps the DP sync", function()
    for _, c in ipairs({ { {}, true }, { { dp_overlap = 0.5 }, true }, { { dp_overlap = 0 }, nil } }) do
      local r, est = estimated(h100_8b(c[1]), { dp_degree = 8, zero_stage = 1, tp_degree = 1,
        micro_batch_size = 1, layer_recompute = "full" })
      assert.is_nil(est.reason, est.message)
      local _, v = parse_megatron(check_all(r)[1].megatron.text)
      assert.is_true(v["--use-distributed-optimizer"])
      assert.are.equal(c[2], v["--overlap-grad-reduce"])
      assert.are.equal(c[2], v["--overlap-param-gather"])
    end
    -- dp 1 with cp 2: the gradients are still reduced, over the CP ranks (intra_dp_cp_group), and the
    -- estimate overlaps that sync; with neither DP nor CP nothing is reduced and nothing written
    for _, c in ipairs({ { 2, true }, { 1, nil } }) do
      local r, est = estimated(h100_8b({}), { dp_degree = 1, cp_degree = c[1], zero_stage = 1,
        tp_degree = 8 // c[1], micro_batch_size = 1, layer_recompute = "full" })
      assert.is_nil(est.reason, est.message)
      assert.are.equal(c[1] > 1, est.performance_breakdown.dp_grad_sync.total > 0)
      local _, v = parse_megatron(check_all(r)[1].megatron.text)
      assert.are.equal(c[2], v["--overlap-grad-reduce"])
      assert.are.equal(c[2], v["--overlap-param-gather"])
    end
  end)

  it("write the estimate's allocator and say when it prices a loss the script cannot run", function()
    local st = { dp_degree = 8, zero_stage = 1, tp_degree = 1, micro_batch_size = 1, layer_recompute = "none" }
    -- Megatron-Bridge 25.09's: expandable segments, TE's cross-entropy in place (2 bytes a logit, Megatron's own 6)
    local r = estimated(h100_8b({ expandable_segments = true, logits_bytes = 2 }), st)
    local text = check_all(r)[1].megatron.text
    assert.truthy(text:find("\nexport PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True  #", 1, true))
    assert.is_nil(text:find("NCCL_GRAPH_REGISTER", 1, true))
    assert.truthy(text:find("# NOT EXPRESSIBLE in Megatron-LM: the loss the estimate prices (training.logits_bytes " ..
      "= 2 bytes a logit, e.g. a release's TransformerEngine cross-entropy in place): the script computes " ..
      "Megatron-LM's own, 6 bytes a logit", 1, true), text)
    -- TE CUDA graphs beside expandable segments: validate_args asserts NCCL_GRAPH_REGISTER=0
    r = estimated(h100_8b({ expandable_segments = true, cuda_graphs = true, cuda_graph_scope = "attn" }), st)
    text = check_all(r)[1].megatron.text
    assert.truthy(text:find("--cuda-graph-impl transformer_engine", 1, true))
    assert.truthy(text:find("\nexport NCCL_GRAPH_REGISTER=0  #", 1, true))
    assert.is_nil(text:find("the loss the estimate prices", 1, true))
    -- neither: the allocator's default, nothing exported
    r = estimated(h100_8b({ expandable_segments = false }), st)
    assert.is_nil(check_all(r)[1].megatron.text:find("PYTORCH_CUDA_ALLOC_CONF", 1, true))
  end)

  it("say, in every engine's file but the estimated framework's, whose overheads the estimate priced", function()
    local st = { dp_degree = 8, zero_stage = 1, tp_degree = 1, micro_batch_size = 1, layer_recompute = "none" }
    local files = check_all(estimated(h100_8b({}), st))[1]
    local function note(engine) return files[engine].text:match("# NOTE: the estimate is of framework = ([^\n]*)") end
    assert.is_nil(note("megatron"))
    assert.are.equal("megatron (its overheads); for TorchTitan's own, --set training.framework=fsdp2, leaving out " ..
      "settings only megatron takes", note("torchtitan"))
    assert.are.equal("megatron (its overheads); for AutoModel's own, --set training.framework=automodel, leaving " ..
      "out settings only megatron takes", note("automodel"))
    assert.is_nil(note("mindformers"))
    local tt = { framework = "fsdp2" }
    assert.are.equal("the estimate is of framework = fsdp2 (its overheads); for Megatron-LM's own, --set " ..
      "training.framework=megatron, leaving out settings only fsdp2 takes", launch.framework_note("megatron", tt))
    assert.is_nil(launch.framework_note("torchtitan", tt))
    assert.is_nil(launch.framework_note("mindformers", tt))
  end)

  it("write Megatron-FSDP as validate_args needs it: sharding strategy, fsdp_dtensor, main-grads dtype", function()
    local function h100_8b(training)
      local tr = { global_batch_size = 128, seq_length = 8192, framework = "megatron",
        fsdp_impl = "megatron_fsdp" }
      for k, v in pairs(training) do tr[k] = v end
      return { model = "llama-3.1-8b", cluster = { device = "h100-sxm-80gb", nodes = 1, devices_per_node = 8 },
        training = tr, top_k = 1 }
    end
    -- ZeRO-3 (fsdp_degree 8), bf16 main grads: Megatron-FSDP's own default (auto), not written
    local r, est = estimated(h100_8b({ grad_reduce_in_fp32 = false }), { fsdp_degree = 8, micro_batch_size = 1 })
    assert.is_nil(est.reason, est.message)
    local text = check_all(r)[1].megatron.text
    local _, v = parse_megatron(text)
    assert.is_true(v["--use-megatron-fsdp"])
    assert.are.equal("optim_grads_params", v["--data-parallel-sharding-strategy"])
    assert.are.equal("fsdp_dtensor", v["--ckpt-format"])
    assert.is_true(v["--use-distributed-optimizer"])
    assert.is_true(v["--overlap-grad-reduce"])
    assert.is_true(v["--overlap-param-gather"])
    assert.is_nil(v["--use-torch-fsdp2"])
    assert.is_nil(v["--no-gradient-accumulation-fusion"])
    assert.is_nil(v["--megatron-fsdp-main-grads-dtype"])
    assert.truthy(text:find("\nunset CUDA_DEVICE_MAX_CONNECTIONS", 1, true))
    assert.truthy(text:find("TransformerEngine >= 2.10", 1, true))
    -- ZeRO-2 over the data-parallel group: optim_grads; fp32 main grads (the megatron default) written
    r, est = estimated(h100_8b({ suggested_communication_unit_size = 400000000, fsdp_double_buffer = true }),
      { dp_degree = 8, zero_stage = 2, micro_batch_size = 1 })
    assert.is_nil(est.reason, est.message)
    _, v = parse_megatron(check_all(r)[1].megatron.text)
    assert.are.equal("optim_grads", v["--data-parallel-sharding-strategy"])
    assert.are.equal("fp32", v["--megatron-fsdp-main-grads-dtype"])
    assert.are.equal("400000000", v["--suggested-communication-unit-size"])
    assert.is_true(v["--fsdp-double-buffer"])
    assert.is_nil(v["--overlap-param-gather"])
    assert.is_nil(v["--num-distributed-optimizer-instances"])
    -- HSDP on 2 nodes: 2 distributed-optimizer instances of 8 ranks (mcore_fsdp_adapter.py:343-430)
    local two = h100_8b({})
    two.cluster.nodes = 2
    r, est = estimated(two, { fsdp_degree = 8, dp_degree = 2, micro_batch_size = 1 })
    assert.is_nil(est.reason, est.message)
    _, v = parse_megatron(check_all(r)[1].megatron.text)
    assert.are.equal("optim_grads_params", v["--data-parallel-sharding-strategy"])
    assert.are.equal("2", v["--num-distributed-optimizer-instances"])
    -- the partial distributed optimizer without FSDP: training.distributed_optimizer_instances
    local partial = h100_8b({ distributed_optimizer_instances = 2 })
    partial.training.fsdp_impl = nil
    partial.cluster.nodes = 2
    r, est = estimated(partial, { dp_degree = 16, zero_stage = 1, micro_batch_size = 1, layer_recompute = "full" })
    assert.is_nil(est.reason, est.message)
    _, v = parse_megatron(check_all(r)[1].megatron.text)
    assert.is_true(v["--use-distributed-optimizer"])
    assert.is_nil(v["--use-megatron-fsdp"])
    assert.are.equal("2", v["--num-distributed-optimizer-instances"])
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
    assert.truthy(tt:find('converters=[MXFP8LinearConverter.Config(fqns=["layers"], model_compile_enabled=True)]', 1, true))
    assert.truthy(tt:find("enable_async_tensor_parallel=True", 1, true))
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

  it("write training.mtp_num_layers as --mtp-num-layers, and an 'm' before the loss in a layout", function()
    -- examples/deepseek_v3_h100_1024.lua trains DeepSeek-V3's one MTP module
    local r = run_example("deepseek_v3_h100_1024.lua")
    local by = check_all(r)
    local _, v = parse_megatron(by[1].megatron.text)
    assert.are.equal("1", v["--mtp-num-layers"])
    assert.are.equal("61", v["--num-layers"])
    -- decoder layers per stage sum to the model's; the MTP layer is apart
    local rec = r.top_k_strategies[1]
    local sum, mtp = 0, 0
    for _, st in ipairs(rec.memory_cost.per_stage) do sum = sum + st.num_layers end
    assert.are.equal(61, sum)
    -- HEAD's DeepSeek-V3 has MTP (model_registry num_mtp_layers), which the file leaves at 0;
    -- not with pipeline parallelism (MTP.md's TODO), which this rank has
    assert.is_true(rec.pp_degree > 1)
    assert.truthy(by[1].torchtitan.text:find("NOT EXPRESSIBLE in TorchTitan: training.mtp_num_layers = 1 with " ..
      "pp_degree = " .. rec.pp_degree .. ": HEAD's DeepSeek-V3 trains multi-token prediction (num_mtp_layers, " ..
      "MTPLoss) only without pipeline and context parallelism", 1, true))
    assert.truthy(by[1].torchtitan.text:find("--set training.mtp_num_layers=0 estimates the job this file trains",
      1, true))
    -- the layout writer: validate_layer_layout (pipeline_parallel_layer_layout.py
    -- @ d98e8a64) wants MTP after the decoder layers, in the loss's stage
    local megatron = require "apsearch.launch.megatron"
    assert.are.equal("Et*3|t*4|t*2mL", megatron.layout({ 3, 4, 2 }, 1))
    assert.are.equal("Et*3|t*4|mmL", megatron.layout({ 3, 4, 0 }, 2))
    assert.are.equal("Et*3|t*4|t*2L", megatron.layout({ 3, 4, 2 }))
  end)

  it("write pipeline_split = fill_last as NVIDIA's DeepSeek-V3 layout, the MTP 'm' before the loss", function()
    -- NVIDIA-NeMo/Megatron-Bridge 067f987d recipes/deepseek/h100/deepseek_v3.py
    -- _get_deepseek_v3_pipeline_layout, (4, 4): [E + 4 t] + [4 t] x 14 +
    -- [t + mtp + loss]; (8, 1): [E + 8 t] + [8 t] x 6 + [5 t + mtp + loss]
    local tbl = dofile(ROOT .. "/examples/deepseek_v3_h100_1024.lua")
    tbl.search_space = nil
    local function written(pp, vpp)
      local r, est = estimated(tbl, { tp_degree = 1, pp_degree = pp, vpp_degree = vpp, ep_degree = 64,
        dp_degree = 1024 // pp, zero_stage = 1, micro_batch_size = 1, layer_recompute = "full",
        pipeline_split = "fill_last" })
      assert.are.equal("fill_last", est.strategy.pipeline_split)
      local by = check_all(r)
      return select(2, parse_megatron(by[1].megatron.text)), by[1], r
    end
    local v, by, r = written(4, 4)
    assert.are.equal("Et*4|" .. string.rep("t*4|", 14) .. "tmL", v["--pipeline-model-parallel-layout"])
    assert.are.equal("1", v["--mtp-num-layers"])
    -- the layout sets vpp; no split flag beside it
    assert.is_nil(v["--num-virtual-stages-per-pipeline-rank"])
    assert.is_nil(v["--num-layers-per-virtual-pipeline-stage"])
    assert.is_nil(v["--decoder-first-pipeline-num-layers"])
    assert.is_nil(v["--account-for-embedding-in-pipeline-split"])
    -- ranks 0-2 hold 16 layers (4 chunks of 4), rank 3 4 + 4 + 4 + 1 = 13
    local n = {}
    for i, st in ipairs(r.stage_summary[1].stages) do n[i] = st.num_layers end
    assert.are.same({ 16, 16, 16, 13 }, n)
    -- TorchTitan takes the chunks as module names; MindFormers as offsets
    -- from (L + MTP) // (p v) = 62 // 16 = 3 per chunk (DeepSeek-V3's
    -- LayerSetting counts the MTP layer last): +1 on the first 15, and
    -- the last chunk's layer and MTP layer: 2 = 3 - 1
    assert.truthy(by.torchtitan.text:find("module_fqns_per_model_part = [  # layers per model chunk: " ..
      string.rep("4, ", 15) .. "1", 1, true))
    assert.truthy(by.torchtitan.text:find('["layers.60", "norm", "lm_head"]', 1, true))
    assert.truthy(by.mindformers.text:find("[[1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, -1]]", 1, true))
    v = written(8, 1)
    assert.are.equal("Et*8|" .. string.rep("t*8|", 6) .. "t*5mL", v["--pipeline-model-parallel-layout"])
  end)

  it("write full recompute of every layer with MTP as block, as estimated (uniform would recompute the MTP layer)", function()
    -- multi_token_prediction.py:1621-1634 @ d98e8a64: uniform checkpoints
    -- the MTP layer (groups of 1 only), block skips it
    local tbl = dofile(ROOT .. "/examples/deepseek_v3_h100_1024.lua")
    tbl.search_space = nil
    local part = {}
    for i = 1, 15 do part[i] = 4 end
    part[16] = 1
    local function written(mtp)
      tbl.training.mtp_num_layers = mtp
      local r = estimated(tbl, { tp_degree = 1, pp_degree = 16, dp_degree = 64, ep_degree = 64, zero_stage = 1,
        micro_batch_size = 1, stage_partition = part, layer_recompute = "full" })
      local _, v = parse_megatron(check_all(r)[1].megatron.text)
      return v, r
    end
    local v, r = written(1)
    local most = 0
    for _, st in ipairs(r.stage_summary[1].stages) do
      assert.are.equal(st.num_layers, st.recompute_layers)  -- every decoder layer recomputed
      most = math.max(most, st.num_layers)
    end
    assert.are.equal(4, most)
    assert.are.equal("block", v["--recompute-method"])
    assert.are.equal("4", v["--recompute-num-layers"])
    v = written(0)
    assert.are.equal("uniform", v["--recompute-method"])
    assert.are.equal("1", v["--recompute-num-layers"])
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
    -- NVFP4 on the transformer layers; the model compiled without the loss
    assert.truthy(tt:find('converters=[NVFP4LinearConverter.Config(fqns=["layers"]', 1, true))
    assert.truthy(tt:find("NOT EXPRESSIBLE in TorchTitan: activation offload", 1, true))
    assert.truthy(tt:find('components=["model"]', 1, true))
    local mf = by[1].mindformers.text
    for _, what in ipairs({ "nvfp4 matmuls", "fp8_param_gather", "activation offload", "CUDA graphs" }) do
      assert.truthy(mf:find("NOT EXPRESSIBLE in MindFormers: " .. what, 1, true), what)
    end
  end)

  it("write the CUDA graph scope the estimate priced as --cuda-graph-modules (transformer_config.py @ d98e8a64)", function()
    local function modules(scope, fix)
      local set = { "training.cuda_graphs=true" }
      if scope then set[2] = "training.cuda_graph_scope=" .. scope end
      local f = { "ep_degree=8", "tp_degree=1", "pp_degree=2", "micro_batch_size=1" }
      if not (fix and fix[1]) then f[#f + 1] = "layer_recompute=none" end
      for _, x in ipairs(fix or {}) do f[#f + 1] = x end
      local r = run_example("qwen3_30b_a3b_h100.lua", { top_k = 1, set = set, fix = f })
      local by = check_all(r)
      local _, v = parse_megatron(by[1].megatron.text)
      return v, by[1].megatron.text, r
    end
    local v = modules("attn+moe_router")
    assert.are.equal("transformer_engine", v["--cuda-graph-impl"])
    assert.are.equal("attn moe_router moe_preprocess", v["--cuda-graph-modules"])
    v = modules("moe_router")
    assert.are.equal("moe_router moe_preprocess", v["--cuda-graph-modules"])
    v = modules("attn")
    assert.are.equal("attn", v["--cuda-graph-modules"])
    -- a dropless MoE layer cannot be captured whole: what can be is written, and said
    local text, r
    v, text, r = modules(nil)
    assert.are.equal("attn moe_router moe_preprocess", v["--cuda-graph-modules"])
    assert.truthy(text:find("NOTE: cuda_graph_scope layer on a dropless MoE model", 1, true))
    -- the estimate priced the host's launches of what stays outside
    assert.is_true(r.performance_breakdown[1].host_launch.total > 0)
    v, _, r = modules("full_iteration")
    assert.are.equal("full_iteration", v["--cuda-graph-impl"])
    assert.is_nil(v["--cuda-graph-modules"])
    assert.is_true(v["--no-check-for-nan-in-loss-and-grad"])
    assert.are.equal(0, r.performance_breakdown[1].host_launch.total)
    -- full recompute: Megatron takes only the full-iteration graph, and so does the estimate
    v, _, r = modules("attn", { "layer_recompute=full" })
    assert.are.equal("full_iteration", v["--cuda-graph-impl"])
    assert.are.equal(0, r.performance_breakdown[1].host_launch.total)
  end)

  it("write per-layer TE CUDA graphs without full recompute, TorchTitan's rowwise float8", function()
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
    -- validate_args turns --fp8-param-gather off under --use-torch-fsdp2
    -- (arguments.py @ d98e8a64 l.1051-1052): not written, the file differs
    assert.is_nil(v["--fp8-param-gather"])
    assert.truthy(by[1].megatron.text:find("NOT EXPRESSIBLE in Megatron-LM: fp8_param_gather with " ..
      "--use-torch-fsdp2", 1, true))
    assert.is_true(v["--use-torch-fsdp2"])
    local tt = by[1].torchtitan.text
    -- rowwise float8 gathers bf16 at this TorchTitan (the tensorwise
    -- float8 all-gather went in 6348d93d); CUDA graphs are its default
    assert.truthy(tt:find('converters=[Float8LinearConverter.Config(recipe_name="rowwise", filter_fqns=["lm_head"], ' ..
      'model_compile_enabled=True)]', 1, true))
    assert.truthy(tt:find("NOT EXPRESSIBLE in TorchTitan: fp8_param_gather with fp8", 1, true))
    -- and rowwise is not the tensorwise scaling the estimate prices (HEAD has no other)
    assert.truthy(tt:find("NOT EXPRESSIBLE in TorchTitan: fp8 with dynamic tensorwise scaling, as estimated: " ..
      "HEAD's Float8LinearConverter has rowwise recipes only", 1, true))
    assert.truthy(tt:find("config.training.disable_cuda_graphs = False", 1, true))
    assert.truthy(tt:find("CompileConfig(enable=True", 1, true))
  end)

  it("TorchTitan: the flex dispatcher as HEAD's deepep / hybridep comm backend, with the converters that can pad", function()
    -- models/common/config_utils.py @ b5bcd76c: comm_backend "deepep" / "hybridep"; the grouped
    -- converters' swap_token_dispatcher pads through TorchAO's or HybridEP's dispatcher only
    local function titan(set)
      local opts = { "training.framework=fsdp2", "search_space.moe_token_dispatcher=flex",
        "search_space.zero_stage=0", "top_k=1" }
      for _, x in ipairs(set) do opts[#opts + 1] = x end
      local r = run_example("qwen3_30b_a3b_h100.lua", { set = opts, fix = { "pp_degree=1", "tp_degree=1" } })
      assert.are.equal("flex", r.top_k_strategies[1].moe_token_dispatcher)
      assert.is_true(r.top_k_strategies[1].ep_degree > 1)
      for _, f in ipairs(launch.render_all(r)) do
        if f.engine == "torchtitan" then return f.text, parse_titan(f.text) end
      end
    end
    local text, t = titan({})
    assert.truthy(text:find('        moe_comm_backend="deepep",', 1, true), text)
    assert.is_nil(text:find("moe_token_dispatcher = flex", 1, true))
    text = titan({ "training.moe_flex_dispatcher_backend=hybridep", "training.precision=fp8" })
    assert.truthy(text:find('        moe_comm_backend="hybridep",', 1, true), text)
    assert.truthy(text:find("Float8GroupedExpertsConverter.Config", 1, true), text)
    text, t = titan({ "training.precision=fp8" })
    assert.are.same({ "Float8LinearConverter.Config" }, { t.converters[1].ctor, t.converters[2] })
    assert.truthy(text:find("NOT EXPRESSIBLE in TorchTitan: the experts' grouped GEMMs in fp8 with DeepEP", 1,
      true), text)
  end)

  it("Megatron: store_param_remainders as the precision-aware optimizer keeps them, under the distributed optimizer", function()
    -- megatron/core/optimizer/optimizer_config.py @ d98e8a64 l.192 (store_param_remainders = True) and
    -- distrib_optimizer.py l.1008: with --use-precision-aware-optimizer and bf16 the master is int16 remainders
    local function megatron(fix)
      local r = run_example("llama3_8b_h100.lua", { set = { "training.framework=megatron",
        "training.store_param_remainders=true", "top_k=1" }, fix = fix })
      for _, f in ipairs(launch.render_all(r)) do
        if f.engine == "megatron" then return f.text, select(2, parse_megatron(f.text)) end
      end
    end
    local text, v = megatron({ "zero_stage=1", "fsdp_degree=1" })
    assert.is_true(v["--use-distributed-optimizer"])
    assert.is_true(v["--use-precision-aware-optimizer"])
    assert.is_nil(v["--exp-avg-dtype"])
    assert.is_nil(text:find("store_param_remainders", 1, true))
    -- FSDP: no distributed optimizer, so no precision-aware optimizer; the file keeps a full master
    text, v = megatron({ "fsdp_degree=8" })
    assert.is_nil(v["--use-precision-aware-optimizer"])
    assert.truthy(text:find("NOT EXPRESSIBLE in Megatron-LM: store_param_remainders (the fp32 master as the bf16 " ..
      "weight plus a 16-bit remainder) without the distributed optimizer", 1, true), text)
  end)

  it("TorchTitan and AutoModel: CP without an FSDP degree differs from a Megatron estimate, not from fsdp2's", function()
    -- ParallelDims.fsdp_enabled = dp_shard or cp enabled (dp_shard_cp mesh); AutoModel's mesh likewise
    local function differs(framework)
      local r = run_example("llama3_8b_h100.lua", { set = { "training.framework=" .. framework, "top_k=1",
        "search_space.cp_degree=2", "search_space.zero_stage=1", "search_space.fsdp_degree=1" },
        fix = { "tp_degree=1", "pp_degree=1" } })
      assert.are.same({ 2, 1 }, { r.top_k_strategies[1].cp_degree, r.top_k_strategies[1].fsdp_degree })
      local out = {}
      for _, f in ipairs(launch.render_all(r)) do out[f.engine] = table.concat(f.differs or {}, "\n") end
      return out
    end
    local mg = differs("megatron")
    for _, e in ipairs({ "torchtitan", "automodel" }) do
      assert.truthy(mg[e]:find("context parallelism without an FSDP degree (cp_degree = 2, fsdp_degree = 1)", 1,
        true), e .. ": " .. mg[e])
    end
    assert.truthy(mg.torchtitan:find("where the estimate (framework megatron) keeps the parameters replicated, " ..
      "the optimizer states sharded (ZeRO-1)", 1, true), mg.torchtitan)
    local fs = differs("fsdp2")
    assert.is_nil(fs.torchtitan:find("context parallelism without an FSDP degree", 1, true))
  end)

  it("TorchTitan: a MoE model's experts quantized by the grouped converters, its router's gate left bf16", function()
    -- components/quantization @ b5bcd76c: the linear converters leave GroupedExperts alone and
    -- match fqns as substrings; deepseek_v3/config_registry.py writes the pairs below
    local fp8 = run_example("qwen3_30b_a3b_h100.lua", { set = { "training.framework=fsdp2", "training.precision=fp8",
      "search_space.zero_stage=0", "top_k=1" }, fix = { "pp_degree=1", "tp_degree=1" } })
    local t
    for _, f in ipairs(launch.render_all(fp8)) do if f.engine == "torchtitan" then t = parse_titan(f.text) end end
    assert.are.same({ "Float8LinearConverter.Config", "Float8GroupedExpertsConverter.Config" },
      { t.converters[1].ctor, t.converters[2].ctor })
    assert.are.same({ "lm_head", "router.gate" }, t.converters[1].args.filter_fqns)
    local mx = run_example("deepseek_v3_h100_1024.lua", { set = { "training.framework=fsdp2",
      "training.precision=mxfp8", "training.mtp_num_layers=0", "cluster.device=b200", "top_k=1" } })
    local n = 0
    for _, f in ipairs(launch.render_all(mx)) do
      if f.engine == "torchtitan" then
        n = n + 1
        local u = parse_titan(f.text)
        assert.are.same({ "attention", "shared_experts", "feed_forward" }, u.converters[1].args.fqns)
        assert.are.equal("MXFP8GroupedExpertsConverter.Config", u.converters[2].ctor)
        assert.are.equal(128, u.converters[2].args.pad_multiple)
      end
    end
    assert.are.equal(1, n)
  end)

  it("write --fp4-param-gather under --use-torch-fsdp2 for NVFP4, which validate_args keeps (TE >= 2.7)", function()
    -- arguments.py @ d98e8a64 l.1058-1063 turns fp4_param_gather off only
    -- before TransformerEngine 2.7; fp8 there is refused by the core
    local tbl = b200_405b({ precision = "nvfp4", fp8_param_gather = true })
    tbl.model = "llama-3.1-8b"
    tbl.cluster.nodes = 1
    tbl.training.global_batch_size = 64
    local r = estimated(tbl, { fsdp_degree = 8, layer_recompute = "selective" })
    local by = check_all(r)
    local _, v = parse_megatron(by[1].megatron.text)
    assert.is_true(v["--use-torch-fsdp2"])
    assert.is_true(v["--fp4-param-gather"])
    assert.is_nil(by[1].megatron.text:find("NOT EXPRESSIBLE in Megatron-LM: fp8_param_gather", 1, true))
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
              elseif fact.type == "number" then
                assert.truthy(tonumber(val), flag .. " " .. val)
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

  it("write Megatron's --moe-layer-freq as an integer or moe_freq_type's list expression", function()
    local meg = require "apsearch.launch.megatron"
    -- every layer MoE: Megatron's default 1, nothing written
    assert.is_nil(meg.moe_layer_freq({ 1, 1, 1, 1 }))
    -- layer i MoE when i % 2 == 0 (get_gpt_decoder_block_spec)
    assert.are.equal("2", meg.moe_layer_freq({ 1, 0, 1, 0, 1 }))
    -- DeepSeek-V3: 3 dense layers, then experts
    assert.are.equal("[0]*3+[1]*58", meg.moe_layer_freq(
      { 0, 0, 0, table.unpack((function() local t = {} for i = 1, 58 do t[i] = 1 end return t end)()) }))
    -- Llama 4 Maverick (interleave_moe_layer_step 2: odd layers MoE) over 48 layers
    local mav = {}
    for i = 1, 48 do mav[i] = i % 2 == 0 and 1 or 0 end
    assert.are.equal("([0]+[1])*24", meg.moe_layer_freq(mav))
  end)

  it("write MoE and MLA: experts, EP, ETP, dispatcher, grouped GEMM, capacity (DeepSeek-V3, Mixtral)", function()
    local r = run_example("deepseek_v3_h100_1024.lua", { top_k = 3,
      fix = { "moe_token_dispatcher=flex", "moe_capacity_factor=1.25" },
      set = { "training.moe_flex_dispatcher_backend=hybridep" } })
    local by = check_all(r)
    local m = r.inputs.model
    for _, rec in ipairs(r.top_k_strategies) do
      local _, v = parse_megatron(by[rec.rank].megatron.text)
      assert.are.equal("256", v["--num-experts"])
      assert.are.equal("8", v["--moe-router-topk"])
      assert.are.equal("2048", v["--moe-ffn-hidden-size"])
      assert.are.equal("2048", v["--moe-shared-expert-intermediate-size"])  -- 1 shared expert x 2048
      assert.are.equal("[0]*3+[1]*58", v["--moe-layer-freq"])                -- first_k_dense_replace 3
      assert.are.equal(tostring(rec.ep_degree), v["--expert-model-parallel-size"])
      assert.are.equal(tostring(rec.etp_degree or rec.tp_degree), v["--expert-tensor-parallel-size"])
      assert.are.equal("flex", v["--moe-token-dispatcher-type"])
      -- DeepEP cannot pad to capacity (TransformerConfig): HybridEP
      assert.are.equal("hybridep", v["--moe-flex-dispatcher-backend"])
      assert.is_true(v["--moe-grouped-gemm"])
      assert.are.equal("1.25", v["--moe-expert-capacity-factor"])
      -- the padded drop the estimate prices
      assert.is_true(v["--moe-pad-expert-input-to-capacity"])
      -- aux-loss-free bias needs the sigmoid score (TransformerConfig)
      assert.are.equal("sigmoid", v["--moe-router-score-function"])
      assert.is_true(v["--moe-router-enable-expert-bias"])
      -- config.json's group-limited routing and score scaling
      assert.are.same({ "8", "4", "2.5" }, { v["--moe-router-num-groups"], v["--moe-router-group-topk"],
        v["--moe-router-topk-scaling-factor"] })
      assert.is_nil(v["--moe-aux-loss-coeff"])            -- no aux_loss_alpha in the config
      assert.is_true(v["--multi-latent-attention"])
      assert.are.equal("1536", v["--q-lora-rank"])
      assert.are.equal("512", v["--kv-lora-rank"])
      assert.are.equal("128", v["--qk-head-dim"])
      assert.are.equal("64", v["--qk-pos-emb-head-dim"])
      assert.are.equal("128", v["--v-head-dim"])
      assert.is_nil(v["--group-query-attention"])
      assert.is_nil(v["--kv-channels"])
      assert.is_true(v["--qk-layernorm"])                 -- the latents' norms
      -- the example trains DeepSeek-V3's MTP module (training.mtp_num_layers = 1)
      assert.truthy(by[rec.rank].megatron.text:find("  --mtp-num-layers 1\n", 1, true))
      local tt, mf = by[rec.rank].torchtitan.text, by[rec.rank].mindformers.text
      -- HEAD's deepseek_v3 model with DeepSeek-V3's numbers (HF config.json;
      -- TorchTitan b5bcd76c deepseek_v3/__init__.py _671b has the same)
      -- (the MTP module is the one part it leaves out, not expressible
      -- under this rank's pipeline, MTP.md's TODO; the other NOT
      -- EXPRESSIBLE lines are the layout's, not the model's)
      assert.is_true(rec.pp_degree > 1)
      local _, nw = tt:gsub("NOT WRITTEN", "")
      assert.are.equal(0, nw)
      assert.truthy(tt:find("NOT EXPRESSIBLE in TorchTitan: training.mtp_num_layers = 1 with pp_degree", 1, true))
      local t = parse_titan(tt)
      assert.are.equal("deepseek_v3_671b", t.base)
      assert.are.equal("671B", t.flavor)
      assert.are.equal("_build_dsv3_layers", t.family_layers.ctor)
      local a = t.family_layers.args
      assert.are.same({ 61, 3, 7168, 128 }, { a.n_layers, a.n_dense_layers, a.dim, a.n_heads })
      assert.are.same({ 256, 8, 1, 2048, 18432 },
        { a.num_experts, a.router_top_k, a.num_shared_experts, a.moe_hidden_dim, a.dense_hidden_dim })
      assert.are.same({ 1536, 512, 128, 64, 128 },
        { a.q_lora_rank, a.kv_lora_rank, a.qk_nope_head_dim, a.qk_rope_head_dim, a.v_head_dim })
      assert.are.equal("sigmoid", a.router_score_func)      -- moe_router_bias (noaux_tc)
      -- the model's routing (config.json n_group 8, topk_group 4,
      -- routed_scaling_factor 2.5, norm_topk_prob true), the 671B flavour's too
      assert.are.same({ 8, 4, 2.5, true }, { a.router_num_expert_groups, a.router_num_limited_groups,
        a.router_route_scale, a.router_route_norm })
      assert.truthy(tt:find("non_blocking_capacity_factor=None,", 1, true))  -- required, no default
      -- YaRN on the rope dims: factor 40 from 4096 positions, theta 10000
      local rp = a.rope.args
      assert.are.same({ 64, "yarn", 40.0, 4096, 10000.0 },
        { rp.dim, rp.scaling, rp.rope_factor, rp.original_seq_len, rp.theta })
      -- the config's ramp and magnitudes: betas 32 / 1, mscale_all_dim 1
      -- (the softmax's (0.1 ln 40 + 1)^2), mscale equal to it (cos/sin 1)
      assert.are.same({ 32.0, 1.0, 1.0 }, { rp.beta_fast, rp.beta_slow, a.mscale })
      assert.is_nil(tt:find("yarn mscale", 1, true))
      local _, mv = parse_megatron(by[rec.rank].megatron.text)
      assert.are.same({ "40", "1", "1" }, { mv["--rotary-scaling-factor"], mv["--mscale"], mv["--mscale-all-dim"] })
      assert.are.equal(1e-6, t.layer_fields["attention_norm.eps"])
      assert.truthy(tt:find("from torchtitan.models.deepseek_v3 import _build_dsv3_layers, model_registry", 1, true))
      assert.truthy(tt:find("NOT EXPRESSIBLE in TorchTitan: moe_capacity_factor = 1.25", 1, true))
      -- MindFormers' LlamaConfig would build 61 MoE layers of 256 experts
      -- 18,432 wide (a new user's pass, 2026-12-06); its DeepSeek-V3 model
      -- (use_legacy False, models/deepseek3 @ fd4deebc) builds the model
      -- with config.json's numbers, by Hugging Face's names
      local y = yaml_tree(mf)
      local mc = y.model.model_config
      assert.is_nil(y.moe_config or mc.type or y.model.arch)
      assert.is_false(y.use_legacy)
      assert.are.same({ "deepseek_v3", 61, 7168, 18432, 129280, 128, 128 }, { mc.model_type, mc.num_hidden_layers,
        mc.hidden_size, mc.intermediate_size, mc.vocab_size, mc.num_attention_heads, mc.num_key_value_heads })
      assert.are.same({ 1536, 512, 128, 64, 128 }, { mc.q_lora_rank, mc.kv_lora_rank, mc.qk_nope_head_dim,
        mc.qk_rope_head_dim, mc.v_head_dim })
      -- 256 routed experts of 2048, one shared (2048 / 2048), 3 dense layers first
      assert.are.same({ 256, 8, 2048, 1, 3, 1 }, { mc.n_routed_experts, mc.num_experts_per_tok,
        mc.moe_intermediate_size, mc.n_shared_experts, mc.first_k_dense_replace, mc.moe_layer_freq })
      assert.are.same({ "sigmoid", true, true, 2.5 }, { mc.scoring_func, mc.moe_router_enable_expert_bias,
        mc.norm_topk_prob, mc.routed_scaling_factor })
      assert.are.equal(1, mc.num_nextn_predict_layers)                     -- training.mtp_num_layers
      assert.are.equal(rec.ep_degree, y.parallel_config.expert_parallel)
      -- what its training router and MoE layer do not have
      assert.truthy(mf:find("NOT EXPRESSIBLE in MindFormers: n_group = 8, topk_group = 4: TopKRouter routes " ..
        "without groups", 1, true), mf)
      assert.truthy(mf:find("NOT EXPRESSIBLE in MindFormers: capacity factor 1.25: the training MoELayer is " ..
        "dropless", 1, true), mf)
      assert.truthy(mf:find("NOT EXPRESSIBLE in MindFormers: the flex token dispatcher", 1, true))
      assert.is_nil(mf:find("NOT WRITTEN", 1, true))
    end
    -- recipe settings: bf16 moments (with the distributed optimizer), the
    -- shared expert overlapped, NeMo's recompute modules
    r = run_example("deepseek_v3_h100_1024.lua", { top_k = 3, set = { "training.exp_avg_bf16=true",
      "training.moe_shared_expert_overlap=true" }, fix = { "layer_recompute=selective" } })
    by = check_all(r)
    for _, rec in ipairs(r.top_k_strategies) do
      local _, v = parse_megatron(by[rec.rank].megatron.text)
      assert.is_true(v["--use-distributed-optimizer"])
      assert.is_true(v["--use-precision-aware-optimizer"])
      assert.are.equal("bf16", v["--exp-avg-dtype"])
      assert.are.equal("bf16", v["--exp-avg-sq-dtype"])
      -- the precision-aware optimizer keeps the fp32 master of a bf16 run as 16-bit remainders
      -- (OptimizerConfig.store_param_remainders, default True): said, since the estimate holds a full one
      assert.truthy(by[rec.rank].megatron.text:find("# NOTE: --use-precision-aware-optimizer keeps the fp32 " ..
        "master of a bf16 run as 16-bit remainders", 1, true))
      assert.is_true(v["--moe-shared-expert-overlap"])
      assert.are.equal("selective", v["--recompute-granularity"])
      assert.are.equal("mla_up_proj mlp moe", v["--recompute-modules"])
      -- MindFormers' DeepSeek-V3 (use_legacy False): the modules as cell-name
      -- patterns (mla_up_proj: the MLA up-projections of either MLA class;
      -- mlp and moe: the mlp cell of the dense and MoE layers)
      local mfm = by[rec.rank].mindformers.text
      assert.truthy(mfm:find("\n    select_recompute: [\"mlp\", 'self_attention\\.linear_qb', " ..
        "'self_attention\\.linear_kvb', 'self_attention\\.linear_q_up_proj', " ..
        "'self_attention\\.linear_kv_up_proj']", 1, true), mfm)
      assert.is_nil(mfm:find("NOT EXPRESSIBLE in MindFormers: Megatron's recompute module", 1, true))
    end
    r = run_example("mixtral_8x7b_h100.lua", { top_k = 3 })
    by = check_all(r)
    for _, rec in ipairs(r.top_k_strategies) do
      local flags, v = parse_megatron(by[rec.rank].megatron.text)
      assert.are.equal("8", v["--num-experts"])
      assert.are.equal("2", v["--moe-router-topk"])
      assert.are.equal("14336", v["--moe-ffn-hidden-size"])
      -- router_aux_loss_coef 0.02 (Megatron's default is 0.0: no loss)
      assert.are.same({ "aux_loss", "0.02" }, { v["--moe-router-load-balancing-type"], v["--moe-aux-loss-coeff"] })
      assert.is_nil(v["--moe-router-pre-softmax"])       -- Mixtral renormalises its top 2
      assert.is_nil(v["--moe-layer-freq"])               -- every layer MoE
      assert.is_nil(v["--moe-shared-expert-intermediate-size"])
      assert.is_nil(v["--moe-expert-capacity-factor"])   -- dropless
      assert.are.equal("alltoall", v["--moe-token-dispatcher-type"])
      assert.are.equal("true", tostring(v["--group-query-attention"]))
      for _, f in ipairs(flags) do assert.is_nil(f:match("lora")) end
      local _, shard = require("apsearch.launch.torchtitan").dp_degrees(rec)
      local ep, dense = rec.ep_degree or 1, shard * (rec.cp_degree or 1) * (rec.tp_degree or 1)
      local tt = by[rec.rank].torchtitan.text
      if dense % ep == 0 then
        assert.truthy(tt:find("config.parallelism.expert_parallel_degree = " .. ep, 1, true))
      else
        assert.truthy(tt:find("NOT EXPRESSIBLE in TorchTitan: ep_degree = " .. ep, 1, true))
      end
      -- HEAD has no Mixtral family: the dense llama3 model, the MoE model
      -- noted, and the module stops first (it would train the dense one)
      assert.truthy(tt:find("NOT WRITTEN: the 8-expert MoE model", 1, true))
      assert.truthy(tt:find("config.model_spec.model = Llama3Model.Config(", 1, true))
      assert.truthy(tt:find("() -> Trainer.Config:\n    raise NotImplementedError(\"apsearch: the estimated " ..
        "8-expert MoE model is not written", 1, true), tt)
      local mf = by[rec.rank].mindformers.text
      assert.truthy(mf:find("expert_parallel: " .. ep, 1, true))  -- ep divides dp x cp here
      assert.truthy(mf:find("expert_num: 8", 1, true))
      -- dropless with grouped GEMM: MoEV3, no capacity, no router key
      local moe = yaml_tree(mf).moe_config
      assert.are.same({ 8, 2, true }, { moe.expert_num, moe.num_experts_chosen, moe.use_gmm })
      assert.is_nil(moe.capacity_factor)
      assert.is_nil(moe.routing_policy)
      assert.is_nil(mf:find("dropless routing", 1, true))
    end
  end)

  it("carry a fixed moe_grouped_gemm = false to the candidates and every launcher (was dropped: no level)", function()
    local r = run_example("mixtral_8x7b_h100.lua", { top_k = 2, fix = { "moe_grouped_gemm=false" } })
    local by = check_all(r)
    for _, rec in ipairs(r.top_k_strategies) do
      assert.is_false(rec.moe_grouped_gemm)
      local _, flags = parse_megatron(by[rec.rank].megatron.text)
      assert.is_nil(flags["--moe-grouped-gemm"])
      assert.are.equal("alltoall", flags["--moe-token-dispatcher-type"])
      assert.truthy(by[rec.rank].mindformers.text:find("\n  use_gmm: False\n", 1, true))
      assert.truthy(by[rec.rank].torchtitan.text:find("NOT EXPRESSIBLE in TorchTitan: moe_grouped_gemm = false", 1,
        true))
    end
    -- unlisted: no level, the core's default (on) and the flag
    r = run_example("mixtral_8x7b_h100.lua", { top_k = 1 })
    assert.is_nil(r.top_k_strategies[1].moe_grouped_gemm)
    local _, flags = parse_megatron(check_all(r)[1].megatron.text)
    assert.is_true(flags["--moe-grouped-gemm"])
  end)

  it("write the fused permute always and the fused router as training.moe_router_fusion says", function()
    -- the host program counts the fused permute, and the router fused (31
    -- kernels) or not (72): Megatron-LM defaults both off
    -- (transformer_config.py @ d98e8a64 l.941-947), so the script says so
    local r = run_example("mixtral_8x7b_h100.lua", { top_k = 1 })
    local text = check_all(r)[1].megatron.text
    local _, flags = parse_megatron(text)
    assert.is_true(flags["--moe-permute-fusion"])
    assert.is_true(flags["--moe-router-fusion"])
    -- the TransformerEngine releases they need, said in the script
    assert.truthy(text:find("# NOTE: --moe-permute-fusion needs TransformerEngine >= 2.1", 1, true), text)
    assert.truthy(text:find("--moe-router-fusion >= 2.7", 1, true), text)
    local fused = r.top_k_strategies[1].performance_cost.step_time
    r = run_example("mixtral_8x7b_h100.lua", { top_k = 1, set = { "training.moe_router_fusion=false" },
      fix = { "tp_degree=" .. r.top_k_strategies[1].tp_degree, "pp_degree=" .. r.top_k_strategies[1].pp_degree,
        "ep_degree=" .. r.top_k_strategies[1].ep_degree, "micro_batch_size=" .. r.top_k_strategies[1].micro_batch_size } })
    _, flags = parse_megatron(check_all(r)[1].megatron.text)
    assert.is_true(flags["--moe-permute-fusion"])
    assert.is_nil(flags["--moe-router-fusion"])
    -- 41 more Python launches per MoE layer and micro-batch each way: never faster
    assert.is_true(r.top_k_strategies[1].performance_cost.step_time >= fused)
    -- a dense model writes neither
    r = run_example("llama3_70b_h100.lua", { top_k = 1, set = { "training.framework=megatron" } })
    _, flags = parse_megatron(check_all(r)[1].megatron.text)
    assert.is_nil(flags["--moe-permute-fusion"])
    assert.is_nil(flags["--moe-router-fusion"])
  end)

  it("write MindFormers' MoE layer as LLamaDecodeLayer picks it: MoEV3 (grouped GEMM, dropless) or MoEV2", function()
    -- mindformers fd4deebc llama_transformer.py:940-953: use_gmm -> MoEV3
    -- (capacity_factor and use_allgather_dispatcher unread), else MoEV2
    -- (routing_policy must be TopkRouterV2, moe.py:685; capacity_factor
    -- <= 0 dropless, moe.py:1630)
    local r = run_example("mixtral_8x7b_h100.lua", { top_k = 1 })
    local rec = r.top_k_strategies[1]
    local function moe_of(edit)
      local saved = {}
      for k, v in pairs(edit) do saved[k] = rec[k] ~= nil and rec[k] or false; rec[k] = v end
      local text = mindspore.render(launch.context(r, rec))
      for k, v in pairs(saved) do rec[k] = v ~= false and v or nil end
      return yaml_tree(text).moe_config, text
    end
    -- no grouped GEMM, dropless: MoEV2 with capacity_factor -1.0
    local moe, text = moe_of({ moe_grouped_gemm = false })
    assert.are.same({ false, "TopkRouterV2", -1.0 }, { moe.use_gmm, moe.routing_policy, moe.capacity_factor })
    assert.are.equal(mindspore.DROPLESS_CAPACITY_FACTOR, moe.capacity_factor)
    assert.truthy(text:find("\n  capacity_factor: -1.0  # dropless\n", 1, true))
    assert.is_nil(text:find("grouped GEMM with capacity", 1, true))
    -- no grouped GEMM, capacity 1.5, allgather: all three keys on MoEV2
    moe, text = moe_of({ moe_grouped_gemm = false, moe_capacity_factor = 1.5, moe_token_dispatcher = "allgather" })
    assert.are.same({ false, "TopkRouterV2", 1.5, true },
      { moe.use_gmm, moe.routing_policy, moe.capacity_factor, moe.use_allgather_dispatcher })
    assert.is_nil(text:find("NOT EXPRESSIBLE in MindFormers: grouped GEMM", 1, true))
    -- grouped GEMM, dropless, allgather: MoEV3 has no allgather dispatcher
    moe, text = moe_of({ moe_token_dispatcher = "allgather" })
    assert.are.same({ true }, { moe.use_gmm })
    assert.is_nil(moe.use_allgather_dispatcher)
    assert.is_nil(moe.capacity_factor)
    assert.truthy(text:find("NOT EXPRESSIBLE in MindFormers: the allgather token dispatcher with grouped GEMM", 1, true))
    -- every key in the fact table with an accepted value
    for _, leaf in ipairs(parse_yaml(text)) do
      local spec = options.mindformers.keys[leaf.path]
      assert.is_truthy(spec, leaf.path)
      assert.is_true(mf_value_ok(spec, leaf.value), leaf.path .. ": " .. leaf.value)
    end
  end)

  it("always write expert_parallel_degree: 1 where ParallelDims rejects ep (deepseek_v3_671b's default is 2)", function()
    -- ParallelDims._validate (torchtitan b5bcd76c distributed/parallel_dims.py:187-192)
    -- raises unless expert_parallel_degree divides dp_shard x cp x tp
    local tt_writer = require "apsearch.launch.torchtitan"
    local function fields(rec)
      local got, notes = {}, {}
      tt_writer.moe_fields({ rec = rec, model = { num_experts = 64 } },
        function(k, v) got[k] = v end, function(kind, text) notes[#notes + 1] = kind .. ": " .. text end, {})
      return got["parallelism.expert_parallel_degree"], notes
    end
    -- dp_shard 2 x cp 1 x tp 4 = 8: ep 8 divides it, written as is
    local ep, notes = fields({ ep_degree = 8, fsdp_degree = 2, tp_degree = 4, cp_degree = 1, etp_degree = 1 })
    assert.are.equal(8, ep)
    assert.are.same({}, notes)
    -- plain replicas (zero_stage 0): dp_shard 1 x cp 1 x tp 2 = 2, ep 4 does
    -- not divide it; FSDP over the 8 replicas (dp_degrees) gives 16, which
    -- it does: written as FSDP with ep 4, the estimate's experts per rank
    -- (a framework pass found them written as 1, every expert everywhere)
    ep, notes = fields({ ep_degree = 4, dp_degree = 8, fsdp_degree = 1, zero_stage = 0, tp_degree = 2,
      cp_degree = 1, etp_degree = 1 })
    assert.are.same({ 4, {} }, { ep, notes })
    assert.are.same({ 1, 8, 0, true }, { tt_writer.dp_degrees({ dp_degree = 8, fsdp_degree = 1, zero_stage = 0,
      ep_degree = 4, tp_degree = 2 }) })
    -- ... and where not even the 4 replicas' FSDP holds ep 16 (4 x 2 = 8),
    -- written as 1 with the note
    ep, notes = fields({ ep_degree = 16, dp_degree = 4, fsdp_degree = 1, zero_stage = 0, tp_degree = 2,
      cp_degree = 1, etp_degree = 1 })
    assert.are.equal(1, ep)
    assert.are.equal(1, #notes)
    assert.truthy(notes[1]:find("NOT EXPRESSIBLE in TorchTitan: ep_degree = 16 over data-parallel replicas: " ..
      "expert_parallel_degree must divide data_parallel_shard_degree x cp x tp = 2 (ParallelDims); written as 1", 1, true))
    -- ZeRO-1 over the same 8 ranks is written as FSDP over them (dp_degrees):
    -- dp_shard 8 x tp 2 = 16, ep 4 divides it
    ep, notes = fields({ ep_degree = 4, dp_degree = 8, fsdp_degree = 1, zero_stage = 1, tp_degree = 2,
      cp_degree = 1, etp_degree = 1 })
    assert.are.same({ 4, {} }, { ep, notes })
    assert.are.same({ 1, 8, 1, true }, { tt_writer.dp_degrees({ dp_degree = 8, fsdp_degree = 1, zero_stage = 1 }) })
    assert.are.same({ 8, 1, 0, false }, { tt_writer.dp_degrees({ dp_degree = 8, fsdp_degree = 1, zero_stage = 0 }) })
    assert.are.same({ 2, 4, 1, false }, { tt_writer.dp_degrees({ dp_degree = 2, fsdp_degree = 4, zero_stage = 1 }) })
    -- the example's rank 1 (dp 64 with ZeRO-1, fsdp 1, tp 1, pp 16, cp 1,
    -- ep 8) starts from deepseek_v3_671b(), whose ParallelismConfig(
    -- expert_parallel_degree=2) is always overwritten; written as FSDP over
    -- the 64 ranks, which ParallelDims takes with ep 8 (8 divides 64 x 1 x 1)
    -- and which holds no more than ZeRO-1 (parameters whole through the
    -- backward: never resharded after the forward)
    local r = run_example("deepseek_v3_h100_1024.lua", { top_k = 3 })
    local by = check_all(r)
    local rec = r.top_k_strategies[1]
    assert.are.same({ 64, 1, 1, 1, 16, 1, 8 }, { rec.dp_degree, rec.fsdp_degree or 1, rec.zero_stage, rec.tp_degree,
      rec.pp_degree, rec.cp_degree or 1, rec.ep_degree })
    local t = parse_titan(by[1].torchtitan.text)
    assert.are.equal("deepseek_v3_671b", t.base)
    assert.are.same({ 1, 64, "never", 8 }, { t.fields["parallelism.data_parallel_replicate_degree"],
      t.fields["parallelism.data_parallel_shard_degree"], t.fields["parallelism.fsdp_reshard_after_forward"],
      t.fields["parallelism.expert_parallel_degree"] })
    assert.truthy(by[1].torchtitan.text:find("# NOT EXPRESSIBLE in TorchTitan: ZeRO-1 (optimizer sharded, " ..
      "parameters replicated) over 64 data-parallel ranks", 1, true))
    assert.is_nil(by[1].torchtitan.text:find("over data-parallel replicas", 1, true))
    for _, rr in ipairs(r.top_k_strategies) do
      assert.is_not_nil(parse_titan(by[rr.rank].torchtitan.text).fields["parallelism.expert_parallel_degree"])
    end
  end)

  it("build HEAD's qwen3 MoE model for Qwen3-30B-A3B (128 experts, top-8, width 768)", function()
    local r = run_example("qwen3_30b_a3b_h100.lua", { top_k = 2 })
    local by = check_all(r)
    for _, rec in ipairs(r.top_k_strategies) do
      local tt = by[rec.rank].torchtitan.text
      assert.is_nil(tt:find("NOT WRITTEN", 1, true))
      local t = parse_titan(tt)
      -- Qwen3-30B-A3B config.json; torchtitan b5bcd76c qwen3/__init__.py _30b_a3b
      assert.are.equal("qwen3_30b_a3b", t.base)
      assert.are.equal("30B-A3B", t.flavor)
      assert.are.equal("_build_qwen3_moe_layers", t.family_layers.ctor)
      local a = t.family_layers.args
      assert.are.same({ 48, 2048, 32, 4, 128 }, { a.n_layers, a.dim, a.n_heads, a.n_kv_heads, a.head_dim })
      assert.are.same({ 128, 8, 768 }, { a.num_experts, a.top_k, a.moe_hidden_dim })
      assert.are.equal("CosSinRoPE.Config", a.rope.ctor)
      assert.are.same({ 128, 40960, 1000000.0 }, { a.rope.args.dim, a.rope.args.max_context_length, a.rope.args.theta })
      assert.is_nil(t.model)                                   -- no llama3 model
      assert.truthy(tt:find("from torchtitan.models.qwen3 import _build_qwen3_moe_layers, model_registry", 1, true))
    end
  end)

  it("write --overlap-moe-expert-parallel-comm, and search only layouts Megatron accepts with it", function()
    local r = run_example("qwen3_30b_a3b_h100.lua", { top_k = 2,
      set = { "training.overlap_moe_expert_parallel_comm=true" } })
    local by = check_all(r)
    assert.is_true(#r.top_k_strategies > 0)
    for _, rec in ipairs(r.top_k_strategies) do
      local _, v = parse_megatron(by[rec.rank].megatron.text)
      assert.is_true(v["--overlap-moe-expert-parallel-comm"])
      -- transformer_config.py: EP > 1, a virtual pipeline under PP
      assert.is_true((rec.ep_degree or 1) > 1)
      assert.is_true((rec.pp_degree or 1) == 1 or (rec.vpp_degree or 1) > 1)
    end
  end)

  -- Megatron-LM d98e8a64 transformer_config.py l.1019, 1364-1375, 1876-1883
  it("write the sync-free experts' flags under Megatron's names, the op fuser HybridEP needs with them", function()
    local mg = require "apsearch.launch.megatron"
    local opts = require("apsearch.launch.options").megatron.options
    local function flags(tr)
      local out = {}
      mg.sync_free_args(tr, function(k, v) out[#out + 1] = v == nil and k or (k .. " " .. tostring(v)) end)
      return out
    end
    assert.are.same({}, flags({}))
    assert.are.same({ "--moe-expert-rank-capacity-factor 1.5", "--use-transformer-engine-op-fuser" },
      flags({ moe_expert_rank_capacity_factor = 1.5 }))
    local all = flags({ moe_expert_rank_capacity_factor = 1.5, moe_paged_stash = true,
      moe_paged_stash_buffer_size_factor_cuda = 1.2, moe_paged_stash_page_size = 128 })
    assert.are.same({ "--moe-expert-rank-capacity-factor 1.5", "--use-transformer-engine-op-fuser",
      "--moe-paged-stash", "--moe-paged-stash-buffer-size-factor-cuda 1.2", "--moe-paged-stash-page-size 128" }, all)
    for _, f in ipairs(all) do assert.is_true(opts[f:match("^%S+")], f) end
  end)

  -- Megatron-Bridge 067f987df scripts/performance/utils/overrides.py l.366-368
  -- (cutedsl_fused_grouped_mlp); TransformerEngine d0067d0da
  -- ops/fused/grouped_mlp.py reads NVTE_CUTEDSL_FUSED_GROUPED_MLP
  it("write TransformerEngine's fused grouped MLP as Megatron-Bridge sets it, once with the sync-free experts",
    function()
    local H = require "spec_helpers"
    local function files(extra)
      local dir = H.tmpdir()
      local args = { "run", "--model", "qwen3-30b-a3b", "--cluster", "b200:1x8", "--top-k", "1",
        "--fix", "moe_token_dispatcher=flex", "--set", "training.moe_flex_dispatcher_backend=hybridep",
        "--set", "training.precision=mxfp8", "--set", "training.cutedsl_fused_grouped_mlp=true", "-q", "--out", dir }
      for _, a in ipairs(extra or {}) do args[#args + 1] = a end
      local code, _, err = H.apsearch(table.unpack(args))
      assert.are.equal(0, code, err)
      return H.read(dir .. "/launch/rank1_megatron.sh"), H.read(dir .. "/launch/rank1_torchtitan.py")
    end
    local mg, tt = files()
    assert.truthy(mg:find("\nexport NVTE_CUTEDSL_FUSED_GROUPED_MLP=1 ", 1, true), mg)
    local _, n1 = mg:gsub("%-%-use%-transformer%-engine%-op%-fuser\n", "")
    assert.are.equal(1, n1)
    assert.truthy(mg:find("--moe-mlp-glu-interleave-size 32\n", 1, true), mg)
    assert.truthy(tt:find("# NOT EXPRESSIBLE in TorchTitan: TransformerEngine's fused grouped MLP under " ..
      "Megatron-Core (cutedsl_fused_grouped_mlp)", 1, true), tt)
    mg = files({ "--set", "training.moe_expert_rank_capacity_factor=1.5" })
    local _, n2 = mg:gsub("%-%-use%-transformer%-engine%-op%-fuser\n", "")
    assert.are.equal(1, n2)
  end)

  it("mark the sync-free experts NOT EXPRESSIBLE where AutoModel and MindFormers have none", function()
    local H = require "spec_helpers"
    -- `run --launchable automodel` let such jobs through (a breaker's finding):
    -- its file neither wrote nor named the budget and the stash
    local dir = H.tmpdir()
    local code, _, err = H.apsearch("run", "--model", "qwen3-30b-a3b", "--cluster", "b200:1x8", "--top-k", "1",
      "--fix", "moe_token_dispatcher=flex", "--set", "training.moe_flex_dispatcher_backend=hybridep",
      "--set", "training.moe_expert_rank_capacity_factor=1.5", "--set", "training.moe_paged_stash=true",
      "--set", "training.precision=mxfp8", "-q", "--out", dir)
    assert.are.equal(0, code, err)
    local am = H.read(dir .. "/launch/rank1_automodel.yaml")
    assert.truthy(am:find("# NOT EXPRESSIBLE in AutoModel: Megatron's rank capacity factor " ..
      "(moe_expert_rank_capacity_factor = 1.5)", 1, true), am)
    assert.truthy(am:find("# NOT EXPRESSIBLE in AutoModel: Megatron's paged stash of the experts' tensors " ..
      "(moe_paged_stash)", 1, true), am)
  end)

  -- transformer_block.py _checkpointed_forward (block) @ d98e8a64: the
  -- first min(k, layers) of each model chunk (the framework checker's
  -- finding: a false APPROXIMATE line on uneven last stages)
  it("write no APPROXIMATE recompute line when one --recompute-num-layers builds the per-stage counts", function()
    local mg = require "apsearch.launch.megatron"
    -- gpt-oss-120b, PP 4 x VPP 2: chunks 5,5,5,5 | 5,5,5,1; k = 3 gives 6:6:6:4
    local chunks = { 5, 5, 5, 5, 5, 5, 5, 1 }
    assert.is_true(mg.block_recompute_matches(chunks, { 6, 6, 6, 4 }, 3))
    assert.is_false(mg.block_recompute_matches(chunks, { 6, 6, 6, 6 }, 3))
    assert.is_false(mg.block_recompute_matches(chunks, { 6, 6, 4, 4 }, 3))
    -- no VPP: one chunk a stage
    assert.is_true(mg.block_recompute_matches({ 8, 8, 2 }, { 4, 4, 2 }, 4))
    local H = require "spec_helpers"
    local dir = H.tmpdir()
    local code, _, err = H.apsearch("run", "--model", "gpt-oss-120b", "--cluster", "h100-sxm-80gb:8", "--fix",
      "pp_degree=2,4", "--fix", "ep_degree=8", "--top-k", "1", "-q", "--out", dir)
    assert.are.equal(0, code, err)
    local sh = H.read(dir .. "/launch/rank1_megatron.sh")
    assert.is_nil(sh:find("APPROXIMATE: recompute", 1, true), sh)
  end)

  -- torchtitan/models/common/feed_forward.py @ b5bcd76c: w2(silu(w1 x) * w3 x)
  it("mark a GeGLU model's TorchTitan file NOT EXPRESSIBLE (HEAD's FeedForward gates with SiLU)", function()
    local tt = require "apsearch.launch.torchtitan"
    local m = require("apsearch.hf").load(ROOT .. "/examples/models/gemma-3-1b-pt.json")
    assert.are.equal("gelu_tanh", m.glu_activation)
    local _, _, notes = tt.model_shape(m, 4096, 1)
    local found = false
    for _, n in ipairs(notes) do
      if n[1] == "NOT EXPRESSIBLE in TorchTitan" and n[2] == "the gated MLP's gelu_tanh activation (GeGLU): HEAD's " ..
          "FeedForward gates with SiLU only; written as SwiGLU" then found = true end
    end
    assert.is_true(found)
    -- a SiLU-gated model has no such line
    _, _, notes = tt.model_shape(require("apsearch.hf").load(ROOT .. "/examples/models/llama-3.1-8b.json"), 4096, 1)
    for _, n in ipairs(notes) do assert.is_nil(n[2]:find("GeGLU", 1, true)) end
  end)

  -- qwen3/__init__.py _30b_a3b, deepseek_v3/__init__.py _16b @ b5bcd76c:
  -- the flavours' embeddings, final norm and lm_head
  it("write an MoE model of a width or vocabulary no flavour has with its own embeddings and lm_head #bulk", function()
    local tt = require "apsearch.launch.torchtitan"
    -- Qwen3-30B-A3B with a width no qwen3 flavour has
    local m = { num_experts = 128, experts_per_token = 8, moe_ffn_hidden_size = 768, qk_norm = true,
      hidden_size = 3072, vocab_size = 151936, num_layers = 4, num_attention_heads = 32, head_dim = 128,
      num_query_groups = 4, ffn_hidden_size = 6144, moe_layer_freq = 1 }
    local mm = assert(tt.moe_model(m, 4096))
    assert.are.equal("30B-A3B", mm.flavor)
    assert.is_true(mm.own_head)
    local lines, imported = {}, {}
    tt.family_head_config(mm, m, lines, function(mod, name) imported[#imported + 1] = mod .. "." .. name end)
    assert.are.same({
      "    config.model_spec.model.dim = 3072",
      "    config.model_spec.model.vocab_size = 151936  # TorchTitan pads no vocabulary",
      "    config.model_spec.model.tok_embeddings = Embedding.Config(num_embeddings=151936, embedding_dim=3072, " ..
        "param_init=_EMBEDDING_INIT)",
      "    config.model_spec.model.norm = _qwen3_norm(3072)",
      "    config.model_spec.model.lm_head = Linear.Config(in_features=3072, out_features=151936, " ..
        "param_init=_LINEAR_INIT)" }, lines)
    assert.truthy(table.concat(imported, " "):find("torchtitan.models.qwen3._qwen3_norm", 1, true))
    -- Kimi-K2 (DeepSeek-V3's layout, vocab 163840): the 671B flavour with
    -- the model's own head, MLA layers and 384 experts, nothing NOT WRITTEN
    -- (TorchTitan b5bcd76c's ConfigManager loads it and its Linear /
    -- Embedding configs count the 1,026,408,209,408 parameters transformers
    -- does, less the 60 x 384 expert biases TorchTitan keeps as buffers)
    local H = require "spec_helpers"
    local dir = H.tmpdir()
    local code, _, err = H.apsearch("run", "--model", ROOT .. "/examples/models/kimi-k2-instruct.json", "--cluster",
      "h100:128x8", "--set", "training.framework=fsdp2", "--top-k", "1", "-q", "--out", dir)
    assert.are.equal(0, code, err)
    local kimi = H.read(dir .. "/launch/rank1_torchtitan.py")
    assert.is_nil(kimi:find("NOT WRITTEN", 1, true), kimi)
    for _, want in ipairs({ 'config.model_spec = model_registry("671B")\n',
        "config.model_spec.model.vocab_size = 163840  #",
        "config.model_spec.model.lm_head = Linear.Config(in_features=7168, out_features=163840, " ..
          "param_init=_output_linear_init(7168))\n", "n_heads=64,", "q_lora_rank=1536,", "num_experts=384," }) do
      assert.truthy(kimi:find(want, 1, true), want)
    end
    -- a flavour of the model's size: built by model_registry as it is
    m.hidden_size = 2048
    mm = assert(tt.moe_model(m, 4096))
    assert.are.equal("30B-A3B", mm.flavor)
    assert.is_false(mm.own_head)
    local why
    -- shared experts on a qwen3-like model (Qwen1.5-MoE style)
    m.hidden_size, m.shared_expert_ffn_hidden_size = 2048, 5632
    mm, why = tt.moe_model(m, 4096)
    assert.is_nil(mm)
    assert.are.equal("shared experts (_build_qwen3_moe_layers has none)", why)
    -- no qk-norm, no MLA (Mixtral): no family
    mm, why = tt.moe_model({ num_experts = 8, qk_norm = false, hidden_size = 4096, vocab_size = 32000 }, 4096)
    assert.is_nil(mm)
    assert.is_nil(why)
  end)

  -- deepseek_v3/model.py @ b5bcd76c: softmax x (0.1 mscale ln f + 1)^2
  -- from Attention.Config.mscale; common/rope.py: ComplexRoPE.Config's
  -- original_seq_len (default 4096) and truncate; transformers takes
  -- max_position_embeddings when rope_scaling has no original context
  it("write DeepSeek-V3's YaRN variants to TorchTitan as transformers reads them", function()
    local tt = require "apsearch.launch.torchtitan"
    local function build(edit)
      local m = require("apsearch.hf").load(ROOT .. "/examples/models/deepseek-v3.json")
      edit(m)
      local mm = assert(tt.moe_model(m, 4096))
      local lines = {}
      tt.family_layers_config(mm, lines)   -- every value checked against the builder's facts
      local a, r, notes = {}, {}, {}
      for _, x in ipairs(mm.args) do a[x[1]] = x[2] end
      for _, x in ipairs(mm.rope) do r[x[1]] = x[2] end
      for _, x in ipairs(mm.notes) do notes[#notes + 1] = x[1] .. ": " .. x[2] end
      return a, r, table.concat(notes, "\n"), table.concat(lines, "\n")
    end
    -- mscale alone: transformers scales no softmax (mscale_all_dim 0) and
    -- cos/sin by 0.1 ln 40 + 1 = 1.36889, which ComplexRoPE cannot
    local a, r, notes, text = build(function(m) m.yarn_mscale_all_dim = nil end)
    assert.are.equal(0.0, a.mscale)
    assert.truthy(text:find("mscale=0.0,", 1, true), text)
    assert.truthy(notes:find("NOT EXPRESSIBLE in TorchTitan: yarn cos/sin factor 1.368887945411393", 1, true), notes)
    -- no original context: max_position_embeddings 163840, not 4096
    a, r, notes = build(function(m) m.original_max_position_embeddings = nil end)
    assert.are.equal(163840, r.original_seq_len)
    assert.is_nil(r.truncate)
    assert.is_nil(notes:find("cos/sin", 1, true))
    -- truncate false (gpt-oss style)
    a, r = build(function(m) m.yarn_no_truncate = true end)
    assert.is_false(r.truncate)
  end)

  -- torchtitan b5bcd76c: qwen3/__init__.py _build_qwen3_layers and its
  -- flavours (0.6B, 1.7B, 4B tied), gpt_oss/__init__.py
  -- _build_gptoss_layers, common/config_utils.py make_moe_config
  -- (load_balance_coeff 1e-3), common/moe.py (None: no expert bias).
  -- TorchTitan's own builders, loaded with its ConfigManager, count what
  -- apsearch counts: 32,762,123,264 (Qwen3-32B), 1,720,574,976
  -- (Qwen3-1.7B), 20,914,757,184 (gpt-oss-20b), 30,532,122,624
  -- (Qwen3-30B-A3B)
  it("build Qwen3 dense and gpt-oss on HEAD's qwen3 and gpt_oss models, with nothing the model lacks", function()
    local function titan(model, pp, set)
      local training = { global_batch_size = 64, seq_length = 4096, framework = "fsdp2" }
      local p = policy.from_table({
        model = model,
        cluster = { device = "h100-sxm-80gb", nodes = 4, devices_per_node = 8 },
        training = training,
        search_space = { data_parallel = "auto", tp_degree = { 1 }, pp_degree = { pp }, vpp_degree = { 1 },
          cp_degree = { 1 }, ep_degree = { 1 }, layer_recompute = { "full" } },
        top_k = 1,
      }, ROOT .. "/examples/x.lua")
      for k, v in pairs(set or {}) do p.model[k] = v end
      local r = search.run(p)
      assert.are.equal(1, #r.top_k_strategies)
      local by = check_all(r)[1]   -- compares titan_shape with the model
      return parse_titan(by.torchtitan.text), by.torchtitan.text
    end
    -- Qwen3-32B: head_dim 128 with 64 heads of a 5120 model, per-head
    -- qk-norm: the 32B flavour, HEAD's qwen3 layers, nothing NOT written
    local t, text = titan("qwen3-32b", 1)
    assert.are.same({ "qwen3_32b", "32B", "_build_qwen3_layers" }, { t.base, t.flavor, t.family_layers.ctor })
    -- the fsdp2 estimate's loss: 8 chunks (a result records loss_chunks 0)
    assert.truthy(text:find("config.loss = ChunkedLossWrapper.Config(num_chunks=8,", 1, true), text)
    assert.are.same({ 128, 25600, 8 }, { t.family_layers.args.head_dim, t.family_layers.args.hidden_dim,
      t.family_layers.args.n_kv_heads })
    assert.are.equal(1e-6, t.layer_fields["attention.qk_norm.eps"])
    assert.is_nil(text:find("# NOT ", 1, true), text)
    -- chunked attention beyond its chunk (launch.llama4_features at the
    -- training seq_length): the qwen3 builder attends over the whole
    -- context, so no family; within one chunk it is the same attention
    local tt = require "apsearch.launch.torchtitan"
    local q = require("apsearch.hf").load(ROOT .. "/examples/models/qwen3-32b.json")
    q.attention_chunk_size = 4096
    local none, chunk_why = tt.dense_family_model(q, 40960, 1, 8192)
    assert.is_nil(none)
    assert.are.equal("chunked attention (4096-token chunks, attention_chunk_size) at seq_length 8192", chunk_why)
    assert.is_truthy(tt.dense_family_model(q, 40960, 1, 4096))
    -- Qwen3-1.7B: the tied 1.7B flavour; with PP, untied on the 32B
    -- flavour's ModelSpec with the model's own head, and said so
    t, text = titan("qwen3-1.7b", 1)
    assert.are.same({ "1.7B", false }, { t.flavor, t.head ~= nil })
    assert.is_nil(text:find("# NOT ", 1, true), text)
    t, text = titan("qwen3-1.7b", 2)
    assert.are.same({ "32B", 2048, false }, { t.flavor, t.head.dim, t.head.enable_weight_tying == true })
    assert.truthy(text:find("# NOT EXPRESSIBLE in TorchTitan: tied input and output embeddings with pipeline " ..
      "parallelism", 1, true), text)
    -- gpt-oss-20b: HEAD's gpt_oss layers (sinks, window 128 on the even
    -- layers, biases, clamped SwiGLU are the builder's), YaRN as
    -- transformers reads it, no expert bias; only the aux loss differs
    t, text = titan("gpt-oss-20b", 1)
    assert.are.same({ "gpt_oss_20b", "20b", "_build_gptoss_layers" }, { t.base, t.flavor, t.family_layers.ctor })
    local a = t.family_layers.args
    assert.are.same({ 2880, 32, 4 }, { a.hidden_dim, a.num_experts, a.top_k })
    assert.is_true(t.family_layers.names.load_balance_coeff and a.load_balance_coeff == nil)
    assert.are.same({ dim = 64, max_context_length = 131072, theta = 150000.0, scaling = "yarn", rope_factor = 32.0,
      beta_fast = 32.0, beta_slow = 1.0, original_seq_len = 4096, truncate = false }, a.rope.args)
    local nots = {}
    for l in text:gmatch("# NOT [^\n]*") do nots[#nots + 1] = l end
    assert.are.same({ "# NOT EXPRESSIBLE in TorchTitan: the load-balancing loss (coefficient 0.9): HEAD's MoE has " ..
      "no auxiliary loss (load_balance_coeff is the expert-bias update rate); --set model.moe_aux_loss_coeff=0 " ..
      "estimates the job without it" }, nots)
    assert.is_nil(t.layer_fields["feed_forward.w1.bias"])   -- no dense FFN in gpt-oss's layers
    -- another head count than _make_gptoss_attn_config's 64: no family
    local mm, why = require("apsearch.launch.torchtitan").moe_model(
      require("apsearch.hf").load(ROOT .. "/examples/models/gpt-oss-20b.json"), 4096)
    assert.is_truthy(mm)
    local m = require("apsearch.hf").load(ROOT .. "/examples/models/gpt-oss-20b.json")
    m.num_attention_heads = 32
    mm, why = require("apsearch.launch.torchtitan").moe_model(m, 4096)
    assert.is_nil(mm)
    assert.are.equal("32 heads, 8 KV heads, head_dim 64 (_make_gptoss_attn_config builds 64, 8, 64)", why)
    -- Qwen3-30B-A3B routes without an expert bias: make_moe_config's
    -- 1e-3 written off on every layer
    t = titan("qwen3-30b-a3b", 1, { moe_aux_loss_coeff = 0 })
    assert.are.equal("None", t.layer_fields["moe.load_balance_coeff"])
  end)

  it("mark MiniMax-M2's partial RoPE and whole-projection Q/K norms NOT EXPRESSIBLE on the qwen3 MoE model", function()
    local tt = require "apsearch.launch.torchtitan"
    local m = require("apsearch.hf").load(ROOT .. "/examples/models/minimax-m2.7.json")
    m.moe_router_bias, m.moe_aux_loss_coeff = false, 0
    local mm = assert(tt.moe_model(m, 4096))
    local notes = {}
    for _, n in ipairs(mm.notes) do notes[#notes + 1] = n[1] .. ": " .. n[2] end
    assert.are.same({
      "NOT EXPRESSIBLE in TorchTitan: partial RoPE (rotary_percent 0.5): CosSinRoPE.Config (models/common/rope.py) " ..
        "has no partial-rotation field; every dim of each head is rotated",
      "NOT EXPRESSIBLE in TorchTitan: Q/K norms over the whole projection (qk_norm_full_width): the qwen3 builders " ..
        "normalise each head (qk_norm=_qwen3_norm(head_dim)); written per head, fewer norm weights than the model has",
    }, notes)
  end)

  it("are valid bash, written atomically and executable", function()
    local r = run_example("llama3_70b_h100.lua", { top_k = 2 })
    local dir = os.tmpname()
    os.remove(dir)
    local files = launch.write(dir .. "/launch", r)
    assert.are.equal(8, #files)
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

describe("TorchTitan shape comments", function()
  it("say the model's head dim, which the module builds", function()
    -- Mistral-NeMo-like: dim 5120 over 32 heads would derive 160, the
    -- model's is 128 and the module builds 128 (M.own_head_dim)
    local tt = require "apsearch.launch.torchtitan"
    local s = { n_layers = 40, dim = 5120, n_heads = 32, n_kv_heads = 8, head_dim = 128, hidden_dim = 14336,
      vocab_size = 131072, enable_weight_tying = false, max_context_length = 4096 }
    assert.are.equal("40 layers, dim 5120, 32 heads (8 kv, head dim 128), SwiGLU 14336, vocab 131072, RoPE to 4096",
      tt.shape_comment(s))
    assert.is_true(tt.own_head_dim(s))
    s.head_dim = 160
    assert.is_false(tt.own_head_dim(s))
  end)
end)

describe("TorchTitan loss", function()
  local tt = require "apsearch.launch.torchtitan"
  local function loss_lines(training)
    local lines, imported = {}, {}
    tt.loss_config(training, lines, function(mod, name) imported[#imported + 1] = mod .. "." .. name end)
    return lines, imported
  end
  -- src/core/recipe.c aps_recipe_loss_chunks: 0 (a result's "the
  -- framework's") is the profile's, 8 for fsdp2 (profile.c), else 1
  it("is ChunkedLossWrapper with the estimate's chunks (fsdp2: 8 by default, as HEAD's config functions)", function()
    local lines, imported = loss_lines({ framework = "fsdp2", loss_chunks = 0 })
    assert.are.same({ "    config.loss = ChunkedLossWrapper.Config(num_chunks=8, " ..
      "loss_fn=CrossEntropyLoss.Config(global_vocab_size=decoder_vocab_size(config.model_spec)))" }, lines)
    assert.truthy(table.concat(imported, " "):find("torchtitan.components.loss.ChunkedLossWrapper", 1, true))
    assert.are.same(lines, (loss_lines({ framework = "fsdp2" })))
    lines = loss_lines({ loss_chunks = 4 })
    assert.truthy(lines[1]:find("num_chunks=4,", 1, true), lines[1])
    -- another framework's estimate: one cross entropy, as it priced
    lines = loss_lines({ framework = "megatron", loss_chunks = 0 })
    assert.is_nil(lines[1]:find("ChunkedLossWrapper", 1, true), lines[1])
  end)
  it("is one CrossEntropyLoss with training.loss_chunks = 1", function()
    local lines, imported = loss_lines({ loss_chunks = 1 })
    assert.are.same({ "    config.loss = CrossEntropyLoss.Config(global_vocab_size=" ..
      "decoder_vocab_size(config.model_spec))" }, lines)
    assert.is_nil(table.concat(imported, " "):find("ChunkedLossWrapper", 1, true))
  end)
end)

describe("launch files a framework's own checks refuse are marked, and --launchable filters them", function()
  -- a pass running Megatron-LM's validate_args and TorchTitan's
  -- Trainer.Config on 1,867 + 1,847 files (2026-12-05) found these two
  local H = require "spec_helpers"
  local function launch_text(dir, name)
    local f = assert(io.open(dir .. "/launch/" .. name))
    local t = f:read("a")
    f:close()
    return t
  end

  it("Megatron-LM: FSDP2 with expert parallelism (arguments.py asserts it)", function()
    local dir = H.tmpdir()
    local code, _, err = H.apsearch("run", "--model", "qwen3-30b-a3b", "--cluster", "h100-sxm-80gb:2x8",
      "--set", "training.framework=fsdp2", "--fix", "ep_degree=8", "--fix", "fsdp_degree=16", "-k", "1", "-q",
      "--out", dir)
    assert.are.equal(0, code, err)
    local script = launch_text(dir, "rank1_megatron.sh")
    assert.truthy(script:find('NOT EXPRESSIBLE in Megatron-LM: FSDP2 with expert '
      .. 'parallelism: validate_args asserts "--use-torch-fsdp2 is not supported with expert parallelism"', 1, true))
    -- and the script stops before torchrun, with the assertion on stderr
    -- (it queued a job that died at start-up; a framework pass, 2026-12-07)
    local guard = "\necho 'apsearch: not runnable as written: validate_args asserts \"--use-torch-fsdp2 is not " ..
      "supported with expert parallelism\"' >&2; exit 1\nexec torchrun "
    assert.truthy(script:find(guard, 1, true), script)
    local sh = io.popen("bash " .. dir .. "/launch/rank1_megatron.sh 2>&1; echo rc=$?")
    local ran = sh:read("a")
    sh:close()
    assert.are.equal("apsearch: not runnable as written: validate_args asserts \"--use-torch-fsdp2 is not " ..
      "supported with expert parallelism\"\nrc=1\n", ran)
    local code2, out2 = H.apsearch("run", "--model", "qwen3-30b-a3b", "--cluster", "h100-sxm-80gb:2x8",
      "--set", "training.framework=fsdp2", "--fix", "ep_degree=8", "--fix", "fsdp_degree=16", "-k", "1", "-q",
      "--launchable", "megatron")
    assert.are.equal(1, code2)
    assert.truthy(out2:find("LAUNCH_DIFFERS", 1, true), out2)
  end)

  it("TorchTitan: CUDA graphs with expert parallelism over the standard all-to-all (trainer.py refuses them)", function()
    local dir = H.tmpdir()
    local code, _, err = H.apsearch("run", "--model", "qwen3-30b-a3b", "--cluster", "h100-sxm-80gb:2x8",
      "--set", "training.framework=fsdp2", "--set", "training.cuda_graphs=true", "--fix", "pp_degree=1",
      "--fix", "ep_degree=8", "--fix", "fsdp_degree=16", "-k", "1", "-q", "--out", dir)
    assert.are.equal(0, code, err)
    local tt = launch_text(dir, "rank1_torchtitan.py")
    assert.truthy(tt:find("NOT EXPRESSIBLE in TorchTitan: CUDA graphs with expert parallelism over the standard "
      .. "all-to-all dispatcher", 1, true), tt)
    assert.truthy(tt:find("config.training.disable_cuda_graphs = True", 1, true), tt)
    assert.truthy(tt:find("config.parallelism.expert_parallel_degree = 8", 1, true), tt)
  end)
end)

describe("fewer KV heads than TP ranks: Megatron-Core replicates them, the other engines refuse", function()
  local H = require "spec_helpers"
  it("writes the Megatron script as estimated and marks TorchTitan's, AutoModel's and MindFormers' files", function()
    -- Llama-3.1-8B's 8 KV heads at TP 16 (attention.py l.353-379 @ d98e8a64)
    local dir = H.tmpdir()
    local code, _, err = H.apsearch("run", "--model", "llama-3.1-8b", "--cluster", "h100-sxm-80gb:2x8",
      "--fix", "tp_degree=16", "-k", "1", "-q", "--out", dir)
    assert.are.equal(0, code, err)
    local function text(name) return H.read(dir .. "/launch/" .. name) end
    local sh = text("rank1_megatron.sh")
    assert.is_nil(sh:find("num_query_groups = 8 with", 1, true), sh)
    assert.truthy(sh:find("--num-query-groups 8", 1, true), sh)
    local said = "num_query_groups = 8 with tp_degree = 16: the estimate replicates the KV heads over the TP ranks, " ..
      "as Megatron-Core does; "
    for name, rule in pairs({ ["rank1_torchtitan.py"] = launch.KV_HEADS_RULE.TorchTitan,
                              ["rank1_automodel.yaml"] = launch.KV_HEADS_RULE.AutoModel,
                              ["rank1_mindformers.yaml"] = launch.KV_HEADS_RULE.MindFormers }) do
      local t = text(name)
      assert.truthy(t:find(said .. rule .. ", so the file does not start", 1, true), name .. "\n" .. t)
    end
    local code2, out2 = H.apsearch("run", "--model", "llama-3.1-8b", "--cluster", "h100-sxm-80gb:2x8",
      "--fix", "tp_degree=16", "-k", "1", "-q", "--launchable", "torchtitan")
    assert.are.equal(1, code2)
    assert.truthy(out2:find("LAUNCH_DIFFERS", 1, true), out2)
  end)

  it("says of a global attention shape's KV heads that those layers differ, not that the file stops", function()
    -- Gemma 4 26B-A4B: 8 KV heads on the windowed layers, 2 on the full
    -- ones; the engines' checks read num_key_value_heads (8)
    local m = { num_query_groups = 8, global_num_query_groups = 2 }
    assert.is_nil(launch.kv_heads_lacks(m, { tp_degree = 2 }, "AutoModel"))
    assert.are.equal("global_num_query_groups = 2 with tp_degree = 4: the estimate replicates the full-attention " ..
      "layers' KV heads over the TP ranks, as Megatron-Core does; AutoModel shards KV heads and does not replicate " ..
      "them (its check reads the other layers' num_key_value_heads), so those layers are not the job estimated",
      launch.kv_heads_lacks(m, { tp_degree = 4 }, "AutoModel"))
    assert.truthy(launch.kv_heads_lacks(m, { tp_degree = 16 }, "AutoModel"):find("^num_query_groups = 8 with"))
  end)
end)

describe("TorchTitan files follow the estimate's CUDA graph scope", function()
  local H = require "spec_helpers"
  it("none writes the graphs off; a module set is said NOT EXPRESSIBLE; whole layers capture", function()
    -- a breaker pass (2026-12-05): scope none was priced without graphs
    -- while the file kept TorchTitan's default graphs on
    local want = { none = "True", attn = "False", layer = "False" }
    for scope, off in pairs(want) do
      local dir = H.tmpdir()
      local code, _, err = H.apsearch("run", "-q", "-k", "1", "--set", "training.cuda_graphs=true",
        "--set", "training.cuda_graph_scope=" .. scope, "--out", dir)
      assert.are.equal(0, code, err)
      local tt = H.read(dir .. "/launch/rank1_torchtitan.py")
      assert.truthy(tt:find("config.training.disable_cuda_graphs = " .. off, 1, true), scope)
      assert.are.equal(scope == "attn", tt:find("NOT EXPRESSIBLE in TorchTitan: cuda_graph_scope attn", 1, true) ~= nil)
    end
  end)
end)
