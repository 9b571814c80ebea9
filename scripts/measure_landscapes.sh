#!/usr/bin/env bash
# Measures the study's two landscapes, A and B, task by task (A then B for each task, so that an
# interrupted run leaves whole pairs): the development set (layernorm) first, so the study's pipeline
# can be checked on it while the evaluation tasks are measured. Resumable: rerun to continue.
set -euo pipefail
cd "$(dirname "$0")/.."
KG=${KG:-.venv/bin/kernelgraph}
DIR=${LANDSCAPE_DIR:-results/landscapes}
for task in layernorm matmul softmax elementwise_chain transpose matvec reduction; do
  for label in A B; do $KG bench landscape --tasks "$task" --label "$label" --dir "$DIR"; done
done
