"""Stop 59: what an empty kernel's isolated call costs against the calibrated overhead, repeated
(the CI failure of stop 58: overhead 13,937 ns, empty 29,371). Prints one line per trial."""
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, ".")
from kernelgraph.agent.targets import get_target  # noqa: E402
from kernelgraph.agent.tasks import get_task  # noqa: E402
from tests.agent.test_red_team import QUICK, _calibrated_and_loaded, _PastAdmissionC  # noqa: E402

trials = int(sys.argv[1]) if len(sys.argv) > 1 else 5
source = sys.argv[2] if len(sys.argv) > 2 else "void kernel(void) {}\n"
target = get_target("cpu-x86-64-v2")
backend = _PastAdmissionC(cache_dir=Path(tempfile.mkdtemp()), check_timeout_s=10.0,
                          memory_bytes=768 << 20, timing=QUICK, counters=False)
built = backend.compile(get_task("rmsnorm"), source, target)
assert built.ok, built.diagnosis
for _ in range(trials):
    with _calibrated_and_loaded(built.artifact, small=True, threads=1) as (server, deadline, cal):
        calls = sorted(server.call(deadline)[0] for _ in range(31))
    print(f"overhead {cal.cpu_ns:>8} empty median {calls[15]:>8} least {calls[0]:>8} ratio {calls[15]/cal.cpu_ns:.2f}", flush=True)
