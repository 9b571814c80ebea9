"""The llm proposer against a local stub of the Messages API (the real SDK, pointed at it by base_url)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import TimingPlan
from kernelgraph.agent.loop import optimize
from kernelgraph.agent.proposers.base import ProposalContext
from kernelgraph.agent.proposers.llm import TOOL_NAME, LLMProposer
from kernelgraph.agent.results import Outcome, ProfileResult
from kernelgraph.agent.targets import Target
from kernelgraph.agent.tasks import get_task
from kernelgraph.agent.transforms import Transform
from kernelgraph.core.signature import CounterSource
from kernelgraph.service.inprocess import InProcessClient
from kernelgraph.service.knowledge import KnowledgeService
from kernelgraph.service.store import GraphStore

MATMUL = get_task("matmul")
GOOD_SOURCE = MATMUL.source("c", {**MATMUL.baseline_config, "order": "ikj", "parallel": True})
BROKEN_SOURCE = "void kernel(const float* a, const float* b, float* c, int n) {\n    int i = 0\n}\n"


def tool_answer(transform: Any = "interchange", source: Any = GOOD_SOURCE) -> tuple[int, dict[str, Any]]:
    return 200, {
        "id": "msg_stub", "type": "message", "role": "assistant", "model": "stub-model",
        "content": [{"type": "tool_use", "id": "toolu_stub", "name": TOOL_NAME,
                     "input": {"transform": transform, "rationale": "walk b contiguously", "source": source}}],
        "stop_reason": "tool_use", "stop_sequence": None, "usage": {"input_tokens": 120, "output_tokens": 300},
    }  # fmt: skip


def text_answer() -> tuple[int, dict[str, Any]]:
    return 200, {
        "id": "msg_stub", "type": "message", "role": "assistant", "model": "stub-model",
        "content": [{"type": "text", "text": "I would interchange the loops."}],
        "stop_reason": "end_turn", "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 5},
    }  # fmt: skip


def api_error(status: int, kind: str) -> tuple[int, dict[str, Any]]:
    return status, {"type": "error", "error": {"type": kind, "message": f"stub {kind}"}}


class Stub:
    """A tiny Messages API: answers POST /v1/messages from a script, records every request body."""

    def __init__(self) -> None:
        self.script: list[tuple[int, dict[str, Any]]] = []
        self.requests: list[dict[str, Any]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stub.requests.append(body)
                status, reply = stub.script.pop(0) if stub.script else api_error(500, "api_error")
                data = json.dumps(reply).encode()
                self.send_response(status if self.path == "/v1/messages" else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def stub() -> Iterator[Stub]:
    s = Stub()
    yield s
    s.close()


@pytest.fixture(scope="module")
def llm_backend(tmp_path_factory: pytest.TempPathFactory) -> CBackend:
    cache: Path = tmp_path_factory.mktemp("llm-cache")
    return CBackend(cache_dir=cache, timing=TimingPlan(warmup=1, min_trials=5, max_trials=15, budget_s=0.4),
                    counters=False)  # fmt: skip


def proposer(stub: Stub, **kwargs: Any) -> LLMProposer:
    return LLMProposer(
        api_key="test-key", model="stub-model", base_url=stub.url, max_retries=0, timeout_s=20, **kwargs
    )


def context(backend: CBackend, target: Target) -> ProposalContext:
    profile = ProfileResult(median_ns=9e7, iqr_ns=1e6, trials=9, counters={"time_ns": 9e7, "gflops": 1.2},
                            counter_source=CounterSource.CPU_TIMING)  # fmt: skip
    return ProposalContext(task=MATMUL, backend=backend, target=target, config=MATMUL.baseline_config,
                           source=MATMUL.source("c", MATMUL.baseline_config), profile=profile,
                           diagnosis="previous attempt: not faster")  # fmt: skip


def test_good_answer_is_compiled_measured_and_recorded(
    stub: Stub, llm_backend: CBackend, cpu_target: Target, store: GraphStore, namespace: str
) -> None:
    stub.script = [tool_answer()]
    with InProcessClient(KnowledgeService(store), namespace) as client:
        result = optimize(MATMUL, llm_backend, cpu_target, proposer(stub), client, budget=1)
    assert result.steps[0].transform == "interchange"
    assert result.steps[0].outcome in (Outcome.KEPT, Outcome.DISCARDED) and result.steps[0].median_ns
    request = stub.requests[0]
    assert request["model"] == "stub-model" and request["tools"][0]["name"] == TOOL_NAME
    assert request["tool_choice"] == {"type": "tool", "name": TOOL_NAME}
    prompt = request["messages"][0]["content"]
    assert "matmul" in prompt and "void kernel" in prompt and "Transform vocabulary" in prompt
    assert f"- register_block: {Transform.REGISTER_BLOCK.description}" in prompt  # the whole vocabulary
    assert "Vector ISA: SSE4.2: 4 fp32 lanes" in prompt  # cpu_target is x86-64-v2
    _, rows = store.run_text("MATCH (a:Attempt {namespace: $ns}) RETURN a.transform AS t, a.rationale AS r",
                             {"ns": namespace}, write=False)  # fmt: skip
    assert rows == [{"t": "interchange", "r": "llm: walk b contiguously"}]


def test_compile_errors_go_back_for_repair(stub: Stub, llm_backend: CBackend, cpu_target: Target) -> None:
    stub.script = [tool_answer(source=BROKEN_SOURCE), tool_answer()]
    llm = proposer(stub, max_repairs=2)
    proposal = llm.propose(context(llm_backend, cpu_target))
    assert proposal is not None and proposal.source == GOOD_SOURCE
    assert llm.stats.calls == 2 and llm.stats.repairs == 1
    repair = stub.requests[1]["messages"]
    assert repair[1]["role"] == "assistant" and repair[2]["content"][0]["type"] == "tool_result"
    assert repair[2]["content"][0]["is_error"] and "error" in repair[2]["content"][0]["content"]


def test_repairs_are_bounded(stub: Stub, llm_backend: CBackend, cpu_target: Target) -> None:
    stub.script = [tool_answer(source=BROKEN_SOURCE)] * 3
    llm = proposer(stub, max_repairs=1)
    proposal = llm.propose(context(llm_backend, cpu_target))
    assert proposal is not None and proposal.source == BROKEN_SOURCE  # judged (and recorded) by the loop
    assert llm.stats.calls == 2


@pytest.mark.parametrize(
    "answer",
    [
        text_answer(),
        tool_answer(transform="make_it_fast"),
        tool_answer(source="   "),
        api_error(500, "api_error"),
        api_error(529, "overloaded_error"),
    ],
    ids=["no-tool-call", "unknown-transform", "empty-source", "http-500", "http-529"],
)
def test_malformed_answers_and_api_errors_fall_back(
    stub: Stub, llm_backend: CBackend, cpu_target: Target, answer: tuple[int, dict[str, Any]]
) -> None:
    stub.script = [answer]
    llm = proposer(stub)
    proposal = llm.propose(context(llm_backend, cpu_target))
    assert proposal is not None and proposal.config is not None and proposal.source is None
    assert proposal.rationale.startswith("llm unavailable") and llm.stats.fallbacks == 1


def test_unreachable_api_falls_back(llm_backend: CBackend, cpu_target: Target) -> None:
    llm = LLMProposer(api_key="k", model="m", base_url="http://127.0.0.1:9", max_retries=0, timeout_s=5)
    proposal = llm.propose(context(llm_backend, cpu_target))
    assert proposal is not None and "APIConnectionError" in llm.stats.errors[0]
