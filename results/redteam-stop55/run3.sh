#!/bin/bash
# More runs of attack 2 (counted uids) and its quiet-figure control (flock /tmp/machine.lock bash run3.sh)
cd /work/main
H=results/redteam-stop55/harness.py; O=results/redteam-stop55
date -u; git -C /work/main log --oneline -1
.venv/bin/python $H $O/counted-stale2.jsonl stale 3 uids=counted slow=11 stale=1.10 honest=10 burn=8
date -u
.venv/bin/python $H $O/counted-stale2-ctrl-quietfigure.jsonl stale 2 uids=counted slow=11 stale=1.0 honest=10 burn=8
date -u
