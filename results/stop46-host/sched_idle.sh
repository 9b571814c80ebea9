#!/bin/bash
# A plain Python loop pinned to CPU 0, alone and beside a spinner on CPU 0 (SCHED_IDLE, nice 19, nice 0).
spin() { taskset -c 0 python3 -c "import os,sys
if sys.argv[1] == 'idle': os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
else: os.nice(int(sys.argv[1]))
while True: pass" "$1" & SP=$!; sleep 0.5; }
work() { /usr/bin/time -f "%e s wall, %U s user ($1)" taskset -c 0 python3 -c "
s=0
for i in range(10**7): s+=i"; }
work alone
for p in idle 19 0; do spin $p; work "beside a spinner: $p"; kill $SP; wait $SP 2>/dev/null; done
uname -r; grep -o "sched_vcpu_pack=[0-9]*" /proc/cmdline
