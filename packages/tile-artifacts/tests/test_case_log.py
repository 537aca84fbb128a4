"""The case log (`cases.jsonl`): read over an `incomplete` report, checked line by line."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tile_artifacts import (
    CASES_JSONL,
    ArtifactReadError,
    ArtifactWriter,
    CaseLogRecord,
    CaseRecord,
    Diagnostic,
    FailureRecord,
    Producer,
    Report,
    ReportSummary,
    Status,
    case_metrics,
    count_cases,
    failure_id,
    load_document,
    new_run_id,
    read_report,
    render_summary_markdown,
)
from tile_artifacts.check import check_path

PRODUCER = Producer(tool_name="tile", tool_version="0.1.0")
Make = Callable[..., CaseRecord]


def _pending(case_id: str) -> CaseRecord:
    return CaseRecord(case_id=case_id, kernel="k/a", status="incomplete")


def _report(writer: ArtifactWriter, cases: list[CaseRecord], status: Status) -> Report:
    metrics = [m for i, c in enumerate(cases) for m in case_metrics(c, run_id=writer.run_id,
                                                                    index=i)]  # fmt: skip
    return Report(
        producer=PRODUCER,
        run=writer.run_info(status),
        summary=ReportSummary(title="t", status=status, headline="h", counts=count_cases(cases)),
        cases=cases,
        metrics=metrics,
    )


def _run(tmp_path: Path, make: Make) -> tuple[ArtifactWriter, list[CaseRecord]]:
    """A run of 4 cases checkpointed after its first; the other 3 finish after it."""
    writer = ArtifactWriter(tmp_path / "run", run_id=new_run_id("bench"), producer=PRODUCER)
    done = [make(f"k/a[n={i}]", 1e-3 * (i + 1), seed=i) for i in range(4)]
    report = _report(writer, [done[0], *map(_pending, ["k/a[n=1]", "k/a[n=2]", "k/a[n=3]"])],
                     "incomplete")  # fmt: skip
    writer.append_jsonl(CASES_JSONL, CaseLogRecord(run_id=writer.run_id, case=done[0]))
    writer.checkpoint(report, summary=render_summary_markdown(report, writer.files()))
    return writer, done


def _failure(number: int, case_id: str) -> FailureRecord:
    return FailureRecord(failure_id=failure_id(number), case_id=case_id, phase="run",
                         status="failed", message=f"failure {number}")  # fmt: skip


def test_an_incomplete_report_reads_with_the_cases_logged_after_it(
    tmp_path: Path, case_factory: Make
) -> None:
    writer, done = _run(tmp_path, case_factory)
    failed = case_factory("k/a[n=2]", 3e-3, status="failed", seed=2)
    lines = [
        CaseLogRecord(run_id=writer.run_id, case=done[1]),
        CaseLogRecord(
            run_id=writer.run_id,
            case=failed,
            failures=[_failure(1, failed.case_id)],
            diagnostics=[Diagnostic(level="warning", message="w")],
        ),
        # A line of another run (a copied directory) is not this run's.
        CaseLogRecord(run_id=new_run_id("bench"), case=done[3]),
    ]
    for line in lines[:2]:  # each case's metric after its line, as the recorder writes them
        writer.metric("time_s", line.case.stats.median if line.case.stats else None,
                      case_id=line.case.case_id)  # fmt: skip
    writer.append_jsonl(CASES_JSONL, *lines)
    raw = Report.model_validate_json((writer.run_dir / "report.json").read_text())
    report = read_report(writer.run_dir / "report.json")
    assert [c.status for c in raw.cases] == ["success", "incomplete", "incomplete", "incomplete"]
    assert [c.status for c in report.cases] == ["success", "success", "failed", "incomplete"]
    assert report.cases[1] == done[1] and report.failures == [_failure(1, failed.case_id)]
    assert [d.message for d in report.diagnostics] == ["w"]
    assert (report.summary.counts.passed, report.summary.counts.failed) == (2, 1)
    assert {m.case_id for m in report.metrics} == {c.case_id for c in done[:3]}
    assert load_document(writer.run_dir / "report.json") == report
    problems = [str(p) for p in check_path(writer.run_dir)]
    # The line of another run is named (and not read: k/a[n=3] stays incomplete).
    assert problems == [f"cases.jsonl:4: run_id `{lines[2].run_id}` differs from the run's "
                        f"`{writer.run_id}`"]  # fmt: skip


def test_the_last_line_of_a_case_wins_and_run_lists_are_not_repeated(
    tmp_path: Path, case_factory: Make
) -> None:
    writer, _ = _run(tmp_path, case_factory)
    first = case_factory("k/a[n=1]", 2e-3, seed=1)
    again = case_factory("k/a[n=1]", 2.5e-3, seed=11)
    writer.append_jsonl(
        CASES_JSONL,
        CaseLogRecord(run_id=writer.run_id, case=first, failures=[_failure(1, "x")]),
        # The next line's list starts where the first one's ended: nothing is added twice.
        CaseLogRecord(
            run_id=writer.run_id, case=again, failures=[_failure(2, "y")], failures_from=1
        ),
    )
    report = read_report(writer.run_dir / "report.json")
    assert report.cases[1] == again
    assert [f.failure_id for f in report.failures] == ["F001", "F002"]


def test_a_finished_report_is_read_as_written_and_must_hold_each_logged_case(
    tmp_path: Path, case_factory: Make
) -> None:
    writer, done = _run(tmp_path, case_factory)
    writer.append_jsonl(CASES_JSONL, *(CaseLogRecord(run_id=writer.run_id, case=c)
                                       for c in done[1:]))  # fmt: skip
    final = _report(writer, done[:3], "success")  # k/a[n=3] logged, but not in the report
    writer.write_json("report.json", final)
    writer.write_summary(final)
    writer.finalize(status="success")
    assert read_report(writer.run_dir / "report.json") == final
    problems = [str(p) for p in check_path(writer.run_dir) if p.file == CASES_JSONL]
    assert problems == ["cases.jsonl:4: case `k/a[n=3]` is not in report.json"]


def test_a_torn_last_line_after_a_kill_is_skipped(tmp_path: Path, case_factory: Make) -> None:
    writer, done = _run(tmp_path, case_factory)
    whole = CaseLogRecord(run_id=writer.run_id, case=done[1]).model_dump_json()
    torn = CaseLogRecord(run_id=writer.run_id, case=done[2]).model_dump_json()[:200]
    with (writer.run_dir / CASES_JSONL).open("a") as log:
        log.write(whole + "\n" + torn)
    assert check_path(writer.run_dir) == []  # what a kill leaves
    report = read_report(writer.run_dir / "report.json")
    assert [c.status for c in report.cases] == ["success", "success", "incomplete", "incomplete"]


def test_a_line_that_is_not_a_case_is_named(tmp_path: Path, case_factory: Make) -> None:
    writer, _ = _run(tmp_path, case_factory)
    with (writer.run_dir / CASES_JSONL).open("a") as log:
        log.write('{"schema_name": "tile.case", "schema_version": 1, "run_id": "x"}\n')
    problems = [str(p) for p in check_path(writer.run_dir)]
    assert problems and all(p.startswith("cases.jsonl:2: ") for p in problems), problems
    assert any("case" in p and "missing" in p for p in problems), problems
    with pytest.raises(ArtifactReadError, match=r"cases\.jsonl:2"):
        read_report(writer.run_dir / "report.json")
