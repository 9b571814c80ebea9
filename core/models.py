"""Typed models of the experience graph and of the service's requests and responses.

Every write is validated here before anything reaches Neo4j: finite positive times, signatures of
the right dimension, known enums, bounded strings, names that are plain identifiers.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from functools import cached_property
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from kernelgraph.core import signature as signatures
from kernelgraph.core.errors import InvalidInput
from kernelgraph.core.signature import (
    SIGNATURE_DIM,
    SIGNATURE_VERSION,
    CounterName,
    CounterSource,
    signature_from_values,
    source_dimensions,
)

MAX_SOURCE_CHARS = 200_000
MAX_TEXT_CHARS = 8_000
MAX_BATCH = 1_000
MAX_EVIDENCE_KEYS = 200  # attempt keys per POST /v1/evidence
MAX_QUERY_TRANSFORMS = 64  # transforms a retrieval may name as its vocabulary (RetrieveRequest.transforms)

# Identifiers: letters, digits and . _ : + - only, so nothing that looks like Cypher gets through.
Name = Annotated[
    str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:+\-]*$", min_length=1, max_length=128)
]
Namespace = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9_\-]*$", min_length=1, max_length=64)]
ShortText = Annotated[str, StringConstraints(max_length=MAX_TEXT_CHARS)]


# The one finiteness rule of the contract: every float that crosses the seam is finite. Numbers and
# flags are strict: a JSON number (an integer too) is a float, but "1e6", "yes" or true are refused,
# never coerced (a bool is not a number, a string not a flag).
FiniteFloat = Annotated[float, Field(allow_inf_nan=False, strict=True)]
PositiveFinite = Annotated[float, Field(gt=0, allow_inf_nan=False, strict=True)]
NonNegativeFinite = Annotated[float, Field(ge=0, allow_inf_nan=False, strict=True)]


def _no_text_or_flag(value: Any) -> Any:
    if isinstance(value, bool | str | bytes):
        raise PydanticCustomError(
            "int_type", "Input should be a valid integer, not {kind}", {"kind": type(value).__name__}
        )
    return value


# Integers: a JSON number that is whole (2 or 2.0, as JSON Schema's `integer`), never "21" or true. After
# a Field's bounds in an Annotated: placed before them, it hides the bounds from the JSON Schema.
WHOLE = BeforeValidator(_no_text_or_flag)
StrictInt = Annotated[int, WHOLE]
StrictBool = Annotated[bool, Field(strict=True)]
# A transform parameter: an integer, a finite float, a flag or a short string, each as sent.
ParamValue = StrictInt | FiniteFloat | StrictBool | Annotated[str, StringConstraints(max_length=256)]
# Keys of a dict[Name, ...] must match Name's pattern: JSON Schema says so with patternProperties plus this.
_NAME_KEYS: dict[str, Any] = {"additionalProperties": False}
# A normalized counter signature as sent: one entry per dimension of the signature version, in [0, 1],
# null where not measured (the values of a core.signature.Signature, which also knows its source).
SignatureValues = Annotated[
    list[Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False, strict=True)] | None],
    Field(min_length=SIGNATURE_DIM, max_length=SIGNATURE_DIM),
]
_FINITE = TypeAdapter(Annotated[float, Field(allow_inf_nan=False)])  # a backend's numpy floats too


def counter_range(name: str) -> tuple[float, float] | None:
    """The values a counter the signature reads can take (None: a raw tool event, stored as sent).

    Percentages lie in [0, 100], miss rates and the `fits` flag in [0, 1], every other named counter
    (times, counts, rates, fractions of a peak) is non-negative.
    """
    if name not in _COUNTER_NAMES:
        return None
    if name.endswith("_pct"):
        return (0.0, 100.0)
    if name.endswith("_miss_rate") or name == CounterName.FITS:
        return (0.0, 1.0)
    return (0.0, math.inf)


_COUNTER_NAMES = frozenset(CounterName)


def finite_counters(raw: Mapping[str, float]) -> dict[str, float]:
    """The counters of `raw` that a Measurement accepts (finite, within `counter_range`), as floats.

    Backends mark a counter they could not compute with NaN (e.g. a relative spread of a zero time);
    such a counter is left out, so the signature treats it as unmeasured rather than the record failing.
    """
    kept: dict[str, float] = {}
    for name, value in raw.items():
        if isinstance(value, bool):
            continue
        try:
            number = _FINITE.validate_python(value)
        except ValidationError:
            continue
        bounds = counter_range(name)
        if bounds is None or bounds[0] <= number <= bounds[1]:
            kept[name] = number
    return kept


class Outcome(StrEnum):
    """What happened to one attempt: the evaluator gives it, the graph stores it."""

    KEPT = "kept"
    DISCARDED = "discarded"
    COMPILE_ERROR = "compile_error"
    INCORRECT = "incorrect"
    CRASHED = "crashed"
    TIMEOUT = "timeout"
    REJECTED = "rejected"  # refused by the evaluator's admission checks before running
    IMPLAUSIBLE = "implausible"  # timed beyond the target's measured peak: never kept


# Outcomes of attempts that never ran to a time: they carry no speedup.
NO_RUNTIME_OUTCOMES = frozenset({Outcome.COMPILE_ERROR, Outcome.CRASHED, Outcome.TIMEOUT, Outcome.REJECTED})
# How far a claimed speedup may differ from the ratio of its medians (relative): rounding, not more.
SPEEDUP_TOLERANCE = 1e-3


class TargetKind(StrEnum):
    CPU = "cpu"
    CUDA = "cuda"


class RetrievalMode(StrEnum):
    COUNTERS = "counters"  # states nearest by counter signature (the thesis)
    TEXT = "text"  # states of the kernels nearest by source text
    HYBRID = "hybrid"  # both, a state found both ways keeping the mean of its two similarities
    LABEL = "label"  # the states recorded for the task labels in `tasks`, alike
    GLOBAL = "global"  # every stored state alike: the prior of all experience


class Role(StrEnum):
    READER = "reader"
    WRITER = "writer"
    # A writer the operator trusts to have measured what it records (e.g. a re-measuring evaluator):
    # its evidence is `verified` (docs/api.md, "Who vouches for evidence").
    VERIFIER = "verifier"
    ADMIN = "admin"


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def content_id(*parts: Any) -> str:
    """Deterministic natural key from content, so MERGE makes replays no-ops."""
    digest = hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()
    return digest[:32]


class HardwareTarget(Strict):
    name: Name
    kind: TargetKind
    arch: Name
    peak_gflops: PositiveFinite | None = None
    peak_gbps: PositiveFinite | None = None
    cores: Annotated[int, Field(ge=1, le=100_000), WHOLE] | None = None
    isa: Name | None = None
    host: Annotated[str, StringConstraints(max_length=256)] | None = None
    sm_count: Annotated[int, Field(ge=1, le=10_000), WHOLE] | None = None
    smem_per_block_bytes: Annotated[int, Field(ge=1, le=2**40), WHOLE] | None = None
    registers_per_sm: Annotated[int, Field(ge=1, le=2**40), WHOLE] | None = None
    description: Annotated[str, StringConstraints(max_length=512)] = ""


class KernelVariant(Strict):
    """One concrete variant (its source) of a task."""

    task: Name
    backend: Name
    source: Annotated[str, StringConstraints(min_length=1, max_length=MAX_SOURCE_CHARS)]
    patterns: Annotated[list[Name], Field(min_length=1, max_length=8)]
    family: Name | None = None
    variant: Annotated[str, StringConstraints(max_length=512)] = ""

    @cached_property
    def kernel_id(self) -> str:
        # Cached (the model is frozen): recording reads it several times per attempt, and hashing
        # the source each time was a tenth of the service's ingestion time.
        return content_id("kernel", self.task, self.backend, self.source)


class AppliedTransform(Strict):
    name: Name
    params: Annotated[dict[Name, ParamValue], Field(max_length=32, json_schema_extra=_NAME_KEYS)] = Field(
        default_factory=dict
    )

    @field_validator("params", mode="before")
    @classmethod
    def _finite_params(cls, params: Any) -> Any:
        # Before the union of ParamValue, which would report NaN as "not a valid integer".
        if isinstance(params, Mapping):
            for name, value in params.items():
                if isinstance(value, float) and not math.isfinite(value):
                    raise PydanticCustomError(
                        "finite_number",
                        "must be finite, not {value}",
                        {"value": str(value), "field": str(name)},
                    )
        return params


def _signature_of_source(source: CounterSource) -> dict[str, Any]:
    """The rule of Measurement._signature_of_its_source for one counter source, as JSON Schema: a given
    signature is null at every dimension the source does not measure and measures at least one."""
    measured = set(source_dimensions(source))
    return {
        "if": {"required": ["counter_source"], "properties": {"counter_source": {"const": source.value}}},
        "then": {"properties": {"signature": {"anyOf": [
            {"type": "null"},
            {"type": "array", "contains": {"type": "number"},
             "prefixItems": [{} if i in measured else {"type": "null"} for i in range(SIGNATURE_DIM)]},
        ]}}},
    }  # fmt: skip


class Measurement(Strict):
    """Runtime statistics, correctness and counters of one kernel on one target.

    `median_ns` is required unless `static` is true (a compile-only measurement). A given `signature`
    is null at every dimension its `counter_source` does not measure (docs/counter-signature.md).
    """

    model_config = ConfigDict(
        json_schema_extra={  # the rules of _runtime_unless_static and _signature_of_its_source, for
            # OpenAPI readers and fuzzers
            "anyOf": [
                {"required": ["median_ns"], "properties": {"median_ns": {"type": "number"}}},
                {"required": ["static"], "properties": {"static": {"const": True}}},
            ],
            "allOf": [_signature_of_source(source) for source in CounterSource],
        }
    )

    median_ns: PositiveFinite | None = None  # None only for static (compile-only) measurements
    iqr_ns: NonNegativeFinite | None = None
    trials: Annotated[int, Field(ge=0, le=1_000_000), WHOLE] = 0
    correct: StrictBool
    static: StrictBool = False
    counter_source: CounterSource
    # Keyed by CounterName (what the signature reads); other names, such as raw tool events, are stored as sent.
    counters: Annotated[dict[Name, FiniteFloat], Field(max_length=256, json_schema_extra=_NAME_KEYS)] = Field(
        default_factory=dict
    )
    # Computed by the service from `counters` when absent (the usual way). Given, it has one entry per
    # dimension, null where not measured, and nothing at a dimension `counter_source` does not measure.
    signature: SignatureValues | None = None
    signature_version: int = SIGNATURE_VERSION  # stored as the version of the signature actually stored
    taken_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    tool_versions: Annotated[
        dict[Name, Annotated[str, StringConstraints(max_length=128)]],
        Field(max_length=32, json_schema_extra=_NAME_KEYS),
    ] = Field(default_factory=dict)
    # Which evaluator measured (agent.evaluator.EVALUATOR_VERSION) and whether its sandbox was on;
    # None on measurements recorded before these were kept (evaluator 1, unsandboxed).
    # Both are the writer's claims: only evidence a trusted process recorded is `verified` (docs/api.md).
    evaluator_version: Annotated[int, Field(ge=1, le=1000), WHOLE] | None = None
    sandboxed: StrictBool | None = None
    # The parent's median timed in the same run as this (child) measurement, interleaved with it: the
    # pair an attempt's `speedup` is the ratio of, which the service checks it against.
    parent_median_ns: PositiveFinite | None = None

    @field_validator("counters")
    @classmethod
    def _counters_in_range(cls, counters: dict[str, float]) -> dict[str, float]:
        for name, value in counters.items():
            bounds = counter_range(name)
            if bounds is not None and not bounds[0] <= value <= bounds[1]:
                raise PydanticCustomError(  # `counter` extends the error's field (invalid_from)
                    "counter_range", "{value} is outside [{low}, {high}]",
                    {"counter": name, "value": f"{value:g}", "low": f"{bounds[0]:g}", "high": f"{bounds[1]:g}"},
                )  # fmt: skip
        return counters

    # The yardsticks (agent/library.py; schema 0016): the library call a user would make instead, timed
    # beside this kernel ("torch 2.5.1, 2 threads") and its time, the task's naive kernel's time, and the
    # roofline: achieved FLOP/s and bytes/s, and the roofline's least time for this work on the target
    # over `median_ns`. None where not measured, as on every measurement recorded before them. The
    # speedups are computed from the times (`speedup_vs_library`, `speedup_vs_naive`), never sent.
    library: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = None
    library_median_ns: PositiveFinite | None = None
    naive_median_ns: PositiveFinite | None = None
    achieved_gflops: NonNegativeFinite | None = None
    achieved_gbps: NonNegativeFinite | None = None
    roofline_fraction: NonNegativeFinite | None = None

    @field_validator("signature")
    @classmethod
    def _signature_shape(cls, value: list[float | None] | None) -> list[float | None] | None:
        if value is None:
            return value
        if len(value) != SIGNATURE_DIM:
            raise ValueError(
                f"must have {SIGNATURE_DIM} components (signature version {SIGNATURE_VERSION}; null where "
                f"not measured), got {len(value)}"
            )
        if any(v is not None and (v < 0.0 or v > 1.0) for v in value):
            raise ValueError("components must lie in [0, 1]")
        if all(v is None for v in value):
            raise ValueError("at least one component must be measured (not null)")
        return value

    @field_validator("signature")
    @classmethod
    def _signature_of_its_source(
        cls, value: list[float | None] | None, info: Any
    ) -> list[float | None] | None:
        source = info.data.get("counter_source")  # validated before `signature` (declared first)
        if value is not None and source is not None:
            signature_from_values(value, source)  # ValueError naming a dimension the source does not measure
        return value

    def signature_on(self, peaks: signatures.TargetPeaks) -> signatures.Signature:
        """The signature this measurement stands for: the one given, on the dimensions its counter source
        fills (the one rule, core/signature.py `source_dimensions`, as `_signature_of_its_source`
        checked), else the one its counters give on a target of these peaks."""
        if self.signature is not None:
            return signature_from_values(self.signature, self.counter_source)
        return signatures.compute_signature(self.counter_source, self.counters, peaks)

    @model_validator(mode="after")
    def _runtime_unless_static(self) -> Measurement:
        if not self.static and self.median_ns is None:
            raise ValueError("median_ns is required unless the measurement is static (compile-only)")
        return self

    @property
    def speedup_vs_library(self) -> float | None:
        """library_median_ns / median_ns: above 1, faster than the library."""
        if self.library_median_ns is None or not self.median_ns:
            return None
        return self.library_median_ns / self.median_ns

    @property
    def speedup_vs_naive(self) -> float | None:
        if self.naive_median_ns is None or not self.median_ns:
            return None
        return self.naive_median_ns / self.median_ns

    def measurement_id(self, kernel_id: str, target: str) -> str:
        # Content, not time: a replay without `taken_at` must map to the stored measurement.
        return content_id(
            "measurement",
            kernel_id,
            target,
            self.median_ns,
            self.iqr_ns,
            self.trials,
            self.counters,
            self.static,
        )


MeasurementId = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{32}$")]


class AttemptRecord(Strict):
    """One attempt: parent kernel + transform -> child kernel, with its outcome, as an agent reports it.

    The parent is given in full (`parent`, optionally `parent_measurement`) or, once it has been
    recorded, by reference: `parent_measurement_id` names a stored measurement (the `..._measurement_id`
    of an earlier RecordResult or MeasurementResult), and its kernel is the parent. A run then sends its
    parent's source and measurement once, not with every attempt; what is stored is the same.

    Rules beyond each field's own: `parent` or `parent_measurement_id` is given; `parent_measurement`
    and `parent_measurement_id` are not both given; `child.task` equals `parent.task` (and the task of
    the kernel that `parent_measurement_id` measured); `target` and `parent_measurement_id` name a
    registered target and a recorded measurement of it in the namespace (404 otherwise).
    """

    model_config = ConfigDict(
        json_schema_extra={  # the rules of the validators below that JSON Schema can state
            "allOf": [
                {
                    "anyOf": [
                        {"required": ["parent"], "properties": {"parent": {"type": "object"}}},
                        {
                            "required": ["parent_measurement_id"],
                            "properties": {"parent_measurement_id": {"type": "string"}},
                        },
                    ]
                },
                {
                    "not": {
                        "required": ["parent_measurement", "parent_measurement_id"],
                        "properties": {
                            "parent_measurement": {"type": "object"},
                            "parent_measurement_id": {"type": "string"},
                        },
                    }
                },
            ]
        }
    )

    attempt_key: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:+\-]*$", max_length=200)]
    run_id: Name
    agent: Name
    target: Name
    parent_measurement_id: MeasurementId | None = None  # a measurement already stored on `target`
    parent: KernelVariant | None = Field(default=None, validate_default=True)  # None: by the id above
    parent_measurement: Measurement | None = None
    transform: AppliedTransform
    child: KernelVariant
    child_measurement: Measurement | None = None
    outcome: Outcome
    speedup: PositiveFinite | None = None  # parent median / child median, when both ran
    diagnosis: ShortText = ""
    rationale: ShortText = ""

    @field_validator("child")
    @classmethod
    def _same_task(cls, child: KernelVariant, info: Any) -> KernelVariant:
        parent = info.data.get("parent")
        if parent is not None and parent.task != child.task:
            raise ValueError(f"child task {child.task!r} differs from parent task {parent.task!r}")
        return child

    @field_validator("parent")
    @classmethod
    def _parent_given(cls, parent: KernelVariant | None, info: Any) -> KernelVariant | None:
        if parent is None and info.data.get("parent_measurement_id") is None:
            raise ValueError("required unless parent_measurement_id names an already recorded parent")
        return parent

    @model_validator(mode="after")
    def _consistent(self) -> AttemptRecord:
        """The outcome agrees with correctness and times, and `speedup` with the pair it is the ratio of."""
        child = self.child_measurement
        if self.outcome in NO_RUNTIME_OUTCOMES and self.speedup is not None:
            raise PydanticCustomError(
                "inconsistent", "an attempt that is {outcome} never ran to a time: it carries no speedup",
                {"outcome": self.outcome.value, "field": "speedup"},
            )  # fmt: skip
        if child is not None and not child.correct and self.outcome in (Outcome.KEPT, Outcome.DISCARDED):
            raise PydanticCustomError(
                "inconsistent", "the child measurement is not correct, so the attempt cannot be {outcome}",
                {"outcome": self.outcome.value, "field": "child_measurement.correct"},
            )  # fmt: skip
        if child is not None and child.correct and self.outcome is Outcome.INCORRECT:
            raise PydanticCustomError(
                "inconsistent", "an incorrect attempt's child measurement cannot be correct",
                {"field": "child_measurement.correct"},
            )  # fmt: skip
        if self.outcome is Outcome.KEPT and (self.speedup is None or self.speedup <= 1.0):
            raise PydanticCustomError(
                "inconsistent", "kept means correct and faster than the parent: the speedup must exceed 1",
                {"field": "speedup"},
            )  # fmt: skip
        if self.speedup is None:
            return self
        if child is None or child.median_ns is None:
            raise PydanticCustomError(
                "inconsistent", "a speedup needs the child's timed measurement (child_measurement.median_ns)",
                {"field": "speedup"},
            )  # fmt: skip
        if child.parent_median_ns is None:
            raise PydanticCustomError(
                "missing", "required with a speedup: the parent's median timed in the same run as the child",
                {"field": "child_measurement.parent_median_ns"},
            )  # fmt: skip
        ratio = child.parent_median_ns / child.median_ns
        if abs(self.speedup / ratio - 1.0) > SPEEDUP_TOLERANCE:
            raise PydanticCustomError(
                "inconsistent",
                "{speedup} is not child_measurement.parent_median_ns / child_measurement.median_ns = {ratio}",
                {"speedup": f"{self.speedup:.6g}", "ratio": f"{ratio:.6g}", "field": "speedup"},
            )  # fmt: skip
        return self

    @field_validator("parent_measurement")
    @classmethod
    def _measured_once(cls, measurement: Measurement | None, info: Any) -> Measurement | None:
        if measurement is not None and info.data.get("parent_measurement_id") is not None:
            raise ValueError("give the parent's measurement or parent_measurement_id, not both")
        return measurement


class MeasurementRecord(Strict):
    """A kernel measured on a target outside any attempt (e.g. a published timing with no partner).

    `key` names the record in results and on the stored measurement; the measurement itself is
    merged on its content, so recording the same measurement again writes nothing.
    """

    key: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:+\-]*$", max_length=200)]
    run_id: Name
    target: Name
    kernel: KernelVariant
    measurement: Measurement
    note: ShortText = ""


class MeasurementResult(BaseModel):
    key: str
    created: bool  # False: a measurement with this key was already stored and nothing was written
    kernel_id: str
    measurement_id: str


class RecordResult(BaseModel):
    attempt_key: str
    created: bool  # False: the attempt was already stored and nothing was written
    parent_kernel_id: str
    child_kernel_id: str
    parent_measurement_id: str | None
    child_measurement_id: str | None


@dataclass(frozen=True)
class _Needs:
    """A retrieval rule: the request must carry every field of one of `any_of` (a field is carried when
    it is not null, and a string not empty), else an error naming `field` with `message`."""

    field: str
    message: str
    any_of: tuple[tuple[str, ...], ...]

    def met(self, request: BaseModel) -> bool:
        return any(all(getattr(request, name) not in (None, "") for name in group) for group in self.any_of)

    def json_schema(self) -> dict[str, Any]:
        return {"anyOf": [{"required": list(group), "properties": {name: _CARRIED[name] for name in group}}
                          for group in self.any_of]}  # fmt: skip


# What "carried" means in JSON Schema, for the fields the rules name.
_CARRIED: dict[str, dict[str, Any]] = {
    "signature": {"type": "array"},
    "counters": {"type": "object"},
    "counter_source": {"type": "string"},
    "source": {"type": "string", "minLength": 1},
    "tasks": {"type": "array", "minItems": 1},
}
_STATE = _Needs(
    "signature",
    "counters mode needs `signature`, or `counters` with `counter_source`",
    (("signature",), ("counters", "counter_source")),
)
_SOURCE = _Needs("source", "text mode needs the kernel's `source`", (("source",),))
_TASKS = _Needs("tasks", "label mode needs `tasks`, the task labels to retrieve", (("tasks",),))
# Raw counters are read by their source: without a signature, they come with their `counter_source`.
_COUNTERS_SOURCED = _Needs(
    "counter_source",
    "`counter_source` is required with raw `counters`",
    (("signature",), ("counter_source",)),
)


class RetrieveRequest(Strict):
    """Find transforms that worked from measured states like this one.

    What each mode needs besides `target` (`_MODE_NEEDS`): `counters` (the default) and `hybrid` a
    `signature`, or raw `counters` with `counter_source`; `text` and `hybrid` a non-empty `source`;
    `label` its `tasks`; `global` nothing more. Raw `counters` without a `signature` always come with
    their `counter_source`. `target` names a registered target (404 otherwise).
    """

    model_config = ConfigDict(json_schema_extra=lambda schema: schema.update(_retrieval_rules_schema()))

    target: Name
    mode: RetrievalMode = RetrievalMode.COUNTERS
    signature: SignatureValues | None = None  # null where not measured
    counters: (
        Annotated[dict[Name, FiniteFloat], Field(max_length=256, json_schema_extra=_NAME_KEYS)] | None
    ) = None
    counter_source: CounterSource | None = None
    source: Annotated[str, StringConstraints(max_length=MAX_SOURCE_CHARS)] | None = None
    k: Annotated[int, Field(ge=1, le=200), WHOLE] = 20
    limit: Annotated[int, Field(ge=1, le=100), WHOLE] = 10
    tasks: Annotated[list[Name], Field(min_length=1, max_length=64)] | None = None  # label mode
    exclude_task: Name | None = None  # held-out evaluation: ignore experience from this task
    exclude_tasks: Annotated[list[Name], Field(max_length=64)] = Field(
        default_factory=list
    )  # e.g. a whole family
    # Only evidence a trusted process recorded: the service's own evaluator or a verifier key.
    verified_only: StrictBool = False
    # The query's vocabulary: the transforms it can apply (agent/vocabulary.py query_vocabulary). When
    # given, only evidence for these is read, and a state without any takes no neighbour slot
    # (docs/retrieval.md, "Within the query's vocabulary"); None: every transform.
    transforms: Annotated[list[Name], Field(min_length=1, max_length=MAX_QUERY_TRANSFORMS)] | None = None

    @property
    def excluded_tasks(self) -> list[str]:
        return sorted({*self.exclude_tasks, *([self.exclude_task] if self.exclude_task else [])})

    @field_validator("signature")
    @classmethod
    def _signature_shape(cls, value: list[float | None] | None) -> list[float | None] | None:
        return Measurement._signature_shape(value)

    @model_validator(mode="after")
    def _carries_what_its_mode_needs(self) -> RetrieveRequest:
        for needs in (*([_COUNTERS_SOURCED] if self.counters is not None else []), *_MODE_NEEDS[self.mode]):
            if not needs.met(self):
                raise PydanticCustomError(RETRIEVAL_MODE_ERROR, needs.message, {"field": needs.field})
        return self


RETRIEVAL_MODE_ERROR = "retrieval_mode"  # the pydantic error type of a mode's unmet need

_MODE_NEEDS: dict[RetrievalMode, tuple[_Needs, ...]] = {
    RetrievalMode.COUNTERS: (_STATE,),
    RetrievalMode.TEXT: (_SOURCE,),
    RetrievalMode.HYBRID: (_STATE, _SOURCE),
    RetrievalMode.LABEL: (_TASKS,),
    RetrievalMode.GLOBAL: (),
}


def _retrieval_rules_schema() -> dict[str, Any]:
    """RetrieveRequest's rules (_carries_what_its_mode_needs) as JSON Schema, for OpenAPI readers and fuzzers."""
    default = RetrieveRequest.model_fields["mode"].default

    def mode_is(mode: RetrievalMode) -> dict[str, Any]:
        given = {"required": ["mode"], "properties": {"mode": {"const": mode.value}}}
        return {"anyOf": [given, {"not": {"required": ["mode"]}}]} if mode is default else given

    by_mode = [
        {"allOf": [mode_is(mode), *(n.json_schema() for n in needs)]} for mode, needs in _MODE_NEEDS.items()
    ]
    counters_given = {"required": ["counters"], "properties": {"counters": {"type": "object"}}}
    return {
        "allOf": [{"anyOf": by_mode}, {"anyOf": [{"not": counters_given}, _COUNTERS_SOURCED.json_schema()]}]
    }


class ParamEvidence(BaseModel):
    """How one parameter setting of a transform fared from the neighbouring states."""

    params: dict[str, Any]
    attempts: int
    successes: int
    weight: float  # sum of similarity x target weight over its attempts
    weighted_log_speedup: float
    # Spread of the log speedups of the attempts that ran (sample sd; None below two runs) and whether
    # consolidation flagged a contradiction in this setting's evidence (docs/retrieval.md).
    sd_log_speedup: float | None = None
    disputed: bool = False


class RetrievedTransform(BaseModel):
    transform: str
    score: float  # weighted_log_speedup x confidence
    attempts: int
    successes: int
    success_rate: float
    weighted_log_speedup: float
    confidence: float  # evidence_weight / (evidence_weight + RetrieveResponse.prior_weight)
    # How much evidence there is: the sum of similarity x target weight over its attempts (what a
    # proposer weighs the evidence by; `confidence` is this, shrunk by the service's prior).
    evidence_weight: float
    mean_similarity: float
    same_target_attempts: int
    other_target_attempts: int
    best_speedup: float | None
    best_example: dict[str, Any] | None
    params: list[dict[str, Any]]
    by_params: list[ParamEvidence] = Field(default_factory=list)
    evidence_measurement_ids: list[str]
    evidence_attempt_keys: list[str]
    # Contradictions consolidation flagged in this evidence (same state, transform and setting, outcomes
    # disagreeing beyond noise): the evidence counts, but a proposer should say it is disputed.
    disputed: int = 0
    verified_attempts: int = 0  # of `attempts`, those a trusted process recorded (docs/api.md)
    keys: int = 0  # how many API keys recorded the evidence (`legacy`, evidence older than keys, is one)


class MissingDimension(BaseModel):
    """A signature dimension the query did not measure, and what that cost."""

    dimension: str
    # The counters that fill it from the request's counter source; None when that source cannot
    # measure it at all (docs/api.md, "What each counter source fills").
    fill_with: str | None
    # Explored states that measured it: none of them can be a neighbour of this query, since a state is
    # compared on every dimension it measured (docs/retrieval.md).
    blocked_states: int


class RetrievalExplanation(BaseModel):
    """Why a retrieval found fewer than `k` neighbours: what the query measured and what the graph holds."""

    measured_dimensions: list[str]
    missing_dimensions: list[MissingDimension]
    states: int  # explored states in the namespaces read (re-measurements merged into another left out)
    states_on_target: int  # of them, measured on the request's target
    comparable_states: int  # of them, states this query can be compared with (before task exclusion)
    excluded_by_task: int  # comparable states left out by `exclude_task(s)`
    summary: str  # the above in one sentence, with what to send to find more


class TargetWeight(BaseModel):
    """What evidence from one other target weighed in a retrieval, and why (docs/retrieval.md)."""

    target: str
    weight: float  # each of its attempts counts this much times its state's similarity
    basis: Literal["measured", "prior"]  # its measured similarity to the query target, or none measured
    rank_correlation: float | None = None  # the transfer matrix's Spearman, as consolidation measured it
    pairs: int = 0  # the (transform, kernel) effects both targets measured, that it rests on
    measured_at: str | None = None


class RetrieveResponse(BaseModel):
    mode: RetrievalMode
    target: str
    # The signature the neighbours were found by, null where not measured (None in text mode).
    signature: list[float | None] | None
    neighbours: int
    neighbour_ids: list[str]  # the neighbouring states' measurement ids, most similar first
    neighbour_scores: list[float] = Field(default_factory=list)  # their similarities, same order
    transforms: list[RetrievedTransform]
    # How the evidence was scored, so that a client weighs its own attempts the same way:
    failure_log_speedup: float  # the log speedup an attempt without a runtime counts as
    prior_weight: float  # the evidence weight that confidence shrinks towards zero by
    # Who vouches for the evidence behind `transforms`: its attempts, how many of them are verified,
    # and from how many API keys; whether only verified evidence was read; and the most any key but
    # the caller's moves a transform's score (docs/retrieval.md, "No writer dominates").
    evidence_attempts: int = 0
    verified_attempts: int = 0
    evidence_keys: int = 0
    verified_only: bool = False
    influence_bound: float = 0.0
    # What each other target's evidence weighed: by its measured similarity, else the prior.
    other_target_weight: float = 0.0  # the prior
    target_weights: list[TargetWeight] = Field(default_factory=list)
    # Present when fewer than `k` neighbours were found: which dimensions were missing, how many states
    # the namespaces and target hold, what was filtered out (None when the retrieval found k).
    explanation: RetrievalExplanation | None = None


class TransferRow(BaseModel):
    transform: str
    pairs: int
    rank_correlation: float | None
    agreement_rate: float | None
    mean_log_speedup_source: float
    mean_log_speedup_destination: float
    examples: list[dict[str, Any]]


class TransferResponse(BaseModel):
    source_target: str
    destination_target: str
    pattern: str | None
    transforms: list[TransferRow]
    overall_rank_correlation: float | None


class TransferMatrixRequest(Strict):
    """Ask for the transfer matrix over every target (optionally of one transform)."""

    transform: Name | None = None  # only this transform's effects; None: all, pooled
    resamples: Annotated[int, Field(ge=0, le=10_000), WHOLE] = (
        1_000  # bootstrap resamples for the CIs (0: none)
    )


class TransferTarget(BaseModel):
    name: str
    arch: str
    family: str  # Turing, Ampere, Ada, Hopper, Blackwell (from the SM version), or unknown
    peak_gflops: float | None
    peak_gbps: float | None
    effects: int  # measured (transform, kernel) effects on this target


class TransferCell(BaseModel):
    source: str
    destination: str
    pairs: int  # (transform, kernel) effects measured on both
    rank_correlation: float | None  # Spearman of the log speedups; None when undefined
    ci_low: float | None  # bootstrap 95% percentile interval (pairs resampled)
    ci_high: float | None
    agreement: float | None  # share of pairs agreeing on "helps" (speedup > 1) or "hurts"


class TransferMatrixResponse(BaseModel):
    transform: str | None
    resamples: int
    targets: list[TransferTarget]  # in architecture order, oldest first
    cells: list[TransferCell]  # every ordered pair of distinct targets


class TransferPredictRequest(Strict):
    """Predict a transform's effect on each kernel for a target, from the other targets only."""

    target: Name
    transform: Name | None = None


class SourceWeight(BaseModel):
    target: str
    similarity: float  # exp(-distance) on paper: peaks and architecture generations
    estimated_rank_correlation: float  # similarity-weighted mean of its transfer to targets like this one
    weight: float  # rho^2 / (1 - rho^2), rho clipped to [0, 0.95]


class PredictedEffect(BaseModel):
    transform: str
    params: dict[str, Any]
    kernel_id: str
    task: str
    predicted_speedup: float
    sources: int  # how many other targets measured this effect
    measured_speedup: float | None  # on the target itself when it has been measured (never used to predict)


class TransferPrediction(BaseModel):
    target: str
    transform: str | None
    weights: list[SourceWeight]
    predictions: list[PredictedEffect]
    rank_correlation_with_measured: float | None  # over the effects measured on the target, if any
    helps_hurts_accuracy: float | None


class LineageStep(BaseModel):
    kernel_id: str
    task: str
    variant: str
    transform: str | None
    outcome: str | None
    speedup: float | None
    depth: int


def validate(model: type[Strict], data: Any) -> Any:
    """Validate `data` as `model` or raise one InvalidInput naming the first bad field and the problem."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise invalid_from(exc) from None


def invalid_from(exc: ValidationError) -> InvalidInput:
    errors = exc.errors(include_url=False, include_input=False)
    first = errors[0]
    field = _field_of(first) or None
    problems = [{"field": _field_of(e), "problem": e["msg"]} for e in errors]
    return InvalidInput(error_message(field, first), field=field, details=problems)


# Rules across fields whose messages are worded around the field they name (RetrieveRequest's modes:
# "label mode needs `tasks`, ..."), so they are not prefixed with it.
SELF_NAMING_ERRORS = frozenset({RETRIEVAL_MODE_ERROR})


def error_message(field: str | None, error: Mapping[str, Any]) -> str:
    """The message of one pydantic error: `field: problem`, or the problem alone where it names its field."""
    problem = str(error.get("msg", ""))
    return f"{field}: {problem}" if field and error.get("type") not in SELF_NAMING_ERRORS else problem


def _field_of(error: Any) -> str:
    return ".".join(str(part) for part in error_location(error))


def error_location(error: Mapping[str, Any]) -> tuple[Any, ...]:
    """The location of one pydantic error: a counter out of its range names the counter too, and a
    rule across fields (AttemptRecord._consistent, AppliedTransform params) the field it is about."""
    ctx = error.get("ctx") or {}
    extra = [str(ctx[name]) for name in ("counter", "field") if ctx.get(name)]
    return (*error.get("loc", ()), *".".join(extra).split(".")) if extra else tuple(error.get("loc", ()))
