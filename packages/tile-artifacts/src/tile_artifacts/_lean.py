"""A report read without its `metrics`, for the readers that never look at them."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final, cast

from pydantic import ValidationError

from tile_artifacts._base import MODE_KEY
from tile_artifacts._models import CaseRecord, Report

__all__ = ["lean_report"]

_READ: Final = {MODE_KEY: "read"}


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"`{name}` is not valid JSON")


def lean_report(file: Path, read_text: Callable[[Path], str]) -> Report | None:
    """A valid `tile.report` file as a Report without its `metrics`, or None where the careful
    path must decide (not a report, not valid: its messages say why).

    `json.loads` builds the plain objects in a fraction of the memory pydantic's own JSON
    path takes on a large document; the text is dropped once parsed, and each case's objects
    once its model is built, so the plain form and the models are never both whole."""
    try:
        data: object = json.loads(read_text(file), parse_constant=_refuse_constant)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    fields = cast(dict[str, Any], data)
    version = fields.get("schema_version")
    if fields.get("schema_name") != "tile.report" or type(version) is not int or version != 1:
        return None
    fields.pop("metrics", None)
    cases: object = fields.pop("cases", [])
    if not isinstance(cases, list):
        return None
    try:
        report = Report.model_validate(fields, context=_READ)
        return report.model_copy(update={"cases": _cases(cast(list[object], cases))})
    except ValidationError:
        return None


def _cases(items: list[object]) -> list[CaseRecord]:
    """Each case's model, its plain objects let go as soon as it is built."""
    built: list[CaseRecord] = []
    for i, item in enumerate(items):
        items[i] = None
        built.append(CaseRecord.model_validate(item, context=_READ))
    return built
