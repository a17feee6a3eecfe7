-- tests/lua/space_spec.lua -- candidate enumeration (lua/apsearch/space.lua):
-- sizes of known spaces counted by hand, size() == what the iterator
-- yields, no duplicates, defaults, dependent dimensions, data_parallel auto.

local space = require "apsearch.space"
local policy = require "apsearch.policy"

local ROOT = os.getenv("APS_ROOT") or "."

local function make(dims, N, auto)
  return space.new({ data_parallel = auto and "auto" or "manual", dims = dims }, { num_devices = N or 8 })
end

local function key(c)
  local parts = {}
  for _, f in ipairs(space.fields) do
    local v = c[f]
    if type(v) == "table" then v = "{" .. table.concat(v, ",") .. "}" end
    parts[#parts + 1] = f .. "=" .. tostring(v)
  end
  return table.concat(parts, " ")
end

-- iterates, checks uniqueness, returns count and copies of the candidates
local function collect(s)
  local seen, list = {}, {}
  for c, i in s:iter() do
    local k = key(c)
    assert.is_nil(seen[k], "duplicate candidate " .. k)
    seen[k] = true
    list[#list + 1] = space.copy(c)
    assert.are.equal(#list, i)
  end
  return #list, list
end

describe("space sizes", function()
  it("has one candidate, all defaults, when no dimension is given (AP-DENSE-07)", function()
    local s = make({})
    assert.are.equal(1, s:size())
    local n, list = collect(s)
    assert.are.equal(1, n)
    assert.are.same({
      dp_degree = 1, fsdp_degree = 1, zero_stage = 0, reshard_after_forward = true,
      tp_degree = 1, sequence_parallel = false, pp_degree = 1, vpp_degree = 1,
      cp_degree = 1, cp_comm_type = "p2p", micro_batch_size = 1, micro_batch_num = 0,
      layer_recompute = "none", recompute_num_layers = -1, allow_idle_devices = false,
      pipeline_split = "even", recompute_method = "block", pp_schedule = "1f1b",
    }, list[1])
  end)

  it("searches the listed pp_schedule values when pp > 1, ZB-V and DualPipeV only with vpp = 2", function()
    local s = make({ pp_degree = { 1, 2 }, vpp_degree = { 1, 2 },
      pp_schedule = { "1f1b", "interleaved_zero_bubble", "zbv_zero_bubble", "dualpipev" } })
    local _, list = collect(s)
    local seen = {}
    for _, c in ipairs(list) do
      local k = c.pp_degree .. "/" .. c.vpp_degree .. "/" .. c.pp_schedule
      seen[k] = (seen[k] or 0) + 1
    end
    -- pp = 1: one value (moot); pp = 2, vpp = 1: two; vpp = 2: all four
    assert.are.same({ ["1/1/1f1b"] = 1, ["1/2/1f1b"] = 1, ["2/1/1f1b"] = 1,
      ["2/1/interleaved_zero_bubble"] = 1, ["2/2/1f1b"] = 1,
      ["2/2/interleaved_zero_bubble"] = 1, ["2/2/zbv_zero_bubble"] = 1,
      ["2/2/dualpipev"] = 1 }, seen)
  end)

  it("searches the listed microbatch_group_size values under interleaved 1F1B only, pp spelt 0", function()
    local s = make({ pp_degree = { 1, 2, 4 }, vpp_degree = { 1, 2 },
      pp_schedule = { "1f1b", "interleaved_zero_bubble" }, microbatch_group_size = { 0, 2, 4, 8 } })
    local _, list = collect(s)
    local seen = {}
    for _, c in ipairs(list) do
      local k = c.pp_degree .. "/" .. c.vpp_degree .. "/" .. c.pp_schedule .. "/" .. c.microbatch_group_size
      seen[k] = (seen[k] or 0) + 1
    end
    -- 0 (the default) alone without pipelining, without interleaving and
    -- under the zero-bubble schedule; under interleaved 1F1B the values,
    -- pp itself as 0 (pp 2: 0, 4, 8; pp 4: 0, 2, 8 -- the core refuses 2)
    assert.are.same({ ["1/1/1f1b/0"] = 1, ["1/2/1f1b/0"] = 1,
      ["2/1/1f1b/0"] = 1, ["2/1/interleaved_zero_bubble/0"] = 1,
      ["2/2/1f1b/0"] = 1, ["2/2/1f1b/4"] = 1, ["2/2/1f1b/8"] = 1, ["2/2/interleaved_zero_bubble/0"] = 1,
      ["4/1/1f1b/0"] = 1, ["4/1/interleaved_zero_bubble/0"] = 1,
      ["4/2/1f1b/0"] = 1, ["4/2/1f1b/2"] = 1, ["4/2/1f1b/8"] = 1, ["4/2/interleaved_zero_bubble/0"] = 1 }, seen)
    assert.is_true(space.moot({ pp_degree = 4, vpp_degree = 1 }, "microbatch_group_size"))
    assert.is_false(space.moot({ pp_degree = 4, vpp_degree = 2 }, "microbatch_group_size"))
  end)

  it("is the plain product of independent dimensions", function()
    -- dp 4 x fsdp 2 x tp 2 x mbs 3 = 48 (sp follows tp; zero_stage 0)
    local s = make({ dp_degree = { 1, 2, 4, 8 }, fsdp_degree = { 1, 2 }, tp_degree = { 1, 2 },
      micro_batch_size = { 1, 2, 4 } })
    assert.are.equal(48, s:size())
    local n, list = collect(s)
    assert.are.equal(48, n)
    for _, c in ipairs(list) do
      assert.are.equal(c.tp_degree > 1, c.sequence_parallel)
    end
  end)

  it("fills dp x fsdp from N with data_parallel = auto (78 candidates by hand)", function()
    -- (tp, fsdp) pairs with fsdp | 8/tp: tp1: 4, tp2: 3, tp4: 2, tp8: 1 = 10;
    -- 3 have fsdp = 1 and dp > 1 (zero {0,1}), tp8 has dp = fsdp = 1 (one
    -- data-parallel rank: zero collapses), 6 have fsdp > 1 (zero collapses);
    -- recompute none (1) + full (rnl {-1, 4}: 2) = 3; mbs 2.
    -- 3 x 2 x 3 x 2 + 1 x 1 x 3 x 2 + 6 x 1 x 3 x 2 = 36 + 6 + 36 = 78
    local s = make({ tp_degree = { 1, 2, 4, 8 }, fsdp_degree = { 1, 2, 4, 8 },
      micro_batch_size = { 1, 2 }, layer_recompute = { "none", "full" },
      recompute_num_layers = { -1, 4 }, zero_stage = { 0, 1 } }, 8, true)
    assert.are.equal(78, s:size())
    local n, list = collect(s)
    assert.are.equal(78, n)
    for _, c in ipairs(list) do
      assert.are.equal(8, c.dp_degree * c.fsdp_degree * c.tp_degree * c.pp_degree * c.cp_degree)
      if c.fsdp_degree > 1 then assert.are.equal(0, c.zero_stage) end
      if c.layer_recompute ~= "full" then assert.are.equal(-1, c.recompute_num_layers) end
    end
  end)

  it("pairs dp and fsdp lists whose product fills N", function()
    -- N 16: tp1 D16: (2,8),(4,4); tp2 D8: (1,8),(2,4) = 4
    local s = make({ dp_degree = { 1, 2, 4 }, fsdp_degree = { 4, 8 }, tp_degree = { 1, 2 } }, 16, true)
    local n, list = collect(s)
    assert.are.equal(4, s:size())
    assert.are.equal(4, n)
    assert.are.same({ 2, 8, 1 }, { list[1].dp_degree, list[1].fsdp_degree, list[1].tp_degree })
    assert.are.same({ 2, 4, 2 }, { list[4].dp_degree, list[4].fsdp_degree, list[4].tp_degree })
    -- only dp given: fsdp derived
    local s2 = make({ dp_degree = { 2, 3 } }, 8, true)
    local _, l2 = collect(s2)
    assert.are.equal(1, #l2)
    assert.are.same({ 2, 4 }, { l2[1].dp_degree, l2[1].fsdp_degree })
  end)

  it("adds the full shard to the replicas on an FSDP framework when no dp/fsdp list is given", function()
    -- N 16, tp {1, 2}: D = 16 and 8; TorchTitan (fsdp2) and AutoModel shard
    -- by default, so each D gives (D, 1) and (1, D): 4 candidates; Megatron
    -- keeps the replicas alone (its sharding is zero_stage): 2
    local function pairs_of(framework)
      local s = space.new({ data_parallel = "auto", dims = { tp_degree = { 1, 2 } } },
        { num_devices = 16, framework = framework })
      local n, list = collect(s)
      assert.are.equal(s:size(), n)
      local out = {}
      for _, c in ipairs(list) do out[#out + 1] = { c.dp_degree, c.fsdp_degree, c.tp_degree } end
      return out
    end
    assert.are.same({ { 16, 1, 1 }, { 1, 16, 1 }, { 8, 1, 2 }, { 1, 8, 2 } }, pairs_of("fsdp2"))
    assert.are.same({ { 16, 1, 1 }, { 1, 16, 1 }, { 8, 1, 2 }, { 1, 8, 2 } }, pairs_of("automodel"))
    assert.are.same({ { 16, 1, 1 }, { 8, 1, 2 } }, pairs_of("megatron"))
    -- one data-parallel rank: nothing to shard, one pair
    assert.are.same({ { 1, 1 } }, space.default_dp_pairs("fsdp2", 1))
  end)

  it("emits one device-rule candidate when tp x pp x cp does not divide N", function()
    local _, list = collect(make({ tp_degree = { 3, 16 } }, 8, true))
    assert.are.equal(2, #list)
    assert.are.same({ 2, 1, 3 }, { list[1].dp_degree, list[1].fsdp_degree, list[1].tp_degree })
    assert.are.same({ 1, 1, 16 }, { list[2].dp_degree, list[2].fsdp_degree, list[2].tp_degree })
  end)

  it("does not repeat settings that cannot differ", function()
    -- sp only with tp > 1: tp1 1 + tp2 2 + tp4 2 = 5
    assert.are.equal(5, make({ tp_degree = { 1, 2, 4 }, sequence_parallel = { true, false } }):size())
    -- cp_comm_type only with cp > 1: 1 + 2 = 3
    assert.are.equal(3, make({ cp_degree = { 1, 2 }, cp_comm_type = { "p2p", "all_gather" } }):size())
    -- reshard only with fsdp > 1: 1 + 2 = 3
    assert.are.equal(3, make({ fsdp_degree = { 1, 2 }, reshard_after_forward = { true, false } }):size())
    -- zero with fsdp > 1: first of 0/3: fsdp1 3 + fsdp2 1 = 4 (dp 2)
    local s = make({ dp_degree = { 2 }, fsdp_degree = { 1, 2 }, zero_stage = { 1, 2, 3 } })
    local n, list = collect(s)
    assert.are.equal(4, n)
    assert.are.equal(3, list[4].zero_stage)
    -- one data-parallel rank: nothing to shard, zero takes its first value
    assert.are.equal(1, make({ zero_stage = { 1, 2, 3 } }):size())
  end)

  it("applies a stage_partition of p x v entries to pp p with vpp v (per model chunk)", function()
    -- {4,4,4,4}: per rank at pp 4 (vpp 1 and 2), per chunk at pp 2 vpp 2;
    -- layer_offset stays per rank only
    local s = make({ pp_degree = { 2, 4 }, vpp_degree = { 1, 2 },
      stage_partition = { { 4, 4, 4, 4 } } })
    local n, list = collect(s)
    assert.are.equal(4, n)
    local got = {}
    for _, c in ipairs(list) do
      got[#got + 1] = ("%d/%d:%s"):format(c.pp_degree, c.vpp_degree,
        c.stage_partition and table.concat(c.stage_partition, ",") or "even")
    end
    table.sort(got)
    assert.are.same({ "2/1:even", "2/2:4,4,4,4", "4/1:4,4,4,4", "4/2:4,4,4,4" }, got)
    -- a 4-entry layer_offset: pp 4 (both vpp) takes it, pp 2 is even: 4
    -- candidates, none of them pp 2 with the offset
    local o_n, o_list = collect(make({ pp_degree = { 2, 4 }, vpp_degree = { 1, 2 },
      layer_offset = { { 1, 0, 0, -1 } } }))
    assert.are.equal(4, o_n)
    for _, c in ipairs(o_list) do
      assert.are.equal(c.pp_degree == 4, c.layer_offset ~= nil)
    end
  end)

  it("applies per-stage arrays to the pp_degree of their length", function()
    -- pp1: no array fits -> even; pp2 -> {16,16}; pp4 -> {8,8,8,8}
    local s = make({ pp_degree = { 1, 2, 4 }, stage_partition = { { 16, 16 }, { 8, 8, 8, 8 } } })
    local n, list = collect(s)
    assert.are.equal(3, n)
    assert.is_nil(list[1].stage_partition)
    assert.are.same({ 16, 16 }, list[2].stage_partition)
    assert.are.same({ 8, 8, 8, 8 }, list[3].stage_partition)
    -- with "even" listed too: 1 + 2 + 2 = 5
    assert.are.equal(5, make({ pp_degree = { 1, 2, 4 },
      stage_partition = { { 16, 16 }, { 8, 8, 8, 8 }, "even" } }):size())
    -- recompute_num_layers: pp1: none 1 + full {-1, 2} 2 = 3; pp2: 1 + 3 = 4 -> 7
    local r = make({ pp_degree = { 1, 2 }, layer_recompute = { "none", "full" },
      recompute_num_layers = { -1, 2, { 1, 1 } } })
    assert.are.equal(7, r:size())
    assert.are.equal(7, (collect(r)))
  end)

  it("returns the same table every step (nothing materialized)", function()
    local it = make({ tp_degree = { 1, 2 } }):iter()
    local a = it()
    local b = it()
    assert.is_true(rawequal(a, b))
    assert.is_nil(it())
  end)

  it("counts the 1,024-GPU sweep example (122,580 candidates) without enumerating", function()
    local p = policy.load(ROOT .. "/examples/llama3_70b_h100_1024_sweep.lua")
    local s = space.new(p.search_space, { num_devices = p.cluster.num_devices })
    assert.are.equal(122580, s:size())
    local n = 0
    for _ in s:iter() do n = n + 1 end
    assert.are.equal(122580, n)
  end)

  it("agrees with the iterator on a mixed manual space", function()
    local s = make({ dp_degree = { 1, 2 }, fsdp_degree = { 1, 4 }, tp_degree = { 1, 2, 8 },
      sequence_parallel = { true, false }, pp_degree = { 1, 2 }, vpp_degree = { 1, 2 },
      cp_degree = { 1, 2 }, cp_comm_type = { "p2p", "all_gather" }, zero_stage = { 0, 1, 2 },
      reshard_after_forward = { true, false }, layer_recompute = { "none", "selective", "full" },
      recompute_num_layers = { -1, 1 }, micro_batch_size = { 1, 2 }, micro_batch_num = { 0, 4 } })
    local n = collect(s)
    assert.are.equal(s:size(), n)
    -- by hand: tp/sp 1+2+2 = 5; pp 2 x vpp 2 = 4; recompute 1 + 1 + 2 = 4;
    -- mbs 2 x mbn 2 = 4; (cp, comm, dp, fsdp, zero, reshard): per dp, fsdp1
    -- gives zero 3 (1 when dp x cp = 1) and fsdp4 reshard 2:
    -- cp1: dp1 1 + 2, dp2 3 + 2 = 8; cp2 (2 comms): 2 x (5 + 5) = 20 -> 28
    -- 28 x 5 x 4 x 4 x 4 = 8960
    assert.are.equal(8960, n)
  end)
end)

describe("space pipeline_split", function()
  local function splits(framework, L, dims)
    local s = space.new({ data_parallel = "manual", dims = dims },
      { num_devices = 64, framework = framework, num_layers = L })
    local out = {}
    for c in s:iter() do out[#out + 1] = c.pp_degree .. ":" .. c.pipeline_split end
    return out
  end

  it("is the framework's own rule when not searched", function()
    -- TorchTitan counts embedding and loss whenever it pipelines
    assert.are.same({ "1:even", "4:embedding_loss" }, splits("fsdp2", 32, { pp_degree = { 1, 4 } }))
    -- Megatron: even where the layers divide; 126 over 8 stages counts them
    assert.are.same({ "2:even", "8:embedding_loss" }, splits("megatron", 126, { pp_degree = { 2, 8 } }))
    -- Megatron-DeepSpeed partitions by layer type
    assert.are.same({ "4:deepspeed_type" }, splits("deepspeed", 126, { pp_degree = { 4 } }))
  end)

  it("takes the listed rules, the first one alone without pipelining", function()
    assert.are.same({ "1:even", "2:even", "2:embedding_loss" },
      splits("megatron", 32, { pp_degree = { 1, 2 }, pipeline_split = { "even", "embedding_loss" } }))
    -- NVIDIA's DeepSeek-V3 split, listed beside Megatron's own
    assert.are.same({ "8:embedding_loss", "8:fill_last", "16:embedding_loss", "16:fill_last" },
      splits("megatron", 61, { pp_degree = { 8, 16 }, pipeline_split = { "embedding_loss", "fill_last" } }))
  end)
end)

describe("space recompute_method", function()
  it("is enumerated with full recompute only", function()
    local s = make({ layer_recompute = { "none", "full" }, recompute_method = { "block", "uniform" } })
    local n, list = collect(s)
    assert.are.equal(3, n) -- none, full block, full uniform
    assert.are.equal(3, s:size())
    local seen = {}
    for _, c in ipairs(list) do seen[c.layer_recompute .. ":" .. c.recompute_method] = true end
    assert.is_true(seen["none:block"] and seen["full:block"] and seen["full:uniform"])
  end)
end)

describe("space layer_recompute with recompute_num_layers auto", function()
  local function values(info)
    local s = space.new({ data_parallel = "manual", dims = { layer_recompute = { "none", "full" },
      recompute_num_layers = { "auto" } } }, info)
    local got = {}
    for c in s:iter() do got[#got + 1] = c.layer_recompute end
    return got
  end
  it("leaves out none, which full with auto covers, unless the core refuses full for the model", function()
    assert.are.same({ "full" }, values({ num_devices = 8 }))
    assert.are.same({ "none", "full" }, values({ num_devices = 8, full_recompute = false }))
    -- what search.space_of asks the core: Gated DeltaNet models are priced
    -- with full recompute too now (src/core/gdn.c aps_gdn_refusal), as a
    -- dense model is; "none" is kept only where the core refuses full
    local search = require "apsearch.search"
    for model, full in pairs({ ["qwen3-next-80b-a3b"] = true, ["llama-3.1-8b"] = true }) do
      local p = policy.from_table({ model = model, cluster = { device = "h100-sxm-80gb", num_devices = 8 },
        training = { global_batch_size = 64, seq_length = 4096, framework = "megatron" },
        search_space = { layer_recompute = { "none", "full" }, recompute_num_layers = { "auto" } } }, "t.lua")
      local ctx = search.context(p)
      local got = {}
      for c in search.space_of(p, ctx:inputs(), ctx):iter() do got[c.layer_recompute] = true end
      assert.are.equal(not full, got.none == true, model)
    end
  end)
end)

describe("space reshard_after_forward under TorchTitan pipelining", function()
  it("takes false alone with pp > 1 (one candidate, as TorchTitan's default policy runs)", function()
    local s = space.new({ data_parallel = "manual", dims = { pp_degree = { 1, 2 }, fsdp_degree = { 4 },
      reshard_after_forward = { true, false } } }, { num_devices = 8, framework = "fsdp2", num_layers = 32 })
    local got = {}
    for c in s:iter() do got[#got + 1] = c.pp_degree .. ":" .. tostring(c.reshard_after_forward) end
    assert.are.same({ "1:true", "1:false", "2:false" }, got)
  end)
end)

describe("space.slot and space.slotter", function()
  it("key nested caches on the fields' values, nil standing for one key, unrolled or not", function()
    local fields = { "a", "b", "c", "d", "e", "f", "g" }
    local c = { a = 1, b = "x", c = true, e = 2.5, f = false, g = 7 }
    for nf = 0, #fields do
      local fs = table.move(fields, 1, nf, 1, {})
      local root1, root2 = {}, {}
      local t1, k1 = space.slot(root1, c, fs)
      t1[k1] = "here"
      local t2, k2 = space.slotter(fs)(root2, c)
      t2[k2] = "here"
      -- the same nesting: walk root2 along root1's path
      local a, b = root1, root2
      for i = 1, nf - 1 do
        local key
        for k in pairs(a) do key = k end
        local key2
        for k in pairs(b) do key2 = k end
        if c[fs[i]] ~= nil then
          assert.are.equal(c[fs[i]], key)
          assert.are.equal(c[fs[i]], key2)
        end
        a, b = a[key], b[key2]
      end
      assert.are.equal(nf == 0 and 1 or (c[fs[nf]] == nil and k1 or c[fs[nf]]), k1)
      assert.are.equal(k1, k2)
      assert.are.equal("here", t2[k2])
      -- a second lookup finds the same slot
      local t3, k3 = space.slotter(fs)(root2, c)
      assert.are.equal("here", t3[k3])
    end
  end)
end)

describe("space etp_degree when the space does not list it", function()
  -- Megatron-LM: expert_tensor_parallel_size None -> the tensor-parallel
  -- size (megatron/training/arguments.py:587-588 @ d98e8a64); TorchTitan
  -- has no tensor-parallel split of an expert: 1
  local function etps(framework)
    local s = space.new({ data_parallel = "manual", dims = { tp_degree = { 1, 2, 4 }, dp_degree = { 2 } } },
      { num_devices = 8, framework = framework, num_layers = 32, num_experts = 8 })
    local got, seen = {}, {}
    for c in s:iter() do
      local k = c.tp_degree .. ":" .. c.etp_degree
      if not seen[k] then seen[k] = true; got[#got + 1] = k end
    end
    return got
  end
  it("is the tensor-parallel size in Megatron-LM, 1 in TorchTitan", function()
    assert.are.same({ "1:1", "2:2", "4:4" }, etps("megatron"))
    assert.are.same({ "1:1", "2:1", "4:1" }, etps("fsdp2"))
    assert.are.equal(4, space.moe_defaults("megatron", 4).etp_degree)
    assert.are.equal(1, space.moe_defaults("fsdp2", 4).etp_degree)
  end)
  it("keeps a listed etp_degree", function()
    local s = space.new({ data_parallel = "manual", dims = { tp_degree = { 2 }, dp_degree = { 4 }, etp_degree = { 1 } } },
      { num_devices = 8, framework = "megatron", num_layers = 32, num_experts = 8 })
    for c in s:iter() do assert.are.equal(1, c.etp_degree) end
  end)
end)

describe("space moe_token_dispatcher default", function()
  it("is flex where the training sets what only flex has (HybridEP, a rank capacity factor)", function()
    assert.are.equal("alltoall", space.default_dispatcher("megatron"))
    assert.are.equal("alltoall", space.default_dispatcher("megatron", { moe_flex_dispatcher_backend = "deepep" }))
    assert.are.equal("flex", space.default_dispatcher("megatron", { moe_flex_dispatcher_backend = "hybridep" }))
    assert.are.equal("flex", space.default_dispatcher("megatron", { moe_expert_rank_capacity_factor = 1.5 }))
    assert.are.equal("flex", space.default_dispatcher("automodel"))
    -- the space of an MoE model takes it when its dims do not list one (a
    -- breaker's finding: the setting was priced on no candidate, exit 1)
    local s = space.new({ data_parallel = "manual", dims = { tp_degree = { 1 }, dp_degree = { 8 } } },
      { num_devices = 8, num_experts = 8, framework = "megatron", num_layers = 4,
        training = { moe_flex_dispatcher_backend = "hybridep" } })
    local n = 0
    for c in s:iter() do
      n = n + 1
      assert.are.equal("flex", c.moe_token_dispatcher)
    end
    assert.is_true(n > 0)
  end)
end)
