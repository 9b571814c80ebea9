"""The tenth adversary's ladder against `loop._confirm` as it is now, on the loop's own code with a
stub backend (NOTHING IS TIMED: every profile is drawn; a model, after results/redteam-stop49/veto_demo.py).

A parent (gen0) kept over the baseline, and an IDENTICAL candidate (gen1): in their pair the parent runs
EXTRA slower (it tells its kin), and against the baseline the candidate runs SANDBAG slower (it tells
the baseline). The parent's figure was set by its own sandbagged comparison (SANDBAG0 slower). Every
comparison's medians carry a per-comparison noise N(1, sigma). Printed: how often the identical
candidate is kept, not judged, and the confirmations it took.

usage: rule3_model.py TRIALS"""
import random, sys
from types import SimpleNamespace

from kernelgraph.agent import loop as L
from kernelgraph.agent.proposers.base import Proposal
from kernelgraph.agent.results import CheckResult, CompileResult, Outcome, ProfileResult
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.core.signature import CounterSource

L.library_baseline = lambda *a, **k: None  # would time numpy: not here
BASE, TRUE = 13.0e6, 2.0e6
SRC0, SRC1 = "/* gen0 */", "/* gen1: gen0 again */"


def prof(med, other, rng, n=101, spread=0.01):
    ratios = tuple(sorted(other / med * (1 + rng.gauss(0, spread)) for _ in range(n)))
    return ProfileResult(median_ns=other / ratios[n // 2], iqr_ns=0.0, trials=n, counters={},
                         counter_source=CounterSource.CPU_TIMING, parent_median_ns=other, paired_ratios=ratios)


class Fake:
    name = "c"

    def __init__(self, rng, sigma, extra, sandbag, sandbag0):
        self.rng, self.sigma, self.extra, self.sandbag, self.sandbag0 = rng, sigma, extra, sandbag, sandbag0
        self.confirmations = 0

    def compile(self, task, source, target): return CompileResult(ok=True)
    def check(self, task, source, target): return CheckResult(Outcome.KEPT)
    def n(self): return 1 + self.rng.gauss(0, self.sigma)

    def profile(self, task, source, target, parent_source=None):
        r = self.rng
        if source == SRC0:  # gen0 against the baseline (its parent): its figure, sandbagged
            return prof(TRUE * (1 + self.sandbag0) * self.n(), BASE * self.n(), r)
        if parent_source == SRC0:  # gen1 against gen0: the parent slower by EXTRA
            return prof(TRUE * self.n(), TRUE * (1 + self.extra) * self.n(), r)
        self.confirmations += 1  # gen1 against the baseline
        return prof(TRUE * (1 + self.sandbag) * self.n(), BASE * self.n(), r)


class Scripted:
    name = "ladder"
    def __init__(self): self.s = [SRC0, SRC1]
    def propose(self, ctx): return Proposal(transform="llm", source=self.s.pop(0), rationale="") if self.s else None


class Client:
    def upsert_targets(self, t): return []
    def record_attempt(self, a): import uuid; return SimpleNamespace(parent_measurement_id=uuid.uuid4().hex, child_measurement_id=uuid.uuid4().hex)


if __name__ == "__main__":
    trials = int(sys.argv[1])
    for sigma in (0.015, 0.03):
        for extra, sandbag0 in ((0.13, 0.40), (0.04, 0.0)):
            for sandbag in (0.0, 0.03, 0.05, 0.07, 0.10):
                kept = nj = confirmations = 0
                stored = []
                for seed in range(trials):
                    fake = Fake(random.Random(seed), sigma, extra, sandbag, sandbag0)
                    res = L.optimize(get_task("rmsnorm", "c"), fake, get_target("cpu-x86-64-v2"), Scripted(), Client(),
                                     budget=2, final_check=False)
                    step = res.steps[1]
                    kept += step.outcome == Outcome.KEPT
                    nj += not step.judged
                    confirmations += fake.confirmations
                    if step.outcome == Outcome.KEPT:
                        stored.append(step.speedup)
                print(f"sigma {sigma:.3f} parent +{extra:.0%} in the pair (figure sandbagged {sandbag0:.0%}), candidate +{sandbag:.0%} "
                      f"against the baseline: kept {kept}/{trials}, not judged {nj}/{trials}, confirmations {confirmations / trials:.2f} a step; "
                      f"kept ratios median {sorted(stored)[len(stored) // 2] if stored else float('nan'):.3f}", flush=True)
