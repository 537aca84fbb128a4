"""summary.md: status, device, headline table, failures and the artifact map."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tile_artifacts import (
    CaseRecord,
    CheckRecord,
    Finding,
    Producer,
    Report,
    ReportSummary,
    RunInfo,
    read_manifest,
    read_report,
    render_summary_markdown,
)
from tile_artifacts.compare import compare_runs


def test_summary_of_a_run(make_run: Callable[..., Path]) -> None:
    run_dir = make_run(status="partial", with_failure=True)
    text = (run_dir / "summary.md").read_text()
    report = read_report(run_dir / "report.json")
    assert text == render_summary_markdown(
        report,
        sorted(
            [a.path for a in read_manifest(run_dir / "artifact_manifest.json").artifacts]
            + ["artifact_manifest.json"]
        ),
    )
    assert "**Status:** `partial`" in text and "NVIDIA H200 (gpu, ×1, 141 GiB)" in text
    assert "| `mylib/softmax[shape=4096x4096,dtype=float32]` | success | 1.00 ms |" in text
    assert "1.50×" in text and "✓" in text
    assert "- **F001** `mylib/softmax[shape=4096x4096,dtype=float32]` — failed in compile:" in text
    assert "(stderr: `logs/runner-1.stderr.log`)" in text
    assert "- `artifact_manifest.json` — every file of the run" in text
    assert "- `outputs/softmax.hlo`" in text


def test_wrong_kernel_shows_a_cross_and_no_speedup(
    make_run: Callable[..., Path], case_factory: Callable[..., CaseRecord]
) -> None:
    wrong = case_factory("k[x=1]", 1e-3).model_copy(
        update={"status": "failed", "check": CheckRecord(passed=False)}
    )
    text = (make_run(status="failed", cases=[wrong]) / "summary.md").read_text()
    row = next(line for line in text.splitlines() if line.startswith("| `k[x=1]`"))
    assert row.endswith("| - | ✗ |")


def test_wrong_output_says_why_in_the_failures(
    make_run: Callable[..., Path], case_factory: Callable[..., CaseRecord]
) -> None:
    check = CheckRecord(
        passed=False, max_abs_err=3.5, rel_l2_err=0.25, tol=1e-5, worst_index=[2, 7]
    )
    wrong = case_factory("k[x=1]", 1e-3).model_copy(update={"status": "failed", "check": check})
    text = (make_run(status="failed", cases=[wrong]) / "summary.md").read_text()
    assert "## Failures" in text
    assert (
        "- `k[x=1]` — wrong output: rel L2 error 0.25 > tol 1e-05; max abs error 3.5 at (2, 7)"
        in text
    )


def _report(case_factory: Callable[..., CaseRecord], **summary: Any) -> Report:
    case = case_factory("k[x=1]", 1e-3)
    return Report(
        producer=Producer(tool_name="tile", tool_version="0"),
        run=RunInfo(
            run_id="test-20260101T000000Z-00000000",
            created_at=datetime(2026, 1, 1, tzinfo=UTC),
            status="failed",
            status_reason="1 regression against `baselines/cpu.json`",
            output_directory="/tmp/x",
        ),
        configuration={"command": "bench", "target_precision": 0.0001},
        summary=ReportSummary(title="tile bench", status="failed", headline="h", **summary),
        cases=[case],
    )


def test_result_line_states_the_exit_code_and_why(
    case_factory: Callable[..., CaseRecord],
) -> None:
    report = _report(case_factory, exit_code=1, exit_reason="1 regression against `b.json`")
    text = render_summary_markdown(report, [])
    assert text.splitlines()[2] == "**Result: ✗ failed (exit 1)** — 1 regression against `b.json`"
    ok = render_summary_markdown(_report(case_factory, exit_code=0), [])
    assert ok.splitlines()[2] == "**Result: ✓ passed**"


def test_unmet_precision_is_flagged_with_what_to_do(
    case_factory: Callable[..., CaseRecord],
) -> None:
    report = _report(case_factory)
    case = report.cases[0]
    assert case.stats is not None
    # Stopped by its time budget with a CI wider than the 0.01% asked for.
    stats = case.stats.model_copy(update={"stop_reason": "max_time"})
    report = report.model_copy(update={"cases": [case.model_copy(update={"stats": stats})]})
    text = render_summary_markdown(report, [])
    row = next(line for line in text.splitlines() if line.startswith("| `k[x=1]`"))
    assert "% ⚠ |" in row
    assert "⚠ 1 of 1 cases missed the ±0.01% target precision (stopped by max_time)" in text
    assert "--rounds" in text and "TILE_RUNNER_PIN_CPU=1" in text
    # The same CI reached by the stopping rule itself is not flagged.
    assert "⚠" not in render_summary_markdown(_report(case_factory), [])
    # When tile's findings already name the unmet precision, the Cases section does not repeat
    # it; the ⚠ beside each CI stays.
    noted = Finding(finding_id="F1", severity="medium", category="noise",
                    title="1 case did not reach the target precision")  # fmt: skip
    once = render_summary_markdown(report.model_copy(update={"findings": [noted]}), [])
    assert "cases missed the" not in once and once.count("did not reach the target") == 1
    assert "% ⚠ |" in once


def test_a_test_run_has_error_columns_not_empty_bench_columns(
    case_factory: Callable[..., CaseRecord],
) -> None:
    report = _report(case_factory)
    report = report.model_copy(update={"configuration": {"command": "test"}})
    text = render_summary_markdown(report, [])
    assert "| case | status | max abs err | rel L2 err | tol | ok |" in text
    assert "GB/s" not in text and "| `k[x=1]` | success | 1e-07 | 1e-08 | 1e-05 | ✓ |" in text


def test_comparison_section_comes_with_the_comparison(
    case_factory: Callable[..., CaseRecord],
) -> None:
    report = _report(case_factory, exit_code=1, exit_reason="1 regression")
    slower = report.model_copy(update={"cases": [case_factory("k[x=1]", 2e-3)], "run": report.run})
    doc = compare_runs(report, slower, baseline_label="baselines/cpu.json")
    text = render_summary_markdown(slower, [], doc)
    assert "## Comparison" in text and text.index("## Comparison") < text.index("## Cases")
    assert "| `k[x=1]` | 1.00 ms | 2.00 ms | +100.0% |" in text and "`baselines/cpu.json`" in text
    assert "## Comparison" not in render_summary_markdown(slower, [])


def test_control_characters_from_case_ids_are_written_escaped(
    make_run: Callable[..., Path],
) -> None:
    """Issue 39, item 11: an ESC or BEL in a case id reached summary.md raw, to be obeyed by a
    terminal that shows the file."""
    report = read_report(make_run() / "report.json")
    evil = "k/a[n=\x1b]0;pwned\x07\x1b[2J\r]"
    case = report.cases[0].model_copy(update={"case_id": evil})
    text = render_summary_markdown(report.model_copy(update={"cases": [case]}), [])
    assert not any(c in text for c in "\x1b\x07\r")
    assert "k/a[n=\\x1b]0;pwned\\x07\\x1b[2J\\x0d]" in text
