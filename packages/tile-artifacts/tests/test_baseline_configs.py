"""A baseline pooled from runs that ran different tunable values (issue 34): only the runs of
the last run's configuration are pooled, the others are kept as `other_configs`, and every
comparison row against it says what was left out."""

from __future__ import annotations

from collections.abc import Callable

from tile_artifacts import (
    CaseRecord,
    ConfigRecord,
    DeviceRecord,
    Producer,
    Report,
    ReportSummary,
    RunInfo,
    utc_now,
)
from tile_artifacts.compare import Baseline, baseline_from_reports, compare_runs
from tile_artifacts.compare import render_comparison_markdown as markdown

Samples = Callable[..., list[float]]


def _run(n: int, block: str | None, samples: list[float]) -> Report:
    config = None if block is None else ConfigRecord(values={"block": block}, source="tuned")
    return Report(
        producer=Producer(tool_name="tile", tool_version="0.1.0"),
        run=RunInfo(
            run_id=f"bench-2025013{n}T120000Z-0123abcd",
            created_at=utc_now(),
            status="success",
            output_directory="/tmp",
        ),
        device=DeviceRecord(device_kind="cpu"),
        summary=ReportSummary(title="t", status="success", headline="h"),
        cases=[
            CaseRecord(
                case_id="k[a=1]",
                kernel="k",
                status="success",
                timer="wall",
                samples=samples,
                config=config,
            )
        ],
    )


def test_runs_of_another_configuration_are_left_out_of_the_pool_and_the_row_says_so(
    sample_factory: Samples,
) -> None:
    runs = [
        _run(1, "2", sample_factory(2e-3, n=20, seed=1)),
        _run(2, "4", sample_factory(1e-3, n=20, seed=2)),
        _run(3, "4", sample_factory(1e-3, n=20, seed=3)),
    ]
    baseline = baseline_from_reports(runs)
    [case] = baseline.cases
    assert case.run_sizes == [20, 20]  # the two runs of block=4, not the slow block=2 one
    assert case.config is not None and case.config.values == {"block": "4"}
    assert case.other_configs == [{"block": "2"}]
    assert max(case.samples) < 1.5e-3
    # It survives the file, and a comparison against it names what was left out.
    baseline = Baseline.model_validate_json(baseline.model_dump_json())
    doc = compare_runs(baseline, _run(4, "4", sample_factory(1e-3, n=20, seed=4)))
    [row] = doc.rows
    assert row.baseline_other_configs == [{"block": "2"}]
    note = "baseline pooled only block=4: 1 run of block=2 left out"
    assert row.config_note() == note
    assert note in markdown(doc)


def test_runs_of_one_configuration_pool_as_before(sample_factory: Samples) -> None:
    runs = [_run(i, "4", sample_factory(1e-3, n=10, seed=i)) for i in (1, 2)]
    # A run made before tile recorded configurations cannot be told apart: pooled too.
    runs.append(_run(3, None, sample_factory(1e-3, n=10, seed=3)))
    [case] = baseline_from_reports(runs[::-1]).cases
    assert case.run_sizes == [10, 10, 10] and case.other_configs is None
    [row] = compare_runs(baseline_from_reports(runs), runs[0]).rows
    assert row.baseline_other_configs is None and row.config_note() is None
