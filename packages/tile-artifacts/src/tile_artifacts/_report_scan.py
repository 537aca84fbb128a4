"""report.json's own rules, checked a case and a metric at a time (schema-check).

A 10,000-case report held whole as models took about 250 MB, and the rules that compare its
parts (metrics against the cases, the counts, the timing) held a second copy of its metrics.
`ReportScan` is fed the report's envelope, then each case, then each metric, as decoded; it
checks each one as it comes and keeps only what the rules across the report need: the case
ids and statuses, the accounting, and each metric's value and JSON pointer. Its messages, in
their order, are those the whole report gave.
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import PurePosixPath
from typing import Final, NamedTuple

from tile_artifacts._base import Status
from tile_artifacts._consistency import Add, case_timings, close, duplicates
from tile_artifacts._metrics import case_metric_values
from tile_artifacts._models import Accounting, CaseRecord, OpRecord, Report, RunTiming
from tile_artifacts._ops import op_problems
from tile_artifacts._paths import REPORT_JSON, relative_path_problem
from tile_artifacts._records import MetricRecord

__all__ = ["MetricFacts", "MetricKey", "ReportScan", "metrics_file_problems", "same_metric"]

# A run with any of these among its cases did not do all its required work.
_NEVER_EXIT_0: Final = frozenset({"failed", "timed_out", "invalid"})
"""Case statuses that make a judged run exit non-zero (3, or 1 for a wrong result)."""
_FAILED_STATUSES: Final[frozenset[Status]] = frozenset(
    {"failed", "timed_out", "invalid", "interrupted"}
)
_COUNTS_FAILED: Final = ("failed", "timed_out", "invalid")

MetricKey = tuple[str | None, str]
"""A metric's case id and name: what says which value it is."""


class MetricFacts(NamedTuple):
    """What the checks compare of a metric: its value and where it says the value is."""

    value: float | None
    artifact_path: str | None
    json_pointer: str | None

    @classmethod
    def of(cls, metric: MetricRecord) -> MetricFacts:
        source = metric.source
        return cls(metric.value, source.artifact_path, source.json_pointer)


class _OpCase(NamedTuple):
    """What `op_problems` reads of a case."""

    case_id: str
    kernel: str
    op: OpRecord | None


def same_metric(
    where: str, key: MetricKey, got: MetricFacts, want: MetricFacts, *, whose: str, add: Add
) -> None:
    """`got` repeats `want`: the same value, and a source, when it names one, that points
    where `want`'s does (a pointer elsewhere sends a reader to another value, or to none)."""
    name = f"`{key[1]}` of `{key[0]}`"
    if got.value is None or want.value is None or not close(got.value, want.value):
        add(f"{where}{name} is {got.value!r} but {whose} {want.value!r}")
    if got.json_pointer is not None and got[1:] != want[1:]:
        add(f"{where}{name} points to {got.artifact_path}#{got.json_pointer}, "
            f"not to {want.artifact_path}#{want.json_pointer} where its value is")  # fmt: skip


class ReportScan:
    """A report's rules, fed its envelope (`header`: the report without cases and metrics),
    then `case` for each case in order, then `metric` for each metric in order."""

    def __init__(self, header: Report) -> None:
        self.header = header
        self.case_ids: list[str] = []
        self.metrics: dict[MetricKey, MetricFacts] = {}
        """report.metrics by case id and name (the last of a key repeated)."""
        self._statuses: Counter[Status] = Counter()
        self._accounting = {name: array("d") for name in Accounting.model_fields}
        self._expected: dict[MetricKey, MetricFacts] = {}
        self._ops: list[_OpCase] = []
        self._never_exit_0: tuple[str, str] | None = None  # the first failed case and status
        self._check_failed: list[str] = []
        self._case_problems: list[str] = []
        self._metric_paths: list[str] = []
        self._metric_problems: list[str] = []

    @classmethod
    def of(cls, report: Report) -> ReportScan:
        """A report already held whole, checked by the same rules."""
        scan = cls(report.model_copy(update={"cases": [], "metrics": []}))
        for case in report.cases:
            scan.case(case)
        for metric in report.metrics:
            scan.metric(metric)
        return scan

    def case(self, case: CaseRecord) -> None:
        i = len(self.case_ids)
        self.case_ids.append(case.case_id)
        self._statuses[case.status] += 1
        if case.status == "success" and case.check is not None and not case.check.passed:
            self._check_failed.append(
                f"cases[{i}] `{case.case_id}`: status is `success` but its check failed"
            )
        case_timings(f"cases[{i}] `{case.case_id}`", case, self._case_problems.append)
        if case.accounting is not None:
            for name, values in self._accounting.items():
                values.append(float(getattr(case.accounting, name)))
        pointer = f"/cases/{i}"
        for name, value, suffix in case_metric_values(case):
            self._expected[case.case_id, name] = MetricFacts(value, REPORT_JSON, pointer + suffix)
        if case.op is not None:
            self._ops.append(_OpCase(case.case_id, case.kernel, case.op))
        if self._never_exit_0 is None and case.status in _NEVER_EXIT_0:
            self._never_exit_0 = (case.case_id, case.status)

    def metric(self, metric: MetricRecord) -> None:
        """One of report.metrics, after every case: it must be what its case says (the same
        record `case_metrics` makes), pointing where its case holds the value."""
        i = len(self._metric_paths)
        path = metric.source.artifact_path
        problem = None if path is None else relative_path_problem(path)
        self._metric_paths.append(
            "" if problem is None else f"metrics[{i}].source.artifact_path: {problem}"
        )
        key = (metric.case_id, metric.metric_name)
        add = self._metric_problems.append
        if key in self.metrics:
            add(f"metrics[{i}]: `{metric.metric_name}` of `{metric.case_id}` is listed twice")
        facts = self.metrics[key] = MetricFacts.of(metric)
        if key in self._expected:  # else a metric no case field gives (a command's own)
            same_metric(
                f"metrics[{i}]: ", key, facts, self._expected[key], whose="its case says", add=add
            )

    def problems(self, on_disk: set[str] | None) -> list[str]:
        """Every problem of the report, in the order a whole-report check gives them."""
        problems = self._summary()
        problems += self._check_failed
        problems += self._failures(on_disk)
        problems += [message for message in self._metric_paths if message]
        duplicates("cases: case_id", self.case_ids, problems.append)
        problems += self._case_problems
        if self.header.timing is not None:
            self._timing(self.header.timing, problems.append)
        self._counts(problems.append)
        problems += self._metric_problems
        if self.metrics:  # a report that lists no metrics (they live in metrics.jsonl)
            for case_id, name in sorted(self._expected.keys() - self.metrics.keys(), key=str):
                problems.append(f"metrics: `{name}` of `{case_id}` is missing (its case has "
                                "the value)")  # fmt: skip
        problems += [f"cases: {problem}" for problem in op_problems(self._ops)]
        code = self.header.summary.exit_code
        if code not in (None, 0) and self.header.run.status == "success":
            problems.append(f"summary.exit_code is {code} but run.status is `success`: a run "
                            "that exits non-zero is never a success")  # fmt: skip
        if code == 0 and self._never_exit_0 is not None:
            case_id, status = self._never_exit_0
            problems.append(f"summary.exit_code is 0 but case `{case_id}` is `{status}`: a run "
                            "with a failed case never exits 0")  # fmt: skip
        return problems

    def _summary(self) -> list[str]:
        problems: list[str] = []
        report = self.header
        run_status = report.run.status
        if report.summary.status != run_status:
            problems.append(
                f"summary.status `{report.summary.status}` differs from run.status `{run_status}`"
            )
        if report.summary.counts.cases != len(self.case_ids):
            problems.append(
                f"summary.counts.cases is {report.summary.counts.cases} but the "
                f"report has {len(self.case_ids)} case(s)"
            )
        failed = sum(self._statuses[s] for s in _FAILED_STATUSES)
        if run_status == "success" and (report.failures or failed):
            what = [f"{len(report.failures)} failure(s)"] if report.failures else []
            what += [f"{failed} failed case(s)"] if failed else []
            problems.append(
                f"run status is `success` but the run has {' and '.join(what)}; "
                "it should be `partial` or `failed`"
            )
        return problems

    def _failures(self, on_disk: set[str] | None) -> list[str]:
        problems: list[str] = []
        seen: set[str] = set()
        for i, failure in enumerate(self.header.failures):
            if failure.failure_id in seen:
                problems.append(f"failures[{i}]: failure_id `{failure.failure_id}` is repeated")
            seen.add(failure.failure_id)
            path = failure.stderr_log
            problem = None if path is None else relative_path_problem(path)
            where = f"failures[{i}].stderr_log"
            if problem is not None:
                problems.append(f"{where}: {problem}")
            elif path is not None and on_disk is not None and not _listed(path, on_disk):
                problems.append(f"{where}: `{path}` does not exist in the run directory")
        return problems

    def _timing(self, timing: RunTiming, add: Add) -> None:
        for name, values in self._accounting.items():
            total = sum(values) if values else 0
            recorded = float(getattr(timing.parts, name))
            if not close(recorded, total, 1e-6):
                add(f"timing.parts.{name} is {recorded!r} s but the cases' accounting adds up "
                    f"to {total!r} s")  # fmt: skip
        compiled = timing.parts.compile_s + timing.parts.reference_compile_s
        if timing.compile_s < compiled and not close(timing.compile_s, compiled, 1e-6):
            add(f"timing.compile_s {timing.compile_s!r} is less than the cases' accounted "
                f"compilation {compiled!r} s")  # fmt: skip
        needed = timing.runner_start_s + timing.compile_s + timing.sampled_s
        if timing.overhead_ratio is not None and not (
            needed > 0 and close(timing.overhead_ratio, timing.wall_s / needed, 1e-6)
        ):
            add(f"timing.overhead_ratio {timing.overhead_ratio!r} is not wall_s / "
                "(runner_start_s + compile_s + sampled_s)")  # fmt: skip

    def _counts(self, add: Add) -> None:
        counts = self.header.summary.counts
        passed = self._statuses["success"]
        failed = sum(self._statuses[s] for s in _COUNTS_FAILED)
        if counts.passed != passed:
            add(f"summary.counts.passed is {counts.passed} but {passed} case(s) are `success`")
        if counts.failed != failed:
            add(f"summary.counts.failed is {counts.failed} but {failed} case(s) failed, timed "
                "out or are invalid")  # fmt: skip


def _listed(path: str, on_disk: set[str]) -> bool:
    return PurePosixPath(path).as_posix() in on_disk


def metrics_file_problems(
    known: dict[MetricKey, MetricFacts],
    case_ids: set[str],
    lines: Iterable[tuple[int, MetricKey, MetricFacts]],
    add: Callable[[str, int], None],
    *,
    final: bool = True,
) -> None:
    """metrics.jsonl against report.json's metrics (`known`) and case ids: every line repeats
    a report metric, none is missing.

    Lines of cases that are not in the report (a run stopped before its report) are not
    judged; nor, unless the run is `final` (its manifest is not a checkpoint's), are report
    metrics missing from the file: a case is checkpointed before its metrics are appended,
    and a kill or a full disk may come between. `add` takes the message and the line number
    (0: the file as a whole).
    """
    seen: set[MetricKey] = set()
    for line, key, facts in lines:
        seen.add(key)
        if key not in known:
            if key[0] in case_ids:
                add(f"`{key[1]}` of `{key[0]}` is not in report.json", line)
            continue
        same_metric("", key, facts, known[key], whose="report.json says",
                    add=lambda m, at=line: add(m, at))  # fmt: skip
    if not final:
        return
    for case_id, name in sorted(known.keys() - seen, key=str):
        if case_id is not None:
            add(f"`{name}` of `{case_id}` is in report.json but not in this file", 0)
