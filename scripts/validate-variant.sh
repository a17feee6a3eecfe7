#!/usr/bin/env bash
# Validates the rows of one source on another device preset: copies the
# rows whose `source` starts with SOURCE, names TO_DEVICE in their `device`
# column (and clears `device_memory_gib`, the preset carries the capacity),
# and runs `apsearch validate` on the copy beside the rows as published.
# The published file is not changed.  Used in docs/accuracy.md for the
# TorchTitan rows on the 500 W H100 they ran on:
#   scripts/validate-variant.sh pytorch/torchtitan h100-96gb-500w [CASES.csv]
set -euo pipefail
cd "$(dirname "$0")/.."
source_prefix=${1:?usage: scripts/validate-variant.sh SOURCE TO_DEVICE [CASES.csv]}
device=${2:?usage: scripts/validate-variant.sh SOURCE TO_DEVICE [CASES.csv]}
cases=${3:-../shared/validation/public_cases.csv}
[ -f "$cases" ] || cases=tests/fixtures/public_cases.csv
cmake -S . -B build >/dev/null && cmake --build build -j2 >/dev/null
slug=$(printf '%s' "$source_prefix" | tr -c 'A-Za-z0-9' '_')
as_published=build/variant-${slug}-published.csv
on_variant=build/variant-${slug}-${device}.csv
lua5.4 - "$cases" "$source_prefix" "$device" "$as_published" "$on_variant" <<'LUA'
local path, prefix, device, out_pub, out_var = arg[1], arg[2], arg[3], arg[4], arg[5]
-- fields of one CSV line, split on commas outside double quotes, kept verbatim
local function split(line)
  local fields, cur, quoted = {}, {}, false
  for ch in line:gmatch(".") do
    if ch == '"' then quoted = not quoted end
    if ch == "," and not quoted then
      fields[#fields + 1] = table.concat(cur) cur = {}
    else
      cur[#cur + 1] = ch
    end
  end
  fields[#fields + 1] = table.concat(cur)
  return fields
end
local f = assert(io.open(path))
local header = f:read("l")
local cols = split(header)
local idx = {}
for i, c in ipairs(cols) do idx[c] = i end
assert(idx.source and idx.device, path .. ": no source or device column")
local pub, var = { header }, { header }
for line in f:lines() do
  local fl = split(line)
  local src = fl[idx.source]:gsub('^"', "")
  if src:sub(1, #prefix) == prefix then
    pub[#pub + 1] = line
    fl[idx.device] = device
    if idx.device_memory_gib then fl[idx.device_memory_gib] = "" end
    var[#var + 1] = table.concat(fl, ",")
  end
end
f:close()
assert(#pub > 1, "no row of " .. path .. " has a source starting with " .. prefix)
for p, lines in pairs({ [out_pub] = pub, [out_var] = var }) do
  local o = assert(io.open(p, "w"))
  o:write(table.concat(lines, "\n"), "\n")
  o:close()
end
LUA
echo "== as published ($as_published)"
./build/apsearch validate "$as_published" | tail -n +1
echo "== on $device ($on_variant)"
./build/apsearch validate "$on_variant"
