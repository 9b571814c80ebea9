"""Validating a batch of records: a bad item is named by its place, `attempts[i].<field>`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from kernelgraph.core.errors import InvalidInput, PayloadTooLarge
from kernelgraph.core.models import MAX_BATCH, Strict, validate

M = TypeVar("M", bound=Strict)


def item_error(exc: InvalidInput, batch: str, index: int, *, prefix_message: bool = True) -> InvalidInput:
    """`exc`, raised by item `index` of the list `batch` ("attempts"), naming that item: field
    `attempts[i].<field>` (`attempts[i]` for the item as a whole) and, unless told not to, the
    message too."""
    where = f"{batch}[{index}]"
    return InvalidInput(
        f"{where}.{exc.message}" if prefix_message else exc.message,
        field=f"{where}.{exc.field}" if exc.field else where,
        details=exc.details,
    )


def refuse_oversized(items: Sequence[Any], batch: str) -> None:
    """413 for a request holding more than MAX_BATCH items (a client splits its batches to fit)."""
    if len(items) > MAX_BATCH:
        raise PayloadTooLarge(
            f"a batch holds at most {MAX_BATCH} {batch}, got {len(items)}; split it", field=batch
        )


def validate_batch(
    model: type[M], items: Sequence[M | Mapping[str, Any]], batch: str, *, single_unprefixed: bool = False
) -> list[M]:
    """Every item as `model` (an instance passes as it is), or InvalidInput naming the first bad item
    by its place in `batch`. `single_unprefixed`: a batch of one reports the error as the item's own
    (a caller who sent one record has no list to point into)."""
    models: list[M] = []
    for index, item in enumerate(items):
        try:
            models.append(item if isinstance(item, model) else validate(model, item))
        except InvalidInput as exc:
            if single_unprefixed and len(items) == 1:
                raise
            raise item_error(exc, batch, index) from None
    return models


def batch_field(batch: str, index: int, field: str, *, single: bool) -> str:
    """The field an error about item `index` names: `attempts[i].<field>`, or just `<field>` when the
    caller sent a single record."""
    return field if single else f"{batch}[{index}].{field}"


def refuse_repeated(keys: Sequence[str], field: str) -> None:
    """InvalidInput when two records of one batch share a key (`field` names it)."""
    if len(set(keys)) != len(keys):
        raise InvalidInput(f"{field} values must be unique within one batch", field=field)
