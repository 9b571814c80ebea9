"""`kernelgraph serve`, `kernelgraph keys ...` and `kernelgraph mcp`: the knowledge service from the terminal."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from kernelgraph.cli.tables import readable
from kernelgraph.core.models import Role

console = Console()
err = Console(stderr=True)

keys_app = typer.Typer(help="API keys of the knowledge service (bearer tokens with a role and a namespace).",
                       no_args_is_help=True)  # fmt: skip


class Transport(StrEnum):
    stdio = "stdio"
    http = "http"


def serve(
    host: Annotated[
        str | None, typer.Option(help="Address to listen on (default: KERNELGRAPH_HOST, 127.0.0.1).")
    ] = None,
    port: Annotated[
        int | None, typer.Option(help="Port to listen on (default: KERNELGRAPH_PORT, 8600).")
    ] = None,
    access_log: Annotated[
        bool, typer.Option("--access-log/--no-access-log", help="Log one line per request.")
    ] = True,
) -> None:
    """Run the HTTP knowledge service (OpenAPI docs at /docs). Apply migrations first: `kernelgraph schema apply`."""
    import uvicorn

    from kernelgraph.core.settings import get_settings
    from kernelgraph.service.api.app import create_app

    settings = get_settings()
    app = create_app(settings)
    uvicorn.run(app, host=host or settings.host, port=port or settings.port, log_level="info",
                access_log=access_log)  # fmt: skip


def _store_then(action):  # type: ignore[no-untyped-def]
    """Run `action(store)` with one driver for the command, closed at the end."""
    from kernelgraph.core.settings import get_settings
    from kernelgraph.service.store import GraphStore, open_driver

    settings = get_settings()
    driver = open_driver(settings)
    try:
        return action(GraphStore(driver, settings.neo4j_database))
    finally:
        driver.close()


@keys_app.command("create")
def keys_create(
    role: Annotated[
        Role,
        typer.Option(
            help="reader: read only; writer: read and write; verifier: a writer whose evidence is verified "
            "(a process you trust to measure); admin: any namespace, peaks, revoking and quarantine."
        ),
    ],
    namespace: Annotated[str, typer.Option(help="The namespace (team) the key reads and writes.")],
    label: Annotated[str, typer.Option(help="A note to recognise the key by in `keys list`.")] = "",
) -> None:
    """Create an API key and print it once: it is stored only as a hash and cannot be shown again."""
    from kernelgraph.core.errors import KernelGraphError
    from kernelgraph.service.auth import create_key

    try:
        created = _store_then(lambda store: create_key(store, role.value, namespace, label))
    except KernelGraphError as exc:
        err.print(f"[bold red]error:[/] {exc.message}", highlight=False)
        raise typer.Exit(2) from None
    err.print(f"{created.role.value} key {created.key_id} for namespace {created.namespace!r} "
              "(shown once; store it now):")  # fmt: skip
    console.print(created.key, highlight=False, soft_wrap=True)


@keys_app.command("list")
def keys_list() -> None:
    """List API keys: id, role, namespace, label, creation and revocation time (never the keys themselves)."""
    from kernelgraph.service.auth import list_keys

    rows = _store_then(list_keys)
    table = Table("key id", "role", "namespace", "label", "created", "revoked")
    for row in rows:
        table.add_row(row["key_id"], row["role"], row["namespace"], row["label"] or "", row["created_at"],
                      row.get("revoked_at") or "")  # fmt: skip
    console.print(readable(table))


@keys_app.command("revoke")
def keys_revoke(
    key_id: Annotated[str, typer.Argument(help="The key's id, as `keys list` shows it.")],
) -> None:
    """Revoke an API key: every replica refuses it within its key cache's 5 s (POST /v1/keys/{id}/revoke
    makes it immediate on the replica that serves it). The key stays listed, as revoked."""
    from kernelgraph.core.errors import KernelGraphError
    from kernelgraph.service.auth import revoke_key

    try:
        row = _store_then(lambda store: revoke_key(store, key_id))
    except KernelGraphError as exc:
        err.print(f"[bold red]error:[/] {exc.message}", highlight=False)
        raise typer.Exit(2) from None
    err.print(f"revoked key {row['key_id']} of namespace {row['namespace']!r} at {row['revoked_at']}")


@keys_app.command("quarantine")
def keys_quarantine(
    key_id: Annotated[str, typer.Argument(help="The key whose evidence to quarantine (`legacy`: pre-0015).")],
    namespace: Annotated[str, typer.Option(help="The namespace the evidence is in.")],
    apply: Annotated[bool, typer.Option("--apply", help="Change the graph (without: a dry run).")] = False,
    release: Annotated[bool, typer.Option("--release", help="Undo an earlier quarantine.")] = False,
) -> None:
    """Quarantine one key's evidence (left out of retrieval and consolidation, kept, reversible with
    --release). A dry run unless --apply: run it without first and read what would change."""
    from kernelgraph.core.errors import KernelGraphError
    from kernelgraph.service.auth import check_namespace
    from kernelgraph.service.knowledge import KnowledgeService

    try:
        check_namespace(namespace)
        report = _store_then(
            lambda store: KnowledgeService(store).quarantine(namespace, key_id, apply=apply, release=release)
        )
    except KernelGraphError as exc:
        err.print(f"[bold red]error:[/] {exc.message}", highlight=False)
        raise typer.Exit(2) from None
    verb = (
        ("released" if release else "quarantined")
        if apply
        else ("would release" if release else "would quarantine")
    )
    err.print(f"{verb} key {key_id}'s evidence in {namespace!r}: {report['aggregates']} aggregates, "
              f"{report['rollups']} rollups, {report['attempts']} attempts "
              f"({', '.join(report['transforms']) or 'no transforms'})"
              + ("" if apply else "; run again with --apply to do it"), highlight=False)  # fmt: skip


namespaces_app = typer.Typer(help="Namespaces (teams) of the graph: what they hold, and deleting one.",
                             no_args_is_help=True)  # fmt: skip


def _contents_table(held: Any, title: str) -> Table:
    table = Table("label", "nodes", title=title)
    for label, count in sorted(held.nodes.items()):
        table.add_row(label, f"{count:,}")
    table.add_row("[bold]relationships[/]", f"{held.relationships:,}")
    return table


@namespaces_app.command("delete")
def namespaces_delete(
    namespace: Annotated[str, typer.Argument(help="The namespace to delete.")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only count what would be deleted.")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:
    """Delete everything a namespace holds (targets, kernels, measurements, attempts, its API keys).

    Runs on Neo4j directly (KERNELGRAPH_NEO4J_*), so it needs no API key; over HTTP an admin key does
    the same with DELETE /v1/namespaces/{namespace}. `--dry-run` counts, per label, what would go.
    """
    from kernelgraph.core.errors import KernelGraphError, NotFound
    from kernelgraph.service import namespaces
    from kernelgraph.service.consolidation import namespaces_with_states

    try:
        held = _store_then(lambda store: namespaces.contents(store, namespace))
        if held.total_nodes == 0:  # a misspelled name must not look like a success
            known = _store_then(namespaces_with_states)
            raise NotFound(f"namespace {namespace!r} holds nothing; namespaces with measured states: "
                           f"{', '.join(known) or 'none'}", field="namespace")  # fmt: skip
        if dry_run:
            console.print(_contents_table(held, f"namespace {namespace!r} would delete"))
            return
        console.print(_contents_table(held, f"namespace {namespace!r} holds"))
        if not yes and not typer.confirm(
            f"Delete all {held.total_nodes:,} nodes of namespace {namespace!r}?"
        ):
            err.print("nothing deleted")
            raise typer.Exit(1)
        with err.status(f"deleting namespace {namespace!r}..."):
            deleted = _store_then(lambda store: namespaces.delete(store, namespace))
    except NotFound:
        raise
    except KernelGraphError as exc:
        err.print(f"[bold red]error:[/] {exc.message}", highlight=False)
        raise typer.Exit(2) from None
    console.print(f"deleted namespace {namespace!r}: {deleted.total_nodes:,} nodes "
                  f"({deleted.api_keys} API keys), {deleted.relationships:,} relationships")  # fmt: skip


def mcp(
    transport: Annotated[
        Transport, typer.Option(help="stdio (for a local MCP host) or http (streamable HTTP).")
    ] = (Transport.stdio),
    host: Annotated[str, typer.Option(help="Address for the http transport.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port for the http transport (serves /mcp).")] = 8601,
) -> None:
    """Run the MCP server (tools: vocabulary, register_target, retrieve_transforms, record_attempt,
    evidence, transfer, transfer_matrix, predict_transfer, lineage, list_targets; docs/api.md).

    It talks to KERNELGRAPH_SERVICE_URL when set (with KERNELGRAPH_API_KEY), else to Neo4j in-process
    (namespace KERNELGRAPH_NAMESPACE).
    """
    from kernelgraph.client import ExperienceClient, connect
    from kernelgraph.core.settings import get_settings
    from kernelgraph.service.inprocess import InProcessClient
    from kernelgraph.service.mcp import build_server

    def client() -> ExperienceClient:
        # In process, what an MCP host records is an LLM agent's claim, not the service's measurement.
        opened = connect(get_settings())
        return opened.relaying("mcp") if isinstance(opened, InProcessClient) else opened

    server = build_server(client)
    if transport is Transport.stdio:
        server.run("stdio")
    else:
        server.run("streamable-http", host=host, port=port)


def register(app: typer.Typer) -> None:
    app.command("serve")(serve)
    app.add_typer(keys_app, name="keys")
    app.add_typer(namespaces_app, name="namespaces")
    app.command("mcp")(mcp)
