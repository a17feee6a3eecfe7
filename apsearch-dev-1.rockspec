-- luarocks rockspec (issue 16 item 5).  UNTESTED: luarocks is not
-- installable on the machines this was written on (no Debian package in
-- reach); `luarocks make apsearch-dev-1.rockspec` from the repository root
-- is the intended use.
--
-- The cmake backend builds with the project's CMakeLists.txt: the C
-- modules (apsearch.core, apsearch.sandbox) go to the rock tree's LIBDIR,
-- the Lua modules to its LUADIR (APS_LUA_CDIR / APS_LUA_LDIR), and the
-- CLI, rules and examples under the rock's own prefix
-- (<rock dir>/share/apsearch).  Needs cmake, a C11 compiler, pkg-config
-- with lua5.4's .pc, npm is optional (the report's ECharts), and the Lua
-- libraries below.  The rules and examples are found from
-- APS_ROOT=$(luarocks show --rock-dir apsearch)/share/apsearch when the
-- Lua modules are not in <prefix>/share/lua/5.4 next to them.
rockspec_format = "3.0"
package = "apsearch"
version = "dev-1"
source = {
  url = "git+file://.",
}
description = {
  summary = "Parallel-strategy search and performance estimator for LLM training",
  detailed = [[
apsearch estimates step time and per-device memory of dense transformer
training strategies (DP/FSDP/ZeRO, TP+SP, PP/VPP, CP, recompute) on GPU
clusters and searches a policy's space for the best ones.]],
  license = "Apache-2.0",
}
dependencies = {
  "lua >= 5.4, < 5.5",
  "lua-cjson",
  "luafilesystem",
}
build_dependencies = {}
test_dependencies = { "busted" }
build = {
  type = "cmake",
  variables = {
    CMAKE_BUILD_TYPE = "Release",
    CMAKE_INSTALL_PREFIX = "$(PREFIX)",
    APS_BUILD_TESTS = "OFF",
    APS_LUA_LDIR = "$(LUADIR)",
    APS_LUA_CDIR = "$(LIBDIR)",
  },
}
