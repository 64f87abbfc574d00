#!/usr/bin/env bash
# Installs what CacheWarden needs on a Debian machine that has the Swift toolchain:
# libinotifytools0-dev (linked by the C shim), and for tests and the benchmark inotify-tools, jq and python3.
# Runs `apt-get update` only when something is missing (a fresh machine has no package lists).
set -euo pipefail
need=()
for pkg in libinotifytools0-dev inotify-tools jq python3; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "installing: ${need[*]}" >&2
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >&2
fi
