"""The MCP server: thin tools over the experience graph for models that optimize kernels.

The tools call an `ExperienceClient`: in-process on Neo4j, or over HTTP when KERNELGRAPH_SERVICE_URL
is set (see `kernelgraph.client.connect`). The client (and so the one Neo4j driver) is opened once in
the server's lifespan and closed when the server stops; tools never open connections themselves.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, Literal, Protocol

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from kernelgraph.client import ExperienceClient
from kernelgraph.core.errors import KernelGraphError
from kernelgraph.core.models import AttemptRecord, HardwareTarget, validate

INSTRUCTIONS = """KernelGraph is an experience graph of kernel optimizations: which code transforms
(unroll, tile, vectorize, ...) made which kernels faster on which hardware, keyed by the kernel's
measured performance-counter signature. Start with vocabulary (the transform, task, pattern and
counter names to use) and list_targets; register your hardware once with register_target. Before
choosing a transform, call retrieve_transforms with the current kernel's measurement; after trying
one, call record_attempt so others learn from it; evidence shows the attempts behind a recommendation."""

# What an MCP agent calls instead of the HTTP routes a service message may name.
_TOOL_FOR_ROUTE = {
    "POST /v1/targets": "the register_target tool",
    "GET /v1/targets": "the list_targets tool",
    "GET /v1/vocabulary": "the vocabulary tool",
    "POST /v1/evidence": "the evidence tool",
    "POST /v1/retrieve": "the retrieve_transforms tool",
}


class ToolClient(ExperienceClient, Protocol):
    """What the tools call: an ExperienceClient with evidence and the vocabulary (both clients have them)."""

    def evidence(self, attempt_keys: Sequence[str]) -> list[dict[str, Any]]: ...

    def vocabulary(self) -> dict[str, Any]: ...


def _client(ctx: Context) -> ToolClient:
    client: ToolClient = ctx.request_context.lifespan_context["client"]
    return client


def _tool_error(exc: KernelGraphError) -> ToolError:
    """One line an agent can act on: the code, the message (HTTP routes named as the tools that do the
    same), the field and, for invalid input, every problem found."""
    message = exc.message
    for route, tool in _TOOL_FOR_ROUTE.items():
        message = message.replace(route, tool)
    where = f" (field: {exc.field})" if exc.field else ""
    problems = ""
    if isinstance(exc.details, list) and len(exc.details) > 1:
        problems = "; all problems: " + "; ".join(
            f"{d.get('field')}: {d.get('problem')}" for d in exc.details if isinstance(d, dict)
        )
    return ToolError(f"{exc.code}: {message}{where}{problems}")


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
    transforms: list[str] | None = None,
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
    - `transforms`: the transforms your kernel's task can apply (its list in `vocabulary`); send it so
      that evidence for transforms you cannot use takes none of the `k` states or `limit` slots.
    - `counters` may use Nsight Compute's raw metric names (vocabulary lists them per source).
    Returns {"transforms": [...], "signature": [...], "neighbours": n, "neighbour_ids": [...], ...};
    each transform has `transform` (its name), `score`, `success_rate`, `attempts`, `evidence_weight`
    (how much similar evidence there is), `best_speedup`, `params` (parameter settings that were tried)
    and `evidence_attempt_keys`. Empty `transforms`: no similar experience yet. A transform with
    `disputed` > 0 has settings whose evidence contradicts itself beyond measurement noise (one attempt
    helped, another hurt; or the same kernel ran once and failed once): treat it as uncertain and
    re-measure before relying on it. `by_params` gives each setting's mean (`weighted_log_speedup`)
    and spread (`sd_log_speedup`) of the log speedup. When fewer than `k` similar states were found,
    `explanation` says why: the dimensions your query lacked (`missing_dimensions`, each with the
    counters that fill it and how many stored states it kept out), how many states the namespace and
    the target hold, and how many `exclude_task` left out; `explanation.summary` in one sentence.
    """
    request: dict[str, Any] = {"target": target, "mode": mode, "limit": limit, "k": k}
    optional = {"signature": signature, "counters": counters, "counter_source": counter_source, "source": source,
                "exclude_task": exclude_task, "transforms": transforms}  # fmt: skip
    request.update({key: value for key, value in optional.items() if value is not None})
    try:
        return _client(ctx).retrieve(request).model_dump(mode="json")
    except KernelGraphError as exc:
        raise _tool_error(exc) from None


def record_attempt(
    ctx: Context,
    attempt_key: str | None = None,
    run_id: str | None = None,
    agent: str | None = None,
    target: str | None = None,
    transform: str | dict[str, Any] | None = None,
    params: dict[str, Any] | None = None,
    child: dict[str, Any] | None = None,
    outcome: str | None = None,
    parent: dict[str, Any] | None = None,
    parent_measurement: dict[str, Any] | None = None,
    parent_measurement_id: str | None = None,
    child_measurement: dict[str, Any] | None = None,
    speedup: float | None = None,
    diagnosis: str = "",
    rationale: str = "",
    attempt: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Record one optimization attempt so that later retrievals (yours and other agents') learn from it.

    Call this after every attempt, kept or not: failures are evidence too. Arguments (flat):
    - `attempt_key`: a unique id you choose, e.g. "<run_id>:<step>"; the same key again is a harmless no-op.
    - `run_id`, `agent`: your run and your name.
    - `target`: a registered hardware target (list_targets; register_target to add yours).
    - `transform`: its name (vocabulary lists them, e.g. "tile") and `params` its settings, e.g.
      {"bm": 128}; a {"name", "params"} object is accepted too.
    - `parent`: the kernel before, {"task", "backend", "source", "patterns": [...]}, with
      `parent_measurement`; or, once the parent is recorded, only `parent_measurement_id` (the
      `child_measurement_id` of an earlier result).
    - `child`: the kernel after (same shape as `parent`, same task).
    - `child_measurement`: omit when it did not compile or run. A measurement is {"median_ns",
      "iqr_ns", "trials", "correct", "counter_source", "counters": {...}}; counters may use Nsight
      Compute's raw metric names (vocabulary lists what each counter source reads).
    - `outcome`: kept | discarded | compile_error | rejected | incorrect | crashed | timeout | implausible
      (rejected = refused by the evaluator's admission checks, implausible = timed beyond the peak).
    - `speedup`: parent time / child time, when both ran; `diagnosis`, `rationale`: optional text.
    (Earlier versions took all of this wrapped in one `attempt` object; that still works.)
    Returns {"attempt_key", "created" (false when it was already recorded), "parent_kernel_id",
    "child_kernel_id", "parent_measurement_id", "child_measurement_id"}; use `child_kernel_id` with
    lineage and `child_measurement_id` as the next attempt's `parent_measurement_id`.
    """
    flat = {"attempt_key": attempt_key, "run_id": run_id, "agent": agent, "target": target,
            "child": child, "outcome": outcome, "parent": parent, "parent_measurement": parent_measurement,
            "parent_measurement_id": parent_measurement_id, "child_measurement": child_measurement,
            "speedup": speedup, "diagnosis": diagnosis or None, "rationale": rationale or None}  # fmt: skip
    record: dict[str, Any] = dict(attempt or {})
    record.update({key: value for key, value in flat.items() if value is not None})
    if isinstance(transform, str):
        record["transform"] = {"name": transform, "params": params or {}}
    elif transform is not None:
        record["transform"] = transform
    try:
        model = validate(AttemptRecord, record)
        return _client(ctx).record_attempt(model).model_dump(mode="json")
    except KernelGraphError as exc:
        raise _tool_error(exc) from None


def register_target(
    ctx: Context,
    name: str,
    kind: Literal["cpu", "cuda"],
    arch: str,
    peak_gflops: float | None = None,
    peak_gbps: float | None = None,
    cores: int | None = None,
    isa: str | None = None,
    sm_count: int | None = None,
    description: str = "",
) -> dict[str, Any]:
    """Register (or update) the hardware target your kernels run on; needed once before recording.

    - `name`: your choice, e.g. "h100-sxm" (list_targets shows those already registered).
    - `kind`: "cpu" or "cuda"; `arch`: e.g. "sm90" or "x86-64-v3".
    - `peak_gflops`, `peak_gbps`: the fp32 compute peak and memory bandwidth; the signature's
      compute_fraction and memory_fraction are fractions of these (without them those stay unmeasured).
    - `cores` (CPU), `isa` (CPU march level), `sm_count` (GPU), `description`: optional.
    Returns {"names": [name]}. Registering the same name again updates it.
    """
    target = {"name": name, "kind": kind, "arch": arch, "peak_gflops": peak_gflops, "peak_gbps": peak_gbps,
              "cores": cores, "isa": isa, "sm_count": sm_count, "description": description}  # fmt: skip
    try:
        model = validate(HardwareTarget, {k: v for k, v in target.items() if v is not None})
        return {"names": _client(ctx).upsert_targets([model])}
    except KernelGraphError as exc:
        raise _tool_error(exc) from None


def evidence(ctx: Context, attempt_keys: list[str]) -> dict[str, Any]:
    """The attempts behind a recommendation, in full: pass a retrieved transform's `evidence_attempt_keys`
    (at most 200). Returns {"attempts": [...]}, each with who recorded it (`agent`, `run_id`), when
    (`created_at`), its task, target, transform, params, outcome, speedup and the parent and child kernels.
    Keys you may not read are left out."""
    try:
        return {"attempts": _client(ctx).evidence(attempt_keys)}
    except KernelGraphError as exc:
        raise _tool_error(exc) from None


def vocabulary(ctx: Context) -> dict[str, Any]:
    """The names to choose from, so you never invent a label: `transforms` (name, what it does, how often
    it was tried and kept here), `tasks` (family, access patterns, backends, instances), `patterns`,
    `families`, `backends`, and `counter_sources`: for each (cpu_cachegrind, cpu_timing, nvidia_ncu,
    nvidia_timing, nvidia_static, kernelbench_timing) the signature dimensions it `fills` and from
    which counters, those it `cannot_fill`, and every counter name it reads (for nvidia_ncu, Nsight
    Compute's raw metric names such as "dram__throughput.avg.pct_of_peak_sustained_elapsed" too).
    Also the signature's dimensions, the outcomes and the retrieval modes."""
    try:
        return _client(ctx).vocabulary()
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
    vocabulary,
    register_target,
    retrieve_transforms,
    record_attempt,
    evidence,
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
