"""The studies' commands: `kernelgraph bench ablation` (the held-out study), `kernelgraph bench study`
(the thesis study on measured landscapes) and `kernelgraph bench interference` (memory as it grows).
Their runs live in kernelgraph/bench/ (ablation.py, the study/ package, interference.py)."""

from __future__ import annotations

import typer


def ablation(
    budget: int | None = typer.Option(
        None,
        "--budget",
        min=1,
        max=64,
        help="K: attempts per arm, memoryless also runs 4K (default 6; 3 with --quick)",
    ),
    seeds: int | None = typer.Option(
        None, "--seeds", min=1, max=10, help="seeds per arm and task (default 3; 2 with --quick)"
    ),
    quick: bool = typer.Option(
        False, "--quick", help="3 tasks, K=3, 2 seeds, no transfer part (under 5 minutes)"
    ),
    target: str = typer.Option(
        "cpu-x86-64-v2", "--target", help="target the held-out tasks are optimized on"
    ),
    transfer_from: str = typer.Option(
        "cpu-x86-64-v4", "--transfer-from", help="target of the transfer experience ('' = skip)"
    ),
    tasks: str = typer.Option("", "--tasks", help="comma-separated tasks (default: all CPU tasks)"),
    as_json: bool = typer.Option(False, "--json", help="print one JSON object (progress goes to stderr)"),
    results_dir: str = typer.Option("results", "--results-dir", help="where the JSON report is saved"),
    docs: bool = typer.Option(
        False, "--docs", help="also write docs/ablation-v1.md and docs/img/ablation.png"
    ),
) -> None:
    """Matched-compute ablation: experience@K against memoryless@K and @4K, text@K and hybrid@K, held out by family."""
    import json
    import shlex
    import sys
    from pathlib import Path

    from rich.console import Console

    from kernelgraph.agent.targets import get_target
    from kernelgraph.agent.tasks import all_tasks, get_task
    from kernelgraph.bench import ablation as study
    from kernelgraph.bench.reports import save_report
    from kernelgraph.cli.graph import cli_errors, open_store
    from kernelgraph.service.embeddings import MiniLMEmbedder
    from kernelgraph.service.knowledge import KnowledgeService

    budget = budget or (3 if quick else 6)
    seeds = seeds or (2 if quick else 3)
    if quick:
        transfer_from = ""
    chosen = [get_task(t) for t in tasks.split(",") if t] or (
        [get_task(t) for t in study.QUICK_TASKS] if quick else all_tasks("c")
    )
    console = Console(stderr=as_json)
    command = "kernelgraph bench ablation " + " ".join(shlex.quote(a) for a in sys.argv[3:])
    with open_store() as store, cli_errors():
        report = study.run_ablation(
            KnowledgeService(store, MiniLMEmbedder()), target=get_target(target), budget=budget, seeds=seeds,
            tasks=chosen, transfer_source=get_target(transfer_from) if transfer_from else None,
            console=console, command=command,
        )  # fmt: skip
    path = save_report(report, Path(results_dir), "ablation")
    if docs:
        study.plot(
            report["ablation"], Path("docs/img/ablation.png"), f"Held-out tasks on {target}, K={budget}"
        )
        Path("docs/ablation-v1.md").write_text(study.results_markdown(report, command, "img/ablation.png"))
    if as_json:
        print(
            json.dumps(
                {k: report["ablation"][k] for k in ("budget", "seeds", "arms")} | {"goals": report["goals"]}
            )
        )
        return
    from rich.table import Table

    table = Table("arm", "attempts", "geomean speedup", "seed spread", "attempts to 90%", title="Ablation")
    for name, arm in report["ablation"]["arms"].items():
        spread = arm["seed_spread"]
        reach = f"{arm['attempts_to_90pct']:.1f}" if arm["attempts_to_90pct"] is not None else "never"
        table.add_row(name, str(arm["budget"]), f"{arm['geomean_speedup']:.2f}x",
                      f"{spread['min']:.2f}-{spread['max']:.2f}x", reach)  # fmt: skip
    console.print(table)
    console.print(
        f"report saved to {path} ({report['wall_s']:.0f} s, {report['measured_variants']} variants measured)"
    )


def study(
    quick: bool = typer.Option(
        False, "--quick", help="2 tasks, K=4, 3 seeds, instances held out only (a check, not evidence)"
    ),
    development: bool = typer.Option(
        False, "--development", help="evaluate the development set (layernorm) for each k to choose from"
    ),
    neighbours: int | None = typer.Option(
        None,
        "--neighbours",
        min=1,
        max=200,
        help="k of counters/text/hybrid retrieval (default: the protocol's)",
    ),
    target: str = typer.Option(
        "cpu-x86-64-v2", "--target", help="the target the landscapes were measured on"
    ),
    landscapes: str = typer.Option(
        "results/landscapes", "--landscapes", help="measured landscapes and states"
    ),
    as_json: bool = typer.Option(False, "--json", help="print one JSON summary (progress goes to stderr)"),
    results_dir: str = typer.Option("results", "--results-dir", help="where reports and logs are saved"),
    docs: bool = typer.Option(False, "--docs", help="write docs/study-results.md and its plots"),
    version: int = typer.Option(2, "--version", min=2, max=3, help="2: study v2 (docs/results.md); 3: v3"),
    stage: str = typer.Option(
        "development",
        "--stage",
        help="v3 only: pilot (plan only), development (measure + room report), evaluation, or next-target "
        "(the next-target experiment alone)",
    ),
) -> None:
    """The thesis study v2 on measured landscapes (protocol: docs/results.md); `--version 3`: study
    v3 (protocol draft: docs/study-v3.md)."""
    if version == 3:
        study_v3(quick=quick, stage=stage, landscapes=landscapes, results_dir=results_dir, as_json=as_json)
        return
    import gzip
    import json
    import shlex
    import sys
    from pathlib import Path

    from rich.console import Console

    from kernelgraph.agent.targets import get_target
    from kernelgraph.bench.reports import save_report, timestamp
    from kernelgraph.bench.study import mechanism as study_mechanism
    from kernelgraph.bench.study import protocol
    from kernelgraph.bench.study import report as study_report
    from kernelgraph.bench.study import run as study_run
    from kernelgraph.cli.graph import cli_errors, open_store
    from kernelgraph.service.embeddings import MiniLMEmbedder
    from kernelgraph.service.knowledge import KnowledgeService

    plan = protocol.StudyPlan(neighbours=neighbours or protocol.NEIGHBOURS)
    name = "study"
    if quick:
        plan = protocol.StudyPlan(
            eval_tasks=protocol.QUICK_TASKS, dev_tasks=(), budgets=(4,), seeds=(0, 1, 2), splits=("instance",),
            replicates=protocol.REPLICATES[:1], neighbours=plan.neighbours,
        )  # fmt: skip
        name = "study-quick"
    console = Console(stderr=as_json)
    command = "kernelgraph bench study " + " ".join(shlex.quote(a) for a in sys.argv[3:])
    stamp = timestamp()
    out = Path(results_dir)
    out.mkdir(parents=True, exist_ok=True)
    log_path = out / f"{name}-retrievals-{stamp}.jsonl"
    with open_store() as store, cli_errors(), log_path.open("w") as log:
        knowledge = KnowledgeService(store, MiniLMEmbedder())

        def write(entry: dict[str, object]) -> None:
            log.write(json.dumps(entry) + "\n")

        if development:
            dev: dict[str, object] = {}
            for k in protocol.NEIGHBOUR_CHOICES:
                report = study_run.run_study(
                    knowledge, protocol.StudyPlan(neighbours=k, splits=("development",)), get_target(target),
                    Path(landscapes), namespace=f"study-dev-{stamp.lower()}-k{k}", console=console,
                    development=True, log=write,
                )  # fmt: skip
                dev[str(k)] = report["summary"]["development"]["arms"]["counters"]["fraction_of_oracle"][
                    str(protocol.PRIMARY_K)
                ]
                console.print(f"k={k}: counters@{protocol.PRIMARY_K} reaches {dev[str(k)]:.3f} of the oracle")
            chosen = protocol.choose_neighbours(dev)
            path = save_report(
                {"command": command, "fraction_by_k": dev, "chosen_k": chosen}, out, "study-dev"
            )
            console.print(f"development set chooses k = {chosen} (saved to {path})")
            return
        report = study_run.run_study(
            knowledge, plan, get_target(target), Path(landscapes), namespace=f"{name}-{stamp.lower()}",
            console=console, log=write,
        )  # fmt: skip
        if quick:  # a test of the mechanism, not evidence for the claim
            report["mechanism"] = study_mechanism.mechanism(
                knowledge, get_target(target), Path(landscapes), namespace=f"{name}-{stamp.lower()}-mechanism"
            )
    runs = report.pop("runs")
    with gzip.open(out / f"{name}-runs-{stamp}.jsonl.gz", "wt") as f:
        for row in runs:
            f.write(json.dumps(row) + "\n")
    report["command"] = command
    report["retrieval_log"] = str(log_path)
    path = save_report(report, out, name)
    if docs:
        images = {"curves": "img/study-curves.png", "heatmap": "img/study-heatmap.png"}
        study_report.plot_curves(report, Path("docs") / images["curves"])
        study_report.plot_heatmap(report, Path("docs") / images["heatmap"])
        Path("docs/study-results.md").write_text(study_report.results_markdown(report, command, images))
    headline = {
        split: {
            arm: data["arms"][arm]["fraction_of_oracle"] for arm in data["arms"]
        } for split, data in report["summary"].items()
    }  # fmt: skip
    vs_library = {
        split: {arm: data["arms"][arm]["geomean_speedup_vs_library"] for arm in data["arms"]}
        for split, data in report["summary"].items()
    }
    if as_json:
        summary = {"saved": str(path), "fraction_of_oracle": headline, "geomean_speedup_vs_library": vs_library,
                   "mechanism": report.get("mechanism")}  # fmt: skip
        print(json.dumps(summary))
        return
    from rich.table import Table

    for split, data in report["summary"].items():
        table = Table(
            "arm",
            *(f"@{k}" for k in plan.budgets),
            *(f"vs library @{k}" for k in plan.budgets),
            title=f"fraction of the oracle (and geomean speedup over the library), held out: "
            f"{protocol.SPLIT_TITLES.get(split, split)}",
        )
        for arm, values in headline[split].items():
            over = vs_library[split][arm]
            table.add_row(arm, *(f"{values[str(k)]:.3f}" for k in plan.budgets),
                          *("-" if over[str(k)] is None else f"{over[str(k)]:.2f}x" for k in plan.budgets))  # fmt: skip
        console.print(table)
        primary = plan.budgets[-1] if quick else protocol.PRIMARY_K
        for comparison, c in data["comparisons"].items():
            if comparison.startswith(f"counters@{primary} "):
                console.print(
                    f"{comparison}: {c['ratio']:.3f} [{c['ci'][0]:.3f}, {c['ci'][1]:.3f}] p={c['p_one_sided']:.3g}"
                )
    console.print(f"report saved to {path} ({report['wall_s']:.0f} s); retrievals logged to {log_path}")


def study_v3(*, quick: bool, stage: str, landscapes: str, results_dir: str, as_json: bool) -> None:
    import json
    from pathlib import Path

    from rich.console import Console

    from kernelgraph.bench.reports import timestamp
    from kernelgraph.bench.study.command3 import run_v3
    from kernelgraph.bench.study.protocol_v3 import STAGES
    from kernelgraph.bench.study.versions import LandscapeVersionError
    from kernelgraph.cli.graph import cli_errors, fail, open_store
    from kernelgraph.service.embeddings import MiniLMEmbedder
    from kernelgraph.service.knowledge import KnowledgeService

    if stage not in STAGES:
        raise fail(f"--stage: {', '.join(STAGES)} (got {stage!r})")
    if quick and stage == "next-target":
        raise fail(
            "--stage next-target runs on measured landscapes; --quick runs it as part of its end-to-end check"
        )
    console = Console(stderr=as_json)
    directory = Path(landscapes if landscapes != "results/landscapes" else "results/study-v3/landscapes")
    if stage == "pilot" and not quick:  # measures and plans only: no graph needed
        from kernelgraph.bench.study.command3 import pilot_and_plan
        from kernelgraph.bench.study.protocol_v3 import V3Settings

        with cli_errors():
            plan = pilot_and_plan(V3Settings(), Path(results_dir), console.print)
        if as_json:
            print(json.dumps(plan))
        return
    try:
        with open_store() as store, cli_errors():
            report = run_v3(
                KnowledgeService(store, MiniLMEmbedder()), stage=stage, quick=quick, landscape_dir=directory,
                results=Path(results_dir), namespace=f"study-v3-{timestamp().lower()}", console=console,
            )  # fmt: skip
    except LandscapeVersionError as exc:  # a landscape of other versions: the user's to resolve, not a bug
        raise fail(str(exc), code=2) from None
    if as_json:
        keys = (
            "version",
            "stage",
            "plan",
            "learned_key",
            "neighbours",
            "room",
            "next_target",
            "success",
            "evidence_states",
            "retrievals",
            "retrieval_log",
            "wall_s",
            "path",
        )
        print(
            json.dumps(
                {k: report.get(k) for k in keys}
                | {
                    "summary": _fractions(report.get("summary")),
                    "summary_vs_mean": _fractions(report.get("summary_vs_mean")),
                }
            )
        )
        return
    console.print(f"report saved to {report['path']} ({report['wall_s']:.0f} s)")


def _fractions(summary: dict[str, object] | None) -> dict[str, object] | None:
    if not summary:
        return None
    return {
        split: {arm: data["fraction_of_oracle"] for arm, data in values["arms"].items()}  # type: ignore[index]
        for split, values in summary.items()
    }


def interference(
    scales: str = typer.Option(
        "1,10,100", "--scales", help="graph sizes, in multiples of the core's attempts"
    ),
    runs_per_task: int = typer.Option(8, "--runs-per-task", min=2, max=100, help="core runs per task (1x)"),
    queries_per_task: int = typer.Option(
        5, "--queries-per-task", min=1, max=50, help="query states per task"
    ),
    repeats: int = typer.Option(3, "--repeats", min=1, max=20, help="timed passes over the queries"),
    seed: int = typer.Option(11, "--seed", help="seed of the generated graph"),
    no_kernelbench: bool = typer.Option(False, "--no-kernelbench", help="leave KernelBench's timings out"),
    as_json: bool = typer.Option(False, "--json", help="print one JSON object (progress goes to stderr)"),
    results_dir: str = typer.Option("results", "--results-dir", help="where the JSON report is saved"),
) -> None:
    """Interference: retrieval quality, p95 and proposer evidence as the graph grows 1x/10x/100x with
    unrelated experience, as recorded and after `kernelgraph consolidate` (docs/retrieval.md)."""
    import json
    import shlex
    import sys
    from pathlib import Path

    from rich.console import Console

    from kernelgraph.bench import interference as study
    from kernelgraph.bench.reports import save_report
    from kernelgraph.cli.graph import cli_errors, fail, open_store
    from kernelgraph.service.knowledge import KnowledgeService

    try:
        sizes = sorted({int(s) for s in scales.split(",") if s.strip()})
    except ValueError:
        raise fail(f"--scales: comma-separated whole multiples, e.g. 1,10,100 (got {scales!r})") from None
    if not sizes or sizes[0] < 1:
        raise fail(f"--scales: multiples of at least 1 (got {scales!r})")
    console = Console(stderr=True)
    with open_store() as store, cli_errors(), console.status("Interference benchmark...") as status:
        report = study.run_interference(
            KnowledgeService(store), scales=sizes, runs_per_task=runs_per_task,
            queries_per_task=queries_per_task, repeats=repeats, seed=seed, kernelbench=not no_kernelbench,
            say=lambda text: status.update(text),
        )  # fmt: skip
    report["command"] = "kernelgraph bench interference " + " ".join(shlex.quote(a) for a in sys.argv[3:])
    path = save_report(report, Path(results_dir), "interference")
    if as_json:
        print(study.to_json(report))
        return
    for line in study.summary_lines(report):
        console.print(line, highlight=False, soft_wrap=True)
    console.print(f"goals: {json.dumps(report['goals'])}", highlight=False, soft_wrap=True)
    console.print(f"report saved to {path} ({report['wall_s']:.0f} s)")


def register(bench_app: typer.Typer) -> None:
    bench_app.command("ablation")(ablation)
    bench_app.command("study")(study)
    bench_app.command("interference")(interference)
