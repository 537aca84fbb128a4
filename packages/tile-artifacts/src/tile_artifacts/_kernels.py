"""A case's per-kernel breakdown, read: lines for tables, and which kernel moved in a change.

The runner records each device kernel of one call (`CaseRecord.kernels`, `cupti` timer
only). A comparison row that judged a change names the kernel that carries most of it: the
change of each kernel's median between the two runs, over the change of their sum.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from tile_artifacts._documents import Baseline
from tile_artifacts._models import CaseRecord, KernelRecord, Report
from tile_artifacts._records import ComparisonRow
from tile_protocol.format import format_seconds

__all__ = [
    "KernelRecord",
    "MovedKernel",
    "attribute_rows",
    "breakdown_lines",
    "carrier",
    "label",
    "moved_kernel",
]

# A kernel "carries" a change when it holds at least this share of it; below, no one kernel is
# named (the change is spread: two kernels that moved alike hold about half each).
_CARRIES = 0.6


class _StatsLike(Protocol):
    @property
    def median(self) -> float: ...
    @property
    def ci_low(self) -> float | None: ...
    @property
    def ci_high(self) -> float | None: ...


class KernelLike(Protocol):
    """A kernel of a breakdown as either side holds it: the record, or the runner's message."""

    @property
    def short(self) -> str: ...
    @property
    def origin(self) -> str | None: ...
    @property
    def launches(self) -> int: ...
    @property
    def share(self) -> float: ...
    @property
    def stats(self) -> _StatsLike: ...


def label(kernel: KernelLike) -> str:
    """The kernel as a table names it: its short name, and its HLO origin where known."""
    return f"{kernel.short} [{kernel.origin}]" if kernel.origin else kernel.short


def breakdown_lines(kernels: Sequence[KernelLike] | None) -> list[str]:
    """One line per kernel of a case with more than one, slowest first: share, median, CI,
    launches per call."""
    kernels = kernels or []
    if len(kernels) < 2:
        return []
    lines: list[str] = []
    for k in sorted(kernels, key=lambda k: -k.stats.median):
        ci = ""
        if k.stats.ci_low is not None and k.stats.ci_high is not None:
            ci = f" [{format_seconds(k.stats.ci_low)}, {format_seconds(k.stats.ci_high)}]"
        launches = f" ×{k.launches}" if k.launches > 1 else ""
        lines.append(f"{k.share:6.1%}  {format_seconds(k.stats.median)}{ci}  {label(k)}{launches}")
    return lines


class MovedKernel:
    """The kernel that carries a change: its label and its share of the change (0..1+)."""

    def __init__(self, kernel: KernelRecord, share: float) -> None:
        self.kernel = kernel
        self.share = share

    def phrase(self) -> str:
        """`92% of the change in `fusion_3` [fusion.3 (kInput)]`."""
        return f"{self.share:.0%} of the change in `{label(self.kernel)}`"


def _by_name(kernels: Sequence[KernelRecord]) -> dict[str, KernelRecord]:
    return {k.name: k for k in kernels}


def carrier(base: Mapping[str, float], current: Mapping[str, float]) -> tuple[str, float] | None:
    """The kernel (by name) whose median moved most in the direction of the whole change,
    and its share of that change, when it carries 60% or more of it; None for a change spread
    over kernels (or none at all). A kernel on one side only moved by its whole median."""
    deltas = {name: current.get(name, 0.0) - base.get(name, 0.0) for name in {**base, **current}}
    total = sum(deltas.values())
    if not deltas or total == 0:
        return None
    name = max(deltas, key=lambda n: deltas[n] / total)
    share = deltas[name] / total
    return (name, share) if share >= _CARRIES else None


def moved_kernel(baseline: CaseRecord, current: CaseRecord) -> MovedKernel | None:
    """The kernel of `current` (or, if it is gone, of `baseline`) that carries the case's
    change (`carrier`); None without a breakdown on both sides."""
    base, cur = _by_name(baseline.kernels or []), _by_name(current.kernels or [])
    if not base or not cur:
        return None
    medians = [{name: k.stats.median for name, k in side.items()} for side in (base, cur)]
    found = carrier(*medians)
    if found is None:
        return None
    name, share = found
    return MovedKernel(cur.get(name) or base[name], share)


def attribute_rows(
    rows: list[ComparisonRow], baseline: Report | Baseline, current: Report | Baseline
) -> list[ComparisonRow]:
    """`rows` with each judged change (regression, improvement) naming the kernel that
    carries it, where both runs have a breakdown of the case."""
    if not isinstance(baseline, Report) or not isinstance(current, Report):
        return rows
    base = {c.case_id: c for c in baseline.cases}
    cur = {c.case_id: c for c in current.cases}
    out: list[ComparisonRow] = []
    for row in rows:
        moved = None
        if row.judgement in ("regression", "improvement") and row.case_id in base:
            moved = moved_kernel(base[row.case_id], cur[row.case_id])
        if moved is None:
            out.append(row)
            continue
        reason = f"{row.reason}; {moved.phrase()}" if row.reason else moved.phrase()
        update = {"reason": reason, "moved_kernel": label(moved.kernel), "moved_share": moved.share}
        out.append(row.model_copy(update=update))
    return out
