"""A long report is written in pieces (a list item at a time) with the bytes of one dump."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tile_artifacts import (
    ArtifactWriter,
    CaseRecord,
    Counts,
    Producer,
    Redactor,
    Report,
    ReportSummary,
    case_metrics,
    new_run_id,
    read_report,
)
from tile_artifacts._json_pieces import LONG_LIST, json_pieces

PRODUCER = Producer(tool_name="tile", tool_version="0.1.0")


def _report(writer: ArtifactWriter, cases: list[CaseRecord]) -> Report:
    metrics = [
        m for i, c in enumerate(cases) for m in case_metrics(c, run_id=writer.run_id, index=i)
    ]
    return Report(
        producer=PRODUCER,
        run=writer.run_info("success"),
        summary=ReportSummary(
            title="tile bench",
            status="success",
            headline="many cases",
            counts=Counts(cases=len(cases), passed=len(cases)),
        ),
        cases=cases,
        metrics=metrics,
    )


def test_a_long_report_is_written_in_pieces_with_the_bytes_of_one_dump(
    tmp_path: Path, case_factory: Callable[..., CaseRecord]
) -> None:
    writer = ArtifactWriter(tmp_path / "run", run_id=new_run_id("bench"), producer=PRODUCER)
    cases = [case_factory(f"k/a[n={i}]", 1e-3 * (1 + i % 5)) for i in range(3 * LONG_LIST)]
    report = _report(writer, cases)
    pieces = list(json_pieces(report, lambda text: text))
    assert len(pieces) > len(cases)  # written item by item, not as one text
    path = writer.write_json("report.json", report)
    assert path.read_text() == report.model_dump_json(indent=2) + "\n"
    assert read_report(path).cases == cases


def test_a_secret_in_one_piece_is_redacted_and_the_document_stays_json(
    tmp_path: Path, case_factory: Callable[..., CaseRecord]
) -> None:
    secret = "hunter2-very-secret-value"
    writer = ArtifactWriter(tmp_path / "run", run_id=new_run_id("bench"), producer=PRODUCER,
                            redactor=Redactor([secret]))  # fmt: skip
    cases = [case_factory(f"k/a[n={i}]", 1e-3) for i in range(2 * LONG_LIST)]
    cases[7] = cases[7].model_copy(update={"params": {"n": "7", "token": secret}})
    path = writer.write_json("report.json", _report(writer, cases))
    text = path.read_text()
    assert secret not in text
    assert json.loads(text)["cases"][7]["params"]["token"] == "<redacted>"
    assert len(read_report(path).cases) == len(cases)
