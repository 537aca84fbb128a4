"""Rules that a document can pass field by field and still break: impossible timings and
parts that disagree with each other (schema-check's second look, after the models).

A model checks each value on its own (a float is a float); these rules check what the values
claim together: a time is positive, `stats.n` counts the samples, min <= median <= max, the
run's timing adds up the cases' accounting, metrics repeat the cases they come from, a case
or a pooled run appears once, an op has one baseline implementation. A report that breaks
one is corrupt or forged, and a comparison built on it would say "improvement -100%".
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence

from tile_artifacts._documents import Baseline
from tile_artifacts._models import CaseRecord, StatsRecord

__all__ = [
    "Add",
    "baseline_problems",
    "case_problems",
    "case_timings",
    "close",
    "duplicates",
    "first_impossible_sample",
]

Add = Callable[[str], None]
"""Records one problem (a message) against the file being checked."""

_REL = 1e-9  # floats that went through JSON come back exact; this only forgives summing order


def close(a: float, b: float, rel: float = _REL) -> bool:
    """`a` and `b` are the same number, but for the order it was summed in."""
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-12)


def first_impossible_sample(samples: Sequence[float]) -> tuple[int, float] | None:
    """The first time that is zero or negative (no real measurement is), as (index, value)."""
    for i, value in enumerate(samples):
        if not value > 0:
            return i, value
    return None


def _samples(where: str, samples: Sequence[float], add: Add) -> None:
    bad = first_impossible_sample(samples)
    if bad is not None:
        count = sum(1 for s in samples if not s > 0)
        add(
            f"{where}: {count} of {len(samples)} sample(s) are zero or negative "
            f"(first: [{bad[0]}] = {bad[1]!r}); a measured time is always positive"
        )


def _stats(where: str, stats: StatsRecord, samples: Sequence[float], add: Add) -> None:
    if samples and stats.n != len(samples):
        add(f"{where}.n is {stats.n} but there are {len(samples)} sample(s)")
    if stats.n > 0 and not stats.min > 0:
        add(f"{where}.min is {stats.min!r}: a measured time is always positive")
    if stats.min > stats.max:
        add(f"{where}: min {stats.min!r} is above max {stats.max!r}")
        return
    for name in ("median", "mean", "q1", "q3", "p5", "p95"):
        value = getattr(stats, name)
        if value is not None and not (
            stats.min <= value <= stats.max or close(value, stats.min) or close(value, stats.max)
        ):
            add(f"{where}.{name} {value!r} is outside min..max ({stats.min!r}..{stats.max!r})")
    for low, high in (("q1", "q3"), ("p5", "p95"), ("ci_low", "ci_high")):
        lo, hi = getattr(stats, low), getattr(stats, high)
        if lo is not None and hi is not None and lo > hi and not close(lo, hi):
            add(f"{where}: {low} {lo!r} is above {high} {hi!r}")
    if samples:
        for name, actual in (("min", min(samples)), ("max", max(samples))):
            if not close(getattr(stats, name), actual):
                add(f"{where}.{name} is {getattr(stats, name)!r} but the samples' {name} is "
                    f"{actual!r}")  # fmt: skip


def case_timings(where: str, case: CaseRecord, add: Add) -> None:
    """The impossible timings of one case (`where` names it in each message)."""
    _samples(f"{where}: samples", case.samples, add)
    if case.stats is not None:
        _stats(f"{where}: stats", case.stats, case.samples, add)
    elif case.samples:
        add(f"{where}: has {len(case.samples)} sample(s) but no stats")
    if case.reference is not None:
        ref = case.reference
        _samples(f"{where}: reference.samples", ref.samples, add)
        if ref.stats is not None:
            _stats(f"{where}: reference.stats", ref.stats, ref.samples, add)


def duplicates(what: str, ids: Iterable[str], add: Add) -> None:
    """Each value of `ids` given more than once, with its count."""
    for value, count in Counter(ids).items():
        if count > 1:
            add(f"{what} `{value}` appears {count} times")


def case_problems(case: CaseRecord) -> list[str]:
    """The impossible timings of one case record (e.g. a runner's result before it is kept)."""
    problems: list[str] = []
    case_timings(f"`{case.case_id}`", case, problems.append)
    return problems


def baseline_problems(baseline: Baseline, add: Add) -> None:
    """A baseline's impossible timings, repeated cases and runs pooled more than once."""
    duplicates("cases: case_id", (c.case_id for c in baseline.cases), add)
    duplicates(
        "run_ids: the run",
        baseline.run_ids or [],
        lambda message: add(message + "; pooling a run twice makes its spread look zero"),
    )
    for i, case in enumerate(baseline.cases):
        where = f"cases[{i}] `{case.case_id}`"
        _samples(f"{where}: samples", case.samples, add)
        _samples(f"{where}: reference_samples", case.reference_samples, add)
        if case.stats is not None and case.run_sizes is None:
            _stats(f"{where}: stats", case.stats, case.samples, add)
