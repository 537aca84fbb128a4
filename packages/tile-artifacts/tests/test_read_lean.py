"""`read_report(..., metrics=False)`: the same report less its metrics, and the same errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tile_artifacts import ArtifactReadError, Report, load_document, read_report

FORMATS = Path(__file__).parents[3] / "tests" / "fixtures" / "formats"
REPORTS = sorted(FORMATS.rglob("report.json"))


@pytest.mark.parametrize("path", REPORTS, ids=[str(p.relative_to(FORMATS)) for p in REPORTS])
def test_a_report_without_metrics_equals_the_full_one_less_them(path: Path) -> None:
    full = read_report(path)
    lean = read_report(path, metrics=False)
    assert full.metrics and lean.metrics == []
    assert lean.model_copy(update={"metrics": full.metrics}) == full
    document = load_document(path, metrics=False)
    assert isinstance(document, Report) and document == lean


def test_the_lean_reader_takes_the_run_directory_case_log(run_dir: Path) -> None:
    full = read_report(run_dir / "report.json")
    lean = read_report(run_dir / "report.json", metrics=False)
    assert lean.cases == full.cases and lean.summary == full.summary and lean.metrics == []


def test_an_invalid_report_read_without_metrics_names_file_and_field(run_dir: Path) -> None:
    path = run_dir / "report.json"
    data = json.loads(path.read_text())
    data["cases"][1]["status"] = "ok"
    path.write_text(json.dumps(data))
    for read in (read_report, load_document):
        with pytest.raises(ArtifactReadError) as info:
            read(path, metrics=False)
        assert str(path) in str(info.value) and "cases[1].status" in str(info.value)


def test_nan_is_refused_without_metrics_too(run_dir: Path) -> None:
    path = run_dir / "report.json"
    path.write_text(path.read_text().replace('"seed": 0', '"seed": NaN'))
    with pytest.raises(ArtifactReadError, match="NaN"):
        read_report(path, metrics=False)
