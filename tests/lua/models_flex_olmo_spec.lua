-- tests/lua/models_flex_olmo_spec.lua -- FlexOlmo (model_type flex_olmo)
-- read as transformers' modular_flex_olmo.py builds it: OLMoE's MoE layer
-- with OLMo 2's norms after attention and MLP; the count of
-- FlexOlmoConfig() (allenai/FlexOlmo-7x7B-1T's shapes) module by module.

local hf = require "apsearch.hf"
local core = require "apsearch.core"

-- h 4096, 32 layers, 32 heads of 128, as many KV heads: q, k, v, o 4096 x
-- 4096; Q and K norms over the whole projection 2 x 4096; two norms of
-- 4096 (after attention and after the MLP); 7 experts of 3 x 4096 x 11008
-- (top 5) and the router 7 x 4096; untied embedding and lm_head 100352 x
-- 4096; the final norm.
local h = 4096
local expert = 3 * h * 11008
local layer = 4 * h * h + 2 * h + 2 * h + 7 * expert + 7 * h
local TOTAL = 32 * layer + 2 * 100352 * h + h
local ACTIVE = TOTAL - 32 * 2 * expert

describe("FlexOlmo (flex_olmo)", function()
  it("counts FlexOlmoConfig(): 33,270,665,216 parameters, 24,613,621,760 active", function()
    assert.are.equal(33270665216, TOTAL)
    assert.are.equal(24613621760, ACTIVE)
    local m = hf.from_config({ architectures = { "FlexOlmoForCausalLM" }, model_type = "flex_olmo" }, "t.json")
    local pc = core.model_params(m)
    assert.are.same({ TOTAL, ACTIVE }, { pc.total, pc.active })
    assert.are.same({ true, true, true, true, 0.01, 500000.0 }, { m.reordered_norm, m.qk_norm, m.qk_norm_full_width,
      m.moe_router_pre_softmax, m.moe_aux_loss_coeff, m.rope_theta })
  end)

  it("renormalises the top-k when norm_topk_prob, and keeps a config's rope base", function()
    local m = hf.from_config({ model_type = "flex_olmo", norm_topk_prob = true, rope_theta = 1e4 }, "t.json")
    assert.is_nil(m.moe_router_pre_softmax)
    assert.are.equal(1e4, m.rope_theta)
  end)

  it("reads num_local_experts as num_experts, and no clip_qkv (FlexOlmoConfig deletes it)", function()
    local m, info = hf.from_config({ model_type = "flex_olmo", num_local_experts = 8, clip_qkv = 8 }, "t.json")
    assert.are.equal(TOTAL + 32 * (expert + h), core.model_params(m).total)
    for _, n in ipairs(info.notes) do assert.is_nil(n:find("clip_qkv", 1, true), n) end
  end)
end)
