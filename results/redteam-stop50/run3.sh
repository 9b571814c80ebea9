#!/bin/bash
# Control: little drift between comparisons (sigma 0.3%). From /work/main.
cd /work/main
export PYTHONPATH=.
M=results/redteam-stop50/family_model.py
date -u
SIGMAS=0.003 EXTRAS=0,0.04,0.08,0.12 timeout 120 .venv/bin/python $M 300 12
MODE=descend D=0.03 SIGMAS=0.003 EXTRAS=0,0.07,0.13 timeout 120 .venv/bin/python $M 300 8
date -u
