"""The matched-compute ablation: does accumulated experience beat scaling up search without memory?

Protocol (docs/ablation-v1.md shows the latest run; study v2, kernelgraph/bench/study/, supersedes it):
1. Build experience: every task is optimized once with the memoryless proposer at 2K attempts on the
   target, into an experience namespace.
2. Held-out evaluation, leave one access-pattern family out, rotating: for each held-out task, retrieval
   ignores every task of its family (so nothing about this kind of kernel is known), and the arms run
   at matched budgets with S seeds each: memoryless@K, memoryless@4K, text@K, hybrid@K, experience@K.
   Arms record into their own namespace, so no arm learns from another.
3. Transfer: experience built only on a second target (e.g. cpu-x86-64-v4) is used on the main target,
   against same-target experience and none; and the service's transfer query gives the correlation
   matrix between the targets that hold experience.

Every distinct kernel source is compiled, checked and profiled once per target (`MemoBackend`), so the
arms see the same numbers: no arm can win by drawing a lucky timing, and the whole study fits on 2 cores.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console

from kernelgraph.agent.backends.base import Backend
from kernelgraph.agent.evaluator import DEFAULT_SEEDS
from kernelgraph.agent.loop import OptimizeError, OptimizeResult, optimize
from kernelgraph.agent.proposers.base import Proposer
from kernelgraph.agent.proposers.experience import ExperienceProposer
from kernelgraph.agent.proposers.memoryless import MemorylessProposer
from kernelgraph.agent.results import CheckResult, CompileResult, ProfileResult
from kernelgraph.agent.targets import Target
from kernelgraph.agent.tasks.base import Task
from kernelgraph.bench.reports import timestamp
from kernelgraph.bench.stats import geomean, geomean_of_all
from kernelgraph.client import ExperienceClient
from kernelgraph.core.models import (
    LineageStep,
    MeasurementResult,
    RecordResult,
    RetrieveRequest,
    RetrieveResponse,
    TransferMatrixResponse,
    TransferPrediction,
    TransferResponse,
)

ARMS = ("memoryless@K", "memoryless@4K", "text@K", "hybrid@K", "experience@K")


class MemoBackend:
    """A backend that compiles, checks and profiles each distinct source once (per task and target).

    A profile is taken interleaved against the task's baseline; the speedup of a child over its parent
    is then the ratio of two memoized medians measured the same way.
    """

    def __init__(self, inner: Backend) -> None:
        self.inner = inner
        self.name = inner.name
        self.timing = getattr(inner, "timing", None)  # the library is timed by the kernels' plan
        self._compiled: dict[tuple[str, str, str], CompileResult] = {}
        self._checked: dict[tuple[str, str, str], CheckResult] = {}
        self._profiled: dict[tuple[str, str, str], ProfileResult] = {}
        self.measured = 0

    def compile(self, task: Task, source: str, target: Target) -> CompileResult:
        key = (task.name, target.name, source)
        if key not in self._compiled:
            self._compiled[key] = self.inner.compile(task, source, target)
        return self._compiled[key]

    def check(
        self, task: Task, source: str, target: Target, seeds: Sequence[int] = DEFAULT_SEEDS
    ) -> CheckResult:
        key = (task.name, target.name, source)
        if key not in self._checked:
            self._checked[key] = self.inner.check(task, source, target, seeds)
        return self._checked[key]

    def _profile(self, task: Task, source: str, target: Target) -> ProfileResult:
        key = (task.name, target.name, source)
        if key not in self._profiled:
            baseline = task.source(self.name, task.baseline_config)
            profiled = self.inner.profile(
                task, source, target, parent_source=None if source == baseline else baseline
            )
            self.measured += 1
            if not profiled.judged:  # refused on a busy moment: measured again when next asked
                return profiled
            self._profiled[key] = profiled
        return self._profiled[key]

    def profile(
        self, task: Task, source: str, target: Target, parent_source: str | None = None,
        reference_source: str | None = None,
    ) -> ProfileResult:  # fmt: skip
        own = self._profile(task, source, target)
        parent_ns = self._profile(task, parent_source, target).median_ns if parent_source else None
        return replace(own, parent_median_ns=parent_ns)


class HeldOutClient:
    """Reads experience from one namespace, leaving out the held-out family; writes go elsewhere."""

    def __init__(
        self, reads: ExperienceClient, writes: ExperienceClient, excluded_tasks: Sequence[str]
    ) -> None:
        self.reads, self.writes, self.excluded = reads, writes, list(excluded_tasks)

    def upsert_targets(self, targets: Sequence[Any]) -> list[str]:
        self.reads.upsert_targets(targets)
        return self.writes.upsert_targets(targets)

    def record_attempts(self, attempts: Sequence[Any]) -> list[RecordResult]:
        return self.writes.record_attempts(attempts)

    def record_attempt(self, attempt: Any) -> RecordResult:
        return self.writes.record_attempt(attempt)

    def record_measurements(self, records: Sequence[Any]) -> list[MeasurementResult]:
        return self.writes.record_measurements(records)

    def retrieve(self, request: RetrieveRequest | dict[str, Any]) -> RetrieveResponse:
        req = request if isinstance(request, RetrieveRequest) else RetrieveRequest.model_validate(request)
        return self.reads.retrieve(req.model_copy(update={"exclude_tasks": self.excluded}))

    def transfer(self, source: str, destination: str, pattern: str | None = None) -> TransferResponse:
        return self.reads.transfer(source, destination, pattern)

    def transfer_matrix(self, transform: str | None = None, resamples: int = 1_000) -> TransferMatrixResponse:
        return self.reads.transfer_matrix(transform, resamples)

    def predict_transfer(self, target: str, transform: str | None = None) -> TransferPrediction:
        return self.reads.predict_transfer(target, transform)

    def lineage(self, kernel_id: str) -> list[LineageStep]:
        return self.writes.lineage(kernel_id)

    def list_targets(self) -> list[dict[str, Any]]:
        return self.reads.list_targets()

    def close(self) -> None:
        """The wrapped clients belong to the caller."""


@dataclass
class ArmRuns:
    """Speedup-over-baseline curves of one arm: curves[task][seed] = speedup after each attempt."""

    budget: int
    curves: dict[str, list[list[float]]] = field(default_factory=dict)
    # yardsticks[task][seed]: the run's best beside the library and the roofline (agent/library.py)
    yardsticks: dict[str, list[dict[str, Any] | None]] = field(default_factory=dict)

    def add(self, task: str, result: OptimizeResult) -> None:
        curve = result.curve or [1.0]
        padded = (curve + [curve[-1]] * self.budget)[: self.budget]  # a run that ran out of ideas stays put
        self.curves.setdefault(task, []).append(padded)
        marks = result.best_yardsticks
        self.yardsticks.setdefault(task, []).append(marks.to_json() if marks is not None else None)


def _yardstick(arm: ArmRuns, task: str, name: str) -> list[float | None]:
    return [m.get(name) if m else None for m in arm.yardsticks.get(task, [])]


def summarize(arms: dict[str, ArmRuns], budget: int, seeds: int) -> dict[str, Any]:
    """Per arm: geomean speedup (final and after each attempt), spread across seeds, attempts to 90%."""
    tasks = sorted(next(iter(arms.values())).curves)
    best_any = {t: max(max(c[-1] for c in arm.curves[t]) for arm in arms.values()) for t in tasks}
    summary: dict[str, Any] = {"budget": budget, "seeds": seeds, "tasks": tasks, "arms": {}}
    for name, arm in arms.items():
        length = arm.budget
        curve = [geomean([c[i] for t in tasks for c in arm.curves[t]]) for i in range(length)]
        per_seed = [geomean([arm.curves[t][s][-1] for t in tasks]) for s in range(seeds)]
        per_seed_curves = [
            [geomean([arm.curves[t][s][i] for t in tasks]) for i in range(length)] for s in range(seeds)
        ]
        reach = []
        for t in tasks:
            for c in arm.curves[t]:
                hit = next((i + 1 for i, v in enumerate(c) if v >= 0.9 * best_any[t]), None)
                reach.append(hit)
        reached = [r for r in reach if r is not None]
        vs_library = geomean_of_all([v for t in tasks for v in _yardstick(arm, t, "speedup_vs_library")])
        summary["arms"][name] = {
            "budget": length,
            "geomean_speedup": curve[-1],
            "geomean_speedup_at_K": curve[min(budget, length) - 1],
            # the final best of every run over the library call (None unless every run has one)
            "geomean_speedup_vs_library": vs_library,
            "seed_spread": {
                "min": min(per_seed),
                "max": max(per_seed),
                "stdev": statistics.pstdev(per_seed) if len(per_seed) > 1 else 0.0,
            },
            "attempts_to_90pct": statistics.mean(reached) if reached else None,
            "reached_90pct": len(reached) / len(reach),
            "curve": curve,
            "curve_min": [min(c[i] for c in per_seed_curves) for i in range(length)],
            "curve_max": [max(c[i] for c in per_seed_curves) for i in range(length)],
            "per_task": {
                t: {
                    "speedups": [c[-1] for c in arm.curves[t]],
                    "geomean": geomean([c[-1] for c in arm.curves[t]]),
                    "best_any_arm": best_any[t],
                    "yardsticks": arm.yardsticks.get(t, []),
                    "speedups_vs_library": _yardstick(arm, t, "speedup_vs_library"),
                    "roofline_fractions": _yardstick(arm, t, "roofline_fraction"),
                }
                for t in tasks
            },
        }
    return summary


@dataclass
class AblationPlan:
    tasks: list[Task]
    target: Target
    budget: int = 8
    seeds: int = 3
    build_budget_factor: int = 2
    transfer_source: Target | None = None  # experience built only here is tried on `target`


def _family_tasks(tasks: Sequence[Task], task: Task) -> list[str]:
    return [t.name for t in tasks if t.family == task.family]


def build_experience(
    plan: AblationPlan, backend: Backend, client: ExperienceClient, target: Target, say: Callable[[str], None]
) -> None:
    for task in plan.tasks:
        started = time.monotonic()
        try:
            result = optimize(task, backend, target, MemorylessProposer(seed=1000), client,
                              plan.budget * plan.build_budget_factor, seed=1000)  # fmt: skip
        except OptimizeError as exc:
            say(f"  [red]skipped {task.name}: {exc}[/]")
            continue
        say(f"  built {task.name:18} on {target.name}: {result.speedup:5.2f}x in {result.attempts} attempts "
            f"({time.monotonic() - started:.0f} s)")  # fmt: skip


def run_arms(
    plan: AblationPlan,
    backend: Backend,
    experience: ExperienceClient,
    scratch: ExperienceClient,
    say: Callable[[str], None],
    arms: Sequence[str] = ARMS,
) -> dict[str, ArmRuns]:
    K = plan.budget
    budgets = {"memoryless@K": K, "memoryless@4K": 4 * K, "text@K": K, "hybrid@K": K, "experience@K": K}
    results = {name: ArmRuns(budgets[name]) for name in arms}
    for task in plan.tasks:
        held_out = HeldOutClient(experience, scratch, _family_tasks(plan.tasks, task))
        for seed in range(plan.seeds):
            proposers: dict[str, Proposer] = {
                "memoryless@K": MemorylessProposer(seed=seed),
                "memoryless@4K": MemorylessProposer(seed=seed),
                "text@K": ExperienceProposer(held_out, mode="text", seed=seed),
                "hybrid@K": ExperienceProposer(held_out, mode="hybrid", seed=seed),
                "experience@K": ExperienceProposer(held_out, mode="counters", seed=seed),
            }
            line = []
            for name in arms:
                result = optimize(
                    task, backend, plan.target, proposers[name], held_out, budgets[name], seed=seed
                )
                results[name].add(task.name, result)
                marks = result.best_yardsticks
                vs_library = marks.speedup_vs_library if marks is not None else None
                line.append(
                    f"{name} {result.speedup:.2f}x" + (f" ({vs_library:.2f}x library)" if vs_library else "")
                )
            say(f"  {task.name:18} seed {seed}: " + "  ".join(line))
    return results


def plot(summary: dict[str, Any], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    for name, arm in summary["arms"].items():
        xs = list(range(1, len(arm["curve"]) + 1))
        # memoryless@K is the first K attempts of memoryless@4K (same seeds): dashed, on top, so both show.
        style: dict[str, Any] = {"linestyle": "--", "zorder": 3} if name == "memoryless@K" else {}
        (line,) = ax.plot(
            xs, arm["curve"], label=f"{name} ({arm['geomean_speedup']:.2f}x)", linewidth=2, **style
        )
        ax.fill_between(xs, arm["curve_min"], arm["curve_max"], color=line.get_color(), alpha=0.15)
    ax.axvline(summary["budget"], color="grey", linestyle=":", linewidth=1)
    ax.set_xlabel("attempts")
    ax.set_ylabel("geomean speedup over the naive baseline (held-out tasks)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _times(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def results_markdown(report: dict[str, Any], command: str, plot_name: str) -> str:
    summary = report["ablation"]
    lines = [
        "# Study v1 (superseded): experience against scaling search",
        "",
        f"Generated by `{command}` on {report['generated_at']} ({report['host']}), in {report['wall_s']:.0f} s.",
        f"Target `{report['target']}`; budget K = {summary['budget']} attempts; {summary['seeds']} seeds; "
        f"{len(summary['tasks'])} held-out tasks, each evaluated with its whole access-pattern family "
        "left out of the experience (leave-one-family-out, rotating).",
        "",
        f"![speedup against attempts]({plot_name})",
        "",
        "| arm | attempts | geomean speedup | vs library | spread across seeds | attempts to 90% of best | runs reaching 90% |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, arm in summary["arms"].items():
        spread = arm["seed_spread"]
        reach = f"{arm['attempts_to_90pct']:.1f}" if arm["attempts_to_90pct"] is not None else "never"
        lines.append(
            f"| {name} | {arm['budget']} | {arm['geomean_speedup']:.2f}x | {_times(arm.get('geomean_speedup_vs_library'))} "
            f"| {spread['min']:.2f}x - {spread['max']:.2f}x "
            f"| {reach} | {arm['reached_90pct']:.0%} |"
        )
    lines += ["", "## Per task (geomean over seeds of the final speedup)", ""]
    names = list(summary["arms"])
    lines.append("| task | " + " | ".join(names) + " | best any arm |")
    lines.append("|---" * (len(names) + 2) + "|")
    for task in summary["tasks"]:
        cells = [f"{summary['arms'][n]['per_task'][task]['geomean']:.2f}x" for n in names]
        best = summary["arms"][names[0]]["per_task"][task]["best_any_arm"]
        lines.append(f"| {task} | " + " | ".join(cells) + f" | {best:.2f}x |")
    goals = report["goals"]
    lines += [
        "",
        "## Against the goals",
        "",
        f"- experience@K >= memoryless@4K: **{'met' if goals['experience_matches_memoryless_4k'] else 'not met'}** "
        f"({goals['experience_at_K']:.2f}x vs {goals['memoryless_at_4K']:.2f}x)",
        f"- experience@K > text@K: **{'met' if goals['experience_beats_text'] else 'not met'}** "
        f"({goals['experience_at_K']:.2f}x vs {goals['text_at_K']:.2f}x)",
    ]
    transfer = report.get("transfer")
    if transfer:
        lines += ["", "## Cross-target transfer", "",
                  f"Experience built only on `{transfer['source']}`, used on `{transfer['destination']}` held-out tasks "
                  f"(experience@K, same seeds):", "",
                  "| experience from | geomean speedup at K |", "|---|---|"]  # fmt: skip
        for label, value in transfer["arms"].items():
            lines.append(f"| {label} | {value:.2f}x |")
        lines += ["", "Transfer matrix (the service's transfer query: overall Spearman correlation of per-kernel "
                  "log speedups of the same transform, source row -> destination column):", ""]  # fmt: skip
        targets = transfer["matrix_targets"]
        lines.append("| from \\ to | " + " | ".join(targets) + " |")
        lines.append("|---" * (len(targets) + 1) + "|")
        for a in targets:
            row = []
            for b in targets:
                value = transfer["matrix"].get(a, {}).get(b)
                row.append("-" if a == b else ("n/a" if value is None else f"{value:.2f}"))
            lines.append(f"| {a} | " + " | ".join(row) + " |")
    lines += ["", "## Reading it", "", report.get("notes", "")]
    return "\n".join(lines) + "\n"


def goals_of(summary: dict[str, Any]) -> dict[str, Any]:
    arms = summary["arms"]
    experience = arms["experience@K"]["geomean_speedup"]
    memoryless_4k = arms["memoryless@4K"]["geomean_speedup"]
    text = arms["text@K"]["geomean_speedup"]
    return {
        "experience_at_K": experience, "memoryless_at_4K": memoryless_4k, "text_at_K": text,
        "experience_matches_memoryless_4k": experience >= memoryless_4k * 0.99,
        "experience_beats_text": experience > text,
    }  # fmt: skip


def say_to(console: Console | None) -> Callable[[str], None]:
    return (lambda text: console.print(text, highlight=False)) if console is not None else (lambda text: None)


QUICK_TASKS = ("elementwise_chain", "reduction", "transpose")  # three families


def run_ablation(
    knowledge: Any,
    *,
    target: Target,
    budget: int,
    seeds: int,
    tasks: Sequence[Task],
    transfer_source: Target | None,
    console: Console | None,
    command: str,
) -> dict[str, Any]:
    """Run the whole study against `knowledge` (a KnowledgeService) and return the report."""
    from kernelgraph.agent.backends.c import CBackend
    from kernelgraph.agent.backends.timing import FAST_TIMING
    from kernelgraph.agent.targets import host_identity
    from kernelgraph.service.inprocess import InProcessClient

    started = time.monotonic()
    say = say_to(console)
    run = f"ablation-{timestamp().lower()}"
    experience = InProcessClient(knowledge, f"{run}-experience")
    scratch = InProcessClient(knowledge, f"{run}-arms")
    backend = MemoBackend(CBackend(timing=FAST_TIMING))
    plan = AblationPlan(list(tasks), target, budget, seeds, transfer_source=transfer_source)

    say(
        f"[bold]1. Building experience[/] on {target.name} (memoryless, {budget * plan.build_budget_factor} attempts/task)"
    )
    build_experience(plan, backend, experience, target, say)
    say(f"[bold]2. Held-out arms[/] (K = {budget}, {seeds} seeds, family left out)")
    arms = run_arms(plan, backend, experience, scratch, say)
    summary = summarize(arms, budget, seeds)
    report: dict[str, Any] = {
        "command": command, "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "host": host_identity(), "target": target.name, "namespaces": [experience.namespace, scratch.namespace],
        "ablation": summary, "goals": goals_of(summary), "measured_variants": 0,
    }  # fmt: skip

    if transfer_source is not None:
        other = InProcessClient(knowledge, f"{run}-{transfer_source.name}")
        say(f"[bold]3. Transfer[/]: experience built only on {transfer_source.name}, used on {target.name}")
        build_experience(plan, backend, other, transfer_source, say)
        cross = run_arms(plan, backend, other, scratch, say, arms=("experience@K",))
        cross_summary = summarize({**{k: arms[k] for k in ("memoryless@K",)}, **cross}, budget, seeds)
        names = [target.name, transfer_source.name]
        spaces = [experience.namespace, other.namespace]
        matrix: dict[str, dict[str, float | None]] = {}
        for a in names:
            for b in names:
                if a != b:
                    matrix.setdefault(a, {})[b] = knowledge.transfer(spaces, a, b).overall_rank_correlation
        report["transfer"] = {
            "source": transfer_source.name, "destination": target.name,
            "arms": {
                f"{target.name} (same target)": summary["arms"]["experience@K"]["geomean_speedup"],
                f"{transfer_source.name} only (cross-target)": cross_summary["arms"]["experience@K"]["geomean_speedup"],
                "none (memoryless@K)": summary["arms"]["memoryless@K"]["geomean_speedup"],
            },
            "matrix_targets": names, "matrix": matrix,
        }  # fmt: skip
    report["measured_variants"] = backend.measured
    report["wall_s"] = time.monotonic() - started
    return report
