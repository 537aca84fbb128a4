"""The campaign report (`campaign.json`): units and attempts from disk, estimated against actual
time, and every variant compared with the baseline variant by tile compare's statistics.

Everything here is rebuilt from the campaign directory (unit run directories, the campaign's
`commands/commands.jsonl`) and the current plan, so a report written after a kill and a resume
is the same as one written in one go.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TypeAlias

import tile_artifacts as ta
from tile_harness.campaign._units import AttemptState, Inspector, verdict
from tile_protocol.format import format_seconds

__all__ = ["Launched", "Result", "compare_variants", "read_launches", "summarize", "unit_records"]


@dataclass(frozen=True)
class Launched:
    """A unit attempt's `tile bench` process, as `commands/commands.jsonl` recorded it, and
    the estimate it started with (`events.jsonl`, `unit_started`)."""

    exit_code: int | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    wall_s: float | None = None
    estimate: ta.campaign.TimeSplit | None = None


@dataclass(frozen=True)
class Result:
    """The attempt that is a unit's result, with its report."""

    unit_id: str
    path: str
    report: ta.Report


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []


def _estimates(campaign_dir: Path) -> dict[str, ta.campaign.TimeSplit]:
    """The estimate each attempt started with, by command id, from `unit_started` events."""
    found: dict[str, ta.campaign.TimeSplit] = {}
    for line in _lines(campaign_dir / ta.EVENTS_JSONL):
        try:
            event = ta.EventRecord.model_validate_json(line)
            if event.event == "unit_started":
                estimate = ta.campaign.TimeSplit.model_validate(event.fields.get("estimate"))
                found[str(event.fields.get("command_id"))] = estimate
        except ValueError:
            continue
    return found


def read_launches(campaign_dir: Path) -> dict[str, Launched]:
    """Every recorded attempt by command id (`UNIT/attempt-N`); unreadable lines are skipped."""
    estimates = _estimates(campaign_dir)
    launches = {key: Launched(estimate=value) for key, value in estimates.items()}
    for line in _lines(campaign_dir / ta.COMMANDS_JSONL):
        try:
            record = ta.CommandRecord.model_validate_json(line)
        except ValueError:
            continue
        launches[record.command_id] = Launched(
            record.return_code,
            record.started_at,
            record.finished_at,
            record.wall_time_s,
            estimates.get(record.command_id),
        )
    return launches


def _actual(report: ta.Report, wall_s: float | None, shards: int) -> ta.campaign.TimeSplit | None:
    """A result's wall time split like an estimate: start-up, cases over shards, the rest."""
    timing = report.timing
    total = wall_s if wall_s is not None else timing.wall_s if timing is not None else None
    if timing is None or total is None:
        return None
    cases = timing.parts.total_s / max(1, min(shards, len(report.cases) or 1))
    start = timing.runner_start_s
    return ta.campaign.TimeSplit(
        start_s=start, cases_s=cases, overhead_s=max(0.0, total - start - cases), total_s=total
    )


def _attempt(
    state: AttemptState,
    unit: ta.campaign.PlannedUnit | None,
    launched: Launched | None,
    shards: int,
    redactor: ta.Redactor,
) -> ta.campaign.AttemptRecord:
    judged = verdict(state, unit, redactor)
    report = state.report
    wall = launched.wall_s if launched else None
    return ta.campaign.AttemptRecord(
        attempt=state.number,
        path=state.path,
        log=state.log,
        run_id=report.run.run_id if report else None,
        status=judged.status,
        status_reason=judged.reason,
        complete=state.complete,
        done=judged.done,
        matches_plan=judged.matches_plan,
        manifest_sha256=state.manifest_sha256 if state.complete else None,
        device_kind=report.device.device_kind if report else None,
        exit_code=launched.exit_code if launched else None,
        started_at=launched.started_at if launched else None,
        finished_at=launched.finished_at if launched else None,
        wall_s=wall,
        estimate=launched.estimate if launched else None,
        actual=_actual(report, wall, shards) if report and judged.done else None,
    )


def _unit(
    unit_id: str,
    planned: ta.campaign.PlannedUnit | None,
    states: list[AttemptState],
    launches: Mapping[str, Launched],
    redactor: ta.Redactor,
) -> ta.campaign.UnitRecord:
    shards = planned.shards if planned else 1
    attempts = [
        _attempt(s, planned, launches.get(f"{unit_id}/attempt-{s.number}"), shards, redactor)
        for s in states
    ]
    done = [a for a in attempts if a.done]
    result = done[-1] if done else None
    shown = result or (attempts[-1] if attempts else None)
    # What the plan expected when the result started: a later plan learns from the result.
    estimate = (result.estimate if result else None) or (planned.estimate if planned else None)
    actual = result.actual if result else None
    error = None
    if estimate is not None and actual is not None and estimate.total_s > 0:
        error = (actual.total_s - estimate.total_s) / estimate.total_s * 100
    variant, _, machine = unit_id.rpartition("@")
    return ta.campaign.UnitRecord(
        unit_id=unit_id,
        variant=planned.variant if planned else variant,
        machine=planned.machine if planned else machine,
        in_plan=planned is not None,
        case_count=len(planned.case_ids) if planned else 0,
        status=shown.status if shown else "skipped",
        status_reason=shown.status_reason if shown else "not run yet",
        result_attempt=result.attempt if result else None,
        estimate=estimate,
        actual=actual,
        error_pct=error,
        attempts=attempts,
    )


def unit_records(
    plan: ta.campaign.CampaignPlan, inspector: Inspector
) -> tuple[list[ta.campaign.UnitRecord], dict[str, Result]]:
    """Every planned unit, then every other unit found on disk; and each unit's result."""
    launches = read_launches(inspector.campaign_dir)
    planned = {u.unit_id: u for u in plan.units}
    ids = [*planned, *(u for u in inspector.unit_ids() if u not in planned)]
    records: list[ta.campaign.UnitRecord] = []
    results: dict[str, Result] = {}
    for unit_id in ids:
        states = inspector.attempts(unit_id)
        record = _unit(unit_id, planned.get(unit_id), states, launches, inspector.redactor)
        records.append(record)
        by_number = {s.number: s for s in states}
        if record.result_attempt is not None and record.in_plan:
            state = by_number[record.result_attempt]
            assert state.report is not None
            results[unit_id] = Result(unit_id, state.path, state.report)
    return records, results


def _cells(
    case_id: str,
    variants: list[str],
    machine: str,
    results: Mapping[str, Result],
    rows: Mapping[tuple[str, str], ta.compare.ComparisonRow],
) -> list[ta.campaign.VariantCell]:
    cells: list[ta.campaign.VariantCell] = []
    for variant in variants:
        result = results.get(f"{variant}@{machine}")
        case = (
            next((c for c in result.report.cases if c.case_id == case_id), None) if result else None
        )
        median = case.stats.median if case is not None and case.stats is not None else None
        row = rows.get((variant, case_id))
        cells.append(
            ta.campaign.VariantCell(
                variant=variant,
                status=case.status if case is not None else None,
                median_s=median,
                ratio=row.ratio if row else None,
                ratio_ci_low=row.ratio_ci_low if row else None,
                ratio_ci_high=row.ratio_ci_high if row else None,
                judgement=row.judgement if row else None,
                reason=row.reason if row else None,
                config=case.config if case is not None else None,
            )
        )
    return cells


_Compared: TypeAlias = tuple[
    dict[str, ta.compare.ComparisonDoc],
    list[ta.campaign.ComparisonRef],
    list[ta.campaign.VariantRow],
]
"""A campaign's comparisons by path, their references and the case x variant table."""


def compare_variants(
    plan: ta.campaign.CampaignPlan,
    results: Mapping[str, Result],
    *,
    noise_floor_pct: float,
    alpha: float,
) -> _Compared:
    """Each variant against the baseline variant, machine by machine, case by case.

    Absolute times: a variant changes how kernel and reference alike are run (cold caches, an
    XLA flag), which a ratio to the reference would divide out. Warm against cold is judged,
    not refused, because that difference is what the campaign asked about.
    """
    base_name = plan.baseline_variant
    docs: dict[str, ta.compare.ComparisonDoc] = {}
    refs: list[ta.campaign.ComparisonRef] = []
    table: list[ta.campaign.VariantRow] = []
    variants = [base_name, *(v for v in plan.variants if v != base_name)]
    for machine in plan.machines:
        base = results.get(f"{base_name}@{machine}")
        rows: dict[tuple[str, str], ta.compare.ComparisonRow] = {}
        for variant in variants[1:]:
            cur = results.get(f"{variant}@{machine}")
            if base is None or cur is None:
                continue
            doc = ta.compare.compare_runs(
                base.report,
                cur.report,
                noise_floor_pct=noise_floor_pct,
                alpha=alpha,
                basis="absolute",
                variants=True,
                baseline_label=base.unit_id,
                current_label=cur.unit_id,
                baseline_path=f"{base.path}/{ta.REPORT_JSON}",
                current_path=f"{cur.path}/{ta.REPORT_JSON}",
                producer=plan.producer,
            )
            path = f"comparisons/{variant}-vs-{base_name}@{machine}.json"
            docs[path] = doc
            refs.append(
                ta.campaign.ComparisonRef(
                    machine=machine,
                    variant=variant,
                    baseline=base_name,
                    path=path,
                    **doc.summary.model_dump(exclude={"false_discoveries"}),
                )
            )
            rows |= {(variant, r.case_id): r for r in doc.rows}
        if not any(f"{v}@{machine}" in results for v in variants):
            continue
        unit = next(u for u in plan.units if u.machine == machine)
        for case_id in unit.case_ids:
            cells = _cells(case_id, variants, machine, results, rows)
            table.append(ta.campaign.VariantRow(machine=machine, case_id=case_id, cells=cells))
    return docs, refs, table


def summarize(
    units: list[ta.campaign.UnitRecord], plan: ta.campaign.CampaignPlan, interrupted: str | None
) -> tuple[ta.campaign.CampaignSummary, ta.campaign.CampaignAccounting]:
    """The campaign's status and headline, and its estimated against actual time."""
    planned = [u for u in units if u.in_plan]
    done = [u for u in planned if u.result_attempt is not None]
    tried = [u for u in planned if u.attempts and u.result_attempt is None]
    measured = [u for u in done if u.estimate is not None and u.actual is not None]
    estimated = sum(u.estimate.total_s for u in measured if u.estimate)
    actual = sum(u.actual.total_s for u in measured if u.actual)
    error = (actual - estimated) / estimated * 100 if estimated > 0 else None
    accounting = ta.campaign.CampaignAccounting(
        units_measured=len(measured),
        estimated_s=estimated,
        actual_s=actual,
        error_pct=error,
        planned_s=plan.budget.estimated_s,
    )
    status: ta.Status
    if interrupted is not None:
        status = "interrupted"
    elif len(done) == len(planned) and all(u.status == "success" for u in done):
        status = "success"
    elif done:
        status = "partial"
    else:
        status = "failed" if tried else "skipped"
    parts = [f"{len(planned)} units", f"{len(done)} done"]
    if tried:
        parts.append(f"{len(tried)} without a result")
    if len(planned) - len(done) - len(tried):
        parts.append(f"{len(planned) - len(done) - len(tried)} not run")
    if measured:
        parts.append(
            f"estimated {format_seconds(estimated)}, took {format_seconds(actual)}"
            + (f" ({error:+.0f}%)" if error is not None else "")
        )
    headline = ", ".join(parts) + (f"; {interrupted}" if interrupted else "")
    counts = ta.campaign.CampaignCounts(
        units=len(planned),
        done=len(done),
        failed=len(tried),
        not_run=len(planned) - len(done) - len(tried),
    )
    title = f"tile campaign {plan.campaign}" + (" (smoke)" if plan.smoke else "")
    return ta.campaign.CampaignSummary(
        title=title, status=status, headline=headline, counts=counts
    ), (accounting)
