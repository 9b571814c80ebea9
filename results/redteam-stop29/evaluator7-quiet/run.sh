#!/bin/bash
# #26 attack 2 (predict_sleep_reduction.c) at evaluator 7, quiet: against the task's baseline, against itself, and reversed.
cd "$(dirname "$0")"
KG=kernelgraph
ev() { # label source parent
  echo "=== $1 $(date -u +%TZ) load $(cut -d' ' -f1 /proc/loadavg)"
  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE $KG evaluate reduction --source $2 --parent $3 --target cpu-x86-64-v2 --json > $1.json 2> $1.err
  python - $1 <<'PY'
import json,sys
d=json.load(open(sys.argv[1]+".json"))
def walk(o,p=""):
    if isinstance(o,dict):
        for k,v in o.items(): walk(v,p+"."+k)
    elif not isinstance(o,list) and any(s in p for s in ("outcome","speedup","ratio","median","reason","verdict")): print(p,o)
walk(d)
PY
}
ev cand-vs-base-1 ../predict_sleep_reduction.c baseline
ev cand-vs-self ../predict_sleep_reduction.c ../predict_sleep_reduction.c
ev base-vs-cand baseline.c ../predict_sleep_reduction.c
ev base-vs-base baseline.c baseline
ev cand-vs-base-2 ../predict_sleep_reduction.c baseline
