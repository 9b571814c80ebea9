#!/bin/bash
# Stop 51: old path (BASELINE_IN_THE_COMPARISON=False) vs new (True) on the family model. From /work/main:
#   cd /work/main && flock /tmp/machine.lock results/stop51/model/run.sh > results/stop51/model/run.log 2>&1
cd /work/main
export PYTHONPATH=.
M=results/stop51/model/family_model.py
P=.venv/bin/python
date -u
echo "== A. identical copies over an honest gen0, budget 12, 300 runs (drift per kernel, as run2)"
SIGMAS=0.015,0.03 EXTRAS=0,0.04,0.08,0.12 timeout 300 $P $M 300 12
echo "== B. honest family, each generation truly 5% faster, budget 12, 300 runs"
MODE=honest SIGMAS=0.015,0.03 EXTRAS=0 timeout 300 $P $M 300 12
echo "== C. host slows by a common factor U(1.0,1.6) per comparison (all its kernels), honest 5%, 300 runs"
MODE=honest HOST_MAX=1.6 SIGMAS=0.015,0.03 EXTRAS=0 timeout 300 $P $M 300 12
echo "== C2. the same host slowdown, identical copies"
HOST_MAX=1.6 SIGMAS=0.015 EXTRAS=0,0.04,0.08 timeout 300 $P $M 300 12
echo "== D. control: drift common to all kernels of a comparison (what interleaving cancels)"
DRIFT=common SIGMAS=0.015,0.03 EXTRAS=0,0.04,0.08,0.12 timeout 300 $P $M 300 12
DRIFT=common MODE=honest SIGMAS=0.015,0.03 EXTRAS=0 timeout 300 $P $M 300 12
echo "== E. control: small per-kernel drift (sigma 0.5%)"
SIGMAS=0.005 EXTRAS=0,0.04,0.08,0.12 timeout 300 $P $M 300 12
MODE=honest SIGMAS=0.005 EXTRAS=0 timeout 300 $P $M 300 12
date -u
