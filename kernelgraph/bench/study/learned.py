"""Study v3's learned key: a diagonal metric over the counter signature's dimensions, fitted so that
states sharing their winning transform are near. Fitted on the development set only (never the
evaluation set): logistic regression of "same winning transform" on each pair's per-dimension squared
differences, P(same) = sigmoid(b - sum_d w_d (x_d - y_d)^2) with every w_d >= 0, numpy only.

A state's winning transform is what its measured landscape says: the transform whose best single
application from that config is fastest (by the mean of landscapes A and B), when it beats the keep
threshold; a state nothing improves has none and is left out."""

from __future__ import annotations

import itertools
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kernelgraph.agent.loop import DEFAULT_KEEP_THRESHOLD
from kernelgraph.agent.tasks.base import Config, Task
from kernelgraph.bench.landscapes import config_key
from kernelgraph.bench.study.protocol_v3 import LEARNED_L2, LEARNED_PAIRS, LEARNED_SEED
from kernelgraph.core.signature import (
    DIMENSION_NAMES,
    MIN_SHARED_DIMENSIONS,
    TargetPeaks,
    compute_signature,
    source_dimensions,
)


def signature_vector(
    counter_source: str, counters: Mapping[str, float], peaks: TargetPeaks
) -> dict[str, float]:
    """The state's signature on the dimensions its counter source measures (the signature's own API:
    SOURCE_DIMENSIONS through `source_dimensions`), unmeasured ones left out."""
    signature = compute_signature(counter_source, counters, peaks)
    out: dict[str, float] = {}
    for index in source_dimensions(counter_source):
        value = signature.values[index]
        if value is not None:
            out[DIMENSION_NAMES[index]] = float(value)
    return out


def winning_transform(
    task: Task, config: Config, instance: str, time_of: Mapping[tuple[str, str], float]
) -> str | None:
    """The transform whose best single application from `config` is fastest at `instance` (times by
    `time_of`, e.g. the mean of A and B), if it is faster than the keep threshold; else None."""
    base = time_of.get((config_key(config), instance))
    if base is None:
        return None
    best, best_ns = None, base / (1.0 + DEFAULT_KEEP_THRESHOLD)
    for spec in task.transforms:
        keys = list(spec.params)
        for values in itertools.product(*(spec.params[k] for k in keys)):
            child = spec.apply(config, dict(zip(keys, values, strict=True)))
            ns = None if child is None else time_of.get((config_key(child), instance))
            if ns is not None and ns < best_ns:
                best, best_ns = spec.name, ns
    return best


@dataclass(frozen=True)
class LabelledState:
    task: str
    instance: str
    config: str
    vector: Mapping[str, float]
    winner: str


@dataclass(frozen=True)
class LearnedKey:
    dimensions: tuple[str, ...]
    weights: tuple[float, ...]
    bias: float
    fitted_on: tuple[str, ...]  # the tasks of the states it was fitted on
    pairs: int
    same_share: float
    accuracy: float

    def distance(self, query: Mapping[str, float], state: Mapping[str, float]) -> float | None:
        """The fitted distance over the dimensions both measured (None: fewer than the signature's
        MIN_SHARED_DIMENSIONS shared, as the service's own rule)."""
        shared = [
            (w, d) for w, d in zip(self.weights, self.dimensions, strict=True) if d in query and d in state
        ]
        if len(shared) < min(MIN_SHARED_DIMENSIONS, len(query)):
            return None
        return sum(w * (query[d] - state[d]) ** 2 for w, d in shared)

    def to_json(self) -> dict[str, Any]:
        return {"dimensions": list(self.dimensions), "weights": list(self.weights), "bias": self.bias,
                "fitted_on": list(self.fitted_on), "pairs": self.pairs, "same_share": self.same_share,
                "accuracy": self.accuracy}  # fmt: skip


def _pairs(n: int, limit: int, rng: np.random.Generator) -> np.ndarray:
    total = n * (n - 1) // 2
    if total <= limit:
        return np.asarray([(i, j) for i in range(n) for j in range(i + 1, n)], dtype=int).reshape(-1, 2)
    i = rng.integers(0, n, size=limit * 2)
    j = rng.integers(0, n, size=limit * 2)
    keep = i != j
    return np.stack([i[keep], j[keep]], axis=1)[:limit]


def fit_learned_key(
    states: Sequence[LabelledState],
    eval_tasks: Collection[str],
    *,
    pairs: int = LEARNED_PAIRS,
    l2: float = LEARNED_L2,
    seed: int = LEARNED_SEED,
    iterations: int = 3_000,
) -> LearnedKey:
    """Fit the metric on `states`, which must hold no state of an evaluation task."""
    leaked = sorted({s.task for s in states if s.task in eval_tasks})
    if leaked:
        raise ValueError(f"the learned key is fitted on the development set only; got states of {leaked}")
    if len(states) < 2:
        raise ValueError("the learned key needs at least two labelled development states")
    dimensions = tuple(d for d in DIMENSION_NAMES if any(d in s.vector for s in states))
    x = np.asarray([[s.vector.get(d, math.nan) for d in dimensions] for s in states], dtype=float)
    labels = [s.winner for s in states]
    index = _pairs(len(states), pairs, np.random.default_rng(seed))
    diff = (x[index[:, 0]] - x[index[:, 1]]) ** 2
    diff = np.nan_to_num(diff, nan=0.0)  # a dimension one of the two did not measure says nothing
    y = np.asarray([labels[i] == labels[j] for i, j in index], dtype=float)
    w, b = np.zeros(len(dimensions)), 0.0
    rate = 1.0
    for _ in range(iterations):  # projected gradient descent on the mean log loss (w >= 0)
        p = 1.0 / (1.0 + np.exp(-(b - diff @ w)))
        grad_logit = p - y  # d loss / d logit
        grad_w = -(diff.T @ grad_logit) / len(y) + l2 * w
        grad_b = float(np.mean(grad_logit))
        w = np.maximum(0.0, w - rate * grad_w)
        b -= rate * grad_b
    p = 1.0 / (1.0 + np.exp(-(b - diff @ w)))
    accuracy = float(np.mean((p > 0.5) == (y > 0.5)))
    return LearnedKey(dimensions, tuple(float(v) for v in w), float(b), tuple(sorted({s.task for s in states})),
                      len(y), float(np.mean(y)), accuracy)  # fmt: skip
