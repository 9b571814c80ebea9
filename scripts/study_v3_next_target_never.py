"""Post-hoc count behind docs/study-v3.md's next-target result: the share of its runs that never reach
90% of the oracle, per number of other targets. It replays the report's seeded runs (and prints their
ratios, which must equal the report's). Run from the checkout with the Neo4j server up:

    python scripts/study_v3_next_target_never.py
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.study import command3, run3
from kernelgraph.bench.study.protocol_v3 import LABELS, V3Settings
from kernelgraph.cli.graph import open_store
from kernelgraph.service.knowledge import KnowledgeService


def main() -> None:
    reached: list[int | None] = []
    attempts_to_reach = run3.attempts_to_reach

    def recorded(curve):  # type: ignore[no-untyped-def]
        result = attempts_to_reach(curve)
        reached.append(result)
        return result

    run3.attempts_to_reach = recorded
    plan = json.loads(Path("results/study-v3-plan-latest.json").read_text())
    settings = command3.settings_of(plan, V3Settings())
    targets = command3._targets(settings, plan["targets"], quick=False)
    tasks = {n: get_task(n) for n in settings.eval_tasks}
    lands = run3.load_lands(
        Path("results/study-v3/landscapes"), [t.name for t in targets], tasks, LABELS, settings.eval_tasks
    )
    tasks = {n: lands[targets[0].name]["A"][n].task for n in tasks}
    with open_store() as store:
        out = run3.next_target(KnowledgeService(store), "posthoc-next", settings, tasks, lands, targets, None)
    by_others: dict[int, list[int | None]] = defaultdict(list)
    for i, result in enumerate(reached):  # the runs' order: held-out, instance, seed, then 0..3 others
        by_others[i % (out["most_others"] + 1)].append(result)
    for others, results in sorted(by_others.items()):
        never = sum(r is None for r in results)
        print(f"{others} other targets: {len(results)} runs, never {never} ({never / len(results):.3f})")
    print(json.dumps({h: e["ratio_most_vs_none"]["ratio"] for h, e in out["held_out"].items()}))


if __name__ == "__main__":
    main()
