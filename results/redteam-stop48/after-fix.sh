#!/bin/bash
# stop 48, after the fix (agent/loop.py: ANCHORED_FIGURES, PAIR_BEYOND_BASELINE_MAX): the adversary's
# families again, through `kernelgraph evaluate --parent` and through the loop (loop_demo.py, FIX unset).
cd "$(dirname "$0")/../.."
D=results/redteam-stop48
for pair in "k_lad_g1.c k_lad_g0.c" "k_lad_g2.c k_lad_g1.c" "k_gap_g1.c k_gap_g0.c" "k_gap_g2.c k_gap_g1.c" "k_hon_g1.c k_hon_g0.c"; do
  set -- $pair
  echo "=== $(date -u +%TZ) evaluate rmsnorm --source $D/$1 --parent $D/$2 --target cpu-x86-64-v2 --json"
  flock /tmp/machine.lock env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/kernelgraph evaluate rmsnorm \
    --source $D/$1 --parent $D/$2 --target cpu-x86-64-v2 --json 2>/dev/null | .venv/bin/python -c \
    'import json,sys; d=json.load(sys.stdin); print({k: d.get(k) for k in ("outcome","speedup","judged","evaluator_version","reason")})'
done
for fam in lad gap hon; do
  echo "=== $(date -u +%TZ) loop_demo.py k_${fam}_g0..g3"
  flock /tmp/machine.lock env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python $D/loop_demo.py \
    $D/k_${fam}_g0.c $D/k_${fam}_g1.c $D/k_${fam}_g2.c $D/k_${fam}_g3.c 2>&1 | grep -v Warning
done
