"""Numbers that cannot be, end to end: a real `tile bench` on the CPU of a kernel that declares
a hundred times the bytes it moves, against a peak set by hand, and the CPU's empty roofline."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from support import MakeProject, TileRun, assert_schema_valid

CPU = {"JAX_PLATFORMS": "cpu"}


def _report(run: Path) -> Any:
    return json.loads((run / "report.json").read_text())


def _stale_cpu_calibration(cache: Path) -> None:
    """What `tile device --calibrate` cached on a CPU before it refused to: a tiny copy rate
    that put every case far above 100%."""
    (cache / "calibration").mkdir(parents=True)
    (cache / "calibration" / "cpu.json").write_text(json.dumps({
        "copy_gbps": 0.01, "copy_bytes": 1 << 26, "matmul_tflops": 0.001,
        "matmul_dtype": "bfloat16", "matmul_shape": [1024, 1024, 1024], "timer": "wall",
    }))  # fmt: skip


def test_inflated_bytes_against_a_hand_set_peak_is_an_impossible_finding(
    tile: TileRun, project: MakeProject, tmp_path: Path
) -> None:
    root = project(["roofline.py"])
    cache = tmp_path / "cache"
    _stale_cpu_calibration(cache)
    env = {**CPU, "TILE_CACHE_DIR": str(cache)}

    # Without `[machine]` a CPU has no peaks (the stale calibration is not used), and the
    # table says why its %peak and bound are empty.
    first = tile("bench", "--kernel", "fx/honest", "--max-time", "0.1", "-o", "run1",
                 cwd=root, env=env)  # fmt: skip
    assert first.returncode == 0, first.stderr
    assert "%peak and bound are `-`: tile gives a CPU no roofline peaks" in first.stdout
    [case] = _report(root / "run1")["cases"]
    assert case["roofline"]["pct_peak_bw"] is None and case["roofline"]["peak_source"] is None
    honest_gbps = case["throughput"]["gbps"]

    # A peak ten times what the honest copy reached: the honest case sits near a tenth of it,
    # the one declaring a hundred times its bytes near 1,000%. Either stays on its side of
    # 100% while the loaded CPU moves a copy's speed up to 10x between the two runs (3x was
    # crossed once: 12 GB/s in the first run, 39 in the second, 2026-12-06).
    (root / "tile.toml").write_text('[project]\npaths = ["kernels"]\n\n'
                                    f"[machine]\npeak_bandwidth_gbps = {10 * honest_gbps:.6g}\n")  # fmt: skip
    second = tile("bench", "--max-time", "0.1", "-o", "run2", cwd=root, env=env)
    assert second.returncode == 0, second.stderr  # a finding alone does not fail the run
    assert "%peak and bound are `-`" not in second.stdout
    # One table per kernel (sorted by name): fx/honest's row, then fx/inflated's, flagged.
    rows = [line for line in second.stdout.splitlines() if "[n=" in line]
    assert ["‼" in row for row in rows] == [False, True], second.stdout
    assert "‼ 1 of 2 cases above 100% of a roof of this machine" in second.stderr

    report = _report(root / "run2")
    assert report["summary"]["exit_code"] == 0
    [found] = [f for f in report["findings"] if f["category"] == "plausibility"]
    assert found["severity"] == "high"
    assert found["title"].startswith("1 case above 100% of the bandwidth roof")
    [evidence] = found["evidence"]
    assert evidence.startswith("fx/inflated[") and "GB/s roof (at least" in evidence
    causes = found["interpretation"]
    order = ['(1) the work counted for one call is too large: `bytes=` of `@tile.kernel("fx/inflated")`',
             "(2) the peak is too low: `[machine] peak_bandwidth_gbps` (tile.toml:5)",
             "(3) those numbers came from another device"]  # fmt: skip
    assert all(part in causes for part in order)
    assert [causes.index(part) for part in order] == sorted(causes.index(p) for p in order)
    actions = [a["description"] for a in report["recommended_actions"]]
    assert any("`[machine] peak_bandwidth_gbps` (tile.toml:5)" in a for a in actions)
    summary = (root / "run2" / "summary.md").read_text()
    assert "above 100% of the bandwidth roof" in summary
    assert_schema_valid(root / "run2")
    _marked_in_summary_and_report(tile, root, summary)


def _marked_in_summary_and_report(tile: TileRun, root: Path, summary: str) -> None:
    """summary.md and `tile report` mark the inflated case (its GB/s, the one roof it is
    above) and leave the honest one alone, pointing to the finding."""
    rows = [line for line in summary.splitlines() if line.startswith("| `fx/")]
    assert [(row.split("[")[0], " ‼ |" in row) for row in rows] == [
        ("| `fx/honest", False),
        ("| `fx/inflated", True),
    ], summary
    assert "‼ 1 of 2 cases above a roof of this machine" in summary
    assert "see the `plausibility` finding under Findings." in summary
    done = tile("report", "run2", "-o", "run2.html", cwd=root)
    assert done.returncode == 0, done.stderr
    html = (root / "run2.html").read_text()
    bars = re.findall(r'<rect class="mark( impossible)?"[^>]*><title>(fx/[a-z]+)', html)
    assert sorted(bars) == [("", "fx/honest"), (" impossible", "fx/inflated")]
    assert "beyond the roof: impossible, see the plausibility finding" in html
