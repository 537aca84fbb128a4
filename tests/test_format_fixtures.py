"""Run directories written by an earlier tile stay readable (issue 32, format compatibility).

tests/fixtures/formats/ holds real output of `tile bench`, `tile campaign run` and `tile tune`
(how they were made: its README.md). A restructuring that changes how today's code writes
runs leaves these files as they are, so a reader that stops understanding them fails here
instead of on a user's old runs. Every test reads a copy under tmp_path: nothing is ever
written into the repository, and the manifests' sha256 stay those of the committed files.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support import FIXTURES, TileRun

import tile_artifacts as ta
import tile_protocol
import tile_report

FORMATS = FIXTURES / "formats"

BENCH_RUN_ID = "bench-20261204T174359Z-655f3f64"
BENCH_CASES = (
    "std/scale[shape=131072,dtype=float32]",
    "std/scale[shape=131072,dtype=bfloat16]",
)
CAMPAIGN_CASE = "std/copy[shape=131072,dtype=float32]"
CAMPAIGN_UNITS = ("warm@local", "cold@local")
TUNE_RUN_ID = "tune-20261204T174549Z-6207d67a"
TUNE_CASE = "std/rmsnorm[shape=2x65536,dtype=float32]"


def _copy(name: str, tmp_path: Path) -> Path:
    """A copy of fixture `name` (a run or campaign directory) that the test may touch."""
    return shutil.copytree(FORMATS / name, tmp_path / name)


@pytest.mark.parametrize("name", ["bench", "campaign", "tune"])
def test_fixture_passes_schema_check(name: str, tmp_path: Path) -> None:
    # check_path is what `tile schema-check` runs; for the campaign it also checks every
    # unit's attempt as a run directory and its manifest against campaign.json's sha256.
    assert [str(p) for p in ta.check.check_path(_copy(name, tmp_path))] == []


def test_bench_fixture_reads_as_written(tmp_path: Path) -> None:
    run = _copy("bench", tmp_path)
    report = ta.read_report(run / ta.REPORT_JSON)
    assert report.run.run_id == BENCH_RUN_ID
    assert report.run.status == "success"
    assert report.summary.counts.cases == 2 and report.summary.counts.passed == 2
    assert tuple(c.case_id for c in report.cases) == BENCH_CASES
    for case in report.cases:
        assert case.status == "success" and case.kernel == "std/scale"
        assert case.stats is not None and case.stats.n == len(case.samples) >= 10
        assert case.check is not None and case.check.passed
    metrics = [r for r in ta.read_jsonl(run / ta.METRICS_JSONL) if isinstance(r, ta.MetricRecord)]
    assert {(m.case_id, m.metric_name) for m in metrics} >= {(c, "time_s") for c in BENCH_CASES}
    manifest = ta.read_manifest(run / ta.MANIFEST_JSON)
    assert ta.REPORT_JSON in {a.path for a in manifest.artifacts}


def test_bench_fixture_compares_with_itself(tmp_path: Path) -> None:
    report = ta.read_report(_copy("bench", tmp_path) / ta.REPORT_JSON)
    doc = ta.compare.compare_runs(report, report)
    assert {r.case_id for r in doc.rows} == set(BENCH_CASES)
    for row in doc.rows:
        assert row.metric_name == "time_s" and row.ratio == 1.0
        # The same samples on both sides: never a verdict of change, and the two sides are
        # comparable (same device, timer, warm). Today both CIs are wider than the 2% noise
        # band, so `inconclusive`; `neutral` would be as right for a self-comparison.
        assert row.judgement in ("neutral", "inconclusive"), row.reason
    summary = doc.summary
    assert summary.not_comparable_count == summary.regression_count == 0
    assert summary.improvement_count == 0
    assert summary.neutral_count + summary.inconclusive_count == 2


def test_bench_fixture_compares_through_the_cli(tile: TileRun, tmp_path: Path) -> None:
    # The one subprocess of this module: `tile compare` reads runs through tile-cli's own
    # loading code, the part being restructured.
    run = _copy("bench", tmp_path)
    out = tmp_path / "comparison.json"
    proc = tile("compare", str(run), str(run), "--format", "json", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    doc = ta.compare.read_comparison(out)
    assert json.loads(proc.stdout)["summary"]["not_comparable_count"] == 0
    assert doc.baseline.run_id == doc.current.run_id == BENCH_RUN_ID
    assert sorted(r.case_id for r in doc.rows) == sorted(BENCH_CASES)
    assert all(r.judgement != "not_comparable" for r in doc.rows)


def test_bench_fixture_renders_to_html(tmp_path: Path) -> None:
    run = tile_report.load_run(_copy("bench", tmp_path))
    assert run.report.run.run_id == BENCH_RUN_ID
    html = tile_report.render_html(run)
    assert html.startswith("<!doctype html>")
    assert BENCH_RUN_ID in html
    for case_id in BENCH_CASES:
        assert case_id in html


def test_bench_fixture_goes_into_a_fresh_history(tmp_path: Path) -> None:
    run = _copy("bench", tmp_path)
    report = ta.read_report(run / ta.REPORT_JSON)
    with tile_report.History(tmp_path / "history.sqlite") as history:
        added = history.add_run(report, git=tile_report.GitInfo(), run_dir=str(run))
        assert (added.run_id, added.cases, added.already) == (BENCH_RUN_ID, 2, False)
        assert history.add_run(report, git=tile_report.GitInfo()).already
        assert history.run_count() == 1
        series = {s.case_id: s for s in history.series()}
    assert set(series) == set(BENCH_CASES)
    for case in report.cases:
        found = series[case.case_id]
        assert (found.kernel, found.device_kind, found.timer) == ("std/scale", "cpu", case.timer)
        assert case.stats is not None
        assert [(p.run_id, p.median_s, p.n) for p in found.points] == [
            (BENCH_RUN_ID, case.stats.median, case.stats.n)
        ]


def test_campaign_fixture_reads_as_written(tmp_path: Path) -> None:
    root = _copy("campaign", tmp_path)
    campaign = ta.campaign.read_campaign(root / ta.campaign.CAMPAIGN_JSON)
    assert (campaign.campaign, campaign.baseline_variant) == ("tiny", "warm")
    assert campaign.run.status == "success"
    assert (campaign.summary.counts.units, campaign.summary.counts.done) == (2, 2)
    assert tuple(u.unit_id for u in campaign.units) == CAMPAIGN_UNITS
    for unit in campaign.units:
        assert (unit.status, unit.result_attempt, unit.case_count) == ("success", 1, 1)
        (attempt,) = unit.attempts
        assert attempt.done and attempt.complete and attempt.matches_plan
        unit_run = ta.read_report(root / attempt.path / ta.REPORT_JSON)
        assert unit_run.run.run_id == attempt.run_id
        assert [c.case_id for c in unit_run.cases] == [CAMPAIGN_CASE]
        assert unit_run.cases[0].cold is (unit.variant == "cold")
    (row,) = campaign.table
    assert row.case_id == CAMPAIGN_CASE
    assert [c.variant for c in row.cells] == ["warm", "cold"]
    assert row.cells[1].judgement not in (None, "not_comparable")
    (ref,) = campaign.comparisons
    comparison = ta.compare.read_comparison(root / ref.path)
    assert [r.case_id for r in comparison.rows] == [CAMPAIGN_CASE]
    assert comparison.rows[0].judgement == row.cells[1].judgement
    plan = ta.campaign.read_campaign_plan(root / ta.campaign.CAMPAIGN_PLAN_JSON)
    assert [(u.unit_id, u.case_ids) for u in plan.units] == [
        (unit, [CAMPAIGN_CASE]) for unit in CAMPAIGN_UNITS
    ]


def test_tune_fixture_and_its_tuning_file_read_as_written(tmp_path: Path) -> None:
    report = ta.read_report(_copy("tune", tmp_path) / ta.REPORT_JSON)
    assert report.run.run_id == TUNE_RUN_ID
    # Configurations the kernel's constraint rules out are kept as skipped cases, so the run
    # is `partial`: 4 of rmsnorm's 20 fit a row of 65536 elements.
    assert report.run.status == "partial"
    counts = report.summary.counts
    assert (counts.cases, counts.passed, counts.skipped, counts.failed) == (20, 4, 16, 0)
    timed = [c for c in report.cases if c.status == "success"]
    assert all(c.case_id.startswith(TUNE_CASE + "{") for c in report.cases)
    assert all(c.config is not None and c.config.source == "tune" for c in timed)
    tuning = tile_protocol.decode_tuning((FORMATS / "tuning" / "cpu.json").read_bytes())
    assert tuning.device_kind == "cpu"
    (entry,) = tuning.entries
    assert (entry.kernel, entry.case_id, entry.run_id) == ("std/rmsnorm", TUNE_CASE, TUNE_RUN_ID)
    assert entry.decided_by == "tie_simplest"
    chosen = f"{TUNE_CASE}{{{','.join(f'{k}={v}' for k, v in entry.values.items())}}}"
    assert chosen in {c.case_id for c in timed}
