"""The llm proposer: Claude writes the next variant's source, guided by the retrieved evidence.

The prompt carries the task, the current source, its profile and the last diagnosis, this run's
history and what the experience graph retrieved for the current measured state. The answer comes
back through one tool, `propose_variant` (a transform from the shared vocabulary, a rationale and
the full new source). A proposal that does not compile goes back to the model as the tool's error
result for at most `max_repairs` repair turns. A malformed answer (no tool call, unknown transform,
empty source) or an API error (status, connection, timeout) never escapes: the proposer falls back
to its `fallback` proposer (memoryless by default), or returns None when that has nothing either.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kernelgraph.agent.proposers.base import (
    Proposal,
    ProposalContext,
    Proposer,
    describe_config,
    finite_counters,
)
from kernelgraph.agent.proposers.experience import ExperienceProposer
from kernelgraph.agent.proposers.memoryless import MemorylessProposer
from kernelgraph.agent.transforms import Transform
from kernelgraph.client.models import RetrievedTransform
from kernelgraph.client.signature import CounterName

if TYPE_CHECKING:
    import anthropic

    from kernelgraph.client.settings import Settings

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
target's -march builds it; OpenMP pragmas are allowed; no I/O, no global state that caches results."""


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


def format_evidence(evidence: dict[str, RetrievedTransform]) -> str:
    if not evidence:
        return "(no evidence retrieved for this measured state)"
    lines = []
    for row in sorted(evidence.values(), key=lambda r: -r.score)[:8]:
        best = row.best_example or {}
        lines.append(
            f"- {row.transform}: score {row.score:+.3f}, {row.successes}/{row.attempts} kept, "
            f"best speedup {row.best_speedup or 0:.2f}x (task {best.get('task', '?')}, params {best.get('params', {})})"
        )
    return "\n".join(lines)


def build_prompt(context: ProposalContext, evidence: dict[str, RetrievedTransform]) -> str:
    """The user message of the first turn."""
    task, target = context.task, context.target
    counters = finite_counters(context.profile)
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
        f"Current kernel ({describe_config(context.config)}):\n```c\n{context.source}\n```\n"
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
        cls, settings: Settings, *, retriever: ExperienceProposer | None = None, seed: int = 0, **kwargs: Any
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
