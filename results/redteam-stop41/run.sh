#!/bin/bash
# #26 stop 41: the stop-41 adversary's attacks 1 (per-pair veto) and 2 (32 threads read as serial),
# beside one CPU hog on this 2-core machine, and quiet. OUT: the folder for the JSON verdicts;
# PY: the Python of the checkout, KG: its kernelgraph command. Each verdict's line goes to stdout.
cd "$(dirname "$0")"
PY=${PY:-python}; KG=${KG:-kernelgraph}; OUT=${OUT:-runs}; mkdir -p "$OUT"
ev() { # label hogs task source parent
  local hogs=()
  for _ in $(seq 1 "$2"); do python3 -c "while True: pass" & hogs+=($!); done
  sleep 2
  echo "=== $1 hogs=$2 $(date -u +%TZ)"
  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE $KG evaluate "$3" --source "$4" --parent "$5" \
    --target cpu-x86-64-v2 --json > "$OUT/$1.json" 2> "$OUT/$1.err"
  if [ ${#hogs[@]} -gt 0 ]; then kill "${hogs[@]}"; wait "${hogs[@]}" 2>/dev/null; fi
  $PY - "$OUT/$1.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print({k: d.get(k) for k in ("outcome", "speedup", "evaluator_version", "reason")})
PY
}
for round in 1 2; do
  ev "veto-matvec-hog-$round" 1 matvec veto_slow_calls_matvec.c veto_slow_calls_matvec_parent.c
  ev "veto-matvec-quiet-$round" 0 matvec veto_slow_calls_matvec.c veto_slow_calls_matvec_parent.c
  ev "veto-layernorm-hog-$round" 1 layernorm veto_slow_calls_layernorm.c veto_slow_calls_layernorm_parent.c
  ev "dodge-parent-hog-$round" 1 layernorm ../redteam-stop29/serial_vs_parallel_layernorm.c dodge_busy_share_layernorm.c
  ev "dodge-parent-quiet-$round" 0 layernorm ../redteam-stop29/serial_vs_parallel_layernorm.c dodge_busy_share_layernorm.c
done
