"""Stop 59: the calibration's samples (the serial stand-in's overhead, 8 per child) against an empty
kernel's calls (31), per fresh child placed on one CPU: medians and floors. One line per trial."""
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, ".")
from kernelgraph.agent.backends.isolated import KernelServer  # noqa: E402
from kernelgraph.agent.targets import get_target  # noqa: E402
from kernelgraph.agent.tasks import get_task  # noqa: E402
from tests.agent.test_red_team import QUICK, _calibrated_and_loaded, _PastAdmissionC  # noqa: E402

target = get_target("cpu-x86-64-v2")
backend = _PastAdmissionC(cache_dir=Path(tempfile.mkdtemp()), check_timeout_s=10.0,
                          memory_bytes=768 << 20, timing=QUICK, counters=False)
built = backend.compile(get_task("rmsnorm"), "void kernel(void) {}\n", target)
samples: list[int] = []
original = KernelServer.overhead_sample


def recorded(self, deadline, stand_in):
    ns = original(self, deadline, stand_in)
    if stand_in == b"n":
        samples.append(ns)
    return ns


KernelServer.overhead_sample = recorded
for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 5):
    samples.clear()
    with _calibrated_and_loaded(built.artifact, small=True, threads=1) as (server, deadline, cal):
        calls = sorted(server.call(deadline)[0] for _ in range(31))
    s = sorted(samples)
    print(f"median {cal.cpu_ns:>7} vs {calls[15]:>7} ({calls[15] / cal.cpu_ns:.2f})   "
          f"least {s[0]:>7} vs {calls[0]:>7} ({calls[0] / s[0]:.2f})   samples {s}", flush=True)
