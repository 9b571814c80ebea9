"""Stop 67: is the isolated protocol's excess in serial cells (20-40 us a call at evaluator 24) the
kernel's own work running slower in the isolated child, or a hand-over the calibration misses?

The task's config is wrapped (probe only, past admission): `kernel` reads the time-stamp counter around
the real kernel and writes the ticks to its stderr each call. Both protocols evaluate the wrapped
kernel as the bench does (check + profile against itself, 30 trials, clocks left to the kernel in the
isolated child: CLOCKLESS_KERNELS off, so the counter is on there too); the ticks are read back from
each child's log. Per repeat (arms alternated): each protocol's reported median and the median of the
inner ticks of its timed calls.
Usage: python results/stop67/inner_clock_probe.py REPEATS task:config   (from the repo root, as root)"""

import contextlib
import re
import statistics
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, ".")
from kernelgraph.agent.backends import isolated  # noqa: E402
from kernelgraph.agent.backends import sandbox as sandbox_module  # noqa: E402
from kernelgraph.agent.backends.timing import IN_PROCESS, ISOLATED  # noqa: E402
from kernelgraph.agent.targets import get_target  # noqa: E402
from kernelgraph.bench.sandbox import BENCH_TIMING  # noqa: E402
from tests.agent.test_red_team import _PastAdmissionC  # noqa: E402

from results.stop67.inner_clock_probe_lib import wrapped_source  # noqa: E402

logs: list[bytes] = []
_close = isolated.KernelServer.close


def close_keeping_log(self):  # type: ignore[no-untyped-def]
    with contextlib.suppress(Exception):
        self._log.seek(0)
        logs.append(self._log.read())
    _close(self)


isolated.KernelServer.close = close_keeping_log
_scratch = sandbox_module.scratch_dir


@contextlib.contextmanager
def scratch_keeping_log(prefix):  # type: ignore[no-untyped-def]
    with _scratch(prefix) as tmp:
        try:
            yield tmp
        finally:
            with contextlib.suppress(OSError):
                logs.append((tmp / "child.log").read_bytes())


sandbox_module.scratch_dir = scratch_keeping_log
isolated.CLOCKLESS_KERNELS = False

repeats, cell = int(sys.argv[1]), sys.argv[2]
task, source = wrapped_source(cell)
target = get_target("cpu-x86-64-v2")
timing = replace(BENCH_TIMING, min_trials=30, max_trials=30)
with tempfile.TemporaryDirectory() as tmp:
    backends = {p: _PastAdmissionC(cache_dir=Path(tmp), counters=False, timing=replace(timing, protocol=p))
                for p in (ISOLATED, IN_PROCESS)}  # fmt: skip
    compiled = backends[ISOLATED].compile(task, source, target)
    assert compiled.ok, compiled.diagnostics
    summary: dict[str, list[tuple[float, float]]] = {ISOLATED: [], IN_PROCESS: []}
    for repeat in range(repeats):
        for protocol in (ISOLATED, IN_PROCESS) if repeat % 2 == 0 else (IN_PROCESS, ISOLATED):
            logs.clear()
            profile = backends[protocol].profile(task, source, target, parent_source=source)
            ticks = [[int(t) for t in re.findall(rb"KGT (\d+)", log)] for log in logs]
            ticks = [t for t in ticks if len(t) >= 30]
            # each child's calls: warm-up and timed; the timed ones are the last 30 + checks' calls
            inner = statistics.median([v for t in ticks for v in t[-30:]]) if ticks else float("nan")
            summary[protocol].append((profile.median_ns / 1e3, inner))
            print(f"repeat {repeat} {protocol:10s} reported {profile.median_ns / 1e3:8.1f} us, inner median "
                  f"{inner:10.0f} ticks ({[len(t) for t in ticks]} calls logged) {profile.outcome.value}", flush=True)
    for protocol, rows in summary.items():
        print(f"{protocol:10s} reported median {statistics.median(r[0] for r in rows):8.1f} us; inner "
              f"{statistics.median(r[1] for r in rows):10.0f} ticks")
    pairs = list(zip(summary[ISOLATED], summary[IN_PROCESS], strict=True))
    print("isolated / in-process, paired medians: reported "
          f"x{statistics.median(a[0] / b[0] for a, b in pairs):.3f}, inner x{statistics.median(a[1] / b[1] for a, b in pairs):.3f}")
