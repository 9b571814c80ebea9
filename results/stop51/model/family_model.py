"""Stop 51: the red-team family model of results/redteam-stop50 (copied and extended), run on the
loop's own code (agent.loop.optimize -> _attempt -> evaluate -> keep_decision / _parent_slowed /
_confirm / _decide_beside_baseline, the working tree as found) over a stub backend.
NOTHING IS TIMED: every profile is drawn. A model; its rates are the model's.

Both paths of the working tree:
  new: loop.BASELINE_IN_THE_COMPARISON = True  - the stub honours `reference_source` (the baseline timed
       as a third kernel of the same comparison: `reference_ratios`, `reference_median_ns`), so the
       loop decides in `_decide_beside_baseline`;
  old: loop.BASELINE_IN_THE_COMPARISON = False - the loop passes no reference_source, and confirms in a
       separate comparison (`_confirm`) with the parent mark (`_parent_slowed`).

Kernels. A source is "/* gen<i> lvl<L> */": true time TRUE * GAIN**L (GAIN = 0.95 for the honest family,
each proposal one level below its parent's; identical copies: always level 0, i.e. TRUE). gen0 is
proposed over the trusted baseline (13.0 ms, true figure 6.5x). As the PARENT of a model-written
candidate a kernel runs slower by EXTRA (its kin tell it), under the 15% mark.

Noise, per comparison (one `profile` call):
  host  H ~ U(1, HOST_MAX), the SAME factor for every kernel of the comparison (HOST_MAX=1: none);
  drift each kernel's median x its own N(1, SIGMA) (DRIFT=kernel, the brief's), or one N(1, SIGMA)
        shared by all kernels of the comparison (DRIFT=common: a control, drift the interleaving cancels);
  rounds 101 rounds; each kernel's time in round i = its drifted median x N(1, ROUND_SPREAD), one
        draw per kernel per round, the candidate's draw shared by both ratios:
        paired_ratios = parent_i / cand_i, reference_ratios = base_i / cand_i.
        ROUND_SPREAD defaults to 1%/sqrt(2), so a ratio spreads 1% as the pair ratios of stop 50 did.
  Medians (median_ns, parent_median_ns, reference_median_ns) are the medians of the rounds' times.
The old path draws its two-kernel comparisons (pairs, re-measurements, confirmations) the same way.

usage: family_model.py RUNS BUDGET   cells from the environment (see __main__)"""
import math, os, random, statistics, sys
from types import SimpleNamespace

from kernelgraph.agent import loop as L
from kernelgraph.agent.proposers.base import Proposal
from kernelgraph.agent.results import CheckResult, CompileResult, Outcome, ProfileResult
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.core.signature import CounterSource

L.library_baseline = lambda *a, **k: None  # would time numpy: not here
BASE, TRUE, GAIN, ROUNDS = 13.0e6, 2.0e6, 0.95, 101
ROUND_SPREAD = float(os.environ.get("ROUND_SPREAD", str(0.01 / math.sqrt(2))))


def level_of(src):
    return int(src.split("lvl")[1].split()[0]) if src and src.startswith("/* gen") else None


class Fake:
    name = "c"

    def __init__(self, rng, sigma, extra, host_max, drift):
        self.rng, self.sigma, self.extra, self.host_max, self.drift = rng, sigma, extra, host_max, drift
        self.calls = self.three = 0

    def compile(self, task, source, target): return CompileResult(ok=True)
    def check(self, task, source, target): return CheckResult(Outcome.KEPT)

    def profile(self, task, source, target, parent_source=None, reference_source=None):
        r, lc, lp = self.rng, level_of(source), level_of(parent_source)
        if lc is None:  # the baseline alone, at the run's start
            return ProfileResult(median_ns=BASE, iqr_ns=0.0, trials=ROUNDS, counters={},
                                 counter_source=CounterSource.CPU_TIMING)
        self.calls += 1
        host = r.uniform(1.0, self.host_max) if self.host_max > 1.0 else 1.0
        common = 1 + r.gauss(0, self.sigma)
        drift = (lambda: common) if self.drift == "common" else (lambda: 1 + r.gauss(0, self.sigma))
        cand_med = TRUE * GAIN**lc * host * drift()
        if lp is None:  # the trusted baseline as the parent: gen0's pair, or an old-path confirmation
            par_med = BASE * host * drift()
        else:  # a model-written parent, slower by EXTRA as the parent of its kin
            par_med = TRUE * GAIN**lp * (1 + self.extra) * host * drift()
        ref_med = BASE * host * drift() if reference_source is not None else None
        rounds = lambda med: [med * (1 + r.gauss(0, ROUND_SPREAD)) for _ in range(ROUNDS)]
        cand, par = rounds(cand_med), rounds(par_med)
        extra = {}
        if ref_med is not None:
            self.three += 1
            base = rounds(ref_med)
            extra = dict(reference_median_ns=statistics.median(base),
                         reference_ratios=tuple(b / c for b, c in zip(base, cand)))
        return ProfileResult(median_ns=statistics.median(cand), iqr_ns=0.0, trials=ROUNDS, counters={},
                             counter_source=CounterSource.CPU_TIMING, parent_median_ns=statistics.median(par),
                             paired_ratios=tuple(p / c for p, c in zip(par, cand)), **extra)


class Family:
    """One fresh copy a budget step (a comment differs); honest: one level (5%) below its parent."""
    name = "family"

    def __init__(self, honest): self.i, self.honest = 0, honest
    def propose(self, ctx):
        parent = level_of(ctx.source)
        lvl = (0 if parent is None else parent + 1) if self.honest else 0
        self.i += 1
        return Proposal(transform="llm", source=f"/* gen{self.i - 1} lvl{lvl} */", rationale="")


class Client:
    def upsert_targets(self, t): return []
    def record_attempt(self, a): import uuid; return SimpleNamespace(parent_measurement_id=uuid.uuid4().hex, child_measurement_id=uuid.uuid4().hex)


def cell(runs, budget, sigma, extra, new, honest=False, host_max=1.0, drift="kernel"):
    L.BASELINE_IN_THE_COMPARISON = new
    kept = disc = nj = gen0_lost = three = calls = 0
    stored, keeps_per_run, chained = [], [], []
    for seed in range(runs):
        fake = Fake(random.Random(seed), sigma, extra, host_max, drift)
        res = L.optimize(get_task("rmsnorm", "c"), fake, get_target("cpu-x86-64-v2"), Family(honest), Client(),
                         budget=budget, final_check=False)
        gen0_lost += res.steps[0].outcome != Outcome.KEPT
        k = 0
        for st in res.steps[1:]:
            if not st.judged:
                nj += 1
            elif st.outcome == Outcome.KEPT:
                k += 1
                stored.append(st.speedup)
            else:
                disc += 1
        kept += k
        keeps_per_run.append(k)
        chained.append(res.chained_speedup)
        three += fake.three
        calls += fake.calls
    steps = runs * (budget - 1)
    med = lambda xs: statistics.median(xs) if xs else float("nan")
    mx = lambda xs: max(xs) if xs else float("nan")
    what = "honest 5%/gen" if honest else "identical"
    return (f"{'new' if new else 'old'} {what} sigma {sigma:.3f} extra {extra:.2f} host U(1,{host_max:.1f}) "
            f"drift {drift}: steps {steps}, kept {kept} ({kept / steps:.1%}), discarded {disc}, not judged {nj}, "
            f"runs with >=1 keep {sum(1 for x in keeps_per_run if x)}/{runs}, max in a run {max(keeps_per_run)}; "
            f"stored ratio of the kept median {med(stored):.3f} max {mx(stored):.3f}, kept at >1.05 "
            f"{sum(s > 1.05 for s in stored)} >1.08 {sum(s > 1.08 for s in stored)}; chained median {med(chained):.3f} "
            f"max {mx(chained):.3f}; gen0 not kept {gen0_lost}; profiles/step {calls / (runs * budget):.2f}, "
            f"three-kernel {three / (runs * budget):.2f}")


if __name__ == "__main__":
    runs, budget = int(sys.argv[1]), int(sys.argv[2])
    honest = os.environ.get("MODE", "identical") == "honest"
    sigmas = [float(x) for x in os.environ.get("SIGMAS", "0.015,0.03").split(",")]
    extras = [float(x) for x in os.environ.get("EXTRAS", "0,0.04,0.08,0.12").split(",")]
    host_max = float(os.environ.get("HOST_MAX", "1.0"))
    drift = os.environ.get("DRIFT", "kernel")
    for sigma in sigmas:
        for extra in extras:
            for new in (False, True):
                print(cell(runs, budget, sigma, extra, new, honest, host_max, drift), flush=True)
