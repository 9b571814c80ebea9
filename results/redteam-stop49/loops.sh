#!/bin/bash
# loop runs, each under the machine lock: FAM (k_FAM_g0..g3) with RETRIES=R.  usage: loops.sh FAM R
# waits for the lock no later than 22:29 UTC (the time box), then gives up
cd "$(dirname "$0")/../.."
D=results/redteam-stop49
left=$(( $(date -d "${UNTIL:-22:29}" +%s) - $(date +%s) )); [ $left -gt 0 ] || { echo "no time left"; exit 1; }
echo "=== loop_$1 RETRIES=$2 queued $(date -u +%TZ)"
timeout $((left + 400)) flock -w $left /tmp/machine.lock bash -c "echo '=== lock taken '\$(date -u +%TZ); timeout ${RUN_S:-400} env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE RETRIES=$2 .venv/bin/python $D/loop_demo.py $D/k_$1_g0.c $D/k_$1_g1.c $D/k_$1_g2.c $D/k_$1_g3.c" 2>&1 | grep -v Warning
echo "=== end rc=${PIPESTATUS[0]} $(date -u +%TZ)"
