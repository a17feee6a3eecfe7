-- tests/lua/ssd_rate_derivation_spec.lua -- Mamba-2's SSD scan rate in
-- training (src/core/internal.h APS_SSD_ELEMS_PER_HBM_BYTE,
-- APS_SSD_SCAN_RATE_BLACKWELL) re-derived from its published measurement,
-- as scripts/derive-ssd-rate.sh does: state-spaces/mamba issue 904
-- (2026-04-06), a pure Mamba-2 model (d_model 2048, 48 layers, 4 x 4,096
-- tokens, bf16) at 102.5, 239.2 and 360.4 TFLOP/s on A100, H200 and GB200.
-- The measured step less apsearch's estimate of the same job with the scan
-- free is the scan's time, so the constants hold only while the rest of
-- the estimate prices that job as when they were derived: this fails when
-- a change to the GEMM or memory-bound pricing moves them by more than 1 %.

local cjson = require "cjson"
local H = require "spec_helpers"

-- mamba_ssm's MambaConfig / Mamba2 defaults at d_model 2048, 48 layers
local CONFIG = cjson.encode({
  model_type = "mamba2", hidden_size = 2048, num_hidden_layers = 48, state_size = 128, expand = 2,
  head_dim = 64, n_groups = 1, num_heads = 64, chunk_size = 256, conv_kernel = 4, vocab_size = 50280,
  tie_word_embeddings = true, use_bias = false, use_conv_bias = true, layer_norm_epsilon = 1e-5,
})
local TOKENS = 4 * 4096
local ELEMS = 48 * TOKENS * 4096 * 128 -- forward state elements per step

--- The scan's forward rate (state elements/s) the issue's TFLOP/s gives
-- on `device`, with the rest of the step as apsearch estimates it.
local function derived_rate(dir, device, tflops)
  local code, out, err = H.apsearch("estimate", "--model", dir .. "/mamba2.json", "--cluster", device .. ":1x1",
    "-q", "--format", "json", "--set", "training.global_batch_size=4", "--set", "training.seq_length=4096",
    "--set", "training.framework=megatron", "--set", "training.precision=bf16",
    -- the measured run's: mamba_ssm's MixerModel has no dropout module
    -- (scripts/derive-ssd-rate.sh: what the rates were with it)
    "--set", "training.dropout=false",
    "--set", "cluster.device.ssd_scan_rate=1e29",
    "--strategy", "micro_batch_size=4,layer_recompute=none,zero_stage=0")
  assert.are.equal(0, code, err)
  local e = cjson.decode(out).estimate
  -- FLOPs per token: the mean of 6N and apsearch's own count (the issue
  -- does not say which it divides)
  local f = (e.model_flops_per_step / TOKENS + 6 * e.params_total) / 2
  local step = f * TOKENS / (tflops * 1e12)
  assert.is_true(step > e.step_time, device)
  return 3 * ELEMS / (step - e.step_time) -- forward, the backward twice it
end

describe("the SSD scan rate re-derived from state-spaces/mamba issue 904", function()
  local dir
  setup(function()
    dir = H.tmpdir()
    H.write(dir .. "/mamba2.json", CONFIG)
  end)

  it("H200 gives the Hopper rule's 0.927 elements per B/s, within 1 %", function()
    local per_byte = derived_rate(dir, "h200-sxm-141gb", 239.2) / 4.8e12
    assert.is_true(math.abs(per_byte / 0.927 - 1) < 0.01, tostring(per_byte))
  end)

  it("A100, not used for the rule, lands within 6 % of it (0.977)", function()
    local per_byte = derived_rate(dir, "a100-sxm4-80gb", 102.5) / 2.039e12
    assert.is_true(math.abs(per_byte / 0.927 - 1) < 0.06, tostring(per_byte))
  end)

  it("GB200 gives the Blackwell presets' 4.972e12 elements/s, within 1 %", function()
    local rate = derived_rate(dir, "gb200", 360.4)
    assert.is_true(math.abs(rate / 4.972e12 - 1) < 0.01, tostring(rate))
    for _, name in ipairs({ "b200", "gb200", "b300", "gb300" }) do
      assert.are.equal(4.972e12, require("apsearch.core").device_preset(name).ssd_scan_rate, name)
    end
  end)
end)
