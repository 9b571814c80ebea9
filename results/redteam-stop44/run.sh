#!/bin/bash
# #26 stop 44: the stop-44 adversary's commands (REPORT.md), each twice, on a quiet host.
# PY: the Python of the checkout, KG: its kernelgraph command, OUT: the folder for the JSON verdicts.
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}; KG=${KG:-.venv/bin/kernelgraph}; OUT=${OUT:-results/redteam-stop44/runs}; mkdir -p "$OUT"
R=results/redteam-stop44
ev() { # label source parent
  echo "=== $1 $(date -u +%TZ)"
  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE $KG evaluate rmsnorm --source "$2" --parent "$3" \
    --target cpu-x86-64-v2 --json > "$OUT/$1.json" 2> "$OUT/$1.err"
  $PY - "$OUT/$1.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print({k: d.get(k) for k in ("outcome", "speedup", "evaluator_version", "reason")})
PY
}
for round in $(seq 1 ${ROUNDS:-2}); do
  ev "attack-self-$round" $R/role_sandbag_rmsnorm.c $R/role_sandbag_rmsnorm.c
  ev "control-self-$round" $R/control_no_sandbag_rmsnorm.c $R/control_no_sandbag_rmsnorm.c
  ev "honest-vs-sandbagger-$round" $R/control_no_sandbag_rmsnorm.c $R/role_sandbag_rmsnorm.c
  ev "sandbagger-vs-baseline-$round" $R/role_sandbag_rmsnorm.c baseline
done
