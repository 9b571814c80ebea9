#!/usr/bin/env bash
# Measures the study's two landscapes (A, B) one after the other: the development set (layernorm)
# first, so the study's pipeline can be checked on it while the evaluation tasks are measured.
set -euo pipefail
cd "$(dirname "$0")/.."
KG=${KG:-.venv/bin/kernelgraph}
DIR=${LANDSCAPE_DIR:-results/landscapes}
EVAL_TASKS=matmul,transpose,matvec,softmax,rmsnorm,stencil2d,elementwise_chain,reduction
for label in A B; do $KG bench landscape --tasks layernorm --label "$label" --dir "$DIR"; done
for label in A B; do $KG bench landscape --tasks "$EVAL_TASKS" --label "$label" --dir "$DIR"; done
