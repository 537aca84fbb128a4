"""The report page: one HTML file with its style inline, the sections in reading order, and a
Content-Security-Policy that forbids every fetch, so a file that tried to load anything
would say so in the browser console (and the browser tests fail on console errors)."""

from __future__ import annotations

from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import tile_artifacts as ta
from tile_protocol.format import format_seconds
from tile_report._accounting import accounting_plot, case_accounting, part_names, run_accounting
from tile_report._comparison import comparison_plot, sorted_rows
from tile_report._errors import ReportError
from tile_report._history_ops import op_trends
from tile_report._inputs import RunData
from tile_report._ops import ops_section
from tile_report._roofline import BEYOND, bandwidth_plot, impossible_count, roofline_plot
from tile_report._sections import (
    badge,
    case_section,
    context_section,
    failures_section,
    overview_section,
    table,
)
from tile_report._steps import MIN_POINTS, Trend
from tile_report._svg import JUDGEMENT_COLORS, PALETTE, esc, kernel_colors
from tile_report._trend import trend_plot

__all__ = ["CSP", "DETAILED_CASES", "detailed_cases", "render_html", "write_html"]

DETAILED_CASES = 200
"""The most cases a page gives a section of their own (`detailed_cases`)."""
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
"""Nothing may be fetched: no script, no font, no image from anywhere but the page itself."""

_CSS = """
:root{--fg:#1d1d1f;--dim:#6e6e73;--line:#d9d9de;--bg:#fff;--soft:#f5f5f7}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
header{padding:18px 28px 10px;border-bottom:1px solid var(--line);background:var(--soft)}
main{padding:0 28px 40px;max-width:1280px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid var(--line);padding-bottom:4px}
h3{font-size:14px;margin:16px 0 6px}
nav a{margin-right:14px;color:#0a58ca;text-decoration:none}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
pre{background:var(--soft);border:1px solid var(--line);padding:8px;overflow:auto;max-height:360px;white-space:pre-wrap}
table{border-collapse:collapse;margin:8px 0;font-variant-numeric:tabular-nums}
th,td{border-bottom:1px solid var(--line);padding:3px 10px 3px 0;text-align:left;vertical-align:top}
th{font-weight:600;color:var(--dim)}
table.cases td:nth-child(n+3){text-align:right}
dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:6px 0}
dt{color:var(--dim)}dd{margin:0;overflow-wrap:anywhere}
.cols{display:grid;grid-template-columns:1fr 1fr;gap:24px}
.badge{display:inline-block;padding:0 7px;border-radius:9px;font-size:12px;color:#fff;background:#888}
.s-success{background:#2e7d32}.s-partial,.s-timed_out,.s-interrupted{background:#ef8f00}
.s-failed,.s-invalid{background:#c62828}.s-skipped,.s-unsupported,.s-dry_run{background:#888}
.ok{color:#2e7d32;font-weight:600}.bad{color:#c62828;font-weight:600}.dim,.note{color:var(--dim)}
.origin{color:#0a58ca}
details.case{border:1px solid var(--line);border-radius:6px;padding:6px 12px;margin:10px 0}
details.case>summary{cursor:pointer;font-weight:600}
.failure{border-left:3px solid #c62828;padding-left:10px;margin:10px 0}
.plotbox{overflow-x:auto;margin:6px 0}
svg.plot{font:11px system-ui,sans-serif;display:block}
svg.plot .axis text{fill:#444}svg.plot .axis-title{fill:#222;font-size:12px}
svg.plot .note,svg.plot .roof-label{fill:#333;font-size:11px}
footer{color:var(--dim);font-size:12px;padding:12px 28px;border-top:1px solid var(--line)}
"""


def _tool_version() -> str:
    try:
        return version("tile-report")
    except PackageNotFoundError:
        return "0+unknown"


def _box(svg: str | None, missing: str) -> str:
    return f'<div class="plotbox">{svg}</div>' if svg else f'<p class="note">{esc(missing)}</p>'


def _impossible_note(count: int) -> str:
    """Under the plots: what the red-edged marks are, when there are any."""
    if not count:
        return ""
    return (
        f'<p class="bad impossible-note">{ta.check.IMPOSSIBLE} {count} case(s) above a roof of '
        f"this machine by more than their 95% CI, drawn as red-edged diamonds (roofline) or "
        f"bars (bandwidth): {esc(BEYOND)}.</p>"
    )


def _roofline_section(report: ta.Report) -> str:
    colors = kernel_colors(c.kernel for c in report.cases)
    roof = roofline_plot(report, colors, "roofline")
    bars = bandwidth_plot(report, colors, "bandwidth")
    if roof is None and bars is None:
        return ""
    measured = [c for c in report.cases if c.status in ("success", "partial")]
    flopless = sum(1 for c in measured if c.throughput.gbps and not c.throughput.tflops)
    notes: list[str] = []
    if flopless and roof is not None:
        notes.append(
            f"{flopless} case(s) do no FLOPs (copies, or work declared as bytes only): "
            "they have no place on the roofline; their bandwidth is below."
        )
    if len(measured) < len(report.cases):
        notes.append(
            f"{len(report.cases) - len(measured)} case(s) that failed are left out: "
            "a wrong kernel's speed means nothing."
        )
    note = _impossible_note(impossible_count(report))
    note += "".join(f'<p class="note">{esc(n)}</p>' for n in notes)
    return (
        '<section id="roofline"><h2>Roofline</h2>'
        + _box(roof, "No case has both FLOPs and bytes, so there is no roofline to draw.")
        + note
        + "<h3>Bandwidth</h3>"
        + _box(bars, "No case declared the bytes it moves.")
        + "</section>"
    )


def _time_section(run: RunData) -> str:
    total = run_accounting(run.run_accounting, run.accounting)
    if total is None:
        return ""
    colors = _part_colors(run)
    bar = accounting_plot(total, colors, "run-time", label="the run's wall time")
    return (
        f'<section id="time"><h2>Where the time went</h2><div class="plotbox">{bar}</div></section>'
    )


def _part_colors(run: RunData) -> dict[str, str]:
    accs = [a for c in run.report.cases if (a := case_accounting(c, run.accounting.get(c.case_id)))]
    total = run_accounting(run.run_accounting, run.accounting)
    names = part_names([*accs, *([total] if total else [])])
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(names)}


def _held(s: ta.compare.ComparisonSummary) -> str:
    """How the verdicts were held to few false discoveries, where the file says."""
    control = s.false_discoveries
    return "" if control is None else f" ({control.describe()})"


def _comparison_section(doc: ta.compare.ComparisonDoc) -> str:
    s = doc.summary
    rows = [
        [
            f"<code>{esc(r.case_id)}</code>" + (f" ({esc(op)})" if (op := r.op_label()) else ""),
            *map(
                esc,
                r.relative_values()
                or (format_seconds(r.baseline_value), format_seconds(r.current_value)),
            ),
            "–" if r.percent_change is None else f"{r.percent_change:+.1f}%",
            "–"
            if r.ratio_ci_low is None or r.ratio_ci_high is None
            else f"{r.ratio_ci_low:.3f}–{r.ratio_ci_high:.3f}",
            "–" if r.p_value is None else f"{r.p_value:.2g}",
            esc(r.basis or "–"),
            f'<b style="color:{JUDGEMENT_COLORS[r.judgement]}">{esc(r.judgement)}</b>',
            esc("; ".join(x for x in (r.reason, r.config_note()) if x)),
        ]
        for r in sorted_rows(doc)
    ]
    base = doc.baseline
    against = esc(base.label or base.run_id or "baseline")
    if base.git_head:
        against += f" (git {esc(base.git_head[:12])})"
    return (
        f'<section id="comparison"><h2>Comparison</h2><p>Against {against}: '
        f"{s.regression_count} regressions, {s.improvement_count} improvements, "
        f"{s.neutral_count} neutral, {s.inconclusive_count} inconclusive, "
        f"{s.not_comparable_count} not comparable {badge(s.status)}{_held(s)}</p>"
        + _box(comparison_plot(doc, "comparison"), "No case could be compared.")
        + table(
            [
                "case",
                "baseline",
                "current",
                "change",
                "95% CI of ratio",
                "p",
                "basis",
                "verdict",
                "reason",
            ],
            rows,
        )
        + "</section>"
    )


def _history_section(trends: Sequence[Trend]) -> str:
    if not trends:
        return (
            '<section id="history"><h2>History</h2><p class="note">The history holds no '
            "earlier run of these cases on this device.</p></section>"
        )
    parts: list[str] = []
    count = 0
    for group in op_trends(trends):  # the cases of no op, then each op's implementations
        if group.name is not None:
            base = group.baseline
            said = f"baseline <code>{esc(base)}</code>" if base else "no baseline implementation"
            parts.append(f'<h3 class="op">op {esc(group.name)}</h3><p>{len(group.impls)} '
                         f"implementations, {said}</p>")  # fmt: skip
        for t in group.trends:
            count += 1
            parts.append(_trend_part(t, count, in_op=group.name is not None))
    return '<section id="history"><h2>History</h2>' + "".join(parts) + "</section>"


def _trend_part(t: Trend, i: int, *, in_op: bool) -> str:
    """One series' heading, its commits, noise and steps, and its plot."""
    s, fit = t.series, t.fit
    steps = ", ".join(
        f"{st.kind} {st.change * 100:+.1f}% at {fit.points[st.index].label}" for st in fit.steps
    )
    noise = (
        f"noise between runs ±{fit.noise * 100:.1f}%"
        if len(fit.points) >= MIN_POINTS
        else f"fewer than {MIN_POINTS} commits: too few to tell steps from noise"
    )
    impl = ""
    if in_op and s.op is not None:
        impl = f"<code>{esc(s.op.impl)}</code>{' (baseline)' if s.op.baseline else ''}: "
    tag = "h4" if in_op else "h3"
    return (
        f"<{tag}>{impl}<code>{esc(s.case_id)}</code></{tag}><p class=note>{len(fit.points)} "
        f"commits on {esc(s.device if s.device_kind else '?')} ({esc(s.timer or '?')}), "
        f"{noise}; {esc(steps or 'no step')}</p>"
        + _box(trend_plot(fit, f"trend-{i}", title=f"history of {s.case_id}"), "")
    )


def render_html(
    run: RunData,
    *,
    comparison: ta.compare.ComparisonDoc | None = None,
    history: Sequence[Trend] | None = None,
) -> str:
    """The whole report as one self-contained HTML document.

    `comparison` defaults to the run's own comparisons.json; `history` (trends of the run's
    cases) adds a section when given, even an empty one, which then says so.
    """
    report = run.report
    doc = comparison if comparison is not None else run.comparison
    colors = kernel_colors(c.kernel for c in report.cases)
    part_colors = _part_colors(run)
    detailed = detailed_cases(report.cases)
    cases = "".join(
        case_section(
            i,
            report.cases[i],
            color=colors[report.cases[i].kernel],
            accounting=run.accounting.get(report.cases[i].case_id),
            part_colors=part_colors,
            failures=[f for f in report.failures if f.case_id == report.cases[i].case_id],
        )
        for i in detailed
    )
    sections = [
        context_section(run),
        overview_section(report, set(detailed)),
        ops_section(report),
        failures_section(report),
        _comparison_section(doc) if doc is not None else "",
        _history_section(history) if history is not None else "",
        _roofline_section(report),
        _time_section(run),
        _details_section(cases, len(detailed), len(report.cases)) if cases else "",
    ]
    return _document(run, [s for s in sections if s])


def detailed_cases(cases: Sequence[ta.CaseRecord]) -> list[int]:
    """The indexes of the cases that get a section of their own, in plan order: every case
    up to DETAILED_CASES; past that, those that did not succeed first, then the first of the
    rest. A section is about 4 KB of plots: 10,000 of them made a 40 MB page no browser
    shows well, and every case stays in the table above and in report.json."""
    if len(cases) <= DETAILED_CASES:
        return list(range(len(cases)))
    failed = [i for i, c in enumerate(cases) if c.status != "success"][:DETAILED_CASES]
    rest = [i for i, c in enumerate(cases) if c.status == "success"]
    return sorted(failed + rest[: DETAILED_CASES - len(failed)])


def _details_section(cases: str, shown: int, total: int) -> str:
    note = (
        ""
        if shown == total
        else f'<p class="note">{shown} of {total} cases have a section here (those that did '
        "not succeed first); the table above lists every case, and report.json holds each "
        "one's samples.</p>"
    )
    return f'<section id="case-details"><h2>Each case</h2>{note}{cases}</section>'


def _document(run: RunData, sections: Sequence[str]) -> str:
    report = run.report
    title = f"{report.summary.title} · {report.run.status} · {report.device.device_kind or '?'}"
    nav = "".join(
        f'<a href="#{sid}">{name}</a>'
        for sid, name in (
            ("context", "Context"),
            ("cases-table", "Cases"),
            ("implementations", "Implementations"),
            ("failures", "Failures"),
            ("comparison", "Comparison"),
            ("history", "History"),
            ("roofline", "Roofline"),
            ("time", "Time"),
            ("case-details", "Each case"),
        )
        if any(f'id="{sid}"' in s for s in sections)
    )
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f'<meta name="generator" content="tile-report {esc(_tool_version())}">'
        f"<title>{esc(title)}</title><style>{_CSS}</style></head><body>"
        f"<header><h1>{esc(report.summary.title)} {badge(report.run.status)}</h1>"
        f"<p>{esc(report.summary.headline)}</p><nav>{nav}</nav></header>"
        f"<main>{''.join(sections)}</main>"
        f"<footer>tile-report {esc(_tool_version())} · run <code>{esc(report.run.run_id)}</code>"
        f"</footer></body></html>\n"
    )


def write_html(path: str | Path, html: str) -> Path:
    """Write the report through a temp file and a rename: a reader never sees half a page.

    The page honours the umask like every file tile writes (`tile_artifacts.replace_file`); a
    path inside a run or campaign directory is refused (`_refuse_run_directory`).
    """
    target = Path(path)
    _refuse_run_directory(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        ta.replace_file(target, html.encode("utf-8"))
    except OSError as exc:
        raise ReportError(
            f"cannot write the report to `{target}`: {exc.strerror or exc}",
            hint="pick another path with `-o FILE.html`",
        ) from None
    return target


def _refuse_run_directory(target: Path) -> None:
    """Raise ReportError when `target` would land in a run or campaign directory.

    Its manifest lists every file, so a page written there made the run fail `tile
    schema-check`. Any directory tile writes as a run holds `events.jsonl` from its start
    and `artifact_manifest.json` from its first checkpoint; either marks it.
    """
    folder = target.absolute().parent
    for directory in (folder, *folder.parents):
        if (directory / ta.EVENTS_JSONL).is_file() or (directory / ta.MANIFEST_JSON).is_file():
            raise ReportError(
                f"cannot write the report to `{target}`: `{directory}` is a run directory, "
                f"and a file added there makes it fail `tile schema-check`",
                hint="write it outside the run directory, e.g. `-o report.html`",
            )
