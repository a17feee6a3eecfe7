-- luarocks rockspec (issue 16 item 5): from the repository root,
-- `luarocks make apsearch-dev-1.rockspec`.  scripts/check-rockspec.sh (run
-- by CI) builds it into a fresh tree with luarocks 3.8 and runs a search
-- through a stock lua5.4 and through the rock's CLI.
--
-- The cmake backend builds with the project's CMakeLists.txt: the C
-- modules (apsearch.core, apsearch.sandbox) go to the rock tree's LIBDIR,
-- the Lua modules to its LUADIR (APS_LUA_CDIR / APS_LUA_LDIR), and the
-- CLI, rules and examples under the rock's own prefix
-- (<rock dir>/share/apsearch).  Needs cmake, a C11 compiler, pkg-config
-- with lua5.4's .pc, npm is optional (the report's ECharts), and the Lua
-- libraries below.  apsearch.util.root() finds the rules and examples in
-- the rock's <rock dir>/share/apsearch (APS_ROOT overrides).  The
-- embedding library (libapsearch, headers, pkg-config) is not part of the
-- rock (APS_INSTALL_LIBRARY=OFF): `cmake --install` provides it.
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
    APS_INSTALL_LIBRARY = "OFF",
    APS_LUA_LDIR = "$(LUADIR)",
    APS_LUA_CDIR = "$(LIBDIR)",
  },
}
