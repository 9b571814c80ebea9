#!/usr/bin/env bash
# System tools KernelGraph needs: Java 17 + Maven (the local Neo4j), gcc (C kernels), valgrind (counters),
# bubblewrap (the sandbox every model-written kernel runs in; docs/sandbox.md).
# Installs the missing ones with apt-get when running as root; otherwise says what to install.
set -euo pipefail
missing=()
command -v java >/dev/null || missing+=(openjdk-17-jre-headless)
command -v mvn >/dev/null || missing+=(maven)
command -v gcc >/dev/null || missing+=(gcc)
command -v valgrind >/dev/null || missing+=(valgrind)
command -v bwrap >/dev/null || missing+=(bubblewrap)
command -v setpriv >/dev/null && command -v prlimit >/dev/null || missing+=(util-linux)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    echo "installing: ${missing[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
else
    echo "error: missing system packages: ${missing[*]} (fix: sudo apt-get install ${missing[*]})" >&2
    exit 1
fi
