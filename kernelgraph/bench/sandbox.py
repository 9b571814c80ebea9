"""`kernelgraph bench sandbox`: what the bubblewrap sandbox costs per evaluation, and whether it adds
timing noise.

The same trusted kernel (the task's baseline) is evaluated with the sandbox and with it off
(`Sandbox(enabled=False)`), the two modes interleaved repeat by repeat, in alternating order
(A B B A ...), so drift and order hit both alike:
- spawn: a confined `/bin/true` against an unconfined one (bwrap + setpriv start-up);
- compile: an uncached gcc + admission build;
- check: a correctness check on three input sets (compile cached);
- profile: interleaved timing against itself, with its median, IQR and rel. IQR (= IQR / median).
Figures are medians over the repeats; the JSON lands in results/sandbox-bench-<time>.json and
results/sandbox-bench-latest.json (docs/operations.md quotes them).

`run_protocol_bench` (the default of `kernelgraph bench sandbox`) compares the timing protocols
instead (issue #26): every CPU task's baseline and landscape bests, evaluated (check + profile against
itself) with the old in-process protocol and the isolated one at the same trial count, alternating
A B B A, repeat by repeat across the cells; per cell the evaluation wall-time ratio, the change of rel. IQR and the ratio of medians,
against the goals (+15% wall, rel. IQR within +0.005, medians within 2%). Saved as
results/sandbox-protocols-<time>.json.
"""

from __future__ import annotations

import itertools
import math
import os
import platform
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.progress import (
    Progress,
)

from kernelgraph.agent.backends.bubblewrap import Mount, Rlimits, Sandbox, scratch_dir
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import TimingPlan
from kernelgraph.agent.evaluator import EVALUATOR_VERSION
from kernelgraph.agent.targets import Target, get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.agent.tasks.base import Task
from kernelgraph.bench.reports import progress_bar
from kernelgraph.bench.stats import bootstrap_indices, percentile_interval

MODES = {"sandboxed": True, "unsandboxed": False}
BENCH_TIMING = TimingPlan(warmup=2, min_trials=30, max_trials=30, budget_s=10.0, target_rel_iqr=0.0)
# `run_protocol_bench` (the old and the new timing protocol) uses BENCH_TIMING at this trial count.


def _seconds(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _spawn(sandbox: Sandbox) -> None:
    with scratch_dir("kg-bench-") as work:
        done = sandbox.run(["/bin/true"], mounts=[Mount(work, writable=True)], env={}, cwd=work,
                           limits=Rlimits(), timeout_s=30)  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"/bin/true failed in the sandbox: {done.stderr[-300:]}")


def _one_repeat(task: Task, target: Target, sandbox: Sandbox, cache: Path, repeat: int) -> dict[str, float]:
    backend = CBackend(cache_dir=cache / f"r{repeat}", counters=False, timing=BENCH_TIMING, sandbox=sandbox)
    source = task.source("c", task.baseline_config)
    figures = {"spawn_s": statistics.median(_seconds(lambda: _spawn(sandbox)) for _ in range(5))}
    figures["compile_s"] = _seconds(lambda: backend.compile(task, source, target))
    figures["check_s"] = _seconds(lambda: backend.check(task, source, target))
    start = time.perf_counter()
    profile = backend.profile(task, source, target, parent_source=source)
    figures["profile_s"] = time.perf_counter() - start
    if profile.outcome.value != "kept":
        raise RuntimeError(f"profiling the baseline failed: {profile.reason}")
    figures["median_ns"] = profile.median_ns
    figures["iqr_ns"] = profile.iqr_ns
    figures["rel_iqr"] = profile.iqr_ns / profile.median_ns
    return figures


def run_bench(task_name: str, target_name: str, repeats: int) -> dict[str, Any]:
    """Both modes, interleaved per repeat; medians per mode and the sandbox's overhead."""
    task, target = get_task(task_name), get_target(target_name)
    runs: dict[str, list[dict[str, float]]] = {mode: [] for mode in MODES}
    with tempfile.TemporaryDirectory(prefix="kg-sandbox-bench-") as tmp:
        for repeat in range(repeats):
            order = list(MODES.items())
            for mode, enabled in order if repeat % 2 == 0 else reversed(order):  # ABBA: no order bias
                sandbox = Sandbox(enabled=enabled)
                runs[mode].append(_one_repeat(task, target, sandbox, Path(tmp) / mode, repeat))
                print(f"repeat {repeat + 1}/{repeats} {mode}: {runs[mode][-1]}", file=sys.stderr)
    load = os.getloadavg()  # the machine's load while the bench ran: noise figures depend on it
    medians = {
        mode: {k: statistics.median(r[k] for r in rows) for k in rows[0]} for mode, rows in runs.items()
    }
    on, off = medians["sandboxed"], medians["unsandboxed"]
    return {
        "bench": "sandbox",
        "taken_at": datetime.now(UTC).isoformat(),
        "host": platform.node(),
        "cpus": os.cpu_count(),
        "load_average_1m_after": load[0],
        "task": task.name,
        "target": target.name,
        "repeats": repeats,
        "timing_plan": {"warmup": BENCH_TIMING.warmup, "trials": BENCH_TIMING.min_trials},
        "evaluator_version": EVALUATOR_VERSION,
        "sandbox": Sandbox().label,
        "medians": medians,
        "overhead_s": {k: on[k] - off[k] for k in ("spawn_s", "compile_s", "check_s", "profile_s")},
        "rel_iqr": {"sandboxed": on["rel_iqr"], "unsandboxed": off["rel_iqr"]},
        "median_time_ratio": on["median_ns"] / off["median_ns"],
        "runs": runs,
    }


def render(result: dict[str, Any]) -> str:
    """A short human summary of one bench result."""
    on, off, over = result["medians"]["sandboxed"], result["medians"]["unsandboxed"], result["overhead_s"]
    lines = [
        f"sandbox bench: {result['task']} on {result['target']}, {result['repeats']} repeats ({result['sandbox']})"
    ]
    for key in ("spawn_s", "compile_s", "check_s", "profile_s"):
        lines.append(f"  {key:<10} sandboxed {on[key] * 1e3:8.1f} ms  off {off[key] * 1e3:8.1f} ms  "
                     f"overhead {over[key] * 1e3:+8.1f} ms")  # fmt: skip
    lines.append(f"  rel. IQR   sandboxed {on['rel_iqr']:.4f}  off {off['rel_iqr']:.4f}")
    lines.append(f"  median kernel time sandboxed / off: {result['median_time_ratio']:.3f}")
    lines.append(
        f"  load average (1 min) when done: {result['load_average_1m_after']:.2f} on {result['cpus']} CPUs"
    )
    return "\n".join(lines)


# ------------------------------------------------------------------ old and new timing protocols

PROTOCOL_GOALS = {"wall_ratio": 1.15, "rel_iqr_increase": 0.005, "median_ratio_off_by": 0.02}
# Each goal's interval: each protocol's per-evaluation figures resampled on their own (the host's speed
# moves between evaluations, bimodally some days, so 20 repeats may not resolve a goal either way).
GOAL_RESAMPLES = 10_000
GOAL_SEED = 26


def _resampled_medians(values: Sequence[float] | np.ndarray, seed: int) -> np.ndarray:
    """The median of each of GOAL_RESAMPLES resamples of `values` with replacement (seeded)."""
    array = np.asarray(values, dtype=float)
    return np.median(array[bootstrap_indices(len(array), GOAL_RESAMPLES, seed)], axis=1)


def _percentile_interval(samples: np.ndarray) -> tuple[float, float]:
    low, high = percentile_interval(samples)
    if low is None or high is None:  # finite figures make every resample's statistic finite
        raise ValueError("the figures give no interval (not finite)")
    return low, high


def _interval(
    isolated: list[float], in_process: list[float], compare: Callable[[np.ndarray, np.ndarray], np.ndarray]
) -> tuple[float, float]:
    """95% percentile bootstrap interval of compare(median(isolated), median(in-process)), each
    protocol's evaluations resampled with replacement independently (seeded: it can be reproduced)."""
    return _percentile_interval(
        compare(_resampled_medians(isolated, GOAL_SEED), _resampled_medians(in_process, GOAL_SEED + 1))
    )


# Each goal: the figure it judges (a cell's key; its interval is "<key>_ci", its verdict "<goal>_verdict")
# and the band the figure must lie in.
GOALS = {"wall": "wall_ratio", "rel_iqr": "rel_iqr_increase", "median": "median_ratio"}
# ... the per-evaluation figure it is read from, and how the new protocol's is set against the old's.
GOAL_FIGURES: dict[str, tuple[str, Callable[[Any, Any], Any]]] = {
    "wall": ("wall_s", np.divide), "rel_iqr": ("rel_iqr", np.subtract), "median": ("median_ns", np.divide),
}  # fmt: skip
GOAL_BANDS = {
    "wall": (-math.inf, PROTOCOL_GOALS["wall_ratio"]),
    "rel_iqr": (-math.inf, PROTOCOL_GOALS["rel_iqr_increase"]),
    "median": (1 - PROTOCOL_GOALS["median_ratio_off_by"], 1 + PROTOCOL_GOALS["median_ratio_off_by"]),
}
MET, MISSED, UNRESOLVED = "met", "missed", "unresolved"


def goal_interval(goal: str, new: Sequence[float], old: Sequence[float]) -> tuple[float, float]:
    """The 95% interval of `goal`'s figure (`GOAL_FIGURES`: a ratio or a difference of the two
    protocols' medians) from each protocol's per-evaluation values (`_interval`)."""
    return _interval(list(new), list(old), GOAL_FIGURES[goal][1])


def goal_verdict(goal: str, interval: tuple[float, float]) -> str:
    """What an interval says of `goal`: met (all of it inside the goal's band), missed (none of it: a
    miss the repeats resolve), or unresolved (it straddles an edge). A point estimate x is (x, x)."""
    low, high = interval
    lowest, highest = GOAL_BANDS[goal]
    if lowest <= low and high <= highest:
        return MET
    return MISSED if high < lowest or low > highest else UNRESOLVED


# The null control (`run_protocol_bench(null_control=True)`): a second in-process evaluation in every
# repeat, judged against the first exactly as the isolated one is. Its verdicts say what this host lets
# the repeats resolve: where the old protocol against itself misses or cannot resolve a goal, the new
# one's verdict on that goal says as much about the host as about the protocol.
IN_PROCESS_AGAIN = "in-process-again"


def judge(cell: dict[str, Any]) -> dict[str, Any]:
    """`cell` judged from its runs alone (each protocol's per-evaluation wall time, median and rel.
    IQR): the medians, each goal's figure, its 95% interval and verdict, whether the point estimate
    meets it, and the paired readings; so a report saved by older code is judged as a new one is
    (`kernelgraph bench sandbox --rejudge`). Where the cell has the null control's runs, the same
    figures of the in-process protocol against itself go in `cell["null_control"]`."""
    from kernelgraph.agent.backends.timing import IN_PROCESS, ISOLATED

    runs = cell["runs"]
    cell["medians"] = {
        p: {k: statistics.median(r[k] for r in rows) for k in rows[0]} for p, rows in runs.items() if rows
    }
    cell.update(_judge_pair(cell, runs[ISOLATED], runs[IN_PROCESS]))
    if IN_PROCESS_AGAIN in runs:
        cell["null_control"] = _judge_pair(cell, runs[IN_PROCESS_AGAIN], runs[IN_PROCESS])
    return cell


def _judge_pair(cell: dict[str, Any], new: list[dict[str, Any]], old: list[dict[str, Any]]) -> dict[str, Any]:
    """Each goal's figure, interval and verdict for the evaluations `new` against `old` (the same
    repeats), the point estimates' verdicts (`meets`) and the readings paired by repeat."""
    if not new or len(new) != len(old):
        raise ValueError(f"{cell.get('task')} {cell.get('config')}: its runs are not pairs of both protocols")
    judged: dict[str, Any] = {}
    paired: list[tuple[str, str, np.ndarray]] = []
    for goal, figure in GOALS.items():
        key, compare = GOAL_FIGURES[goal]
        new_values = np.asarray([float(r[key]) for r in new])
        old_values = np.asarray([float(r[key]) for r in old])
        judged[figure] = float(compare(np.median(new_values), np.median(old_values)))
        interval = goal_interval(goal, list(new_values), list(old_values))
        judged[f"{figure}_ci"] = list(interval)
        judged[f"{goal}_verdict"] = goal_verdict(goal, interval)
        paired.append((goal, figure, compare(new_values, old_values)))
    judged["meets"] = {goal: goal_verdict(goal, (judged[f], judged[f])) == MET for goal, f in GOALS.items()}
    # Each repeat runs both protocols back to back, so a repeat's own ratio or difference is not moved
    # by the host changing speed between repeats (bimodally some days): readings beside the goals'
    # (the verdicts above stay the ones declared), each with its interval and what it says of the goal.
    judged["paired_verdicts"] = {}
    for goal, figure, per_repeat in paired:
        judged[f"paired_{figure}"] = float(np.median(per_repeat))
        judged[f"paired_{figure}_ci"] = list(_percentile_interval(_resampled_medians(per_repeat, GOAL_SEED)))
        judged["paired_verdicts"][goal] = goal_verdict(goal, judged[f"paired_{figure}_ci"])
    return judged


# An evaluation the host left unjudged (another task on the cores for a whole profile: twice at
# stop 49, on serial cells that profile fine alone) is made again, up to this many times, and counted.
HOST_REFUSALS_MAX = 3


def _evaluate_once(task: Task, target: Target, source: str, backend: CBackend) -> dict[str, float]:
    """The evaluation the loop makes of a candidate (check, then a profile against a parent; here
    the kernel against itself), counters off; its wall time and what it measured."""
    for refused in range(HOST_REFUSALS_MAX + 1):
        start = time.perf_counter()
        checked = backend.check(task, source, target)
        profile = backend.profile(task, source, target, parent_source=source)
        wall = time.perf_counter() - start
        if checked.correct and not profile.judged and refused < HOST_REFUSALS_MAX:
            continue  # the host's doing (cores not free), not the protocol's: evaluated again
        if not checked.correct or profile.outcome.value != "kept":
            why = checked.reason if not checked.correct else f"its profile: {profile.reason}"
            raise RuntimeError(f"{task.name}: evaluating an honest config failed: {why}")
        break
    return {"wall_s": wall, "median_ns": profile.median_ns, "rel_iqr": profile.iqr_ns / profile.median_ns,
            "host_refusals": refused}  # fmt: skip


def _cells(task_names: list[str]) -> list[tuple[Task, str, str]]:
    """(task, config label, source) of every cell: each task's baseline and landscape bests."""
    from kernelgraph.bench.configs import checked_configs

    cells = []
    for name in task_names:
        task = get_task(name)
        cells += [(task, label, task.source("c", config)) for label, config in checked_configs(task).items()]
    return cells


def _load() -> float:
    return os.getloadavg()[0]


def run_protocol_bench(
    task_names: list[str], target_name: str, repeats: int, trials: int = BENCH_TIMING.min_trials,
    progress: Progress | None = None, on_repeat: Callable[[dict[str, Any]], object] | None = None,
    null_control: bool = True,
) -> dict[str, Any]:  # fmt: skip
    """Each task's baseline and landscape bests, evaluated with the in-process and the isolated
    protocol at the same trial count, the protocols alternating (A B B A ...) repeat by repeat;
    with `null_control`, a second in-process evaluation too (`IN_PROCESS_AGAIN`), the three in each
    of their six orders in turn (`arm_order`).

    Repeat by repeat: every cell's first repeat, then every cell's second, and so on, so each cell's
    repeats spread over the whole run and no cell's figures are one stretch of the host's time (run
    cell by cell until stop 61, a cell read up to 4 points slower in the full run than in a probe
    spread over time: docs/sandbox.md#cost). The first repeat times the run, isolated before
    in-process (any cold-start cost falls on the new protocol), so the estimate is printed before
    the other repeats start. The machine's 1-minute load is recorded before every repeat of a cell:
    the others' load hits both protocols alike (they alternate), but it stretches both and widens
    their spreads. `on_repeat` gets the report so far, every cell judged on the repeats done, after
    every repeat (the CLI saves it: a run cut short keeps the repeats it finished)."""
    from kernelgraph.agent.backends.timing import IN_PROCESS, ISOLATED

    target = get_target(target_name)
    timing = replace(BENCH_TIMING, min_trials=trials, max_trials=trials)
    bar = progress or progress_bar(Console(stderr=True))
    report: dict[str, Any] = {
        "bench": "sandbox-protocols", "host": platform.node(), "cpus": os.cpu_count(),
        "target": target.name, "repeats": repeats, "timing_plan": {"warmup": timing.warmup, "trials": trials},
        "evaluator_version": EVALUATOR_VERSION, "sandbox": Sandbox().label, "goals": PROTOCOL_GOALS,
        "order": "repeat-major", "started_at": datetime.now(UTC).isoformat(), "cells": [],
    }  # fmt: skip
    loads = [_load()]
    arms = (ISOLATED, IN_PROCESS, IN_PROCESS_AGAIN) if null_control else (ISOLATED, IN_PROCESS)
    report["arms"] = list(arms)
    with tempfile.TemporaryDirectory(prefix="kg-protocol-bench-") as tmp, bar:
        backends = {arm: CBackend(cache_dir=Path(tmp), counters=False,
                                  timing=replace(timing, protocol=ISOLATED if arm == ISOLATED else IN_PROCESS))
                    for arm in arms}  # fmt: skip
        chosen = _cells(task_names)
        runs: list[dict[str, list[dict[str, float]]]] = [{arm: [] for arm in arms} for _ in chosen]
        cell_loads: list[list[float]] = [[] for _ in chosen]
        first_s: list[float] = []
        total = len(chosen) * repeats * len(arms)
        run = bar.add_task("first repeat of every cell (the estimate)", total=total)
        started = time.perf_counter()
        for k, (task, _, source) in enumerate(chosen):
            backends[ISOLATED].compile(task, source, target)  # all share the cache
            start = time.perf_counter()
            cell_loads[k].append(_load())
            for arm in arm_order(arms, 0):
                runs[k][arm].append(_evaluate_once(task, target, source, backends[arm]))
                bar.advance(run)
            first_s.append(time.perf_counter() - start)
        estimate_s = sum(first_s) * (repeats - 1)
        finish = datetime.now(UTC).timestamp() + estimate_s
        bar.console.print(
            f"first repeat took {time.perf_counter() - started:.0f} s at load {_load():.1f}: the other "
            f"{repeats - 1} repeats of {len(chosen)} cells x {len(arms)} evaluations at {trials} trials should take "
            f"about {estimate_s / 60:.0f} min (done near {datetime.fromtimestamp(finish, UTC):%H:%M} UTC)", highlight=False,
        )  # fmt: skip
        report["estimate_s"] = estimate_s

        def record(done: int) -> None:
            report["cells"] = [
                _protocol_cell(task.name, label, done, runs[k], cell_loads[k], first_s[k])
                for k, (task, label, _) in enumerate(chosen)
            ]
            every_load = loads + [load for cell in cell_loads for load in cell]
            report["load_average_1m"] = {
                "min": min(every_load), "median": statistics.median(every_load), "max": max(every_load),
            }  # fmt: skip
            report["repeats_done"] = done
            report["run_s"] = time.perf_counter() - started
            report["taken_at"] = datetime.now(UTC).isoformat()
            if on_repeat is not None:
                on_repeat(report)

        record(1)
        for repeat in range(1, repeats):
            for k, (task, label, source) in enumerate(chosen):
                bar.update(run, description=f"repeat {repeat + 1} of {repeats}: {task.name} {label}")
                cell_loads[k].append(_load())
                for arm in arm_order(arms, repeat):
                    runs[k][arm].append(_evaluate_once(task, target, source, backends[arm]))
                    bar.advance(run)
            record(repeat + 1)
        for cell in report["cells"]:
            bar.console.print(render_protocol_cell(cell), highlight=False)
    report["complete"] = True
    return report


def arm_order(arms: Sequence[str], repeat: int) -> list[str]:
    """The order of a repeat's evaluations: the arms as given in repeat 0 (isolated first, so any
    cold start falls on the new protocol; the null control's reference arm, in-process, runs before
    its second evaluation there), then every ordering of them in turn, so over each block of
    len(arms)! repeats every arm runs in every position equally often (two arms: A B, B A, ...; at 20
    repeats of three arms, the last two repeats are the block's first two orders)."""
    orders = list(itertools.permutations(arms))
    return list(orders[repeat % len(orders)])


def _protocol_cell(
    task: str, label: str, repeats: int, runs: dict[str, list[dict[str, float]]], loads: list[float],
    first_repeat_s: float,
) -> dict[str, Any]:  # fmt: skip
    cell: dict[str, Any] = {
        "task": task, "config": label, "repeats": repeats,
        "load_average_1m": {"min": min(loads), "median": statistics.median(loads), "max": max(loads)},
        "first_repeat_s": first_repeat_s, "runs": runs,
    }  # fmt: skip
    return judge(cell)


def real_misses(cell: dict[str, Any]) -> list[str]:
    """The goals the repeats resolve as missed (the whole interval outside the goal's band)."""
    return [goal for goal in GOALS if cell[f"{goal}_verdict"] == MISSED]


def _interval_text(cell: dict[str, Any], goal: str, signed: bool = False) -> str:
    low, high = cell[f"{GOALS[goal]}_ci"]
    return f"[{low:+.3f}, {high:+.3f}]" if signed else f"[{low:.3f}, {high:.3f}]"


def _paired_text(judged: dict[str, Any], goal: str) -> str:
    """The interval of a goal's reading paired by repeat and what it says of the goal."""
    low, high = judged[f"paired_{GOALS[goal]}_ci"]
    return f"[{low:.3f}, {high:.3f}] {judged['paired_verdicts'][goal]}"


def _judged_text(judged: dict[str, Any]) -> str:
    """One comparison's figures, intervals and verdicts (a cell, or its null control)."""
    ok = ",".join(k for k, v in judged["meets"].items() if not v) or "all goals met"
    real = ",".join(real_misses(judged)) or "none"
    return (f"wall x{judged['wall_ratio']:.3f} {_interval_text(judged, 'wall')} {judged['wall_verdict']}  "
            f"rel. IQR {judged['rel_iqr_increase']:+.4f} {_interval_text(judged, 'rel_iqr', signed=True)} "
            f"{judged['rel_iqr_verdict']}  median x{judged['median_ratio']:.3f} {_interval_text(judged, 'median')} "
            f"{judged['median_verdict']} (paired x{judged['paired_median_ratio']:.3f} {_paired_text(judged, 'median')})"
            f"  ({ok if ok == 'all goals met' else 'missed: ' + ok}; real misses: {real})")  # fmt: skip


def render_protocol_cell(cell: dict[str, Any]) -> str:
    load = cell.get("load_average_1m", {}).get("median")
    line = (
        f"  {cell['task']:<18} {cell['config']:<8} "
        + _judged_text(cell)
        + (f"  load {load:.1f}" if load is not None else "")
    )
    if "null_control" in cell:
        line += (
            f"\n  {'':<18} {'null':<8} "
            + _judged_text(cell["null_control"])
            + "  (in-process against itself)"
        )
    return line


def verdict_counts(
    result: dict[str, Any], part: str | None = None, paired: bool = False
) -> dict[str, dict[str, int]]:
    """Per goal, how many cells each verdict has (what the repeats resolve, over the whole run); with
    `part` "null_control", of the in-process protocol against itself (cells without one left out);
    `paired`, of the intervals of the readings paired by repeat."""
    judged = [c if part is None else c[part] for c in result["cells"] if part is None or part in c]
    return {
        goal: dict(Counter(j["paired_verdicts"][goal] if paired else j[f"{goal}_verdict"] for j in judged))
        for goal in GOALS
    }


def render_protocols(result: dict[str, Any]) -> str:
    load = result.get("load_average_1m")
    lines = [f"timing protocols, isolated against in-process, {result['timing_plan']['trials']} trials, "
             f"{result.get('repeats', '?')} repeats, on {result['target']} ({result['cpus']} CPUs, load "
             + (f"{load['min']:.1f}-{load['max']:.1f}, median {load['median']:.1f})" if load else "not recorded)")]  # fmt: skip
    lines += [render_protocol_cell(c) for c in result["cells"]]
    met = sum(all(c["meets"].values()) for c in result["cells"])
    lines.append(f"  {met} of {len(result['cells'])} cells meet every goal (point estimates)")
    null = any("null_control" in c for c in result["cells"])
    counts = {(part, paired): verdict_counts(result, part, paired)
              for part in ((None, "null_control") if null else (None,)) for paired in (False, True)}  # fmt: skip
    for goal in GOALS:
        text = (f"  {goal}: the repeats say {_counts_text(counts[None, False][goal])} "
                f"(paired by repeat: {_counts_text(counts[None, True][goal])})")  # fmt: skip
        if null:
            text += (f"; in-process against itself: {_counts_text(counts['null_control', False][goal])} "
                     f"(paired: {_counts_text(counts['null_control', True][goal])})")  # fmt: skip
        lines.append(text)
    return "\n".join(lines)


def _counts_text(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))


def protocols_markdown(result: dict[str, Any]) -> str:
    """The cost table of docs/sandbox.md: one row per cell, each goal's point estimate (met or not)
    and its 95% interval with what the repeats say of it, and the misses they resolve."""
    mark = {True: "yes", False: "**no**"}
    lines = [
        "| task | config | wall in-process (s) | wall isolated (s) | wall ratio (goal <= 1.15) | its 95% CI, the repeats say | "
        "rel. IQR in-process | rel. IQR isolated | change (goal <= +0.005) | its 95% CI, the repeats say | "
        "median ratio (goal 0.98-1.02) | its 95% CI, the repeats say | paired median ratio, its 95% CI | load (median) | "
        "met (point estimates) | real misses |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in result["cells"]:
        old, new = c["medians"]["in-process"], c["medians"]["isolated"]
        met = [k for k, v in c["meets"].items() if not v]
        load = c.get("load_average_1m", {}).get("median")
        lines.append(
            f"| {c['task']} | {c['config']} | {old['wall_s']:.2f} | {new['wall_s']:.2f} | "
            f"{c['wall_ratio']:.3f} {mark[c['meets']['wall']]} | {_interval_text(c, 'wall')} {c['wall_verdict']} | "
            f"{old['rel_iqr']:.3f} | {new['rel_iqr']:.3f} | {c['rel_iqr_increase']:+.3f} {mark[c['meets']['rel_iqr']]} | "
            f"{_interval_text(c, 'rel_iqr', signed=True)} {c['rel_iqr_verdict']} | "
            f"{c['median_ratio']:.3f} {mark[c['meets']['median']]} | "
            f"{_interval_text(c, 'median')} {c['median_verdict']} | "
            f"{c['paired_median_ratio']:.3f} {_paired_text(c, 'median')} | "
            f"{'-' if load is None else f'{load:.1f}'} | "
            f"{'all' if not met else 'missed: ' + ', '.join(met)} | {', '.join(real_misses(c)) or 'none'} |"
        )  # fmt: skip
    controlled = [c for c in result["cells"] if "null_control" in c]
    if controlled:
        lines += ["", "The null control, the in-process protocol against itself in the same repeats:", "",
                  "| task | config | wall ratio | its 95% CI, the repeats say | rel. IQR change | "
                  "its 95% CI, the repeats say | median ratio | its 95% CI, the repeats say | paired median ratio, its 95% CI | "
                  "real misses |",
                  "|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
        for c in controlled:
            n = c["null_control"]
            lines.append(
                f"| {c['task']} | {c['config']} | {n['wall_ratio']:.3f} | {_interval_text(n, 'wall')} {n['wall_verdict']} | "
                f"{n['rel_iqr_increase']:+.3f} | {_interval_text(n, 'rel_iqr', signed=True)} {n['rel_iqr_verdict']} | "
                f"{n['median_ratio']:.3f} | {_interval_text(n, 'median')} {n['median_verdict']} | "
                f"{n['paired_median_ratio']:.3f} {_paired_text(n, 'median')} | {', '.join(real_misses(n)) or 'none'} |"
            )  # fmt: skip
    return "\n".join(lines)


def plot_protocols(result: dict[str, Any], path: Path) -> None:
    """Each goal's figure per cell with its 95% interval (the declared, unpaired one), isolated against
    in-process and, where the run has it, the null control (in-process against itself) beside it; the
    goal's band shaded. Saved as a PNG at `path`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cells = result["cells"]
    labels = [f"{c['task']} {c['config']}" for c in cells]
    fig, axes = plt.subplots(1, len(GOALS), figsize=(15, 0.32 * len(cells) + 1.8), sharey=True)
    for ax, (goal, figure) in zip(axes, GOALS.items(), strict=True):
        lowest, highest = GOAL_BANDS[goal]
        reference = 0.0 if goal == "rel_iqr" else 1.0
        ax.axvline(reference, color="grey", linewidth=0.8)
        arms = [
            ("isolated / in-process", None, "tab:blue", -0.15),
            ("in-process / in-process", "null_control", "grey", 0.15),
        ]
        for name, part, colour, shift in arms:
            rows = [
                (k, c if part is None else c[part]) for k, c in enumerate(cells) if part is None or part in c
            ]
            if not rows:
                continue
            ys = [k + shift for k, _ in rows]
            xs = [j[figure] for _, j in rows]
            lows = [j[figure] - j[f"{figure}_ci"][0] for _, j in rows]
            highs = [j[f"{figure}_ci"][1] - j[figure] for _, j in rows]
            ax.errorbar(
                xs, ys, xerr=[lows, highs], fmt="o", color=colour, markersize=3.5, linewidth=1, label=name
            )
        shown = ax.get_xlim()  # the data's range; the goal's band within it
        ax.axvspan(max(lowest, shown[0]), min(highest, shown[1]), color="tab:green", alpha=0.12, label="goal")
        ax.set_xlim(shown)
        ax.set_title(
            {"wall": "evaluation wall time ratio", "rel_iqr": "rel. IQR change", "median": "median ratio"}[
                goal
            ]
        )
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(range(len(cells)), labels)
    axes[0].invert_yaxis()
    axes[-1].legend(loc="lower right", fontsize=8)
    fig.suptitle(
        f"timing protocols, {result.get('repeats', '?')} repeats at {result['timing_plan']['trials']} trials on "
        f"{result['target']} ({result['cpus']} CPUs): 95% intervals against #26's goals"
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
