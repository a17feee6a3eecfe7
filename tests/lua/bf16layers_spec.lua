-- Megatron-LM's first and last layers in bf16 (src/core/bf16layers.c):
-- the launch flags, the NOT EXPRESSIBLE notes of the other writers, the
-- training table's round trip (0 stays explicit, unset stays unset) and
-- validate's columns.
local H = require "spec_helpers"

describe("first and last layers in bf16", function()
  local mg = require "apsearch.launch.megatron"
  local options = require("apsearch.launch.options").megatron

  local function flags(tr)
    local out = {}
    mg.bf16_layers_args(tr, function(k, v) out[#out + 1] = v == nil and k or (k .. " " .. tostring(v)) end)
    return out
  end

  it("write Megatron's flags, its default 1 for an unset count and an explicit 0 as 0", function()
    assert.are.same({}, flags({}))
    assert.are.same({ "--first-last-layers-bf16", "--num-layers-at-start-in-bf16 1",
      "--num-layers-at-end-in-bf16 1" }, flags({ first_last_layers_bf16 = true }))
    local f = flags({ first_last_layers_bf16 = true, num_layers_at_start_in_bf16 = 0, num_layers_at_end_in_bf16 = 14 })
    assert.are.same({ "--first-last-layers-bf16", "--num-layers-at-start-in-bf16 0",
      "--num-layers-at-end-in-bf16 14" }, f)
    for _, x in ipairs(f) do assert.is_true(options.options[x:match("^%S+")], x) end
    assert.are.equal(0, options.facts["--num-layers-at-start-in-bf16"].min)
    assert.are.equal(0, options.facts["--num-layers-at-end-in-bf16"].min)
  end)

  it("write tensorwise fp8 with them (delayed refuses them) and NOT EXPRESSIBLE elsewhere", function()
    local dir = H.tmpdir()
    local code, _, err = H.apsearch("run", "--model", "llama-3.1-8b", "--cluster", "h100-sxm-80gb:1x8", "--top-k", "1",
      "--fix", "pp_degree=2", "--set", "training.framework=megatron", "--set", "training.precision=fp8",
      "--set", "training.first_last_layers_bf16=true", "--set", "training.num_layers_at_start_in_bf16=0",
      "-q", "--out", dir)
    assert.are.equal(0, code, err)
    local sh = H.read(dir .. "/launch/rank1_megatron.sh")
    for _, want in ipairs({ "--fp8-recipe tensorwise", "--first-last-layers-bf16", "--num-layers-at-start-in-bf16 0",
        "--num-layers-at-end-in-bf16 1" }) do
      assert.truthy(sh:find(want, 1, true), want)
    end
    local inputs = H.read(dir .. "/result.json")
    assert.truthy(inputs:find('"num_layers_at_start_in_bf16":0,', 1, true))
    assert.falsy(inputs:find('"num_layers_at_end_in_bf16"', 1, true)) -- unset: Megatron's default
    for file, ne in pairs({ ["rank1_automodel.yaml"] = "AutoModel", ["rank1_mindformers.yaml"] = "MindFormers",
        ["rank1_torchtitan.py"] = "TorchTitan" }) do
      local text = H.read(dir .. "/launch/" .. file)
      assert.truthy(text:find("NOT EXPRESSIBLE in " .. ne .. ": Megatron's first and last layers in bf16 " ..
        "(first_last_layers_bf16)", 1, true), file)
    end
  end)

  it("refuse a count without the flag and a negative count, naming field and value", function()
    local code, _, err = H.apsearch("run", "--model", "llama-3.1-8b", "--cluster", "h100-sxm-80gb:1x8",
      "--set", "training.framework=megatron", "--set", "training.num_layers_at_end_in_bf16=2", "-q")
    assert.are.equal(2, code)
    assert.truthy(err:find("training.num_layers_at_end_in_bf16 = 2: acts with first_last_layers_bf16 only",
      1, true), err)
    code, _, err = H.apsearch("run", "--model", "llama-3.1-8b", "--cluster", "h100-sxm-80gb:1x8",
      "--set", "training.framework=megatron", "--set", "training.first_last_layers_bf16=true",
      "--set", "training.num_layers_at_start_in_bf16=-1", "-q")
    assert.are.equal(2, code)
    assert.truthy(err:find("num_layers_at_start_in_bf16", 1, true) and err:find("-1", 1, true), err)
  end)

  it("read validate's columns: empty unstated, 0 explicit", function()
    local v = require "apsearch.validate"
    local tr = {}
    v.bf16_layers_columns({ first_last_layers_bf16 = "", num_layers_at_end_in_bf16 = "" }, tr)
    assert.are.same({}, tr)
    v.bf16_layers_columns({ first_last_layers_bf16 = "true", num_layers_at_start_in_bf16 = "0",
      num_layers_at_end_in_bf16 = "14" }, tr)
    assert.are.same({ first_last_layers_bf16 = true, num_layers_at_start_in_bf16 = 0,
      num_layers_at_end_in_bf16 = 14 }, tr)
    assert.is_true(v.known_columns().num_layers_at_end_in_bf16)
    assert.has_error(function() v.bf16_layers_columns({ num_layers_at_end_in_bf16 = "-3" }, {}) end)
  end)
end)
