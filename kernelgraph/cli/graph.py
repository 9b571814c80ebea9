"""`kernelgraph neo4j ...`, `kernelgraph schema ...` and `kernelgraph cypher`: the store from the terminal."""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from kernelgraph.cli.tables import readable
from kernelgraph.core.errors import CommandError
from kernelgraph.core.settings import Settings, get_settings

console = Console()
err = Console(stderr=True)

neo4j_app = typer.Typer(help="The local Neo4j 5.26 server (no Docker needed).", no_args_is_help=True)
schema_app = typer.Typer(help="Schema migrations (schema/NNNN_*.cypher).", no_args_is_help=True)


def fail(message: str, code: int = 1) -> CommandError:
    """The error to raise: the app shows it as one line (one JSON object with --json), exit `code`."""
    return CommandError(message, exit_code=code)


@contextmanager
def cli_errors():  # type: ignore[no-untyped-def]
    """Where a command reaches the graph. Its errors pass unchanged: the app's one wrapper
    (kernelgraph/cli/__init__.py) shows each as one line, or one JSON object with --json, with its code and field."""
    yield


@contextmanager
def open_store(settings: Settings | None = None):  # type: ignore[no-untyped-def]
    """One driver for this command, closed at the end."""
    from kernelgraph.service.store import GraphStore, open_driver

    settings = settings or get_settings()
    with cli_errors():
        driver = open_driver(settings)
        try:
            yield GraphStore(driver, settings.neo4j_database)
        finally:
            driver.close()


def _server():  # type: ignore[no-untyped-def]
    from kernelgraph.service.neo4j_local import LocalNeo4j

    return LocalNeo4j(get_settings())


@neo4j_app.command("install")
def neo4j_install() -> None:
    """Fetch Neo4j Community 5.26 and Neo4j Browser from Maven Central (cached; idempotent)."""
    server = _server()
    with cli_errors(), console.status("Fetching Neo4j jars from Maven Central..."):
        server.install()
    console.print(f"Neo4j jars in {server.lib}")


@neo4j_app.command("start")
def neo4j_start(timeout: Annotated[float, typer.Option(help="Seconds to wait for Bolt.")] = 120.0) -> None:
    """Start the local server (idempotent) and wait until Bolt answers."""
    server = _server()
    with cli_errors(), console.status("Starting Neo4j..."):
        status = server.start(timeout)
    console.print(f"Neo4j is running (pid {status.pid}, data in {status.home / 'data'})")
    console.print(f"  Bolt:    {status.bolt_uri}  (user neo4j, password in {server.password_file})")
    console.print(f"  Browser: {status.browser_url}")


@neo4j_app.command("stop")
def neo4j_stop() -> None:
    """Stop the local server cleanly."""
    with cli_errors():
        stopped = _server().stop()
    console.print("Neo4j stopped" if stopped else "Neo4j was not running")


@neo4j_app.command("status")
def neo4j_status(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Is the local server installed and running, and where."""
    status = _server().status()
    data = {
        "installed": status.installed, "running": status.running, "pid": status.pid,
        "bolt_uri": status.bolt_uri, "browser_url": status.browser_url, "home": str(status.home),
    }  # fmt: skip
    if as_json:
        console.print_json(json.dumps(data))
        return
    for key, value in data.items():
        console.print(f"{key:12} {value}")
    if not status.running:
        raise typer.Exit(3)


@neo4j_app.command("logs")
def neo4j_logs(lines: Annotated[int, typer.Option("-n", help="Lines per log file.")] = 40) -> None:
    """The tail of the server's logs."""
    console.print(_server().log_tail(lines), highlight=False, markup=False)


@neo4j_app.command("dump")
def neo4j_dump(
    to: Annotated[Path, typer.Option("--to", help="Dump file (or directory) to write.")] = Path(
        "kernelgraph.dump"
    ),
) -> None:
    """Back the graph up with neo4j-admin (offline: a running server is stopped and restarted)."""
    server = _server()
    with cli_errors(), console.status("Dumping the graph..."):
        written = server.dump(to)
    console.print(f"graph dumped to {written} ({written.stat().st_size / 1e6:.1f} MB)")


@neo4j_app.command("load")
def neo4j_load(
    dump_file: Annotated[Path, typer.Argument(metavar="FILE", help="A dump written by `neo4j dump`.")],
    force: Annotated[bool, typer.Option("--force", help="Required: the current graph is replaced.")] = False,
) -> None:
    """Replace the graph with a dump (offline), then bring it up to date with `kernelgraph schema apply`."""
    if not force:
        raise fail(f"loading {dump_file} replaces the current graph; rerun with --force (back it up first "
                   "with `kernelgraph neo4j dump`)")  # fmt: skip
    server = _server()
    with cli_errors(), console.status("Loading the dump..."):
        server.load(dump_file)
    console.print(f"graph loaded from {dump_file}; next: `kernelgraph schema apply` to upgrade it")


@schema_app.command("apply")
def schema_apply() -> None:
    """Apply pending migrations in order (applying twice changes nothing)."""
    from kernelgraph.service import migrate

    with open_store() as store, cli_errors():
        applied = migrate.apply(store)
    if not applied:
        console.print("schema is up to date")
    for state in applied:
        console.print(f"applied {state.name}")


@schema_app.command("status")
def schema_status() -> None:
    """List applied and pending migrations."""
    from kernelgraph.service import migrate

    with open_store() as store, cli_errors():
        states = migrate.status(store)
    table = Table("version", "migration", "state")
    for state in states:
        table.add_row(str(state.version), state.name, "applied" if state.applied else "[yellow]pending[/]")
    console.print(readable(table))


def parse_param(text: str) -> tuple[str, Any]:
    """k=v, where v is read as JSON when it parses (numbers, lists, null) and as a string otherwise."""
    if "=" not in text:
        raise fail(f"--param {text!r}: expected NAME=VALUE")
    key, raw = text.split("=", 1)
    try:
        return key, json.loads(raw)
    except json.JSONDecodeError:
        return key, raw


def _jsonable(value: Any) -> Any:
    if hasattr(value, "iso_format"):
        return value.iso_format()
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "relationships") and hasattr(value, "nodes"):  # a path
        return {"nodes": [_jsonable(n) for n in value.nodes],
                "relationships": [_jsonable(r) for r in value.relationships]}  # fmt: skip
    if hasattr(value, "element_id"):  # nodes and relationships
        data = {k: _jsonable(v) for k, v in dict(value).items() if k != "source_embedding"}
        labels = getattr(value, "labels", None)
        return {"labels": sorted(labels), **data} if labels is not None else {"type": value.type, **data}
    return value


# How a node is captioned in a table (as docs/kernelgraph.grass captions it in Browser).
CAPTIONS = {"Kernel": ("task", "variant"), "Measurement": ("median_ns",), "Transform": ("name",),
            "Attempt": ("outcome", "transform"), "HardwareTarget": ("name",), "AccessPattern": ("name",)}  # fmt: skip


def _node_text(node: Any) -> str:
    labels = sorted(getattr(node, "labels", ()))
    label = next((lab for lab in labels if lab in CAPTIONS), labels[0] if labels else "")
    parts = [str(node.get(key)) for key in CAPTIONS.get(label, ()) if node.get(key) not in (None, "")]
    return f"({label}{' ' if parts else ''}{' '.join(parts)})"


def _path_text(path: Any) -> str:
    """(Kernel softmax fuse)-[DERIVED_FROM fuse]->(Kernel softmax naive): a path as one readable line."""
    nodes = list(path.nodes)
    text = _node_text(nodes[0])
    for previous, rel, node in zip(nodes, path.relationships, nodes[1:], strict=False):
        label = rel.get("transform") or ""
        arrow = f"-[{rel.type}{' ' + str(label) if label else ''}]-"
        forward = rel.start_node is not None and rel.start_node.element_id == previous.element_id
        text += f"{arrow}>{_node_text(node)}" if forward else f"<{arrow}{_node_text(node)}"
    return text


def _cell(value: Any) -> str:
    """A value as a table cell: paths and nodes as Browser captions them, strings as they are."""
    if hasattr(value, "relationships") and hasattr(value, "nodes"):
        return _path_text(value)
    if hasattr(value, "labels") and hasattr(value, "element_id"):
        return _node_text(value)
    if isinstance(value, str):
        return value
    return json.dumps(_jsonable(value), default=str)


def cypher(
    query: Annotated[str | None, typer.Argument(help="One Cypher statement.")] = None,
    file: Annotated[
        Path | None, typer.Option("--file", "-f", help="Run a .cypher file (e.g. cypher/x.cypher).")
    ] = None,
    param: Annotated[
        list[str] | None, typer.Option("--param", "-p", help="NAME=VALUE (VALUE as JSON if it parses).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print rows as JSON.")] = False,
    write: Annotated[
        bool, typer.Option("--write/--read", help="Route as a write (default) or a read.")
    ] = True,
) -> None:
    """Run one Cypher statement against the configured server, like cypher-shell."""
    if (query is None) == (file is None):
        raise fail("give either a QUERY or --file")
    if file is not None:
        if not file.exists():
            raise fail(f"--file {file}: no such file")
        query = file.read_text()
    from kernelgraph.service.queries import parameters_of

    params = dict(parse_param(p) for p in param or [])
    missing = sorted(parameters_of(query or "") - params.keys())
    if missing:
        where = " (the file's header shows example values)" if file is not None else ""
        raise fail(
            f"the query uses {', '.join('$' + m for m in missing)}: give --param NAME=VALUE for each{where}",
            2,
        )
    with open_store() as store, cli_errors():
        keys, raw_rows = store.run_text(query or "", params, write=write)
    if as_json:
        print(json.dumps([_jsonable(row) for row in raw_rows], default=str, indent=2))
        return
    rows = raw_rows
    table = Table(*keys)
    for row in rows:
        table.add_row(*(_cell(row[k]) for k in keys))
    console.print(readable(table))
    console.print(f"[dim]{len(rows)} row(s)[/]")


def register(app: typer.Typer) -> None:
    app.add_typer(neo4j_app, name="neo4j")
    app.add_typer(schema_app, name="schema")
    app.command("cypher")(cypher)
