"""schema-check of a long run holds a report a case and a metric at a time (issue 39: a
10,000-case run took it to 750 MB, the report held whole as models and its JSON Lines as
records). Real run directories; what is measured is memory traced while checking, as a
multiple of the files' size, not a time. The piecewise path must find what the whole
document finds: the same problems, in the same order."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import tile_artifacts as ta
from tile_artifacts._check_facts import scan_report
from tile_artifacts._read import decode_document
from tile_artifacts._report_scan import ReportScan
from tile_artifacts.check import check_path

MakeRun = Callable[..., Path]
MakeCase = Callable[..., ta.CaseRecord]
CASES = 1500


def _peak(work: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        work()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_long_run_is_checked_in_a_fraction_of_its_report(
    make_run: MakeRun, case_factory: MakeCase
) -> None:
    cases = [case_factory(f"lib/k[n={i}]", 1e-3, seed=i) for i in range(CASES)]
    run = make_run(cases=cases)
    size = sum((run / name).stat().st_size for name in ("report.json", ta.METRICS_JSONL))
    problems: list[ta.check.Problem] = []
    peak = _peak(lambda: problems.extend(check_path(run)))
    assert problems == []
    # Held whole, the report's text, its objects and its models came to 6.4 times the files
    # (134 MB here); a case and a metric at a time, 1.6 times (the report's bytes, and what
    # the checks across files keep of each metric).
    assert peak < 2 * size, (peak, size)


def _contradicting(run: Path) -> bytes:
    """report.json with contradictions the models pass: a repeated case, a wrong count, a
    metric whose value and pointer are not its case's, an impossible sample."""
    report = json.loads((run / "report.json").read_text())
    report["cases"].append(report["cases"][0])
    report["cases"][1]["samples"][3] = -1.0
    report["summary"]["counts"]["passed"] = 7
    report["metrics"][0]["value"] = 42.0
    report["metrics"][1]["source"]["json_pointer"] = "/cases/9/stats/median"
    report["metrics"].append(report["metrics"][2])
    return json.dumps(report, indent=1).encode()


def test_the_piecewise_check_finds_what_the_whole_report_shows(make_run: MakeRun) -> None:
    data = _contradicting(make_run())
    scan = scan_report(data)
    assert scan is not None  # valid models: checked piece by piece
    whole = decode_document(data.decode(), expected="tile.report", mode="check")
    assert isinstance(whole, ta.Report)
    expected = ReportScan.of(whole).problems(None)
    assert scan.problems(None) == expected
    assert any("`lib" in p or "`mylib" in p for p in expected if "appears 2 times" in p)
    assert any("is 42.0 but its case says" in p for p in expected)
    assert any("points to report.json#/cases/9/stats/median" in p for p in expected)
    assert any("listed twice" in p for p in expected)
    assert any("summary.counts.passed is 7" in p for p in expected)


def test_a_key_written_twice_inside_a_case_is_still_named(make_run: MakeRun) -> None:
    run = make_run()
    text = (run / "report.json").read_text()
    (run / "report.json").write_text(text.replace('"cold"', '"cold": false, "cold"', 1))
    messages = [str(p) for p in check_path(run)]
    assert "report.json: key `cold` is written twice in one object" in messages, messages


def test_a_report_whose_cases_are_written_twice_is_refused(make_run: MakeRun) -> None:
    """The piecewise path finds each array once; a second `cases` key is the whole-document
    path's to name."""
    run = make_run()
    report = json.loads((run / "report.json").read_text())
    text = json.dumps(report)
    cases = json.dumps(report["cases"])
    twice = text.replace('"metrics":', f'"cases": {cases}, "metrics":', 1)
    (run / "report.json").write_text(twice)
    messages = [str(p) for p in check_path(run)]
    assert "report.json: key `cases` is written twice in one object" in messages, messages
