"""`kernelgraph bench study --version 3`: the stages of study v3 (docs/study-v3.md).

- `--stage pilot`: the pilot and the budget plan (saved as results/study-v3-plan-*.json), nothing more;
- `--stage development`: the plan (the pilot first, unless a plan is saved), every planned landscape
  measured (resumable, study/plan_measurement.py), then on the development set the learned key's fit
  and the room report;
- `--stage evaluation`: the arms on the evaluation set and the next-target experiment, after the freeze;
- `--quick`: tiny planted landscapes, both stages end to end (a check of the code, never evidence).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from rich.console import Console

from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.reports import save_report
from kernelgraph.bench.study import measurement, plan_measurement, planner, run3
from kernelgraph.bench.study.learned import fit_learned_key
from kernelgraph.bench.study.planted import plant, planted_target
from kernelgraph.bench.study.protocol_v3 import ARMS, LABELS, V3Settings
from kernelgraph.bench.study.targets import StudyTarget, study_targets

PLAN = "study-v3-plan"
QUICK_ARMS = ("memoryless", "bandit-off", "label", "counters", "learned", "global")
QUICK = V3Settings(
    eval_tasks=("reduction",), dev_tasks=("layernorm",),
    targets=(("cpu-native", 2), ("cpu-native", 1), ("cpu-x86-64-v2", 2), ("cpu-x86-64-v2", 1)),
    budgets=(4,), primary_k=4, seeds=(0, 1), neighbours=5, neighbour_choices=(3, 5),
    arms=tuple(a for a in ARMS if a.name in QUICK_ARMS), budget_minutes=1.0, next_target_budget=8,
    replicates=(("A", "B"),),
)  # fmt: skip


def settings_of(plan: dict[str, Any], base: V3Settings) -> V3Settings:
    return V3Settings(
        **{**base.__dict__, "eval_tasks": tuple(plan["eval_tasks"]), "dev_tasks": tuple(plan["dev_tasks"])}
    )


def _targets(settings: V3Settings, names: list[str] | None, *, quick: bool) -> list[StudyTarget]:
    found = study_targets(settings.targets, measure=not quick)
    if quick:
        found = [planted_target(t) for t in found]
    return [t for t in found if names is None or t.name in names]


def pilot_and_plan(settings: V3Settings, results: Path, say: Callable[[str], None]) -> dict[str, Any]:
    targets = study_targets(settings.targets)
    tasks = {n: get_task(n) for n in (*settings.dev_tasks, *settings.eval_tasks)}
    available = [t for t in targets if t.available]
    pilot = planner.run_pilot(list(tasks.values()), available, measurement.timing_evaluator(),
                              measurement.counter_evaluator(), say=say, saved=results / "study-v3-pilot.jsonl")  # fmt: skip
    plan = planner.plan_budget(
        pilot, tasks, settings.eval_tasks, settings.dev_tasks, targets, settings.budget_minutes
    )
    path = save_report(plan, results, PLAN)
    for line in planner.plan_lines(plan):
        say(line)
    say(f"plan saved to {path}")
    return plan


def run_v3(
    knowledge: Any, *, stage: str, quick: bool, landscape_dir: Path, results: Path, namespace: str,
    console: Console,
) -> dict[str, Any]:  # fmt: skip
    started = time.monotonic()
    say = console.print
    settings = QUICK if quick else V3Settings()
    if quick:
        landscape_dir = results / "study-v3-quick-landscapes"
        targets = _targets(settings, None, quick=True)
        tasks = {n: get_task(n) for n in (*settings.dev_tasks, *settings.eval_tasks)}
        plant(landscape_dir, list(tasks.values()), targets)
        plan_measurement.write_summary(landscape_dir)
        pilot = planner.Pilot({(n, t.name): 0.05 for n in tasks for t in targets}, {n: 0.1 for n in tasks})
        plan = planner.plan_budget(
            pilot, tasks, settings.eval_tasks, settings.dev_tasks, targets, settings.budget_minutes
        )
    else:
        latest = results / f"{PLAN}-latest.json"
        if stage == "pilot" or not latest.exists():
            plan = pilot_and_plan(settings, results, say)
            if stage == "pilot":
                return {"stage": "pilot", "plan": plan, "wall_s": time.monotonic() - started}
        else:
            plan = json.loads(latest.read_text())
        settings = settings_of(plan, settings)
        if stage == "development":
            targets = _targets(settings, plan["targets"], quick=False)
            plan_measurement.measure_plan(plan, targets, landscape_dir, say=say, console=console)
        else:  # the evaluation reads the development set's decisions: k, and whether any workload has room
            development = results / "study-v3-development-latest.json"
            if not development.exists():
                raise FileNotFoundError(
                    f"no {development}: run `bench study --version 3 --stage development` first"
                )
            decided = json.loads(development.read_text())
            # Room does not enter the next-target experiment: it retrieves by label, all of a target's states.
            if stage == "next-target":
                return next_target_stage(
                    knowledge, settings, plan, landscape_dir, results, namespace, started
                )
            if not decided["room"]["any_room"]:
                say("no workload has room on the development set: v3 runs no evaluation (docs/study-v3.md)")
                return {
                    "stage": stage,
                    "evaluated": False,
                    "room": decided["room"],
                    "wall_s": time.monotonic() - started,
                }
            settings = replace(settings, neighbours=decided["neighbours"]["chosen"])
        targets = _targets(settings, plan["targets"], quick=False)
    primary = targets[0]
    tasks = {n: get_task(n) for n in (*settings.dev_tasks, *settings.eval_tasks)}
    lands = run3.load_lands(landscape_dir, [t.name for t in targets], tasks, LABELS, settings.eval_tasks)
    tasks = {n: lands[primary.name]["A"][n].task for n in tasks}  # as the landscapes measured them
    states = run3.load_states(landscape_dir, primary)
    retrievals: list[dict[str, Any]] = []
    log_path = results / f"study-v3{'-quick' if quick else ''}-retrievals-{namespace}.jsonl"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("w") as log_file:

        def log(entry: dict[str, Any]) -> None:
            retrievals.append(
                {"arm": entry["arm"], "step": entry["step"], "states": len(entry["neighbours"])}
            )
            log_file.write(json.dumps(entry) + "\n")

        labelled = run3.labelled_dev_states(settings, tasks, lands, states, primary)
        learned = fit_learned_key(labelled, settings.eval_tasks)
        say(
            f"learned key on {len(labelled)} development states: {dict(zip(learned.dimensions, learned.weights, strict=True))}"
        )
        report: dict[str, Any] = {"version": 3, "quick": quick, "stage": stage, "protocol": settings.to_json(),
                                  "plan": plan, "learned_key": learned.to_json()}  # fmt: skip
        if quick or stage == "development":
            # The development set's experience is in this graph too: its label arm retrieves its other
            # instances, and the ceiling may pick one of them.
            dev_exp = run3.Experiment(knowledge, f"{namespace}-dev", settings, tasks, lands, states, primary, log,
                                      (*settings.dev_tasks, *settings.eval_tasks))  # fmt: skip
            report["neighbours"] = run3.choose_neighbours(
                dev_exp, settings, lands, learned, settings.neighbour_choices
            )
            say(
                f"development set chooses k = {report['neighbours']['chosen']} ({report['neighbours']['fraction_by_k']})"
            )
            dev_exp.settings = replace(
                settings, neighbours=report["neighbours"]["chosen"]
            )  # the room at the k chosen
            report["room"] = run3.room_report(dev_exp, dev_exp.settings, lands, learned)
            for name, w in report["room"]["workloads"].items():
                say(f"room {name}: label {w['label']:.3f}, ceiling {w['ceiling']:.3f}, denoised oracle "
                    f"{w['denoised_oracle']:.3f}: room {w['room']:+.3f} ({'has room' if w['has_room'] else 'no room'})")  # fmt: skip
        if quick or stage == "evaluation":
            splits = ("instance",) if quick else ("instance", "family")
            if quick:
                settings = replace(settings, neighbours=report["neighbours"]["chosen"])
            exp = run3.Experiment(
                knowledge, namespace, settings, tasks, lands, states, primary, log, settings.eval_tasks
            )
            evaluated = run3.evaluation(exp, settings, lands, learned, splits)
            report["protocol"] = settings.to_json()  # as the evaluation ran it (k as chosen)
            report["summary"] = evaluated["summary"]
            report["summary_vs_mean"] = evaluated["summary_vs_mean"]
            report["success"] = evaluated["success"]
            report["next_target"] = run3.next_target(
                knowledge, f"{namespace}-next", settings, tasks, lands, targets, log
            )
            run3.plot_next_target(
                report["next_target"], results / f"study-v3{'-quick' if quick else ''}-next-target.png"
            )
    report["retrievals"] = len(retrievals)
    report["evidence_states"] = evidence_volume(retrievals)
    report["retrieval_log"] = str(log_path)
    report["wall_s"] = time.monotonic() - started
    report["path"] = str(save_report(report, results, "study-v3-quick" if quick else f"study-v3-{stage}"))
    return report


def next_target_stage(
    knowledge: Any, settings: V3Settings, plan: dict[str, Any], landscape_dir: Path, results: Path,
    namespace: str, started: float,
) -> dict[str, Any]:  # fmt: skip
    """The next-target experiment alone, on the stored landscapes of the evaluation tasks at every
    planned target (docs/study-v3.md, "Amendment: the next-target experiment runs alone")."""
    targets = _targets(settings, plan["targets"], quick=False)
    tasks = {n: get_task(n) for n in settings.eval_tasks}
    lands = run3.load_lands(landscape_dir, [t.name for t in targets], tasks, LABELS, settings.eval_tasks)
    tasks = {n: lands[targets[0].name]["A"][n].task for n in tasks}  # as the landscapes measured them
    retrievals: list[dict[str, Any]] = []
    log_path = results / f"study-v3-next-target-retrievals-{namespace}.jsonl"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("w") as log_file:

        def log(entry: dict[str, Any]) -> None:
            retrievals.append(
                {"arm": entry["arm"], "step": entry["step"], "states": len(entry["neighbours"])}
            )
            log_file.write(json.dumps(entry) + "\n")

        result = run3.next_target(knowledge, f"{namespace}-next", settings, tasks, lands, targets, log)
    run3.plot_next_target(result, results / "study-v3-next-target.png")
    report: dict[str, Any] = {
        "version": 3, "quick": False, "stage": "next-target", "protocol": settings.to_json(), "plan": plan,
        "next_target": result, "retrievals": len(retrievals), "evidence_states": evidence_volume(retrievals),
        "retrieval_log": str(log_path), "wall_s": time.monotonic() - started,
    }  # fmt: skip
    report["path"] = str(save_report(report, results, "study-v3-next-target"))
    return report


def evidence_volume(retrievals: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per arm, the evidence states its retrievals got (k at most: fewer where the pool is smaller; the
    counters arm's include the development set's choice of k, which tries every candidate k)."""
    by_arm: dict[str, list[int]] = {}
    for r in retrievals:
        by_arm.setdefault(r["arm"], []).append(r["states"])
    return {arm: {"retrievals": len(n), "mean": sum(n) / len(n), "min": min(n), "max": max(n)}
            for arm, n in sorted(by_arm.items())}  # fmt: skip
