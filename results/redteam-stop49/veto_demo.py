"""The confirmation veto, on the loop's own logic with a stub backend (NOTHING IS TIMED: every profile is
a scripted or drawn ProfileResult; the library yardstick is stubbed out).

A candidate that ends its comparison with the baseline CRASHED (or INCORRECT) turns `_confirm`'s judged
"not confirmed" into "not judged" (agent/loop.py `_confirm`: `profile.outcome != KEPT ... judged=False`),
and since evaluator 15 `_attempt` then evaluates the whole step again (UNJUDGED_RETRIES = 1). A kernel can
tell the baseline from its kin (the map counts, or the 13 ms calls in the gaps between its own: stop 48)
and can estimate from the same gaps how its own figure over the baseline is going; here it is granted a
perfect estimate (an upper bound on what the veto buys).

Model (rmsnorm-like): baseline 13.0 ms; the parent (gen0) kept at 2.00 ms, figure 6.50x (its fastest).
The candidate is IDENTICAL code (true 2.00 ms). In the pair the parent colludes +4% (under the 5% rule,
under the 15% mark). Each comparison's medians carry a per-comparison noise, N(1, SIGMA). The candidate
vetoes (crashes) its baseline comparison whenever it would not be confirmed.

usage: veto_demo.py TRIALS SIGMA      (prints kept rates: veto x retries)"""
import math, random, sys
from types import SimpleNamespace

from kernelgraph.agent import loop as L
from kernelgraph.agent.proposers.base import Proposal
from kernelgraph.agent.results import CheckResult, CompileResult, Outcome, ProfileResult
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.core.signature import CounterSource

L.library_baseline = lambda *a, **k: None  # would time numpy: not here
import os
BASE, PARENT = 13.0e6, 2.0e6
EXTRA = float(os.environ.get("EXTRA", "0.04"))  # the parent's extra slowdown in the pair
GAIN = float(os.environ.get("GAIN", "1.0"))     # the candidate's true gain over the parent (1.0: identical code)
SRC0, SRC1 = "/* gen0 */", "/* gen1: gen0 again */"


def prof(med, other=None, outcome=Outcome.KEPT, reason="", n=101, spread=0.03, rng=None):
    ratios = ()
    if other is not None and outcome == Outcome.KEPT:
        c = other / med
        ratios = tuple(sorted(c * (1 + rng.gauss(0, spread)) for _ in range(n)))
        c_med = ratios[n // 2]
        med = other / c_med  # medians consistent with the pairs
    return ProfileResult(median_ns=med, iqr_ns=0.0, trials=n, counters={}, counter_source=CounterSource.CPU_TIMING,
                         parent_median_ns=other, outcome=outcome, reason=reason, paired_ratios=ratios)


class Fake:
    name = "c"
    def __init__(self, rng, sigma, veto):
        self.rng, self.sigma, self.veto, self.log = rng, sigma, veto, []
        self.bar = None
    def compile(self, task, source, target): return CompileResult(ok=True)
    def check(self, task, source, target): return CheckResult(Outcome.KEPT)
    def n(self): return 1 + self.rng.gauss(0, self.sigma)
    def profile(self, task, source, target, parent_source=None):
        r = self.rng
        if parent_source is None:  # the baseline alone
            return prof(BASE)
        if source == SRC0:  # gen0 vs baseline: kept at 6.50x (no noise: it sets the parent's figure)
            return prof(PARENT, BASE, rng=r, spread=0.0)
        if parent_source == SRC0:  # gen1 vs gen0: gen0 +EXTRA in the pair
            if "PAIR_SIGMA" in os.environ:  # the pair's own noise only (both kernels share the host's state)
                p = prof(PARENT / GAIN, PARENT * (1 + EXTRA) * (1 + r.gauss(0, float(os.environ["PAIR_SIGMA"]))), rng=r)
            else:
                p = prof(PARENT / GAIN * self.n(), PARENT * (1 + EXTRA) * self.n(), rng=r)
            self.log.append(f"pair {p.parent_median_ns / p.median_ns:.3f}")
            return p
        # gen1 vs the baseline (its confirmation)
        over = (BASE * self.n()) / (PARENT / GAIN * self.n())
        bar = max(6.5, BASE / (PARENT * (1 + EXTRA))) * 1.02
        if self.veto and over < bar * 1.005:  # would not be confirmed: end the comparison crashed
            self.log.append(f"confirm {over:.3f} < {bar:.3f}: VETO (crash)")
            return prof(PARENT, outcome=Outcome.CRASHED, reason="kernel process killed by SIGSEGV")
        self.log.append(f"confirm {over:.3f} (bar {bar:.3f})")
        return prof(BASE / over, BASE, rng=r)


class Scripted:
    name = "veto"
    def __init__(self): self.s = [SRC0, SRC1]
    def propose(self, ctx): return Proposal(transform="llm", source=self.s.pop(0), rationale="") if self.s else None


class Client:
    def upsert_targets(self, t): return []
    def record_attempt(self, a): import uuid; return SimpleNamespace(parent_measurement_id=uuid.uuid4().hex, child_measurement_id=uuid.uuid4().hex)


def once(seed, sigma, veto, retries):
    L.UNJUDGED_RETRIES = retries
    fake = Fake(random.Random(seed), sigma, veto)
    res = L.optimize(get_task("rmsnorm", "c"), fake, get_target("cpu-x86-64-v2"), Scripted(), Client(), budget=2,
                     final_check=False)
    return res.steps[1], fake.log


if __name__ == "__main__":
    trials, sigma = int(sys.argv[1]), float(sys.argv[2])
    step, log = once(1, sigma, True, 1)
    print("one run, veto on, retries 1:", log, "->", step.outcome.value, step.judged, step.diagnosis[:160])
    for veto in (False, True):
        for retries in (0, 1):
            kept = nj = 0
            stored = []
            for seed in range(trials):
                s, _ = once(seed, sigma, veto, retries)
                kept += s.outcome == Outcome.KEPT
                if s.outcome == Outcome.KEPT: stored.append(s.speedup / GAIN)
                nj += not s.judged
            print(f"GAIN {GAIN} EXTRA {EXTRA} sigma {sigma:.3f} veto {veto!s:5} UNJUDGED_RETRIES {retries}: candidate (true gain {GAIN}) kept {kept}/{trials}"
                  f" ({kept / trials:.1%}), not judged {nj}/{trials}; kept steps' stored ratio over the true gain: "
                  f"median {sorted(stored)[len(stored) // 2] if stored else float('nan'):.3f}, max {max(stored, default=float('nan')):.3f}")
