"""`kernelgraph bench poisoning`: can one writer key make another key's retrieval worse?

An honest key records attempts of five transforms with known effects from a few measured states; a
poisoner key then records, from the same states, 1, 10 and 100 attempts per honest one that are
self-consistent (their speedups agree with their medians) and physically plausible, but lie: a
transform nobody measured (`magic`) at 8x, the honest best at 0.2x, the honest fourth at 5x; plus
times beyond the target's peaks for the declared work, which the service flags and never uses. After
each round the honest key's retrieval must rank the same top three transforms in the same order (the
issue's test, tests/service/test_evidence_trust.py, runs the same scenario).

What bounds the poisoner (docs/retrieval.md, "No writer dominates"): aggregates are kept per key, and
another key's evidence moves a transform's score by less than INFLUENCE_BOUND however many attempts
it records, while the caller's own counts in full. Results go to `results/poisoning-<UTC time>.json`.
"""

from __future__ import annotations

import math
import random
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from kernelgraph.bench.reports import publish, run_context
from kernelgraph.service.knowledge import KnowledgeService
from kernelgraph.service.recorder import Recorder
from kernelgraph.service.retrieval import INFLUENCE_BOUND

TARGET = {"name": "poison-cpu", "kind": "cpu", "arch": "x86-64-v3", "peak_gflops": 200.0, "peak_gbps": 20.0,
          "cores": 2, "isa": "x86-64-v3"}  # fmt: skip
# The honest effects (speedups): apart by more than twice INFLUENCE_BOUND in score, so that a bounded
# poisoner cannot reorder them; and a fifth that hurts.
HONEST_EFFECTS = {"tile": 2.2, "vectorize": 1.6, "unroll": 1.25, "reorder": 0.95, "prefetch": 0.7}
# What the poisoner claims, from the same states: plausible (its medians stay above the peaks' floor).
POISON_CLAIMS = {"magic": 8.0, "tile": 0.2, "reorder": 5.0}
RATIOS = (1, 10, 100)
PARENT_NS = 1e6
WORK = {"flops": 2e6, "bytes": 1e6}  # the declared work: at 200 GFLOP/s x 1.1, at least 9,091 ns
HONEST = Recorder("honest-key")
POISONER = Recorder("poison-key")


@dataclass
class Round:
    ratio: int  # poisoned attempts per honest one, recorded in all by now
    poisoned: int
    flagged: int  # of them, stored flagged implausible
    top3: list[str]
    unchanged: bool
    scores: dict[str, float]  # the honest key's scores of every retrieved transform
    magic_score: float | None  # the poisoner's invented transform, as the honest key sees it
    write_s: float
    retrieve_ms: float


@dataclass
class Report:
    honest_attempts: int
    baseline_top3: list[str]
    baseline_scores: dict[str, float]
    influence_bound: float
    rounds: list[Round] = field(default_factory=list)

    @property
    def holds(self) -> bool:
        return all(r.unchanged for r in self.rounds)


def _signature(rng: random.Random) -> list[float | None]:
    from kernelgraph.core.signature import SIGNATURE_DIM, source_dimensions

    measured = set(source_dimensions("cpu_cachegrind"))
    return [round(0.5 + rng.uniform(-0.02, 0.02), 4) if i in measured else None for i in range(SIGNATURE_DIM)]


def _measurement(median: float, signature: list[float | None] | None = None, parent: float | None = None
                 ) -> dict[str, Any]:  # fmt: skip
    measured: dict[str, Any] = {
        "median_ns": median, "iqr_ns": median * 0.01, "trials": 21, "correct": True,
        "counter_source": "cpu_cachegrind", "counters": {"time_ns": median, **WORK},
    }  # fmt: skip
    if signature is not None:
        measured["signature"] = signature
    if parent is not None:
        measured["parent_median_ns"] = parent
    return measured


def _attempt(key: str, transform: str, speedup: float, parent: dict[str, Any], child_source: str,
             parent_id: str | None = None, parent_measurement: dict[str, Any] | None = None,
             child_ns: float | None = None) -> dict[str, Any]:  # fmt: skip
    child_ns = child_ns if child_ns is not None else PARENT_NS / speedup
    record: dict[str, Any] = {
        "attempt_key": key, "run_id": key.split(":")[0], "agent": key.split("-")[0], "target": TARGET["name"],
        "transform": {"name": transform, "params": {}},
        "child": {**parent, "source": child_source},
        "child_measurement": _measurement(child_ns, parent=PARENT_NS),
        "outcome": "kept" if speedup > 1.0 else "discarded", "speedup": PARENT_NS / child_ns,
    }  # fmt: skip
    if parent_id is not None:
        record["parent_measurement_id"] = parent_id
    else:
        record["parent"], record["parent_measurement"] = parent, parent_measurement
    return record


def _retrieval(knowledge: KnowledgeService, namespace: str, query: list[float | None]) -> tuple[Any, float]:
    t0 = time.perf_counter()
    answer = knowledge.retrieve([namespace], {"target": TARGET["name"], "signature": query, "k": 20,
                                              "limit": 20}, HONEST)  # fmt: skip
    return answer, (time.perf_counter() - t0) * 1000


def run_poisoning(
    knowledge: KnowledgeService, namespace: str, *, states: int = 2, repeats: int = 2,
    ratios: tuple[int, ...] = RATIOS, seed: int = 0, console: Console | None = None,
) -> Report:  # fmt: skip
    """The scenario above in `namespace` (which it fills); `repeats` honest attempts per state and transform."""
    rng = random.Random(seed)
    knowledge.upsert_targets(namespace, [TARGET])
    honest: list[dict[str, Any]] = []
    parents: list[dict[str, Any]] = []
    for s in range(states):
        parent = {"task": "matmul", "backend": "c", "source": f"void kernel(void) {{ /* state {s} */ }}",
                  "patterns": ["dense-matmul"]}  # fmt: skip
        parents.append(parent)
        state = _measurement(PARENT_NS, _signature(rng))
        for transform, effect in HONEST_EFFECTS.items():
            for r in range(repeats):
                speedup = effect * math.exp(rng.gauss(0.0, 0.02))
                honest.append(_attempt(f"honest-{s}:{transform}:{r}", transform, speedup, parent,
                                       f"{parent['source']} // {transform} {r}", parent_measurement=state))  # fmt: skip
    results = knowledge.record_attempts(namespace, honest, HONEST)
    state_ids = sorted({r.parent_measurement_id for r in results if r.parent_measurement_id})
    query = _signature(random.Random(seed + 1))
    baseline, _ = _retrieval(knowledge, namespace, query)
    report = Report(len(honest), [t.transform for t in baseline.transforms[:3]],
                    {t.transform: round(t.score, 4) for t in baseline.transforms}, INFLUENCE_BOUND)  # fmt: skip
    claims = [*POISON_CLAIMS.items(), ("magic", 0.0)]  # 0.0: a time beyond the peaks (flagged)
    poisoned = flagged = 0
    for ratio in ratios:
        batch: list[dict[str, Any]] = []
        while poisoned + len(batch) < ratio * len(honest):
            n = poisoned + len(batch)
            transform, claim = claims[n % len(claims)]
            parent_id = state_ids[n % len(state_ids)]
            parent = parents[0]
            source = f"void kernel(void) {{ /* poison {n % 7} */ }}"
            if claim == 0.0:  # 1 ns for 2 MFLOP: 2,000 TFLOP/s on a 200 GFLOP/s target
                batch.append(_attempt(f"poison-{ratio}:{n}", transform, PARENT_NS, parent, source, parent_id,
                                      child_ns=1.0))  # fmt: skip
            else:
                batch.append(_attempt(f"poison-{ratio}:{n}", transform, claim, parent, source, parent_id))
        t0 = time.perf_counter()
        for start in range(0, len(batch), 1_000):
            knowledge.record_attempts(namespace, batch[start : start + 1_000], POISONER)
        write_s = time.perf_counter() - t0
        poisoned += len(batch)
        flagged += sum(1 for b in batch if b["child_measurement"]["median_ns"] == 1.0)
        answer, ms = _retrieval(knowledge, namespace, query)
        top3 = [t.transform for t in answer.transforms[:3]]
        scores = {t.transform: round(t.score, 4) for t in answer.transforms}
        report.rounds.append(Round(ratio, poisoned, flagged, top3, top3 == report.baseline_top3, scores,
                                   scores.get("magic"), round(write_s, 3), round(ms, 2)))  # fmt: skip
        if console is not None:
            console.print(f"{ratio:>4} poisoned per honest attempt: top 3 {top3} "
                          f"({'unchanged' if top3 == report.baseline_top3 else 'CHANGED'})")  # fmt: skip
    return report


def render(report: Report, console: Console) -> None:
    table = Table("poisoned per honest", "poisoned", "flagged", "honest top 3", "unchanged", "magic score")
    table.add_row("0", "0", "0", ", ".join(report.baseline_top3), "-", "-")
    for r in report.rounds:
        table.add_row(str(r.ratio), f"{r.poisoned:,}", f"{r.flagged:,}", ", ".join(r.top3),
                      "[green]yes[/]" if r.unchanged else "[red]no[/]",
                      "-" if r.magic_score is None else f"{r.magic_score:.3f}")  # fmt: skip
    console.print(table)
    console.print(f"another key moves a score by less than {report.influence_bound}; the honest scores: "
                  f"{report.baseline_scores}")  # fmt: skip


def main(*, states: int, repeats: int, as_json: bool, results_dir: str | Path) -> int:
    """The `kernelgraph bench poisoning` command: run on the configured Neo4j, save, print; the exit code
    (1 when a round changed the honest top three)."""
    from kernelgraph.core import settings as settings_module
    from kernelgraph.service import migrate, namespaces
    from kernelgraph.service.store import GraphStore, open_driver

    settings = settings_module.get_settings()
    namespace = f"poison-{uuid.uuid4().hex[:10]}"
    err = Console(stderr=True)
    context = run_context()
    driver = open_driver(settings)
    try:
        store = GraphStore(driver, settings.neo4j_database)
        migrate.apply(store)
        t0 = time.perf_counter()
        report = run_poisoning(
            KnowledgeService(store), namespace, states=states, repeats=repeats, console=err
        )
        duration = time.perf_counter() - t0
        namespaces.delete(store, namespace)
    finally:
        driver.close()
    import os

    result = {"report": asdict(report), "holds": report.holds, "duration_s": round(duration, 2), **context,
              "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
              "note": "the machine is shared: write and retrieve times are indicative only"}  # fmt: skip
    publish(result, results_dir, "poisoning", as_json=as_json, render=lambda console: render(report, console))
    return 0 if report.holds else 1
