"""A user's mistake at the terminal gets one clear line (or one JSON object with --json) and a
documented exit code, never a traceback: the one wrapper of every command (kernelgraph/cli/__init__.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelgraph.cli import EXIT_FAILED, EXIT_INTERNAL, EXIT_USAGE, app

runner = CliRunner()


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    assert "Traceback" not in result.output, result.output
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.neo4j
@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("cypher", "RETURN range(0, $x)", "--param", "x=abc"), "Type mismatch for parameter 'x'"),
        (("cypher", "CREATE (:ReadOnlyCheck)", "--read"), "Neo.ClientError"),
        (("consolidate", "--namespace", "no-such-namespace-33"), "holds no measured states"),
        (("namespaces", "delete", "no-such-namespace-33", "--dry-run"), "holds nothing"),
    ],
    ids=["wrong-typed-param", "write-under-read", "consolidate-unknown", "delete-unknown"],
)
def test_graph_commands_fail_in_one_line(cli_on_test_neo4j: None, args: tuple[str, ...], says: str) -> None:
    code, out, err = run(*args)
    assert code == EXIT_FAILED, (out, err)
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and says in err, err


def test_a_parameter_the_query_uses_must_be_given() -> None:
    code, _, err = run("cypher", "RETURN $x + $y", "--param", "y=1")
    assert code == EXIT_USAGE and err.strip() == "error: the query uses $x: give --param NAME=VALUE for each"


@pytest.mark.neo4j
def test_json_errors_are_one_object(cli_on_test_neo4j: None) -> None:
    code, out, _ = run("cypher", "CREATE (:ReadOnlyCheck)", "--read", "--json")
    assert code == EXIT_FAILED
    error = json.loads(out)["error"]
    assert error["code"] == "cypher_error" and "Neo.ClientError" in error["message"]


def test_compile_checks_its_knobs() -> None:
    code, _, err = run("compile", "softmax", "--config", "BLOCK_N=notanumber")
    assert code == EXIT_USAGE and "expected int" in err
    code, out, _ = run("compile", "softmax", "--config", "NO_SUCH_KNOB=1", "--json")
    assert code == EXIT_USAGE
    assert "unknown knob 'NO_SUCH_KNOB'" in json.loads(out)["error"]["message"]


def test_evaluate_of_a_binary_source_is_one_json_object(tmp_path: Path) -> None:
    binary = tmp_path / "kernel.o"
    binary.write_bytes(b"\x7fELF\x02\x01\x01\x00\xff\xfe\x00")
    code, out, _ = run("evaluate", "rmsnorm", "--source", str(binary), "--json")
    assert code == EXIT_USAGE
    assert json.loads(out) == {"error": {"code": "command_error", "message": f"--source {binary}: not a text file "
                                         "(a kernel source is UTF-8 text)"}}  # fmt: skip


def test_a_bug_is_one_line_with_its_own_exit_code(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(backend: str = "c") -> list[object]:
        raise RuntimeError("boom")

    monkeypatch.setattr("kernelgraph.agent.tasks.all_tasks", broken)
    code, _, err = run("tasks", "list")
    assert code == EXIT_INTERNAL and "RuntimeError: boom" in err and "KERNELGRAPH_DEBUG=1" in err
