"""The MCP server: thin tools over the experience graph for models that optimize kernels.

The tools call an `ExperienceClient`: in-process on Neo4j, or over HTTP when KERNELGRAPH_SERVICE_URL
is set (see `kernelgraph.client.connect`). The client (and so the one Neo4j driver) is opened once in
the server's lifespan and closed when the server stops; tools never open connections themselves.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from kernelgraph.client import ExperienceClient
from kernelgraph.client.errors import KernelGraphError
from kernelgraph.client.models import AttemptRecord

INSTRUCTIONS = """KernelGraph is an experience graph of kernel optimizations: which code transforms
(unroll, tile, vectorize, ...) made which kernels faster on which hardware, keyed by the kernel's
measured performance-counter signature. Before choosing a transform, call retrieve_transforms with
the current kernel's measurement; after trying one, call record_attempt so others learn from it."""


def _client(ctx: Context) -> ExperienceClient:
    client: ExperienceClient = ctx.request_context.lifespan_context["client"]
    return client


def _tool_error(exc: KernelGraphError) -> ToolError:
    where = f" (field: {exc.field})" if exc.field else ""
    return ToolError(f"{exc.code}: {exc.message}{where}")


def retrieve_transforms(
    ctx: Context,
    target: str,
    signature: list[float | None] | None = None,
    counters: dict[str, float] | None = None,
    counter_source: str | None = None,
    source: str | None = None,
    mode: Literal["counters", "text", "hybrid"] = "counters",
    limit: int = 10,
    k: int = 20,
    exclude_task: str | None = None,
) -> dict[str, Any]:
    """Find the transforms that worked best from measured kernel states similar to yours.

    Use this before deciding how to transform a kernel. Describe the kernel's current state by ONE of:
    - `signature`: its normalized counter signature (11 entries, each a float in [0, 1] or null where
      not measured, as returned in earlier responses; unmeasured entries are left out of the
      distance, never guessed), or
    - `counters` + `counter_source`: raw counters (e.g. {"time_ns": ..., "flops": ..., "bytes": ...})
      and where they came from ("cpu_cachegrind", "cpu_timing", "nvidia_ncu", "nvidia_timing",
      "nvidia_static" or "kernelbench_timing"); the service turns
      them into a signature using the target's peaks.
    Arguments:
    - `target`: name of the hardware target the kernel runs on (see list_targets).
    - `mode`: "counters" (similar counter signatures; the default), "text" (similar kernel source;
      pass `source`), or "hybrid" (both).
    - `source`: the kernel's source code (only for text/hybrid modes).
    - `limit`: at most this many transforms come back; `k`: how many similar states to draw from.
    - `exclude_task`: ignore experience from this task (for held-out evaluation).
    Returns {"transforms": [...], "signature": [...], "neighbours": n, "neighbour_ids": [...], ...};
    each transform has `transform` (its name), `score`, `success_rate`, `attempts`, `evidence_weight`
    (how much similar evidence there is), `best_speedup`, `params` (parameter settings that were tried)
    and `evidence_attempt_keys`. Empty `transforms`: no similar experience yet. A transform with
    `disputed` > 0 has settings whose evidence contradicts itself beyond measurement noise (one attempt
    helped, another hurt; or the same kernel ran once and failed once): treat it as uncertain and
    re-measure before relying on it. `by_params` gives each setting's mean (`weighted_log_speedup`)
    and spread (`sd_log_speedup`) of the log speedup.
    """
    request: dict[str, Any] = {"target": target, "mode": mode, "limit": limit, "k": k}
    optional = {"signature": signature, "counters": counters, "counter_source": counter_source, "source": source,
                "exclude_task": exclude_task}  # fmt: skip
    request.update({key: value for key, value in optional.items() if value is not None})
    try:
        return _client(ctx).retrieve(request).model_dump(mode="json")
    except KernelGraphError as exc:
        raise _tool_error(exc) from None


def record_attempt(ctx: Context, attempt: AttemptRecord) -> dict[str, Any]:
    """Record one optimization attempt so that later retrievals (yours and other agents') learn from it.

    Call this after every attempt, kept or not: failures are evidence too. `attempt` holds:
    `attempt_key` (unique id you choose, e.g. "<run_id>:<step>"; sending the same key again is a
    harmless no-op), `run_id`, `agent`, `target` (a registered hardware target), `parent` (the kernel
    before: task, backend, source, patterns), `parent_measurement` (or, instead of both, once the parent
    is recorded: `parent_measurement_id` from an earlier result), `transform` ({name, params}),
    `child` (the kernel after), `child_measurement` (omit when it did not compile or run), `outcome`
    (kept | discarded | compile_error | rejected | incorrect | crashed | timeout | implausible:
    rejected = refused by the evaluator's admission checks, implausible = timed beyond the target's
    peak), `speedup` (parent time / child time, when both ran), and optional `diagnosis` and
    `rationale` text. Measurements may carry `evaluator_version` and `sandboxed`.
    Returns {"attempt_key", "created" (false when it was already recorded), "parent_kernel_id",
    "child_kernel_id", "parent_measurement_id", "child_measurement_id"}; use `child_kernel_id` with lineage.
    """
    try:
        return _client(ctx).record_attempt(attempt).model_dump(mode="json")
    except KernelGraphError as exc:
        raise _tool_error(exc) from None


def transfer(
    ctx: Context, source_target: str, destination_target: str, pattern: str | None = None
) -> dict[str, Any]:
    """Check whether what worked on one hardware target also works on another.

    Use this before reusing experience from `source_target` on `destination_target` (both hardware
    target names, see list_targets). `pattern` optionally restricts to kernels with that access
    pattern (e.g. "dense-matmul", "stencil"). Returns, per transform, how many kernel pairs were tried
    on both (`pairs`), the rank correlation and sign agreement of their speedups, and the mean log
    speedups on each target; `overall_rank_correlation` near 1 means the source's experience transfers.
    """
    try:
        return _client(ctx).transfer(source_target, destination_target, pattern).model_dump(mode="json")
    except KernelGraphError as exc:
        raise _tool_error(exc) from None


def transfer_matrix(ctx: Context, transform: str | None = None) -> dict[str, Any]:
    """Which hardware targets' experience predicts which others': the whole transfer matrix.

    Use this to choose whose experience to trust for a target, or which GPUs behave alike. For every
    ordered pair of targets: `pairs` (transform-on-kernel effects measured on both), `rank_correlation`
    (Spearman of their log speedups; near 1: the source ranks what helps the same way) with a 95%
    bootstrap interval (`ci_low`, `ci_high`) and `agreement` (share agreeing on helps vs hurts).
    `targets` come oldest architecture first, each with its `family`. `transform` restricts to one
    transform (e.g. "torch_compile:inductor:max-autotune"); default: all, pooled.
    """
    try:
        return _client(ctx).transfer_matrix(transform).model_dump(mode="json")
    except KernelGraphError as exc:
        raise _tool_error(exc) from None


def predict_transfer(ctx: Context, target: str, transform: str | None = None) -> dict[str, Any]:
    """Predict what each transform does to each kernel on `target`, from the other targets only.

    Use it for a GPU with little or no experience of its own (it must be registered, see list_targets):
    each other target's measured effects are averaged, weighted (`weights`) by how well that target's
    experience transferred to targets like this one. Returns `predictions` (best first), each with
    `transform`, `task`, `kernel_id`, `predicted_speedup`, how many `sources` measured it and, when the
    target has measured it itself (never used to predict), `measured_speedup`.
    """
    try:
        return _client(ctx).predict_transfer(target, transform).model_dump(mode="json")
    except KernelGraphError as exc:
        raise _tool_error(exc) from None


def lineage(ctx: Context, kernel_id: str) -> dict[str, Any]:
    """How a kernel came to be: the kernel and its ancestors, nearest first.

    `kernel_id` comes from record_attempt's result (`child_kernel_id`) or from retrieval evidence.
    Returns {"steps": [...]}, each step with `kernel_id`, `task`, `variant`, `depth` (0 = this kernel)
    and the `transform`, `outcome` and `speedup` of the attempt that produced it. Unknown id: an error.
    """
    try:
        steps = _client(ctx).lineage(kernel_id)
    except KernelGraphError as exc:
        raise _tool_error(exc) from None
    return {"kernel_id": kernel_id, "steps": [step.model_dump(mode="json") for step in steps]}


def list_targets(ctx: Context) -> dict[str, Any]:
    """The hardware targets you can read and record against, with how much experience each holds.

    Use it to find valid `target` names for the other tools. Returns {"targets": [...]}, each with
    `name`, `kind` (cpu | cuda), `arch`, peaks and the counts of `measurements` and `attempts`.
    """
    try:
        targets = _client(ctx).list_targets()
    except KernelGraphError as exc:
        raise _tool_error(exc) from None
    return {"targets": [{k: v for k, v in t.items() if _jsonable(v)} for t in targets]}


def _jsonable(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool | list | dict)


TOOLS = (
    retrieve_transforms,
    record_attempt,
    transfer,
    transfer_matrix,
    predict_transfer,
    lineage,
    list_targets,
)


def build_server(client_factory: Callable[[], ExperienceClient]) -> MCPServer[dict[str, Any]]:
    """The MCP server; `client_factory` runs once, in the lifespan, and its client is closed at shutdown."""

    @asynccontextmanager
    async def lifespan(_: MCPServer[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
        client = client_factory()
        try:
            yield {"client": client}
        finally:
            client.close()

    server: MCPServer[dict[str, Any]] = MCPServer("kernelgraph", instructions=INSTRUCTIONS, lifespan=lifespan)
    for tool in TOOLS:
        server.add_tool(tool)
    return server
