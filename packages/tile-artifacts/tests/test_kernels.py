"""The per-kernel breakdown in a run directory: kept by the writer and schema-check, shown in
summary.md, and named by a comparison when one kernel carries a change."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import msgspec

import tile_stats
from tile_artifacts import CaseRecord, StatsRecord, read_report
from tile_artifacts.check import check_path
from tile_artifacts.compare import compare_runs
from tile_artifacts.kernels import KernelRecord, breakdown_lines, moved_kernel

Cases = Callable[..., CaseRecord]
Samples = Callable[..., list[float]]
CASE = "mylib/norm[shape=4096x4096,dtype=float32]"


def _with_kernels(case: CaseRecord, parts: dict[str, float], sample: Samples) -> CaseRecord:
    """`case` timed as the kernels of `parts` (name -> seconds a call), its samples their sum."""
    per_kernel = {name: sample(seconds, seed=i) for i, (name, seconds) in enumerate(parts.items())}
    calls = [sum(values) for values in zip(*per_kernel.values(), strict=True)]
    stats = StatsRecord.from_summary(tile_stats.summarize(calls), stop_reason="precision")
    kernels = [
        KernelRecord(
            name=name,
            short=name,
            origin=f"{name.replace('_', '.', 1)} (kInput)",
            stats=(s := StatsRecord.from_summary(tile_stats.summarize(values))),
            share=s.median / stats.median,
        )
        for name, values in per_kernel.items()
    ]
    return case.model_copy(update={"samples": calls, "stats": stats, "kernels": kernels})


def test_a_breakdown_is_kept_checked_and_shown_in_summary_md(
    make_run: Callable[..., Path], case_factory: Cases, sample_factory: Samples
) -> None:
    case = _with_kernels(
        case_factory(CASE, 1e-3), {"fusion_1": 3e-4, "fusion_2": 7e-4}, sample_factory
    )
    run = make_run(cases=[case])
    assert [p.message for p in check_path(run)] == []
    back = read_report(run / "report.json").cases[0]
    assert back.kernels == case.kernels
    summary = (run / "summary.md").read_text()
    assert "## Kernels" in summary and f"`{CASE}`:" in summary
    lines = breakdown_lines(back.kernels)
    # Slowest first, each with its share of the case.
    assert "fusion_2" in lines[0] and "70.0%" in lines[0] and "fusion_1" in lines[1]
    assert all(line in summary for line in lines)


def test_a_report_written_before_breakdowns_reads_and_checks(
    make_run: Callable[..., Path], case_factory: Cases
) -> None:
    run = make_run(cases=[case_factory(CASE, 1e-3)])
    raw = msgspec.json.decode((run / "report.json").read_bytes())
    assert raw["cases"][0]["kernels"] is None
    assert "## Kernels" not in (run / "summary.md").read_text()


def test_compare_names_the_kernel_that_carries_a_regression(
    make_run: Callable[..., Path], case_factory: Cases, sample_factory: Samples
) -> None:
    base_case = _with_kernels(
        case_factory(CASE, 1e-3), {"fusion_1": 3e-4, "fusion_2": 7e-4}, sample_factory
    )
    slower = _with_kernels(  # +8% of the case, all of it in fusion_1
        case_factory(CASE, 1e-3), {"fusion_1": 3.8e-4, "fusion_2": 7e-4}, sample_factory
    )
    base = read_report(make_run(cases=[base_case]) / "report.json")
    head = read_report(make_run(cases=[slower]) / "report.json")
    row = compare_runs(base, head).rows[0]
    assert row.judgement == "regression"
    assert row.moved_kernel == "fusion_1 [fusion.1 (kInput)]"
    assert row.moved_share is not None and 0.9 < row.moved_share < 1.1
    assert (
        row.reason is not None and "of the change in `fusion_1 [fusion.1 (kInput)]`" in row.reason
    )


def test_a_change_spread_over_the_kernels_names_none(
    case_factory: Cases, sample_factory: Samples
) -> None:
    base = _with_kernels(case_factory(CASE, 1e-3), {"a": 5e-4, "b": 5e-4}, sample_factory)
    both = _with_kernels(case_factory(CASE, 1e-3), {"a": 5.4e-4, "b": 5.4e-4}, sample_factory)
    one = _with_kernels(case_factory(CASE, 1e-3), {"a": 5e-4, "b": 6e-4}, sample_factory)
    gone = _with_kernels(case_factory(CASE, 1e-3), {"a": 5e-4, "c": 7e-4}, sample_factory)
    assert moved_kernel(base, both) is None
    moved = moved_kernel(base, one)
    assert moved is not None and moved.kernel.name == "b"
    # A kernel that appears (c) moved by its whole median; one that left (b) by minus its own.
    renamed = moved_kernel(base, gone)
    assert renamed is not None and renamed.kernel.name == "c" and renamed.share > 1
    assert moved_kernel(base, case_factory(CASE, 1e-3)) is None  # no breakdown on one side
