"""How noisy two runs were, and the rule that weighs a change against that noise.

`judge` is the verdict rule (regression, improvement, neutral, inconclusive), in log space;
the evidence it weighs (`case_evidence`) is a ratio with a CI and the p-value of a test on
groups of samples (the runs of a pooled baseline, rounds, or blocks of one run), and a
practical noise floor widened by the drift that the groups cannot see (`run_drift`).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Final, Literal

import tile_stats
from tile_artifacts._base import Judgement
from tile_artifacts._compare_series import MIN_RUNS, CaseSeries

__all__ = [
    "DRIFTED_REFERENCE_WEIGHT",
    "MIN_SAMPLES",
    "PINNED_NOTE",
    "Drift",
    "Evidence",
    "Prior",
    "case_evidence",
    "judge",
    "run_drift",
    "run_prior",
]

MIN_SAMPLES: Final = 5
# A pooled baseline's cases lend each other their run-to-run spread (`run_prior`) when at
# least this many have one, worth this many degrees of freedom beside each case's own. On
# benchmarks/aa_gate.py's kept runs (baselines of 3 runs, 20 cases, the load changing between
# runs) 2x slowdowns caught went from 932 to 980 of 1000, false verdicts from 2 to 0 of 400
# (benchmarks/results/gate-moderated-cpu-2026-12-06.txt).
PRIOR_MIN_CASES: Final = 8
PRIOR_DF: Final = 4.0
# How many times the reference's move (in log space) widens the floor of a case judged on
# absolute times because its reference drifted: kernels moved up to twice as far as their
# references between runs under a changed load (benchmarks/aa_gate.py).
DRIFTED_REFERENCE_WEIGHT: Final = 2.0
# Appended to a relative row's reason when pinned runs were judged with the block bootstrap.
PINNED_NOTE: Final = "; on one pinned core; block bootstrap CI"


@dataclass(frozen=True)
class Drift:
    """Evidence of run-to-run noise for one case: the practical noise floor is at least `pct`."""

    pct: float
    source: str  # e.g. "the reference moved +4.1% between the runs"; "" when there is none


@dataclass(frozen=True)
class Prior:
    """The run-to-run variance of a log median that a pooled baseline's cases show together
    (their mean), worth `df` degrees of freedom beside each case's own; `cases` counted."""

    variance: float
    df: float
    cases: int


def run_prior(sides: list[tuple[list[float], list[int]]]) -> Prior | None:
    """What a pooled baseline's cases (each side's samples cut into its runs) say together
    about how far one run moves, or None with fewer than PRIOR_MIN_CASES of two runs or more.

    Three runs give a case's own spread two degrees of freedom: by chance it comes out far too
    small (identical code then looks changed) or too large (a real change is missed). The
    runs' processes are shared by every case, so the cases' spreads are evidence for each
    other's; the mean keeps the cases that move most in the prior (a median lets a few calm
    cases set it, which gave 14 false verdicts of 400 where the mean gave 1)."""
    variances: list[float] = []
    for samples, sizes in sides:
        if len(sizes) < MIN_RUNS:
            continue
        try:
            variance = tile_stats.group_log_variance(samples, sizes=sizes)
        except tile_stats.StatsError:
            continue
        if variance is not None:
            variances.append(variance)
    if len(variances) < PRIOR_MIN_CASES:
        return None
    return Prior(statistics.fmean(variances), PRIOR_DF, len(variances))


@dataclass(frozen=True)
class Evidence:
    """What one case's verdict weighs (current / baseline, lower is better)."""

    ratio: float
    ci: tuple[float, float]
    p_value: float
    drift: Drift
    note: str  # which test gave the p-value and CI, for the row's reason


@dataclass(frozen=True)
class _Groups:
    """The groups a case's test is made on: each side's samples from `skip` on, cut by `sizes`."""

    skip: tuple[int, int]
    sizes: tuple[list[int], list[int]]
    spread: Literal["pooled", "welch", "paired"]
    note: str
    kind: Literal["runs", "rounds", "paired", "blocks"]


def _groups(
    base: CaseSeries, cur: CaseSeries, n: tuple[int, int], *, paired: bool
) -> _Groups | None:
    """First match: rounds taken in turns (`paired`, as many on each side: each pair shared the
    machine's state), a pooled baseline's runs (between processes), both sides' rounds (within
    each run, spread over it), blocks of consecutive samples of each run (how the run
    wandered: the weakest, said so). None when a side has too few samples for two blocks."""
    rounds = (base.round_sizes or [], cur.round_sizes or [])
    if paired and rounds[0] and len(rounds[0]) == len(rounds[1]):
        note = f"; p and CI from {len(rounds[0])} pairs of rounds taken in turns"
        return _Groups((0, 0), rounds, "paired", note, "paired")
    if max(len(base.run_sizes), len(cur.run_sizes)) >= MIN_RUNS:
        sizes = (base.run_sizes, cur.run_sizes)
        note = (f"; p and CI from the spread of {len(sizes[0])} and {len(sizes[1])} runner "
                "processes")  # fmt: skip
        return _Groups((0, 0), sizes, "pooled", note, "runs")
    if base.round_sizes is not None and cur.round_sizes is not None:
        sizes = (base.round_sizes, cur.round_sizes)
        note = f"; p and CI from {len(sizes[0])} and {len(sizes[1])} rounds"
        return _Groups((0, 0), sizes, "welch", note, "rounds")
    blocks = (tile_stats.run_blocks(n[0]), tile_stats.run_blocks(n[1]))
    if blocks[0] is None or blocks[1] is None:
        return None
    note = (f"; p and CI from {len(blocks[0][1])} and {len(blocks[1][1])} blocks of one run "
            "each (blocks cannot see how far a whole process moves)")  # fmt: skip
    return _Groups((blocks[0][0], blocks[1][0]), (blocks[0][1], blocks[1][1]), "welch", note,
                   "blocks")  # fmt: skip


def case_evidence(  # noqa: PLR0913 (the evidence needs each of these)
    base: CaseSeries,
    cur: CaseSeries,
    series: tuple[list[float], list[float]],
    *,
    references: tuple[list[float], list[float]] | None,
    reference_weight: float = 1.0,
    relative_and_pinned: bool,
    paired: bool = False,
    prior: Prior | None = None,
    confidence: float,
    resamples: int,
    seed: int,
) -> Evidence:
    """The ratio of medians of `series` with its CI and p-value, and the floor's drift.

    The p-value comes from a t test on group medians (`tile_stats.grouped_compare`; the groups
    as `_groups` picks them): samples taken together share the machine's state, so the groups
    are the independent measurements. The CI is the test's, never narrower than the
    per-sample bootstrap CI. Pinned relative runs without rounds or pooled runs keep the block
    bootstrap CI and the samples' own test. With too few samples for two blocks a side, the
    per-sample test stands in, and the note says so. `prior` (`run_prior`): the cases' spread
    between a baseline's runs, which a test on runs shrinks this case's toward (moderated t).

    The floor: a pooled baseline's runs measured how far a process moves, so no drift is
    added. Otherwise it is widened by the move of `references` between the runs (given for
    absolute times only: what moved the reference is the machine; `reference_weight` times in
    log space) and, without rounds, by each side's within-run drift (`run_drift`).
    Raises tile_stats.StatsError when the statistics cannot be computed.
    """
    groups = _groups(base, cur, (len(series[0]), len(series[1])), paired=paired)
    if groups is not None and groups.kind == "paired":
        # The pairs are the evidence: pooled over the turns, the samples carry the machine's
        # swings that the pairing takes out, so their own CI and ratio would bring them back.
        test = _group_test(series, groups, confidence)
        ci = (test.ci_low, test.ci_high)
        return Evidence(test.ratio, ci, test.p_value, Drift(0.0, ""), groups.note)
    sample = tile_stats.compare(
        series[0], series[1], confidence=confidence, resamples=resamples, seed=seed
    )
    low, high = sample.ci_low, sample.ci_high
    if relative_and_pinned and (groups is None or groups.kind == "blocks"):
        # Pinned to one core, what moves a ratio shows within the run: a block bootstrap CI
        # and the samples' own test hold (benchmarks/compare_false_alarms.py --pin).
        block = tile_stats.block_ratio_ci(
            *series, confidence=confidence, resamples=resamples, seed=seed
        )
        ci = (min(low, block[0]), max(high, block[1]))
        return Evidence(sample.ratio, ci, sample.p_value, Drift(0.0, ""), PINNED_NOTE)
    if groups is None:
        note = "; p from the samples (too few for blocks: the weakest evidence)"
        drift = run_drift(*series, *(references or ()), reference_weight=reference_weight)
        return Evidence(sample.ratio, (low, high), sample.p_value, drift, note)
    prior = prior if groups.kind == "runs" else None  # rounds and blocks: the case's own
    test = _group_test(series, groups, confidence, prior)
    ci = (min(low, test.ci_low), max(high, test.ci_high))
    drift = _group_drift(groups, series, references, reference_weight)
    note = groups.note + (f", moderated by {prior.cases} cases' runs" if prior else "")
    return Evidence(sample.ratio, ci, test.p_value, drift, note)


def _group_drift(
    groups: _Groups,
    series: tuple[list[float], list[float]],
    references: tuple[list[float], list[float]] | None,
    reference_weight: float,
) -> Drift:
    if groups.kind == "runs" and reference_weight == 1:
        return Drift(0.0, "")  # the runs measured how far a process moves
    if groups.kind in ("runs", "rounds"):
        # Rounds span the run; runs of a pooled baseline do not see the machine move since,
        # which a reference that drifted says it did.
        return run_drift([], [], *(references or ()), reference_weight=reference_weight)
    return run_drift(*series, *(references or ()), reference_weight=reference_weight)


def _group_test(
    series: tuple[list[float], list[float]],
    groups: _Groups,
    confidence: float,
    prior: Prior | None = None,
) -> tile_stats.GroupedComparison:
    return tile_stats.grouped_compare(
        series[0][groups.skip[0] :],
        series[1][groups.skip[1] :],
        baseline_sizes=groups.sizes[0],
        current_sizes=groups.sizes[1],
        spread=groups.spread,
        confidence=confidence,
        prior_variance=prior.variance if prior else None,
        prior_df=prior.df if prior else 0.0,
    )


def run_drift(
    base: list[float],
    cur: list[float],
    base_reference: list[float] | None = None,
    cur_reference: list[float] | None = None,
    *,
    reference_weight: float = 1.0,
) -> Drift:
    """How far timings moved for reasons other than the code: the largest of

    - the reference's move between the runs, |median(cur_ref) / median(base_ref) - 1| (as a
      ratio: a reference twice as fast moved as far as one twice as slow), when both sides
      have at least MIN_SAMPLES reference samples (same inputs, usually unchanged code, timed
      in the same processes: what it moved is the machine, not the kernel), raised to the
      power `reference_weight` (a ratio of 1.4 counted twice widens the floor to 1.96);
    - each side's within-run drift (`tile_stats.within_run_drift`): a median that wandered by
      x% within one run can differ by as much between two runs, which the per-sample CI
      cannot see.
    """
    found: list[tuple[float, str]] = [(0.0, "")]
    refs = (base_reference or [], cur_reference or [])
    if min(len(refs[0]), len(refs[1])) >= MIN_SAMPLES:
        low, high = tile_stats.median(refs[0]), tile_stats.median(refs[1])
        if low > 0 and high > 0:
            moved = high / low
            source = f"the reference moved {(moved - 1) * 100:+.1f}% between the runs"
            if reference_weight != 1:
                source += f" (counted {reference_weight:g} times: the kernel need not follow it)"
            found.append((max(moved, 1 / moved) ** reference_weight - 1, source))
    for side, samples in (("baseline", base), ("current", cur)):
        wander = tile_stats.within_run_drift(samples) if samples else None
        if wander is not None:
            found.append((wander, f"the {side} median wandered {wander * 100:.1f}% within its run"))
    pct, source = max(found, key=lambda item: item[0])
    return Drift(pct * 100, source)


def _times(ratio: float) -> str:
    """`+3.1%`, and for a change of 2x or more also `(2.3x slower)` / `(23.0x faster)`."""
    change = f"{(ratio - 1) * 100:+.1f}%"
    if ratio >= 2:
        return f"{change} ({ratio:.1f}x slower)"
    if 0 < ratio <= 0.5:
        return f"{change} ({1 / ratio:.1f}x faster)"
    return change


def judge(  # noqa: PLR0913 (the rule's inputs, each documented)
    ratio: float,
    ci_low: float,
    ci_high: float,
    p_value: float,
    *,
    noise_floor_pct: float,
    alpha: float,
    drift_pct: float = 0.0,
    drift_source: str = "",
    shown_p: float | None = None,
    adjusted: str = "",
) -> tuple[Judgement, str]:
    """Judge a lower-is-better ratio (current / baseline) from its CI and p-value, in log space.

    The ratio is of absolute times or of relative times (kernel / reference per sample), as
    `compare_runs` chose; the rule is the same. Changes are judged as log ratios, so that a
    change and its reverse weigh alike (2x slower is as far from 1 as 2x faster) and a speed-up
    can cross any floor. f = noise_floor_pct / 100 is the user's noise floor, the band
    [1 / (1 + f), 1 + f]; F = max(f, drift_pct / 100) is the practical floor, the band
    [1 / (1 + F), 1 + F], widened by evidence of run-to-run noise that the CI cannot see
    (`drift_source` says which). `p_value` is the case's p-value as the caller adjusted it for
    the run's many cases; the reason shows `shown_p` (the test's own) followed by `adjusted`
    (how it was adjusted) when given. First match wins:

    1. regression:   p < alpha and ci_low > 1 + F    (the whole CI beyond the practical floor)
    2. improvement:  p < alpha and ci_high < 1 / (1 + F)
    3. neutral:      the CI lies inside the band of f, or p >= alpha and the CI neither lies
                     entirely beyond that band nor straddles all of it, and stays within the
                     band of 2f (a CI that holds larger changes is no evidence of none)
    4. inconclusive: everything else: a CI that reaches into the band, a CI wider than the
                     band without significance, or a change beyond f but not beyond F (as
                     large as the run-to-run noise seen, so it may be that noise)
    """
    f = math.log1p(noise_floor_pct / 100)
    floor = max(f, math.log1p(drift_pct / 100))
    shown = p_value if shown_p is None else shown_p
    change = f"{_times(ratio)}, CI {ci_low:.3f}–{ci_high:.3f}, p={shown:.2g}{adjusted}"
    widened = ""
    if floor > f:
        widened = f"; noise floor ±{drift_pct:.1f}% because {drift_source or 'of drift'}"
    low, high = math.log(ci_low), math.log(ci_high)
    significant = p_value < alpha
    if significant and low > floor:
        return "regression", f"slower: {change}{widened}"
    if significant and high < -floor:
        return "improvement", f"faster: {change}{widened}"
    return _neutral_or_inconclusive(
        (low, high), f, significant=significant, noise_floor_pct=noise_floor_pct,
        change=change, widened=widened,
    )  # fmt: skip


def _neutral_or_inconclusive(
    ci: tuple[float, float],
    f: float,
    *,
    significant: bool,
    noise_floor_pct: float,
    change: str,
    widened: str,
) -> tuple[Judgement, str]:
    """Rules 3 and 4 of `judge` (`ci` and `f` in log units), once no change beyond the
    practical floor was shown: does the evidence say there is none (neutral), or is it too
    weak to tell (inconclusive)?"""
    low, high = ci
    if -f <= low and high <= f:
        return "neutral", f"CI within the ±{noise_floor_pct:g}% noise floor: {change}"
    beyond = low > f or high < -f
    straddles = low < -f and high > f
    if not significant and not beyond and not straddles:
        if -2 * f <= low and high <= 2 * f:
            return "neutral", f"no significant change: {change}"
        # Not significant, yet the CI holds changes of more than twice the floor (a 1.8x
        # slowdown measured over eight noisy pairs was called neutral): no evidence of none.
        return (
            "inconclusive",
            f"not significant, but the CI reaches past twice the noise floor: {change}",
        )
    if not significant:
        what = "wider than the noise band" if straddles else "beyond the noise floor"
        return "inconclusive", f"CI {what} but the change is not significant: {change}"
    if beyond:
        way = "slower" if low > f else "faster"
        return "inconclusive", f"{way}, but within the run-to-run noise: {change}{widened}"
    return (
        "inconclusive",
        f"significant, but the CI reaches into the ±{noise_floor_pct:g}% noise band: {change}",
    )
