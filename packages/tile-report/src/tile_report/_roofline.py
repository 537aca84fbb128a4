"""The roofline of a run (cases at their intensity and throughput under the roofs used) and
a bandwidth chart for every case that moves bytes, FLOP-free copies included.

A case above a roof by more than its CI (`tile_artifacts.check.case_beyond_roof`, the rule of
the run's `plausibility` finding) is drawn apart, a red-edged diamond or bar, and says so in
its tooltip: such a point is a wrong number, not a fast kernel.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import tile_artifacts as ta
from tile_report._svg import (
    MONO,
    Frame,
    Scale,
    axis_x,
    axis_y,
    clipped,
    el,
    fmt_num,
    legend,
    legend_rows,
    line,
    mark,
    plot,
    span,
    text,
    text_width,
)

__all__ = ["BEYOND", "Roofs", "bandwidth_plot", "impossible_count", "roofline_plot", "roofs_of"]

_ROOF = "#222"
_IMPOSSIBLE = "#c62828"
BEYOND = "beyond the roof: impossible, see the plausibility finding"
"""What a `‼` on a case says, in its tooltip and the notes under the table and the plot."""


@dataclass(frozen=True, slots=True)
class Roofs:
    """The peaks a run was measured against: GB/s, TFLOP/s per dtype, and their source."""

    bandwidth_gbps: float | None
    tflops: tuple[tuple[str, float], ...]
    source: str | None

    @property
    def known(self) -> bool:
        return self.bandwidth_gbps is not None or bool(self.tflops)

    def describe(self) -> str:
        """`builtin peaks: 4800 GB/s, bfloat16 989 TFLOP/s` or why there are no roofs."""
        if not self.known:
            return (
                "no peaks known for this device, so no roofs "
                "(set [machine] peaks or run `tile device --calibrate`)"
            )
        parts = [] if self.bandwidth_gbps is None else [f"{fmt_num(self.bandwidth_gbps)} GB/s"]
        parts += [f"{dtype} {fmt_num(peak)} TFLOP/s" for dtype, peak in self.tflops]
        return f"{self.source or 'unknown'} peaks: " + ", ".join(parts)


def _round(value: float) -> float:
    # Peaks recovered as rate / fraction carry float noise; four digits merge them again.
    return float(f"{value:.4g}")


def roofs_of(report: ta.Report) -> Roofs:
    """The roofs used: the report's device peaks, else recovered from each case's % of peak.

    The runner stores rates and percentages of the peak it used (built-in table, calibration
    or config), so `rate / pct * 100` gives that peak back without a second source of truth.
    """
    peaks = report.device.peaks
    if peaks.bandwidth_gbps is not None or peaks.tflops:
        flops = tuple(sorted((k, v) for k, v in peaks.tflops.items()))
        return Roofs(peaks.bandwidth_gbps, flops, peaks.source)
    bandwidth: float | None = None
    flops_by_dtype: dict[str, float] = {}
    source: str | None = None
    for case in report.cases:
        roof, rate = case.roofline, case.throughput
        if roof.pct_peak_bw and rate.gbps:
            bandwidth = _round(rate.gbps * 100 / roof.pct_peak_bw)
            source = source or roof.peak_source
        if roof.pct_peak_flops and rate.tflops:
            dtype = case.params.get("dtype", "default")
            flops_by_dtype[dtype] = _round(rate.tflops * 100 / roof.pct_peak_flops)
            source = source or roof.peak_source
    return Roofs(bandwidth, tuple(sorted(flops_by_dtype.items())), source)


def _measured(report: ta.Report) -> list[ta.CaseRecord]:
    """Cases whose speed means something: a kernel that failed its check has none."""
    return [c for c in report.cases if c.status in ("success", "partial")]


def _points(report: ta.Report) -> list[ta.CaseRecord]:
    return [
        c
        for c in _measured(report)
        if c.roofline.intensity and c.throughput.tflops and c.throughput.tflops > 0
    ]


def _rate(value: float | None, unit: str, pct: float | None) -> str | None:
    if value is None:
        return None
    return f"{fmt_num(value)} {unit}" + ("" if pct is None else f" ({pct:.1f}% of peak)")


def _case_tip(case: ta.CaseRecord) -> str:
    r, t = case.roofline, case.throughput
    lines = [
        case.case_id,
        None if r.intensity is None else f"intensity {fmt_num(r.intensity)} FLOP/byte",
        _rate(t.tflops, "TFLOP/s", r.pct_peak_flops),
        _rate(t.gbps, "GB/s", r.pct_peak_bw),
        f"bound: {r.bound}",
        f"{ta.check.IMPOSSIBLE} {BEYOND}" if ta.check.case_beyond_roof(case) is not None else None,
    ]
    return "\n".join(line for line in lines if line)


def impossible_count(report: ta.Report) -> int:
    """How many of the plotted (measured) cases are above a roof by more than their CI."""
    return sum(1 for c in _measured(report) if ta.check.case_beyond_roof(c) is not None)


def _dot(case: ta.CaseRecord, x: float, y: float, color: str) -> str:
    """A case on the roofline: a dot, or a red-edged diamond when it is above a roof."""
    tip = _case_tip(case)
    if ta.check.case_beyond_roof(case) is None:
        return mark("circle", tip, cx=x, cy=y, r=5, fill=color, stroke="#fff")
    d = f"M{x:.1f} {y - 7:.1f}L{x + 7:.1f} {y:.1f}L{x:.1f} {y + 7:.1f}L{x - 7:.1f} {y:.1f}Z"
    return mark("path", tip, cls="impossible", d=d, fill=color, stroke=_IMPOSSIBLE, stroke_width=2)


def _roof_layer(roofs: Roofs, frame: Frame, xs: Scale, ys: Scale, key: str) -> str:
    """The bandwidth roof up to the highest ridge, a dashed compute roof per dtype, labelled."""
    parts: list[str] = []
    x_lo, x_hi, bw = xs.lo, xs.hi, roofs.bandwidth_gbps
    top = max((peak for _, peak in roofs.tflops), default=None)
    if bw:
        x_end = min(x_hi, top * 1e3 / bw) if top else x_hi
        y_lo, y_end = bw * x_lo / 1e3, bw * x_end / 1e3  # TFLOP/s = GB/s x FLOP/byte / 1000
        parts.append(line(xs(x_lo), ys(y_lo), xs(x_end), ys(y_end), stroke=_ROOF, stroke_width=1.5))
        parts.append(text(xs(x_lo) + 6, ys(y_lo) - 6, f"{fmt_num(bw)} GB/s", cls="roof-label"))
    for dtype, peak in roofs.tflops:
        ridge = max(peak * 1e3 / bw if bw else x_lo, x_lo)
        parts.append(
            line(
                xs(ridge),
                ys(peak),
                xs(x_hi),
                ys(peak),
                stroke=_ROOF,
                stroke_width=1.5,
                stroke_dasharray="5 3",
            )
        )
        label = f"{dtype} {fmt_num(peak)} TFLOP/s"
        parts.append(text(frame.x1 - 4, ys(peak) - 5, label, text_anchor="end", cls="roof-label"))
    return clipped(key, *parts)


def roofline_plot(report: ta.Report, colors: Mapping[str, str], key: str) -> str | None:
    """Log-log roofline: x FLOP/byte, y TFLOP/s, one dot per case, roofs drawn and sourced.

    None when no case has both FLOPs and bytes (a CPU run of copies, or a test run).
    """
    cases = _points(report)
    if not cases:
        return None
    roofs = roofs_of(report)
    peaks = [peak for _, peak in roofs.tflops]
    bw = roofs.bandwidth_gbps
    ridges = [p * 1e3 / bw for p in peaks] if bw else []
    x_lo, x_hi = span([*(c.roofline.intensity or 0.0 for c in cases), *ridges], log=True, pad=0.15)
    y_values = [*(c.throughput.tflops or 0.0 for c in cases), *peaks]
    y_values += [bw * x_lo / 1e3] if bw else []
    kernels = sorted({c.kernel for c in cases})
    rows = legend_rows(kernels, 640)
    frame = Frame(720, 340 + 16 * rows, bottom=46 + 16 * rows)
    xs = frame.x_scale(x_lo, x_hi, log=True)
    ys = frame.y_scale(*span(y_values, log=True, pad=0.12), log=True)
    layers = [
        axis_x(frame, xs, "arithmetic intensity (FLOP/byte)"),
        axis_y(frame, ys, "TFLOP/s"),
        _roof_layer(roofs, frame, xs, ys, key),
        text(frame.x0 + 6, frame.y0 + 12, roofs.describe(), cls="note"),
        legend([(k, colors[k]) for k in kernels], frame.x0, frame.y1 + 52, 640),
    ]
    marks = [
        _dot(c, xs(c.roofline.intensity or 1.0), ys(c.throughput.tflops or 1.0), colors[c.kernel])
        for c in cases
    ]
    return plot("roofline", key, frame, layers, marks, label="roofline of the run's cases")


def _bar(case: ta.CaseRecord, xs: Scale, y: float, height: float, color: str) -> str:
    """A case's bandwidth bar, red-edged when it is above the bandwidth roof."""
    beyond = ta.check.case_beyond_roof(case, "bandwidth") is not None
    return mark(
        "rect",
        _case_tip(case),
        cls="impossible" if beyond else "",
        x=xs(0.0),
        y=y,
        height=height,
        width=max(xs(case.throughput.gbps or 0.0) - xs(0.0), 1.0),
        fill=color,
        stroke=_IMPOSSIBLE if beyond else None,
        stroke_width=2.0 if beyond else None,
    )


def bandwidth_plot(report: ta.Report, colors: Mapping[str, str], key: str) -> str | None:
    """Achieved GB/s per case as bars, with the peak bandwidth used drawn across; None if no
    case moved a known number of bytes."""
    cases = [c for c in _measured(report) if c.throughput.gbps and c.throughput.gbps > 0]
    if not cases:
        return None
    roofs = roofs_of(report)
    left = min(max(text_width(c.case_id, 10.5) for c in cases), 440) + 12
    frame = Frame(left + 420, 14 * len(cases) + 58, left=left, top=18)
    peak = roofs.bandwidth_gbps
    xs = frame.x_scale(0.0, max([c.throughput.gbps or 0.0 for c in cases] + [peak or 0.0]) * 1.05)
    row = (frame.y1 - frame.y0) / len(cases)
    labels = [
        text(
            frame.x0 - 6,
            frame.y0 + row * (i + 0.5) + 4,
            c.case_id,
            text_anchor="end",
            font_family=MONO,
            font_size=10.5,
        )
        for i, c in enumerate(cases)
    ]
    layers = [axis_x(frame, xs, "achieved GB/s (from the median time)"), el("g", *labels)]
    if peak:
        layers.append(
            line(xs(peak), frame.y0 - 4, xs(peak), frame.y1, stroke=_ROOF, stroke_dasharray="5 3")
        )
        label = f"peak {fmt_num(peak)} GB/s ({roofs.source})"
        layers.append(text(xs(peak) - 4, frame.y0 - 6, label, text_anchor="end", cls="roof-label"))
    marks = [
        _bar(c, xs, frame.y0 + row * i + 2, row - 4, colors[c.kernel]) for i, c in enumerate(cases)
    ]
    return plot("bandwidth", key, frame, layers, marks, label="achieved bandwidth per case")
