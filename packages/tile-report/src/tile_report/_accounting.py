"""Where wall time went, as one stacked bar: a case's accounting (or its build phases in runs
written before accounting existed), and the whole run's."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import tile_artifacts as ta
from tile_protocol.format import format_seconds
from tile_report._inputs import Accounting
from tile_report._svg import PALETTE, Frame, axis_x, fmt_seconds, legend, legend_rows, mark, plot

__all__ = [
    "UNACCOUNTED",
    "accounting_plot",
    "case_accounting",
    "kernels_plot",
    "part_names",
    "run_accounting",
]

UNACCOUNTED = "unaccounted"
"""The part drawn for a total larger than its named parts (older runs, or rounding)."""


def case_accounting(case: ta.CaseRecord, given: Accounting | None) -> Accounting | None:
    """The case's own accounting when the run has one, else its trace/lower/compile seconds."""
    if given is not None:
        return given
    p = case.phases
    parts = tuple(
        (name, seconds)
        for name, seconds in (("trace", p.trace_s), ("lower", p.lower_s), ("compile", p.compile_s))
        if seconds is not None
    )
    return Accounting(parts) if parts else None


def run_accounting(given: Accounting | None, cases: Mapping[str, Accounting]) -> Accounting | None:
    """The run's own figure when written, else the cases' accountings added up part by part."""
    if given is not None:
        return given
    if not cases:
        return None
    sums: dict[str, float] = {}
    for acc in cases.values():
        for name, seconds in acc.parts:
            sums[name] = sums.get(name, 0.0) + seconds
    totals = [acc.total for acc in cases.values()]
    total = sum(t for t in totals if t is not None) if all(t is not None for t in totals) else None
    return Accounting(tuple(sums.items()), total)


def _with_rest(acc: Accounting) -> list[tuple[str, float]]:
    parts = [(name, seconds) for name, seconds in acc.parts if seconds > 0]
    rest = acc.whole - sum(seconds for _, seconds in parts)
    if rest > 0.005 * acc.whole:
        parts.append((UNACCOUNTED, rest))
    return parts


def part_names(accountings: Iterable[Accounting]) -> list[str]:
    """Every part name drawn, in first-seen order: one colour per name across the page."""
    names: dict[str, None] = {}
    for acc in accountings:
        for name, _ in _with_rest(acc):
            names.setdefault(name)
    return list(names)


def accounting_plot(acc: Accounting, colors: Mapping[str, str], key: str, *, label: str) -> str:
    """One horizontal bar split into the parts, scaled to the total, with a legend below."""
    parts = _with_rest(acc)
    whole = acc.whole or 1.0
    names = [f"{name} {format_seconds(seconds)}" for name, seconds in parts]
    rows = legend_rows(names, 600)
    frame = Frame(680, 74 + 16 * rows, left=16, right=24, top=8, bottom=44 + 16 * rows)
    xs = frame.x_scale(0.0, whole)
    title = f"{label}: {format_seconds(whole)}"
    layers = [axis_x(frame, xs, title, fmt_seconds)]
    marks: list[str] = []
    start = 0.0
    for name, seconds in parts:
        tip = f"{name}: {format_seconds(seconds)} ({100 * seconds / whole:.1f}% of {title})"
        width = max(xs(seconds) - xs(0.0), 0.8)
        fill = colors.get(name, "#999")
        marks.append(
            mark(
                "rect",
                tip,
                x=xs(start),
                y=frame.y0,
                width=width,
                height=frame.y1 - frame.y0,
                fill=fill,
            )
        )
        start += seconds
    items = [(text, colors.get(name, "#999")) for text, (name, _) in zip(names, parts, strict=True)]
    layers.append(legend(items, frame.x0, frame.y1 + 50, 600))
    return plot("accounting", key, frame, layers, marks, label=label)


def kernels_plot(case: ta.CaseRecord, key: str) -> str | None:
    """The case's median call as one bar split into its device kernels (the `cupti` timer's
    breakdown), slowest first; None for a case without one."""
    kernels = sorted(case.kernels or [], key=lambda k: -k.stats.median)
    if not kernels or case.stats is None:
        return None
    names = [ta.kernels.label(k) for k in kernels]
    colors = {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(names)}
    acc = Accounting(
        tuple((name, k.stats.median) for name, k in zip(names, kernels, strict=True)),
        case.stats.median,
    )
    return accounting_plot(acc, colors, key, label="device time of one call, by kernel")
