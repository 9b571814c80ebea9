"""Stop 66: do a parallel kernel's idle OpenMP workers cost each isolated call more than the
calibration (whose parallel stand-in starts fresh threads that end within it) takes off? The freeze
after the answer wakes every sleeping worker to join the group stop (SIGSTOP), and SIGCONT wakes it again to
restart its wait: CPU time after the answer is charged in full. An empty kernel with an empty
parallel region on every CPU, and a serial empty kernel, each in fresh children: the calls' charged
median against the calibrated overheads, and the CPU time the tree ran from the answer to the stop.
Usage: python results/stop66/omp_empty_probe.py CHILDREN   (from the repository root, as root)"""
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, ".")
from kernelgraph.agent.backends import isolated  # noqa: E402
from kernelgraph.agent.targets import get_target  # noqa: E402
from kernelgraph.agent.tasks import get_task  # noqa: E402
from tests.agent.test_red_team import QUICK, _calibrated_and_loaded, _PastAdmissionC  # noqa: E402

# A region the compiler cannot drop: each thread writes its own slot.
REGION = ("#include <omp.h>\nstatic volatile int slot[64];\n"
          "static void touch(void) {\n#pragma omp parallel\n slot[omp_get_thread_num()]++;\n}\n")
KERNELS = {
    "serial empty": ("void kernel(void) {}\n", 1),
    "omp idle worker": (REGION + "static int calls;\nvoid kernel(void) { if (!calls++) touch(); }\n", 2),
    "omp empty region": (REGION + "void kernel(void) { touch(); }\n", 2),
    "omp region, serial work": (REGION + "static volatile float s;\nvoid kernel(void) {\n touch();\n"
                                " for (int i = 0; i < 200000; i++) s = s * 0.5f + 1.0f;\n}\n", 2),
}
# The tree's CPU readings of each call (before, at the answer, at the stop), to split its time.
readings: list[int] = []
_process_cpu = isolated.KernelServer.process_cpu


def recorded_process_cpu(self: isolated.KernelServer, pids: list[int]) -> int:
    value = _process_cpu(self, pids)
    if self.proc.pid not in pids:
        readings.append(value)
    return value


isolated.KernelServer.process_cpu = recorded_process_cpu  # type: ignore[method-assign]
children = int(sys.argv[1])
target = get_target("cpu-x86-64-v2")
backend = _PastAdmissionC(cache_dir=Path(tempfile.mkdtemp()), check_timeout_s=10.0,
                          memory_bytes=768 << 20, timing=QUICK, counters=False)
for name, (source, threads) in KERNELS.items():
    if len(sys.argv) > 2 and name not in sys.argv[2:]:
        continue
    built = backend.compile(get_task("rmsnorm"), source, target)
    assert built.ok, built.diagnosis
    for child in range(children):
        with _calibrated_and_loaded(built.artifact, small=True, threads=threads) as (server, deadline, cal):
            server.call(deadline)  # the first: OpenMP starts its workers
            rows = []
            for _ in range(31):
                readings.clear()
                charged, wall = server.call(deadline)
                before, at_answer, stopped = readings
                rows.append((charged, wall, server.call_cpu_ns, server.wall_bound, server.threads(),
                             stopped - at_answer, cal.off(charged, server.wall_bound, server.call_threads)))
        med = lambda i: statistics.median(r[i] for r in rows)
        print(f"{name:24} threads {rows[0][4]} overhead cpu {cal.cpu_ns:>7} wall {cal.wall_ns:>7} | charged {med(0):>8.0f} "
              f"wall {med(1):>8.0f} tree cpu {med(2):>8.0f} after the answer {med(5):>7.0f} wall-bound {sum(r[3] for r in rows):>2}/31 | "
              f"idle thread cpu {cal.idle_thread_cpu_ns:>6} wall {cal.idle_thread_wall_ns:>6} charged less it {med(6):>7.0f}", flush=True)
