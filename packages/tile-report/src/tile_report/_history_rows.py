"""What a history row must hold before it is shown: a hand-edited file is refused, not drawn."""

from __future__ import annotations

import math
from pathlib import Path

from tile_report._errors import HistoryError

__all__ = ["checked_median"]


def checked_median(value: object, *, path: Path, run_id: object, case_id: object) -> float:
    """A row's `median_s` as a time, or HistoryError naming the row: SQLite keeps whatever a
    hand edit put in a REAL column (`'fast'`, -0.001), which ended `tile history show` in a
    TypeError or drew negative times."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
        if math.isfinite(number) and number > 0:
            return number
    raise HistoryError(
        f"`{path}`: the row of run `{run_id}`, case `{case_id}` has median_s {value!r}, "
        "not a positive time; it was left as it is",
        hint=f"move it aside (`mv {path} {path}.broken`) and rebuild it with "
        "`tile history add .tile/runs/*`",
    )
