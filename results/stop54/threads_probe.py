"""What test_a_kernel_cannot_count_the_threads_of_another's kernel counts (count_the_threads.c): the
threads it can start alone and beside another kernel's process holding 300, with a uid per step
(bubblewrap.STEP_UIDS, stop 54) and with one uid for all (before).
usage: .venv/bin/python results/stop54/threads_probe.py [ROUNDS]"""

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from kernelgraph.agent.backends import bubblewrap  # noqa: E402
from kernelgraph.agent.targets import get_target  # noqa: E402
from kernelgraph.agent.tasks import get_task  # noqa: E402
from tests.agent.test_red_team import QUICK, RED_TEAM, _calibrated_and_loaded, _PastAdmissionC  # noqa: E402

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
backend = _PastAdmissionC(cache_dir=Path(tempfile.mkdtemp(prefix="threads-")), check_timeout_s=10.0,
                          memory_bytes=768 << 20, timing=QUICK, counters=False)
task, target = get_task("rmsnorm"), get_target("cpu-x86-64-v2")
probe = (RED_TEAM / "count_the_threads.c").read_text()
counter = backend.compile(task, probe, target).artifact
holder = backend.compile(task, "#define KG_HOLD 300\n" + probe, target).artifact
assert counter and holder


def started(server, deadline) -> int:
    server.call(deadline)
    return int(server.outputs[0].reshape(-1)[0])


for own in (True, False):
    bubblewrap.STEP_UIDS = own
    for _ in range(rounds):
        with _calibrated_and_loaded(counter, small=True, threads=1) as (count, deadline, _):
            alone = started(count, deadline)
            with _calibrated_and_loaded(holder, small=True, threads=1) as (hold, hold_deadline, _):
                held = started(hold, hold_deadline)
                beside = started(count, deadline)
        print(f"{'a uid per step' if own else 'one uid for all':16s} alone {alone}  beside {held} held: {beside}",
              flush=True)
