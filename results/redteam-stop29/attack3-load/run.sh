#!/bin/bash
# #26, the stop-29 adversary's attack 3: an honest serial layernorm against the same code under
# `omp parallel for`, `kernelgraph evaluate` at the committed evaluator, quiet and with one and two CPU
# hogs (busy Python loops) beside it on this 2-core machine, each condition twice. KG: the command.
cd "$(dirname "$0")"
KG=${KG:-kernelgraph}
ev() { # label hogs
  local hogs=()
  for _ in $(seq 1 "$2"); do python3 -c "while True: pass" & hogs+=($!); done
  sleep 3
  echo "=== $1 hogs=$2 $(date -u +%TZ) load $(cut -d' ' -f1 /proc/loadavg)"
  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE $KG evaluate layernorm --source ../serial_vs_parallel_layernorm.c \
    --parent ../serial_vs_parallel_layernorm_parent.c --target cpu-x86-64-v2 --json > "$1.json" 2> "$1.err"
  if [ ${#hogs[@]} -gt 0 ]; then kill "${hogs[@]}"; wait "${hogs[@]}" 2>/dev/null; fi
  python3 - "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1] + ".json"))
print({k: d.get(k) for k in ("outcome", "speedup", "median_ns", "parent_median_ns", "evaluator_version", "reason")})
PY
}
for round in 1 2; do
  for hogs in 0 1 2; do ev "hogs$hogs-$round" $hogs; done
done
