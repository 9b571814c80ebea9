"""Stop 65: is the isolated child's uncalibrated excess (an empty kernel's call costs ~36 us after
load against a calibrated overhead of ~20 us, empty_call_probe.out) the time-stamp counter turned off
after the calibration (prctl PR_SET_TSC: every switch into or out of the child then writes CR4, which
a KVM guest may pay as a VM exit)? Fresh children alternate: clocks hidden as shipped, and not hidden
(CLOCKLESS_KERNELS off: no TSC switch-off, no clock filter). Prints one line per child.
Usage: python results/stop65/tsc_probe.py CHILDREN   (from the repository root, as root)"""
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, ".")
from kernelgraph.agent.backends import isolated  # noqa: E402
from kernelgraph.agent.targets import get_target  # noqa: E402
from kernelgraph.agent.tasks import get_task  # noqa: E402
from tests.agent.test_red_team import QUICK, _calibrated_and_loaded, _PastAdmissionC  # noqa: E402

children = int(sys.argv[1])
target = get_target("cpu-x86-64-v2")
backend = _PastAdmissionC(cache_dir=Path(tempfile.mkdtemp()), check_timeout_s=10.0,
                          memory_bytes=768 << 20, timing=QUICK, counters=False)
built = backend.compile(get_task("rmsnorm"), "void kernel(void) {}\n", target)
assert built.ok, built.diagnosis
for child in range(children):
    for hidden in ((True, False) if child % 2 == 0 else (False, True)):
        isolated.CLOCKLESS_KERNELS = hidden
        with _calibrated_and_loaded(built.artifact, small=True, threads=1) as (server, deadline, cal):
            calls = sorted(server.call(deadline)[0] for _ in range(31))
        print(f"clocks hidden {hidden!s:5} overhead {cal.cpu_ns:>8} empty median {calls[15]:>8} least {calls[0]:>8} "
              f"excess {calls[15] - cal.cpu_ns:>7}", flush=True)
