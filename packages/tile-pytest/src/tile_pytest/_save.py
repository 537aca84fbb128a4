"""`--tile-save DIR`: the session written as an ordinary tile run directory, by tile's writer."""

from __future__ import annotations

from pathlib import Path

import tile_artifacts as ta
from tile_pytest._errors import TilePytestError
from tile_pytest._record import SessionRecord
from tile_pytest._verdicts import Judge

__all__ = ["save_run"]


def save_run(record: SessionRecord, directory: Path, judge: Judge | None) -> ta.Report:
    """Write report, summary, metrics, events (and comparisons.json), then the manifest.

    The files and their order are those of `tile bench -o DIR`, through the same
    `ArtifactWriter`: JSON written atomically, the manifest last.
    """
    problem: TilePytestError | None = None
    try:
        writer = ta.ArtifactWriter(
            directory,
            run_id=record.run_id,
            producer=record.producer(),
            created_at=record.created_at,
        )
        report = record.report(directory)
        writer.event(
            "run_started", "pytest session", phase="run", fields={"argv": " ".join(record.argv)}
        )
        for case in report.cases:
            writer.event(
                "case_finished", case.status, phase="case", fields={"case_id": case.case_id}
            )
        writer.append_jsonl(ta.METRICS_JSONL, *report.metrics)
        writer.write_json(ta.REPORT_JSON, report)
        writer.write_summary(report)
        if judge is not None and report.cases:
            # A baseline that cannot be used is reported after the directory is complete.
            try:
                writer.write_json(ta.COMPARISONS_JSON, judge.compare(report))
            except TilePytestError as exc:
                problem = exc
        writer.event("run_finished", f"status {report.run.status}", phase="run")
        writer.finalize(
            status=report.run.status,
            status_reason=report.run.status_reason,
            context=report.context,
        )
    except ta.ArtifactError as exc:
        raise TilePytestError(f"--tile-save: {exc.message}", hint=exc.hint) from None
    if problem is not None:
        raise problem
    return report
