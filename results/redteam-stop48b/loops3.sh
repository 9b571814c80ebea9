#!/bin/bash
# the descent family with a 2% parent extra (under the 5% tolerance with room for noise), twice
cd "$(dirname "$0")/../.."
D=results/redteam-stop48b
for run in 1 2; do
  echo "=== loop_desc2 run $run $(date -u +%TZ)"
  flock /tmp/machine.lock env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python $D/loop_demo.py \
    $D/k_desc2_g0.c $D/k_desc2_g1.c $D/k_desc2_g2.c $D/k_desc2_g3.c 2>&1 | grep -v Warning
done
