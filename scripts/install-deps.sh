#!/usr/bin/env bash
# Installs the Debian packages apsearch builds and tests with.
set -euo pipefail
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
pkgs="build-essential cmake pkg-config liblua5.4-dev lua5.4 lua-cjson
  lua-busted lua-filesystem lua-penlight lua-zlib lua-sql-sqlite3 libcmocka-dev"
# the fuzz harnesses (scripts/fuzz.sh, docs/fuzzing.md): clang, and its
# libFuzzer and sanitizer runtimes, which clang only recommends
pkgs="$pkgs clang libclang-rt-dev"
# npm fetches Apache ECharts for the HTML report at configure time; a
# NodeSource nodejs ships its own npm and conflicts with Debian's.
command -v npm >/dev/null 2>&1 || pkgs="$pkgs npm"
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $pkgs >/dev/null
