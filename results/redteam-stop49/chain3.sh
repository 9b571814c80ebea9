#!/bin/bash
cd "$(dirname "$0")"
UNTIL=22:23 RUN_S=120 ./loops.sh d7 1 > runs/loop_d7_r1_d.log 2>&1
UNTIL=22:24 RUN_S=120 ./loops.sh d7 1 > runs/loop_d7_r1_e.log 2>&1
