"""A case's history drawn: one dot per commit with the CI its runs cover, the levels found,
and each step marked at its commit with the change."""

from __future__ import annotations

import math

from tile_protocol.format import format_seconds
from tile_report._history_configs import (
    commit_configs,
    config_changes,
    config_text,
    step_config_change,
)
from tile_report._steps import Fit, Step
from tile_report._svg import (
    JUDGEMENT_COLORS,
    MONO,
    Frame,
    axis_y,
    el,
    fmt_seconds,
    line,
    log_wanted,
    mark,
    plot,
    span,
    text,
)

__all__ = ["trend_plot"]

_LEVEL = "#555"
_DOT = "#4e79a7"


def _tip(fit: Fit, i: int, change: str | None) -> str:
    p = fit.points[i]
    lines = [
        f"{p.label} {p.subject or ''}".rstrip(),
        p.time,
        f"median {format_seconds(p.value_s)} over {len(p.runs)} run(s)",
        f"CI {format_seconds(p.low_s)} – {format_seconds(p.high_s)}",
    ]
    if commit_configs(p):
        lines.append(f"config {config_text(p)}")
    if change:
        lines.append(change)
    if p.dirty:
        lines.append("uncommitted changes (dirty)")
    return "\n".join(lines)


def _axis_title(fit: Fit) -> str:
    """What the x axis counts: commits, runs (no git), or both."""
    with_commit = sum(1 for p in fit.points if p.commit)
    if with_commit == len(fit.points):
        return "commits, oldest first"
    if with_commit == 0:
        return "runs by time (no git commit), oldest first"
    return "commits (a run without one: its time), oldest first"


def _x_labels(fit: Fit, frame: Frame, x_of: list[float]) -> str:
    """Short commit ids (a run's time where it has no commit) under the axis, thinned so that
    they do not overlap (at least 50 px each, more for a longer label)."""
    each = max(50.0, 6.5 * max((len(p.label) for p in fit.points), default=0) + 6)
    stride = max(1, math.ceil(len(fit.points) * each / (frame.x1 - frame.x0)))
    last = len(fit.points) - 1
    parts = [
        text(x_of[i], frame.y1 + 14, p.label, text_anchor="middle", font_family=MONO, font_size=10)
        for i, p in enumerate(fit.points)
        if i % stride == 0 or i == last
    ]
    parts.append(line(frame.x0, frame.y1, frame.x1, frame.y1, stroke="#444"))
    middle = (frame.x0 + frame.x1) / 2
    parts.append(
        text(middle, frame.y1 + 31, _axis_title(fit), text_anchor="middle", cls="axis-title")
    )
    return el("g", *parts, cls="axis")


def _step_mark(fit: Fit, step: Step, x: float, frame: Frame) -> str:
    """A dashed line before the step's first commit, labelled with the change."""
    color, point = JUDGEMENT_COLORS[step.kind], fit.points[step.index]
    label = f"{step.change * 100:+.1f}% at {point.label}"
    right = x < (frame.x0 + frame.x1) / 2  # the label goes to the side with room
    tip = (
        f"{step.kind}: {label} ({format_seconds(step.before_s)} → "
        f"{format_seconds(step.after_s)}, z={step.z:.1f})"
    )
    if (change := step_config_change(fit, step)) is not None:
        tip += f"; {change}"
    return mark(
        "g",
        tip,
        line(x, frame.y0, x, frame.y1, stroke=color, stroke_width=1.5, stroke_dasharray="6 3"),
        text(
            x + 4 if right else x - 4,
            frame.y0 + 12,
            label,
            fill=color,
            text_anchor="start" if right else "end",
        ),
        cls="step",
        data_kind=step.kind,
        data_commit=point.commit or "",
    )


def trend_plot(fit: Fit, key: str, *, title: str) -> str | None:
    """Median per commit over time with levels and steps; None for an empty series."""
    if not fit.points:
        return None
    values = [v for p in fit.points for v in (p.low_s, p.high_s, p.value_s)]
    frame = Frame(680, 220, left=72, top=22)
    step = (frame.x1 - frame.x0) / len(fit.points)
    x_of = [frame.x0 + step * (i + 0.5) for i in range(len(fit.points))]
    log = log_wanted(values)
    ys = frame.y_scale(*span(values, log=log, pad=0.08), log=log)
    title_y = "median (log scale)" if log else "median"
    layers = [axis_y(frame, ys, title_y, fmt_seconds), _x_labels(fit, frame, x_of)]
    for level in fit.levels:
        y = ys(level.value_s)
        layers.append(
            line(
                x_of[level.start] - step / 2,
                y,
                x_of[level.stop - 1] + step / 2,
                y,
                cls="level",
                stroke=_LEVEL,
                stroke_dasharray="4 3",
            )
        )
    marks: list[str] = []
    changes = config_changes(fit)
    for i, p in enumerate(fit.points):
        tip = _tip(fit, i, changes.get(i))
        marks.append(
            mark("line", tip, x1=x_of[i], x2=x_of[i], y1=ys(p.low_s), y2=ys(p.high_s), stroke=_DOT)
        )
        fill = "#fff" if p.dirty else _DOT
        marks.append(
            mark("circle", tip, cx=x_of[i], cy=ys(p.value_s), r=3.5, fill=fill, stroke=_DOT)
        )
    marks.extend(_step_mark(fit, s, x_of[s.index] - step / 2, frame) for s in fit.steps)
    return plot("trend", key, frame, layers, marks, label=title)
