#!/bin/bash
# three loop runs, one at a time under the machine lock: desc family (2nd run), its control without the
# parent's extra slowdown (descnx), and the honest family (the true costs)
cd "$(dirname "$0")/../.."
D=results/redteam-stop48b
for fam in desc descnx hon; do
  echo "=== loop_$fam $(date -u +%TZ)"
  flock /tmp/machine.lock env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python $D/loop_demo.py \
    $D/k_${fam}_g0.c $D/k_${fam}_g1.c $D/k_${fam}_g2.c $D/k_${fam}_g3.c 2>&1 | grep -v Warning
done
