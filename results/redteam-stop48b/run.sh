#!/bin/bash
# stop 48 red team: `kernelgraph evaluate` on rmsnorm, target cpu-x86-64-v2, one run at a time.
# usage: run.sh LABEL SOURCE PARENT   (writes runs/LABEL.json and runs/LABEL.err, prints the verdict)
cd "$(dirname "$0")/../.."
OUT=results/redteam-stop48b/runs; mkdir -p "$OUT"
echo "=== $1 $(date -u +%TZ): evaluate ${TASK:-rmsnorm} --source $2 --parent $3 (task ${TASK:-rmsnorm}) --target cpu-x86-64-v2"
flock /tmp/machine.lock env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python results/redteam-stop48b/logged_cli.py evaluate ${TASK:-rmsnorm} \
  --source "$2" --parent "$3" --target cpu-x86-64-v2 --json > "$OUT/$1.json" 2> "$OUT/$1.err"
.venv/bin/python - "$OUT/$1.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
keys = ("outcome", "speedup", "judged", "evaluator_version", "reason")
print({k: d.get(k) for k in keys})
c = d.get("counters") or {}
print({k: d.get(k) for k in ("median_ns", "parent_median_ns", "counter_source", "target")}, "gflops", round(c.get("gflops", 0), 1))
PY
grep PROFILE "$OUT/$1.err"
