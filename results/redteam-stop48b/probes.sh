#!/bin/bash
# the dirty-cache probe against the trusted baseline, with its control, twice each
cd "$(dirname "$0")"
for i in 1 2; do
  ./run.sh d${i}_dirty24_vs_baseline results/redteam-stop48b/k_dirty24.c baseline
  ./run.sh d${i}_dirty0_vs_baseline results/redteam-stop48b/k_dirty0.c baseline
done
