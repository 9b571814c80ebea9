"""The interference benchmark: does retrieval stay useful as the graph grows with unrelated experience?

Protocol (`kernelgraph bench interference`; docs/retrieval.md reads the latest run):
1. A seeded core graph (1x) modelled on the 12 CPU tasks: each task has its own region of signature
   space and its own landscape (the true mean log speedup of every transform and setting); agent
   runs on the main target re-measure their baseline (as the optimize loop does), try transforms
   from it and then from their best child. The *known best* transform of each task is the one with
   the highest mean log speedup in the core's stored evidence from that task's baseline states.
2. Query states: fresh measurements of each task's baseline (new noise), retrieved in counters mode
   on the main target. Quality: the rank of the known best transform in the answer (MRR, hit@1) and
   the oracle fraction of the first choice (the landscape's mean log speedup of the top-ranked
   transform over that of the landscape's best).
3. The graph grows to 10x and 100x the core's attempts with experience unrelated to the queries:
   other tasks whose signatures resemble the query tasks' (look-alikes with their own landscapes),
   the same tasks at other sizes, the same tasks on other targets, KernelBench's published timings
   (imported once, at the first growth step), noisy and failed re-runs of the query tasks, and runs
   measured by the superseded evaluator 1 (which, unsandboxed, let a broken transform look fast).
4. At every size: quality, retrieval p50/p95 (in-process, server side) and the evidence a proposer
   receives (rows, retrieve-response characters, the llm proposer's bounded evidence and whole
   prompt), first as recorded and again after `consolidate` (incremental: each step consolidates
   what it added, as a scheduled run would).
"""

from __future__ import annotations

import json
import math
import random
import statistics
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kernelgraph.agent.evaluator import EVALUATOR_VERSION
from kernelgraph.agent.proposers.base import ProposalContext
from kernelgraph.agent.proposers.llm import build_prompt, format_evidence
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import all_tasks, get_task
from kernelgraph.agent.transforms import Transform
from kernelgraph.bench.reports import run_context
from kernelgraph.bench.stats import nearest_rank
from kernelgraph.core.models import MAX_BATCH, RetrieveRequest
from kernelgraph.core.signature import SIGNATURE_DIM, CounterSource, source_dimensions
from kernelgraph.service.inprocess import InProcessClient
from kernelgraph.service.knowledge import KnowledgeService

GOAL_RATIO = 0.9  # quality at 100x >= 90% of 1x; p95 at 100x <= 110% of 1x
MAIN_TARGET = "ib-cpu-main"
TARGETS: tuple[dict[str, Any], ...] = (
    {"name": MAIN_TARGET, "kind": "cpu", "arch": "x86-64-v2", "peak_gflops": 150.0, "peak_gbps": 18.0,
     "cores": 2, "isa": "x86-64-v2"},
    {"name": "ib-cpu-v4", "kind": "cpu", "arch": "x86-64-v4", "peak_gflops": 1500.0, "peak_gbps": 80.0,
     "cores": 16, "isa": "x86-64-v4"},
    {"name": "ib-sm90", "kind": "cuda", "arch": "sm90", "peak_gflops": 66900.0, "peak_gbps": 3350.0,
     "sm_count": 132},
)  # fmt: skip
TRANSFORMS = tuple(t.value for t in Transform)
SETTINGS = (1, 2, 4)  # each transform's parameter settings ({"level": n}); each shifts its effect
STATE_NOISE = 0.01  # sd of a re-measured signature around its kernel's (timing noise moves it little)
TIMING_NOISE = 0.02  # relative sd of a re-measured median
LANDSCAPE_NOISE = 0.06  # sd of one attempt's log speedup around the landscape's mean
# The unrelated experience, as shares of each growth step's attempts.
GROWTH_MIX = {
    "look-alike tasks": 0.30,
    "other sizes": 0.15,
    "other targets": 0.15,
    "noisy and failed re-runs": 0.25,
    "superseded evaluator": 0.15,
}
FAILURES = ("compile_error", "incorrect", "crashed", "timeout")


@dataclass(frozen=True)
class Landscape:
    """One kernel family's region of signature space and its true mean log speedups."""

    task: str
    pattern: str
    centre: tuple[float, ...]
    effects: dict[tuple[str, int], float]  # (transform, setting) -> mean log speedup

    def best(self) -> tuple[str, float]:
        """The transform with the highest mean effect over its settings, and that mean."""
        means = {t: statistics.fmean(self.effects[(t, s)] for s in SETTINGS) for t in TRANSFORMS}
        name = max(means, key=lambda t: (means[t], t))
        return name, means[name]

    def transform_mean(self, transform: str) -> float:
        return statistics.fmean(self.effects[(transform, s)] for s in SETTINGS)


def masked(values: Sequence[float], source: CounterSource) -> list[float | None]:
    """A signature as `source` measures it (signature version 2): null at the dimensions it does not."""
    measured = set(source_dimensions(source))
    return [v if i in measured else None for i, v in enumerate(values)]


def _clip(values: Sequence[float]) -> tuple[float, ...]:
    return tuple(round(min(1.0, max(0.0, v)), 6) for v in values)


def make_landscape(
    rng: random.Random, task: str, pattern: str, centre: Sequence[float] | None = None
) -> Landscape:
    centre = centre if centre is not None else [rng.uniform(0.1, 0.9) for _ in range(SIGNATURE_DIM)]
    effects: dict[tuple[str, int], float] = {}
    for transform in TRANSFORMS:
        base = rng.choice((-0.4, -0.2, -0.05, 0.0, 0.1, 0.2, 0.35))
        for setting in SETTINGS:
            effects[(transform, setting)] = round(base + rng.gauss(0.0, 0.08), 4)
    # One clear winner per family, as the study's landscapes have (a transform worth 1.6-2.5x).
    winner = rng.choice(TRANSFORMS)
    lift = rng.uniform(0.5, 0.9)
    for setting in SETTINGS:
        effects[(winner, setting)] = round(lift + rng.gauss(0.0, 0.05), 4)
    return Landscape(task, pattern, _clip(centre), effects)


def moved(centre: Sequence[float], transform: str, setting: int) -> tuple[float, ...]:
    """Where a transform moves a kernel's state: the same shift for the same transform and setting."""
    rng = random.Random(zlib.crc32(f"{transform}:{setting}".encode()))
    return _clip([c + rng.gauss(0.0, 0.08) for c in centre])


def near(rng: random.Random, centre: Sequence[float], sd: float) -> tuple[float, ...]:
    return _clip([c + rng.gauss(0.0, sd) for c in centre])


@dataclass
class Generator:
    """Builds attempt records (as a client sends them) for runs on given landscapes."""

    rng: random.Random
    runs: int = 0
    attempts: int = 0
    from_baseline: set[str] = field(default_factory=set)  # attempt keys tried from a run's baseline

    def run(
        self,
        land: Landscape,
        target: dict[str, Any],
        *,
        tries: int,
        second_level: int = 3,
        outcome_noise: float = LANDSCAPE_NOISE,
        failure_rate: float = 0.05,
        evaluator_version: int | None = EVALUATOR_VERSION,
        fake: tuple[str, float] | None = None,
        task: str | None = None,
    ) -> list[dict[str, Any]]:
        """One agent run: the baseline re-measured, `tries` transforms from it, `second_level` from its best child."""
        self.runs += 1
        run_id = f"ib-run-{self.runs}"
        task = task or land.task
        cuda = target["kind"] == "cuda"
        base_kernel = {"task": task, "backend": "triton" if cuda else "c", "patterns": [land.pattern],
                       "source": f"// {task} baseline\nvoid kernel(float* x) {{ /* {land.pattern} */ }}\n"}  # fmt: skip
        median = 1e6 * math.exp(self.rng.gauss(0.0, TIMING_NOISE))
        baseline = self._measurement(
            median, near(self.rng, land.centre, STATE_NOISE), cuda, evaluator_version
        )
        records: list[dict[str, Any]] = []
        options = [(t, s) for t in TRANSFORMS for s in SETTINGS]
        best: dict[str, Any] | None = None
        for step, (transform, setting) in enumerate(self.rng.sample(options, tries)):
            effect = land.effects[(transform, setting)]
            if fake is not None and transform == fake[0]:
                effect = fake[1]
            record = self._attempt(run_id, step, target, base_kernel, baseline, transform, setting, effect,
                                   outcome_noise, failure_rate, cuda, evaluator_version,
                                   moved(land.centre, transform, setting))  # fmt: skip
            record["_centre"] = moved(land.centre, transform, setting)
            records.append(record)
            self.from_baseline.add(record["attempt_key"])
            if record.get("speedup", 0.0) > max(1.0, best["speedup"] if best else 0.0):
                best = record
        if best is not None:
            rest = [o for o in options if o[0] != best["transform"]["name"]]
            for offset, (transform, setting) in enumerate(self.rng.sample(rest, second_level)):
                # Past the first win the landscape flattens: half the effect, the same sign.
                records.append(self._attempt(
                    run_id, tries + offset, target, best["child"], best["child_measurement"], transform,
                    setting, land.effects[(transform, setting)] / 2, outcome_noise, failure_rate, cuda,
                    evaluator_version, moved(best["_centre"], transform, setting),
                ))  # fmt: skip
        for record in records:
            record.pop("_centre", None)
        self.attempts += len(records)
        return records

    def _measurement(
        self, median: float, signature: Sequence[float], cuda: bool, evaluator_version: int | None
    ) -> dict[str, Any]:
        source = CounterSource.NVIDIA_NCU if cuda else CounterSource.CPU_CACHEGRIND
        measured: dict[str, Any] = {
            "median_ns": median, "iqr_ns": median * TIMING_NOISE, "trials": 21, "correct": True,
            "counter_source": source.value, "counters": {"time_ns": median},
            "signature": masked(signature, source),
        }  # fmt: skip
        if evaluator_version is not None:
            measured.update(evaluator_version=evaluator_version, sandboxed=True)
        return measured

    def _attempt(
        self, run_id: str, step: int, target: dict[str, Any], parent: dict[str, Any],
        parent_state: dict[str, Any], transform: str, setting: int, effect: float, outcome_noise: float,
        failure_rate: float, cuda: bool, evaluator_version: int | None, child_centre: Sequence[float],
    ) -> dict[str, Any]:  # fmt: skip
        child = {**parent, "source": f"{parent['source']}// {transform} level {setting}\n"}
        record: dict[str, Any] = {
            "attempt_key": f"{run_id}:{step}", "run_id": run_id, "agent": "interference-bench",
            "target": target["name"], "parent": parent, "parent_measurement": parent_state,
            "transform": {"name": transform, "params": {"level": setting}}, "child": child,
        }  # fmt: skip
        if self.rng.random() < failure_rate:
            outcome = self.rng.choice(FAILURES)
            return {**record, "outcome": outcome, "diagnosis": f"{outcome} (synthetic)"}
        gain = effect + self.rng.gauss(0.0, outcome_noise)
        speedup = math.exp(gain)
        signature = near(self.rng, child_centre, STATE_NOISE)
        child_measured = self._measurement(
            parent_state["median_ns"] / speedup, signature, cuda, evaluator_version
        )
        child_measured["parent_median_ns"] = parent_state["median_ns"]
        return {**record, "outcome": "kept" if speedup > 1.0 else "discarded", "speedup": speedup,
                "child_measurement": child_measured}  # fmt: skip


@dataclass
class World:
    """The core landscapes, their query states and everything needed to grow the graph."""

    seed: int
    core: list[Landscape]
    lookalikes: list[Landscape] = field(default_factory=list)
    sizes: list[Landscape] = field(default_factory=list)
    on_targets: list[tuple[Landscape, dict[str, Any]]] = field(default_factory=list)


def make_world(seed: int, tasks: Sequence[str], patterns: Sequence[str]) -> World:
    rng = random.Random(seed)
    core = [make_landscape(rng, task, pattern) for task, pattern in zip(tasks, patterns, strict=True)]
    world = World(seed, core)
    for i in range(4 * len(core)):
        # Another kernel whose measured state resembles a query task's: a different landscape nearby.
        home = core[i % len(core)]
        world.lookalikes.append(
            make_landscape(rng, f"ib-other-{i:03d}", home.pattern, near(rng, home.centre, 0.12))
        )
    for land in core:
        # The same task at another size: the state moves (more launch-bound, less cache-bound), and
        # the landscape is related, not equal.
        centre = list(land.centre)
        centre[10] = min(1.0, centre[10] + 0.3)
        centre[1] = max(0.0, centre[1] - 0.2)
        effects = {k: round(v + rng.gauss(0.0, 0.25), 4) for k, v in land.effects.items()}
        world.sizes.append(Landscape(land.task, land.pattern, _clip(centre), effects))
        for target in TARGETS[1:]:
            shifted = near(rng, land.centre, 0.1)
            effects = {k: round(v + rng.gauss(0.0, 0.3), 4) for k, v in land.effects.items()}
            world.on_targets.append((Landscape(land.task, land.pattern, shifted, effects), target))
    return world


def core_records(world: World, gen: Generator, runs_per_task: int) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    for land in world.core:
        for _ in range(runs_per_task):
            records += gen.run(land, TARGETS[0], tries=6)
    return records


def growth_records(world: World, gen: Generator, attempts: int) -> dict[str, list[dict[str, Any]]]:
    """About `attempts` attempts of unrelated experience, by kind (GROWTH_MIX)."""
    rng = gen.rng
    out: dict[str, list[dict[str, Any]]] = {}
    for kind, share in GROWTH_MIX.items():
        wanted = int(attempts * share)
        batch: list[dict[str, Any]] = []
        while len(batch) < wanted:
            if kind == "look-alike tasks":
                batch += gen.run(rng.choice(world.lookalikes), TARGETS[0], tries=6)
            elif kind == "other sizes":
                batch += gen.run(rng.choice(world.sizes), TARGETS[0], tries=6)
            elif kind == "other targets":
                land, target = rng.choice(world.on_targets)
                batch += gen.run(land, target, tries=6)
            elif kind == "noisy and failed re-runs":
                batch += gen.run(
                    rng.choice(world.core), TARGETS[0], tries=6, outcome_noise=0.45, failure_rate=0.4
                )
            else:
                # Evaluator 1 (unsandboxed) let a broken variant of one transform look fast.
                land = rng.choice(world.core)
                fake = _fake_transform(land)
                batch += gen.run(land, TARGETS[0], tries=8, evaluator_version=None, fake=(fake, 1.2))
        out[kind] = batch
    return out


def _fake_transform(land: Landscape) -> str:
    """The transform evaluator 1 mis-measured on this family: its worst one (deterministic per family)."""
    return min(TRANSFORMS, key=lambda t: (land.transform_mean(t), t))


def known_best(
    records: Sequence[dict[str, Any]], from_baseline: set[str], core: Sequence[Landscape]
) -> dict[str, str]:
    """Per task, the transform with the highest mean log speedup in the core's stored evidence from
    that task's baseline states (failures count as the service's failure value)."""
    gains: dict[tuple[str, str], list[float]] = {}
    for r in records:
        if r["attempt_key"] in from_baseline:
            gain = math.log(r["speedup"]) if r.get("speedup") else -0.1
            gains.setdefault((r["parent"]["task"], r["transform"]["name"]), []).append(gain)
    best: dict[str, str] = {}
    for land in core:
        means = {t: statistics.fmean(g) for (task, t), g in gains.items() if task == land.task}
        best[land.task] = max(means, key=lambda t: (means[t], t))
    return best


def ingest(
    client: InProcessClient, records: Sequence[dict[str, Any]], say: Callable[[str], None], label: str
) -> float:
    started = time.perf_counter()
    for start in range(0, len(records), MAX_BATCH):
        client.record_attempts(records[start : start + MAX_BATCH])
        say(f"{label}: {min(start + MAX_BATCH, len(records)):,}/{len(records):,} attempts recorded")
    return time.perf_counter() - started


@dataclass(frozen=True)
class Query:
    task: str
    signature: tuple[float, ...]


def make_queries(world: World, per_task: int) -> list[Query]:
    rng = random.Random(world.seed + 1)
    return [
        Query(land.task, near(rng, land.centre, STATE_NOISE)) for land in world.core for _ in range(per_task)
    ]


def measure(
    knowledge: KnowledgeService,
    namespace: str,
    world: World,
    queries: Sequence[Query],
    best: dict[str, str],
    repeats: int,
) -> dict[str, Any]:
    """Quality, latency and the evidence a proposer receives, for every query."""
    lands = {land.task: land for land in world.core}
    ranks: list[int] = []
    oracle: list[float] = []
    latencies: list[float] = []
    rows: list[int] = []
    settings: list[int] = []
    response_chars: list[int] = []
    evidence_chars: list[int] = []
    prompt_chars: list[int] = []
    disputed: list[int] = []
    contexts = {land.task: _prompt_context(land.task) for land in world.core}
    for repeat in range(repeats + 1):  # pass 0 warms the caches and is not timed
        for query in queries:
            request = RetrieveRequest(
                target=MAIN_TARGET,
                signature=masked(query.signature, CounterSource.CPU_CACHEGRIND),
                k=20,
                limit=len(TRANSFORMS),
            )
            started = time.perf_counter()
            response = knowledge.retrieve([namespace], request)
            elapsed = (time.perf_counter() - started) * 1000.0
            if repeat == 0:
                continue
            latencies.append(elapsed)
            if repeat > 1:
                continue
            names = [t.transform for t in response.transforms]
            rank = names.index(best[query.task]) + 1 if best[query.task] in names else len(TRANSFORMS) + 1
            ranks.append(rank)
            land = lands[query.task]
            top = names[0] if names else None
            _, oracle_gain = land.best()
            oracle.append((land.transform_mean(top) if top else 0.0) / oracle_gain)
            rows.append(len(response.transforms))
            settings.append(sum(len(t.by_params) for t in response.transforms))
            response_chars.append(len(response.model_dump_json()))
            evidence = {t.transform: t for t in response.transforms}
            evidence_chars.append(len(format_evidence(evidence)))
            context = contexts[query.task]
            prompt_chars.append(len(build_prompt(context, evidence)) if context is not None else 0)
            disputed.append(sum(t.disputed for t in response.transforms))
    n = len(ranks)
    return {
        "queries": n,
        "mrr": sum(1.0 / r for r in ranks) / n,
        "hit_at_1": sum(r == 1 for r in ranks) / n,
        "mean_rank": statistics.fmean(ranks),
        "oracle_fraction_top1": statistics.fmean(oracle),
        "retrieve_ms": {
            "p50": nearest_rank(latencies, 0.5),
            "p95": nearest_rank(latencies, 0.95),
            "samples": len(latencies),
        },
        "proposer_evidence": {
            "transforms": statistics.fmean(rows),
            "settings": statistics.fmean(settings),
            "response_chars": statistics.fmean(response_chars),
            "llm_evidence_chars": statistics.fmean(evidence_chars),
            "llm_evidence_chars_max": max(evidence_chars),
            "llm_prompt_chars": statistics.fmean(prompt_chars),
            "disputed_transforms": statistics.fmean(disputed),
        },
    }


def _prompt_context(task_name: str) -> ProposalContext | None:
    """The llm proposer's context for a task's baseline (a real task's source; no backend is used)."""
    try:
        task = get_task(task_name)
    except Exception:
        return None
    target = get_target("cpu-x86-64-v2", measure=False)
    return ProposalContext(task=task, backend=None, target=target, config=task.baseline_config,  # type: ignore[arg-type]
                           source=task.source("c", task.baseline_config), profile=None)  # fmt: skip


def graph_size(knowledge: KnowledgeService, namespace: str) -> dict[str, int]:
    _, rows = knowledge.store.run_text(
        "MATCH (a:Attempt {namespace: $ns}) WITH count(a) AS attempts "
        "MATCH (m:Measurement {namespace: $ns}) RETURN attempts, count(m) AS measurements, "
        "sum(CASE WHEN m.explored THEN 1 ELSE 0 END) AS explored",
        {"ns": namespace},
        write=False,
    )
    return {k: int(v) for k, v in rows[0].items()}


def run_interference(
    knowledge: KnowledgeService,
    *,
    scales: Sequence[int] = (1, 10, 100),
    runs_per_task: int = 8,
    queries_per_task: int = 5,
    repeats: int = 3,
    seed: int = 11,
    kernelbench: bool = True,
    consolidate: bool = True,
    say: Callable[[str], None] = lambda text: None,
) -> dict[str, Any]:
    """The whole benchmark (see the module docstring); returns the report."""
    from kernelgraph.service.importers.kernelbench import SHIPPED_TIMINGS, import_timings

    started = time.perf_counter()
    context = run_context()  # which code, and how busy the machine was as the run began
    namespace = f"interference-{datetime.now(UTC).strftime('%Y%m%dt%H%M%S')}"
    client = InProcessClient(knowledge, namespace)
    client.upsert_targets(list(TARGETS))
    tasks = [t.name for t in all_tasks("c")][:12]
    patterns = [t.family for t in all_tasks("c")][:12]
    world = make_world(seed, tasks, patterns)
    gen = Generator(random.Random(seed + 2))
    core = core_records(world, gen, runs_per_task)
    best = known_best(core, gen.from_baseline, world.core)
    queries = make_queries(world, queries_per_task)
    ingest_s = ingest(client, core, say, "core (1x)")
    core_attempts = len(core)
    steps: list[dict[str, Any]] = []
    recorded = core_attempts
    composition: dict[str, int] = {"core": core_attempts}
    for scale in sorted(scales):
        wanted = core_attempts * scale - recorded
        if wanted > 0:
            kb = 0
            if kernelbench and "kernelbench" not in composition:
                say("importing KernelBench's published timings")
                before = graph_size(knowledge, namespace)["attempts"]
                t0 = time.perf_counter()
                import_timings(SHIPPED_TIMINGS, client, progress=say)
                ingest_s += time.perf_counter() - t0
                kb = graph_size(knowledge, namespace)["attempts"] - before
                composition["kernelbench"] = kb
            grown = growth_records(world, gen, max(0, wanted - kb))
            for kind, records in grown.items():
                ingest_s += ingest(client, records, say, f"{scale}x: {kind}")
                composition[kind] = composition.get(kind, 0) + len(records)
            recorded = graph_size(knowledge, namespace)["attempts"]
        say(f"{scale}x: retrieving")
        step: dict[str, Any] = {"scale": scale, "graph": graph_size(knowledge, namespace),
                                "composition": dict(composition)}  # fmt: skip
        step["recorded"] = measure(knowledge, namespace, world, queries, best, repeats)
        if consolidate:
            say(f"{scale}x: consolidating")
            t0 = time.perf_counter()
            done = knowledge.consolidate(namespace)
            step["consolidation"] = {**done.model_dump(mode="json"), "wall_s": time.perf_counter() - t0}
            step["consolidated"] = measure(knowledge, namespace, world, queries, best, repeats)
        steps.append(step)
    report = {
        "benchmark": "interference",
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        **context,
        "namespace": namespace,
        "seed": seed,
        "core": {
            "tasks": tasks,
            "attempts": core_attempts,
            "runs_per_task": runs_per_task,
            "queries": len(queries),
            "known_best": best,
        },
        "growth_mix": GROWTH_MIX,
        "steps": steps,
        "ingest_s": ingest_s,
        "wall_s": time.perf_counter() - started,
    }
    report["goals"] = goals(steps)
    return report


def goals(steps: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Quality and p95 at the largest size against the smallest, as recorded and consolidated."""
    first, last = steps[0], steps[-1]
    out: dict[str, Any] = {"ratio": GOAL_RATIO}
    for arm in ("recorded", "consolidated"):
        if arm not in last:
            continue
        base = first[arm] if arm in first else first["recorded"]
        quality = last[arm]["mrr"] / base["mrr"] if base["mrr"] else math.nan
        p95 = last[arm]["retrieve_ms"]["p95"] / base["retrieve_ms"]["p95"]
        out[arm] = {
            "mrr_ratio": quality,
            "p95_ratio": p95,
            "quality_met": quality >= GOAL_RATIO,
            "p95_met": p95 <= 2 - GOAL_RATIO,
        }
    return out


def summary_lines(report: dict[str, Any]) -> list[str]:
    lines = []
    for step in report["steps"]:
        for arm in ("recorded", "consolidated"):
            if arm not in step:
                continue
            m = step[arm]
            lines.append(
                f"{step['scale']:>4}x {arm:<12} attempts {step['graph']['attempts']:>7,}  MRR {m['mrr']:.3f}  "
                f"hit@1 {m['hit_at_1']:.2f}  oracle {m['oracle_fraction_top1']:.2f}  "
                f"p95 {m['retrieve_ms']['p95']:.1f} ms  response {m['proposer_evidence']['response_chars']:,.0f} ch  "
                f"llm evidence {m['proposer_evidence']['llm_evidence_chars']:,.0f} ch"
            )
    return lines


def to_json(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=2, default=str)
