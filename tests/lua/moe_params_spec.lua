-- tests/lua/moe_params_spec.lua -- the parameter counts a mixture-of-experts
-- user reads in `inspect` and in `estimate`'s stage table (newuser6,
-- 2026-12-02).  Before: the stage table's "params (M)" left the rank's
-- routed experts out (Qwen3-30B-A3B at ep 8: 1541.1 M shown of the 5165.0 M
-- the rank holds), and `inspect` listed a dense-FFN "per_layer" for models
-- none of whose layers is dense.
--
-- Every expected value is derived by hand from the Hugging Face configs
-- (examples/models/qwen3-30b-a3b.json: h 2048, 32 heads of 128, 4 KV
-- groups, 128 experts of 768, 48 layers, V 151936; DeepSeek-V3: the
-- preset's config.json) with the counts of docs/modeling.md "Parameters".
--
-- APS_ROOT is the repo root, APS_BIN the built binary (CTest sets both).

local H = require "spec_helpers"
local ROOT = os.getenv("APS_ROOT") or "."

-- Qwen3-30B-A3B, per layer
local h, a, k, d, f_e, E, L, V = 2048, 32, 4, 128, 768, 128, 48, 151936
local attn = h * a * d + 2 * h * k * d + a * d * h        -- q, k, v, o: 18,874,368
local norms = 2 * h + 2 * d                               -- input/post norms, q/k norms
local router = h * E
local expert = 3 * h * f_e                                -- one SwiGLU expert: 4,718,592
local nonexpert_layer = attn + norms + router             -- 19,140,864

local function row_of(out, first)
  for line in out:gmatch("[^\n]+") do
    local cells = {}
    for c in line:gmatch("%S+") do cells[#cells + 1] = c end
    if cells[1] == first then return cells end
  end
end

describe("estimate's stage table on a mixture-of-experts model", function()
  it("counts the rank's routed experts in params (M) and shows them apart", function()
    -- 16 H100, tp 1, pp 2 (24 + 24 layers), ep 8: each rank holds E / 8 =
    -- 16 experts of each of its 24 MoE layers
    local code, out, err = H.apsearch("estimate", ROOT .. "/examples/qwen3_30b_a3b_h100.lua", "--quiet",
      "--strategy", "tp_degree=1,pp_degree=2,ep_degree=8,micro_batch_size=1")
    assert.are.equal(0, code, out .. err)
    local experts = 24 * (E / 8) * expert                  -- 1,811,939,328
    local stage1 = 24 * nonexpert_layer + V * h + experts   -- + the embedding
    local stage2 = 24 * nonexpert_layer + h + V * h + experts -- + final norm, output layer
    assert.are.equal(2582484992, stage1)
    assert.are.equal(2582487040, stage2)
    local head = row_of(out, "stage")
    assert.truthy(head, out)
    local hl = out:match("\n(stage%s+n%s[^\n]*)")
    assert.truthy(hl:find("params (M)  experts (M)  mb in flight", 1, true), hl)
    local r1, r2 = row_of(out, "1"), row_of(out, "2")
    -- stage, n, recomputed, params (M), experts (M), ..., the layers last
    assert.are.same({ "1", "24", "0", string.format("%.1f", stage1 / 1e6),
      string.format("%.1f", experts / 1e6) }, { table.unpack(r1, 1, 5) })
    assert.are.same({ "2", "24", "0", string.format("%.1f", stage2 / 1e6),
      string.format("%.1f", experts / 1e6) }, { table.unpack(r2, 1, 5) })
    assert.are.equal("0-23", r1[#r1])
    assert.are.equal("24-47", r2[#r2])
    assert.are.equal("2582.5", r1[4])
    assert.are.equal("1811.9", r1[5])
  end)

  it("keeps the JSON's params without the experts and expert_params apart", function()
    local code, out = H.apsearch("estimate", ROOT .. "/examples/qwen3_30b_a3b_h100.lua", "--quiet",
      "--strategy", "tp_degree=1,pp_degree=2,ep_degree=8,micro_batch_size=1", "--format", "json")
    assert.are.equal(0, code, out)
    local st = require("cjson").decode(out).estimate.stages[1]
    assert.are.equal(24 * nonexpert_layer + V * h, st.params)
    assert.are.equal(24 * (E / 8) * expert, st.expert_params)
  end)

  it("shows no experts column for a dense model", function()
    local code, out, err = H.apsearch("estimate", "--model", "llama-3.1-8b", "--quiet",
      "--strategy", "tp_degree=2,zero_stage=1")
    assert.are.equal(0, code, out .. err)
    local hl = out:match("\n(stage%s+n%s[^\n]*)")
    assert.truthy(hl:find("params (M)  mb in flight", 1, true), hl)
    assert.falsy(hl:find("experts", 1, true), hl)
  end)
end)

describe("inspect on a mixture-of-experts model", function()
  local function counts(out)
    local t = {}
    for name, v in out:gmatch("\n([%w_]+)%s+([%d,]+)") do t[name] = v end
    return t
  end

  it("has no dense-layer row when every layer has experts (Qwen3-30B-A3B)", function()
    local code, out, err = H.apsearch("inspect", ROOT .. "/examples/models/qwen3-30b-a3b.json")
    assert.are.equal(0, code, err)
    local c = counts(out)
    assert.are.equal("0", c.dense_layers)
    assert.is_nil(c.per_dense_layer)
    assert.is_nil(c.per_layer)
    assert.are.equal("48", c.moe_layers)
    -- 18,874,368 + 4,352 + 262,144 + 128 x 4,718,592
    assert.are.equal(623120640, nonexpert_layer + E * expert)
    assert.are.equal("623,120,640", c.per_moe_layer)
    assert.are.equal("30,532,122,624", c.total)
  end)

  it("names the dense layers' count and size where there are some (DeepSeek-V3: 3)", function()
    local code, out, err = H.apsearch("inspect", "deepseek-v3")
    assert.are.equal(0, code, err)
    local c = counts(out)
    assert.are.equal("3", c.dense_layers)
    -- MLA (h 7168, 128 heads, q_r 1536, k_r 512, d_n 128, d_r 64, d_v 128):
    -- q_a + q_a_norm + q_b + kv_a + kv_a_norm + kv_b + o, then 2 norms and
    -- the dense SwiGLU FFN of 18432
    local hh = 7168
    local mla = hh * 1536 + 1536 + 1536 * 128 * 192 + hh * (512 + 64) + 512
      + 512 * 128 * (128 + 128) + 128 * 128 * hh
    local dense = mla + 2 * hh + 3 * hh * 18432
    assert.are.equal(583483392, dense)
    assert.are.equal("583,483,392", c.per_dense_layer)
    assert.is_nil(c.per_layer)
    assert.are.equal("58", c.moe_layers)
  end)

  it("keeps the core's keys in the JSON", function()
    local code, out = H.apsearch("inspect", ROOT .. "/examples/models/qwen3-30b-a3b.json", "--format", "json")
    assert.are.equal(0, code)
    local p = require("cjson").decode(out).parameters
    assert.are.equal(attn + norms + 3 * h * 6144, p.per_layer) -- the config's dense intermediate_size
    assert.are.equal(48, p.moe_layers)
  end)
end)
