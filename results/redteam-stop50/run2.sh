#!/bin/bash
# Second pass: the stored ratio over the true gain (what trusted code would show). From /work/main.
cd /work/main
export PYTHONPATH=.
M=results/redteam-stop50/family_model.py
{
date -u
echo "== identical copies, honest gen0, budget 12, 300 runs"
SIGMAS=0.015,0.03 EXTRAS=0,0.04,0.08,0.12 timeout 300 .venv/bin/python $M 300 12
echo "== descending family D=0.03 from 30%, budget 8, 300 runs"; date -u
MODE=descend D=0.03 SIGMAS=0.015,0.03 EXTRAS=0,0.04,0.07,0.10,0.13 timeout 300 .venv/bin/python $M 300 8
date -u
} 2>&1
