"""A comparison drawn: each case's ratio (current / baseline) with its CI, coloured by verdict,
sorted by change, over the band of the noise floor inside which a change counts as neutral."""

from __future__ import annotations

import tile_artifacts as ta
from tile_protocol.format import format_seconds
from tile_report._svg import (
    JUDGEMENT_COLORS,
    MONO,
    Frame,
    Scale,
    axis_x,
    el,
    legend,
    line,
    mark,
    plot,
    span,
    text,
    text_width,
)

__all__ = ["comparison_plot", "sorted_rows"]


def sorted_rows(doc: ta.compare.ComparisonDoc) -> list[ta.compare.ComparisonRow]:
    """Rows by change, largest slowdown first; rows without a ratio last, by case id."""
    with_ratio = [r for r in doc.rows if r.ratio is not None]
    without = [r for r in doc.rows if r.ratio is None]
    with_ratio.sort(key=lambda r: (-(r.ratio or 1.0), r.case_id))
    without.sort(key=lambda r: r.case_id)
    return [*with_ratio, *without]


def _ratio(value: float) -> str:
    change = (value - 1) * 100
    return "±0%" if abs(change) < 0.05 else f"{change:+.3g}%"


def _tip(row: ta.compare.ComparisonRow) -> str:
    lines = [row.case_id, f"{row.judgement}: ratio {row.ratio:.4g}"]
    if row.ratio_ci_low is not None and row.ratio_ci_high is not None:
        lines.append(f"CI {row.ratio_ci_low:.4g} – {row.ratio_ci_high:.4g}")
    lines.append(
        f"baseline {format_seconds(row.baseline_value)}, "
        f"current {format_seconds(row.current_value)}"
    )
    relative = row.relative_values()
    if relative is not None:
        lines.append(f"judged relative to the reference: {relative[0]} -> {relative[1]}")
    if row.p_value is not None:
        lines.append(f"p = {row.p_value:.2g}")
    if row.reason:
        lines.append(row.reason)
    if (changed := row.config_note()) is not None:
        lines.append(changed)
    return "\n".join(lines)


def _row(r: ta.compare.ComparisonRow, xs: Scale, y: float) -> list[str]:
    """The CI whisker (when known) and the dot of one row, in its verdict's colour."""
    color, tip = JUDGEMENT_COLORS[r.judgement], _tip(r)
    marks: list[str] = []
    if r.ratio_ci_low is not None and r.ratio_ci_high is not None:
        x1, x2 = xs(r.ratio_ci_low), xs(r.ratio_ci_high)
        marks.append(mark("line", tip, x1=x1, x2=x2, y1=y, y2=y, stroke=color, stroke_width=2))
    marks.append(mark("circle", tip, cx=xs(r.ratio or 1.0), cy=y, r=4.5, fill=color))
    return marks


def comparison_plot(doc: ta.compare.ComparisonDoc, key: str) -> str | None:
    """Dot-and-whisker per case on a log ratio axis; None when no row has a ratio."""
    rows = [r for r in sorted_rows(doc) if r.ratio is not None]
    if not rows:
        return None
    floor = doc.thresholds.noise_floor_pct / 100
    # The judge's band is symmetric in log space: 1 / (1 + f) to 1 + f.
    values = [1 / (1 + floor), 1 + floor]
    for r in rows:
        values += [v for v in (r.ratio, r.ratio_ci_low, r.ratio_ci_high) if v is not None]
    lo, hi = span(values, log=True, pad=0.08)
    left = min(max(text_width(r.case_id, 10.5) for r in rows), 440) + 12
    row_h = 18.0
    frame = Frame(left + 440, 30 + row_h * len(rows) + 62, left=left, top=30, bottom=62)
    xs = frame.x_scale(lo, hi, log=True)
    band_lo, band_hi = xs(max(values[0], lo)), xs(min(values[1], hi))
    layers = [
        el(
            "rect",
            cls="noise-floor",
            x=band_lo,
            y=frame.y0,
            width=band_hi - band_lo,
            height=frame.y1 - frame.y0,
            fill="#ececec",
        ),
        axis_x(frame, xs, "current / baseline (log scale; right is slower)", _ratio),
        line(xs(1.0), frame.y0, xs(1.0), frame.y1, stroke="#333"),
        text(
            xs(1.0),
            frame.y0 - 8,
            f"noise floor ±{doc.thresholds.noise_floor_pct:g}%",
            text_anchor="middle",
            cls="note",
        ),
    ]
    marks: list[str] = []
    for i, r in enumerate(rows):
        y = frame.y0 + row_h * (i + 0.5)
        layers.append(
            text(
                frame.x0 - 6, y + 4, r.case_id, text_anchor="end", font_family=MONO, font_size=10.5
            )
        )
        marks.extend(_row(r, xs, y))
    seen = list(dict.fromkeys(r.judgement for r in rows))
    layers.append(legend([(j, JUDGEMENT_COLORS[j]) for j in seen], frame.x0, frame.y1 + 50, 400))
    return plot("comparison", key, frame, layers, marks, label="ratio of medians per case")
