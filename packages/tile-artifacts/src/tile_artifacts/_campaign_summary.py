"""Markdown for a campaign's `summary.md`: units with estimated vs actual time, and the
case x variant table of verdicts against the baseline variant."""

from __future__ import annotations

from typing import Final

from tile_artifacts._campaign import (
    CampaignReport,
    ComparisonRef,
    UnitRecord,
    VariantCell,
    VariantRow,
)
from tile_protocol.format import MISSING, format_config, format_seconds

__all__ = ["render_campaign_markdown", "row_configs", "verdict_text"]

# A variant is not a regression of the baseline: it is slower or faster than it, on purpose.
_WORD: Final = {
    "regression": "slower",
    "improvement": "faster",
    "inconclusive": "inconclusive",
    "not_comparable": "not comparable",
    "neutral": "same",
}
_MARK: Final = {
    "regression": "🔴 ",
    "improvement": "🟢 ",
    "inconclusive": "⚪ ",
    "not_comparable": "⚫ ",
}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def verdict_text(cell: VariantCell, *, marks: bool = True) -> str:
    """`1.23x 🔴 slower` for a compared cell (`marks=False`: no emoji), the median for the
    baseline, `–` for nothing."""
    if cell.judgement is None:
        return format_seconds(cell.median_s) if cell.median_s is not None else MISSING
    ratio = f"{cell.ratio:.3g}x " if cell.ratio is not None else ""
    mark = _MARK.get(cell.judgement, "") if marks else ""
    return f"{ratio}{mark}{_WORD[cell.judgement]}"


def row_configs(row: VariantRow) -> tuple[str | None, list[str]]:
    """A case's configuration as the variant tables show it: the one its baseline variant ran
    with (else the first variant's that recorded one; None: no tunables), and for each cell
    what to add to it: ` · VALUES (SOURCE)` where that variant ran another configuration."""
    configs = [c.config for c in row.cells]
    shown = next((c for c in configs if c is not None), None)
    if shown is None:
        return None, ["" for _ in configs]
    said = format_config(shown)
    added = [
        "" if c is None or format_config(c) == said else f" · {format_config(c)}" for c in configs
    ]
    return said, added


def _counts(ref: ComparisonRef) -> str:
    counts = (
        (ref.regression_count, "slower"),
        (ref.improvement_count, "faster"),
        (ref.neutral_count, "same"),
        (ref.inconclusive_count, "inconclusive"),
        (ref.not_comparable_count, "not comparable"),
    )
    return ", ".join(f"{n} {word}" for n, word in counts if n) or "no cases"


def _error(unit: UnitRecord) -> str:
    return MISSING if unit.error_pct is None else f"{unit.error_pct:+.0f}%"


def _units(report: CampaignReport) -> list[str]:
    lines = [
        "| unit | cases | status | attempts | estimated | actual | error |",
        "|---|---:|---|---:|---:|---:|---:|",
    ]
    for unit in report.units:
        if not unit.in_plan:
            continue
        estimate = unit.estimate.total_s if unit.estimate else None
        actual = unit.actual.total_s if unit.actual else None
        lines.append(
            f"| `{_cell(unit.unit_id)}` | {unit.case_count} | {unit.status} | "
            f"{len(unit.attempts)} | {format_seconds(estimate)} | {format_seconds(actual)} | "
            f"{_error(unit)} |"
        )
    acc = report.accounting
    if acc.units_measured:
        error = MISSING if acc.error_pct is None else f"{acc.error_pct:+.0f}%"
        lines.append(
            f"| **total** ({acc.units_measured} measured) | | | | "
            f"{format_seconds(acc.estimated_s)} | {format_seconds(acc.actual_s)} | {error} |"
        )
    return lines


def _table(report: CampaignReport) -> list[str]:
    if not report.table:
        return ["No case was measured by two variants yet."]
    variants = [c.variant for c in report.table[0].cells]
    machines = {row.machine for row in report.table}
    tuned = any(c.config is not None for row in report.table for c in row.cells)
    head = ["case", *([] if len(machines) == 1 else ["machine"]), *(["config"] if tuned else []),
            *variants]  # fmt: skip
    lines = [
        "| " + " | ".join(f"`{_cell(h)}`" if h in variants else h for h in head) + " |",
        "|" + "---|" * len(head),
    ]
    for row in report.table:
        config, added = row_configs(row)
        cells = [_cell(verdict_text(c) + more) for c, more in zip(row.cells, added, strict=True)]
        where = [] if len(machines) == 1 else [row.machine]
        shown = [f"`{_cell(config)}`" if config else MISSING] if tuned else []
        lines.append("| " + " | ".join([f"`{_cell(row.case_id)}`", *where, *shown, *cells]) + " |")
    return lines


def render_campaign_markdown(report: CampaignReport) -> str:
    """The campaign's summary.md: status, units (estimated vs actual) and the variant table."""
    summary = report.summary
    acc = report.accounting
    lines = [
        f"# {summary.title}",
        "",
        f"**{summary.status}**: {summary.headline}",
        "",
        f"- campaign `{report.campaign}`" + (f" from `{report.source}`" if report.source else ""),
        f"- run `{report.run.run_id}`, created {report.run.created_at:%Y-%m-%dT%H:%M:%SZ}",
        f"- smoke mode: {'yes' if report.smoke else 'no'}",
        f"- baseline variant: `{report.baseline_variant}`",
    ]
    if report.budget.wall_time_s is not None:
        lines.append(f"- wall-time budget: {format_seconds(report.budget.wall_time_s)}")
    if acc.invocation_wall_s is not None:
        lines.append(f"- last `tile campaign run` took {format_seconds(acc.invocation_wall_s)}")
    lines += ["", "## Units: estimated against actual wall time", "", *_units(report)]
    lines += [
        "",
        f"## Cases by variant (ratio to `{report.baseline_variant}`, from tile compare)",
        "",
        *_table(report),
    ]
    if report.comparisons:
        lines += ["", "## Comparisons", ""]
        lines += [
            f"- `{c.variant}` against `{c.baseline}` on `{c.machine}`: `{c.path}` ({_counts(c)})"
            for c in report.comparisons
        ]
    return "\n".join(lines) + "\n"
