"""A report read without its `metrics`, for the readers that never look at them."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from tile_artifacts._base import MODE_KEY
from tile_artifacts._models import CaseRecord, Report
from tile_artifacts._pieces import report_pieces

__all__ = ["lean_report"]

_READ: Final = {MODE_KEY: "read"}


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"`{name}` is not valid JSON")


def _parse(text: str) -> object:
    return json.loads(text, parse_constant=_refuse_constant)


def lean_report(file: Path, read_bytes: Callable[[Path], bytes]) -> Report | None:
    """A valid `tile.report` file as a Report without its `metrics`, or None where the careful
    path must decide (not a report, not valid: its messages say why).

    The file is held as bytes (`report_pieces` finds each case in them without building
    anything) and each case is parsed and built into its model on its own, so neither the
    whole document's text nor its plain objects are ever held; the metrics are not read."""
    try:
        pieces = report_pieces(read_bytes(file), _parse)
        if pieces is None:
            return None
        fields = pieces.envelope
        version = fields.get("schema_version")
        if fields.get("schema_name") != "tile.report" or type(version) is not int or version != 1:
            return None
        del fields["metrics"]
        report = Report.model_validate(fields, context=_READ)
        cases = [
            CaseRecord.model_validate(_parse(text), context=_READ)
            for text in pieces.texts(pieces.cases)
        ]
        return report.model_copy(update={"cases": cases})
    except (ValueError, RecursionError):  # pydantic's ValidationError is a ValueError
        return None
