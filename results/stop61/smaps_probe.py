"""Stop 61: which page size the isolated protocol's input and output mappings get, in the evaluator
and in each kernel's child (smaps, read after each call until every process was seen once).
Usage: python smaps_probe.py TASK CONFIG. Outputs: smaps_probe_evaluator19.out (files the layout's
length), smaps_probe_evaluator20.out (whole huge pages, mapped whole by the evaluator)."""
import re, sys, tempfile
from dataclasses import replace
from pathlib import Path
from kernelgraph.agent.backends import isolated
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import ISOLATED
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
from kernelgraph.bench.sandbox import BENCH_TIMING, _evaluate_once

real_call = isolated.KernelServer.call
seen = set()
def call(self, *a, **k):
    out = real_call(self, *a, **k)
    import os
    for pid in os.listdir('/proc'):
        if not pid.isdigit() or pid in seen: continue
        try: s = open(f'/proc/{pid}/smaps').read()
        except OSError: continue
        if 'shared.bin' not in s and 'inputs.bin' not in s: continue
        seen.add(pid)
        for blk in re.split(r'\n(?=[0-9a-f]+-[0-9a-f]+ )', s):
            if 'shared.bin' in blk or 'inputs.bin' in blk:
                head = blk.splitlines()[0]
                f = {k: v for k, v in re.findall(r'^(\w+):\s+(\d+ kB)', blk, re.M)}
                print(pid, head.split()[0], head.split()[-1][-12:], 'Rss', f.get('Rss'), 'ShmemPmdMapped', f.get('ShmemPmdMapped'), 'FilePmdMapped', f.get('FilePmdMapped'))
    return out
isolated.KernelServer.call = call
task = get_task(sys.argv[1]); src = task.source('c', checked_configs(task)[sys.argv[2]])
with tempfile.TemporaryDirectory() as tmp:
    b = CBackend(cache_dir=Path(tmp), counters=False, timing=replace(BENCH_TIMING, min_trials=5, max_trials=5, protocol=ISOLATED))
    print(_evaluate_once(task, get_target('cpu-x86-64-v2'), src, b)['median_ns'])
