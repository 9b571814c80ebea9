"""The similarity's unit on the development data: the median similarity of a state to its own
re-measurement and to other states, under signature 4's first unit (w^2 = 1 / 11) and the CPU sources'
(w = 1 spread), as the Markdown table of docs/counter-signature.md ("The similarity's unit").

PYTHONPATH=. .venv/bin/python scripts/similarity_unit.py [results/signature-20261202T145436Z.json]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kernelgraph.bench.signature import RELATIONS, similarity_by_relation  # noqa: E402
from kernelgraph.core.signature import CPU_SIMILARITY_UNIT, UNJUDGED_SIMILARITY_UNIT  # noqa: E402

REPORT = REPO / "results" / "signature-20261202T145436Z.json"  # the report the CPU scales come from
UNITS = {"w^2 = 1/11 (before)": UNJUDGED_SIMILARITY_UNIT, "w = 1 spread (CPU sources)": CPU_SIMILARITY_UNIT}


def render(report: dict[str, object]) -> str:
    by_unit = {label: similarity_by_relation(report, unit) for label, unit in UNITS.items()}
    head = ["stored state", "(query, state) pairs", *(f"median [quartiles], {label}" for label in UNITS)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for relation in RELATIONS:
        cells = [relation, str(by_unit[next(iter(UNITS))][relation]["pairs"])]
        for figures in by_unit.values():
            f = figures[relation]
            cells.append(f"{f['median']:.3f} [{f['q1']:.3f}, {f['q3']:.3f}]")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else REPORT
    print(render(json.loads(path.read_text())))
