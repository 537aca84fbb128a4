"""Checkpoints: a run killed at any point after one still validates, as `incomplete`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tile_artifacts import (
    ArtifactWriter,
    CaseRecord,
    Counts,
    Producer,
    Report,
    ReportSummary,
    Status,
    case_metrics,
    new_run_id,
    read_manifest,
    render_summary_markdown,
)
from tile_artifacts.check import check_path

PRODUCER = Producer(tool_name="tile", tool_version="0.1.0")


def _report(writer: ArtifactWriter, cases: list[CaseRecord], status: Status) -> Report:
    return Report(
        producer=PRODUCER,
        run=writer.run_info(status),
        summary=ReportSummary(
            title="tile bench",
            status=status,
            headline=f"{len(cases)} cases so far",
            counts=Counts(cases=len(cases), passed=len(cases)),
        ),
        cases=cases,
    )


def _checkpointed(run: Path, case: Callable[..., CaseRecord]) -> ArtifactWriter:
    writer = ArtifactWriter(run, run_id=new_run_id("bench"), producer=PRODUCER)
    writer.event("run_started", "bench started")
    report = _report(writer, [case("k/a[n=1]", 1e-3)], "incomplete")
    writer.checkpoint(report, summary=render_summary_markdown(report, writer.files()))
    return writer


def test_a_checkpoint_validates_and_says_incomplete(
    tmp_path: Path, case_factory: Callable[..., CaseRecord]
) -> None:
    run = tmp_path / "run"
    _checkpointed(run, case_factory)
    assert check_path(run) == []
    manifest = read_manifest(run / "artifact_manifest.json")
    assert manifest.run.status == "incomplete" and manifest.run.status_reason
    assert {"report.json", "summary.md", "events.jsonl"} <= {a.path for a in manifest.artifacts}


def test_what_a_run_writes_after_its_checkpoint_is_accepted(
    tmp_path: Path, case_factory: Callable[..., CaseRecord]
) -> None:
    """Appends, new files, a rewritten report, a half-written temp file: what a kill leaves."""
    run = tmp_path / "run"
    writer = _checkpointed(run, case_factory)
    writer.event("case_done", "k/b[n=2]")
    writer.write_text("logs/runner-2.stderr.log", "started after the checkpoint\n")
    cases = [case_factory("k/a[n=1]", 1e-3), case_factory("k/b[n=2]", 2e-3)]
    writer.write_json("report.json", _report(writer, cases, "success"))
    (run / ".artifact_manifest.json.x1y2.tmp").write_text('{"cut off')
    assert check_path(run) == []


def test_a_rewritten_append_only_file_is_still_caught(
    tmp_path: Path, case_factory: Callable[..., CaseRecord]
) -> None:
    run = tmp_path / "run"
    _checkpointed(run, case_factory)
    events = run / "events.jsonl"
    events.write_text(events.read_text().replace("bench started", "bench STARTED"))
    problems = [str(p) for p in check_path(run)]
    assert any(p.startswith("events.jsonl: its first bytes differ") for p in problems), problems


def test_the_final_manifest_is_strict_again(
    tmp_path: Path, case_factory: Callable[..., CaseRecord]
) -> None:
    run = tmp_path / "run"
    writer = _checkpointed(run, case_factory)
    report = _report(writer, [case_factory("k/a[n=1]", 1e-3)], "success")
    writer.write_json("report.json", report)
    writer.finalize(status="success")
    assert check_path(run) == []
    writer_path = run / "events.jsonl"
    with writer_path.open("a") as fh:
        fh.write(writer_path.read_text().splitlines()[0] + "\n")
    problems = [str(p) for p in check_path(run)]
    assert any("events.jsonl: size is" in p for p in problems), problems


def test_metrics_may_lag_the_report_of_a_checkpoint_not_a_final_one(
    tmp_path: Path, case_factory: Callable[..., CaseRecord]
) -> None:
    """A case is checkpointed before its metrics are appended: a kill or a full disk may come
    between, and the directory must still validate; a finished run must have them all."""
    run = tmp_path / "run"
    writer = ArtifactWriter(run, run_id=new_run_id("bench"), producer=PRODUCER)
    case = case_factory("k/a[n=1]", 1e-3)
    metrics = case_metrics(case, run_id=writer.run_id, index=0)
    assert metrics
    report = _report(writer, [case], "incomplete").model_copy(update={"metrics": metrics})
    writer.append_jsonl("metrics.jsonl", *metrics[1:])  # the first one never made it
    writer.checkpoint(report, summary=render_summary_markdown(report, writer.files()))
    assert check_path(run) == []
    final = _report(writer, [case], "success").model_copy(update={"metrics": metrics})
    writer.write_json("report.json", final)
    writer.finalize(status="success")
    problems = [str(p) for p in check_path(run)]
    assert any(
        p.startswith("metrics.jsonl:") and "is in report.json but not in this file" in p
        for p in problems
    ), problems
