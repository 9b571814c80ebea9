"""What tests/agent/red_team/read_the_clock.c sees in the isolated protocol's child, clocks hidden (True)
and left to it (False): each channel (1 the time, 0 refused, 2 a fault) and the readings of the
monotonic clock found on its stack. Run: .venv/bin/python results/stop53/read_the_clock_probe.py"""
import sys, tempfile, pathlib
sys.path.insert(0, "/work/main")
import pytest
from tests.agent import test_red_team as t
from kernelgraph.agent.backends import isolated
from kernelgraph.agent.targets import get_target
backend = t._PastAdmissionC(cache_dir=pathlib.Path(tempfile.mkdtemp()), check_timeout_s=10.0, memory_bytes=768 << 20, timing=t.QUICK, counters=False)
target = get_target("cpu-x86-64-v2")
for clockless in (True, False):
    isolated.CLOCKLESS_KERNELS = clockless
    seen, readings = t._read_the_clock(backend, target)
    print(clockless, seen, len(readings), [hex(r) for r in readings[:5]])
