"""`kernelgraph consolidate`: merge re-measured states, weigh superseded versions, flag contradictions."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from kernelgraph.cli.tables import readable
from kernelgraph.core.settings import get_settings

console = Console()
err = Console(stderr=True)


def consolidate_cmd(
    namespace: Annotated[
        str | None,
        typer.Option("--namespace", "-n", help="Namespace to consolidate (default: KERNELGRAPH_NAMESPACE)."),
    ] = None,
    all_namespaces: Annotated[
        bool, typer.Option("--all", help="Every namespace that holds measured states.")
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Report what would change; write nothing.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON list of reports.")] = False,
) -> None:
    """Consolidate the experience graph: merge re-measurements of the same kernel into one state, weigh
    evidence from superseded evaluator or signature versions down, and flag contradictions (the same
    state, transform and setting with outcomes that disagree beyond noise) for re-measurement. Nothing
    is deleted; a second run over unchanged evidence changes nothing (docs/retrieval.md)."""
    from kernelgraph.cli.graph import cli_errors, fail, open_store
    from kernelgraph.service.auth import check_namespace
    from kernelgraph.service.consolidation import consolidate, namespaces_with_states

    if all_namespaces and namespace:
        raise fail("give --namespace or --all, not both")
    if namespace is not None:
        check_namespace(namespace, field="--namespace")
    settings = get_settings()
    with open_store(settings) as store, cli_errors():
        known = namespaces_with_states(store)
        spaces = known if all_namespaces else [namespace or settings.namespace]
        if not all_namespaces and spaces[0] not in known:
            raise fail(f"namespace {spaces[0]!r} holds no measured states; namespaces that do: "
                       f"{', '.join(known) or 'none'}")  # fmt: skip
        reports = []
        for space in spaces:
            with err.status(f"Consolidating {space}...") as status:

                def say(text: str, space: str = space) -> None:
                    status.update(f"{space}: {text}")

                reports.append(consolidate(store, space, dry_run=dry_run, say=say))
    if as_json:
        print(json.dumps([r.model_dump(mode="json") for r in reports], indent=2))
        return
    table = Table("namespace", "states", "merged", "rolled up", "weighed", "contradictions\nflagged / resolved / open",
                  "changes", "seconds", title="Consolidation" + (" (dry run: nothing written)" if dry_run else ""))  # fmt: skip
    for r in reports:
        table.add_row(r.namespace, f"{r.states:,}", f"{r.merged:,} (+{r.already_merged:,} before)", f"{r.rolled_up:,}",
                      f"{r.weighed:,}",
                      f"{r.contradictions_flagged} / {r.contradictions_resolved} / {r.contradictions_open}",
                      f"{r.changes:,}", f"{r.wall_s:.1f}")  # fmt: skip
    console.print(readable(table))
    if any(r.contradictions_open for r in reports):
        console.print("Open contradictions: kernelgraph cypher --file cypher/contradictions.cypher --read "
                      "--param 'namespaces=[\"NS\"]' --param status=open --param limit=25 (docs/exploring.md)",
                      highlight=False, soft_wrap=True)  # fmt: skip


def register(app: typer.Typer) -> None:
    app.command("consolidate")(consolidate_cmd)
