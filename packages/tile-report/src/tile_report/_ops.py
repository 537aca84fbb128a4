"""The report's "Implementations" section: the kernels that implement one op side by side,
each case's time and its speedup against the op's baseline implementation (the grouping and
the speedup are `tile_artifacts.ops`', as in the terminal and summary.md)."""

from __future__ import annotations

import tile_artifacts as ta
from tile_protocol.format import format_ci_pct, format_ratio, format_seconds
from tile_report._sections import badge, case_anchor, table
from tile_report._svg import esc

__all__ = ["ops_section"]


def _point(case: ta.CaseRecord) -> str:
    """The case's axis values as its id writes them (`[shape=8x128,dtype=float32]`)."""
    tail = case.case_id[len(case.kernel) :] if case.case_id.startswith(case.kernel) else ""
    return tail or case.case_id


def _check(case: ta.CaseRecord) -> str:
    if case.check is None:
        return "–"
    return '<span class="ok">✓</span>' if case.check.passed else '<span class="bad">✗</span>'


def ops_section(report: ta.Report) -> str:
    """A table per op whose implementations ran; empty for a run without any."""
    groups = ta.ops.timed_ops(report)
    if not groups:
        return ""
    index = {c.case_id: i for i, c in enumerate(report.cases)}
    speedups = ta.ops.impl_speedups(report.cases, ta.ops.record_median)
    parts: list[str] = []
    for group in groups:
        base = group.baseline
        rows: list[list[str]] = []
        for c in group.cases:
            s = c.stats
            impl = c.op.impl if c.op is not None else "–"
            rows.append(
                [
                    f"<code>{esc(impl)}</code>",
                    f'<a href="#{case_anchor(index[c.case_id])}"><code>{esc(_point(c))}</code></a>',
                    badge(c.status),
                    esc(format_seconds(s.median if s else None)),
                    esc(format_ci_pct(s.ci_low, s.ci_high, s.median) if s else "–"),
                    esc(format_ratio(speedups.get(c.case_id))),
                    _check(c),
                ]
            )
        said = f"baseline <code>{esc(base)}</code>" if base else "no baseline implementation ran"
        headers = ["implementation", "case", "status", "time", "±CI", f"vs {base or 'baseline'}",
                   "ok"]  # fmt: skip
        parts.append(
            f'<h3 class="op">{esc(group.name)}</h3><p>{len(group.impls)} implementations, '
            f"{said}; above 1× is faster than the baseline.</p>" + table(headers, rows, cls="ops")
        )
    return '<section id="implementations"><h2>Implementations</h2>' + "".join(parts) + "</section>"
