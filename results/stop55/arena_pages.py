"""Whether the in-process protocol's arena (`_child._staggered_arrays`, numpy's allocation) lies on
huge pages on this host: the arena for matvec's inputs and two kernels' outputs, written once as the
timing loop writes it, then /proc/self/smaps' AnonHugePages against its Rss.
Usage: .venv/bin/python results/stop55/arena_pages.py TASK"""
import sys

import numpy as np

from kernelgraph.agent.backends._child import _staggered_arrays
from kernelgraph.agent.tasks import get_task

task = get_task(sys.argv[1])
inputs = task.make_inputs(0, False)
specs = [(a.shape, a.dtype) for a in inputs.values()]
arrays = _staggered_arrays(specs * 2)
for a in arrays:
    a[...] = 1
start = min(a.__array_interface__["data"][0] for a in arrays)
lines = open("/proc/self/smaps").read().split("\n")
for i, line in enumerate(lines):
    head = line.split()[0] if line else ""
    if "-" in head and all(c in "0123456789abcdef-" for c in head):
        low, high = (int(x, 16) for x in head.split("-"))
        if low <= start < high:
            got = {l.split(":")[0]: l.split()[1] for l in lines[i + 1 : i + 25] if l.startswith(("Rss", "AnonHugePages"))}
            print(task.name, f"arena {sum(a.nbytes for a in arrays) >> 20} MiB", got, "kB")
print("thp:", open("/sys/kernel/mm/transparent_hugepage/enabled").read().strip(),
      "defrag:", open("/sys/kernel/mm/transparent_hugepage/defrag").read().strip())
