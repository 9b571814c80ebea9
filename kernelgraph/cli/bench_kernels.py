"""The agent's benchmarks: `kernelgraph bench gpu`, `sandbox`, `landscape`, `yardsticks` and `signature`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import typer


def save_and_show(
    report: dict[str, Any],
    results_dir: str,
    name: str,
    render: Callable[[dict[str, Any]], object],
    *,
    as_json: bool = False,
    left_out: str | None = None,
) -> Path:
    """A bench command's closing lines: save `report` under `results_dir` (kernelgraph/bench/reports.py),
    then print it, with `as_json` as one JSON object (less its bulky `left_out` entry) that says where it
    was saved, else as `render` shows it (text or a rich renderable) and where it was saved. Returns
    where it was saved."""
    import json

    from rich.console import Console

    from kernelgraph.bench.reports import save_report

    path = save_report(report, Path(results_dir), name)
    if as_json:
        shown = {k: v for k, v in report.items() if k != left_out}
        typer.echo(json.dumps(shown | {"saved": str(path)}, default=str))
        return path
    shown_as = render(report)
    if isinstance(shown_as, str):
        typer.echo(shown_as)
    else:
        Console().print(shown_as)
    typer.echo(f"saved to {path}")
    return path


def gpu(
    target: str = typer.Option("cuda-sm90", "--target", help="the CUDA target matching the local GPU"),
    tasks: str = typer.Option("softmax,matmul,rmsnorm", "--tasks", help="comma-separated Triton tasks"),
    budget_s: float = typer.Option(300.0, "--budget-s", help="stop starting new tasks past this"),
) -> None:
    """Check the Triton backend end to end on a GPU: compile, correctness, timing (L2 flushed), ncu."""
    from kernelgraph.bench.gpu import run_gpu_bench

    raise typer.Exit(run_gpu_bench(target, [t for t in tasks.split(",") if t], budget_s))


def sandbox(
    task: str = typer.Option(
        "rmsnorm", "--task", help="--compare sandbox: the C task whose baseline is evaluated"
    ),
    tasks: str = typer.Option(
        "", "--tasks", help="--compare protocols: comma-separated C tasks (default: all)"
    ),
    compare: str = typer.Option(
        "protocols", "--compare", help="protocols (old and new timing) or sandbox (on/off)"
    ),
    target: str = typer.Option("cpu-x86-64-v2", "--target", help="the CPU target to build and time for"),
    repeats: int = typer.Option(20, "--repeats", min=1, max=50, help="evaluations per mode (interleaved)"),
    trials: int = typer.Option(
        30,
        "--trials",
        min=4,
        max=200,
        help="--compare protocols: timed trials per evaluation (both protocols)",
    ),
    null_control: bool = typer.Option(
        True,
        "--null-control/--no-null-control",
        help="--compare protocols: a second in-process evaluation in every repeat, judged against the "
        "first as the isolated one is (what the host lets the repeats resolve; 1.5x the time)",
    ),
    as_json: bool = typer.Option(False, "--json", help="print one JSON object (progress goes to stderr)"),
    results_dir: str = typer.Option("results", "--results-dir", help="where the JSON results are saved"),
    rejudge: str = typer.Option(
        "",
        "--rejudge",
        help="a saved sandbox-protocols report: judge its goals again from its runs (each goal's 95% "
        "interval and what the repeats say) and print docs/sandbox.md's table; evaluates nothing",
    ),
    plot: str = typer.Option("", "--plot", help="with --rejudge: also draw its intervals to this PNG"),
) -> None:
    """What the evaluator's protection costs: the isolated timing protocol against the old in-process
    one (wall time, rel. IQR, medians), or the sandbox's overhead per step with and without it."""
    import json

    from kernelgraph.agent.backends.bubblewrap import SandboxUnavailable
    from kernelgraph.agent.tasks import all_tasks
    from kernelgraph.bench.sandbox import (
        plot_protocols,
        render,
        render_protocols,
        run_bench,
        run_protocol_bench,
    )

    if compare not in ("protocols", "sandbox"):
        typer.echo(f"error: --compare: {compare!r} is neither 'protocols' nor 'sandbox'", err=True)
        raise typer.Exit(2)
    if rejudge:
        if compare != "protocols":
            typer.echo(
                "error: --rejudge judges a --compare protocols report; --compare sandbox has none", err=True
            )
            raise typer.Exit(2)
        _rejudge_protocols(Path(rejudge), as_json=as_json, plot=Path(plot) if plot else None)
        return
    if plot:
        typer.echo("error: --plot draws a --rejudge report (a run draws its own beside its JSON)", err=True)
        raise typer.Exit(2)
    try:
        if compare == "protocols":
            names = [t for t in tasks.split(",") if t] or [t.name for t in all_tasks("c")]
            partial = Path(results_dir) / "sandbox-protocols-partial.json"  # the repeats so far
            partial.parent.mkdir(parents=True, exist_ok=True)
            result = run_protocol_bench(
                names, target, repeats, trials, null_control=null_control,
                on_repeat=lambda report: partial.write_text(json.dumps(report, indent=2, default=str)),
            )  # fmt: skip
            partial.unlink(missing_ok=True)
        else:
            result = run_bench(task, target, repeats)
    except SandboxUnavailable as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    if compare == "protocols":  # progress and each cell's line went to stderr
        saved = save_and_show(result, results_dir, "sandbox-protocols", render_protocols, as_json=as_json)
        plot_protocols(result, saved.with_suffix(".png"))
    else:
        save_and_show(result, results_dir, "sandbox-bench", render, as_json=as_json, left_out="runs")


def _rejudge_protocols(path: Path, *, as_json: bool, plot: Path | None = None) -> None:
    """`bench sandbox --rejudge`: a saved protocols report's cells judged again from their runs."""
    import json

    from kernelgraph.bench.sandbox import judge, plot_protocols, protocols_markdown, render_protocols

    def refuse(problem: str) -> NoReturn:
        typer.echo(f"error: --rejudge: {path}: {problem}", err=True)
        raise typer.Exit(2)

    try:
        report = json.loads(path.read_text())
    except OSError as exc:
        refuse(f"cannot be read ({exc.strerror})")
    except ValueError as exc:
        refuse(f"is not JSON ({exc})")
    if not isinstance(report, dict) or report.get("bench") != "sandbox-protocols":
        refuse(
            "is not a report of `kernelgraph bench sandbox --compare protocols` (its bench is not sandbox-protocols)"
        )
    if not report.get("cells"):
        refuse("has no cells")
    for number, cell in enumerate(report["cells"], 1):
        try:
            judge(cell)
        except (KeyError, TypeError, ValueError, ZeroDivisionError) as exc:
            missing = f"has no {exc}" if isinstance(exc, KeyError) else f"cannot be judged ({exc})"
            refuse(f"cell {number} ({cell.get('task')} {cell.get('config')}) {missing}")
    if plot is not None:
        try:
            plot_protocols(report, plot)
        except (KeyError, TypeError, ValueError) as exc:
            refuse(f"cannot be drawn ({exc!r})")
    if as_json:
        typer.echo(json.dumps(report, default=str))
        return
    typer.echo(render_protocols(report))
    typer.echo("")
    typer.echo(protocols_markdown(report))


def keep(
    decisions: int = typer.Option(300, "--decisions", min=10, help="decisions per cell"),
    target: str = typer.Option("cpu-x86-64-v2", "--target", help="the CPU target to build and time for"),
    conditions: str = typer.Option(
        "quiet,loaded", "--conditions", help="quiet (the machine as it is), loaded (a core burnt), or both"
    ),
    results_dir: str = typer.Option("results", "--results-dir", help="where the JSON results are saved"),
) -> None:
    """How often noise fools the keep decision: false keeps (a kernel against itself) and false
    discards (against one 1.3x slower), quiet and with a core burnt by another process."""
    from kernelgraph.bench.keep import render, run_keep_bench

    try:
        report = run_keep_bench(
            decisions, target, tuple(c.strip() for c in conditions.split(",") if c.strip())
        )
    except ValueError as exc:
        typer.echo(f"error: --{exc}", err=True)
        raise typer.Exit(2) from None
    save_and_show(report, results_dir, "keep-bench", render)


STUDY_TASKS = "layernorm,matmul,softmax,elementwise_chain,transpose,matvec,reduction"


def landscape(
    tasks: str = typer.Option(STUDY_TASKS, "--tasks", help="comma-separated C tasks with instances"),
    label: str = typer.Option("A", "--label", help="names this measurement; measure twice for noise"),
    target: str = typer.Option("cpu-x86-64-v2", "--target", help="the CPU target to build and time for"),
    directory: str = typer.Option("results/landscapes", "--dir", help="where landscapes are kept"),
    fraction: float = typer.Option(
        1.0, "--fraction", min=0.5, max=1.0, help="share of each config space to measure (>= half)"
    ),
) -> None:
    """Measure every config of each task at each of its instances (resumable; see docs/results.md)."""

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from kernelgraph.agent.targets import get_target
    from kernelgraph.agent.tasks import get_task
    from kernelgraph.bench.landscapes import (
        best_by_instance,
        config_key,
        current_key,
        landscape_yardsticks,
        measure_landscape,
        read_landscape,
    )

    chosen = [get_task(name) for name in tasks.split(",") if name]
    for task in chosen:
        if not task.instances:
            typer.echo(f"error: --tasks: task {task.name!r} defines no instances", err=True)
            raise typer.Exit(2)
    cpu = get_target(target)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns) as progress:
        for task in chosen:
            path = measure_landscape(task, cpu, Path(directory), label, fraction=fraction, progress=progress)
            progress.console.print(f"{task.name}: {path}")
            points = read_landscape(path)[1]
            baseline = config_key(task.baseline_config)
            naive = {p.instance: p.median_ns for p in points if current_key(task, p.config) == baseline}
            for instance, (best, best_ns) in best_by_instance(points).items():
                marks = landscape_yardsticks(task, cpu, instance, best_ns, naive.get(instance))
                progress.console.print(f"  {instance}: best {best}: {marks.line()}", highlight=False)


def tolerances(
    target: str = typer.Option("cpu-x86-64-v2", "--target", help="the CPU target to build for"),
    tasks: str = typer.Option("", "--tasks", help="comma-separated C tasks (default: all)"),
    results_dir: str = typer.Option("results", "--results-dir", help="where the JSON report is saved"),
) -> None:
    """Every landscape config of every C task on 100 seeds and its edge set: the tolerances pass honest
    kernels (exit 1 when a config fails)."""
    import tempfile

    from rich.progress import Progress

    from kernelgraph.bench.reports import save_report
    from kernelgraph.bench.tolerance_sweep import run_sweep

    with Progress() as bar, tempfile.TemporaryDirectory(prefix="kg-tol-") as cache:
        job = bar.add_task("configs", total=None)

        def progress(task: str, total: int) -> None:
            bar.update(job, advance=1, description=task)

        report = run_sweep(target, [t for t in tasks.split(",") if t], Path(cache), progress)
    path = save_report(report, Path(results_dir), "tolerance-sweep")
    for row in report["tasks"]:
        typer.echo(
            f"{row['task']:>20}: {row['configs']:4d} configs, {row['failed']} failed, {row['seconds']} s"
        )
    for failure in report["failures"]:
        typer.echo(f"FAILED {failure['task']} {failure['config']}: {failure['reason'][:300]}")
    typer.echo(f"saved {path}")
    raise typer.Exit(1 if report["failed"] else 0)


ALL_C_TASKS = ("matmul,matvec,transpose,softmax,layernorm,rmsnorm,stencil2d,reduction,prefix_scan,histogram,"
               "elementwise_chain,spmv_csr")  # fmt: skip


def yardsticks(
    tasks: str = typer.Option(ALL_C_TASKS, "--tasks", help="comma-separated C tasks"),
    target: str = typer.Option("cpu-native", "--target", help="the CPU target to build and time for"),
    budget: int = typer.Option(8, "--budget", min=0, max=200, help="greedy-search evaluations per task"),
    full_timing: bool = typer.Option(False, "--full-timing", help="the backend's full trial counts (slower)"),
    as_json: bool = typer.Option(False, "--json", help="print one JSON object (progress goes to stderr)"),
    results_dir: str = typer.Option("results", "--results-dir", help="where the JSON results are saved"),
) -> None:
    """Every task's kernels beside the library a user would call and the roofline; fast_p over all tasks."""
    from rich.console import Console

    from kernelgraph.agent.backends.timing import FAST_TIMING, TimingPlan
    from kernelgraph.bench.yardsticks import render, run_yardsticks

    console = Console(stderr=as_json)
    names = [t for t in tasks.split(",") if t]
    report = run_yardsticks(names, target, budget, TimingPlan() if full_timing else FAST_TIMING, console)
    save_and_show(report, results_dir, "yardsticks", render, as_json=as_json, left_out="tasks")


def quality(
    quick: bool = typer.Option(
        False, "--quick", help="two tasks, a budget of 2: the report's shape, cheaply"
    ),
    as_json: bool = typer.Option(False, "--json", help="print one JSON object (progress goes to stderr)"),
    tasks: str = typer.Option("", "--tasks", help="comma-separated C tasks (default: all; --quick: two)"),
    budget: int = typer.Option(
        0, "--budget", min=0, max=500, help="attempts per task (default 32; --quick 2)"
    ),
    target: str = typer.Option("cpu-native", "--target", help="the CPU target to build and time for"),
    results_dir: str = typer.Option("results", "--results-dir", help="where the JSON report is saved"),
    docs: bool = typer.Option(False, "--docs", help="write the table into docs/quality.md and README.md"),
) -> None:
    """The agent's best kernel per task against the library and the roofline, measured in one run."""

    from rich.console import Console

    from kernelgraph.agent.targets import UnknownTargetError, get_target
    from kernelgraph.agent.tasks import all_tasks
    from kernelgraph.bench.quality import run_quality, table, write_table
    from kernelgraph.bench.reports import code_version
    from kernelgraph.cli.agent import connect_or_exit, make_backend
    from kernelgraph.cli.graph import fail
    from kernelgraph.core.settings import get_settings

    known = [t.name for t in all_tasks("c")]
    chosen = [name for name in tasks.split(",") if name]
    unknown = [name for name in chosen if name not in known]
    if unknown:
        raise fail(f"--tasks: unknown C task {unknown[0]!r}; known: {', '.join(known)}", 2)
    try:
        cpu = get_target(target)
    except UnknownTargetError as exc:
        raise fail(f"--target: {exc}", 2) from None
    if cpu.kind != "cpu" or not cpu.available:
        raise fail(f"--target: {target!r} is not an available CPU target ({cpu.unavailable_reason})", 2)
    backend = make_backend("c")
    # Counters (cachegrind) would double each attempt's cost; retrieval uses the timing counters.
    backend.counters = False  # type: ignore[attr-defined]
    console = Console(stderr=True)
    client = connect_or_exit(get_settings())
    try:
        report = run_quality(cpu, backend, client, quick=quick, tasks=chosen or None, budget=budget or None,  # type: ignore[arg-type]
                             console=console)  # fmt: skip
    finally:
        client.close()
    report["command"] = "kernelgraph bench quality" + (" --quick" if quick else "")
    report["code"] = code_version()
    if docs:
        root = Path(__file__).resolve().parents[2]
        for page in (root / "docs" / "quality.md", root / "README.md"):
            write_table(report, page)
    save_and_show(
        report, results_dir, "bench-quality-quick" if quick else "bench-quality", table, as_json=as_json
    )


def signature(
    target: str = typer.Option("cpu-x86-64-v2", "--target", help="the CPU target to build and time for"),
    per_instance: int = typer.Option(
        16, "--states", min=4, max=200, help="configs sampled per instance (each state measured twice)"
    ),
    budget_s: float = typer.Option(1200.0, "--budget-s", help="stop starting new states past this"),
    seed: int = typer.Option(0, "--seed", help="the config sample's seed"),
    directory: str = typer.Option("results/landscapes", "--dir", help="the development set's landscapes"),
    as_json: bool = typer.Option(False, "--json", help="print one JSON object (progress goes to stderr)"),
    results_dir: str = typer.Option("results", "--results-dir", help="where the JSON results are saved"),
    tasks: str = typer.Option(
        "", "--tasks", help="comma-separated development tasks (default: the study protocol's DEV_TASKS)"
    ),
) -> None:
    """The counter signature's quality on the development set: each dimension's test-retest noise against
    its spread between states, correlations, the drop rule's verdicts (docs/counter-signature.md), and
    whether nearest states by signature point at good configs more often than chance."""

    from rich.console import Console

    from kernelgraph.agent.targets import get_target
    from kernelgraph.bench.signature import render, run_signature_bench

    report = run_signature_bench(
        get_target(target), Path(directory), per_instance=per_instance, budget_s=budget_s, seed=seed,
        console=Console(stderr=True), tasks=[t for t in tasks.split(",") if t] or None,
    )  # fmt: skip
    save_and_show(report, results_dir, "signature", render, as_json=as_json, left_out="pairs")


def register(bench_app: typer.Typer) -> None:
    """Add the agent's benchmarks to the `bench` group (kernelgraph/cli/__init__.py owns it)."""
    bench_app.command("gpu")(gpu)
    bench_app.command("sandbox")(sandbox)
    bench_app.command("tolerances")(tolerances)
    bench_app.command("landscape")(landscape)
    bench_app.command("keep")(keep)
    bench_app.command("yardsticks")(yardsticks)
    bench_app.command("quality")(quality)
    bench_app.command("signature")(signature)
