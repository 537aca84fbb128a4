"""Numbers that cannot be, as a run directory shows them: the rule on a recorded case, and the
`‼` of summary.md on the rate that is above its roof, absent from a possible case's row."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tile_artifacts import (
    CaseRecord,
    Finding,
    PeakSource,
    Roofline,
    Throughput,
    read_report,
    render_summary_markdown,
)
from tile_artifacts.check import MEASURED_SLACK, case_beyond_roof

Cases = Callable[..., CaseRecord]


def _at(case: CaseRecord, *, bw: float | None = None, flops: float | None = None,
        source: PeakSource = "config") -> CaseRecord:  # fmt: skip
    """`case` at `bw`% of the bandwidth roof and `flops`% of the compute roof."""
    return case.model_copy(
        update={
            "throughput": Throughput(gbps=case.throughput.gbps, tflops=flops and 2.0),
            "roofline": Roofline(pct_peak_bw=bw, pct_peak_flops=flops, peak_source=source),
        }
    )


def _cells(summary: str, case_id: str) -> list[str]:
    row = next(line for line in summary.splitlines() if line.startswith(f"| `{case_id}`"))
    return [cell.strip() for cell in row.strip("|").split(" | ")]


def test_a_recorded_case_is_judged_per_roof_by_the_slow_end_of_its_ci(case_factory: Cases) -> None:
    case = case_factory("k[x=1]", 1e-3)  # a CI of about ±0.5%
    s = case.stats
    assert s is not None and s.ci_high is not None
    both = _at(case, bw=130.0, flops=90.0)
    least = case_beyond_roof(both, "bandwidth")
    assert least == pytest.approx(130.0 * s.median / s.ci_high)
    assert case_beyond_roof(both, "compute") is None
    assert case_beyond_roof(both) == least
    assert case_beyond_roof(_at(case, bw=99.0)) is None
    # A calibrated roof forgives MEASURED_SLACK; a hand-set one does not.
    near = 100.0 * (1 + MEASURED_SLACK) - 1.0
    assert case_beyond_roof(_at(case, bw=near, source="calibrated")) is None
    assert case_beyond_roof(_at(case, bw=near)) is not None
    assert case_beyond_roof(_at(case, bw=130.0).model_copy(update={"stats": None})) is None


def test_summary_marks_the_rate_above_its_roof_and_says_what_the_mark_means(
    make_run: Callable[..., Path], case_factory: Cases
) -> None:
    cases = [
        _at(case_factory("k/fine[x=1]", 1e-3), bw=80.0),
        _at(case_factory("k/copy[x=1]", 1e-3, seed=1), bw=130.0),
        _at(case_factory("k/mm[x=1]", 1e-3, seed=2), bw=10.0, flops=150.0),
    ]
    run = make_run(cases=cases)
    text = (run / "summary.md").read_text()
    fine, copy, mm = (_cells(text, c.case_id) for c in cases)
    gbps, tflops = 4, 5  # the GB/s and TFLOP/s columns
    assert "‼" not in "".join(fine)
    assert copy[gbps].endswith(" ‼") and "‼" not in copy[tflops]
    assert mm[tflops] == "2.00 ‼" and "‼" not in mm[gbps]
    [legend] = [line for line in text.splitlines() if line.startswith("‼ ")]
    assert legend.startswith("‼ 2 of 3 cases above a roof of this machine by more than their")
    assert "not rates that roof allows" in legend and "plausibility" in legend
    assert text.index("## Cases") < text.index(legend) < text.index("## Artifacts")


def test_the_legend_points_to_the_finding_when_the_run_has_one(
    make_run: Callable[..., Path], case_factory: Cases
) -> None:
    report = read_report(make_run(cases=[_at(case_factory("k[x=1]", 1e-3), bw=130.0)])
                         / "report.json")  # fmt: skip
    finding = Finding(finding_id="F1", severity="high", category="plausibility",
                      title="1 case above 100% of the bandwidth roof")  # fmt: skip
    text = render_summary_markdown(report.model_copy(update={"findings": [finding]}), [])
    assert "see the `plausibility` finding under Findings." in text
    assert "## Findings" in text


def test_no_legend_without_a_marked_row(make_run: Callable[..., Path], case_factory: Cases) -> None:
    text = (make_run(cases=[_at(case_factory("k[x=1]", 1e-3), bw=99.0)]) / "summary.md").read_text()
    assert "‼" not in text
