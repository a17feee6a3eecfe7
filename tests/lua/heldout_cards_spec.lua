-- tests/lua/heldout_cards_spec.lua -- the held-out Megatron-Bridge
-- verification cards (tests/fixtures/heldout/megatron_bridge_cards.csv;
-- tests/fixtures/heldout/README.md): the measured pretrain_performance and
-- pretrain_weak_scaling items of examples/model_verification_cards at
-- Megatron-Bridge 067f987df, converted by scripts/heldout-bridge-cards.lua,
-- never fitted.  Checked here: every row is read and estimated with finite
-- numbers, a few rows keep their recipe's values, and the converter
-- reproduces the file byte for byte from a Megatron-Bridge mirror when one
-- is at hand (APS_BRIDGE_GIT_DIR, else the workplace's mirror; skipped
-- without).  No accuracy figure is asserted: the set is out of sample.

local H = require "spec_helpers"
local csvread = require "apsearch.csvread"

local ROOT = os.getenv("APS_ROOT") or "."
local FILE = ROOT .. "/tests/fixtures/heldout/megatron_bridge_cards.csv"
local ROWS = 17

local finite = H.finite

--- The file's rows by case id, each a table column -> text.
local function rows()
  local f = assert(io.open(FILE, "rb"))
  local text = f:read("a")
  f:close()
  local recs = csvread.parse(text, FILE)
  local header, by_id = recs[1], {}
  for i = 2, #recs do
    local r = {}
    for k, name in ipairs(header) do r[name] = recs[i][k] end
    by_id[r.case_id] = r
  end
  return by_id, #recs - 1
end

describe("held out: Megatron-Bridge verification cards", function()
  it("reads and estimates every row with finite numbers, none refused", function()
    local r = H.validated(FILE)
    assert.are.equal(ROWS, r.summary.cases)
    assert.are.equal(0, r.summary.failed)
    assert.are.equal(ROWS, #r.cases)
    for _, c in ipairs(r.cases) do
      assert.is_nil(c.error, c.case_id)
      assert.is_true(finite(c.predicted.tokens_per_s_per_gpu) and c.predicted.tokens_per_s_per_gpu > 0, c.case_id)
      assert.is_true(finite(c.predicted.step_time_s) and c.predicted.step_time_s > 0, c.case_id)
      assert.is_true(finite(c.predicted.mem_device_gib) and c.predicted.mem_device_gib > 0, c.case_id)
      assert.is_true(finite(c.error_pct.step_time_s), c.case_id)
    end
    -- every row but the one whose card tokens/s disagrees with its step
    -- time (Nemotron 3 Super GB200, mbc007) compares tokens/s too
    local with_tok = 0
    for _, c in ipairs(r.cases) do
      if c.error_pct.tokens_per_s_per_gpu ~= nil then
        assert.is_true(finite(c.error_pct.tokens_per_s_per_gpu), c.case_id)
        with_tok = with_tok + 1
      end
    end
    assert.are.equal(ROWS - 1, with_tok)
    assert.are.equal(ROWS, r.summary.throughput.count)
  end)

  it("keeps the recipe's values: DeepSeek-V3 on 1,024 H100 (deepseek_v3_pretrain_1024gpu_h100_bf16_config)", function()
    local r = rows()["mbc001"]
    assert.are.equal("DeepSeek-V3", r.model)
    assert.are.equal("1024", r.num_devices)
    assert.are.equal("2", r.tp_degree)
    assert.are.equal("8", r.pp_degree)
    assert.are.equal("4", r.vpp_degree)
    assert.are.equal("64", r.ep_degree)
    assert.are.equal("16384", r.global_batch_size)
    assert.are.equal("mla_up_proj/mlp", r.recompute_modules)
    assert.are.equal("false", r.overlap_grad_reduce)
    assert.are.equal("1", r.mtp_layers)
    -- "Et|(tt|)*30mL": one layer with the embedding, 30 stages of two,
    -- MTP and loss alone
    assert.are.equal("1" .. string.rep(",2", 30) .. ",0", r.pipeline_layout)
    assert.are.equal("1061.206", r.measured_tokens_per_s_per_gpu)
    assert.are.equal("61.75613", r.measured_step_time_s)
  end)

  it("keeps the recipe's values: the Qwen3-30B-A3B GB300 weak-scaling point at 256 GPUs", function()
    local r = rows()["mbc017"]
    assert.are.equal("Qwen3-30B-A3B", r.model)
    assert.are.equal("gb300", r.device)
    assert.are.equal("256", r.num_devices)
    -- --global_batch_size 16384 on qwen3_30b_a3b_pretrain_8gpu_gb300_fp8mx_config (512)
    assert.are.equal("16384", r.global_batch_size)
    assert.are.equal("8", r.micro_batch_size)
    assert.are.equal("8", r.ep_degree)
    assert.are.equal("mxfp8", r.precision)
    assert.are.equal("full_iteration", r.cuda_graph_scope)
    assert.are.equal("true", r.moe_paged_stash)
    assert.are.equal("1.5", r.moe_expert_rank_capacity_factor)
    assert.are.equal("true", r.cutedsl_fused_grouped_mlp)
    assert.are.equal("45052.607", r.measured_tokens_per_s_per_gpu)
  end)

  it("leaves out a card tokens/s that its step time contradicts, keeping the step time", function()
    local r = rows()["mbc007"]
    assert.are.equal("Nemotron-3-Super-120B-A12B", r.model)
    assert.are.equal("gb200", r.device)
    assert.are.equal("", r.measured_tokens_per_s_per_gpu)
    assert.are.equal("9.92635", r.measured_step_time_s)
    assert.are.equal("C", r.reliability)
  end)

  it("is what the converter writes from the Megatron-Bridge mirror, byte for byte", function()
    local git_dir = os.getenv("APS_BRIDGE_GIT_DIR") or "/work/.mirror/NVIDIA-NeMo+Megatron-Bridge/repo"
    local ok = os.execute(("git --git-dir=%q cat-file -e 067f987df 2>/dev/null"):format(git_dir))
    if not ok then
      pending("no Megatron-Bridge mirror at " .. git_dir .. " (set APS_BRIDGE_GIT_DIR)")
      return
    end
    local out = os.tmpname()
    local cmd = ("lua5.4 %q %q 067f987df %q 2>/dev/null"):format(ROOT .. "/scripts/heldout-bridge-cards.lua",
      git_dir, out)
    assert.is_true(os.execute(cmd) == true, cmd)
    local a = assert(io.open(out, "rb")):read("a")
    local b = assert(io.open(FILE, "rb")):read("a")
    os.remove(out)
    assert.are.equal(#b, #a)
    assert.is_true(a == b, "the converter's output differs from " .. FILE)
  end)
end)
