-- tests/lua/pipeline_spec.lua -- pipeline and context parallelism through
-- the search (AP-DENSE-02, AP-DENSE-03 of the requirement) and the
-- "balanced" / "auto" search dimensions.

local policy = require "apsearch.policy"
local search = require "apsearch.search"

local function run(raw)
  return search.run(policy.from_table(raw, "pipeline_spec_policy.lua"))
end

local function llama8b(space, extra)
  local raw = {
    model = "llama-3.1-8b",
    cluster = { device = "h100-sxm-80gb", nodes = 1, devices_per_node = 8 },
    training = { global_batch_size = 64, seq_length = 8192, framework = "megatron" },
    search_space = space,
    top_k = 50,
  }
  for k, v in pairs(extra or {}) do raw[k] = v end
  return raw
end

describe("AP-DENSE-02: a space with PP and micro-batches", function()
  local r
  setup(function()
    r = run(llama8b({
      data_parallel = "auto", tp_degree = { 1, 2 }, pp_degree = { 1, 2, 4 },
      micro_batch_size = { 1, 2 }, layer_recompute = { "none", "full" },
    }))
  end)

  it("estimates PP candidates and returns a stage summary for each top-k strategy", function()
    local seen_pp = {}
    for rank, rec in ipairs(r.top_k_strategies) do
      local ss = r.stage_summary[rank]
      assert.are.equal(rank, ss.rank)
      assert.are.equal(rec.pp_degree, #ss.stages)
      seen_pp[rec.pp_degree] = true
      local layers, first = 0, 0
      for i, st in ipairs(ss.stages) do
        assert.are.equal(i, st.stage)
        assert.are.equal(first, st.first_layer)     -- contiguous layer ranges
        first = first + st.num_layers
        layers = layers + st.num_layers
        assert.is_true(st.time_fwd > 0 and st.time_bwd > st.time_fwd)
        assert.is_true(st.memory_breakdown.total > 0)
      end
      assert.are.equal(32, layers)
      -- micro_batch_num = B / (b x dp x fsdp)
      assert.are.equal(64 // (rec.micro_batch_size * rec.dp_degree * rec.fsdp_degree),
        rec.micro_batch_num)
      if rec.pp_degree > 1 then
        local pb = r.performance_breakdown[rank]
        assert.is_true(pb.pp_bubble.exposed > 0)
        assert.is_true(pb.pp_p2p.total > 0)
        -- 1F1B: the first stage holds min(p, m) micro-batches, the last one
        assert.are.equal(math.min(rec.pp_degree, rec.micro_batch_num),
          ss.stages[1].inflight_microbatches)
        assert.are.equal(1, ss.stages[#ss.stages].inflight_microbatches)
        -- the logits live on the last stage only
        assert.are.equal(0, ss.stages[1].memory_breakdown.logits_loss)
        assert.is_true(ss.stages[#ss.stages].memory_breakdown.logits_loss > 0)
      end
    end
    assert.is_true(seen_pp[2] or seen_pp[4], "a PP strategy made the top-k")
  end)
end)

describe("AP-DENSE-03: a space with CP", function()
  it("estimates ring-attention CP: per-device activations fall as 1/c, cp_comm is reported", function()
    local r = run(llama8b({
      data_parallel = "auto", tp_degree = { 1 }, cp_degree = { 1, 2, 4, 8 },
      cp_comm_type = { "p2p", "all_gather", "a2a" }, layer_recompute = { "selective" },
    }, { training = { global_batch_size = 8, seq_length = 32768, framework = "megatron" },
         -- a device with room for every candidate: only the CP terms differ
         cluster = { device = { base = "h100-sxm-80gb", memory_gib = 1000 },
                     nodes = 1, devices_per_node = 8 } }))
    local act, a2a = {}, {}
    for rank, rec in ipairs(r.top_k_strategies) do
      local pb = r.performance_breakdown[rank]
      local mb = r.memory_breakdown[rank]
      if rec.cp_degree > 1 then
        assert.is_true(pb.cp_comm.total > 0)
        assert.is_true(pb.cp_comm.exposed <= pb.cp_comm.total)
        assert.is_true(mb.comm_buffers.cp > 0)
      else
        assert.are.equal(0, pb.cp_comm.total)
      end
      if rec.cp_comm_type == "p2p" or rec.cp_degree == 1 then act[rec.cp_degree] = mb.activations end
      if rec.cp_comm_type == "a2a" then a2a[rec.cp_degree] = mb.activations end
    end
    -- a2a saves the full sequence over a/(t c) heads: as many elements as
    -- the ring's s/c tokens over a/t heads (8 query groups: cp 2, 4, 8)
    for _, c in ipairs({ 2, 4, 8 }) do
      assert.is_not_nil(a2a[c], "a2a cp " .. c .. " in the top-k")
      assert.are.equal(act[c], a2a[c])
    end
    for _, c in ipairs({ 2, 4, 8 }) do
      assert.is_not_nil(act[c], "cp " .. c .. " in the top-k")
      assert.is_true(math.abs(act[c] - act[c // 2] / 2) <= 1e-9 * act[c])
    end
  end)

  it("filters a sequence not divisible by 2c early, with the numbers", function()
    local r = run(llama8b({ data_parallel = "auto", cp_degree = { 8 } },
      { training = { global_batch_size = 8, seq_length = 8200, framework = "megatron" } }))
    local e = r.infeasible_summary.CP_DIVISIBILITY
    assert.is_not_nil(e)
    assert.matches("seq_length = 8200 is not divisible by 2 %* cp_degree = 16", e.message)
  end)
end)

describe("layer_offset = \"balanced\" and recompute_num_layers = \"auto\"", function()
  it("balances a 126-layer model over 16 stages like the Llama 3 partition", function()
    local r = run({
      model = "llama-3.1-405b",
      cluster = { device = "h100-sxm-80gb", nodes = 2048, devices_per_node = 8 },
      training = { global_batch_size = 2048, seq_length = 8192, framework = "megatron" },
      search_space = { data_parallel = "auto", zero_stage = { 1 }, tp_degree = { 8 },
        pp_degree = { 16 }, layer_offset = { "balanced" }, layer_recompute = { "full" },
        recompute_num_layers = { "auto" } },
      top_k = 1,
    })
    local rec = r.top_k_strategies[1]
    -- Dubey et al. 2024 s.3.3.2: one layer fewer on the first and last stage
    local want = { 7 }
    for i = 2, 15 do want[i] = 8 end
    want[16] = 7
    assert.are.same(want, rec.stage_partition)
    assert.is_true(rec.balance_stages)
    assert.is_true(rec.auto_recompute)
    assert.are.equal(16, #rec.recompute_num_layers)
  end)

  it("does not enumerate \"none\" beside full recompute with \"auto\"", function()
    local p = policy.from_table(llama8b({ layer_recompute = { "none", "full" },
      recompute_num_layers = { "auto" }, data_parallel = "auto" }), "x.lua")
    local r = search.run(p)
    assert.are.equal(1, r.all_candidate_summary.generated)
  end)
end)
