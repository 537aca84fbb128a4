"""Markdown for people: the run summary (`summary.md`) and the comparison table for PRs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from tile_artifacts._documents import ComparisonDoc
from tile_artifacts._models import CaseRecord, Report
from tile_artifacts._paths import default_description
from tile_artifacts._summary_findings import findings_markdown

__all__ = ["format_seconds", "render_comparison_markdown", "render_summary_markdown"]

_DASH: Final = "–"
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


def format_seconds(seconds: float | None) -> str:
    """Format a duration with a unit that keeps 3-4 significant digits (s, ms, µs, ns)."""
    if seconds is None:
        return _DASH
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if abs(seconds) >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def _cell(text: str) -> str:
    # A pipe ends a table cell even inside a code span in GitHub Markdown.
    return text.replace("|", "\\|").replace("\n", " ")


def _number(value: float | None, fmt: str = ".4g", suffix: str = "") -> str:
    return _DASH if value is None else f"{value:{fmt}}{suffix}"


def _ci_pct(case: CaseRecord) -> str:
    stats = case.stats
    if stats is None or stats.ci_low is None or stats.ci_high is None or stats.median == 0:
        return _DASH
    return f"±{(stats.ci_high - stats.ci_low) / 2 / stats.median * 100:.1f}%"


def _ok(case: CaseRecord) -> str:
    if case.check is None:
        return _DASH
    return "✓" if case.check.passed else "✗"


def _speedup(case: CaseRecord) -> str:
    # Correctness gates speed: a wrong kernel gets no speedup.
    if case.reference is None or (case.check is not None and not case.check.passed):
        return _DASH
    return _number(case.reference.speedup, ".2f", "×")


def _device_line(report: Report) -> str:
    device = report.device
    parts = [device.device_kind or "unknown device"]
    details = [d for d in (device.backend, f"×{device.count}" if device.count else None) if d]
    if device.memory_bytes:
        details.append(f"{device.memory_bytes / 2**30:.0f} GiB")
    if details:
        parts.append(f"({', '.join(details)})")
    peaks = device.peaks
    if peaks.bandwidth_gbps is not None:
        parts.append(f"· peak {peaks.bandwidth_gbps:.0f} GB/s ({peaks.source or 'unknown source'})")
    return " ".join(parts)


def render_summary_markdown(report: Report, manifest_paths: Sequence[str]) -> str:
    """Render `summary.md`: status, device, headline table, failures and the artifact map."""
    run, summary = report.run, report.summary
    producer = report.producer
    version = f"{producer.tool_name} {producer.tool_version}"
    if producer.git_head:
        version += f" @ {producer.git_head[:12]}{' (dirty)' if producer.dirty else ''}"
    counts = summary.counts
    lines = [
        f"# {summary.title}",
        "",
        f"**Status:** `{run.status}`" + (f" — {run.status_reason}" if run.status_reason else ""),
        "",
        summary.headline,
        "",
        f"- Run: `{run.run_id}` at {run.created_at.strftime('%Y-%m-%d %H:%M:%SZ')} by {version}",
        f"- Device: {_device_line(report)}",
        f"- Cases: {counts.cases} ({counts.passed} passed, {counts.failed} failed, "
        f"{counts.skipped} skipped)",
    ]
    if report.cases:
        lines += [
            "",
            "## Cases",
            "",
            "| case | status | time | ±CI | GB/s | TFLOP/s | ref time | speedup | ok |",
            "|---|---|---:|---:|---:|---:|---:|---:|:---:|",
        ]
        for case in report.cases:
            ref = case.reference
            ref_time = ref.stats.median if ref is not None and ref.stats is not None else None
            median = case.stats.median if case.stats is not None else None
            cells = [
                f"`{case.case_id}`",
                case.status,
                format_seconds(median),
                _ci_pct(case),
                _number(case.throughput.gbps, ".1f"),
                _number(case.throughput.tflops, ".2f"),
                format_seconds(ref_time),
                _speedup(case),
                _ok(case),
            ]
            lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
        timers = sorted({c.timer for c in report.cases if c.timer is not None})
        modes = sorted({"cold" if c.cold else "warm" for c in report.cases if c.cold is not None})
        if timers or modes:
            lines += [
                "",
                f"Median times; timer: {', '.join(timers) or _DASH}; "
                f"mode: {', '.join(modes) or _DASH}.",
            ]
    if report.failures:
        lines += ["", "## Failures", ""]
        for failure in report.failures:
            where = f" `{failure.case_id}`" if failure.case_id else ""
            kind = f" {failure.exception_type}:" if failure.exception_type else ""
            log = f" (stderr: `{failure.stderr_log}`)" if failure.stderr_log else ""
            lines.append(
                f"- **{failure.failure_id}**{where} — {failure.status} in {failure.phase}:"
                f"{kind} {_cell(failure.message)}{log}"
            )
    lines += findings_markdown(report)
    lines += ["", "## Artifacts", ""]
    for path in manifest_paths:
        description = default_description(path)
        lines.append(f"- `{path}`" + (f" — {description}" if description else ""))
    return "\n".join(lines) + "\n"


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
        f"α = {doc.thresholds.alpha:g}{basis})",
        "",
        f"| case | baseline | current | change | {confidence:g}% CI of ratio | p | basis "
        "| judgement |",
        "|---|---:|---:|---:|---:|---:|---|---|",
    ]
    rows = sorted(doc.rows, key=lambda r: (_JUDGEMENT_ORDER[r.judgement], r.case_id))
    for row in rows:
        seconds = row.unit == "s"
        value = format_seconds if seconds else _number
        ci = (
            f"{row.ratio_ci_low:.3f}–{row.ratio_ci_high:.3f}"
            if row.ratio_ci_low is not None and row.ratio_ci_high is not None
            else _DASH
        )
        judgement = _JUDGEMENT_MARK[row.judgement]
        if row.reason and row.judgement in ("inconclusive", "not_comparable"):
            judgement += f" ({row.reason})"
        cells = [
            f"`{row.case_id}`",
            value(row.baseline_value),
            value(row.current_value),
            _number(row.percent_change, "+.1f", "%"),
            ci,
            _number(row.p_value, ".3g"),
            row.basis or _DASH,
            judgement,
        ]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"
