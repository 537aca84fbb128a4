"""summary.md: status, device, headline table, failures and the artifact map."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tile_artifacts import (
    CaseRecord,
    CheckRecord,
    format_seconds,
    read_manifest,
    read_report,
    render_summary_markdown,
)


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
    assert "| `mylib/softmax[shape=4096x4096,dtype=float32]` | success | 1 ms |" in text
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
    assert row.endswith("| – | ✗ |")


def test_format_seconds() -> None:
    assert [format_seconds(x) for x in (2.5, 1e-3, 4.98e-4, 8e-7, None)] == [
        "2.5 s", "1 ms", "498 µs", "800 ns", "–",
    ]  # fmt: skip
