"""Stop 66: CI failed on test_work_in_threads_that_end_within_a_call_is_not_hidden_from_the_clock
(stored pair 1.105x, paired median 0.954x). Repeats that evaluation (thread_per_call.c against
correct.c, rmsnorm, the red-team timer) and prints each verdict's stored pair, the paired ratios'
median, and the two kernels' charged and wall medians, to see whether the 1.105 is noise or a bias."""

import dataclasses
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, ".")
from kernelgraph.agent.backends.timing import ISOLATED  # noqa: E402
from kernelgraph.agent.loop import evaluate  # noqa: E402
from kernelgraph.agent.tasks import get_task  # noqa: E402
from kernelgraph.agent.targets import get_target  # noqa: E402
from tests.agent.test_red_team import ATTACK_TIMING, CHEATS, RED_TEAM, _no_peaks, _PastAdmissionC  # noqa: E402

runs = int(sys.argv[1]) if len(sys.argv) > 1 else 6
backend = _PastAdmissionC(cache_dir=Path(tempfile.mkdtemp()), check_timeout_s=10.0, memory_bytes=768 << 20,
                          counters=False, timing=dataclasses.replace(ATTACK_TIMING, protocol=ISOLATED))
target = _no_peaks(get_target("cpu-x86-64-v2"))
attack = (RED_TEAM / "thread_per_call.c").read_text()
honest = (CHEATS / "correct.c").read_text()
for i in range(runs):
    v = evaluate(get_task("rmsnorm"), backend, target, attack, honest)
    p = v.profile
    if p is None:
        print(i, v.outcome, v.reason[:200]); continue
    pr = sorted(p.paired_ratios)
    print(f"{i}: {v.outcome.value} stored {v.speedup:.3f} cand {p.median_ns/1e3:.0f} us parent {p.parent_median_ns/1e3:.0f} us "
          f"iqr {p.iqr_ns/1e3:.0f} pairs n={len(pr)} median {statistics.median(pr):.3f} min {pr[0]:.3f} max {pr[-1]:.3f}", flush=True)
    print("   ", v.reason[:300], flush=True)
