"""A small kit for hand-built SVG plots: scales with readable ticks, axes, escaped elements.

Why not a plotting library: the report is one file that must open offline from a `file:` URL.
Vega-Lite (via Altair) needs about 1 MB of JavaScript inlined into every file, Plotly's
`include_plotlyjs` about 3.5 MB, and matplotlib drags numpy and a font cache into a tool that
otherwise has neither. The plots a benchmark report needs (points on log axes, strips, bars,
lines) take a few hundred lines here, run no script in the browser, and each mark carries a
`<title>` that the browser shows on hover.

Every plot is `<svg class="plot" data-plot=NAME data-marks=N>` holding N elements of class
`mark`: the browser tests count them to check that what was drawn is what was meant.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from tile_protocol.format import format_seconds

__all__ = [
    "JUDGEMENT_COLORS",
    "MONO",
    "PALETTE",
    "Frame",
    "Scale",
    "axis_x",
    "axis_y",
    "clipped",
    "el",
    "esc",
    "fmt_num",
    "fmt_seconds",
    "kernel_colors",
    "legend",
    "legend_rows",
    "line",
    "linear_ticks",
    "log_ticks",
    "log_wanted",
    "mark",
    "num",
    "plot",
    "span",
    "text",
    "text_width",
]

PALETTE = (
    "#4e79a7",
    "#f28e2b",
    "#e15759",
    "#76b7b2",
    "#59a14f",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#79706e",
)
"""Ten categorical colours that stay apart for most readers (Tableau 10)."""

JUDGEMENT_COLORS: Mapping[str, str] = {
    "regression": "#c62828",
    "improvement": "#2e7d32",
    "neutral": "#757575",
    "inconclusive": "#ef8f00",
    "not_comparable": "#8e44ad",
}
MONO = "ui-monospace,SFMono-Regular,Menlo,Consolas,monospace"
_AXIS = "#444"
_GRID = "#e6e6e6"

Attr = str | float | int | None


def esc(text: str) -> str:
    """Text escaped for HTML and SVG content and attribute values."""
    return html.escape(text, quote=True)


def num(value: float) -> str:
    """A coordinate with one decimal, trailing zeros dropped: short files, sub-pixel enough."""
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


def fmt_num(value: float) -> str:
    """A tick label: three significant digits, no exponent for everyday magnitudes."""
    if value == 0:
        return "0"
    if not 1e-3 <= abs(value) < 1e6:
        return f"{value:.0e}".replace("e+0", "e").replace("e-0", "e-")
    decimals = 2 - math.floor(math.log10(abs(value)))
    shown = f"{round(value, decimals):.{max(decimals, 0)}f}"
    return shown.rstrip("0").rstrip(".") if "." in shown else shown


def fmt_seconds(value: float) -> str:
    """A time tick label: `0` at zero, else a duration with its unit (812 ns, 2.41 ms)."""
    return "0" if value == 0 else format_seconds(value)


def text_width(text: str, size: float = 11) -> float:
    """Rough width in pixels of `text` set at `size`: enough to size margins and legends."""
    return len(text) * size * 0.6


def el(name: str, *children: str, **attrs: Attr) -> str:
    """One element. Keyword `cls` is `class`, other underscores are hyphens (`stroke_width`);
    None attributes are left out and floats written with `num`."""
    parts = [name]
    for key, value in attrs.items():
        if value is None:
            continue
        shown = num(value) if isinstance(value, float) else str(value)
        parts.append(f'{"class" if key == "cls" else key.replace("_", "-")}="{esc(shown)}"')
    head = " ".join(parts)
    if not children:
        return f"<{head}/>"
    return f"<{head}>{''.join(children)}</{name}>"


def mark(name: str, tip: str, *children: str, cls: str = "", **attrs: Attr) -> str:
    """A drawn datum: class `mark` (counted by the browser tests) and a hover title."""
    title = f"<title>{esc(tip)}</title>"
    return el(name, *children, title, cls=f"mark {cls}".strip(), **attrs)


def kernel_colors(kernels: Iterable[str]) -> dict[str, str]:
    """A stable colour per kernel name (sorted order), cycling the palette."""
    names = sorted(set(kernels))
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(names)}


# ---------------------------------------------------------------- scales and ticks


@dataclass(frozen=True, slots=True)
class Scale:
    """Maps the data interval [lo, hi] onto pixels [start, end], linearly or by log10."""

    lo: float
    hi: float
    start: float
    end: float
    log: bool = False

    def __call__(self, value: float) -> float:
        if self.log:
            a, b, v = math.log10(self.lo), math.log10(self.hi), math.log10(max(value, 1e-300))
        else:
            a, b, v = self.lo, self.hi, value
        if b == a:
            return (self.start + self.end) / 2
        return self.start + (v - a) / (b - a) * (self.end - self.start)

    def ticks(self, count: int = 5) -> list[float]:
        """Tick positions inside the interval, at round values."""
        if self.log:
            return log_ticks(self.lo, self.hi)
        return linear_ticks(self.lo, self.hi, count)


def log_wanted(values: Sequence[float], *, ratio: float = 10.0) -> bool:
    """Whether positive `values` span more than `ratio`: on a linear axis the small ones would
    be flattened onto its bottom (a 74 ms -> 1 ms fix hides every change after it)."""
    kept = [v for v in values if math.isfinite(v)]
    return bool(kept) and min(kept) > 0 and max(kept) / min(kept) > ratio


def span(values: Iterable[float], *, log: bool, pad: float = 0.06) -> tuple[float, float]:
    """An interval holding every finite value (positive ones on a log scale), padded a little."""
    kept = [v for v in values if math.isfinite(v) and (v > 0 or not log)]
    if not kept:
        return (1.0, 10.0) if log else (0.0, 1.0)
    lo, hi = min(kept), max(kept)
    if log:
        if lo == hi:
            return lo / 2, hi * 2
        factor = (hi / lo) ** pad
        return lo / factor, hi * factor
    if lo == hi:
        delta = abs(lo) * 0.1 or 1.0
        return lo - delta, hi + delta
    delta = (hi - lo) * pad
    return lo - delta, hi + delta


def linear_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """About `count` ticks at multiples of 1, 2, 2.5 or 5 times a power of ten."""
    if not hi > lo:
        return [lo]
    raw = (hi - lo) / max(count, 1)
    magnitude = 10.0 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first = math.ceil(lo / step) * step
    n = math.floor((hi - first) / step + 1e-9) + 1
    return [round(first + i * step, 12) for i in range(max(n, 0))]


def log_ticks(lo: float, hi: float) -> list[float]:
    """Powers of ten inside [lo, hi]; 1-2-5 steps when fewer than three fit; else linear ticks."""
    first, last = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    decades = [10.0**k for k in range(first, last + 1)]
    inside = [t for t in decades if lo <= t <= hi]
    if len(inside) >= 3:
        stride = math.ceil(len(inside) / 8)
        return inside[::stride]
    steps = [m * d for d in decades for m in (1, 2, 5) if lo <= m * d <= hi]
    if len(steps) >= 2:
        return steps
    return [t for t in linear_ticks(lo, hi, 4) if t > 0]


# ---------------------------------------------------------------- frames and axes


@dataclass(frozen=True, slots=True)
class Frame:
    """An SVG canvas of width x height with the plotting area inside the margins."""

    width: float
    height: float
    left: float = 64
    right: float = 16
    top: float = 12
    bottom: float = 40

    @property
    def x0(self) -> float:
        return self.left

    @property
    def x1(self) -> float:
        return self.width - self.right

    @property
    def y0(self) -> float:
        return self.top

    @property
    def y1(self) -> float:
        return self.height - self.bottom

    def x_scale(self, lo: float, hi: float, *, log: bool = False) -> Scale:
        """Data on the horizontal axis, left to right."""
        return Scale(lo, hi, self.x0, self.x1, log)

    def y_scale(self, lo: float, hi: float, *, log: bool = False) -> Scale:
        """Data on the vertical axis, bottom to top."""
        return Scale(lo, hi, self.y1, self.y0, log)


Fmt = Callable[[float], str]


def line(x1: float, y1: float, x2: float, y2: float, **attrs: Attr) -> str:
    """A line segment."""
    return el("line", x1=x1, y1=y1, x2=x2, y2=y2, **attrs)


def text(x: float, y: float, content: str, **attrs: Attr) -> str:
    """A text label at (x, y), escaped."""
    return el("text", esc(content), x=x, y=y, **attrs)


def axis_x(frame: Frame, scale: Scale, label: str, fmt: Fmt = fmt_num) -> str:
    """Vertical grid lines, tick labels under the plot, and the axis title."""
    parts: list[str] = []
    for tick in scale.ticks():
        x = scale(tick)
        parts.append(line(x, frame.y0, x, frame.y1, stroke=_GRID))
        parts.append(text(x, frame.y1 + 14, fmt(tick), text_anchor="middle"))
    parts.append(line(frame.x0, frame.y1, frame.x1, frame.y1, stroke=_AXIS))
    middle = (frame.x0 + frame.x1) / 2
    parts.append(text(middle, frame.y1 + 31, label, text_anchor="middle", cls="axis-title"))
    return el("g", *parts, cls="axis")


def axis_y(frame: Frame, scale: Scale, label: str, fmt: Fmt = fmt_num) -> str:
    """Horizontal grid lines, tick labels left of the plot, and the rotated axis title."""
    parts: list[str] = []
    for tick in scale.ticks():
        y = scale(tick)
        parts.append(line(frame.x0, y, frame.x1, y, stroke=_GRID))
        parts.append(text(frame.x0 - 5, y + 4, fmt(tick), text_anchor="end"))
    parts.append(line(frame.x0, frame.y0, frame.x0, frame.y1, stroke=_AXIS))
    mid = (frame.y0 + frame.y1) / 2
    turn = f"rotate(-90 12 {num(mid)})"
    parts.append(text(12, mid, label, text_anchor="middle", cls="axis-title", transform=turn))
    return el("g", *parts, cls="axis")


def _legend_step(label: str) -> float:
    return 16 + text_width(label) + 14


def legend(items: Sequence[tuple[str, str]], x: float, y: float, width: float) -> str:
    """Colour swatches with labels, wrapped into rows that fit `width`."""
    parts: list[str] = []
    cx, cy = x, y
    for label, color in items:
        step = _legend_step(label)
        if cx > x and cx + step > x + width:
            cx, cy = x, cy + 16
        parts.append(el("rect", x=cx, y=cy - 9, width=10, height=10, fill=color))
        parts.append(text(cx + 14, cy, label))
        cx += step
    return el("g", *parts, cls="legend")


def legend_rows(labels: Sequence[str], width: float) -> int:
    """How many rows `legend` needs for these labels in `width` pixels."""
    rows, cx = 1, 0.0
    for label in labels:
        step = _legend_step(label)
        if cx > 0 and cx + step > width:
            rows, cx = rows + 1, 0.0
        cx += step
    return rows


def clipped(key: str, *children: str) -> str:
    """A group clipped to the plotting area of the plot `key` (lines that run past it)."""
    return el("g", *children, clip_path=f"url(#clip-{key})")


def plot(
    kind: str,
    key: str,
    frame: Frame,
    layers: Iterable[str],
    marks: Sequence[str],
    *,
    label: str,
) -> str:
    """The finished `<svg>`: layers (axes, roofs) first, then the marks, clipped to the frame.

    `kind` names the sort of plot (`roofline`, `samples`...); `key` is unique in the page.
    """
    area = el(
        "rect",
        x=frame.x0 - 4,
        y=frame.y0 - 4,
        width=frame.x1 - frame.x0 + 8,
        height=frame.y1 - frame.y0 + 8,
    )
    return el(
        "svg",
        el("defs", el("clipPath", area, id=f"clip-{key}")),
        *layers,
        clipped(key, *marks) if marks else "",
        id=key,
        cls="plot",
        data_plot=kind,
        data_marks=len(marks),
        viewBox=f"0 0 {num(frame.width)} {num(frame.height)}",
        width=frame.width,
        height=frame.height,
        role="img",
        aria_label=label,
        xmlns="http://www.w3.org/2000/svg",
    )
