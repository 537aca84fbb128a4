"""What `tile campaign plan|run` print: selectors, units with estimates, budget, variant table.

Tables go to stdout (data); what each selector matched, the budget and progress go to stderr.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from rich import box
from rich.table import Table
from rich.text import Text

import tile_artifacts as ta
from tile_cli.terminal._layout import emit, refit
from tile_protocol.format import format_duration as fmt_duration

if TYPE_CHECKING:
    from rich.console import Console

__all__ = [
    "fmt_duration",
    "render_over_budget",
    "render_plan",
    "render_report",
    "render_selectors",
]

_TOP = 5


def _table(title: str | None, columns: list[str], plain: bool) -> Table:
    table = Table(
        title=title,
        box=None if plain else box.SIMPLE_HEAD,
        header_style="bold",
        title_justify="left",
        pad_edge=False,
    )
    for i, name in enumerate(columns):
        table.add_column(name, justify="left" if i == 0 else "right", overflow="fold")
    return table


def render_selectors(err: Console, plan: ta.campaign.CampaignPlan) -> None:
    """One line per selector: what it matched (a selector matching nothing never gets here)."""
    for match in plan.selectors:
        kernels = ", ".join(match.kernels[:4]) + (" ..." if len(match.kernels) > 4 else "")
        err.print(
            f"{match.kind} `{match.selector}` ({match.where}): {match.case_count} cases of "
            f"{len(match.kernels)} kernel(s): {kernels}",
            markup=False,
            style="dim",
        )


def _bases(unit: ta.campaign.PlannedUnit) -> str:
    counts = Counter(c.basis for c in unit.cases)
    order = ("seen", "seen_other_settings", "guess", "default")
    return ", ".join(f"{counts[b]} {b.replace('_', ' ')}" for b in order if counts[b])


def render_plan(out: Console, err: Console, plan: ta.campaign.CampaignPlan) -> None:
    """The units with their estimates, then the total against the budget."""
    plain = not out.is_terminal
    title = f"campaign {plan.campaign}" + (" (smoke)" if plan.smoke else "")
    table = _table(
        title, ["unit", "cases", "device", "start", "cases", "other", "estimate", "based on"], plain
    )
    for unit in plan.units:
        e = unit.estimate
        table.add_row(
            Text(unit.unit_id),
            str(len(unit.case_ids)),
            unit.device_kind or "?",
            fmt_duration(e.start_s),
            fmt_duration(e.cases_s),
            fmt_duration(e.overhead_s),
            fmt_duration(e.total_s),
            _bases(unit),
        )
    emit(out, *refit(table, out))
    b = plan.budget
    limit = f" of {fmt_duration(b.wall_time_s)}" if b.wall_time_s is not None else ""
    cases = f" of {b.max_cases}" if b.max_cases is not None else ""
    err.print(
        f"{len(plan.units)} units ({len(plan.variants)} variants x {len(plan.machines)} "
        f"machines), {b.case_runs}{cases} case runs, estimated {fmt_duration(b.estimated_s)}"
        f"{limit}; baseline variant `{plan.baseline_variant}`",
        markup=False,
    )
    err.print(f"estimate: {plan.estimate_method}", markup=False, style="dim")


def render_over_budget(err: Console, plan: ta.campaign.CampaignPlan) -> None:
    """Why the plan is over budget, and where the time goes (the top units and cases)."""
    for reason in plan.budget.reasons:
        err.print(f"over budget: {reason}", markup=False, style="red")
    units = sorted(plan.units, key=lambda u: u.estimate.total_s, reverse=True)[:_TOP]
    err.print("top units:", markup=False)
    for unit in units:
        err.print(f"  {fmt_duration(unit.estimate.total_s):>9}  {unit.unit_id}", markup=False)
    cases = sorted(
        ((c.seconds, u.unit_id, c.case_id) for u in plan.units for c in u.cases), reverse=True
    )[:_TOP]
    err.print("top cases:", markup=False)
    for seconds, unit_id, case_id in cases:
        err.print(f"  {fmt_duration(seconds):>9}  {case_id} in {unit_id}", markup=False)


def render_report(out: Console, report: ta.campaign.CampaignReport) -> None:
    """Units (estimated vs actual), then case x variant: the baseline's median, others' ratio."""
    plain = not out.is_terminal
    units = _table("units", ["unit", "status", "attempts", "estimated", "actual", "error"], plain)
    for unit in (u for u in report.units if u.in_plan):
        error = "-" if unit.error_pct is None else f"{unit.error_pct:+.0f}%"
        units.add_row(
            Text(unit.unit_id),
            unit.status,
            str(len(unit.attempts)),
            fmt_duration(unit.estimate.total_s if unit.estimate else None),
            fmt_duration(unit.actual.total_s if unit.actual else None),
            error,
        )
    acc = report.accounting
    if acc.units_measured:
        error = "-" if acc.error_pct is None else f"{acc.error_pct:+.0f}%"
        units.add_row(
            Text("total"), "", "", fmt_duration(acc.estimated_s), fmt_duration(acc.actual_s), error
        )
    emit(out, *refit(units, out))
    if not report.table:
        return
    variants = [c.variant for c in report.table[0].cells]
    machines = len({row.machine for row in report.table}) > 1
    # A kernel with tunables: the configuration each case ran with (a variant that ran another
    # one says so in its cell).
    tuned = any(c.config is not None for row in report.table for c in row.cells)
    head = ["case", *(["machine"] if machines else []), *(["config"] if tuned else []), *variants]
    table = _table(f"variants against `{report.baseline_variant}`", head, plain)
    for row in report.table:
        config, added = ta.campaign.row_configs(row)
        cells = [ta.campaign.verdict_text(c, marks=False) + more
                 for c, more in zip(row.cells, added, strict=True)]  # fmt: skip
        shown = [Text(config or "-")] if tuned else []
        table.add_row(Text(row.case_id), *([row.machine] if machines else []), *shown, *cells)
    emit(out, *refit(table, out))
