#!/bin/bash
# #26, the stop-29 adversary's attack 3 (an honest serial layernorm against its parallel parent) at
# evaluator 8, its rule on (the defence) and off (the control): quiet; beside one and two CPU hogs
# (busy Python loops) on this 2-core machine; and beside intermittent load (one process busy 10 ms of
# every 20, or 2 ms of every 10), which the samples around each call see only part of the time.
# PY: the Python of the checkout.
cd "$(dirname "$0")"
PY=${PY:-python}
HOG='import sys, time
on, off = float(sys.argv[1]), float(sys.argv[2])
while True:
    t = time.perf_counter()
    while time.perf_counter() - t < on: pass
    if off: time.sleep(off)'
ev() { # label hogs on_s off_s rule
  local hogs=()
  for _ in $(seq 1 "$2"); do python3 -c "$HOG" "$3" "$4" & hogs+=($!); done
  sleep 3
  echo "=== $1 hogs=$2 busy=$3s idle=$4s rule=$5 $(date -u +%TZ) load $(cut -d' ' -f1 /proc/loadavg)"
  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE $PY evaluate_with.py "$5" layernorm \
    --source ../serial_vs_parallel_layernorm.c --parent ../serial_vs_parallel_layernorm_parent.c \
    --target cpu-x86-64-v2 --json > "$1.json" 2> "$1.err"
  if [ ${#hogs[@]} -gt 0 ]; then kill "${hogs[@]}"; wait "${hogs[@]}" 2>/dev/null; fi
  $PY - "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1] + ".json"))
print({k: d.get(k) for k in ("outcome", "speedup", "median_ns", "parent_median_ns", "evaluator_version", "reason")})
PY
}
for round in 1 2; do
  for rule in on off; do
    ev "quiet-$rule-$round" 0 1 0 $rule
    ev "hogs1-$rule-$round" 1 1 0 $rule
    ev "hogs2-$rule-$round" 2 1 0 $rule
    ev "half-$rule-$round" 1 0.01 0.01 $rule
    ev "fifth-$rule-$round" 1 0.002 0.008 $rule
  done
done
