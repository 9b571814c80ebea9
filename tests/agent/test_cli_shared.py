"""The rules the commands share: how a run's failure ends a command, and a bench command's closing lines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kernelgraph.agent.loop import OptimizeError
from kernelgraph.cli.agent import agent_errors
from kernelgraph.cli.bench_kernels import save_and_show
from kernelgraph.core.errors import CommandError, Conflict


class Closable:
    closed = False

    def close(self) -> None:
        self.closed = True


@pytest.mark.parametrize(
    ("error", "says"),
    [
        (OptimizeError("the baseline does not compile"), "the baseline does not compile"),
        (Conflict("attempt a:1 was stored with other content"), "experience graph: attempt a:1 was stored"),
    ],
)
def test_a_failed_run_ends_the_command_as_one_line_with_exit_1_and_closes_the_client(
    error: Exception, says: str
) -> None:
    client = Closable()
    with pytest.raises(CommandError) as raised, agent_errors(client):  # type: ignore[arg-type]
        raise error
    assert raised.value.exit_code == 1 and raised.value.message.startswith(says)
    assert client.closed


def test_a_run_that_ends_well_closes_the_client_too() -> None:
    client = Closable()
    with agent_errors(client):  # type: ignore[arg-type]
        pass
    assert client.closed


def test_a_bench_report_is_saved_then_shown_as_text_or_as_one_json_object(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report: dict[str, Any] = {"target": "cpu-a", "runs": [1, 2, 3]}
    save_and_show(report, str(tmp_path), "demo-bench", lambda r: f"on {r['target']}")
    text = capsys.readouterr().out.splitlines()
    assert text[0] == "on cpu-a" and text[1].startswith("saved to ")
    saved = Path(text[1].removeprefix("saved to "))
    assert json.loads(saved.read_text()) == report
    assert json.loads((tmp_path / "demo-bench-latest.json").read_text()) == report

    save_and_show(report, str(tmp_path), "demo-bench", lambda r: "unused", as_json=True, left_out="runs")
    shown = json.loads(capsys.readouterr().out)
    assert shown["target"] == "cpu-a" and "runs" not in shown
    assert json.loads(Path(shown["saved"]).read_text()) == report
