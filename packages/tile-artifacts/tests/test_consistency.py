"""schema-check's second look: documents whose fields are each valid but impossible together."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import tile_artifacts as ta
from tile_artifacts.check import check_path

Edit = Callable[[dict[str, Any]], None]


def _edit(path: Path, edit: Edit) -> None:
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data, indent=2))


def _report_messages(run_dir: Path) -> list[str]:
    # The edited report no longer matches its manifest sha256; that is not what is tested.
    return [
        p.message
        for p in check_path(run_dir / "report.json")
        if p.file.endswith("report.json") and "sha256" not in p.message
    ]


def _first_case(data: dict[str, Any]) -> dict[str, Any]:
    return data["cases"][0]


def _negative_sample(d: dict[str, Any]) -> None:
    _first_case(d)["samples"][3] = -1e-3


def _zero_sample(d: dict[str, Any]) -> None:
    _first_case(d)["reference"]["samples"][0] = 0.0


def _n_mismatch(d: dict[str, Any]) -> None:
    _first_case(d)["stats"]["n"] = 999


def _min_above_max(d: dict[str, Any]) -> None:
    stats = _first_case(d)["stats"]
    stats["min"], stats["max"] = stats["max"] * 2, stats["min"]


def _median_outside(d: dict[str, Any]) -> None:
    _first_case(d)["stats"]["median"] = 1.0


def _duplicate_case(d: dict[str, Any]) -> None:
    d["cases"][1]["case_id"] = d["cases"][0]["case_id"]


def _metric_contradicts(d: dict[str, Any]) -> None:
    d["metrics"][0]["value"] = d["metrics"][0]["value"] * 3


def _passed_count(d: dict[str, Any]) -> None:
    d["summary"]["counts"]["passed"] = 7


CASES: list[tuple[Edit, str]] = [
    (_negative_sample, "1 of 30 sample(s) are zero or negative (first: [3] = -0.001)"),
    (_zero_sample, "reference.samples: 1 of 30 sample(s) are zero or negative"),
    (_n_mismatch, "stats.n is 999 but there are 30 sample(s)"),
    (_min_above_max, "is above max"),
    (_median_outside, "stats.median 1.0 is outside min..max"),
    (_duplicate_case, "cases: case_id `mylib/softmax[shape=4096x4096,dtype=float32]` appears 2"),
    (_metric_contradicts, "but its case says"),
    (_passed_count, "summary.counts.passed is 7 but 2 case(s) are `success`"),
]


@pytest.mark.parametrize(("edit", "expected"), CASES, ids=[e.__name__ for e, _ in CASES])
def test_impossible_or_contradictory_report_is_a_problem(
    run_dir: Path, edit: Edit, expected: str
) -> None:
    assert _report_messages(run_dir) == []
    _edit(run_dir / "report.json", edit)
    messages = _report_messages(run_dir)
    assert any(expected in m for m in messages), messages


def test_metrics_lines_must_repeat_the_report(run_dir: Path) -> None:
    path = run_dir / "metrics.jsonl"
    lines = path.read_text().splitlines()
    first = json.loads(lines[0])
    first["value"] = first["value"] + 1.0
    lines[0] = json.dumps(first)
    del lines[1]
    path.write_text("\n".join(lines) + "\n")
    problems = [p for p in check_path(run_dir) if p.file == "metrics.jsonl"]
    assert any(p.line == 1 and "but report.json says" in p.message for p in problems), problems
    assert any(p.line is None and "not in this file" in p.message for p in problems), problems


def _timing_report(case_factory: Callable[..., ta.CaseRecord], *, off: float) -> ta.Report:
    parts = ta.Accounting(compile_s=0.5, sample_s=1.0, other_s=0.25, total_s=1.75)
    cases = [
        case_factory("k/a[n=1]", 1e-3).model_copy(update={"accounting": parts}),
        case_factory("k/b[n=1]", 2e-3, seed=1).model_copy(update={"accounting": parts}),
    ]
    summed = ta.Accounting(compile_s=1.0, sample_s=2.0 + off, other_s=0.5, total_s=3.5 + off)
    return ta.Report(
        producer=ta.Producer(tool_name="tile", tool_version="0"),
        run=ta.RunInfo(
            run_id=ta.new_run_id("bench"),
            created_at=ta.utc_now(),
            status="success",
            output_directory="/x",
        ),
        summary=ta.ReportSummary(
            title="t", status="success", headline="h", counts=ta.Counts(cases=2, passed=2)
        ),
        cases=cases,
        metrics=[m for i, c in enumerate(cases) for m in ta.case_metrics(c, run_id="r", index=i)],
        timing=ta.RunTiming(
            wall_s=10.0,
            runner_start_s=1.0,
            compile_s=1.0,
            sampled_s=2.0,
            overhead_ratio=2.5,
            parts=summed,
        ),
    )


def test_timing_must_add_up_the_cases_accounting(
    tmp_path: Path, case_factory: Callable[..., ta.CaseRecord]
) -> None:
    good = tmp_path / "good" / "report.json"
    good.parent.mkdir()
    good.write_text(_timing_report(case_factory, off=0.0).model_dump_json())
    assert [p.message for p in check_path(good)] == []
    bad = tmp_path / "bad" / "report.json"
    bad.parent.mkdir()
    bad.write_text(_timing_report(case_factory, off=5.0).model_dump_json())
    messages = [p.message for p in check_path(bad)]
    assert any("timing.parts.sample_s is 7.0 s but the cases' accounting adds up to 2.0" in m
               for m in messages), messages  # fmt: skip


def test_baseline_pooling_one_run_twice_and_negative_samples(
    make_run: Callable[..., Path], tmp_path: Path
) -> None:
    report = ta.read_report(make_run() / "report.json")
    with pytest.raises(ta.ArtifactError, match="more than once") as info:
        ta.compare.baseline_from_reports([report, report])
    assert info.value.hint and "different runs" in info.value.hint
    baseline = ta.compare.baseline_from_report(report)
    data = json.loads(baseline.model_dump_json())
    data["run_ids"] = [report.run.run_id, report.run.run_id]
    data["cases"][0]["samples"][0] = -5.0
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps(data))
    messages = [p.message for p in check_path(path)]
    assert any("appears 2 times; pooling a run twice" in m for m in messages), messages
    assert any("zero or negative" in m for m in messages), messages


def test_compare_refuses_impossible_samples(make_run: Callable[..., Path]) -> None:
    base = ta.read_report(make_run() / "report.json")
    current = ta.read_report(make_run() / "report.json")
    data = json.loads(base.model_dump_json())
    for case in data["cases"]:
        case["samples"] = [-abs(s) for s in case["samples"]]
    forged = ta.Report.model_validate(data)
    doc = ta.compare.compare_runs(forged, current)
    assert {row.judgement for row in doc.rows} == {"not_comparable"}
    assert all("zero or negative" in (row.reason or "") for row in doc.rows)


@pytest.mark.parametrize("opener", ["[", '{"a":'])
def test_deeply_nested_document_is_a_problem_not_a_recursion_error(
    tmp_path: Path, opener: str
) -> None:
    closer = "]" if opener == "[" else "}"
    path = tmp_path / "report.json"
    path.write_text(opener * 200_000 + "1" + closer * 200_000)
    (problem,) = check_path(path)
    assert "nested deeper than 64 levels" in problem.message
    with pytest.raises(ta.ArtifactError, match="nested deeper"):
        ta.read_report(path)
