--- Which attention kernel TransformerEngine runs for a model on a device:
-- flash (cuDNN fused attention or FlashAttention) or the unfused
-- DotProductAttention (two batched GEMMs and a softmax over the stored
-- scores), the two the core prices (training.flash_attention,
-- docs/modeling.md "Attention").
--
-- Megatron-Core with TransformerEngine asks for fused attention; TE picks
-- the first backend whose checks the layer passes
-- (transformer_engine/pytorch/dot_product_attention/utils.py
-- get_attention_backend) and falls back to the unfused one when none does.
-- One fallback changes a measured run's time by a factor: multi-head
-- latent attention (DeepSeek-V2/V3: query/key head 192 = 128 + 64, value
-- head 128) on Blackwell before TransformerEngine 2.5.
--   * FlashAttention refuses any head_dim_qk != head_dim_v ("does not
--     support MLA"): NVIDIA/TransformerEngine v2.2
--     transformer_engine/pytorch/dot_product_attention/utils.py:466-472.
--   * cuDNN fused attention (F16_arbitrary_seqlen) refuses head
--     dimensions over 128 on sm100 and newer: v2.2
--     transformer_engine/common/fused_attn/fused_attn.cpp:221
--     (`!(sm_arch_ >= 100 && (head_dim_qk > 128 || head_dim_v > 128))`),
--     unchanged in v2.3 and v2.4.
--   * v2.5 (f05f12c9, 2025-06-29) adds training with d_qk = 192, d_v = 128
--     on Blackwell (fused_attn.cpp:250-251, with cuDNN 9.11).
-- On Hopper the same layer runs fused (head dimensions up to 256 with
-- cuDNN 9, fused_attn.cpp:235 at v2.2).
-- Not modelled: the cuDNN the container ships.  v2.5's kernel needs
-- cuDNN 9.11 at run time; no container's cuDNN is pinned here, so a
-- release with TransformerEngine 2.5 or later (NeMo v2.4.0's manifest,
-- 25.07: f05f12c9) is taken to have it.
-- @module apsearch.te_attention
local M = {}

--- The first TransformerEngine release that trains MLA's 192/128 heads
-- with fused attention on Blackwell ("major.minor"; see the module doc).
M.MLA_BLACKWELL_FUSED_SINCE = "2.5"

--- The largest head dimension cuDNN fused attention takes on Blackwell
-- before M.MLA_BLACKWELL_FUSED_SINCE (fused_attn.cpp:221 at v2.2).
M.BLACKWELL_FUSED_MAX_HEAD_DIM = 128

--- Efficiency families (apsearch.calibration.family) that are sm100 or newer.
M.BLACKWELL_FAMILIES = { ["blackwell"] = true, ["blackwell-ultra"] = true }

--- Whether version a ("major.minor") is older than b.
local function older(a, b)
  local a1, a2 = a:match("^(%d+)%.(%d+)")
  local b1, b2 = b:match("^(%d+)%.(%d+)")
  a1, a2, b1, b2 = tonumber(a1), tonumber(a2), tonumber(b1), tonumber(b2)
  if not (a1 and b1) then return false end
  return a1 < b1 or (a1 == b1 and a2 < b2)
end

--- The attention a run gets.
-- @tparam table p {flash = boolean (the run asks for flash/fused
--   attention), head_dim_qk = integer, head_dim_v = integer (elements per
--   head; equal outside MLA), family = string (calibration.family of the
--   device), te = string|nil (TransformerEngine "major.minor" the run's
--   release pins, apsearch.stacks.transformer_engine; nil: a release with
--   every kernel this module knows)}
-- @treturn boolean true: flash/fused attention; false: unfused
-- @treturn string|nil why it falls back (nil when it does not)
function M.flash(p)
  if not p.flash then return false, nil end
  local qk, v = p.head_dim_qk, p.head_dim_v
  if p.te and M.BLACKWELL_FAMILIES[p.family] and qk and v and qk ~= v
    and math.max(qk, v) > M.BLACKWELL_FUSED_MAX_HEAD_DIM
    and older(p.te, M.MLA_BLACKWELL_FUSED_SINCE) then
    return false, ("TransformerEngine %s runs attention with head dimensions %d/%d unfused on %s: "
      .. "FlashAttention refuses head_dim_qk != head_dim_v and cuDNN fused attention head "
      .. "dimensions over %d on sm100 before TransformerEngine %s (utils.py:466, "
      .. "fused_attn.cpp:221 at v2.2)"):format(p.te, qk, v, p.family,
      M.BLACKWELL_FUSED_MAX_HEAD_DIM, M.MLA_BLACKWELL_FUSED_SINCE)
  end
  return true, nil
end

--- The attention of a measured run (a validation row), from its
-- `flash_attention`, MLA columns (`attention` mla: head_dim_qk =
-- qk_nope_head_dim + qk_rope_head_dim, head_dim_v = v_head_dim; other
-- attention has equal heads and never falls back here) and the
-- TransformerEngine of its release.
-- @tparam table row column -> string (software already read as its
--   framework release, apsearch.stacks.framework_software)
-- @tparam string family calibration.family of the row's device
-- @treturn boolean, string|nil as M.flash
function M.of_row(row, family)
  local stacks = require "apsearch.stacks"
  local flash = tostring(row.flash_attention or ""):lower() == "true"
  local qk, v
  if tostring(row.attention or ""):lower() == "mla" then
    local n, r = tonumber(row.qk_nope_head_dim), tonumber(row.qk_rope_head_dim)
    qk = n and r and n + r
    v = tonumber(row.v_head_dim)
  end
  return M.flash { flash = flash, head_dim_qk = qk, head_dim_v = v, family = family,
                   te = stacks.transformer_engine(row.software) }
end

return M
