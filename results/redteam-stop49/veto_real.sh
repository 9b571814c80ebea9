#!/bin/bash
# the veto through the real loop (one run, under the lock, if it frees in time): gen0 (d7) then gen1 with the veto
cd "$(dirname "$0")/../.."
D=results/redteam-stop49
left=$(( $(date -d "${UNTIL:-22:31}" +%s) - $(date +%s) )); [ $left -gt 0 ] || { echo "no time left"; exit 1; }
echo "=== veto RETRIES=$1 queued $(date -u +%TZ)"
timeout $((left + 200)) flock -w $left /tmp/machine.lock bash -c "echo '=== lock taken '\$(date -u +%TZ); timeout 150 env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE RETRIES=$1 .venv/bin/python $D/loop_demo.py $D/k_d7_g0.c $D/k_veto_g1.c" 2>&1 | grep -v Warning
echo "=== end rc=${PIPESTATUS[0]} $(date -u +%TZ)"
