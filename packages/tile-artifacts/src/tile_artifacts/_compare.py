"""Statistical comparison of two runs (`tile compare`): the comparison document.

Each case present on both sides gets its evidence from `compare_row` (the rule is
`_compare_rows`'s docstring); this module checks the settings, pairs the cases, holds the
run's false discoveries in check (each case judged by its p-value adjusted over the run's cases,
Benjamini-Hochberg; `summary.false_discoveries` says so) and sums up the verdicts.

Summary status: `failed` with any regression, else `skipped` with no rows, else `partial` with
any inconclusive or not_comparable row, else `success`.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import replace
from datetime import datetime
from typing import Final, get_args

import tile_stats
from tile_artifacts._base import (
    BasisSetting,
    DeviceRecord,
    Producer,
    RunInfo,
    Status,
    utc_now,
)
from tile_artifacts._compare_noise import (
    MIN_SAMPLES,
    judge,
)
from tile_artifacts._compare_rows import (
    Pending,
    Settings,
    compare_row,
    finish_row,
    one_sided,
    run_priors,
)
from tile_artifacts._compare_series import (
    MIN_ROUNDS,
    MIN_RUNS,
    case_series,
    paired,
    pinned,
)
from tile_artifacts._documents import (
    Baseline,
    ComparisonDoc,
    ComparisonSide,
    ComparisonSummary,
    FalseDiscoveryControl,
    Thresholds,
)
from tile_artifacts._errors import ArtifactError
from tile_artifacts._kernels import attribute_rows
from tile_artifacts._models import Report
from tile_artifacts._provenance import new_run_id
from tile_artifacts._records import ComparisonRow

__all__ = [
    "COMPARABLE_METRICS",
    "MIN_ROUNDS",
    "MIN_RUNS",
    "MIN_SAMPLES",
    "compare_runs",
    "judge",
]

# Metrics with raw samples behind them; both are times, so a higher ratio is worse.
COMPARABLE_METRICS: Final = ("time_s", "ref_time_s")


def _side(run: Report | Baseline, label: str | None, path: str | None) -> ComparisonSide:
    return ComparisonSide(
        label=label if label is not None or isinstance(run, Report) else run.label,
        report_path=path,
        run_id=run.run.run_id,
        git_head=run.producer.git_head,
        device=run.device,
    )


def _summary_status(counts: Counter[str], rows: int) -> Status:
    # failed: any regression; skipped: nothing to compare; partial: some row not judged.
    if counts["regression"]:
        return "failed"
    if rows == 0:
        return "skipped"
    if counts["inconclusive"] or counts["not_comparable"]:
        return "partial"
    return "success"


def _summary(
    counts: Counter[str], status: Status, control: FalseDiscoveryControl
) -> ComparisonSummary:
    return ComparisonSummary(
        status=status,
        regression_count=counts["regression"],
        improvement_count=counts["improvement"],
        neutral_count=counts["neutral"],
        inconclusive_count=counts["inconclusive"],
        not_comparable_count=counts["not_comparable"],
        false_discoveries=control,
    )


def _check_settings(metric: str, noise_floor_pct: float, alpha: float, basis: BasisSetting) -> None:
    if metric not in COMPARABLE_METRICS:
        raise ArtifactError(
            f"cannot compare metric `{metric}`: only metrics with raw samples can be compared",
            hint=f"use one of {', '.join(COMPARABLE_METRICS)}",
        )
    if not (math.isfinite(noise_floor_pct) and noise_floor_pct >= 0):
        raise ArtifactError(
            f"noise floor {noise_floor_pct}% is not a non-negative number",
            hint="pass a percentage such as 2.0",
        )
    if not 0 < alpha < 1:
        raise ArtifactError(f"alpha {alpha} is not in (0, 1)", hint="pass e.g. 0.05")
    if basis not in get_args(BasisSetting):
        raise ArtifactError(
            f"unknown comparison basis `{basis}`", hint="use auto, absolute or relative"
        )


def compared_kinds(base: DeviceRecord, cur: DeviceRecord) -> tuple[str | None, str | None]:
    """The two sides' devices as a comparison tells them apart: the kind, and on a CPU (every
    CPU's kind is `cpu`) its model and core count where both sides recorded one. A run made
    before tile recorded the model compares by kind alone, as it always did."""
    if base.model and cur.model and base.model != cur.model:
        return f"{base.device_kind} ({base.model})", f"{cur.device_kind} ({cur.model})"
    return base.device_kind, cur.device_kind


def _rows(
    baseline: Report | Baseline, current: Report | Baseline, s: Settings
) -> tuple[list[ComparisonRow], FalseDiscoveryControl]:
    """One row per case: current's order, then the cases only the baseline has.

    Cases with evidence are judged together, by their p-values adjusted over the run's cases
    (Benjamini-Hochberg): the family is every case judged plus the baseline's cases the current
    run lacks (their p-values taken as 1), so a run that measured only some of the baseline's
    cases (one pytest benchmark at a time) gets no laxer a verdict than the whole run would.
    """
    base_cases, cur_cases = case_series(baseline, s.metric), case_series(current, s.metric)
    base_refs, cur_refs = case_series(baseline, "ref_time_s"), case_series(current, "ref_time_s")
    s = replace(s, priors=run_priors([*base_cases.values(), *cur_cases.values()]),
                reference_prior=run_priors([*base_refs.values(), *cur_refs.values()]).get(
                    "absolute"))  # fmt: skip
    kinds = compared_kinds(baseline.device, current.device)
    rows: list[ComparisonRow | Pending] = [
        compare_row(base_cases[k], cur, kinds, s, (base_refs.get(k), cur_refs.get(k)))
        if k in base_cases
        else one_sided(cur, s.metric, "added")
        for k, cur in cur_cases.items()
    ]
    rows += [one_sided(b, s.metric, "removed") for k, b in base_cases.items() if k not in cur_cases]
    pending = [r for r in rows if isinstance(r, Pending)]
    family = sum(
        isinstance(r, Pending) or r.judgement != "not_comparable" or r.reason == "removed"
        for r in rows
    )
    adjusted = tile_stats.benjamini_hochberg([p.evidence.p_value for p in pending], family=family)
    q = dict(zip((p.case_id for p in pending), adjusted, strict=True))
    done = [finish_row(r, q[r.case_id], family, s) if isinstance(r, Pending) else r for r in rows]
    if s.metric == "time_s":
        done = attribute_rows(done, baseline, current)
    return done, FalseDiscoveryControl(method="benjamini_hochberg", cases=family)


def compare_runs(  # noqa: PLR0913 (public call: its keyword options are documented)
    baseline: Report | Baseline,
    current: Report | Baseline,
    *,
    noise_floor_pct: float = 2.0,
    alpha: float = 0.05,
    metric: str = "time_s",
    basis: BasisSetting = "auto",
    seed: int = 0,
    resamples: int = 2000,
    baseline_label: str | None = None,
    current_label: str | None = None,
    baseline_path: str | None = None,
    current_path: str | None = None,
    producer: Producer | None = None,
    run_id: str | None = None,
    now: datetime | None = None,
    variants: bool = False,
) -> ComparisonDoc:
    """Compare `current` against `baseline` case by case (matched on case_id).

    The rule, per basis and per kind of evidence, is `_compare_rows`'s docstring. The envelope
    defaults to current's producer, a new `compare-...` run id and current's output directory.
    """
    _check_settings(metric, noise_floor_pct, alpha, basis)
    settings = Settings(
        metric=metric,
        basis=basis,
        pinned=pinned(baseline) and pinned(current),
        paired=paired(baseline, current),
        noise_floor_pct=noise_floor_pct,
        alpha=alpha,
        resamples=resamples,
        seed=seed,
        variants=variants,
    )
    rows, control = _rows(baseline, current, settings)
    rows = _with_ops(_with_configs(rows, baseline, current), baseline, current)
    counts = Counter(row.judgement for row in rows)
    status = _summary_status(counts, len(rows))
    run = RunInfo(
        run_id=run_id or new_run_id("compare", now),
        created_at=now or utc_now(),
        status=status,
        status_reason=None,
        output_directory=current.run.output_directory,
    )
    return ComparisonDoc(
        producer=producer or current.producer,
        run=run,
        baseline=_side(baseline, baseline_label, baseline_path),
        current=_side(current, current_label, current_path),
        thresholds=Thresholds(
            noise_floor_pct=noise_floor_pct, alpha=alpha, metric=metric, basis=basis
        ),
        rows=rows,
        summary=_summary(counts, status, control),
    )


def _with_configs(
    rows: list[ComparisonRow], baseline: Report | Baseline, current: Report | Baseline
) -> list[ComparisonRow]:
    """Each row with the tunable values its case ran with on each side, so that a row whose
    configuration changed says so, and with the configurations a pooled baseline left out."""

    def values(side: Report | Baseline) -> dict[str, dict[str, str]]:
        return {c.case_id: dict(c.config.values) for c in side.cases if c.config is not None}

    base, cur = values(baseline), values(current)
    left = {
        c.case_id: c.other_configs
        for c in (baseline.cases if isinstance(baseline, Baseline) else [])
        if c.other_configs
    }
    if not base and not cur:
        return rows
    return [
        row.model_copy(
            update={
                "baseline_config": base.get(row.case_id),
                "current_config": cur.get(row.case_id),
                "baseline_other_configs": left.get(row.case_id),
            }
        )
        for row in rows
    ]


def _with_ops(
    rows: list[ComparisonRow], baseline: Report | Baseline, current: Report | Baseline
) -> list[ComparisonRow]:
    """Each row with the op its case implements (the current side's, else the baseline's)."""
    ops = {c.case_id: c.op for c in baseline.cases if c.op is not None}
    ops.update({c.case_id: c.op for c in current.cases if c.op is not None})
    if not ops:
        return rows
    return [
        row.model_copy(update={"op": op.name, "impl": op.impl})
        if (op := ops.get(row.case_id)) is not None
        else row
        for row in rows
    ]
