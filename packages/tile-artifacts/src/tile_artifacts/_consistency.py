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
from tile_artifacts._metrics import case_metrics
from tile_artifacts._models import Accounting, CaseRecord, Report, RunTiming, StatsRecord
from tile_artifacts._ops import op_problems
from tile_artifacts._records import MetricRecord

__all__ = [
    "baseline_problems",
    "case_problems",
    "first_impossible_sample",
    "metrics_file_problems",
    "report_problems",
]

Add = Callable[[str], None]
"""Records one problem (a message) against the file being checked."""

_REL = 1e-9  # floats that went through JSON come back exact; this only forgives summing order
_COUNTS_FAILED = ("failed", "timed_out", "invalid")


def _close(a: float, b: float, rel: float = _REL) -> bool:
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
            stats.min <= value <= stats.max or _close(value, stats.min) or _close(value, stats.max)
        ):
            add(f"{where}.{name} {value!r} is outside min..max ({stats.min!r}..{stats.max!r})")
    for low, high in (("q1", "q3"), ("p5", "p95"), ("ci_low", "ci_high")):
        lo, hi = getattr(stats, low), getattr(stats, high)
        if lo is not None and hi is not None and lo > hi and not _close(lo, hi):
            add(f"{where}: {low} {lo!r} is above {high} {hi!r}")
    if samples:
        for name, actual in (("min", min(samples)), ("max", max(samples))):
            if not _close(getattr(stats, name), actual):
                add(f"{where}.{name} is {getattr(stats, name)!r} but the samples' {name} is "
                    f"{actual!r}")  # fmt: skip


def _case(where: str, case: CaseRecord, add: Add) -> None:
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


def _duplicates(what: str, ids: Iterable[str], add: Add) -> None:
    for value, count in Counter(ids).items():
        if count > 1:
            add(f"{what} `{value}` appears {count} times")


def _timing(timing: RunTiming, cases: Sequence[CaseRecord], add: Add) -> None:
    accounted = [c.accounting for c in cases if c.accounting is not None]
    for name in Accounting.model_fields:
        total = sum(float(getattr(a, name)) for a in accounted)
        recorded = float(getattr(timing.parts, name))
        if not _close(recorded, total, 1e-6):
            add(f"timing.parts.{name} is {recorded!r} s but the cases' accounting adds up to "
                f"{total!r} s")  # fmt: skip
    compiled = timing.parts.compile_s + timing.parts.reference_compile_s
    if timing.compile_s < compiled and not _close(timing.compile_s, compiled, 1e-6):
        add(f"timing.compile_s {timing.compile_s!r} is less than the cases' accounted "
            f"compilation {compiled!r} s")  # fmt: skip
    needed = timing.runner_start_s + timing.compile_s + timing.sampled_s
    if timing.overhead_ratio is not None and not (
        needed > 0 and _close(timing.overhead_ratio, timing.wall_s / needed, 1e-6)
    ):
        add(f"timing.overhead_ratio {timing.overhead_ratio!r} is not wall_s / (runner_start_s "
            "+ compile_s + sampled_s)")  # fmt: skip


def _counts(report: Report, add: Add) -> None:
    counts = report.summary.counts
    statuses = Counter(c.status for c in report.cases)
    failed = sum(statuses[s] for s in _COUNTS_FAILED)
    if counts.passed != statuses["success"]:
        add(f"summary.counts.passed is {counts.passed} but {statuses['success']} case(s) are "
            "`success`")  # fmt: skip
    if counts.failed != failed:
        add(f"summary.counts.failed is {counts.failed} but {failed} case(s) failed, timed out "
            "or are invalid")  # fmt: skip


def _metrics(report: Report, add: Add) -> None:
    """report.metrics must be what the cases say (the same records `case_metrics` makes),
    each pointing where its case holds the value."""
    expected = {
        (m.case_id, m.metric_name): m
        for i, case in enumerate(report.cases)
        for m in case_metrics(case, run_id=report.run.run_id, index=i)
    }
    seen: set[tuple[str | None, str]] = set()
    for i, metric in enumerate(report.metrics):
        key = (metric.case_id, metric.metric_name)
        if key in seen:
            add(f"metrics[{i}]: `{metric.metric_name}` of `{metric.case_id}` is listed twice")
        seen.add(key)
        if key not in expected:
            continue  # a metric no case field gives (a command's own); nothing to hold it to
        _same_metric(f"metrics[{i}]: ", metric, expected[key], "its case says", add)
    if not report.metrics:
        return  # a report that lists no metrics (they live in metrics.jsonl) leaves none out
    for case_id, name in sorted(expected.keys() - seen, key=str):
        add(f"metrics: `{name}` of `{case_id}` is missing (its case has the value)")


def _same_metric(where: str, got: MetricRecord, want: MetricRecord, whose: str, add: Add) -> None:
    """`got` repeats `want`: the same value, and a source, when it names one, that points
    where `want`'s does (a pointer elsewhere sends a reader to another value, or to none)."""
    name = f"`{got.metric_name}` of `{got.case_id}`"
    if got.value is None or want.value is None or not _close(got.value, want.value):
        add(f"{where}{name} is {got.value!r} but {whose} {want.value!r}")
    if got.source.json_pointer is not None and got.source != want.source:
        add(f"{where}{name} points to {got.source.artifact_path}#{got.source.json_pointer}, "
            f"not to {want.source.artifact_path}#{want.source.json_pointer} where its value is")  # fmt: skip


def case_problems(case: CaseRecord) -> list[str]:
    """The impossible timings of one case record (e.g. a runner's result before it is kept)."""
    problems: list[str] = []
    _case(f"`{case.case_id}`", case, problems.append)
    return problems


def report_problems(report: Report, add: Add) -> None:
    """Every impossible timing and internal contradiction of a report."""
    _duplicates("cases: case_id", (c.case_id for c in report.cases), add)
    for i, case in enumerate(report.cases):
        _case(f"cases[{i}] `{case.case_id}`", case, add)
    if report.timing is not None:
        _timing(report.timing, report.cases, add)
    _counts(report, add)
    _metrics(report, add)
    for problem in op_problems(report.cases):
        add(f"cases: {problem}")
    code = report.summary.exit_code
    if code not in (None, 0) and report.run.status == "success":
        add(f"summary.exit_code is {code} but run.status is `success`: a run that exits "
            "non-zero is never a success")  # fmt: skip


def metrics_file_problems(
    report: Report,
    lines: Sequence[tuple[int, MetricRecord]],
    add: Callable[[str, int], None],
    *,
    final: bool = True,
) -> None:
    """metrics.jsonl against report.json: every line repeats a report metric, none is missing.

    Lines of cases that are not in the report (a run stopped before its report) are not
    judged; nor, unless the run is `final` (its manifest is not a checkpoint's), are report
    metrics missing from the file: a case is checkpointed before its metrics are appended,
    and a kill or a full disk may come between. `add` takes the message and the line number
    (0: the file as a whole).
    """
    known = {(m.case_id, m.metric_name): m for m in report.metrics}
    case_ids = {c.case_id for c in report.cases}
    seen: set[tuple[str | None, str]] = set()
    for line, record in lines:
        key = (record.case_id, record.metric_name)
        seen.add(key)
        if key not in known:
            if record.case_id in case_ids:
                add(f"`{record.metric_name}` of `{record.case_id}` is not in report.json", line)
            continue
        _same_metric("", record, known[key], "report.json says", lambda m, at=line: add(m, at))
    if not final:
        return
    for case_id, name in sorted(known.keys() - seen, key=str):
        if case_id is not None:
            add(f"`{name}` of `{case_id}` is in report.json but not in this file", 0)


def baseline_problems(baseline: Baseline, add: Add) -> None:
    """A baseline's impossible timings, repeated cases and runs pooled more than once."""
    _duplicates("cases: case_id", (c.case_id for c in baseline.cases), add)
    _duplicates(
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
