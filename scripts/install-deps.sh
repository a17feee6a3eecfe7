#!/usr/bin/env bash
# Installs the Debian packages apsearch builds and tests with.
set -euo pipefail
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
  build-essential cmake pkg-config liblua5.4-dev lua5.4 lua-cjson \
  lua-busted lua-filesystem lua-penlight libcmocka-dev >/dev/null
