#!/bin/bash
# one after the other, each waiting for the machine lock no later than its UNTIL
cd "$(dirname "$0")"
UNTIL=22:31 ./veto_real.sh 1 > runs/veto_real_r1.log 2>&1
UNTIL=22:31:30 RUN_S=180 ./loops.sh d7 1 > runs/loop_d7_r1.log 2>&1
