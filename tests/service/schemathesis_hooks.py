"""Schemathesis hooks for the contract test (loaded through SCHEMATHESIS_HOOKS).

Rules that cannot be written in JSON Schema, which cannot say that two values are equal or that one
property is unique across the items of an array (`uniqueItems` compares whole items): an attempt's
`child.task` equals its `parent.task`, and the keys (`attempt_key`, `key`) of one batch are distinct.
The OpenAPI descriptions state both, and a third (issue 28): an attempt's speedup is the ratio of its
child measurement's `parent_median_ns` and `median_ns`, and its outcome agrees with it and with
correctness. For cases generated as valid data, this hook makes them hold (the child's task becomes its
parent's; a repeated key gets a suffix; an attempt key is fresh per case, since a key reused with other
content is a 409; the speedup and outcome are made to agree), so that "schema-valid requests are
accepted" tests what the schema can say. Cases generated as invalid data are left alone: the server
must reject them as they are.
"""

from __future__ import annotations

import itertools
from typing import Any

import schemathesis

_CASES = itertools.count()
_NO_RUNTIME = {"compile_error", "crashed", "timeout", "rejected"}


def _consistent(attempt: Any) -> None:
    """The speedup and outcome of a generated attempt made to agree with its measurements, and its key
    made fresh."""
    if not isinstance(attempt, dict):
        return
    if isinstance(attempt.get("attempt_key"), str):
        attempt["attempt_key"] = f"{attempt['attempt_key'][:180]}.c{next(_CASES)}"
    child = attempt.get("child_measurement")
    child = child if isinstance(child, dict) else None
    median = child.get("median_ns") if child else None
    timed = isinstance(median, int | float) and not isinstance(median, bool) and median > 0
    if attempt.get("outcome") in _NO_RUNTIME or not timed:
        attempt.pop("speedup", None)
    speedup = attempt.get("speedup")
    if isinstance(speedup, int | float) and child is not None and timed:
        child["parent_median_ns"] = float(speedup) * float(median)
        if child["parent_median_ns"] <= 0 or child["parent_median_ns"] == float("inf"):
            attempt.pop("speedup")
            child.pop("parent_median_ns")
    correct = child.get("correct") if child else None
    if attempt.get("outcome") == "kept" and not (
        isinstance(attempt.get("speedup"), int | float) and attempt["speedup"] > 1 and correct is not False
    ):
        attempt["outcome"] = "discarded" if correct is not False else "incorrect"
    if attempt.get("outcome") == "discarded" and correct is False:
        attempt["outcome"] = "incorrect"
    if attempt.get("outcome") == "incorrect" and child is not None and correct is True:
        child["correct"] = False


def _same_task(attempt: Any) -> None:
    if isinstance(attempt, dict):
        parent, child = attempt.get("parent"), attempt.get("child")
        if isinstance(parent, dict) and isinstance(child, dict) and "task" in parent and "task" in child:
            child["task"] = parent["task"]


def _distinct(items: list[Any], key: str) -> None:
    seen: set[Any] = set()
    for index, item in enumerate(items):
        if isinstance(item, dict) and isinstance(item.get(key), str):
            if item[key] in seen:
                item[key] = f"{item[key][:180]}.{index}"
            seen.add(item[key])


@schemathesis.hook
def before_call(ctx: Any, case: Any, **kwargs: Any) -> None:
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive or not isinstance(case.body, dict):
        return
    if case.operation.path == "/v1/attempts":
        _same_task(case.body)
        _consistent(case.body)
    elif case.operation.path == "/v1/attempts/batch" and isinstance(case.body.get("attempts"), list):
        for attempt in case.body["attempts"]:
            _same_task(attempt)
            _consistent(attempt)
        _distinct(case.body["attempts"], "attempt_key")
    elif case.operation.path == "/v1/targets" and isinstance(case.body.get("targets"), list):
        # Fresh names: changing a stored target's peaks is admin-only (403), and the key is a writer's.
        case_id = next(_CASES)
        for target in case.body["targets"]:
            if isinstance(target, dict) and isinstance(target.get("name"), str):
                target["name"] = f"{target['name'][:100]}.c{case_id}"
        _distinct(case.body["targets"], "name")
    elif case.operation.path == "/v1/measurements/batch" and isinstance(case.body.get("measurements"), list):
        _distinct(case.body["measurements"], "key")
