"""A killed run read whole: its last report-in-progress with the case log laid over it.

report.json of a run still writing (`incomplete`) holds every case as it was at the last
compaction; `cases.jsonl` holds each case that finished since. Readers (`read_report`,
`load_document`, and so compare, report and history) and `tile schema-check` see the two
together: the report with each logged case in its place, its counts and metrics made from
the merged cases, the failures, diagnostics and findings the lines carry appended. A
finished report is whole already and is read as written.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, TypeVar

from tile_artifacts._case_log import CaseLogRecord
from tile_artifacts._metrics import case_metrics
from tile_artifacts._models import CaseRecord, Counts, Report

__all__ = ["count_cases", "merge_case_log"]

_FAILED: Final = frozenset({"failed", "timed_out", "invalid"})
_SKIPPED: Final = frozenset({"skipped", "interrupted", "unsupported"})
_T = TypeVar("_T")


def count_cases(cases: Iterable[CaseRecord]) -> Counts:
    """How many cases passed, failed (or timed out, or were invalid) and were skipped."""
    statuses = [c.status for c in cases]
    return Counts(
        cases=len(statuses),
        passed=sum(s == "success" for s in statuses),
        failed=sum(s in _FAILED for s in statuses),
        skipped=sum(s in _SKIPPED for s in statuses),
    )


def _extend(held: list[_T], items: list[_T], start: int) -> None:
    """Append the items (the first at position `start` of the run's list) not held yet."""
    for offset, item in enumerate(items):
        if start + offset >= len(held):
            held.append(item)


def merge_case_log(report: Report, lines: Iterable[CaseLogRecord]) -> Report:
    """`report` with the case log's lines of its run laid over it, if it is `incomplete`.

    Each line's case replaces the report's record of that case id (or is added after the
    plan's), the last line of a case winning. The merged report has no `timing`: the run's
    totals are known only at a compaction, and the cases finished since would not add up
    to them.
    """
    run_id = report.run.run_id
    lines = [line for line in lines if line.run_id == run_id]
    if report.run.status != "incomplete" or not lines:
        return report
    cases = list(report.cases)
    position = {case.case_id: i for i, case in enumerate(cases)}
    failures, diagnostics = list(report.failures), list(report.diagnostics)
    findings = list(report.findings)
    replaced: set[str] = set()
    for line in lines:
        case_id = line.case.case_id
        index = position.setdefault(case_id, len(cases))
        if index == len(cases):
            cases.append(line.case)
        else:
            cases[index] = line.case
        replaced.add(case_id)
        _extend(failures, line.failures, line.failures_from)
        _extend(diagnostics, line.diagnostics, line.diagnostics_from)
        _extend(findings, line.findings, line.findings_from)
    metrics = [m for m in report.metrics if m.case_id not in replaced]
    for index in sorted(position[case_id] for case_id in replaced):
        metrics += case_metrics(cases[index], run_id=run_id, index=index)
    summary = report.summary.model_copy(update={"counts": count_cases(cases)})
    return report.model_copy(
        update={
            "cases": cases,
            "metrics": metrics,
            "failures": failures,
            "diagnostics": diagnostics,
            "findings": findings,
            "summary": summary,
            "timing": None,
        }
    )
