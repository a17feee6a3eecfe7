#!/usr/bin/env bash
# scripts/check-rockspec.sh -- issue 16 item 5: `luarocks make` of
# apsearch-dev-1.rockspec (cmake backend) in a fresh tree, then a stock
# lua5.4 with that tree's paths (`luarocks path`) requires "apsearch",
# finds the rock's rules and examples without APS_ROOT, and runs a search;
# the rock's CLI runs too.  The Lua dependencies (lua-cjson,
# luafilesystem) come from the Debian packages (--deps-mode=none).
# Needs luarocks (Debian package `luarocks`); run from anywhere.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v luarocks >/dev/null || { echo "check-rockspec: luarocks is not installed" >&2; exit 2; }
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
# the tracked files as they are in the working tree (no build directories)
mkdir "$WORK/src"
git ls-files -z | tar --null -T - -cf - | tar -xf - -C "$WORK/src"
(cd "$WORK/src" && luarocks --lua-version 5.4 --tree "$WORK/tree" make --deps-mode=none \
  apsearch-dev-1.rockspec >"$WORK/luarocks.log" 2>&1) || { tail -20 "$WORK/luarocks.log" >&2; exit 1; }
eval "$(luarocks --lua-version 5.4 --tree "$WORK/tree" path)"
(cd / && env -u APS_ROOT lua5.4 -e "
  local aps = require 'apsearch'
  assert(package.searchpath('apsearch', package.path):find('$WORK/tree/share/lua/5.4/', 1, true))
  local root = aps.util.root()
  assert(root:find('$WORK/tree/lib/luarocks/rocks-5.4/apsearch/', 1, true), root)
  local r = aps.run(root .. '/examples/llama3_8b_h100.lua', { top_k = 1 })
  assert(#r.top_k_strategies == 1)
")
ROCK="$(luarocks --lua-version 5.4 --tree "$WORK/tree" show --rock-dir apsearch)"
(cd / && env -u APS_ROOT "$WORK/tree/bin/apsearch" run "$ROCK/share/apsearch/examples/llama3_8b_h100.lua" -q --top-k 1 >/dev/null)
echo "luarocks make apsearch-dev-1.rockspec: ok"
