"""`tile compare` and `tile bench --compare` on the terminal: verdicts worst first."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

from tile_cli.terminal._layout import Column, emit, fit_tables
from tile_protocol.format import format_change_ci, format_p, format_percent, format_seconds

if TYPE_CHECKING:
    from rich.console import Console

    import tile_artifacts as ta

__all__ = ["render_comparison"]

FOLD_NEUTRAL_ABOVE = 200
"""A comparison of more rows than this shows its rows that are not neutral and counts the
neutral ones: rich took 12 s to lay out the 20,000 lines of a 10,000-case comparison (most
of `tile compare`'s time), which no one reads on a terminal; `--format markdown` and `-o`
keep every row."""
_ORDER = {"regression": 0, "inconclusive": 1, "not_comparable": 2, "neutral": 3, "improvement": 4}
_STYLE = {"regression": "bold red", "improvement": "green", "inconclusive": "yellow",
          "not_comparable": "magenta", "neutral": "dim"}  # fmt: skip


def _false_discoveries(doc: ta.compare.ComparisonDoc) -> str:
    control = doc.summary.false_discoveries
    return "" if control is None else f"; {control.describe()}"


def render_comparison(doc: ta.compare.ComparisonDoc, out: Console, *, plain: bool) -> None:
    """Tables sorted worst first (folded to the console's width), then a one-line summary."""
    columns = [
        Column("case", "left"),
        Column("baseline"),
        Column("current"),
        Column("change"),
        Column(f"{(1 - doc.thresholds.alpha) * 100:g}% CI of change"),
        Column("p"),
        Column("basis", "left"),
        Column("verdict", "left"),
        Column("reason", "left", wrap=True),
    ]
    shown = list(doc.rows)
    if len(shown) > FOLD_NEUTRAL_ABOVE:
        shown = [row for row in shown if row.judgement != "neutral"]
    folded = len(doc.rows) - len(shown)
    rows: list[list[str | Text]] = []
    for row in sorted(shown, key=lambda r: (_ORDER[r.judgement], r.case_id)):
        # A relative row shows the kernel/reference ratios it was judged on.
        values = row.relative_values() or (
            format_seconds(row.baseline_value),
            format_seconds(row.current_value),
        )
        label = row.op_label()
        rows.append(
            [
                Text(row.case_id + (f" ({label})" if label else "")),
                *values,
                format_percent(row.percent_change, signed=True),
                format_change_ci(row.ratio_ci_low, row.ratio_ci_high),
                format_p(row.p_value),
                row.basis or "-",
                Text(row.judgement, style=_STYLE[row.judgement]),
                Text("; ".join(r for r in (row.reason, row.config_note()) if r)),
            ]
        )
    s = doc.summary
    line = Text(
        f"{s.regression_count} regressions, {s.improvement_count} improvements, "
        f"{s.neutral_count} neutral, {s.inconclusive_count} inconclusive, "
        f"{s.not_comparable_count} not comparable "
        f"(noise floor ±{doc.thresholds.noise_floor_pct:g}%, alpha {doc.thresholds.alpha:g}, "
        f"basis {doc.thresholds.basis or 'absolute'}{_false_discoveries(doc)})"
    )
    tables = fit_tables(None, columns, rows, width=out.width, plain=plain) if rows else []
    note = Text(
        f"{folded} neutral rows not shown (of {len(doc.rows)}); `tile compare --format "
        "markdown` or `-o FILE` lists every row"
    )
    emit(out, *tables, *([note] if folded else []), line)
