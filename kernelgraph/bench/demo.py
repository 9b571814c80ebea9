"""`kernelgraph demo`, the main job: experience from a few tasks, then a task it has not seen, optimized
with that experience and without it at the same budget, each beside the library a user would call; then
the committed study's headline and a finding from real GPUs. kernelgraph/cli/demo.py picks the client,
the backend and the target, and calls these in order."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:
    from kernelgraph.agent.backends.base import Backend
    from kernelgraph.agent.loop import OptimizeResult
    from kernelgraph.agent.proposers.base import Proposer
    from kernelgraph.agent.targets import Target
    from kernelgraph.agent.tasks.base import Task
    from kernelgraph.client import ExperienceClient
    from kernelgraph.core.settings import Settings

# The demo: experience from these tasks (seen), then a task it has not seen, same budget both ways.
# Seen tasks span several access-pattern families; matmul's family (dense-matmul) is not among them.
DEMO_SEEN = ("stencil2d", "transpose", "matvec", "elementwise_chain", "reduction", "softmax")
DEMO_SEEDS = 3  # one run per arm says little: each arm runs with 3 seeds on the unseen task
DEMO_UNSEEN = "matmul"
DEMO_NAMESPACE = "demo"
KERNELBENCH_NAMESPACE = "kernelbench"  # the published timings the demo ends with


console = Console()


def gather_experience(
    client: ExperienceClient, backend: Backend, target: Target, seen_budget: int, seed: int
) -> list[OptimizeResult]:
    """Phase 1: the seen tasks optimized with the experience proposer, every attempt recorded."""
    from kernelgraph.agent.loop import optimize
    from kernelgraph.agent.proposers.experience import ExperienceProposer
    from kernelgraph.agent.tasks import get_task

    console.rule(f"[bold]1. Building experience on {', '.join(DEMO_SEEN)} ({target.name})")
    learned = []
    for i, name in enumerate(DEMO_SEEN):
        proposer = ExperienceProposer(client, seed=seed + i, exclude_task=DEMO_UNSEEN)
        learned.append(
            optimize(get_task(name), backend, target, proposer, client, seen_budget, seed, console=console)
        )
    return learned


def compare_on_unseen(
    client: ExperienceClient, backend: Backend, target: Target, budget: int, seed: int
) -> dict[str, list[OptimizeResult]]:
    """Phase 2: the unseen task, experience against memoryless, DEMO_SEEDS seeds each."""
    from kernelgraph.agent.loop import optimize
    from kernelgraph.agent.proposers.experience import ExperienceProposer
    from kernelgraph.agent.proposers.memoryless import MemorylessProposer
    from kernelgraph.agent.tasks import get_task

    unseen = get_task(DEMO_UNSEEN)
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
    return runs


def summarize(
    learned: list[OptimizeResult],
    runs: dict[str, list[OptimizeResult]],
    budget: int,
    seed: int,
    target: Target,
    backend: Backend,
    started: float,
) -> None:
    """The unseen task's runs beside the library, fast_p over the demo's tasks, and the best kernel timed
    against the library (phase 3)."""
    from kernelgraph.agent.tasks import get_task
    from kernelgraph.bench.stats import geomean_of_all

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
    _versus_library(get_task(DEMO_UNSEEN), best_run, target, backend)


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


def study_headline(path: Path = Path("results/study-latest.json")) -> None:
    """The committed thesis study's headline (docs/results.md): measured, not run by the demo."""
    import json

    from kernelgraph.bench.study.report import headline

    console.rule("[bold]The thesis study (committed run, docs/results.md)")
    if not path.exists():
        console.print(f"no study report at {path}: `kernelgraph bench study --docs` runs it")
        return
    for line in headline(json.loads(path.read_text())):
        console.print(line)


def transfer_finding(client: ExperienceClient) -> None:
    """The demo's last finding, from real hardware: KernelBench's published timings on 9 GPU folders,
    imported through `client` (in the KERNELBENCH_NAMESPACE namespace)."""
    from kernelgraph.bench.transfer import transfer_finding as finding
    from kernelgraph.service.importers.kernelbench import SHIPPED_TIMINGS, import_timings

    console.rule("[bold]3. Real GPUs: does torch.compile's effect on one GPU predict it on another?")
    with console.status("Importing KernelBench's published timings (first run only)...") as status:
        summary = import_timings(SHIPPED_TIMINGS, client, progress=lambda text: status.update(text))
        status.update("Computing the transfer matrix...")
        matrix = client.transfer_matrix()
    console.print(f"{summary.speedups} eager/compiled pairs on {len(matrix.targets)} GPUs "
                  f"(namespace {KERNELBENCH_NAMESPACE!r}; docs/transfer.md has the full study)")  # fmt: skip
    for line in finding(matrix):
        console.print(f"  {line}", highlight=False)


def look_at_it(settings: Settings, namespace: str) -> None:
    """Phase 4: where to look at what the demo learned, and a first query to paste in Neo4j Browser."""
    from kernelgraph.service.neo4j_local import LocalNeo4j

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
