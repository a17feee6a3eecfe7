-- Reproduces the GEMM shape terms of src/core/presets.c (APS_GEMM_TILE_M,
-- APS_GEMM_TILE_N, APS_GEMM_K0, APS_GEMM_FIXED_S): a grid search of the
-- least squares of log TFLOPS over published GEMM microbenchmarks, each
-- device (and library) with its own large-GEMM efficiency, the shape terms
-- shared; the form is src/core/gemm.c's.  Prints the best points of the
-- grid, the residuals, and the smallest-dimension form it replaced.
-- Usage: lua5.4 scripts/fit-gemm-shape.lua
--
-- Points (M, N, K, TFLOPS):
--   Azure AI-benchmarking-guide as stored in samuel-bohman/AI-benchmarking-
--   guide 2b25b69, Azure_Results/ND_{H100_v5,H200_v5,GB200_v6,MI300X_v5}
--   _results.md (cuBLASLt / hipBLASLt, fp8) and ND_A100_v4_results.md
--   (fp16); DeepGEMM README at deepseek-ai/DeepGEMM 327ec92f (H800, fp8,
--   the M = 4,096 dense rows and the contiguous grouped rows, groups x M).

local sq = { 1024, 2048, 4096, 8192, 16384, 32768 }
local function harness(tf, others)
  local p = {}
  for i, v in ipairs(tf) do p[#p + 1] = { sq[i], sq[i], sq[i], v } end
  for _, o in ipairs(others) do p[#p + 1] = o end
  return p
end

-- name, dense peak of the precision (TFLOPS), SMs, points
local DEV = {
  { "H100", 1978.9, 132, harness({ 274.1, 1011.3, 1216.9, 1290.1, 1377.3, 1382.2 },
    { { 1024, 2145, 1024, 410.7 }, { 6144, 12288, 12288, 1351.4 }, { 802816, 192, 768, 663.8 } }) },
  { "H200", 1978.9, 132, harness({ 403.4, 1134.6, 1249.2, 1269.4, 1305.0, 1333.2 },
    { { 1024, 2145, 1024, 648.0 }, { 802816, 192, 768, 839.8 } }) },
  { "A100", 312, 108, harness({ 119.4, 221.8, 228.0, 253.7, 256.5 },
    { { 1024, 2145, 1024, 132.8 }, { 6144, 12288, 12288, 250.8 }, { 802816, 192, 768, 157.8 } }) },
  { "GB200", 5000, 148, harness({ 349.4, 1676.1, 2694.7, 2781.5, 2819.5, 2755.3 },
    { { 1024, 2145, 1024, 627.2 }, { 6144, 12288, 12288, 2798.7 }, { 802816, 192, 768, 1482.5 } }) },
  { "MI300X", 2614.9, 304, harness({ 278.2, 726.9, 1085.4, 1222.9, 1081.4, 1142.4 },
    { { 1024, 2145, 1024, 396.2 }, { 6144, 12288, 12288, 1148.7 }, { 802816, 192, 768, 647.4 } }) },
  { "DeepGEMM-H800", 1978.9, 132, {
    { 4096, 2112, 7168, 1127 }, { 4096, 24576, 1536, 1212 }, { 4096, 32768, 512, 775 },
    { 4096, 7168, 16384, 1520 }, { 4096, 4096, 7168, 1410 }, { 4096, 7168, 2048, 1168 },
    { 32768, 4096, 7168, 1346 }, { 32768, 7168, 2048, 1214 } } },
}

--- src/core/gemm.c aps_gemm_shape_factor, for the same terms.
local function shape(M, N, K, sms, tm, tn, k0)
  local mt, nt = math.ceil(M / tm), math.ceil(N / tn)
  local tiles = mt * nt
  return M * N / (mt * tm * nt * tn) * tiles / (math.ceil(tiles / sms) * sms) * K / (K + k0)
end

--- Log errors of one device at efficiency A under a factor and fixed time.
local function errors(dev, A, factor, t0)
  local out = {}
  for _, p in ipairs(dev[4]) do
    local M, N, K, tf = p[1], p[2], p[3], p[4]
    local t = 2 * M * N * K / (dev[2] * 1e12 * A * factor(M, N, K, dev[3])) + t0
    out[#out + 1] = math.log(2 * M * N * K / t / 1e12 / tf)
  end
  return out
end

--- Best efficiency A (grid 0.300-0.998) of one device: squared error, A.
local function best_a(dev, factor, t0)
  local best, ba = math.huge, nil
  for i = 300, 998, 2 do
    local s = 0
    for _, e in ipairs(errors(dev, i / 1000, factor, t0)) do s = s + e * e end
    if s < best then best, ba = s, i / 1000 end
  end
  return best, ba
end

local function total(factor, t0)
  local s, As = 0, {}
  for i, dev in ipairs(DEV) do
    local e, a = best_a(dev, factor, t0)
    s, As[i] = s + e, a
  end
  return s, As
end

local function residuals(factor, t0, As)
  for i, dev in ipairs(DEV) do
    local r = {}
    for _, e in ipairs(errors(dev, As[i], factor, t0)) do r[#r + 1] = ("%+.2f"):format(e) end
    print(("  %-14s A %.3f  %s"):format(dev[1], As[i], table.concat(r, " ")))
  end
end

local res = {}
for _, t in ipairs({ { 64, 128 }, { 128, 64 }, { 128, 128 }, { 128, 256 } }) do
  for k0 = 128, 448, 32 do
    for t0i = 4, 13 do
      local t0 = t0i * 0.5e-6
      local f = function(M, N, K, sms) return shape(M, N, K, sms, t[1], t[2], k0) end
      local s, As = total(f, t0)
      res[#res + 1] = { s = s, tm = t[1], tn = t[2], k0 = k0, t0 = t0, As = As, f = f }
    end
  end
end
table.sort(res, function(a, b) return a.s < b.s end)
print("tile, k0, t0 -> sum of squared log errors (best 5):")
for i = 1, 5 do
  local r = res[i]
  print(("  %d x %d, k0 %d, %.1f us: %.4f"):format(r.tm, r.tn, r.k0, r.t0 * 1e6, r.s))
end
print("residuals of the best (log of estimate / measured, the points in order):")
residuals(res[1].f, res[1].t0, res[1].As)

local bs, bh, bA = math.huge, nil, nil
for h = 0, 3000, 20 do
  local f = function(M, N, K) local x = math.min(M, N, K) return x / (x + h) end
  local s, As = total(f, 0)
  if s < bs then bs, bh, bA = s, h, As end
end
print(("smallest-dimension form, best half-size dimension %d: %.4f"):format(bh, bs))
residuals(function(M, N, K) local x = math.min(M, N, K) return x / (x + bh) end, 0, bA)
