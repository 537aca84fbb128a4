"""Numbers that cannot be: a case whose rate is above a roof of its machine by more than its CI.

A rate above 100% of a roof is not a fast kernel but a wrong number (the work counted for a
call, the peak, or the device the peak came from). The rule lives here, under everything that
shows a case: tile-harness's `plausibility` finding and terminal `‼`, summary.md and the HTML
report all ask `beyond_roof` (or `case_beyond_roof` for a recorded case), so they agree.
"""

from __future__ import annotations

from typing import Final, Literal

from tile_artifacts._models import CaseRecord

__all__ = ["IMPOSSIBLE", "MEASURED_SLACK", "RoofName", "beyond_roof", "case_beyond_roof"]

MEASURED_SLACK: Final = 0.05
"""How far past a measured roof (a calibration) a case may go before it is impossible: that
roof is one kernel's median (`x + 1`), and another access pattern can beat it by a few
percent (tile-std's copy reached 102% of the calibrated copy on an H200)."""

IMPOSSIBLE: Final = "‼"
"""The mark of a figure above a roof by more than its CI, in every table that shows one."""

RoofName = Literal["bandwidth", "compute"]
"""Which roof: peak bandwidth (GB/s) or peak compute (TFLOP/s)."""


def beyond_roof(
    pct: float | None, median: float, ci_high: float | None, *, measured: bool = False
) -> float | None:
    """The least % of a roof that the case's 95% CI allows, when even that is above the roof
    (by `MEASURED_SLACK` for a `measured` one); None when the figure is possible.

    A rate is work / time, so the slow end of the median's CI (`ci_high`) bounds it from
    below; without a CI the figure itself is taken.
    """
    if pct is None or median <= 0:
        return None
    least = pct * median / ci_high if ci_high is not None and ci_high > median else pct
    limit = 100.0 * (1.0 + MEASURED_SLACK) if measured else 100.0
    return least if least > limit else None


def case_beyond_roof(case: CaseRecord, roof: RoofName | None = None) -> float | None:
    """The least % of `roof` (of either roof when None: the larger) that a recorded case's CI
    allows, when it is above that roof; None when the case's figures are possible.

    The case's % of peak, median and CI, and whether its peak was calibrated, all come from
    the record, so a report read back from disk is judged as the run that wrote it was.
    """
    s = case.stats
    if s is None:
        return None
    r = case.roofline
    pcts = {"bandwidth": r.pct_peak_bw, "compute": r.pct_peak_flops}
    measured = r.peak_source == "calibrated"
    found = [
        least
        for name, pct in pcts.items()
        if roof in (None, name)
        and (least := beyond_roof(pct, s.median, s.ci_high, measured=measured)) is not None
    ]
    return max(found, default=None)
