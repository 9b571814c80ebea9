"""The `kernelgraph` command: the composition root. Every command lives in this package, one module per
command group, and only here are concrete classes picked (the store, the backend, the proposer, the
client); the libraries (service/, agent/, client/, core/) hold no typer code."""

from __future__ import annotations

import json
import os
from typing import Any

import typer
from typer.core import TyperGroup

# Exit codes of every command (docs/operations.md, "Exit codes").
EXIT_FAILED = 1  # the command failed: bad input values, an error from the graph or the service, a verdict
EXIT_USAGE = 2  # a usage error: unknown option, missing argument, a value of the wrong form
EXIT_INTERNAL = 70  # a bug (EX_SOFTWARE): one line, the traceback with KERNELGRAPH_DEBUG=1


def error_of(exc: BaseException) -> tuple[dict[str, Any], int] | None:
    """The error object ({code, message, field?}) and exit code of an exception a command let out, or
    None for one that is not the user's (a bug)."""
    from kernelgraph.core.errors import CommandError, KernelGraphError

    if isinstance(exc, KernelGraphError):
        body = {"code": exc.code, "message": exc.message} | ({"field": exc.field} if exc.field else {})
        return body, exc.exit_code if isinstance(exc, CommandError) else EXIT_FAILED
    if isinstance(exc, ModuleNotFoundError):
        top = (exc.name or "").split(".")[0]
        if top in EXTRA_OF_MODULE:
            message = (
                f"this command needs the {top!r} package: pip install 'kernelgraph[{EXTRA_OF_MODULE[top]}]'"
            )
            return {"code": "missing_extra", "message": message}, EXIT_FAILED
        return None
    if type(exc).__module__.startswith("neo4j"):  # the driver's errors, without importing it
        code = getattr(exc, "code", None)
        # Its first line: the rest repeats the statement with a caret under the offset it names.
        message = (getattr(exc, "message", None) or str(exc)).strip().splitlines()[0]
        if code:  # the server refused the statement: syntax, a missing or wrong-typed parameter, a write under --read
            return {"code": "cypher_error", "message": f"{message} ({code})"}, EXIT_FAILED
        return {"code": "unavailable", "message": f"Neo4j: {message}"}, EXIT_FAILED
    if isinstance(exc, UnicodeDecodeError):
        return {
            "code": "invalid_input",
            "message": f"a file given is not UTF-8 text ({exc.reason} at byte {exc.start})",
        }, EXIT_FAILED
    if isinstance(exc, OSError):
        where = f": {exc.filename}" if exc.filename else ""
        return {"code": "os_error", "message": f"{exc.strerror or exc}{where}"}, EXIT_FAILED
    return None


def as_json_requested(ctx: typer.Context) -> bool:
    args = [*getattr(ctx, "protected_args", []), *ctx.args]
    return "--json" in args


class KernelGraphGroup(TyperGroup):
    """The one error-handling wrapper of every command: what a command lets out becomes one line on
    stderr (`error: ...`) or, with --json, one JSON object on stdout ({"error": {...}}, the HTTP API's
    shape), and an exit code; never a traceback for a user's mistake. Click's own usage errors (exit 2)
    pass through to it."""

    def invoke(self, ctx: typer.Context) -> Any:  # type: ignore[override]  # typer's Context is Click's
        as_json = as_json_requested(ctx)
        try:
            return super().invoke(ctx)
        except (typer.Exit, typer.Abort, SystemExit):
            raise
        except typer.TyperException as exc:  # Click's usage errors: its own message, or JSON with --json
            if not as_json:
                raise
            message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
            typer.echo(json.dumps({"error": {"code": "usage_error", "message": message}}))
            raise typer.Exit(getattr(exc, "exit_code", EXIT_USAGE)) from None
        except Exception as exc:
            if os.environ.get("KERNELGRAPH_DEBUG"):
                raise
            found = error_of(exc)
            if found is None:
                body = {"code": "internal_error", "message": f"{type(exc).__name__}: {exc} (a bug: please report it; "
                        "KERNELGRAPH_DEBUG=1 shows the traceback)"}  # fmt: skip
                code = EXIT_INTERNAL
            else:
                body, code = found
            if as_json:
                typer.echo(json.dumps({"error": body}))
            else:
                field = (
                    f" ({body['field']})"
                    if body.get("field") and body["field"] not in body["message"]
                    else ""
                )
                typer.echo(f"error: {body['message']}{field}", err=True)
            raise typer.Exit(code) from None


app = typer.Typer(
    name="kernelgraph",
    help="KernelGraph: an experience graph on Neo4j for kernel-optimizing agents.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    cls=KernelGraphGroup,
)


bench_app = typer.Typer(help="Benchmarks and end-to-end checks.", no_args_is_help=True)


def _register() -> None:
    # Command modules import their heavy dependencies only when a command runs.
    from kernelgraph.cli import (
        agent,
        bench_kernels,
        bench_service,
        bench_studies,
        browser,
        consolidate,
        demo,
        graph,
        import_cmd,
        kernels,
        retrieve,
        service,
        triton_cmd,
    )

    for module in (
        graph,
        import_cmd,
        service,
        browser,
        consolidate,
        retrieve,
        kernels,
        triton_cmd,
        agent,
        demo,
    ):
        module.register(app)
    for bench_module in (bench_service, bench_kernels, bench_studies):
        bench_module.register(bench_app)
    app.add_typer(bench_app, name="bench")


_register()


# Which extra brings each third-party module a command may need (pyproject.toml's optional dependencies).
EXTRA_OF_MODULE = {
    "neo4j": "service", "fastapi": "service", "uvicorn": "service", "mcp": "service",
    "sentence_transformers": "service", "numpy": "agent", "matplotlib": "agent",
    "triton": "triton", "torch": "triton", "anthropic": "llm", "optuna": "study", "scipy": "study",
}  # fmt: skip


def main() -> None:
    """The console script: `app` (KernelGraphGroup turns every error into one line and an exit code)."""
    app()
