#!/usr/bin/env lua5.4
-- Same-layout precision pairs of measured runs: the measured and the
-- estimated throughput ratio of two precisions at one layout.
--
-- Usage: apsearch validate CASES.csv --format json > v.json
--        lua5.4 scripts/precision-pairs.lua v.json [more.json ...]
-- Two runs pair when they come from the same source (release and system)
-- and their validated inputs (model, strategy, training, cluster) differ
-- only in training.precision and fp8_param_gather (which only a quantized
-- precision sets).  For each pair, lower precision first in the order
-- fp16/bf16 < fp8 < mxfp8 < nvfp4, prints measured ratio (tokens/s per
-- GPU, higher precision's over the lower's), estimated ratio and the
-- estimated ratio's error in percent of the measured ratio; then the mean
-- |error| per precision pair and the count beyond 7 %.
local cjson = require("cjson")

local ORDER = { fp16 = 1, bf16 = 1, fp8 = 2, mxfp8 = 3, nvfp4 = 4, fp4 = 4 }
-- |ratio error| that counts a pair as off, percent
local TOLERANCE_PCT = 7.0

local function sorted_json(v)
  if type(v) ~= "table" then return cjson.encode(v) end
  local keys = {}
  for k in pairs(v) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  local parts = {}
  for _, k in ipairs(keys) do parts[#parts + 1] = tostring(k) .. "=" .. sorted_json(v[k]) end
  return "{" .. table.concat(parts, ",") .. "}"
end

local function layout_key(c)
  local t = c.inputs.training
  local p, g = t.precision, t.fp8_param_gather
  t.precision, t.fp8_param_gather = nil, nil
  local key = c.source .. "|" .. sorted_json(c.inputs)
  t.precision, t.fp8_param_gather = p, g
  return key
end

local groups, order = {}, {}
for _, path in ipairs(arg) do
  local f = assert(io.open(path, "rb"))
  local doc = cjson.decode(f:read("a"))
  f:close()
  for _, c in ipairs(doc.cases or {}) do
    local m = c.measured and c.measured.tokens_per_s_per_gpu
    local e = c.predicted and c.predicted.tokens_per_s_per_gpu
    if type(m) == "number" and type(e) == "number" and ORDER[c.inputs.training.precision] then
      local k = layout_key(c)
      if not groups[k] then groups[k] = {}; order[#order + 1] = k end
      table.insert(groups[k], c)
    end
  end
end

local stats, stat_order = {}, {}
print(("%-8s %-8s %-6s %-6s %8s %8s %7s  %s"):format("low", "high", "lowp", "highp",
  "measured", "estimate", "err%", "source"))
for _, k in ipairs(order) do
  local g = groups[k]
  for i = 1, #g do
    for j = 1, #g do
      local a, b = g[i], g[j]
      local pa, pb = a.inputs.training.precision, b.inputs.training.precision
      if ORDER[pa] < ORDER[pb] then
        local mr = b.measured.tokens_per_s_per_gpu / a.measured.tokens_per_s_per_gpu
        local er = b.predicted.tokens_per_s_per_gpu / a.predicted.tokens_per_s_per_gpu
        local err = 100 * (er / mr - 1)
        print(("%-8s %-8s %-6s %-6s %8.3f %8.3f %+7.1f  %s"):format(a.case_id, b.case_id, pa,
          pb, mr, er, err, a.source:sub(1, 90)))
        local sk = pa .. "->" .. pb
        if not stats[sk] then stats[sk] = { n = 0, s = 0, off = 0 }; stat_order[#stat_order + 1] = sk end
        local s = stats[sk]
        s.n, s.s = s.n + 1, s.s + math.abs(err)
        if math.abs(err) > TOLERANCE_PCT then s.off = s.off + 1 end
      end
    end
  end
end
print(("# pair  n  mean|err|%%  beyond %g%%"):format(TOLERANCE_PCT))
for _, sk in ipairs(stat_order) do
  local s = stats[sk]
  print(("%-14s %3d %6.1f %3d"):format(sk, s.n, s.s / s.n, s.off))
end
