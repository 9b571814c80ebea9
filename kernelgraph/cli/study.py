"""Commands that wire the agent to the service in one process: `kernelgraph demo` (the main job),
`kernelgraph bench ablation` (the held-out study), `kernelgraph bench study` (the thesis study on
measured landscapes) and `kernelgraph bench interference` (memory as it grows): the commands that
wire the agent to the service in one process. Their runs live in kernelgraph/bench/."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from kernelgraph.cli.agent import (
    agent_errors,
    connect_or_exit,
    console,
    make_backend,
    result_table,
)
from kernelgraph.cli.graph import fail

if TYPE_CHECKING:
    from kernelgraph.agent.backends.base import Backend
    from kernelgraph.agent.loop import OptimizeResult
    from kernelgraph.agent.proposers.base import Proposer
    from kernelgraph.agent.targets import Target
    from kernelgraph.agent.tasks.base import Task
    from kernelgraph.core.settings import Settings

# The demo: experience from these tasks (seen), then a task it has not seen, same budget both ways.
# Seen tasks span several access-pattern families; matmul's family (dense-matmul) is not among them.
DEMO_SEEN = ("stencil2d", "transpose", "matvec", "elementwise_chain", "reduction", "softmax")
DEMO_SEEDS = 3  # one run per arm says little: each arm runs with 3 seeds on the unseen task
DEMO_UNSEEN = "matmul"
DEMO_NAMESPACE = "demo"
KERNELBENCH_NAMESPACE = "kernelbench"  # the published timings the demo ends with


def demo_cmd(
    budget: Annotated[
        int | None,
        typer.Option("--budget", min=1, max=100, help="Attempts per run (default 8; with --agents 6)."),
    ] = None,
    seen_budget: Annotated[
        int, typer.Option("--seen-budget", min=1, max=100, help="Attempts per seen task.")
    ] = 10,
    target_name: Annotated[str, typer.Option("--target", help="Target to optimize for.")] = "cpu-x86-64-v3",
    seed: Annotated[int, typer.Option("--seed", help="Seed of every proposer.")] = 0,
    agents: Annotated[
        int,
        typer.Option(
            "--agents",
            min=0,
            max=8,
            help="Instead: N agent processes on different tasks share the HTTP service at once, then run alone (0: off).",
        ),
    ] = 0,
    tasks: Annotated[
        str,
        typer.Option(
            "--tasks", help="With --agents: one task per agent, comma-separated (task or task@instance)."
        ),
    ] = "",
    keep: Annotated[
        bool, typer.Option("--keep", help="With --agents: keep the alone namespaces too.")
    ] = False,
    results_dir: Annotated[
        str, typer.Option("--results-dir", help="With --agents: where the JSON report is saved.")
    ] = "results",
    namespace: Annotated[
        str,
        typer.Option(
            "--namespace", "-n", help="Namespace the demo's experience goes to (not with --agents)."
        ),
    ] = DEMO_NAMESPACE,
) -> None:
    """Learn from a few tasks, then optimize an unseen one with experience and without, side by side.

    With --agents N: N agents on related tasks optimize at once against the HTTP service, sharing one
    namespace, shown live as they use each other's attempts; then each runs alone, for comparison."""
    from kernelgraph.bench.stats import geomean_of_all  # numpy: not at the CLI's start-up

    if agents:
        _agents_demo(agents, budget, seed, target_name, tasks, keep, results_dir)
        return
    budget = budget or 8
    from kernelgraph.agent.loop import optimize
    from kernelgraph.agent.proposers.experience import ExperienceProposer
    from kernelgraph.agent.proposers.memoryless import MemorylessProposer
    from kernelgraph.agent.targets import get_target
    from kernelgraph.agent.tasks import get_task
    from kernelgraph.core.settings import get_settings
    from kernelgraph.service.neo4j_local import LocalNeo4j

    started = time.monotonic()
    from kernelgraph.service.auth import check_namespace

    settings = get_settings().model_copy(
        update={"namespace": check_namespace(namespace, field="--namespace")}
    )
    target = get_target(target_name)
    if not target.available:
        target = get_target("cpu-x86-64-v2")
    backend = make_backend("c")
    client = connect_or_exit(settings)
    unseen = get_task(DEMO_UNSEEN)
    with agent_errors(client):
        console.rule(f"[bold]1. Building experience on {', '.join(DEMO_SEEN)} ({target.name})")
        learned = []
        for i, name in enumerate(DEMO_SEEN):
            proposer = ExperienceProposer(client, seed=seed + i, exclude_task=DEMO_UNSEEN)
            learned.append(
                optimize(
                    get_task(name), backend, target, proposer, client, seen_budget, seed, console=console
                )
            )
        console.print(result_table(learned, "Experience gathered"))
        console.rule(
            f"[bold]2. {DEMO_UNSEEN}, never seen: experience vs memoryless, {budget} attempts, {DEMO_SEEDS} seeds each"
        )
        runs: dict[str, list[OptimizeResult]] = {"experience": [], "memoryless": []}
        for s in range(seed, seed + DEMO_SEEDS):
            # exclude_task keeps the comparison honest even when earlier demos already recorded matmul.
            arms: dict[str, Proposer] = {
                "experience": ExperienceProposer(client, seed=s, exclude_task=DEMO_UNSEEN),
                "memoryless": MemorylessProposer(s),
            }
            for arm, arm_proposer in arms.items():
                console.print(f"[bold]{arm}[/], seed {s}")
                runs[arm].append(
                    optimize(unseen, backend, target, arm_proposer, client, budget, s, console=console)
                )
    console.print(_library_table(runs, budget, seed))
    best_run = min((r for rs in runs.values() for r in rs), key=lambda r: r.best_ns)
    geomeans = {arm: geomean_of_all([r.speedup for r in rs]) for arm, rs in runs.items()}
    versus = {arm: geomean_of_all([_vs_library(r) for r in rs]) for arm, rs in runs.items()}
    console.print(
        "   ".join(
            f"{arm}: [bold]{_times(versus[arm])} the library[/bold] ({_times(geomeans[arm])} naive)"
            for arm in runs
        )
        + f"   (demo took {time.monotonic() - started:.0f} s)"
    )
    _fast_p_line([*learned, *(max(rs, key=lambda r: _vs_library(r) or 0.0) for rs in runs.values())])
    _versus_library(unseen, best_run, target, backend)
    _study_headline()
    _transfer_finding(settings)
    browser = LocalNeo4j(settings).browser_url if settings.uses_local_server else settings.effective_neo4j_uri
    console.rule("[bold]4. Look at what it learned")
    console.print(
        f"Neo4j Browser: {browser}  (user {settings.neo4j_user}; password in {settings.neo4j_home / 'password'})"
    )
    console.print("Which transforms worked, by access pattern, in this demo:")
    console.print(
        f"MATCH (a:Attempt {{namespace: '{namespace}'}})-[:FROM]->(:Kernel)-[:EXHIBITS]->(p:AccessPattern)\n"
        "RETURN p.name AS pattern, a.transform AS transform, count(*) AS attempts,\n"
        "       sum(CASE a.outcome WHEN 'kept' THEN 1 ELSE 0 END) AS kept, max(a.speedup) AS best_speedup\n"
        "ORDER BY pattern, kept DESC;",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )


def _vs_library(result: OptimizeResult) -> float | None:
    marks = result.best_yardsticks
    return marks.speedup_vs_library if marks is not None else None


def _times(value: float | None) -> str:
    return f"{value:.2f}x" if value is not None else "n/a x"


def _library_table(runs: dict[str, list[OptimizeResult]], budget: int, seed: int) -> Table:
    """The unseen task's runs, the library comparison first (docs/yardsticks.md)."""
    from kernelgraph.bench.stats import geomean_of_all  # numpy: not at the CLI's start-up

    first = next(r for rs in runs.values() for r in rs)
    lib = first.library
    what = f"{lib.label}: {lib.call}" if lib is not None and lib.median_ns else "no library time"
    table = Table(
        title=f"{DEMO_UNSEEN} (unseen) at {budget} attempts: speedup over the library ({what}) and over naive"
    )
    table.add_column("seed")
    for arm in runs:
        table.add_column(f"{arm} vs library", justify="right")
        table.add_column("vs naive", justify="right")
        table.add_column("roofline", justify="right")
    for i in range(len(next(iter(runs.values())))):
        cells = []
        for arm in runs:
            r = runs[arm][i]
            marks = r.best_yardsticks
            cells += [f"[bold]{_times(_vs_library(r))}[/]", f"{r.speedup:.2f}x",
                      f"{100 * marks.roofline_fraction:.1f}%" if marks and marks.roofline_fraction else "-"]  # fmt: skip
        table.add_row(str(seed + i), *cells)
    geo: list[str] = []
    for rs in runs.values():
        geo += [
            f"[bold]{_times(geomean_of_all([_vs_library(r) for r in rs]))}[/]",
            f"{_times(geomean_of_all([r.speedup for r in rs]))}",
            "",
        ]
    table.add_row("[bold]geomean[/]", *geo)
    return table


def _fast_p_line(results: list[OptimizeResult]) -> None:
    """fast_p over the demo's tasks: the share whose best kernel is correct and beats the library."""
    from kernelgraph.agent.library import fast_p

    speedups = [_vs_library(r) for r in results]
    console.print(
        f"fast_p over the demo's {len(results)} tasks (best kernel each, beside the library at the same threads): "
        + ", ".join(f"fast_{p:g} = {fast_p(speedups, p):.2f}" for p in (0.0, 1.0, 2.0)),
        highlight=False,
    )


def _agents_demo(
    agents: int, budget: int | None, seed: int, target: str, tasks: str, keep: bool, results_dir: str
) -> None:
    """`kernelgraph demo --agents N` (kernelgraph/bench/swarm.py)."""
    from kernelgraph.bench.reports import save_report
    from kernelgraph.bench.swarm import DEFAULT_BUDGET, SwarmError, SwarmOptions, render, run_swarm
    from kernelgraph.core.errors import KernelGraphError
    from kernelgraph.core.settings import get_settings

    options = SwarmOptions(
        agents=agents, budget=budget or DEFAULT_BUDGET, seed=seed, target=target,
        tasks=tuple(t.strip() for t in tasks.split(",") if t.strip()), keep=keep,
    )  # fmt: skip
    try:
        report = run_swarm(get_settings(), options, console)
    except SwarmError as exc:
        raise fail(str(exc)) from None
    except KernelGraphError as exc:
        raise fail(f"experience graph: {exc.message}") from None
    except RuntimeError as exc:  # the service did not start (its log's tail is in the message)
        raise fail(str(exc)) from None
    render(report, console)
    console.print(f"report saved to {save_report(report, Path(results_dir), 'demo-agents')}")


def _versus_library(task: Task, best: OptimizeResult, target: Target, backend: Backend) -> None:
    """The demo's best kernel timed against the library on the same inputs: beaten, or by how far not."""
    from kernelgraph.bench.quality import measure_row

    console.rule(f"[bold]3. The best {task.name} kernel against the library")
    row = measure_row(task, "", best.best_source, target, backend)
    ratio = row.get("vs_library")
    if ratio is None:
        console.print(
            f"the library could not be compared ({row['kernel_outcome']}, library {row['library']})"
        )
        return
    verdict = (
        f"[bold green]beats the library {ratio:.2f}x[/]"
        if ratio > 1
        else f"[bold]is {1 / ratio:.1f}x slower than the library[/]"
    )
    console.print(
        f"best {task.name} kernel ({best.proposer}, {row['shape']}): {row['kernel_ns'] / 1e6:.3f} ms; "
        f"{row['library']}: {row['library_ns'] / 1e6:.3f} ms: it {verdict}, "
        f"{row['roofline_fraction']:.2f} of the roofline (load {row['load_average'][0]}). "
        "`kernelgraph bench quality` measures every task this way (docs/quality.md).",
        highlight=False,
    )


def _study_headline(path: Path = Path("results/study-latest.json")) -> None:
    """The committed thesis study's headline (docs/results.md): measured, not run by the demo."""
    import json

    from kernelgraph.bench.thesis import headline

    console.rule("[bold]The thesis study (committed run, docs/results.md)")
    if not path.exists():
        console.print(f"no study report at {path}: `kernelgraph bench study --docs` runs it")
        return
    for line in headline(json.loads(path.read_text())):
        console.print(line)


def _transfer_finding(settings: Settings) -> None:
    """The demo's last finding, from real hardware: KernelBench's published timings on 9 GPU folders."""
    from kernelgraph.bench.transfer import transfer_finding
    from kernelgraph.service.importers.kernelbench import SHIPPED_TIMINGS, import_timings

    console.rule("[bold]3. Real GPUs: does torch.compile's effect on one GPU predict it on another?")
    client = connect_or_exit(settings.model_copy(update={"namespace": KERNELBENCH_NAMESPACE}))
    importing = console.status("Importing KernelBench's published timings (first run only)...")
    with agent_errors(client), importing as status:
        summary = import_timings(SHIPPED_TIMINGS, client, progress=lambda text: status.update(text))
        status.update("Computing the transfer matrix...")
        matrix = client.transfer_matrix()
    console.print(f"{summary.speedups} eager/compiled pairs on {len(matrix.targets)} GPUs "
                  f"(namespace {KERNELBENCH_NAMESPACE!r}; docs/transfer.md has the full study)")  # fmt: skip
    for line in transfer_finding(matrix):
        console.print(f"  {line}", highlight=False)


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
) -> None:
    """The thesis study v2 on measured landscapes (protocol: docs/results.md)."""
    import gzip
    import json
    import shlex
    import sys
    from pathlib import Path

    from rich.console import Console

    from kernelgraph.agent.targets import get_target
    from kernelgraph.bench import thesis
    from kernelgraph.bench.reports import save_report, timestamp
    from kernelgraph.cli.graph import cli_errors, open_store
    from kernelgraph.service.embeddings import MiniLMEmbedder
    from kernelgraph.service.knowledge import KnowledgeService

    plan = thesis.StudyPlan(neighbours=neighbours or thesis.NEIGHBOURS)
    name = "study"
    if quick:
        plan = thesis.StudyPlan(
            eval_tasks=thesis.QUICK_TASKS, dev_tasks=(), budgets=(4,), seeds=(0, 1, 2), splits=("instance",),
            replicates=thesis.REPLICATES[:1], neighbours=plan.neighbours,
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
            for k in thesis.NEIGHBOUR_CHOICES:
                report = thesis.run_study(
                    knowledge, thesis.StudyPlan(neighbours=k, splits=("development",)), get_target(target),
                    Path(landscapes), namespace=f"study-dev-{stamp.lower()}-k{k}", console=console,
                    development=True, log=write,
                )  # fmt: skip
                dev[str(k)] = report["summary"]["development"]["arms"]["counters"]["fraction_of_oracle"][
                    str(thesis.PRIMARY_K)
                ]
                console.print(f"k={k}: counters@{thesis.PRIMARY_K} reaches {dev[str(k)]:.3f} of the oracle")
            chosen = thesis.choose_neighbours(dev)
            path = save_report(
                {"command": command, "fraction_by_k": dev, "chosen_k": chosen}, out, "study-dev"
            )
            console.print(f"development set chooses k = {chosen} (saved to {path})")
            return
        report = thesis.run_study(
            knowledge, plan, get_target(target), Path(landscapes), namespace=f"{name}-{stamp.lower()}",
            console=console, log=write,
        )  # fmt: skip
        if quick:  # a test of the mechanism, not evidence for the claim
            report["mechanism"] = thesis.mechanism(
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
        thesis.plot_curves(report, Path("docs") / images["curves"])
        thesis.plot_heatmap(report, Path("docs") / images["heatmap"])
        Path("docs/study-results.md").write_text(thesis.results_markdown(report, command, images))
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
            f"{thesis.SPLIT_TITLES.get(split, split)}",
        )
        for arm, values in headline[split].items():
            over = vs_library[split][arm]
            table.add_row(arm, *(f"{values[str(k)]:.3f}" for k in plan.budgets),
                          *("-" if over[str(k)] is None else f"{over[str(k)]:.2f}x" for k in plan.budgets))  # fmt: skip
        console.print(table)
        primary = plan.budgets[-1] if quick else thesis.PRIMARY_K
        for comparison, c in data["comparisons"].items():
            if comparison.startswith(f"counters@{primary} "):
                console.print(
                    f"{comparison}: {c['ratio']:.3f} [{c['ci'][0]:.3f}, {c['ci'][1]:.3f}] p={c['p_one_sided']:.3g}"
                )
    console.print(f"report saved to {path} ({report['wall_s']:.0f} s); retrievals logged to {log_path}")


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


def register(app: typer.Typer, bench_app: typer.Typer) -> None:
    app.command("demo")(demo_cmd)
    bench_app.command("ablation")(ablation)
    bench_app.command("study")(study)
    bench_app.command("interference")(interference)
