"""One run of the study: build experience, retrieve, run every arm and score it."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from kernelgraph.agent.targets import Target, host_identity
from kernelgraph.agent.tasks import get_task
from kernelgraph.agent.tasks.base import Config
from kernelgraph.bench.landscapes import (
    config_key,
    measure_states,
    read_states,
    states_path,
)
from kernelgraph.bench.study.arms import Unit, arm_run, retrieve_for
from kernelgraph.bench.study.experience import experience_runs, needed_states, record_experience
from kernelgraph.bench.study.landscapes import beside, load_landscape, score
from kernelgraph.bench.study.protocol import EXPERIENCE_BUDGET, RETRIEVAL_MODES, StudyPlan, protocol_of
from kernelgraph.bench.study.simulation import curve
from kernelgraph.bench.study.statistics import landscape_summary, summarize


def run_study(
    knowledge: Any,
    plan: StudyPlan,
    target: Target,
    landscape_dir: Path,
    *,
    namespace: str,
    console: Console | None = None,
    development: bool = False,
    log: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Build experience, retrieve, run every arm and score it; `development` evaluates the dev tasks
    (for tuning) with experience from the evaluation tasks. Returns the report (JSON-ready)."""
    from kernelgraph.service.inprocess import InProcessClient

    started = time.monotonic()
    console = console or Console(stderr=True)
    tasks = {name: get_task(name) for name in (*plan.eval_tasks, *plan.dev_tasks)}
    query_tasks = plan.dev_tasks if development else plan.eval_tasks
    lands = {
        label: {name: load_landscape(landscape_dir, label, task) for name, task in tasks.items()}
        for label in {x for pair in plan.replicates for x in pair}
    }
    # The tasks as their landscapes measured them (the spaces and sizes of that day).
    first = lands[plan.replicates[0][0]]
    tasks = {name: first[name].task for name in tasks}
    exp_tasks = {name: tasks[name] for name in plan.eval_tasks}
    exp_instances = [(t, i) for t in plan.eval_tasks for i in plan.chosen(tasks[t])]
    queries = [(t, i) for t in query_tasks for i in plan.chosen(tasks[t])]

    runs_by_label = {
        searched: experience_runs(lands[searched], exp_instances, target) for searched, _ in plan.replicates
    }
    wanted: dict[str, list[tuple[str, Config]]] = defaultdict(list)
    for runs in runs_by_label.values():
        for name, items in needed_states(runs, queries, tasks).items():
            wanted[name].extend(items)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console) as progress:
        for name, items in wanted.items():
            measure_states(tasks[name], target, items, landscape_dir, progress=progress)
    states = read_states(states_path(landscape_dir))

    report_units: list[dict[str, Any]] = []
    retrievals: list[dict[str, Any]] = []
    for searched, scored_label in plan.replicates:
        client = InProcessClient(knowledge, f"{namespace}-{searched.lower()}")
        console.print(f"[bold]experience[/] searched on {searched}: {len(exp_instances)} instances x "
                      f"{EXPERIENCE_BUDGET} attempts -> namespace {client.namespace}")  # fmt: skip
        parents = record_experience(
            client, runs_by_label[searched], exp_tasks, states, target, f"{namespace}-{searched}"
        )
        knowledge.embed_pending([client.namespace])
        units = [Unit(s, searched, scored_label, t, i) for s in plan.splits for t, i in queries]
        if development:
            units = [Unit("development", searched, scored_label, t, i) for t, i in queries]
        with Progress(*columns, console=console) as progress:
            bar = progress.add_task(f"arms on {searched} -> scored on {scored_label}", total=len(units))
            for unit in units:
                land, scored = lands[searched][unit.task], lands[scored_label][unit.task]
                start = states[(unit.task, unit.instance, config_key(tasks[unit.task].baseline_config))]
                responses = {
                    mode: retrieve_for(client, unit, mode, tasks, start, target, plan.neighbours)
                    for mode in RETRIEVAL_MODES
                    if any(a.mode is mode for a in plan.arms)
                }
                for mode, response in responses.items():
                    entry = {
                        "split": unit.split, "searched": searched, "task": unit.task, "instance": unit.instance,
                        "mode": mode.value, "signature": response.signature,
                        "neighbours": [
                            {"label": parents.get(m, ("?", ""))[0], "config": parents.get(m, ("", "?"))[1],
                             "similarity": s}
                            for m, s in zip(response.neighbour_ids, response.neighbour_scores, strict=False)
                        ],
                        "transforms": [{"transform": r.transform, "score": r.score} for r in response.transforms],
                    }  # fmt: skip
                    retrievals.append(entry)
                    if log:
                        log(entry)
                budget = max(plan.budgets)
                for arm in plan.arms:
                    for seed in plan.seeds:
                        run = arm_run(arm, unit, seed, land, responses, start, target, budget)
                        marks = [beside(scored, unit.instance, k, target) for k in run.trajectory]
                        report_units.append({
                            "split": unit.split, "searched": searched, "scored": scored_label,
                            "task": unit.task, "instance": unit.instance, "arm": arm.name, "seed": seed,
                            "curve": curve(scored, unit.instance, run),
                            "speedups": [score(scored, unit.instance, k).speedup for k in run.trajectory],
                            # after each attempt, beside the library and the roofline (agent/library.py)
                            "speedups_vs_library": [m.speedup_vs_library for m in marks],
                            "roofline_fractions": [m.roofline_fraction for m in marks],
                            "yardsticks": marks[-1].to_json() if marks else None,  # the config reached
                        })  # fmt: skip
                progress.advance(bar)
    summary = summarize(report_units, plan)
    return {
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "host": host_identity(),
        "target": target.name,
        "development": development,
        "protocol": protocol_of(plan),
        "landscapes": landscape_summary(lands, tasks, plan, target),
        "summary": summary,
        "runs": report_units,
        "retrievals": len(retrievals),
        "wall_s": time.monotonic() - started,
    }
