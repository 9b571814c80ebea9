"""The controlled mechanism check (`--quick`): a test of the mechanism, never evidence for the claim."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kernelgraph.agent.targets import Target
from kernelgraph.agent.tasks import get_task
from kernelgraph.agent.vocabulary import query_vocabulary
from kernelgraph.bench.landscapes import (
    config_key,
    measure_states,
    read_states,
    states_path,
)
from kernelgraph.bench.study.experience import experience_runs, needed_states, record_experience
from kernelgraph.bench.study.landscapes import load_landscape
from kernelgraph.bench.study.protocol import label_of
from kernelgraph.core.models import (
    RetrievalMode,
    RetrieveRequest,
)

MECHANISM_PAIR: tuple[str, str, str] = ("softmax", "16x256", "1024x1024")  # task, L1 instance, LLC instance


def mechanism(
    knowledge: Any, target: Target, landscape_dir: Path, namespace: str, label: str = "A"
) -> dict[str, Any]:
    """Two instances of one task (same source) whose best configs differ: with experience from both in
    the graph, counters retrieval for each instance's measured state finds that instance's own state
    first, while text retrieval scores the two alike and cannot tell them apart."""
    from kernelgraph.service.inprocess import InProcessClient

    task_name, small, large = MECHANISM_PAIR
    task = get_task(task_name)
    land = load_landscape(landscape_dir, label, task)
    runs = experience_runs({task_name: land}, [(task_name, small), (task_name, large)], target)
    states = read_states(states_path(landscape_dir))
    for name, items in needed_states(
        runs, [(task_name, small), (task_name, large)], {task_name: task}
    ).items():
        states.update(measure_states(get_task(name), target, items, landscape_dir))
    client = InProcessClient(knowledge, namespace)
    record_experience(client, runs, {task_name: task}, states, target, namespace)
    knowledge.embed_pending([namespace])
    out: dict[str, Any] = {
        "task": task_name,
        "instances": [small, large],
        "best": {},
        "counters": {},
        "text": {},
    }
    base = config_key(task.baseline_config)
    for instance in (small, large):
        out["best"][instance] = land.oracle(instance)[0]
        start = states[(task_name, instance, base)]
        for mode in (RetrievalMode.COUNTERS, RetrievalMode.TEXT):
            request: dict[str, Any] = {
                "target": target.name, "mode": mode, "k": 2, "limit": 20, "transforms": query_vocabulary(task),
            }  # fmt: skip
            if mode is RetrievalMode.COUNTERS:
                request.update(counters=dict(start.counters), counter_source=start.counter_source)
            else:
                request["source"] = task.source("c", task.baseline_config)
            response = client.retrieve(RetrieveRequest.model_validate(request))
            labels = _neighbour_labels(knowledge, namespace, response.neighbour_ids)
            out[mode.value][instance] = {
                "neighbours": [{"label": x, "similarity": s} for x, s in zip(labels, response.neighbour_scores, strict=True)],
                "top_transform": response.transforms[0].transform if response.transforms else None,
            }  # fmt: skip
    counters_right = all(
        out["counters"][i]["neighbours"][0]["label"] == label_of(task_name, i) for i in (small, large)
    )
    text_tied = all(
        len(out["text"][i]["neighbours"]) == 2
        and abs(out["text"][i]["neighbours"][0]["similarity"] - out["text"][i]["neighbours"][1]["similarity"]) < 1e-6
        for i in (small, large)
    )  # fmt: skip
    out["best_differs"] = out["best"][small] != out["best"][large]
    out["counters_pick_own_instance"] = counters_right
    out["text_cannot_tell"] = text_tied
    return out


def _neighbour_labels(knowledge: Any, namespace: str, measurement_ids: Sequence[str]) -> list[str]:
    rows = knowledge.store.read(
        "measurements_by_id", namespace=namespace, measurement_ids=list(measurement_ids)
    )
    by_id = {r["measurement_id"]: r["task"] for r in rows}
    return [by_id.get(m, "?") for m in measurement_ids]
