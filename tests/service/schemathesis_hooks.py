"""Schemathesis hooks for the contract test (loaded through SCHEMATHESIS_HOOKS).

Two rules cannot be written in JSON Schema, which cannot say that two values are equal or that one
property is unique across the items of an array (`uniqueItems` compares whole items): an attempt's
`child.task` equals its `parent.task`, and the keys (`attempt_key`, `key`) of one batch are distinct.
The OpenAPI descriptions state both. For cases generated as valid data, this hook makes them hold
(the child's task becomes its parent's; a repeated key gets a suffix), so that "schema-valid requests
are accepted" tests what the schema can say. Cases generated as invalid data are left alone: the
server must reject them as they are.
"""

from __future__ import annotations

from typing import Any

import schemathesis


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
    elif case.operation.path == "/v1/attempts/batch" and isinstance(case.body.get("attempts"), list):
        for attempt in case.body["attempts"]:
            _same_task(attempt)
        _distinct(case.body["attempts"], "attempt_key")
    elif case.operation.path == "/v1/measurements/batch" and isinstance(case.body.get("measurements"), list):
        _distinct(case.body["measurements"], "key")
