#!/bin/bash
# All stop-55 runs, in order, under the machine's lock (flock /tmp/machine.lock bash run1.sh)
cd /work/main
H=results/redteam-stop55/harness.py; O=results/redteam-stop55
date -u
.venv/bin/python $H $O/age.jsonl age 4
date -u
.venv/bin/python $H $O/age-ctrl-same.jsonl age 3 same=1
date -u
.venv/bin/python $H $O/age-fix-random.jsonl age 3 uids=random
date -u
.venv/bin/python $H $O/stale.jsonl stale 3 slow=11 stale=1.10 honest=12 burn=2
date -u
.venv/bin/python $H $O/stale-fix-random.jsonl stale 2 slow=11 stale=1.10 honest=12 burn=2 uids=random
date -u
.venv/bin/python $H $O/stale-ctrl-nosignal.jsonl stale 2 slow=11 stale=1.10 honest=255 burn=2
date -u
.venv/bin/python $H $O/stale-ctrl-quietfigure.jsonl stale 2 slow=11 stale=1.0 honest=12 burn=2
date -u
