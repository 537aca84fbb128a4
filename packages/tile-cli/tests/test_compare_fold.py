"""`tile compare` on the terminal: a comparison of many cases shows the rows that are not
neutral and counts the neutral ones (10,000 rows took rich 12 s to lay out); a small one
shows every row."""

from __future__ import annotations

import io

from rich.console import Console

import tile_artifacts as ta
from tile_cli.terminal._compare import FOLD_NEUTRAL_ABOVE, render_comparison

_RUN = ta.RunInfo(
    run_id="compare-20250101T000000Z-0000abcd",
    created_at=ta.utc_now(),
    status="success",
    output_directory="/tmp/x",
)


def _row(i: int, judgement: ta.compare.Judgement) -> ta.compare.ComparisonRow:
    return ta.compare.ComparisonRow(
        case_id=f"lib/k[n={i}]",
        metric_name="time_s",
        unit="s",
        baseline_value=1e-3,
        current_value=1e-3 if judgement == "neutral" else 1.5e-3,
        ratio=1.0 if judgement == "neutral" else 1.5,
        percent_change=0.0 if judgement == "neutral" else 50.0,
        higher_is_better=False,
        judgement=judgement,
    )


def _shown(rows: list[ta.compare.ComparisonRow]) -> str:
    doc = ta.compare.ComparisonDoc(
        producer=ta.Producer(tool_name="tile", tool_version="0"),
        run=_RUN,
        baseline=ta.compare.ComparisonSide(),
        current=ta.compare.ComparisonSide(),
        thresholds=ta.compare.Thresholds(noise_floor_pct=2.0, alpha=0.05, metric="time_s"),
        rows=rows,
        summary=ta.compare.ComparisonSummary(
            status="success",
            regression_count=sum(r.judgement == "regression" for r in rows),
            neutral_count=sum(r.judgement == "neutral" for r in rows),
        ),
    )
    out = Console(file=io.StringIO(), width=200)
    render_comparison(doc, out, plain=True)
    file = out.file
    assert isinstance(file, io.StringIO)
    return file.getvalue()


def test_many_neutral_rows_are_counted_and_every_regression_is_shown() -> None:
    rows = [_row(i, "regression" if i % 100 == 7 else "neutral") for i in range(1000)]
    text = _shown(rows)
    regressed = [r.case_id for r in rows if r.judgement == "regression"]
    assert all(case_id in text for case_id in regressed)
    assert "lib/k[n=0]" not in text and "lib/k[n=999]" not in text
    assert "990 neutral rows not shown (of 1000)" in text
    assert "10 regressions, 0 improvements, 990 neutral" in text


def test_a_comparison_of_few_cases_shows_every_row() -> None:
    rows = [_row(i, "neutral") for i in range(FOLD_NEUTRAL_ABOVE)]
    text = _shown(rows)
    assert all(r.case_id in text for r in rows)
    assert "not shown" not in text
