"""docs/code-map.md stays in step with the tree: it names every top-level folder and every package of
`kernelgraph` (through the links, by the folder a checkout keeps it in), and every path it names exists."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAP = ROOT / "docs" / "code-map.md"
# A path in backticks: at least one slash, no spaces (routes such as `/v1/attempts` start with one).
PATH = re.compile(r"`([\w.\-]+(?:/[\w.*<>\-]*)+)`")


def _named() -> set[str]:
    return set(PATH.findall(MAP.read_text()))


def test_every_top_level_folder_is_on_the_map() -> None:
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    folders = {line.split("/", 1)[0] + "/" for line in tracked.splitlines() if "/" in line}
    assert folders, "git ls-files listed nothing"
    assert sorted(folders - _named()) == []


def test_every_package_is_on_the_map_by_its_checkout_folder() -> None:
    packages = {
        Path(folder).resolve().relative_to(ROOT).as_posix() + "/"
        for folder, _, files in os.walk(ROOT / "kernelgraph", followlinks=True)  # through the links
        if "__init__.py" in files
    }
    assert {"agent/backends/", "kernelgraph/cli/", "kernelgraph/bench/"} <= packages
    assert sorted(packages - _named()) == []


def test_every_path_on_the_map_exists() -> None:
    named = _named()
    assert len(named) > 20
    missing = []
    for path in named:
        if "<" in path:  # a pattern such as `python -m kernelgraph.bench.<name>` names no one file
            continue
        found = list(ROOT.glob(path.rstrip("/"))) if "*" in path else [ROOT / path]
        if not found or not all(p.exists() for p in found):
            missing.append(path)
    assert sorted(missing) == []
