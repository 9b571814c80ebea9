#!/bin/bash
# The attack against the counted step uids (ef29566, before 27ee4b8), and its controls (flock /tmp/machine.lock bash run2.sh)
cd /work/main
H=results/redteam-stop55/harness.py; O=results/redteam-stop55
date -u; git -C /work/main log --oneline -1
.venv/bin/python $H $O/counted-age.jsonl age 4 uids=counted
date -u
.venv/bin/python $H $O/counted-age-ctrl-same.jsonl age 3 uids=counted same=1
date -u
.venv/bin/python $H $O/counted-stale.jsonl stale 3 uids=counted slow=11 stale=1.10 honest=12 burn=2
date -u
.venv/bin/python $H $O/counted-stale-ctrl-nosignal.jsonl stale 2 uids=counted slow=11 stale=1.10 honest=255 burn=2
date -u
.venv/bin/python $H $O/counted-stale-ctrl-quietfigure.jsonl stale 2 uids=counted slow=11 stale=1.0 honest=12 burn=2
date -u
.venv/bin/python $H $O/counted-stale2.jsonl stale 3 uids=counted slow=11 stale=1.10 honest=10 burn=8
date -u
.venv/bin/python $H $O/counted-stale2-ctrl-nosignal.jsonl stale 2 uids=counted slow=11 stale=1.10 honest=255 burn=8
date -u
.venv/bin/python $H $O/stale2-tree.jsonl stale 2 slow=11 stale=1.10 honest=10 burn=8
date -u
