"""What makes a result's content impossible, whatever the stream around it: times that are
not finite and positive, statistics that disagree with their samples, accounting that does not
add up. `StreamValidator` adds the rules that depend on the stream."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from tile_protocol._messages import BenchResult, BuildResult, TestResult
from tile_protocol._parts import Accounting, Phases, Reference, Stats

__all__ = ["result_problem"]

_ACCOUNTING_PARTS = (
    "inputs_s", "compile_s", "reference_compile_s", "check_s", "warmup_s", "sample_s",
    "reference_sample_s", "other_s",
)  # fmt: skip


def _times_problem(values: Sequence[float], what: str) -> str | None:
    if not values:
        return f"it has no {what}"
    for i, value in enumerate(values):
        if not math.isfinite(value) or value <= 0:
            return f"{what} {i} is {value!r} s; a time must be finite and positive"
    return None


def _stats_problem(stats: Stats, n: int, what: str) -> str | None:
    if stats.n != n:
        return f"{what} stats count n={stats.n} but there are {n} samples"
    for name in ("min", "max", "mean", "median", "stdev", "mad", "q1", "q3", "p5", "p95"):
        value = getattr(stats, name)
        if not math.isfinite(value):
            return f"{what} stats.{name} is {value!r}"
    return None


def _seconds_problem(values: Iterable[tuple[str, float | None]]) -> str | None:
    for name, value in values:
        if value is not None and (not math.isfinite(value) or value < 0):
            return f"{name} is {value!r}; seconds must be finite and not negative"
    return None


def _phases_problem(phases: Phases) -> str | None:
    return _seconds_problem(
        (f"phases.{n}", getattr(phases, n)) for n in ("trace_s", "lower_s", "compile_s")
    )


def _accounting_problem(accounting: Accounting | None) -> str | None:
    if accounting is None:
        return None
    parts = [(f"accounting.{n}", float(getattr(accounting, n))) for n in _ACCOUNTING_PARTS]
    problem = _seconds_problem([*parts, ("accounting.total_s", accounting.total_s)])
    if problem is not None:
        return problem
    named = sum(value for _, value in parts)
    # The same tolerance as the report's model, so what passes here is written there.
    if abs(named - accounting.total_s) > 1e-6 * max(1.0, accounting.total_s):
        return f"accounting parts add up to {named:.6g} s, not total_s {accounting.total_s:.6g}"
    return None


def _reference_problem(reference: Reference, n: int, rounds: list[int] | None) -> str | None:
    problem = _times_problem(reference.samples, "reference sample")
    if problem is None and reference.stats is not None:
        problem = _stats_problem(reference.stats, len(reference.samples), "reference")
    if problem is None and reference.interleaved and len(reference.samples) != n:
        problem = (
            f"{len(reference.samples)} interleaved reference samples for {n} samples "
            "(they are taken in pairs)"
        )
    if problem is None and rounds is not None and not reference.interleaved:
        problem = "a reference timed in rounds or processes must be interleaved with the kernel"
    return problem


def _bench_problem(result: BenchResult) -> str | None:
    n = len(result.samples)
    problem = _times_problem(result.samples, "sample") or _stats_problem(result.stats, n, "the")
    for name, sizes in (("round_sizes", result.round_sizes),
                        ("process_sizes", result.process_sizes)):  # fmt: skip
        if problem is None and sizes is not None and (any(k < 1 for k in sizes) or sum(sizes) != n):
            problem = f"{name} {sizes} are not positive counts adding up to the {n} samples"
    if problem is None and result.reference is not None:
        groups = result.round_sizes or result.process_sizes
        problem = _reference_problem(result.reference, n, groups)
    return problem or _phases_problem(result.phases) or _accounting_problem(result.accounting)


def result_problem(result: BenchResult | TestResult | BuildResult) -> str | None:
    """What makes a result's content impossible (a negative time, counts that disagree), or None.

    Checks only the message itself; `StreamValidator` adds what depends on the stream.
    """
    if isinstance(result, BenchResult):
        return _bench_problem(result)
    if isinstance(result, TestResult):
        return _accounting_problem(result.accounting)
    return _phases_problem(result.phases)
