#!/bin/bash
cd "$(dirname "$0")"
UNTIL=22:27 RUN_S=150 ./loops.sh d7 1 > runs/loop_d7_r1_b.log 2>&1
UNTIL=22:27 RUN_S=150 ./loops.sh d7 0 > runs/loop_d7_r0.log 2>&1
UNTIL=22:27 RUN_S=150 ./loops.sh d7 1 > runs/loop_d7_r1_c.log 2>&1
UNTIL=22:28 ./veto_real.sh 0 > runs/veto_real_r0.log 2>&1
