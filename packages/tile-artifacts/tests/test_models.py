"""Models: every key serialized, UTC `Z` timestamps, closed sets, strict and tolerant decoding."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from pydantic import ValidationError

import tile_stats
from tile_artifacts import (
    STATUSES,
    CaseRecord,
    Envelope,
    EventRecord,
    Manifest,
    MetricRecord,
    Report,
    RunInfo,
    StatsRecord,
    failure_id,
    load_document,
    read_jsonl,
    read_manifest,
    read_report,
)
from tile_artifacts._read import DecodeIssue, decode_document
from tile_artifacts.compare import Baseline, ComparisonDoc, baseline_from_report, read_baseline

RUN = {
    "run_id": "bench-20250131T120000Z-0123abcd",
    "created_at": "2025-01-31T12:00:00Z",
    "status": "success",
    "status_reason": None,
    "output_directory": "/tmp/x",
}


def test_statuses_are_those_of_the_spec() -> None:
    # The nine of the spec, and `incomplete`: a checkpoint of a run that was still writing.
    assert set(STATUSES) == {
        "success", "partial", "failed", "skipped", "unsupported", "dry_run", "interrupted",
        "timed_out", "invalid", "incomplete",
    }  # fmt: skip


def test_every_field_is_written_with_null_for_unknown() -> None:
    case = CaseRecord(case_id="k[x=1]", kernel="k", status="skipped")
    data = json.loads(case.model_dump_json())
    assert set(data) == set(CaseRecord.model_fields)
    assert data["stats"] is None and data["reference"] is None and data["timer"] is None
    assert data["phases"] == {
        "trace_s": None, "lower_s": None, "compile_s": None, "cache_hit": None,
        "compile_count": None, "cache_hit_count": None, "cache_miss_count": None,
    }  # fmt: skip
    assert data["roofline"]["bound"] == "unknown"


def test_timestamps_are_utc_with_z() -> None:
    run = RunInfo.model_validate({**RUN, "created_at": datetime(2025, 1, 31, 12, tzinfo=UTC)})
    assert json.loads(run.model_dump_json())["created_at"] == "2025-01-31T12:00:00Z"
    with pytest.raises(ValidationError, match="timezone"):
        RunInfo.model_validate({**RUN, "created_at": datetime(2025, 1, 31, 12)})
    with pytest.raises(ValidationError, match="UTC"):
        RunInfo.model_validate(
            {**RUN, "created_at": datetime(2025, 1, 31, 12, tzinfo=timezone(timedelta(hours=2)))}
        )
    with pytest.raises(ValidationError, match="ending in `Z`"):
        RunInfo.model_validate_json(json.dumps({**RUN, "created_at": "2025-01-31T12:00:00+00:00"}))


def test_closed_sets_and_strict_types_are_enforced() -> None:
    with pytest.raises(ValidationError, match="status"):
        RunInfo.model_validate({**RUN, "status": "ok"})
    with pytest.raises(ValidationError, match="run_id"):
        RunInfo.model_validate({**RUN, "run_id": "my run"})
    with pytest.raises(ValidationError, match="unit"):
        MetricRecord(
            run_id="r",
            metric_name="time_s",
            value=1.0,
            unit="seconds",  # pyright: ignore[reportArgumentType]  (the wrong unit is the point)
            aggregation="median",
        )
    with pytest.raises(ValidationError, match="Input should be a valid integer"):
        StatsRecord.model_validate_json('{"n": "3", "min": 1, "max": 1, "mean": 1, "median": 1}')


def test_failure_ids() -> None:
    assert [failure_id(i) for i in (1, 12, 1000)] == ["F001", "F012", "F1000"]


def test_stats_from_tile_stats_summary() -> None:
    xs = [1.0, 1.1, 0.9, 1.05, 0.95, 5.0]
    record = StatsRecord.from_summary(tile_stats.summarize(xs), stop_reason="max_runs")
    assert record.n == 6 and record.median == pytest.approx(1.025)
    assert record.outliers_severe == 1 and record.stop_reason == "max_runs"
    assert record.ci_low is not None and record.ci_low <= record.median <= (record.ci_high or 0)


def test_check_mode_requires_every_key_and_read_mode_tolerates(run_dir: Path) -> None:
    data = json.loads((run_dir / "report.json").read_text())
    del data["cases"][0]["phases"]["cache_hit"]
    data["cases"][0]["added_in_a_later_v1"] = {"x": 1}
    text = json.dumps(data)
    with pytest.raises(DecodeIssue) as info:
        decode_document(text, mode="check")
    assert any(
        "cases[0].phases: Value error, missing key(s) cache_hit" in m for m in info.value.messages
    )
    report = decode_document(text, mode="read")
    assert isinstance(report, Report)
    assert report.cases[0].phases.cache_hit is None


def test_every_document_of_a_run_reads_back(run_dir: Path) -> None:
    report = read_report(run_dir / "report.json")
    manifest = read_manifest(run_dir / "artifact_manifest.json")
    assert isinstance(load_document(run_dir / "report.json"), Report)
    assert isinstance(load_document(run_dir / "artifact_manifest.json"), Manifest)
    assert report.run.run_id == manifest.run.run_id
    assert report.cases[0].samples == read_report(run_dir / "report.json").cases[0].samples
    assert len(report.cases) == 2 and report.device.peaks.source == "builtin"
    events = read_jsonl(run_dir / "events.jsonl")
    assert [e.event for e in events if isinstance(e, EventRecord)] == [
        "run_started",
        "run_finished",
    ]
    metrics = read_jsonl(run_dir / "metrics.jsonl")
    assert metrics == report.metrics
    # A document written and read back is equal to the original object.
    again = Report.model_validate_json(report.model_dump_json())
    assert again == report


def test_baseline_round_trip(run_dir: Path, tmp_path: Path) -> None:
    report = read_report(run_dir / "report.json")
    baseline = baseline_from_report(report, label="main")
    path = tmp_path / "baseline.json"
    path.write_text(baseline.model_dump_json(indent=2))
    back = read_baseline(path)
    assert back == baseline and isinstance(load_document(path), Baseline)
    assert back.cases[0].samples == report.cases[0].samples
    reference = report.cases[0].reference
    assert reference is not None
    assert back.cases[0].reference_samples == reference.samples
    assert back.device.device_kind == "NVIDIA H200" and back.label == "main"
    assert not isinstance(load_document(path), ComparisonDoc)


def test_envelope_peeks_at_any_document(run_dir: Path) -> None:
    for name in ("report.json", "artifact_manifest.json"):
        envelope = Envelope.model_validate_json((run_dir / name).read_text())
        assert envelope.schema_version == 1 and envelope.run.status == "success"
        assert envelope.schema_name == json.loads((run_dir / name).read_text())["schema_name"]
