-- tests/lua/heldout_megatron_readme_spec.lua -- Megatron-LM's own H100
-- weak-scaling table (NVIDIA/Megatron-LM f2e5db402c images/model_table.png,
-- Megatron-Core r0.8.0; tests/fixtures/heldout/megatron_lm_readme_h100.csv,
-- tests/fixtures/heldout/README.md): nine GPT runs on 48 to 6,144 H100,
-- never fitted.  Checked here: the tokens/s derived from the printed
-- TFLOP/s with Megatron's own FLOPs formula, the model sizes against the
-- table's labels, and that every row is estimated with a finite throughput;
-- no accuracy figure is asserted (out of sample: docs/accuracy.md).

local H = require "spec_helpers"
local validate = require "apsearch.validate"

local ROOT = os.getenv("APS_ROOT") or "."
local FILE = ROOT .. "/tests/fixtures/heldout/megatron_lm_readme_h100.csv"

-- Megatron-LM core_v0.8.0 megatron/training/training.py:73-108
-- (num_floating_point_operations) per token, for a GPT layer (MHA, ffn 4h,
-- no SwiGLU): 12 L h^2 ((1 + 1 + s / h) + 4 + V / (2 L h)).
local function megatron_flops_per_token(r)
  local L, h = tonumber(r.num_layers), tonumber(r.hidden_size)
  local s, V = tonumber(r.seq_length), tonumber(r.vocab_size)
  return 12 * L * h * h * ((2 + s / h) + 4 + V / (2 * L * h))
end

describe("held out: Megatron-LM's H100 weak-scaling table", function()
  local rows = validate.load(FILE)
  rows = rows.rows or rows

  it("derives each row's tokens/s from its TFLOP/s with Megatron's formula", function()
    assert.are.equal(9, #rows)
    for _, r in ipairs(rows) do
      local tok = tonumber(r.measured_tflops_per_gpu) * 1e12 / megatron_flops_per_token(r)
      assert.are.equal(math.floor(tok + 0.5), tonumber(r.measured_tokens_per_s_per_gpu), r.case_id)
    end
    -- the 1.7B row by hand: 12 * 24 * 2048^2 * (2 + 2 + 4 + 131072 / 98304)
    -- = 11,274,289,152 FLOPs per token; 408.8e12 / that = 36,259.5
    assert.are.equal(36259, tonumber(rows[1].measured_tokens_per_s_per_gpu))
  end)

  it("holds models within 0.6B of the sizes the table names (12 L h^2 + 2 V h)", function()
    local named = { 1.7, 7.1, 16, 32, 70, 119, 177, 314, 462 }
    for i, r in ipairs(rows) do
      local L, h, V = tonumber(r.num_layers), tonumber(r.hidden_size), tonumber(r.vocab_size)
      local billions = (12 * L * h * h + 2 * V * h) / 1e9
      -- the labels are approximate: 32B is 31.47B and 119B 118.45B by this
      -- count (tests/fixtures/heldout/README.md); 0.05B below 10B
      local tol = named[i] < 10 and 0.05 or 0.6
      assert.is_true(math.abs(billions - named[i]) <= tol, r.case_id .. ": " .. billions)
      assert.are.equal(tonumber(r.num_devices),
        tonumber(r.tp_degree) * tonumber(r.pp_degree) * tonumber(r.dp_degree), r.case_id)
    end
  end)

  it("reads and estimates all 9 rows, none refused", function()
    local r = H.validated(FILE)
    assert.are.equal(9, r.summary.cases)
    assert.are.equal(0, r.summary.failed)
    for _, c in ipairs(r.cases) do
      assert.is_nil(c.error, c.case_id)
      assert.is_true(H.finite(c.predicted.tokens_per_s_per_gpu) and c.predicted.tokens_per_s_per_gpu > 0, c.case_id)
      assert.is_true(H.finite(c.error_pct.tokens_per_s_per_gpu), c.case_id)
      assert.is_true(H.finite(c.error_pct.tflops_per_gpu), c.case_id)
    end
  end)
end)
