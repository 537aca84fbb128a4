"""Implementations of one op together in the history: `tile history show` and the HTML
report's history list a case of an op beside the op's other implementations, as the bench
table, compare and the report's Implementations section do (`tile_artifacts.ops`).

A series' op is what its latest run recorded. Within an op, rows go by point (the case's
axis values and mode: its id after the kernel's name), the baseline implementation first,
then the others by label; then by device and timer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from tile_report._history_rows import Series
from tile_report._steps import Trend

__all__ = ["OpTrends", "op_trends"]


@dataclass(frozen=True)
class OpTrends:
    """One op's trends in table order (`name` None: the cases of no op, as given), and the
    label of its baseline implementation (None when none of these series is it)."""

    name: str | None
    baseline: str | None = None
    trends: list[Trend] = field(default_factory=lambda: [])

    @property
    def impls(self) -> list[str]:
        """The implementations present, baseline first."""
        return list(dict.fromkeys(t.series.op.impl for t in self.trends if t.series.op))


def point(series: Series) -> str:
    """The case's axis values and mode as its id writes them after the kernel's name."""
    cid = series.case_id
    return cid[len(series.kernel) :] if cid.startswith(series.kernel) else cid


def _order(trend: Trend) -> tuple[str, bool, str, str, str]:
    s = trend.series
    base = s.op is not None and s.op.baseline
    return (point(s), not base, s.op.impl if s.op else "", s.device, s.timer or "")


def op_trends(trends: Sequence[Trend]) -> list[OpTrends]:
    """The trends of no op first (in their order), then one group per op, in the order the
    ops first appear; a history without ops gives one group."""
    plain = [t for t in trends if t.series.op is None]
    by_op: dict[str, list[Trend]] = {}
    for t in trends:
        if t.series.op is not None:
            by_op.setdefault(t.series.op.name, []).append(t)
    groups = [OpTrends(None, None, plain)] if plain else []
    for name, members in by_op.items():
        base = next(
            (t.series.op.impl for t in members if t.series.op and t.series.op.baseline), None
        )
        groups.append(OpTrends(name, base, sorted(members, key=_order)))
    return groups
