-- tests/lua/te_attention_spec.lua -- the attention kernel TransformerEngine
-- runs (lua/apsearch/te_attention.lua): MLA's 192/128 heads unfused on
-- Blackwell before TransformerEngine 2.5 (fused_attn.cpp:221 at v2.2,
-- the 192/128 training kernel added in v2.5), fused everywhere else.

local te = require "apsearch.te_attention"

describe("te_attention.flash", function()
  -- MLA's heads (128 + 64 for queries and keys, 128 for values) with what a case sets
  local function mla(extra)
    local c = { flash = true, head_dim_qk = 128 + 64, head_dim_v = 128 }
    for k, v in pairs(extra) do c[k] = v end
    return c
  end

  it("falls back to unfused attention for MLA on Blackwell with TransformerEngine 2.2 to 2.4", function()
    for _, v in ipairs({ "2.2", "2.3", "2.4" }) do
      local flash, why = te.flash(mla({ family = "blackwell", te = v }))
      assert.is_false(flash, v)
      assert.truthy(why:find("192/128", 1, true))
      assert.truthy(why:find("fused_attn.cpp:221", 1, true))
    end
    assert.is_false((te.flash(mla({ family = "blackwell-ultra", te = "2.2" }))))
  end)

  it("keeps fused attention from 2.5, on Hopper, without a pinned release, or with equal heads", function()
    assert.is_true((te.flash(mla({ family = "blackwell", te = "2.5" }))))
    assert.is_true((te.flash(mla({ family = "blackwell", te = "2.10" }))))
    assert.is_true((te.flash(mla({ family = "hopper", te = "2.2" }))))
    assert.is_true((te.flash(mla({ family = "blackwell", te = nil }))))
    assert.is_true((te.flash({ flash = true, head_dim_qk = 128, head_dim_v = 128, family = "blackwell", te = "2.2" })))
    -- heads of 256 on both sides: FlashAttention-2 takes them (utils.py), not refused here
    assert.is_true((te.flash({ flash = true, head_dim_qk = 256, head_dim_v = 256, family = "blackwell", te = "2.2" })))
  end)

  it("runs unfused what asks for no flash attention, with no reason", function()
    local flash, why = te.flash(mla({ flash = false, family = "hopper" }))
    assert.is_false(flash)
    assert.is_nil(why)
  end)
end)

describe("te_attention.of_row", function()
  it("reads the MLA columns and the release's TransformerEngine (apsearch.stacks)", function()
    local row = { flash_attention = "true", attention = "mla", qk_nope_head_dim = "128",
                  qk_rope_head_dim = "64", v_head_dim = "128",
                  software = "dgxc-benchmarking 25.08 (NeMo 2.0 recipe)" }
    assert.is_false((te.of_row(row, "blackwell")))
    assert.is_true((te.of_row(row, "hopper")))
    row.software = "NeMo 25.11"
    assert.is_true((te.of_row(row, "blackwell")))
    -- GQA rows never fall back here
    assert.is_true((te.of_row({ flash_attention = "true", attention = "gqa", software = "NeMo 25.04" }, "blackwell")))
    assert.is_false((te.of_row({ flash_attention = "false" }, "hopper")))
  end)
end)
