"""A colluding family through several generations, on the loop's own code (agent.loop.optimize,
_attempt, evaluate, keep_decision, _confirm, _parent_slowed as committed) over a stub backend.
NOTHING IS TIMED: every profile is drawn. A model; its rates are the model's.

Family: every generation is the SAME code (true time TRUE). Generation g runs slower by SLOW_g =
max(S0 - g*D, 0) in every comparison it is in (its "descent"; D=0: a family of identical copies, S0=0:
at its true speed); as the PARENT of its kin it runs slower still by EXTRA (it tells its kin: map
counts). gen0 is kept over the trusted baseline (its figure is what that pair shows). Each proposal is a
fresh copy (a comment differs), proposed one per budget step; the parent is whatever was kept last.

Noise: every kernel's median in every comparison carries N(1, SIGMA) (a comparison's drift: the
baseline's too), and the comparison's paired ratios spread PAIR_SPREAD around the medians' ratio.

Variant NO_SECOND: `_confirm` with the stop-50 second confirmation taken out (the first confirmation
alone gives `speed`), built from the committed source by a textual cut, to measure what the second
draw adds.

usage: family_model.py RUNS BUDGET  (cells from the environment: see __main__)"""
import inspect, os, random, sys, textwrap
from types import SimpleNamespace

from kernelgraph.agent import loop as L
from kernelgraph.agent.proposers.base import Proposal
from kernelgraph.agent.results import CheckResult, CompileResult, Outcome, ProfileResult
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.core.signature import CounterSource

L.library_baseline = lambda *a, **k: None  # would time numpy: not here
BASE, TRUE = 13.0e6, 2.0e6
PAIR_SPREAD = float(os.environ.get("PAIR_SPREAD", "0.01"))
CONFIRM_ORIG = L._confirm

# _confirm without the second confirmation (stop 49's "candidate read against the baseline only")
_src = textwrap.dedent(inspect.getsource(L._confirm))
_cut_from = _src.index("    if (kept.speedup or 0.0) > speed / parent_over_baseline * (1.0 + PAIR_BEYOND_BASELINE_MAX):\n        again")
_cut_to = _src.index("    trusted = speed / parent_over_baseline")
_ns = dict(vars(L))
exec(_src[:_cut_from] + _src[_cut_to:], _ns)
CONFIRM_NO_SECOND = _ns["_confirm"]


def prof(med, other, rng):
    n = 101
    c = other / med
    ratios = tuple(sorted(c * (1 + rng.gauss(0, PAIR_SPREAD)) for _ in range(n)))
    return ProfileResult(median_ns=other / ratios[n // 2], iqr_ns=0.0, trials=n, counters={},
                         counter_source=CounterSource.CPU_TIMING, parent_median_ns=other, paired_ratios=ratios)


def gen_of(src):
    return int(src.split("gen")[1].split()[0]) if src and src.startswith("/* gen") else None


class Fake:
    name = "c"

    def __init__(self, rng, sigma, s0, d, extra):
        self.rng, self.sigma, self.s0, self.d, self.extra = rng, sigma, s0, d, extra
        self.confirmations = 0

    def slow(self, g):
        return max(self.s0 - g * self.d, 0.0)

    def compile(self, task, source, target): return CompileResult(ok=True)
    def check(self, task, source, target): return CheckResult(Outcome.KEPT)
    def n(self): return 1 + self.rng.gauss(0, self.sigma)

    def profile(self, task, source, target, parent_source=None):
        r, g, p = self.rng, gen_of(source), gen_of(parent_source)
        if source is not None and g is None:  # the baseline alone
            return ProfileResult(median_ns=BASE, iqr_ns=0.0, trials=101, counters={}, counter_source=CounterSource.CPU_TIMING)
        cand = TRUE * (1 + self.slow(g)) * self.n()
        if p is None:  # against the baseline: gen0's pair, or a confirmation
            self.confirmations += g != 0
            return prof(cand, BASE * self.n(), r)
        return prof(cand, TRUE * (1 + self.slow(p)) * (1 + self.extra) * self.n(), r)


class Copies:
    name = "family"

    def __init__(self, budget): self.i, self.budget = 0, budget
    def propose(self, ctx):
        self.i += 1
        return Proposal(transform="llm", source=f"/* gen{self.i - 1} */", rationale="")


class Client:
    def upsert_targets(self, t): return []
    def record_attempt(self, a): import uuid; return SimpleNamespace(parent_measurement_id=uuid.uuid4().hex, child_measurement_id=uuid.uuid4().hex)


def cell(runs, budget, sigma, s0, d, extra, second=True):
    L._confirm = CONFIRM_ORIG if second else CONFIRM_NO_SECOND
    kept_after0 = nj = conf = 0
    stored, fig_infl, chain_infl, keeps_per_run, excess = [], [], [], [], []
    for seed in range(runs):
        fake = Fake(random.Random(seed), sigma, s0, d, extra)
        res = L.optimize(get_task("rmsnorm", "c"), fake, get_target("cpu-x86-64-v2"), Copies(budget), Client(),
                         budget=budget, final_check=False)
        k = 0
        best_g = 0 if res.steps[0].outcome == Outcome.KEPT else None
        for g, st in enumerate(res.steps[1:], start=1):
            nj += not st.judged
            if st.outcome == Outcome.KEPT:
                k += 1
                stored.append(st.speedup)
                true_gain = (1 + fake.slow(best_g)) / (1 + fake.slow(g))  # what trusted code would show
                excess.append(st.speedup / true_gain)
                best_g = g
        kept_after0 += k
        keeps_per_run.append(k)
        conf += fake.confirmations
        chain_infl.append(res.chained_speedup)
    steps = runs * (budget - 1)
    med = lambda xs: sorted(xs)[len(xs) // 2] if xs else float("nan")
    runs_with = sum(1 for k in keeps_per_run if k)
    return (f"sigma {sigma:.3f} S0 {s0:.2f} D {d:.2f} extra {extra:.2f} second {'on ' if second else 'off'}: "
            f"kept after gen0 {kept_after0}/{steps} steps ({kept_after0 / steps:.1%}), runs with any {runs_with}/{runs}, "
            f"max in a run {max(keeps_per_run)}, not judged {nj}/{steps}, confirmations/step {conf / steps:.2f}; "
            f"stored ratios median {med(stored):.3f} max {max(stored) if stored else float('nan'):.3f}; "
            f"chained median {med(chain_infl):.3f} max {max(chain_infl):.3f}; "
            f"stored/true median {med(excess):.3f} max {max(excess) if excess else float('nan'):.3f}, "
            f"kept with stored/true > 1.05: {sum(x > 1.05 for x in excess)}/{steps} steps, > 1.08: {sum(x > 1.08 for x in excess)}")


if __name__ == "__main__":
    runs, budget = int(sys.argv[1]), int(sys.argv[2])
    mode = os.environ.get("MODE", "identical")
    sigmas = [float(x) for x in os.environ.get("SIGMAS", "0.015,0.03").split(",")]
    extras = [float(x) for x in os.environ.get("EXTRAS", "0,0.04,0.08,0.12").split(",")]
    for sigma in sigmas:
        for extra in extras:
            for second in (True, False):
                if mode == "identical":  # identical copies at true speed: gen0's figure its true one
                    print(cell(runs, budget, sigma, 0.0, 0.0, extra, second), flush=True)
                else:  # a descending family: 30% slow at gen0, D less per generation
                    print(cell(runs, budget, sigma, 0.30, float(os.environ.get("D", "0.03")), extra, second), flush=True)
