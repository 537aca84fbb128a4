"""Numbers that cannot be, in the HTML report: a case above a roof by more than its CI is drawn
apart on the roofline and the bandwidth chart, with a tooltip saying why, and its rate carries
the `‼` of summary.md in the case table; a possible case has none of it."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import tile_artifacts as ta
from tile_report import load_run, render_html

Cases = Callable[..., ta.CaseRecord]
Reports = Callable[..., ta.Report]
Writer = Callable[[Path, ta.Report], Path]

H200 = ta.Peaks(bandwidth_gbps=4800.0, tflops={"bfloat16": 989.0}, source="builtin")
MATMUL = ta.Work(bytes=1e9, flops=2e12, source="declared")
COPY = ta.Work(bytes=1e9, flops=None, source="declared")
BEYOND = "beyond the roof: impossible, see the plausibility finding"


def _marks(svg_kind: str, html: str) -> dict[str, str]:
    """Case id -> the opening tag of its mark in the plot of `svg_kind`."""
    svg = re.search(rf'<svg [^>]*data-plot="{svg_kind}".*?</svg>', html, re.S)
    assert svg is not None
    found = re.findall(r"(<(?:circle|path|rect) [^>]*>)<title>([^\n<]+)", svg.group(0))
    return {case_id: tag for tag, case_id in found}


def _tips(html: str) -> dict[str, str]:
    """Case id -> its roofline tooltip."""
    svg = re.search(r'<svg [^>]*data-plot="roofline".*?</svg>', html, re.S)
    assert svg is not None
    return {t.split("\n")[0]: t for t in re.findall(r"<title>([^<]+)</title>", svg.group(0))}


def _row(html: str, case_id: str) -> list[str]:
    """The cells of the case table's row for `case_id`."""
    table = re.search(r'<table class="cases">.*?</table>', html, re.S)
    assert table is not None
    for row in re.findall(r"<tr>(.*?)</tr>", table.group(0)):
        if f"<code>{case_id}</code>" in row:
            return re.findall(r"<td>(.*?)</td>", row)
    raise AssertionError(f"no row for {case_id}")


def test_impossible_cases_are_marked_in_the_plots_the_table_and_summary_md(
    make_case: Cases, make_report: Reports, write_run: Writer, tmp_path: Path
) -> None:
    cases = [
        make_case("k/mm[n=1]", 1e-2, work=MATMUL, peaks=H200),  # 200 TFLOP/s: 20% of 989
        make_case("k/mm[n=2]", 1e-3, work=MATMUL, peaks=H200, seed=1),  # 2000: 202%
        make_case("k/copy[n=1]", 1e-3, work=COPY, peaks=H200, seed=2),  # 1000 GB/s: 21%
        make_case("k/copy[n=2]", 1e-4, work=COPY, peaks=H200, seed=3),  # 10000 GB/s: 208%
    ]
    run_dir = write_run(tmp_path / "run", make_report(cases, peaks=H200))
    html = render_html(load_run(run_dir))

    roofline = _marks("roofline", html)
    assert roofline["k/mm[n=1]"].startswith("<circle") and "impossible" not in roofline["k/mm[n=1]"]
    assert roofline["k/mm[n=2]"].startswith('<path class="mark impossible"')
    tips = _tips(html)
    assert tips["k/mm[n=2]"].endswith(f"‼ {BEYOND}") and BEYOND not in tips["k/mm[n=1]"]

    bars = _marks("bandwidth", html)
    assert 'class="mark impossible"' in bars["k/copy[n=2]"]
    assert all("impossible" not in bars[c] for c in ("k/mm[n=1]", "k/mm[n=2]", "k/copy[n=1]"))

    gbps, tflops = 4, 5  # the GB/s and TFLOP/s columns
    assert "‼" not in "".join(_row(html, "k/mm[n=1]") + _row(html, "k/copy[n=1]"))
    assert "‼" in _row(html, "k/mm[n=2]")[tflops] and "‼" not in _row(html, "k/mm[n=2]")[gbps]
    assert f'title="{BEYOND}">‼</span>' in _row(html, "k/copy[n=2]")[gbps]
    assert "‼ 2 case(s) above a roof of this machine by more than their 95% CI" in html

    # summary.md of the same run directory marks the same two rates.
    summary = (run_dir / "summary.md").read_text()
    marked = [line.split(" | ")[0] for line in summary.splitlines() if "‼" in line]
    assert marked == [
        "| `k/mm[n=2]`",
        "| `k/copy[n=2]`",
        "‼ 2 of 4 cases above a roof of this machine by more than their 95% CI: not rates that roof allows (the work counted or the peak is wrong, or a warm cache held the data); see the run's plausibility check.",
    ]


def test_a_run_of_possible_cases_has_no_mark(
    make_case: Cases, make_report: Reports, write_run: Writer, tmp_path: Path
) -> None:
    cases = [make_case("k/mm[n=1]", 1e-2, work=MATMUL, peaks=H200)]
    run_dir = write_run(tmp_path / "run", make_report(cases, peaks=H200))
    html = render_html(load_run(run_dir))
    assert "‼" not in html and "impossible" not in html
    assert "‼" not in (run_dir / "summary.md").read_text()
