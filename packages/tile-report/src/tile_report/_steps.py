"""Step detection over a case's history: the commits where its level changed by more than the
noise between runs, in the spirit of asv's regression finder.

The series is first reduced to one value per commit (the median of that commit's runs). In
log time, a piecewise-constant fit picks the segments that minimise the summed absolute
deviation from each segment's median, in units of the noise, plus a penalty per extra
segment (an exact dynamic programme over O(n^2) segments, each with at least two runs behind
it, so one slow run is a hiccup, not a level). L1 and medians keep a wild run from making a
step of its own. Each boundary found must then be a change of at least `min_change` and at
least `z_min` standard errors of the difference of the two levels; the weakest boundary that
is not is merged away until all are.

The noise: segmenting, the scatter between consecutive commits (a step moves one difference,
which the median ignores); judging boundaries, the scatter of the values around the levels
found (which no step inflates). Neither goes below the scatter between runs of one commit,
the runs' own CI of the median, or 0.2%. On synthetic series (tests/test_steps.py) a 10% step
with 1% noise is found at its commit in 7 commits; with 3% noise, 1 in 100 flat series of 30
commits shows a (5%) step.
"""

from __future__ import annotations

import bisect
import itertools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Final, Literal

import tile_artifacts as ta
from tile_report._history_rows import Point, Series

__all__ = [
    "MIN_CHANGE",
    "MIN_POINTS",
    "MIN_RUNS",
    "Z_MIN",
    "CommitPoint",
    "Fit",
    "Level",
    "Spike",
    "Step",
    "Trend",
    "commit_points",
    "fit_steps",
    "step_carrier",
    "trends",
]

MIN_CHANGE: Final = 0.05
"""A step smaller than 5% is not reported, however clear (asv's default threshold too)."""
Z_MIN: Final = 4.0
"""A step must be this many standard errors of the difference between the two levels."""
MIN_POINTS: Final = 4
"""Fewer commits than this say nothing about noise, so nothing about steps."""
MIN_RUNS: Final = 2
"""Runs behind every level: one slow run is a hiccup until a second run confirms it."""
_NOISE_FLOOR: Final = 0.002  # no clock is steadier than 0.2% between processes
_MAD_TO_SIGMA: Final = 1.4826
_MEDIAN_SE: Final = 1.2533  # standard error of a median is about this times sigma / sqrt(n)


@dataclass(frozen=True, slots=True)
class CommitPoint:
    """One commit's value: the median of its runs' medians, and the range of their CIs."""

    commit: str | None
    label: str
    subject: str | None
    time: str
    value_s: float
    low_s: float
    high_s: float
    runs: tuple[Point, ...]

    @property
    def dirty(self) -> bool:
        return any(p.dirty for p in self.runs)

    def kernel_medians(self) -> tuple[dict[str, float], dict[str, str]]:
        """Per device kernel name: the median of its runs' medians, and its label; empty when
        no run of the commit was CUPTI-timed."""
        values: dict[str, list[float]] = {}
        labels: dict[str, str] = {}
        for run in self.runs:
            for name, label, median in run.kernels:
                values.setdefault(name, []).append(median)
                labels[name] = label
        return {name: statistics.median(v) for name, v in values.items()}, labels


@dataclass(frozen=True, slots=True)
class Level:
    """Points [start, stop) sit at one level (the median of their values, in seconds)."""

    start: int
    stop: int
    value_s: float


@dataclass(frozen=True, slots=True)
class Step:
    """A change of level at point `index` (its first commit); `standing` when the latest level
    is still beyond `min_change` from the level before the step."""

    index: int
    before_s: float
    after_s: float
    change: float
    z: float
    kind: Literal["regression", "improvement"]
    standing: bool


@dataclass(frozen=True, slots=True)
class Fit:
    """A series' commits, the levels found, the steps between them and the noise assumed."""

    points: tuple[CommitPoint, ...]
    levels: tuple[Level, ...]
    steps: tuple[Step, ...]
    noise: float
    """Between-run scatter as a fraction (sigma of log time)."""
    spikes: tuple[Spike, ...] = ()
    """Single commits far off their level: too short to be a step, too far to be noise."""


@dataclass(frozen=True, slots=True)
class Spike:
    """Point `index` sits `change` (a fraction) off its level, by `z` standard deviations of
    the noise between runs, and its neighbours do not follow it."""

    index: int
    change: float
    z: float


def commit_points(series: Series, *, include_dirty: bool = False) -> list[CommitPoint]:
    """One point per commit, in series order; a dirty run or one without a commit stands alone
    (its code is not that of any commit); dirty runs are left out unless asked for."""
    groups: dict[str, list[Point]] = {}
    for p in series.points:
        if p.dirty and not include_dirty:
            continue
        key = p.commit if p.commit and not p.dirty else f"run:{p.run_id}"
        groups.setdefault(key, []).append(p)
    out: list[CommitPoint] = []
    for runs in groups.values():
        first = runs[0]
        value = statistics.median(p.median_s for p in runs)
        # Without a commit (a project without git), the run's time names it: a run id's
        # random suffix told the reader nothing.
        label = first.commit[:7] if first.commit else first.created_at[5:16].replace("T", " ")
        out.append(
            CommitPoint(
                commit=first.commit,
                label=label + ("+" if first.dirty else ""),
                subject=first.subject,
                time=first.commit_time or first.created_at,
                value_s=value,
                low_s=min(p.ci_low_s if p.ci_low_s is not None else p.median_s for p in runs),
                high_s=max(p.ci_high_s if p.ci_high_s is not None else p.median_s for p in runs),
                runs=tuple(runs),
            )
        )
    return out


def _robust_sigma(diffs: Sequence[float]) -> float:
    """Sigma of one value from absolute differences of pairs (each difference has sigma*sqrt 2)."""
    if len(diffs) < 2:
        return 0.0
    return _MAD_TO_SIGMA * statistics.median(diffs) / math.sqrt(2)


def _floor_noise(points: Sequence[CommitPoint]) -> float:
    """What no level can be steadier than: the scatter between runs of one commit, the runs'
    own CI of the median (as a sigma), and 0.2%."""
    repeats = [
        abs(math.log(b.median_s) - math.log(a.median_s))
        for p in points
        for a, b in pairwise(p.runs)
    ]
    halves = [
        (math.log(r.ci_high_s) - math.log(r.ci_low_s)) / (2 * 1.96)
        for p in points
        for r in p.runs
        if r.ci_low_s and r.ci_high_s and r.ci_high_s >= r.ci_low_s > 0
    ]
    within = statistics.median(halves) if halves else 0.0
    return max(_robust_sigma(repeats), within, _NOISE_FLOOR)


def _residual_noise(ys: Sequence[float], levels: Sequence[tuple[int, int, float]]) -> float:
    """Sigma of the values around their segment's level (MAD, corrected for the levels fitted):
    with the steps taken out, what is left is the noise between runs."""
    residuals = [abs(ys[i] - level) for a, b, level in levels for i in range(a, b)]
    spare = len(ys) - len(levels)
    if spare < 2:
        return 0.0
    return _MAD_TO_SIGMA * statistics.median(residuals) * math.sqrt(len(ys) / spare)


def _l1_cost(ordered: list[float]) -> float:
    """Sum of absolute deviations from the median of sorted values: top half minus bottom."""
    half = len(ordered) // 2
    return sum(ordered[len(ordered) - half :]) - sum(ordered[:half])


def _partition(ys: Sequence[float], runs: Sequence[int], sigma: float, penalty: float) -> list[int]:
    """Start indices of the optimal segments (the first is 0), by dynamic programming; every
    segment has at least MIN_RUNS runs behind it (or is the whole series)."""
    n = len(ys)
    behind = [0, *itertools.accumulate(runs)]
    best = [0.0] * (n + 1)
    best[0] = -penalty
    start_of = [0] * (n + 1)
    for stop in range(1, n + 1):
        best[stop] = math.inf
        window: list[float] = []
        for start in range(stop - 1, -1, -1):
            bisect.insort(window, ys[start])
            if behind[stop] - behind[start] < MIN_RUNS and (start, stop) != (0, n):
                continue
            total = best[start] + _l1_cost(window) / sigma + penalty
            if total < best[stop]:
                best[stop], start_of[stop] = total, start
    starts: list[int] = []
    stop = n
    while stop > 0:
        stop = start_of[stop]
        starts.append(stop)
    return sorted(starts)


def _levels(ys: Sequence[float], starts: Sequence[int]) -> list[tuple[int, int, float]]:
    bounds = [*starts, len(ys)]
    return [(a, b, statistics.median(ys[a:b])) for a, b in pairwise(bounds)]


def fit_steps(
    points: Sequence[CommitPoint], *, min_change: float = MIN_CHANGE, z_min: float = Z_MIN
) -> Fit:
    """Find the steps of a series of commit points (see the module docstring for the rule)."""
    if len(points) < MIN_POINTS:
        flat = [Level(0, len(points), statistics.median(p.value_s for p in points))]
        return Fit(tuple(points), tuple(flat if points else []), (), _NOISE_FLOOR)
    ys = [math.log(p.value_s) for p in points]
    floor = _floor_noise(points)
    # Segmenting, the scatter between consecutive commits stands for the noise (a step moves
    # one difference, which the median ignores); judging each boundary, the scatter left
    # around the levels found does, which no step inflates.
    between = _robust_sigma([abs(b - a) for a, b in pairwise(ys)])
    runs = [len(p.runs) for p in points]
    starts = _partition(ys, runs, max(between, floor), penalty=math.log(len(ys)) + 3.0)
    threshold = math.log1p(min_change)
    while True:
        levels = _levels(ys, starts)
        sigma = max(_residual_noise(ys, levels), floor)
        weakest: tuple[float, int] | None = None
        for k in range(1, len(levels)):
            (a0, a1, ya), (b0, b1, yb) = levels[k - 1], levels[k]
            z = abs(yb - ya) / (_MEDIAN_SE * sigma * math.sqrt(1 / (a1 - a0) + 1 / (b1 - b0)))
            if (abs(yb - ya) < threshold or z < z_min) and (weakest is None or z < weakest[0]):
                weakest = (z, k)
        if weakest is None:
            break
        del starts[weakest[1]]
    return _fit(points, levels, sigma, threshold)


def _fit(
    points: Sequence[CommitPoint],
    levels: Sequence[tuple[int, int, float]],
    sigma: float,
    threshold: float,
) -> Fit:
    last = levels[-1][2]
    steps: list[Step] = []
    for (a0, a1, ya), (b0, b1, yb) in pairwise(levels):
        z = abs(yb - ya) / (_MEDIAN_SE * sigma * math.sqrt(1 / (a1 - a0) + 1 / (b1 - b0)))
        slower = yb > ya
        standing = (last - ya >= threshold) if slower else (ya - last >= threshold)
        steps.append(
            Step(
                index=b0,
                before_s=math.exp(ya),
                after_s=math.exp(yb),
                change=math.exp(yb - ya) - 1,
                z=z,
                kind="regression" if slower else "improvement",
                standing=standing,
            )
        )
    return Fit(
        points=tuple(points),
        levels=tuple(Level(a, b, math.exp(y)) for a, b, y in levels),
        steps=tuple(steps),
        noise=sigma,
        spikes=tuple(_spikes(points, levels, sigma, threshold)),
    )


def _spikes(
    points: Sequence[CommitPoint],
    levels: Sequence[tuple[int, int, float]],
    sigma: float,
    threshold: float,
) -> list[Spike]:
    """Commits off their level by at least `min_change` and Z_MIN sigmas: a one-run slowdown
    (or speed-up) the step rule rightly refuses as a level, but one a person should see."""
    found: list[Spike] = []
    for a, b, level in levels:
        for i in range(a, b):
            off = math.log(points[i].value_s) - level
            z = abs(off) / sigma if sigma > 0 else math.inf
            if abs(off) >= threshold and z >= Z_MIN:
                found.append(Spike(index=i, change=math.exp(off) - 1, z=z))
    return found


@dataclass(frozen=True, slots=True)
class Trend:
    """A series and the steps found in it."""

    series: Series
    fit: Fit


def trends(
    series: Sequence[Series],
    *,
    min_change: float = MIN_CHANGE,
    include_dirty: bool = False,
    last: int | None = None,
) -> list[Trend]:
    """Fit every series (its `last` commits when given), ordered by case id, device, timer."""
    out: list[Trend] = []
    for s in series:
        points = commit_points(s, include_dirty=include_dirty)
        if last is not None:
            points = points[-last:] if last > 0 else []
        if points:
            out.append(Trend(s, fit_steps(points, min_change=min_change)))
    out.sort(key=lambda t: (t.series.case_id, t.series.device, t.series.timer or ""))
    return out


def step_carrier(fit: Fit, step: Step) -> str | None:
    """`92% in `fusion_3 [...]``: the device kernel that carries a step, when the commits on
    both sides have a per-kernel breakdown and one kernel holds most of the change."""
    before, before_labels = fit.points[step.index - 1].kernel_medians()
    after, after_labels = fit.points[step.index].kernel_medians()
    if not before or not after:
        return None
    found = ta.kernels.carrier(before, after)
    if found is None:
        return None
    name, share = found
    return f"{share:.0%} in `{after_labels.get(name) or before_labels[name]}`"
