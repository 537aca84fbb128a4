"""Markdown for people: the run summary (`summary.md`) and the comparison table for PRs.

`summary.md` is meant to be pasted into a pull request as it is: its first line says what
the command decided (exit code and why), the comparison against a baseline comes before the
case table when there is one, and every case that failed says why, wrong output included.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Final

from tile_artifacts._documents import ComparisonDoc
from tile_artifacts._kernels import breakdown_lines
from tile_artifacts._models import CaseRecord, Report
from tile_artifacts._ops import ops_markdown
from tile_artifacts._paths import default_description
from tile_artifacts._plausible import IMPOSSIBLE, RoofName, case_beyond_roof
from tile_artifacts._summary_findings import findings_markdown
from tile_protocol.format import (
    MISSING,
    PRECISION_CATEGORY,
    PRECISION_HINT,
    check_failure_reason,
    format_change_ci,
    format_ci_pct,
    format_config,
    format_p,
    format_percent,
    format_rate,
    format_ratio,
    format_seconds,
    missed_precision,
)

__all__ = ["render_comparison_markdown", "render_summary_markdown"]

_JUDGEMENT_ORDER: Final = {
    "regression": 0,
    "improvement": 1,
    "inconclusive": 2,
    "not_comparable": 3,
    "neutral": 4,
}
_JUDGEMENT_MARK: Final = {
    "regression": "🔴 regression",
    "improvement": "🟢 improvement",
    "inconclusive": "⚪ inconclusive",
    "not_comparable": "⚫ not comparable",
    "neutral": "neutral",
}
_FLAG: Final = "⚠"
_CONTROLS: Final = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _cell(text: str) -> str:
    # A pipe ends a table cell even inside a code span in GitHub Markdown.
    return text.replace("|", "\\|").replace("\n", " ")


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


def _number(value: float | None, fmt: str = ".3g") -> str:
    return MISSING if value is None else f"{value:{fmt}}"


def _target(report: Report) -> float | None:
    value = report.configuration.get("target_precision")
    return float(value) if isinstance(value, int | float) else None


def _missed(case: CaseRecord, target: float | None) -> bool:
    s = case.stats
    if s is None:
        return False
    return missed_precision(s.ci_low, s.ci_high, s.median, target, s.stop_reason)


def _ok(case: CaseRecord) -> str:
    if case.check is None:
        return MISSING
    return "✓" if case.check.passed else "✗"


def _speedup(case: CaseRecord) -> str:
    # Correctness gates speed: a wrong kernel gets no speedup.
    if case.reference is None or (case.check is not None and not case.check.passed):
        return MISSING
    return format_ratio(case.reference.speedup)


def _device_line(report: Report) -> str:
    device = report.device
    parts = [device.device_kind or "unknown device"]
    if device.model:
        parts[0] += f": {device.model}"
    details = [d for d in (device.backend, f"×{device.count}" if device.count else None) if d]
    if device.memory_bytes:
        details.append(f"{device.memory_bytes / 2**30:.0f} GiB")
    if details:
        parts.append(f"({', '.join(details)})")
    peaks = device.peaks
    if peaks.bandwidth_gbps is not None:
        parts.append(f"· peak {peaks.bandwidth_gbps:.0f} GB/s ({peaks.source or 'unknown source'})")
    return " ".join(parts)


def _result_line(report: Report) -> list[str]:
    """`**Result: ✗ exit 1** — 3 regressions ...`: what the command decided, first."""
    code = report.summary.exit_code
    if code is None:
        return []
    mark = "✓ passed" if code == 0 else f"✗ failed (exit {code})"
    reason = report.summary.exit_reason
    return [f"**Result: {mark}**" + (f" — {reason}" if reason else ""), ""]


def _kind(report: Report) -> str:
    command = report.configuration.get("command")
    if command in ("bench", "test", "build"):
        return str(command)
    if any(c.stats is not None for c in report.cases):
        return "bench"
    return "test" if any(c.check is not None for c in report.cases) else "build"


def _rate(case: CaseRecord, roof: RoofName) -> str:
    """GB/s or TFLOP/s, marked `‼` when the case is above that roof by more than its CI."""
    value = case.throughput.gbps if roof == "bandwidth" else case.throughput.tflops
    shown = format_rate(value)
    return f"{shown} {IMPOSSIBLE}" if case_beyond_roof(case, roof) is not None else shown


def _impossible_note(report: Report) -> list[str]:
    """The legend of `‼`, once under the table, when some row has it."""
    marked = sum(1 for c in report.cases if case_beyond_roof(c) is not None)
    if not marked:
        return []
    found = any(f.category == "plausibility" for f in report.findings)
    see = "the `plausibility` finding under Findings" if found else "the run's plausibility check"
    return [
        "",
        f"{IMPOSSIBLE} {marked} of {len(report.cases)} cases above a roof of this machine by "
        f"more than their 95% CI: not rates that roof allows (the work counted or the peak "
        f"is wrong, or a warm cache held the data); see {see}.",
    ]


def _config_cells(report: Report) -> tuple[str, str, Callable[[CaseRecord], list[str]]]:
    """The captured and config columns' headers, alignment and cells: `captured from` only
    when a case of the run was captured from a program (`--from`, a cases file), `config` only
    when a case has tunables, so that a run without either keeps its table as it was."""
    head, align = "", ""
    cells: list[Callable[[CaseRecord], str]] = []
    if any(c.captured is not None for c in report.cases):
        head, align = head + " captured from |", align + "---|"
        cells.append(lambda c: f"`{c.captured}`" if c.captured else MISSING)
    if any(c.config is not None for c in report.cases):
        head, align = head + " config |", align + "---|"
        cells.append(lambda c: f"`{format_config(c.config)}`" if c.config else MISSING)
    return head, align, lambda c: [cell(c) for cell in cells]


def _bench_rows(report: Report) -> list[str]:
    target = _target(report)
    head, align, config = _config_cells(report)
    lines = [
        f"| case |{head} status | time | ±CI | GB/s | TFLOP/s | ref time | speedup | ok |",
        f"|---|{align}---|---:|---:|---:|---:|---:|---:|:---:|",
    ]
    for case in report.cases:
        ref = case.reference
        s = case.stats
        ci = MISSING if s is None else format_ci_pct(s.ci_low, s.ci_high, s.median)
        lines.append(
            _row(
                [
                    f"`{case.case_id}`",
                    *config(case),
                    case.status,
                    format_seconds(s.median if s is not None else None),
                    f"{ci} {_FLAG}" if _missed(case, target) else ci,
                    _rate(case, "bandwidth"),
                    _rate(case, "compute"),
                    format_seconds(ref.stats.median if ref and ref.stats else None),
                    _speedup(case),
                    _ok(case),
                ]
            )
        )
    return lines


def _test_rows(report: Report) -> list[str]:
    head, align, config = _config_cells(report)
    lines = [
        f"| case |{head} status | max abs err | rel L2 err | tol | ok |",
        f"|---|{align}---|---:|---:|---:|:---:|",
    ]
    for case in report.cases:
        c = case.check
        errs = [MISSING] * 3 if c is None else [_number(c.max_abs_err), _number(c.rel_l2_err),
                                                _number(c.tol)]  # fmt: skip
        lines.append(_row([f"`{case.case_id}`", *config(case), case.status, *errs, _ok(case)]))
    return lines


def _build_rows(report: Report) -> list[str]:
    lines = ["| case | status | trace | lower | compile |", "|---|---|---:|---:|---:|"]
    for case in report.cases:
        p = case.phases
        times = [format_seconds(v) for v in (p.trace_s, p.lower_s, p.compile_s)]
        lines.append(_row([f"`{case.case_id}`", case.status, *times]))
    return lines


def _cases_section(report: Report) -> list[str]:
    if not report.cases:
        return []
    kind = _kind(report)
    rows = {"bench": _bench_rows, "test": _test_rows, "build": _build_rows}[kind](report)
    lines = ["", "## Cases", "", *rows]
    timers = sorted({c.timer for c in report.cases if c.timer is not None})
    modes = sorted({"cold" if c.cold else "warm" for c in report.cases if c.cold is not None})
    if kind == "bench" and (timers or modes):
        lines += ["", f"Median times; timer: {', '.join(timers) or MISSING}; "
                  f"mode: {', '.join(modes) or MISSING}."]  # fmt: skip
    if kind == "bench":
        lines += _impossible_note(report)
    target = _target(report)
    missed = [c for c in report.cases if _missed(c, target)]
    # tile's findings may say it already, with each case's CI: say it once.
    said = any(f.category == PRECISION_CATEGORY for f in report.findings)
    if kind == "bench" and missed and target is not None and not said:
        stops = sorted({c.stats.stop_reason or "unknown" for c in missed if c.stats})
        lines += [
            "",
            f"{_FLAG} {len(missed)} of {len(report.cases)} cases missed the "
            f"±{target * 100:g}% target precision (stopped by {', '.join(stops)}): "
            f"{PRECISION_HINT}.",
        ]
    return lines


def _kernels_section(report: Report) -> list[str]:
    """Where the time of each multi-kernel case went (the `cupti` timer's breakdown)."""
    lines: list[str] = []
    for case in report.cases:
        rows = breakdown_lines(case.kernels)
        if rows:
            lines += ["", f"`{case.case_id}`:", "", "```", *rows, "```"]
    if not lines:
        return []
    head = "Each device kernel of one call: share of the case's median, median [95% CI]."
    return ["", "## Kernels", "", head, *lines]


def _failures_section(report: Report) -> list[str]:
    lines: list[str] = []
    for failure in report.failures:
        where = f" `{failure.case_id}`" if failure.case_id else ""
        kind = f" {failure.exception_type}:" if failure.exception_type else ""
        log = f" (stderr: `{failure.stderr_log}`)" if failure.stderr_log else ""
        lines.append(
            f"- **{failure.failure_id}**{where} — {failure.status} in {failure.phase}:"
            f"{kind} {_cell(failure.message)}{log}"
        )
    for case in report.cases:
        if case.check is not None and not case.check.passed:
            reason = check_failure_reason(case.check)
            lines.append(f"- `{case.case_id}` — wrong output: {_cell(reason)}")
    return ["", "## Failures", "", *lines] if lines else []


def render_summary_markdown(
    report: Report, manifest_paths: Sequence[str], comparison: ComparisonDoc | None = None
) -> str:
    """Render `summary.md`: result, status, device, comparison, cases, failures, artifacts."""
    run, summary = report.run, report.summary
    producer = report.producer
    version = f"{producer.tool_name} {producer.tool_version}"
    if producer.git_head:
        version += f" @ {producer.git_head[:12]}{' (dirty)' if producer.dirty else ''}"
    counts = summary.counts
    lines = [
        f"# {summary.title}",
        "",
        *_result_line(report),
        f"**Status:** `{run.status}`" + (f" — {run.status_reason}" if run.status_reason else ""),
        "",
        summary.headline,
        "",
        f"- Run: `{run.run_id}` at {run.created_at.strftime('%Y-%m-%d %H:%M:%SZ')} by {version}",
        f"- Device: {_device_line(report)}",
        f"- Cases: {counts.cases} ({counts.passed} passed, {counts.failed} failed, "
        f"{counts.skipped} skipped)",
    ]
    if comparison is not None:
        lines += ["", "## Comparison", "", render_comparison_markdown(comparison).rstrip("\n")]
    lines += _cases_section(report)
    lines += ops_markdown(report)
    lines += _kernels_section(report)
    lines += _failures_section(report)
    lines += findings_markdown(report)
    lines += ["", "## Artifacts", ""]
    for path in manifest_paths:
        description = default_description(path)
        lines.append(f"- `{path}`" + (f" — {description}" if description else ""))
    # Case ids and messages come from user code: an ESC or BEL in summary.md would be obeyed
    # by a terminal that `cat`s it. Each is written as `\x1b`; newlines and tabs stay.
    return _CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", "\n".join(lines) + "\n")


def _held(doc: ComparisonDoc) -> str:
    control = doc.summary.false_discoveries
    return "" if control is None else f"; {control.describe()}"


def render_comparison_markdown(doc: ComparisonDoc) -> str:
    """Render a comparison as one Markdown table (regressions first) and a one-line summary."""
    s = doc.summary
    base = doc.baseline.label or doc.baseline.run_id or "baseline"
    cur = doc.current.label or doc.current.run_id or "current"
    confidence = (1 - doc.thresholds.alpha) * 100
    basis = f", basis {doc.thresholds.basis}" if doc.thresholds.basis else ""
    lines = [
        f"**{doc.thresholds.metric}: {s.regression_count} regression(s), "
        f"{s.improvement_count} improvement(s), {s.neutral_count} neutral, "
        f"{s.inconclusive_count} inconclusive, {s.not_comparable_count} not comparable** "
        f"(`{cur}` vs `{base}`; noise floor ±{doc.thresholds.noise_floor_pct:g}%, "
        f"α = {doc.thresholds.alpha:g}{basis}{_held(doc)})",
        "",
        f"| case | baseline | current | change | {confidence:g}% CI of change | p | basis "
        "| judgement |",
        "|---|---:|---:|---:|---:|---:|---|---|",
    ]
    rows = sorted(doc.rows, key=lambda r: (_JUDGEMENT_ORDER[r.judgement], r.case_id))
    for row in rows:
        value = format_seconds if row.unit == "s" else _number
        judgement = _JUDGEMENT_MARK[row.judgement]
        if row.reason and row.judgement in ("inconclusive", "not_comparable"):
            judgement += f" ({row.reason})"
        if (changed := row.config_note()) is not None:
            judgement += f"; {changed}"
        shown = row.relative_values() or (value(row.baseline_value), value(row.current_value))
        label = row.op_label()
        cells = [
            f"`{row.case_id}`" + (f" ({label})" if label else ""),
            *shown,
            format_percent(row.percent_change, signed=True),
            format_change_ci(row.ratio_ci_low, row.ratio_ci_high),
            format_p(row.p_value),
            row.basis or MISSING,
            judgement,
        ]
        lines.append(_row(cells))
    return "\n".join(lines) + "\n"
