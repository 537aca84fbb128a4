"""Statistical comparison of two runs (`tile compare`): per-case judgements from raw samples."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import Final, Literal, get_args

import tile_stats
from tile_artifacts._base import (
    MEASURED,
    Basis,
    BasisSetting,
    Judgement,
    Producer,
    RunInfo,
    Status,
    utc_now,
)
from tile_artifacts._consistency import first_impossible_sample
from tile_artifacts._documents import (
    Baseline,
    ComparisonDoc,
    ComparisonSide,
    ComparisonSummary,
    Thresholds,
)
from tile_artifacts._errors import ArtifactError
from tile_artifacts._models import CaseRecord, Report
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

MIN_SAMPLES: Final = 5
# Metrics with raw samples behind them; both are times, so a higher ratio is worse.
COMPARABLE_METRICS: Final = ("time_s", "ref_time_s")
_RELATIVE: Final = "relative to its reference, timed interleaved"
# Appended to _RELATIVE's reason when pinned runs were judged with the block bootstrap.
_PINNED: Final = " on one pinned core; block bootstrap CI"
# Runs measured in rounds (`[bench] rounds`): the fewest rounds a side needs for its scatter to
# set the CI.
MIN_ROUNDS: Final = 3
# A baseline pooled from this many runs (or more) sets the CI from the spread between runs.
MIN_RUNS: Final = 2


@dataclass(frozen=True)
class _Case:
    case_id: str
    status: str
    timer: str | None
    cold: bool | None
    samples: list[float]  # of the metric compared
    reference: list[float]
    relative: list[float] | None  # time_s only: kernel_i / reference_i, when they pair up
    round_sizes: list[int] | None  # samples per round, when measured in rounds
    run_sizes: list[int]  # samples per run: one entry, or several in a pooled baseline


def _relative(
    samples: list[float], reference: list[float], interleaved: bool
) -> list[float] | None:
    """Per-sample ratios to the reference; None unless it was timed interleaved, pair for pair."""
    if not interleaved or not samples or len(samples) != len(reference):
        return None
    if not all(r > 0 for r in reference):
        return None
    return [k / r for k, r in zip(samples, reference, strict=True)]


@dataclass(frozen=True)
class _Drift:
    """Evidence of run-to-run noise for one case: the practical noise floor is at least `pct`."""

    pct: float
    source: str  # e.g. "the reference moved +4.1% between the runs"; "" when there is none


def _cases(run: Report | Baseline, metric: str) -> dict[str, _Case]:
    out: dict[str, _Case] = {}
    for c in run.cases:
        if isinstance(c, CaseRecord):
            ref = list(c.reference.samples) if c.reference is not None else []
            interleaved = c.reference is not None and c.reference.interleaved
            runs = [len(c.samples)]
        else:
            ref, interleaved = list(c.reference_samples), c.reference_interleaved
            runs = list(c.run_sizes) if c.run_sizes else [len(c.samples)]
        own = list(c.samples)
        relative = _relative(own, ref, interleaved) if metric == "time_s" else None
        samples = own if metric == "time_s" else ref
        rounds = c.round_sizes if c.round_sizes and len(c.round_sizes) >= MIN_ROUNDS else None
        # ref_time_s of a reference not timed in every round (or run): no groups to judge.
        if rounds is not None and sum(rounds) != len(samples):
            rounds = None
        if sum(runs) != len(samples):
            runs = [len(samples)]
        out[c.case_id] = _Case(
            c.case_id, c.status, c.timer, c.cold, samples, ref, relative, rounds, runs
        )
    return out


def _measured_noise_ci(
    base: _Case,
    cur: _Case,
    series: tuple[list[float], list[float]],
    *,
    relative_and_pinned: bool,
    confidence: float,
    resamples: int,
    seed: int,
) -> tuple[float, float, str] | None:
    """A CI that measures the run-to-run noise, and the note for the reason; first match:
    a pooled baseline's spread between runs, the scatter between rounds, a pinned relative
    run's block bootstrap. None when there is none: the drift-widened rule applies then."""
    spread: Literal["pooled", "welch"]
    if max(len(base.run_sizes), len(cur.run_sizes)) >= MIN_RUNS:
        groups, spread = (base.run_sizes, cur.run_sizes), "pooled"
        note = f"; CI from the spread of {len(groups[0])} and {len(groups[1])} runs"
    elif base.round_sizes is not None and cur.round_sizes is not None:
        groups, spread = (base.round_sizes, cur.round_sizes), "welch"
        note = f"; CI from {len(groups[0])} and {len(groups[1])} rounds"
    elif relative_and_pinned:
        low, high = tile_stats.block_ratio_ci(
            *series, confidence=confidence, resamples=resamples, seed=seed
        )
        return low, high, _PINNED
    else:
        return None
    low, high = tile_stats.grouped_ratio_ci(
        *series,
        baseline_sizes=groups[0],
        current_sizes=groups[1],
        spread=spread,
        confidence=confidence,
    )
    return low, high, note


def _run_drift(
    base: list[float],
    cur: list[float],
    base_reference: list[float] | None = None,
    cur_reference: list[float] | None = None,
) -> _Drift:
    """How far timings moved for reasons other than the code: the largest of

    - the reference's move between the runs, |median(cur_ref) / median(base_ref) - 1|, when
      both sides have at least MIN_SAMPLES reference samples (same inputs, usually unchanged
      code, timed in the same processes: what it moved is the machine, not the kernel);
    - each side's within-run drift (`tile_stats.within_run_drift`): a median that wandered by
      x% within one run can differ by as much between two runs, which the per-sample CI
      cannot see.
    """
    found: list[tuple[float, str]] = [(0.0, "")]
    refs = (base_reference or [], cur_reference or [])
    if min(len(refs[0]), len(refs[1])) >= MIN_SAMPLES:
        low, high = tile_stats.median(refs[0]), tile_stats.median(refs[1])
        if low > 0:
            moved = high / low - 1
            found.append((abs(moved), f"the reference moved {moved * 100:+.1f}% between the runs"))
    for side, samples in (("baseline", base), ("current", cur)):
        wander = tile_stats.within_run_drift(samples)
        if wander is not None:
            found.append((wander, f"the {side} median wandered {wander * 100:.1f}% within its run"))
    pct, source = max(found, key=lambda item: item[0])
    return _Drift(pct * 100, source)


def judge(
    ratio: float,
    ci_low: float,
    ci_high: float,
    p_value: float,
    *,
    noise_floor_pct: float,
    alpha: float,
    drift_pct: float = 0.0,
    drift_source: str = "",
) -> tuple[Judgement, str]:
    """Judge a lower-is-better ratio (current / baseline) from its CI and Mann-Whitney p-value.

    The ratio is of absolute times or of relative times (kernel / reference per sample), as
    `compare_runs` chose; the rule is the same. f = noise_floor_pct / 100 is the user's noise
    floor; F = max(f, drift_pct / 100) is the practical floor, widened by evidence of
    run-to-run noise (`compare_runs` passes the largest of: for absolute times, the
    reference's move between the runs; for either, each side's within-run drift of the series
    judged; `drift_source` says which).
    First match wins:

    1. regression:   p < alpha and ci_low > 1 + F   (the whole CI beyond the practical floor)
    2. improvement:  p < alpha and ci_high < 1 - F
    3. neutral:      the CI lies inside [1 - f, 1 + f], or p >= alpha and the CI neither lies
                     entirely beyond that band (ci_low > 1 + f or ci_high < 1 - f) nor
                     straddles all of it (ci_low < 1 - f and ci_high > 1 + f)
    4. inconclusive: everything else: a CI that reaches into the band, a CI wider than the
                     band without significance, or a change beyond f but not beyond F (as
                     large as the run-to-run noise seen, so it may be that noise)
    """
    f = noise_floor_pct / 100
    floor = max(f, drift_pct / 100)
    low, high = 1 - f, 1 + f
    change = f"{(ratio - 1) * 100:+.1f}%, CI {ci_low:.3f}–{ci_high:.3f}, p={p_value:.2g}"
    widened = ""
    if floor > f:
        widened = f"; noise floor ±{drift_pct:.1f}% because {drift_source or 'of drift'}"
    significant = p_value < alpha
    if significant and ci_low > 1 + floor:
        return "regression", f"slower: {change}{widened}"
    if significant and ci_high < 1 - floor:
        return "improvement", f"faster: {change}{widened}"
    if low <= ci_low and ci_high <= high:
        return "neutral", f"CI within the ±{noise_floor_pct:g}% noise floor: {change}"
    beyond = ci_low > high or ci_high < low
    straddles = ci_low < low and ci_high > high
    if not significant and not beyond and not straddles:
        return "neutral", f"no significant change: {change}"
    if not significant:
        what = "wider than the noise band" if straddles else "beyond the noise floor"
        return "inconclusive", f"CI {what} but the U test is not significant: {change}"
    if beyond:
        way = "slower" if ci_low > high else "faster"
        return "inconclusive", f"{way}, but within the run-to-run noise: {change}{widened}"
    return (
        "inconclusive",
        f"significant, but the CI reaches into the ±{noise_floor_pct:g}% noise band: {change}",
    )


def _not_comparable(
    base: _Case, cur: _Case, base_kind: str | None, cur_kind: str | None, modes: bool = False
) -> str:
    for side, case in (("baseline", base), ("current", cur)):
        if case.status not in MEASURED:
            return f"{side} case status is `{case.status}`"
    if base_kind != cur_kind:
        return f"device kind differs: `{base_kind}` vs `{cur_kind}`"
    if base.timer != cur.timer:
        return f"timer differs: `{base.timer}` vs `{cur.timer}`"
    if base.cold != cur.cold and not modes:
        mode = {True: "cold", False: "warm", None: "unknown"}
        return f"mode differs: {mode[base.cold]} vs {mode[cur.cold]}"
    missing = [side for side, c in (("baseline", base), ("current", cur)) if not c.samples]
    if missing:
        return f"no raw samples in {' and '.join(missing)}"
    for side, case in (("baseline", base), ("current", cur)):
        bad = first_impossible_sample(case.samples)
        if bad is not None:
            return (f"{side} has zero or negative times (sample {bad[0]} is {bad[1]!r}): the "
                    "file is corrupt; `tile schema-check` it")  # fmt: skip
    return ""


def _median(samples: list[float]) -> float | None:
    try:
        return tile_stats.median(samples) if samples else None
    except ValueError:
        return None


def _make_row(
    case_id: str,
    metric: str,
    values: tuple[float | None, float | None],
    judgement: Judgement,
    reason: str,
    *,
    result: tile_stats.Comparison | None = None,
    ci: tuple[float, float] | None = None,
    basis: Basis | None = None,
) -> ComparisonRow:
    if result is not None and ci is None:
        ci = (result.ci_low, result.ci_high)
    return ComparisonRow(
        case_id=case_id,
        metric_name=metric,
        unit="s",
        baseline_value=values[0],
        current_value=values[1],
        ratio=result.ratio if result else None,
        ratio_ci_low=ci[0] if ci else None,
        ratio_ci_high=ci[1] if ci else None,
        percent_change=(result.ratio - 1) * 100 if result else None,
        p_value=result.p_value if result else None,
        higher_is_better=False,
        judgement=judgement,
        reason=reason,
        basis=basis,
    )


def _pick_basis(
    base: _Case, cur: _Case, metric: str, basis: BasisSetting
) -> tuple[Basis | None, str]:
    """The basis this row is judged on, or None and why it cannot be the one asked for."""
    if metric != "time_s" or basis == "absolute":
        return "absolute", ""  # the reference's own times cannot be relative to themselves
    if base.relative is not None and cur.relative is not None:
        return "relative", ""
    if basis == "auto":
        return "absolute", ""
    missing = [side for side, c in (("baseline", base), ("current", cur)) if c.relative is None]
    return None, (
        f"basis relative, but no reference samples timed interleaved in {' and '.join(missing)}"
    )


def _row(
    base: _Case,
    cur: _Case,
    kinds: tuple[str | None, str | None],
    *,
    metric: str,
    basis: BasisSetting,
    pinned: bool,
    noise_floor_pct: float,
    alpha: float,
    resamples: int,
    seed: int,
    variants: bool = False,
) -> ComparisonRow:
    values = (_median(base.samples), _median(cur.samples))
    reason = _not_comparable(base, cur, *kinds, variants)
    if reason:
        return _make_row(cur.case_id, metric, values, "not_comparable", reason)
    used, reason = _pick_basis(base, cur, metric, basis)
    if used is None:
        return _make_row(cur.case_id, metric, values, "not_comparable", reason)
    if used == "relative" and base.relative is not None and cur.relative is not None:
        series, suffix = (base.relative, cur.relative), f"; {_RELATIVE}"
    else:
        series, suffix = (base.samples, cur.samples), ""
    n_base, n_cur = len(series[0]), len(series[1])
    if min(n_base, n_cur) < MIN_SAMPLES:
        reason = f"too few samples ({n_base} baseline, {n_cur} current; need {MIN_SAMPLES})"
        return _make_row(cur.case_id, metric, values, "inconclusive", reason + suffix, basis=used)
    try:
        result = tile_stats.compare(
            series[0], series[1], confidence=1 - alpha, resamples=resamples, seed=seed
        )
        # Rounds, a pooled baseline or pinned runs measure the run-to-run noise: their CI, with
        # no drift widening on top (see compare_runs).
        measured = _measured_noise_ci(
            base,
            cur,
            series,
            relative_and_pinned=used == "relative" and pinned,
            confidence=1 - alpha,
            resamples=resamples,
            seed=seed,
        )
    except tile_stats.StatsError as e:
        reason = f"statistics failed: {e}{suffix}"
        return _make_row(cur.case_id, metric, values, "inconclusive", reason, basis=used)
    ci = (result.ci_low, result.ci_high)
    if measured is not None:
        low, high, note = measured
        ci, drift = (min(low, ci[0]), max(high, ci[1])), _Drift(0.0, "")
        suffix += note
    else:
        # The reference's move between the runs is evidence of machine noise in absolute
        # times only: relative times have it divided out, references cannot control themselves.
        absolute = used == "absolute" and metric == "time_s" and not variants
        refs = (base.reference, cur.reference) if absolute else ()
        drift = _run_drift(series[0], series[1], *refs)
    judgement, reason = judge(
        result.ratio,
        ci[0],
        ci[1],
        result.p_value,
        noise_floor_pct=noise_floor_pct,
        alpha=alpha,
        drift_pct=drift.pct,
        drift_source=drift.source,
    )
    if base.cold != cur.cold:
        mode = {True: "cold", False: "warm", None: "unknown"}
        suffix += f"; {mode[base.cold]} against {mode[cur.cold]}, as asked"
    return _make_row(
        cur.case_id, metric, values, judgement, reason + suffix, result=result, ci=ci, basis=used
    )


def _pinned(run: Report | Baseline) -> bool:
    """Whether the run's runner was pinned to one core with XLA single-threaded."""
    core = run.context.pinned_cpu if isinstance(run, Report) else run.pinned_cpu
    return core is not None


def _one_sided(case: _Case, metric: str, reason: str) -> ComparisonRow:
    value = _median(case.samples)
    values = (value, None) if reason == "removed" else (None, value)
    return _make_row(case.case_id, metric, values, "not_comparable", reason)


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


def compare_runs(
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

    Per case, from the raw samples of a series chosen by `basis` (below): ratio of medians
    (current / baseline) with a bootstrap CI at confidence 1 - alpha, and a two-sided
    Mann-Whitney p-value (`tile_stats.compare`). The row is `not_comparable` when device kind,
    timer or cold/warm mode differ or samples are missing, `inconclusive` with fewer than
    MIN_SAMPLES values in either series, and otherwise judged by `judge` (see there for the
    exact rule) with the noise floor widened by `_run_drift`, as the basis says.

    Bases (the row's `basis` says which judged it; `baseline_value` and `current_value` are
    the absolute medians either way):

    - `relative`: each run's series is its per-sample ratios kernel_i / reference_i, which
      needs the reference timed interleaved with the kernel (`reference.interleaved`, as many
      samples) on both sides. Both halves of a ratio saw the same machine speed, so swings of
      that speed between (and within) runs cancel. The floor is widened by each side's
      within-run drift of its ratio series only; the reference's move between the runs is not
      used, since dividing by the reference has already removed it. The reason ends with
      "; relative to its reference, timed interleaved". A change of the reference code itself
      shows up here as a change of the kernel: read the absolute medians then.
      When both runs were pinned to one core with XLA single-threaded (`[runner] pin_cpu`;
      the report's `context.pinned_cpu`), the ratio's CI is widened to a block bootstrap's
      (`tile_stats.block_ratio_ci`) instead, with no drift widening, and the reason ends with
      "...on one pinned core; block bootstrap CI". Pinning removes the noise that moves a ratio between runs
      without showing within them (XLA's thread pool against cores taken at random), which the
      conservative drift widening stands in for; what is left shows within the run.
    - `absolute`: the kernel's own times; the floor is widened by the reference's move between
      the runs (for `time_s`) and each side's within-run drift.
    - `auto` (default): `relative` for a case whose both sides can be, else `absolute`.

    Runs measured in rounds (`[bench] rounds`; `round_sizes` on the case): when both sides
    have at least MIN_ROUNDS rounds, the CI on either basis is widened to one from the
    scatter of the per-round medians (`tile_stats.grouped_ratio_ci`, Welch's), with no drift
    widening, and the reason ends with "; CI from N and M rounds". The rounds are spread over the whole run and each
    makes its inputs anew, so their scatter is the run-to-run noise measured rather than
    guessed; this rule comes before the pinned one.

    A baseline pooled from several runs (`baseline_from_reports`; `run_sizes`) knows how far
    each case moves between processes of the same code. When either side has MIN_RUNS runs or
    more, the CI comes from that spread instead (`tile_stats.grouped_ratio_ci`, pooled), which
    rounds cannot see: what stays fixed for a whole process. The reason ends with "; CI from the spread of K and L
    runs". This rule comes first.

    With `basis="relative"` a case without interleaved reference samples on either side is
    `not_comparable`. `metric="ref_time_s"` (the reference's own times) is always absolute.
    Cases on one side only get a `not_comparable` row whose reason is exactly `added` or
    `removed`. `variants=True` says the two runs differ on purpose (a campaign's variants:
    cold caches, an XLA flag): a warm side is judged against a cold one instead of refused (the
    reason says which is which), and the reference's move between the runs is not taken as
    noise, since the variant moves the reference as much as the kernel. The envelope defaults to current's producer, a new `compare-...` run id and
    current's output directory.

    Summary status: `failed` with any regression, else `skipped` with no rows, else `partial`
    with any inconclusive or not_comparable row, else `success`.
    """
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
    base_cases, cur_cases = _cases(baseline, metric), _cases(current, metric)
    pinned = _pinned(baseline) and _pinned(current)
    kinds = (baseline.device.device_kind, current.device.device_kind)
    rows: list[ComparisonRow] = []
    for case_id, cur in cur_cases.items():
        base = base_cases.get(case_id)
        if base is None:
            rows.append(_one_sided(cur, metric, "added"))
            continue
        rows.append(
            _row(
                base,
                cur,
                kinds,
                metric=metric,
                basis=basis,
                pinned=pinned,
                noise_floor_pct=noise_floor_pct,
                alpha=alpha,
                resamples=resamples,
                seed=seed,
                variants=variants,
            )
        )
    rows += [_one_sided(b, metric, "removed") for k, b in base_cases.items() if k not in cur_cases]
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
        summary=ComparisonSummary(
            status=status,
            regression_count=counts["regression"],
            improvement_count=counts["improvement"],
            neutral_count=counts["neutral"],
            inconclusive_count=counts["inconclusive"],
            not_comparable_count=counts["not_comparable"],
        ),
    )
