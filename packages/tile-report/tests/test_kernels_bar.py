"""The per-kernel breakdown in the HTML report: a stacked bar per case that has one, each
kernel a segment sized by its median, with its label and share in the tooltip."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import tile_artifacts as ta
import tile_stats
from tile_report import load_run, render_html

Cases = Callable[..., ta.CaseRecord]
Reports = Callable[..., ta.Report]
Writer = Callable[[Path, ta.Report], Path]


def _kernel(name: str, seconds: float, case_median: float) -> ta.kernels.KernelRecord:
    stats = ta.StatsRecord.from_summary(tile_stats.summarize([seconds] * 5))
    return ta.kernels.KernelRecord(
        name=name, short=name, origin=f"{name} (kLoop)", stats=stats, share=seconds / case_median
    )


def test_a_case_with_a_breakdown_gets_a_bar_of_its_kernels(
    make_case: Cases, make_report: Reports, write_run: Writer, tmp_path: Path
) -> None:
    split = make_case("k/norm[n=1]", 1e-3)
    assert split.stats is not None
    median = split.stats.median
    kernels = [
        _kernel("fusion_a", 0.25 * median, median),
        _kernel("fusion_b", 0.75 * median, median),
    ]
    split = split.model_copy(update={"kernels": kernels})
    plain = make_case("k/norm[n=2]", 1e-3, seed=1)
    html = render_html(load_run(write_run(tmp_path / "run", make_report([split, plain]))))

    bars = re.findall(r'<svg [^>]*id="(case-\d+-kernels)"', html)
    assert bars == ["case-1-kernels"]  # the case without a breakdown has no bar
    svg = re.search(r'<svg [^>]*id="case-1-kernels".*?</svg>', html, re.S)
    assert svg is not None
    tips = re.findall(r"<title>([^<]+)</title>", svg.group(0))
    assert any(t.startswith("fusion_b [fusion_b (kLoop)]:") and "(75.0% of" in t for t in tips)
    assert any(t.startswith("fusion_a [fusion_a (kLoop)]:") and "(25.0% of" in t for t in tips)
    assert "device time of one call, by kernel" in svg.group(0)
