"""The docs stay true: every setting is documented, and every `kernelgraph` command they show exists."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import typer

from tests import factories

REPO = Path(__file__).resolve().parents[2]
_FENCE = re.compile(r"```[^\n]*\n(.*?)```", re.S)
_COMMAND = re.compile(r"(?:^|[\s;&|(`/])kernelgraph((?:[ \t]+[a-z][a-z0-9_-]*){0,2})", re.M)


def _gen_config_docs():  # type: ignore[no-untyped-def]
    return factories.script("gen_config_docs")


def test_configuration_md_matches_settings() -> None:
    generated = _gen_config_docs().render()
    committed = (REPO / "docs" / "configuration.md").read_text()
    assert committed == generated, "docs/configuration.md is stale: run scripts/gen_config_docs.py"


def doc_files() -> list[Path]:
    return sorted([*(REPO / "docs").glob("*.md"), *REPO.glob("README.md")])


def shown_commands(text: str) -> set[tuple[str, ...]]:
    """`kernelgraph WORD [WORD]` as shown in the fenced code blocks of a Markdown text."""
    found = set()
    for block in _FENCE.findall(text):
        for match in _COMMAND.finditer(block):
            words = tuple(match.group(1).split())
            if words:
                found.add(words)
    return found


def resolves(words: tuple[str, ...]) -> bool:
    """Does `kernelgraph words...` name a command (a group's subcommand when the group has them)?"""
    from kernelgraph.cli import app

    command: Any = typer.main.get_command(app)
    for word in words:
        commands = getattr(command, "commands", None)
        if commands is None:
            return True  # a leaf command: the rest are its arguments
        command = commands.get(word)
        if command is None:
            return False
    return True


def test_commands_are_parsed() -> None:
    assert shown_commands("```bash\nkernelgraph neo4j start\n.venv/bin/kernelgraph cypher --file x\n```") == {
        ("neo4j", "start"), ("cypher",),
    }  # fmt: skip


@pytest.mark.parametrize("path", doc_files(), ids=lambda p: p.name)
def test_every_shown_command_exists(path: Path) -> None:
    missing = sorted(" ".join(w) for w in shown_commands(path.read_text()) if not resolves(w))
    assert not missing, f"{path.name} shows commands that do not exist: {missing}"
