"""How noisy two runs were, and the rule that weighs a change against that noise.

`judge` is the verdict rule (regression, improvement, neutral, inconclusive); the evidence it
weighs is either a CI that measured the run-to-run noise (`measured_noise_ci`: pooled runs,
rounds, a pinned block bootstrap) or, failing that, the drift that widens the noise floor
(`run_drift`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

import tile_stats
from tile_artifacts._base import Judgement
from tile_artifacts._compare_series import MIN_RUNS, CaseSeries

__all__ = ["MIN_SAMPLES", "PINNED_NOTE", "Drift", "judge", "measured_noise_ci", "run_drift"]

MIN_SAMPLES: Final = 5
# Appended to a relative row's reason when pinned runs were judged with the block bootstrap.
PINNED_NOTE: Final = " on one pinned core; block bootstrap CI"


@dataclass(frozen=True)
class Drift:
    """Evidence of run-to-run noise for one case: the practical noise floor is at least `pct`."""

    pct: float
    source: str  # e.g. "the reference moved +4.1% between the runs"; "" when there is none


def measured_noise_ci(
    base: CaseSeries,
    cur: CaseSeries,
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
        return low, high, PINNED_NOTE
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


def run_drift(
    base: list[float],
    cur: list[float],
    base_reference: list[float] | None = None,
    cur_reference: list[float] | None = None,
) -> Drift:
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
    return Drift(pct * 100, source)


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
    change = f"{(ratio - 1) * 100:+.1f}%, CI {ci_low:.3f}–{ci_high:.3f}, p={p_value:.2g}"
    widened = ""
    if floor > f:
        widened = f"; noise floor ±{drift_pct:.1f}% because {drift_source or 'of drift'}"
    significant = p_value < alpha
    if significant and ci_low > 1 + floor:
        return "regression", f"slower: {change}{widened}"
    if significant and ci_high < 1 - floor:
        return "improvement", f"faster: {change}{widened}"
    return _neutral_or_inconclusive(
        ci_low,
        ci_high,
        significant=significant,
        noise_floor_pct=noise_floor_pct,
        change=change,
        widened=widened,
    )


def _neutral_or_inconclusive(
    ci_low: float,
    ci_high: float,
    *,
    significant: bool,
    noise_floor_pct: float,
    change: str,
    widened: str,
) -> tuple[Judgement, str]:
    """Rules 3 and 4 of `judge`, once no change beyond the practical floor was shown: does the
    evidence say there is none (neutral), or is it too weak to tell (inconclusive)?"""
    f = noise_floor_pct / 100
    low, high = 1 - f, 1 + f
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
