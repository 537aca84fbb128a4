"""Whether a comparison passes as a CI gate: one rule for `tile compare`, `tile bench
--compare`, `pytest --tile-compare` and anything else that turns a comparison into an exit code.

A gate must not be green by accident: a comparison in which some case could not be judged
(no baseline for it, a different timer, no samples) checked less than it seems to, and one in
which no case could be judged checked nothing. Both fail as `unjudged` (exit 4 in the CLI)
unless the caller allows cases present on one side only (`allow_missing`); nothing judged at
all never passes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

from tile_artifacts._documents import ComparisonDoc
from tile_artifacts._records import ComparisonRow

__all__ = ["ONE_SIDED", "GateResult", "GateVerdict", "gate_comparison"]

GateVerdict = Literal["pass", "regression", "unjudged"]
ONE_SIDED: Final = frozenset({"added", "removed"})
"""Reasons of a `not_comparable` row whose case is in one run only."""
_NAMED: Final = 3


@dataclass(frozen=True)
class GateResult:
    """The gate's verdict, and one sentence saying why when it did not pass."""

    verdict: GateVerdict
    reason: str | None = None

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"


def _names(rows: Sequence[ComparisonRow]) -> str:
    named = ", ".join(f"`{r.case_id}`" for r in rows[:_NAMED])
    return named + (f" and {len(rows) - _NAMED} more" if len(rows) > _NAMED else "")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def gate_comparison(
    doc: ComparisonDoc,
    *,
    fail_on_inconclusive: bool = False,
    allow_missing: bool = False,
) -> GateResult:
    """Judge a comparison as a gate, worst first.

    `regression` on any regression. Then `unjudged` when no row was judged at all, when a
    row is `not_comparable` for a reason other than its case being in one run only (device,
    timer or mode differ, samples missing, the case failed), when cases are in one run only
    and `allow_missing` is false, or when a row is `inconclusive` and `fail_on_inconclusive`.
    Otherwise `pass`.
    """
    against = f"against `{doc.baseline.label or doc.baseline.run_id or 'the baseline'}`"
    regressions = [r for r in doc.rows if r.judgement == "regression"]
    if regressions:
        what = _plural(len(regressions), "regression")
        return GateResult("regression", f"{what} {against}: {_names(regressions)}")
    unjudged = [r for r in doc.rows if r.judgement == "not_comparable"]
    if len(unjudged) == len(doc.rows):
        why = f" ({unjudged[0].reason})" if unjudged and unjudged[0].reason else ""
        return GateResult("unjudged", f"no case could be compared {against}{why}")
    refused = [r for r in unjudged if r.reason not in ONE_SIDED]
    if refused:
        first = f": {refused[0].reason}" if refused[0].reason else ""
        return GateResult(
            "unjudged",
            f"{_plural(len(refused), 'case')} not comparable {against} ({_names(refused)}{first})",
        )
    one_sided = [r for r in unjudged if r.reason in ONE_SIDED]
    if one_sided and not allow_missing:
        removed = [r for r in one_sided if r.reason == "removed"]
        added = [r for r in one_sided if r.reason == "added"]
        parts: list[str] = []
        if removed:
            parts.append(f"{_plural(len(removed), 'case')} of the baseline not in this run "
                         f"({_names(removed)})")  # fmt: skip
        if added:
            parts.append(f"{_plural(len(added), 'case')} without a baseline ({_names(added)})")
        return GateResult("unjudged", "; ".join(parts))
    inconclusive = [r for r in doc.rows if r.judgement == "inconclusive"]
    if inconclusive and fail_on_inconclusive:
        what = _plural(len(inconclusive), "inconclusive case")
        return GateResult("unjudged", f"{what} {against}: {_names(inconclusive)}")
    return GateResult("pass")
