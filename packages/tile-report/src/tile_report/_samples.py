"""One case's samples, kernel above reference: a strip of dots over a box, the median and the
95% CI of the median, on one time axis so the two compare at a glance."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import tile_artifacts as ta
from tile_protocol.format import format_seconds
from tile_report._svg import (
    Frame,
    Scale,
    axis_x,
    fmt_seconds,
    log_wanted,
    mark,
    num,
    plot,
    span,
    text,
)

__all__ = ["MAX_DOTS", "samples_plot", "thin"]

MAX_DOTS = 160
"""Dots drawn per series at most: evenly spaced order statistics keep the shape, not the bytes."""

_REFERENCE_COLOR = "#8c8c8c"
_ROW = 36.0
_GOLDEN = 0.6180339887498949


@dataclass(frozen=True, slots=True)
class _Series:
    label: str
    samples: Sequence[float]
    stats: ta.StatsRecord
    color: str


def thin(samples: Sequence[float], limit: int = MAX_DOTS) -> list[float]:
    """At most `limit` order statistics, evenly spaced from min to max (all when fewer)."""
    ordered = sorted(samples)
    if len(ordered) <= limit:
        return ordered
    last = len(ordered) - 1
    return [ordered[round(i * last / (limit - 1))] for i in range(limit)]


def _series(case: ta.CaseRecord, color: str) -> list[_Series]:
    rows: list[_Series] = []
    if case.stats is not None and case.samples:
        rows.append(_Series("kernel", case.samples, case.stats, color))
    ref = case.reference
    if ref is not None and ref.stats is not None and ref.samples:
        rows.append(_Series("reference", ref.samples, ref.stats, _REFERENCE_COLOR))
    return rows


def _row_marks(series: _Series, y: float, xs: Scale) -> list[str]:
    """CI band, p5-p95 whisker, quartile box, the dots, and the median on top."""
    s, color, name, fmt = series.stats, series.color, series.label, format_seconds
    marks: list[str] = []
    if s.ci_low is not None and s.ci_high is not None:
        tip = f"{name}: 95% CI of the median {fmt(s.ci_low)} – {fmt(s.ci_high)}"
        width = max(xs(s.ci_high) - xs(s.ci_low), 1.5)
        marks.append(
            mark(
                "rect",
                tip,
                x=xs(s.ci_low),
                y=y - 15,
                width=width,
                height=30,
                fill=color,
                fill_opacity=0.22,
            )
        )
    low = s.p5 if s.p5 is not None else s.min
    high = s.p95 if s.p95 is not None else s.max
    tip = f"{name}: p5 {fmt(low)}, p95 {fmt(high)}"
    marks.append(mark("line", tip, x1=xs(low), x2=xs(high), y1=y, y2=y, stroke=color))
    if s.q1 is not None and s.q3 is not None:
        tip = f"{name}: quartiles {fmt(s.q1)} – {fmt(s.q3)}"
        width = max(xs(s.q3) - xs(s.q1), 1.0)
        marks.append(
            mark(
                "rect", tip, x=xs(s.q1), y=y - 7, width=width, height=14, fill="none", stroke=color
            )
        )
    dots = thin(series.samples)
    # Deterministic jitter (golden-ratio steps): the same run draws the same picture.
    path = "".join(
        f"M{num(xs(v))} {num(y + ((i * _GOLDEN) % 1 - 0.5) * 22)}h0" for i, v in enumerate(dots)
    )
    drawn = "" if len(dots) == len(series.samples) else f" ({len(dots)} order statistics drawn)"
    tip = f"{name}: {len(series.samples)} samples{drawn}, min {fmt(s.min)}, max {fmt(s.max)}"
    marks.append(
        mark(
            "path",
            tip,
            d=path,
            stroke=color,
            stroke_width=3.2,
            stroke_linecap="round",
            stroke_opacity=0.5,
            fill="none",
        )
    )
    tip = f"{name}: median {fmt(s.median)} (n={s.n}, stop: {s.stop_reason or '-'})"
    x = xs(s.median)
    marks.append(mark("line", tip, x1=x, x2=x, y1=y - 15, y2=y + 15, stroke="#111", stroke_width=2))
    return marks


def samples_plot(case: ta.CaseRecord, color: str, key: str) -> str | None:
    """The distribution plot of one case, or None when it has no samples (a test or failure)."""
    rows = _series(case, color)
    if not rows:
        return None
    values = [v for r in rows for v in r.samples]
    log = log_wanted(values, ratio=20)
    frame = Frame(680, 18 + _ROW * len(rows) + 40, left=78, top=10)
    xs = frame.x_scale(*span(values, log=log, pad=0.04), log=log)
    title = "seconds per call" + (" (log scale)" if log else "")
    layers = [axis_x(frame, xs, title, fmt_seconds)]
    marks: list[str] = []
    for i, series in enumerate(rows):
        y = frame.y0 + 4 + _ROW * (i + 0.5)
        layers.append(text(frame.x0 - 8, y + 4, series.label, text_anchor="end"))
        marks.extend(_row_marks(series, y, xs))
    return plot("samples", key, frame, layers, marks, label=f"samples of {case.case_id}")
