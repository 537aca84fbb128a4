"""A report read without its `metrics`, for the readers that never look at them."""

from __future__ import annotations

import json
from typing import Any, cast

from pydantic import ValidationError

from tile_artifacts._base import MODE_KEY
from tile_artifacts._models import Report

__all__ = ["lean_report"]


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"`{name}` is not valid JSON")


def lean_report(text: str) -> Report | None:
    """A valid `tile.report` text as a Report without its `metrics`, or None where the
    careful path must decide (not a report, not valid: its messages say why).

    `json.loads` builds the plain objects in a fraction of the memory pydantic's own JSON
    path takes on a large document; the models then validate them in read mode."""
    try:
        data: object = json.loads(text, parse_constant=_refuse_constant)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    fields = cast(dict[str, Any], data)
    version = fields.get("schema_version")
    if fields.get("schema_name") != "tile.report" or type(version) is not int or version != 1:
        return None
    fields.pop("metrics", None)
    try:
        return Report.model_validate(fields, context={MODE_KEY: "read"})
    except ValidationError:
        return None
