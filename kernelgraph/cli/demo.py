"""`kernelgraph demo`, the main job: the command, which picks the client, the backend and the target;
the demo's runs are kernelgraph/bench/demo.py (with --agents, kernelgraph/bench/swarm.py)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from kernelgraph.bench import demo
from kernelgraph.cli.agent import agent_errors, connect_or_exit, console, make_backend, result_table
from kernelgraph.cli.graph import fail


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
    ] = demo.DEMO_NAMESPACE,
) -> None:
    """Learn from a few tasks, then optimize an unseen one with experience and without, side by side.

    With --agents N: N agents on related tasks optimize at once against the HTTP service, sharing one
    namespace, shown live as they use each other's attempts; then each runs alone, for comparison."""
    if agents:
        _agents_demo(agents, budget, seed, target_name, tasks, keep, results_dir)
        return
    from kernelgraph.agent.targets import get_target
    from kernelgraph.core.settings import get_settings
    from kernelgraph.service.auth import check_namespace

    started = time.monotonic()
    budget = budget or 8
    settings = get_settings().model_copy(
        update={"namespace": check_namespace(namespace, field="--namespace")}
    )
    target = get_target(target_name)
    if not target.available:
        target = get_target("cpu-x86-64-v2")
    backend = make_backend("c")
    client = connect_or_exit(settings)
    with agent_errors(client):
        learned = demo.gather_experience(client, backend, target, seen_budget, seed)
        console.print(result_table(learned, "Experience gathered"))
        runs = demo.compare_on_unseen(client, backend, target, budget, seed)
    demo.summarize(learned, runs, budget, seed, target, backend, started)
    demo.study_headline()
    published = connect_or_exit(settings.model_copy(update={"namespace": demo.KERNELBENCH_NAMESPACE}))
    with agent_errors(published):
        demo.transfer_finding(published)
    demo.look_at_it(settings, namespace)


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


def register(app: typer.Typer) -> None:
    app.command("demo")(demo_cmd)
