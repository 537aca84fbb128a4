"""The text parts of a report: run context with the config's origins, the table of cases,
failures with their bounded tracebacks, and the section of each case."""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence

import tile_artifacts as ta
from tile_protocol.format import format_config, format_seconds
from tile_report._accounting import accounting_plot, case_accounting, kernels_plot
from tile_report._inputs import Accounting, ConfigValue, RunData
from tile_report._roofline import BEYOND
from tile_report._samples import samples_plot
from tile_report._svg import esc

__all__ = [
    "badge",
    "case_anchor",
    "case_section",
    "context_section",
    "failures_section",
    "overview_section",
    "table",
]


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, cls: str = "") -> str:
    """An HTML table; `rows` hold HTML already escaped (so cells may hold links or badges)."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    attr = f' class="{esc(cls)}"' if cls else ""
    return f"<table{attr}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _dl(pairs: Sequence[tuple[str, str | None]]) -> str:
    items = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in pairs if v not in (None, ""))
    return f"<dl>{items}</dl>"


def badge(status: str) -> str:
    """A coloured status word."""
    return f'<span class="badge s-{esc(status)}">{esc(status)}</span>'


def case_anchor(index: int) -> str:
    """The id of the i-th case's section (case ids hold characters ids should not)."""
    return f"case-{index + 1}"


def _num(value: float | None, fmt: str = ".3g", suffix: str = "") -> str:
    return "–" if value is None else f"{value:{fmt}}{suffix}"


# ---------------------------------------------------------------- context


def _timers(report: ta.Report) -> str:
    timers = sorted({c.timer for c in report.cases if c.timer is not None})
    modes = sorted({"cold" if c.cold else "warm" for c in report.cases if c.cold is not None})
    return ", ".join(timers) + (f" · {'/'.join(modes)} L2" if modes else "") if timers else "–"


def _config_table(config: Sequence[ConfigValue]) -> str:
    if not config:
        return "<p class=note>This run directory has no <code>config/resolved_tool.json</code>.</p>"
    ordered = sorted(config, key=lambda c: (c.origin == "default", c.key))
    rows = [
        [
            f"<code>{esc(c.key)}</code>",
            f"<code>{esc(c.value)}</code>",
            f'<span class="{"dim" if c.origin == "default" else "origin"}">{esc(c.origin)}</span>',
        ]
        for c in ordered
    ]
    changed = sum(c.origin != "default" for c in config)
    return (
        f"<details><summary>configuration: {changed} value(s) set, "
        f"{len(config) - changed} default</summary>"
        + table(["key", "value", "origin"], rows, cls="config")
        + "</details>"
    )


def context_section(run: RunData) -> str:
    """Run, source and machine side by side; the resolved config with origins folded below."""
    r = run.report
    ctx, dev, prod = r.context, r.device, r.producer
    git = prod.git_head[:12] if prod.git_head else None
    if git and prod.dirty:
        git += " (uncommitted changes)"
    memory = f"{dev.memory_bytes / 2**30:.1f} GiB" if dev.memory_bytes else None
    left = _dl(
        [
            ("run", r.run.run_id),
            ("status", r.run.status),
            ("reason", r.run.status_reason),
            ("created", r.run.created_at.strftime("%Y-%m-%d %H:%M:%S UTC")),
            ("command", " ".join(ctx.argv[1:]) if ctx.argv else None),
            ("git", git),
            ("tile", prod.tool_version),
            ("timer", _timers(r)),
            ("seed", None if ctx.seed is None else str(ctx.seed)),
        ]
    )
    right = _dl(
        [
            ("device", dev.device_kind),
            ("backend", dev.backend),
            ("devices", None if dev.count is None else str(dev.count)),
            ("memory", memory),
            ("driver", dev.driver),
            ("python", ctx.python),
            ("jax", ctx.jax_version),
            ("jaxlib", ctx.jaxlib_version),
            ("host", ctx.hostname),
            ("platform", ctx.platform),
            ("XLA_FLAGS", ctx.xla_flags),
            ("pinned CPU", None if ctx.pinned_cpu is None else str(ctx.pinned_cpu)),
            ("SLURM job", ctx.slurm_job_id),
        ]
    )
    return (
        '<section id="context"><h2>Context</h2>'
        f'<div class="cols"><div>{left}</div><div>{right}</div></div>'
        f"{_config_table(run.config)}</section>"
    )


# ---------------------------------------------------------------- overview


def _ci_pct(stats: ta.StatsRecord | None) -> str:
    if stats is None or stats.ci_low is None or stats.ci_high is None or not stats.median:
        return "–"
    return f"±{50 * (stats.ci_high - stats.ci_low) / stats.median:.1f}%"


def _check(case: ta.CaseRecord) -> str:
    if case.check is None:
        return "–"
    return '<span class="ok">✓</span>' if case.check.passed else '<span class="bad">✗</span>'


def _rate(c: ta.CaseRecord, roof: ta.check.RoofName) -> str:
    """GB/s or TFLOP/s, with a red `‼` when the case is above that roof by more than its CI."""
    value = c.throughput.gbps if roof == "bandwidth" else c.throughput.tflops
    if ta.check.case_beyond_roof(c, roof) is None:
        return _num(value)
    return f'{_num(value)} <span class="bad impossible" title="{esc(BEYOND)}">{ta.check.IMPOSSIBLE}</span>'


def _impossible_legend(report: ta.Report) -> str:
    """One line under the table saying what `‼` means, when some row has it."""
    marked = sum(1 for c in report.cases if ta.check.case_beyond_roof(c) is not None)
    if not marked:
        return ""
    return (
        f'<p class="note">{ta.check.IMPOSSIBLE} {marked} case(s) above a roof of this machine '
        f"by more than their 95% CI: {esc(BEYOND)}.</p>"
    )


def overview_section(report: ta.Report, detailed: Container[int] | None = None) -> str:
    """One row per case: status, time with its CI, rates, reference, roofline, check; a case
    links to its own section where it has one (`detailed`: the indexes that do; None: all)."""
    rows: list[list[str]] = []
    # A run with tunable kernels shows the values each case ran with and where they came from.
    tuned = any(c.config is not None for c in report.cases)
    for i, c in enumerate(report.cases):
        s, ref = c.stats, c.reference
        rows.append(
            [
                f'<a href="#{case_anchor(i)}"><code>{esc(c.case_id)}</code></a>'
                if detailed is None or i in detailed
                else f"<code>{esc(c.case_id)}</code>",
                *([f"<code>{esc(format_config(c.config))}</code>"] if tuned else []),
                badge(c.status),
                esc(format_seconds(s.median) if s else "–"),
                _ci_pct(s),
                _rate(c, "bandwidth"),
                _rate(c, "compute"),
                esc(format_seconds(ref.stats.median) if ref and ref.stats else "–"),
                _num(ref.speedup if ref else None, ".2f", "×"),
                _num(c.roofline.pct_peak_bw or c.roofline.pct_peak_flops, ".1f", "%"),
                esc(c.roofline.bound),
                _check(c),
            ]
        )
    headers = [
        "case",
        *(["config"] if tuned else []),
        "status",
        "time",
        "±CI",
        "GB/s",
        "TFLOP/s",
        "ref time",
        "speedup",
        "%peak",
        "bound",
        "ok",
    ]
    counts = report.summary.counts
    return (
        f'<section id="cases-table"><h2>Cases</h2><p>{counts.cases} cases: {counts.passed} '
        f"passed, {counts.failed} failed, {counts.skipped} skipped. Times are medians; ±CI is "
        "half the 95% CI of the median.</p>"
        + table(headers, rows, cls="cases")
        + _impossible_legend(report)
        + "</section>"
    )


# ---------------------------------------------------------------- failures


def _failure(f: ta.FailureRecord, *, anchor: bool = True) -> str:
    where = f"<code>{esc(f.case_id)}</code>" if f.case_id else "the run"
    trace = f"<pre>{esc(f.stderr_excerpt)}</pre>" if f.stderr_excerpt else ""
    log = f'<p class="note">full log: <code>{esc(f.stderr_log)}</code></p>' if f.stderr_log else ""
    ident = f' id="{esc(f.failure_id)}"' if anchor else ""
    return (
        f'<div class="failure"{ident}><h3>{esc(f.failure_id)} · {where} · '
        f"{esc(f.phase)} {badge(f.status)}</h3><p><b>{esc(f.exception_type or 'error')}</b>: "
        f"{esc(f.message)}</p>{trace}{log}</div>"
    )


def failures_section(report: ta.Report) -> str:
    """Every failure with its message and the tail of the traceback; empty when none."""
    if not report.failures:
        return ""
    items = "".join(_failure(f) for f in report.failures)
    return f'<section id="failures"><h2>Failures ({len(report.failures)})</h2>{items}</section>'


# ---------------------------------------------------------------- one case


def _check_table(check: ta.CheckRecord) -> str:
    worst = "–" if check.worst_index is None else str(check.worst_index)
    rows = [
        [
            _check_word(check.passed),
            _num(check.max_abs_err),
            _num(check.rel_l2_err),
            _num(check.tol),
            esc(worst),
            esc(check.message or ""),
        ]
    ]
    return table(["check", "max abs err", "rel L2 err", "tol", "worst index", "message"], rows)


def _check_word(passed: bool) -> str:
    return '<span class="ok">passed</span>' if passed else '<span class="bad">failed</span>'


def _phases(p: ta.Phases) -> str:
    hit = {None: "–", True: "hit", False: "miss"}[p.cache_hit]
    rows = [
        [
            esc(format_seconds(p.trace_s)),
            esc(format_seconds(p.lower_s)),
            esc(format_seconds(p.compile_s)),
            esc(hit),
            _num(p.compile_count, "d"),
        ]
    ]
    return table(["trace", "lower", "compile", "compile cache", "compilations"], rows)


def _facts(c: ta.CaseRecord) -> str:
    s = c.stats
    return _dl(
        [
            ("kernel", c.kernel),
            ("params", ", ".join(f"{k}={v}" for k, v in c.params.items())),
            ("timer", c.timer),
            ("mode", None if c.cold is None else ("cold" if c.cold else "warm")),
            ("samples", None if s is None else f"{s.n} (stop: {s.stop_reason or '–'})"),
            (
                "outliers",
                None if s is None else f"{s.outliers_mild} mild, {s.outliers_severe} severe",
            ),
            ("rounds", None if c.round_sizes is None else " + ".join(map(str, c.round_sizes))),
            (
                "processes",
                None if c.process_sizes is None else " + ".join(map(str, c.process_sizes)),
            ),
            ("config", None if c.config is None else format_config(c.config)),
            ("config note", None if c.config is None else c.config.note),
            (
                "work",
                None
                if c.work.source is None
                else f"{_num(c.work.bytes, '.4g')} bytes, {_num(c.work.flops, '.4g')} FLOPs ({c.work.source})",
            ),
            (
                "speedup",
                None
                if c.reference is None or c.reference.speedup is None
                else f"{c.reference.speedup:.3f}× vs reference",
            ),
        ]
    )


def case_section(
    index: int,
    case: ta.CaseRecord,
    *,
    color: str,
    accounting: Accounting | None,
    part_colors: Mapping[str, str],
    failures: Sequence[ta.FailureRecord],
) -> str:
    """A case: facts, sample distribution vs reference, check, compile phases, time split."""
    key = case_anchor(index)
    parts = [_facts(case)]
    plot = samples_plot(case, color, f"{key}-samples")
    if plot is not None:
        parts.append(f'<div class="plotbox">{plot}</div>')
    if case.check is not None:
        parts.append(_check_table(case.check))
    parts.append(_phases(case.phases))
    acc = case_accounting(case, accounting)
    if acc is not None:
        label = "wall time of this case" if accounting is not None else "build phases"
        bar = accounting_plot(acc, part_colors, f"{key}-time", label=label)
        parts.append(f'<div class="plotbox">{bar}</div>')
    if (kernels := kernels_plot(case, f"{key}-kernels")) is not None:
        parts.append(f'<div class="plotbox">{kernels}</div>')
    parts.extend(_failure(f, anchor=False) for f in failures)
    return (
        f'<details class="case" id="{key}" open><summary><code>{esc(case.case_id)}</code> '
        f"{badge(case.status)}</summary>{''.join(parts)}</details>"
    )
