#!/usr/bin/env bash
# The Blackwell / Blackwell Ultra fit of docs/accuracy.md "Held out:
# Megatron-Bridge performance summaries": `apsearch calibrate` on the dense
# rows of the earlier releases (25.09-26.02.01, reliability B, B200 /
# GB200 / GB300), judged on what it was not fitted to: the later releases
# (26.04, 26.04.01, 26.06), the other model size, and the MoE rows.
# Prints mean |error| of tokens/s per GPU before -> after for each check.
# Nothing is written outside build/heldout-fit.  Usage:
#   scripts/heldout-fit-blackwell.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out=build/heldout-fit
mkdir -p "$out"
dense=tests/fixtures/heldout/megatron_bridge_perf.csv
moe=tests/fixtures/heldout/megatron_bridge_perf_moe.csv

# Splits of the dense file by release, reliability, device and model.  The
# fixture has no newline inside a quoted cell (one row per line).
lua5.4 - "$dense" "$out" <<'EOF'
local src, out = arg[1], arg[2]
local function fields(line)
  local t, i = {}, 1
  while i <= #line + 1 do
    if line:sub(i, i) == '"' then
      local j, buf = i + 1, {}
      while true do
        local c = line:sub(j, j)
        if c == '"' and line:sub(j + 1, j + 1) == '"' then buf[#buf + 1] = '"'; j = j + 2
        elseif c == '"' then j = j + 1 break
        else buf[#buf + 1] = c; j = j + 1 end
      end
      t[#t + 1] = table.concat(buf); i = j + 1
    else
      local j = line:find(",", i, true) or #line + 1
      t[#t + 1] = line:sub(i, j - 1); i = j + 1
    end
  end
  return t
end
local lines = {}
for l in io.lines(src) do lines[#lines + 1] = l end
local hdr = fields(lines[1])
local col = {}
for i, h in ipairs(hdr) do col[h] = i end
local EARLY = { ["25.09"] = true, ["25.11"] = true, ["26.02"] = true, ["26.02.01"] = true }
local LATE = { ["26.04"] = true, ["26.04.01"] = true, ["26.06"] = true }
local splits = {
  -- fitted on: earlier releases, reliability B, Blackwell devices (the
  -- Hopper rows stay out: Hopper's defaults are fitted elsewhere)
  train = function(r, rel) return EARLY[rel] and r.reliability == "B" and r.device ~= "h100-sxm-80gb" end,
  test = function(r, rel) return LATE[rel] end,
  -- the same, across model sizes
  train_no405 = function(r, rel)
    return EARLY[rel] and r.reliability == "B" and r.device ~= "h100-sxm-80gb" and r.model ~= "Llama 3.1 405B"
  end,
  test_405 = function(r, rel) return LATE[rel] and r.device ~= "h100-sxm-80gb" and r.model == "Llama 3.1 405B" end,
  train_405 = function(r, rel)
    return EARLY[rel] and r.reliability == "B" and r.device ~= "h100-sxm-80gb" and r.model == "Llama 3.1 405B"
  end,
  test_no405 = function(r, rel) return LATE[rel] and r.device ~= "h100-sxm-80gb" and r.model ~= "Llama 3.1 405B" end,
}
for name, keep in pairs(splits) do
  local f = assert(io.open(out .. "/" .. name .. ".csv", "w"))
  f:write(lines[1], "\n")
  for i = 2, #lines do
    local v = fields(lines[i])
    local r = {}
    for h, k in pairs(col) do r[h] = v[k] end
    local rel = r.software:match("Megatron%-Bridge (%S+)")
    if keep(r, rel) then f:write(lines[i], "\n") end
  end
  f:close()
end
EOF

mape() { ./build/apsearch validate "$@" | tail -3 | head -1 | grep -o 'mean |error| [0-9.]*%' | cut -d' ' -f3; }
fit() { ./build/apsearch calibrate "$out/$1.csv" -q -o "$out/calib-$1.json"; }
fit train
fit train_no405
fit train_405
echo "fitted on the earlier releases ($out/calib-train.json):"
cat "$out/calib-train.json"; echo
for f in "$out/train.csv" "$out/test.csv" "$moe" ../shared/validation/moe/public_moe_cases.csv; do
  [ -f "$f" ] || continue
  echo "$f: $(mape "$f") -> $(mape "$f" --calibration "$out/calib-train.json")"
done
echo "across model sizes:"
echo "fitted without 405B, later 405B rows: $(mape "$out/test_405.csv") -> $(mape "$out/test_405.csv" --calibration "$out/calib-train_no405.json")"
echo "fitted on 405B, later 8B / 70B rows: $(mape "$out/test_no405.csv") -> $(mape "$out/test_no405.csv" --calibration "$out/calib-train_405.json")"
