"""The llm proposer: Claude writes the next variant's source, guided by the retrieved evidence.

The prompt carries the task, the current source, its profile and the last diagnosis, this run's
history and what the experience graph retrieved for the current measured state: a ranked, deduplicated
evidence set of at most `MAX_EVIDENCE_CHARS` characters (one line per transform and parameter setting,
the best setting of each transform first, contradictions marked), so the prompt does not grow with the
graph. The answer comes
back through one tool, `propose_variant` (a transform from the shared vocabulary, a rationale and
the full new source). A proposal that does not compile goes back to the model as the tool's error
result for at most `max_repairs` repair turns. A malformed answer (no tool call, unknown transform,
empty source) or an API error (status, connection, timeout) never escapes: the proposer falls back
to its `fallback` proposer (memoryless by default), or returns None when that has nothing either.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kernelgraph.agent.proposers.base import (
    Proposal,
    ProposalContext,
    Proposer,
    describe_config,
)
from kernelgraph.agent.proposers.experience import ExperienceProposer
from kernelgraph.agent.proposers.memoryless import MemorylessProposer
from kernelgraph.agent.transforms import Transform
from kernelgraph.core.models import ParamEvidence, RetrievedTransform
from kernelgraph.core.signature import CounterName

if TYPE_CHECKING:
    import anthropic

    from kernelgraph.agent.target import Target
    from kernelgraph.core.settings import AgentSettings

log = logging.getLogger(__name__)

TOOL_NAME = "propose_variant"
SHOWN_COUNTERS = (
    CounterName.TIME_NS, CounterName.GFLOPS, CounterName.GBPS, CounterName.ARITHMETIC_INTENSITY,
    CounterName.THREADS, CounterName.COMPUTE_FRACTION_OF_PEAK, CounterName.MEMORY_FRACTION_OF_PEAK,
    CounterName.INSTRUCTIONS, CounterName.D1_MISS_RATE, CounterName.LL_MISS_RATE, CounterName.REL_IQR,
)  # fmt: skip

SYSTEM_PROMPT = """You optimize C kernels for a CPU. Each turn you get one kernel, its measured profile and \
what an experience graph learned from similar measured kernels, and you answer with exactly one call of \
the tool `propose_variant`: the transform you apply (one name from the vocabulary), why, and the COMPLETE \
new C source. Rules: keep the exported function `void kernel(...)` with exactly the same parameters; \
compute exactly what the current source computes (outputs are compared with the reference at fp32 \
tolerance on several input sets, and inputs must not be modified); gcc -O2 -fopenmp -std=gnu11 with the \
target's -march builds it; OpenMP pragmas, GCC vector extensions and <immintrin.h> intrinsics of the \
target's ISA are allowed (code beyond it, through `#pragma GCC target` or `__attribute__((target))`, is \
rejected before it runs); no I/O, no global state that caches results."""

# What explicit vector code may use on each CPU level (cpu-native: what this host's flags allow).
VECTOR_ISA = {
    "x86-64-v2": "SSE4.2: 4 fp32 lanes (__m128), no FMA",
    "x86-64-v3": "AVX2 + FMA: 8 fp32 lanes (__m256), 16 vector registers",
    "x86-64-v4": "AVX-512: 16 fp32 lanes (__m512), 32 vector registers, FMA",
}


def vector_isa(target: Target) -> str:
    """One line on the vector ISA the target's -march enables, for explicit vector code."""
    if target.kind != "cpu":
        return ""
    if target.arch == "native":
        from kernelgraph.agent.targets import _cpuinfo

        flags = _cpuinfo()[1]
        level = (
            "x86-64-v4" if "avx512f" in flags else "x86-64-v3" if {"avx2", "fma"} <= flags else "x86-64-v2"
        )
        return f"Vector ISA (this host): {VECTOR_ISA[level]}.\n"
    return f"Vector ISA: {VECTOR_ISA[target.arch]}.\n" if target.arch in VECTOR_ISA else ""


def tool_spec() -> dict[str, Any]:
    """The tool the model must call; its description is written for the model that reads it."""
    return {
        "name": TOOL_NAME,
        "description": (
            "Propose the next variant of the kernel. `transform` names the main change, from the shared "
            "vocabulary; `source` is the complete C translation unit (includes and `void kernel(...)` with "
            "the same signature); `rationale` says in one or two sentences why it should be faster here."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "transform": {"type": "string", "enum": [t.value for t in Transform]},
                "rationale": {"type": "string"},
                "source": {"type": "string"},
            },
            "required": ["transform", "rationale", "source"],
        },
    }


class MalformedAnswer(ValueError):
    """The model's answer could not be used as a proposal."""


@dataclass
class LLMStats:
    calls: int = 0
    repairs: int = 0
    fallbacks: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    errors: list[str] = field(default_factory=list)


def parse_answer(content: Sequence[Any]) -> tuple[str, str, str, str]:
    """(tool_use id, transform, rationale, source) from a Messages API answer, or MalformedAnswer."""
    for block in content:
        if getattr(block, "type", None) == "tool_use" and getattr(block, "name", None) == TOOL_NAME:
            data = block.input if isinstance(block.input, dict) else {}
            transform, source = data.get("transform"), data.get("source")
            if transform not in {t.value for t in Transform}:
                raise MalformedAnswer(f"unknown transform {transform!r}")
            if not isinstance(source, str) or not source.strip():
                raise MalformedAnswer("empty source")
            rationale = data.get("rationale")
            return str(block.id), str(transform), str(rationale or ""), source
    raise MalformedAnswer(f"no {TOOL_NAME} tool call in the answer")


# The evidence the prompt carries is bounded, whatever the graph's size (docs/retrieval.md).
MAX_EVIDENCE_CHARS = 1_600
MAX_EVIDENCE_LINES = 14


@dataclass(frozen=True)
class EvidenceItem:
    """One (transform, parameter setting) of the retrieved evidence, as the prompt shows it."""

    transform: str
    params: dict[str, Any]
    attempts: int
    successes: int
    weight: float  # similarity- and version-weighted amount of evidence
    log_speedup: float  # weighted mean log speedup of the setting
    sd_log_speedup: float | None
    disputed: bool
    transform_score: float  # the service's score of the whole transform (ranks the transforms)

    @property
    def key(self) -> tuple[str, str]:
        return self.transform, json.dumps(self.params, sort_keys=True, default=str)

    def line(self, best: dict[str, Any] | None = None) -> str:
        spread = f" (spread x{math.exp(self.sd_log_speedup):.2f})" if self.sd_log_speedup else ""
        text = (
            f"- {self.transform} {_params_text(self.params)}: {math.exp(self.log_speedup):.2f}x mean{spread} "
            f"over {self.attempts} attempts, {self.successes} kept, weight {self.weight:.1f}"
        )
        if best and best.get("speedup"):
            text += f"; best {best['speedup']:.2f}x on {best.get('task', '?')}"
        if self.disputed:
            text += "; DISPUTED: outcomes disagree beyond noise, re-measure before trusting"
        return text


def _params_text(params: dict[str, Any]) -> str:
    if not params:
        return "(no parameters)"
    return "{" + ", ".join(f"{k}: {v}" for k, v in sorted(params.items())) + "}"


def evidence_items(evidence: dict[str, RetrievedTransform]) -> list[EvidenceItem]:
    """One item per distinct (transform, setting), duplicates merged by weight; a transform whose
    response carries no per-setting rows gives one item from its totals."""
    merged: dict[tuple[str, str], EvidenceItem] = {}
    for row in evidence.values():
        settings = row.by_params or [
            ParamEvidence(params={}, attempts=row.attempts, successes=row.successes,
                          weight=row.evidence_weight, weighted_log_speedup=row.weighted_log_speedup,
                          disputed=row.disputed > 0)
        ]  # fmt: skip
        for setting in settings:
            item = EvidenceItem(
                transform=row.transform, params=dict(setting.params), attempts=setting.attempts,
                successes=setting.successes, weight=setting.weight,
                log_speedup=setting.weighted_log_speedup, sd_log_speedup=setting.sd_log_speedup,
                disputed=setting.disputed, transform_score=row.score,
            )  # fmt: skip
            seen = merged.get(item.key)
            if seen is not None:
                weight = seen.weight + item.weight
                item = EvidenceItem(
                    transform=item.transform, params=item.params, attempts=seen.attempts + item.attempts,
                    successes=seen.successes + item.successes, weight=weight,
                    log_speedup=(seen.log_speedup * seen.weight + item.log_speedup * item.weight) / weight
                    if weight > 0 else item.log_speedup,
                    sd_log_speedup=max(seen.sd_log_speedup or 0.0, item.sd_log_speedup or 0.0) or None,
                    disputed=seen.disputed or item.disputed, transform_score=item.transform_score,
                )  # fmt: skip
            merged[item.key] = item
    return list(merged.values())


def rank_evidence(items: Sequence[EvidenceItem]) -> list[EvidenceItem]:
    """First the best setting of every transform, transforms by the service's score; then the other
    settings by how much they say (weight x |log speedup|: a setting seen to hurt is worth knowing)."""
    by_transform: dict[str, list[EvidenceItem]] = {}
    for item in items:
        by_transform.setdefault(item.transform, []).append(item)
    firsts, rest = [], []
    for group in by_transform.values():
        group.sort(key=lambda i: (-i.log_speedup, -i.weight, i.key))
        firsts.append(group[0])
        rest.extend(group[1:])
    firsts.sort(key=lambda i: (-i.transform_score, i.key))
    rest.sort(key=lambda i: (-i.weight * abs(i.log_speedup), i.key))
    return firsts + rest


def format_evidence(
    evidence: dict[str, RetrievedTransform],
    max_chars: int = MAX_EVIDENCE_CHARS,
    max_lines: int = MAX_EVIDENCE_LINES,
) -> str:
    """The prompt's evidence: ranked, deduplicated and never longer than `max_chars` characters."""
    if not evidence:
        return "(no evidence retrieved for this measured state)"
    ranked = rank_evidence(evidence_items(evidence))
    shown_best: set[str] = set()
    lines: list[str] = []
    used = 0
    for index, item in enumerate(ranked):
        best = None
        if item.transform not in shown_best:
            best = evidence[item.transform].best_example
            shown_best.add(item.transform)
        line = item.line(best)
        left = len(ranked) - index
        trailer = f"({left - 1} more settings left out)" if left > 1 else ""
        if len(lines) >= max_lines or used + len(line) + 1 + len(trailer) > max_chars:
            lines.append(f"({left} more settings left out)")
            break
        lines.append(line)
        used += len(line) + 1
    return "\n".join(lines)[:max_chars]


def build_prompt(context: ProposalContext, evidence: dict[str, RetrievedTransform]) -> str:
    """The user message of the first turn."""
    task, target = context.task, context.target
    counters = context.profile.recordable_counters if context.profile is not None else {}
    shown = ", ".join(f"{k}={counters[k]:.4g}" for k in SHOWN_COUNTERS if k in counters)
    history = "\n".join(
        f"- step {h.step}: {h.transform} {dict(h.params)} -> {h.outcome.value}"
        + (f" ({h.speedup:.2f}x)" if h.speedup else "")
        + (f": {h.diagnosis[:200]}" if h.diagnosis else "")
        for h in list(context.history)[-8:]
    )
    vocabulary = "\n".join(f"- {t.value}: {t.description}" for t in Transform)
    return (
        f"Task {task.name} ({task.family}): {task.description}\n"
        f"Target {target.name}: -march={target.arch}, {target.cores} cores, "
        f"peak {target.peak_gflops or 0:.1f} GFLOP/s, {target.peak_gbps or 0:.1f} GB/s.\n"
        + vector_isa(target)
        + f"Current kernel ({describe_config(context.config)}):\n```c\n{context.source}\n```\n"
        f"Its profile: median {context.profile.median_ns if context.profile else float('nan'):.0f} ns; {shown}\n"
        f"Last diagnosis: {context.diagnosis or '(none)'}\n"
        f"This run so far:\n{history or '(nothing yet)'}\n"
        f"What worked on kernels in a similar measured state:\n{format_evidence(evidence)}\n"
        f"Transform vocabulary:\n{vocabulary}\n"
        f"Call {TOOL_NAME} once with your best next variant."
    )


class LLMProposer:
    """Claude through the real `anthropic` SDK; see the module docstring for the failure handling."""

    name = "llm"

    def __init__(
        self,
        *,
        api_key: str | None,
        model: str,
        base_url: str | None = None,
        retriever: ExperienceProposer | None = None,
        fallback: Proposer | None = None,
        max_repairs: int = 2,
        max_tokens: int = 8192,
        timeout_s: float = 120.0,
        max_retries: int = 2,
        seed: int = 0,
    ) -> None:
        self.api_key = api_key
        self.model = model
        self.base_url = base_url
        self.retriever = retriever
        self.fallback: Proposer = fallback or MemorylessProposer(seed)
        self.max_repairs = max_repairs
        self.max_tokens = max_tokens
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.stats = LLMStats()
        self._client: anthropic.Anthropic | None = None

    @classmethod
    def from_settings(
        cls,
        settings: AgentSettings,
        *,
        retriever: ExperienceProposer | None = None,
        seed: int = 0,
        **kwargs: Any,
    ) -> LLMProposer:
        """Model and base URL from settings, the key from ANTHROPIC_API_KEY."""
        return cls(
            api_key=os.environ.get("ANTHROPIC_API_KEY"),
            model=settings.anthropic_model,
            base_url=settings.anthropic_base_url,
            retriever=retriever,
            seed=seed,
            **kwargs,
        )

    def _anthropic(self) -> anthropic.Anthropic:
        if self._client is None:
            import anthropic

            self._client = anthropic.Anthropic(
                api_key=self.api_key,
                base_url=self.base_url,
                timeout=self.timeout_s,
                max_retries=self.max_retries,
            )
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def propose(self, context: ProposalContext) -> Proposal | None:
        import anthropic

        evidence = self.retriever.retrieve(context) if self.retriever is not None else {}
        messages: list[dict[str, Any]] = [{"role": "user", "content": build_prompt(context, evidence)}]
        proposal: Proposal | None = None
        for turn in range(self.max_repairs + 1):
            try:
                response = self._anthropic().messages.create(  # type: ignore[call-overload]
                    model=self.model,
                    max_tokens=self.max_tokens,
                    system=SYSTEM_PROMPT,
                    tools=[tool_spec()],
                    tool_choice={"type": "tool", "name": TOOL_NAME},
                    messages=messages,
                )
                self.stats.calls += 1
                usage = getattr(response, "usage", None)
                self.stats.input_tokens += int(getattr(usage, "input_tokens", 0) or 0)
                self.stats.output_tokens += int(getattr(usage, "output_tokens", 0) or 0)
                tool_id, transform, rationale, source = parse_answer(response.content)
            except (anthropic.AnthropicError, MalformedAnswer) as exc:
                return proposal or self._fall_back(context, exc)
            proposal = Proposal(transform=transform, source=source, rationale=f"llm: {rationale}"[:2000],
                                evidence=_evidence_keys(evidence, transform))  # fmt: skip
            built = context.backend.compile(context.task, source, context.target)
            if built.ok or turn == self.max_repairs:
                return proposal  # a proposal that still fails is judged (and recorded) by the loop
            self.stats.repairs += 1
            messages.append({"role": "assistant", "content": [b.model_dump() for b in response.content]})
            messages.append({
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": tool_id, "is_error": True,
                             "content": f"The source does not compile:\n{built.diagnosis[:4000]}\nFix it and "
                                        f"call {TOOL_NAME} again with the complete source."}],
            })  # fmt: skip
        return proposal

    def _fall_back(self, context: ProposalContext, exc: Exception) -> Proposal | None:
        self.stats.fallbacks += 1
        reason = f"{type(exc).__name__}: {str(exc)[:300]}"
        self.stats.errors.append(reason)
        log.warning("llm proposer: %s; falling back to %s", reason, self.fallback.name)
        chosen = self.fallback.propose(context)
        if chosen is None:
            return None
        return Proposal(
            transform=chosen.transform,
            params=chosen.params,
            config=chosen.config,
            source=chosen.source,
            rationale=f"llm unavailable ({reason}); {self.fallback.name} fallback: {chosen.rationale}"[:2000],
            evidence=chosen.evidence,
        )


def _evidence_keys(evidence: dict[str, RetrievedTransform], transform: str) -> list[str]:
    row = evidence.get(transform)
    return list(row.evidence_attempt_keys[:10]) if row else []
