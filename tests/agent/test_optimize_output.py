"""What `kernelgraph optimize` prints: one labelled speedup (the final re-timing) beside the live
"so far" figure, and what the experience proposer retrieved before each step."""

from __future__ import annotations

from io import StringIO

from rich.console import Console

from kernelgraph.agent.loop import OptimizeResult, StepReport, _retrieval_line, _step_line
from kernelgraph.agent.proposers.experience import retrieval_summary
from kernelgraph.cli.agent import result_table
from kernelgraph.core.models import Outcome, RetrievalExplanation, RetrieveResponse


def _result() -> OptimizeResult:
    step = StepReport(step=0, transform="tile", params={"bm": 64}, outcome=Outcome.KEPT, speedup=2.0, median_ns=5e5,
                      best_ns=5e5, speedup_so_far=2.0, diagnosis="", rationale="", attempt_key="r:0", recorded=True,
                      retrieval={"neighbours": 3, "transforms": [{"transform": "tile", "score": 0.31, "attempts": 4}],
                                 "explanation": "3 of k=20 neighbours found"})  # fmt: skip
    return OptimizeResult(task="matmul", target="cpu-x86-64-v3", proposer="experience", run_id="r", budget=1,
                          baseline_ns=1e6, best_ns=4e5, best_source="", best_config=None, steps=[step],
                          chained_speedup=2.0, final_interleaved=True)  # fmt: skip


def test_the_table_says_which_speedup_is_the_final_re_timing() -> None:
    console = Console(width=80, file=StringIO())
    console.print(result_table([_result()], "matmul on cpu-x86-64-v3"))
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert "speedup over naive (final re-timing)" in text and "2.50x" in text  # 1e6 / 4e5
    assert "so far (kept steps chained)" in text and "2.00x" in text
    assert "final" in text and "re-timing" in text.split("2.00x")[-1]  # the caption explains both
    assert _result().to_json()["chained_speedup"] == 2.0 and _result().to_json()["speedup"] == 2.5


def test_each_step_shows_what_was_retrieved() -> None:
    step = _result().steps[0]
    assert "so far 2.00x" in _step_line(step) and "best" not in _step_line(step)
    assert _retrieval_line(step.retrieval or {}).strip() == (
        "retrieved 3 similar states: tile +0.31 (4); 3 of k=20 neighbours found"
    )
    assert _result().to_json()["steps"][0]["retrieval"]["neighbours"] == 3
    explanation = RetrievalExplanation(measured_dimensions=[], missing_dimensions=[], states=0, states_on_target=0,
                                       comparable_states=0, excluded_by_task=0, summary="nothing here")  # fmt: skip
    response = RetrieveResponse(mode="counters", target="t", signature=None, neighbours=0, neighbour_ids=[],
                                transforms=[], failure_log_speedup=-0.1, prior_weight=1.0, explanation=explanation)  # fmt: skip
    assert retrieval_summary(response) == {"neighbours": 0, "transforms": [], "explanation": "nothing here"}
    assert retrieval_summary(None) is None
