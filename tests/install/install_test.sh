#!/usr/bin/env bash
# tests/install/install_test.sh BUILD_DIR SOURCE_DIR -- issue 16 item 5:
# `cmake --install` into a fresh prefix puts the Lua modules in
# <prefix>/share/lua/5.4/apsearch and the C modules in
# <prefix>/lib/lua/5.4/apsearch (Lua's standard paths), so a stock lua5.4
# whose package.path/cpath hold the prefix's standard entries (as they do
# for /usr/local by default) requires "apsearch" with no environment
# variable set (env -i), finds the rules and examples, and runs a search.
# The CLI of the install keeps working from share/apsearch.
set -euo pipefail
BUILD="$1"; SRC="$2"
PREFIX="$(mktemp -d)"
trap 'rm -rf "$PREFIX"' EXIT
cmake --install "$BUILD" --prefix "$PREFIX" >/dev/null
test -f "$PREFIX/share/lua/5.4/apsearch/init.lua"
test -f "$PREFIX/share/lua/5.4/apsearch/format/json.lua"
test -f "$PREFIX/lib/lua/5.4/apsearch/core.so"
test -f "$PREFIX/lib/lua/5.4/apsearch/sandbox.so"
LUA="$(command -v lua5.4)"
# Lua's default paths with /usr/local replaced by the prefix: what lua5.4
# sees by default after an install into /usr/local (no LUA_PATH, no LUA_INIT)
env -i "$LUA" -e "
  package.path = package.path:gsub('/usr/local/', '$PREFIX/')
  package.cpath = package.cpath:gsub('/usr/local/', '$PREFIX/')
  assert(package.path:find('$PREFIX/share/lua/5.4/?.lua', 1, true), package.path)
  local aps = require 'apsearch'
  assert(package.searchpath('apsearch', package.path):find('$PREFIX/share/lua/5.4/', 1, true))
  assert(package.searchpath('apsearch.core', package.cpath):find('$PREFIX/lib/lua/5.4/', 1, true))
  assert(aps.util.root() == '$PREFIX/share/apsearch', aps.util.root())
  local r = aps.run(aps.util.root() .. '/examples/llama3_8b_h100.lua', { top_k = 1 })
  assert(#r.top_k_strategies == 1 and aps.sandbox.limits().enabled)
  print('require apsearch from ' .. package.searchpath('apsearch', package.path))
"
# the installed CLI, from its own share/apsearch
env -i "$PREFIX/bin/apsearch" run "$PREFIX/share/apsearch/examples/llama3_8b_h100.lua" -q --top-k 1 >/dev/null
# an example named as the README names it, run from outside the tree
note=$(cd "$PREFIX" && env -i "$PREFIX/bin/apsearch" run examples/llama3_8b_h100.lua -q --top-k 1 2>&1 >/dev/null)
case $note in
  *"using the installed $PREFIX/share/apsearch/examples/llama3_8b_h100.lua"*) ;;
  *) echo "installed example not found from $PREFIX: $note" >&2; exit 1 ;;
esac
echo "install into $PREFIX: ok"
