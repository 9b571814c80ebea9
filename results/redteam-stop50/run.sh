#!/bin/bash
# Model runs (stub backend, nothing timed), queued under the machine lock. From /work/main.
cd /work/main
export PYTHONPATH=.
M=results/redteam-stop50/family_model.py
{
date -u
echo "== timing probe"; /usr/bin/time -f "%e s" env SIGMAS=0.015 EXTRAS=0.04 timeout 60 .venv/bin/python $M 5 6
echo "== identical copies, honest gen0, budget 12, 150 runs"; date -u
SIGMAS=0.015,0.03 EXTRAS=0,0.04,0.08,0.12 timeout 360 .venv/bin/python $M 150 12
echo "== descending family D=0.03 from 30%, budget 8, 150 runs"; date -u
MODE=descend D=0.03 SIGMAS=0.015 EXTRAS=0.04,0.07,0.10,0.13 timeout 240 .venv/bin/python $M 150 8
date -u
} 2>&1
