"""How one case is judged: the row `tile compare` writes for it.

Per case, from the raw samples of a series chosen by `basis` (below): ratio of medians (current
/ baseline) with a bootstrap CI at confidence 1 - alpha, and a two-sided Mann-Whitney p-value
(`tile_stats.compare`). The row is `not_comparable` when device kind, timer or cold/warm mode
differ or samples are missing, `inconclusive` with fewer than MIN_SAMPLES values in either
series, and otherwise judged by `judge` (see there for the exact rule) with the noise floor
widened by `run_drift`, as the basis says.

Bases (the row's `basis` says which judged it; `baseline_value` and `current_value` are the
absolute medians either way):

- `relative`: each run's series is its per-sample ratios kernel_i / reference_i, which needs the
  reference timed interleaved with the kernel (`reference.interleaved`, as many samples) on both
  sides. Both halves of a ratio saw the same machine speed, so swings of that speed between (and
  within) runs cancel. The floor is widened by each side's within-run drift of its ratio series
  only; the reference's move between the runs is not used, since dividing by the reference has
  already removed it. The reason ends with "; relative to its reference, timed interleaved". A
  change of the reference code itself shows up here as a change of the kernel: read the absolute
  medians then. When both runs were pinned to one core with XLA single-threaded
  (`[runner] pin_cpu`; the report's `context.pinned_cpu`), the ratio's CI is widened to a block
  bootstrap's (`tile_stats.block_ratio_ci`) instead, with no drift widening, and the reason ends
  with "...on one pinned core; block bootstrap CI". Pinning removes the noise that moves a ratio between
  runs without showing within them (XLA's thread pool against cores taken at random), which the
  conservative drift widening stands in for; what is left shows within the run.
- `absolute`: the kernel's own times; the floor is widened by the reference's move between the
  runs (for `time_s`) and each side's within-run drift.
- `auto` (default): `relative` for a case whose both sides can be, else `absolute`.

Runs measured in rounds (`[bench] rounds`; `round_sizes` on the case): when both sides have at
least MIN_ROUNDS rounds, the CI on either basis is widened to one from the scatter of the
per-round medians (`tile_stats.grouped_ratio_ci`, Welch's), with no drift widening, and the reason
ends with "; CI from N and M rounds". The rounds are spread over the whole run and each makes
its inputs anew, so their scatter is the run-to-run noise measured rather than guessed; this
rule comes before the pinned one.

A baseline pooled from several runs (`baseline_from_reports`; `run_sizes`) knows how far each
case moves between processes of the same code. When either side has MIN_RUNS runs or more, the
CI comes from that spread instead (`tile_stats.grouped_ratio_ci`, pooled), which rounds cannot
see: what stays fixed for a whole process. The reason ends with "; CI from the spread of K and L
runs". This rule comes first.

With `basis="relative"` a case without interleaved reference samples on either side is
`not_comparable`. `metric="ref_time_s"` (the reference's own times) is always absolute. Cases on
one side only get a `not_comparable` row whose reason is exactly `added` or `removed`.
`variants=True` says the two runs differ on purpose (a campaign's variants: cold caches, an XLA
flag): a warm side is judged against a cold one instead of refused (the reason says which is
which), and the reference's move between the runs is not taken as noise, since the variant moves
the reference as much as the kernel.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import tile_stats
from tile_artifacts._base import (
    MEASURED,
    Basis,
    BasisSetting,
    Judgement,
)
from tile_artifacts._compare_noise import (
    MIN_SAMPLES,
    Drift,
    judge,
    measured_noise_ci,
    run_drift,
)
from tile_artifacts._compare_series import (
    CaseSeries,
    median_or_none,
)
from tile_artifacts._consistency import first_impossible_sample
from tile_artifacts._records import ComparisonRow

__all__ = ["Settings", "compare_row", "one_sided"]

_RELATIVE: Final = "relative to its reference, timed interleaved"
_MODE: Final = {True: "cold", False: "warm", None: "unknown"}


@dataclass(frozen=True)
class Settings:
    """What every row of one comparison is judged with."""

    metric: str
    basis: BasisSetting
    pinned: bool
    noise_floor_pct: float
    alpha: float
    resamples: int
    seed: int
    variants: bool


def _not_comparable(
    base: CaseSeries,
    cur: CaseSeries,
    base_kind: str | None,
    cur_kind: str | None,
    modes: bool = False,
) -> str:
    """Why the two cases cannot be judged against each other, or "" when they can."""
    return _not_alike(base, cur, base_kind, cur_kind, modes) or _unusable_samples(base, cur)


def _not_alike(
    base: CaseSeries,
    cur: CaseSeries,
    base_kind: str | None,
    cur_kind: str | None,
    modes: bool,
) -> str:
    """What differs between how the two cases were measured (if they were), or ""."""
    for side, case in (("baseline", base), ("current", cur)):
        if case.status not in MEASURED:
            return f"{side} case status is `{case.status}`"
    if base_kind != cur_kind:
        return f"device kind differs: `{base_kind}` vs `{cur_kind}`"
    if base.timer != cur.timer:
        return f"timer differs: `{base.timer}` vs `{cur.timer}`"
    if base.cold != cur.cold and not modes:
        return f"mode differs: {_MODE[base.cold]} vs {_MODE[cur.cold]}"
    return ""


def _unusable_samples(base: CaseSeries, cur: CaseSeries) -> str:
    """Why the raw samples of either side cannot be compared (none, or impossible), or ""."""
    missing = [side for side, c in (("baseline", base), ("current", cur)) if not c.samples]
    if missing:
        return f"no raw samples in {' and '.join(missing)}"
    for side, case in (("baseline", base), ("current", cur)):
        bad = first_impossible_sample(case.samples)
        if bad is not None:
            return (f"{side} has zero or negative times (sample {bad[0]} is {bad[1]!r}): the "
                    "file is corrupt; `tile schema-check` it")  # fmt: skip
    return ""


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
    base: CaseSeries, cur: CaseSeries, metric: str, basis: BasisSetting
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


def _series(
    base: CaseSeries, cur: CaseSeries, used: Basis
) -> tuple[tuple[list[float], list[float]], str]:
    """The two series judged on basis `used`, and the note the row's reason ends with."""
    if used == "relative" and base.relative is not None and cur.relative is not None:
        return (base.relative, cur.relative), f"; {_RELATIVE}"
    return (base.samples, cur.samples), ""


def _noise(
    base: CaseSeries,
    cur: CaseSeries,
    series: tuple[list[float], list[float]],
    *,
    result: tile_stats.Comparison,
    used: Basis,
    s: Settings,
) -> tuple[tuple[float, float], Drift, str]:
    """The CI to judge, the drift that widens the floor, and a note for the reason.

    Rounds, a pooled baseline or pinned runs measure the run-to-run noise: their CI (never
    narrower than the per-sample one), with no drift widening on top. Otherwise the reference's
    move between the runs is evidence of machine noise in absolute times only: relative times
    have it divided out, references cannot control themselves.
    Raises tile_stats.StatsError when the statistics cannot be computed.
    """
    ci = (result.ci_low, result.ci_high)
    measured = measured_noise_ci(
        base,
        cur,
        series,
        relative_and_pinned=used == "relative" and s.pinned,
        confidence=1 - s.alpha,
        resamples=s.resamples,
        seed=s.seed,
    )
    if measured is not None:
        low, high, note = measured
        return (min(low, ci[0]), max(high, ci[1])), Drift(0.0, ""), note
    absolute = used == "absolute" and s.metric == "time_s" and not s.variants
    refs = (base.reference, cur.reference) if absolute else ()
    return ci, run_drift(series[0], series[1], *refs), ""


def compare_row(
    base: CaseSeries, cur: CaseSeries, kinds: tuple[str | None, str | None], s: Settings
) -> ComparisonRow:
    """The row of one case present on both sides."""
    values = (median_or_none(base.samples), median_or_none(cur.samples))
    reason = _not_comparable(base, cur, *kinds, s.variants)
    if reason:
        return _make_row(cur.case_id, s.metric, values, "not_comparable", reason)
    used, reason = _pick_basis(base, cur, s.metric, s.basis)
    if used is None:
        return _make_row(cur.case_id, s.metric, values, "not_comparable", reason)
    series, suffix = _series(base, cur, used)
    n_base, n_cur = len(series[0]), len(series[1])
    if min(n_base, n_cur) < MIN_SAMPLES:
        reason = f"too few samples ({n_base} baseline, {n_cur} current; need {MIN_SAMPLES})"
        return _make_row(cur.case_id, s.metric, values, "inconclusive", reason + suffix, basis=used)
    try:
        result = tile_stats.compare(
            series[0], series[1], confidence=1 - s.alpha, resamples=s.resamples, seed=s.seed
        )
        ci, drift, note = _noise(base, cur, series, result=result, used=used, s=s)
    except tile_stats.StatsError as e:
        reason = f"statistics failed: {e}{suffix}"
        return _make_row(cur.case_id, s.metric, values, "inconclusive", reason, basis=used)
    judgement, reason = judge(
        result.ratio,
        *ci,
        result.p_value,
        noise_floor_pct=s.noise_floor_pct,
        alpha=s.alpha,
        drift_pct=drift.pct,
        drift_source=drift.source,
    )
    suffix += note
    if base.cold != cur.cold:
        suffix += f"; {_MODE[base.cold]} against {_MODE[cur.cold]}, as asked"
    return _make_row(
        cur.case_id, s.metric, values, judgement, reason + suffix, result=result, ci=ci, basis=used
    )


def one_sided(case: CaseSeries, metric: str, reason: str) -> ComparisonRow:
    value = median_or_none(case.samples)
    values = (value, None) if reason == "removed" else (None, value)
    return _make_row(case.case_id, metric, values, "not_comparable", reason)
