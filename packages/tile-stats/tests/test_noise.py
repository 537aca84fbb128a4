"""Run-to-run noise: within-run drift, the block bootstrap, t-intervals over groups of samples.

Drift and the grouped intervals are checked against straightforward numpy/scipy versions of
their formulas; the block bootstrap (its own random stream) by what its CI must do.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Sequence
from typing import Literal

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import t as scipy_t

import tile_stats
from tile_stats import StatsError, block_ratio_ci, grouped_ratio_ci, within_run_drift

# The median's standard error from its MAD for normal data, and the expected range of 4 normals.
MEDIAN_SE = 1.2533 * 1.4826
D2_OF_4 = 2.059


def numpy_drift(xs: list[float]) -> float | None:
    """Within-run drift as documented: blocks 2-5 of 5, range of medians less chance's."""
    n = len(xs)
    if n < 25 or np.median(xs) <= 0:
        return None
    cuts = [round(i * n / 5) for i in range(1, 6)]
    blocks = [np.asarray(xs[a:b]) for a, b in itertools.pairwise(cuts)]
    medians = [float(np.median(b)) for b in blocks]
    errors = [
        MEDIAN_SE * float(np.median(np.abs(b - m))) / math.sqrt(b.size)
        for b, m in zip(blocks, medians, strict=True)
    ]
    expected = D2_OF_4 * sum(errors) / len(errors)
    return max(0.0, max(medians) - min(medians) - expected) / float(np.median(xs))


def scipy_grouped_ci(
    base: list[float],
    cur: list[float],
    sizes: tuple[list[int], list[int]],
    spread: Literal["pooled", "welch"],
    confidence: float,
) -> tuple[float, float]:
    """The t-interval over log group medians, written out with statistics and scipy."""
    sides: list[list[float]] = []
    for xs, groups in zip((base, cur), sizes, strict=True):
        cuts = itertools.accumulate(groups, initial=0)
        sides.append([math.log(float(np.median(xs[a:b]))) for a, b in itertools.pairwise(cuts)])
    if spread == "pooled":
        df = sum(len(v) - 1 for v in sides)
        squares = sum(statistics.variance(v) * (len(v) - 1) for v in sides if len(v) > 1)
        se = math.sqrt(squares / df * sum(1 / len(v) for v in sides))
    else:
        terms = [statistics.variance(v) / len(v) for v in sides]
        se = math.sqrt(sum(terms))
        df = se**4 / sum(t * t / (len(v) - 1) for t, v in zip(terms, sides, strict=True))
    ratio = float(np.median(cur) / np.median(base))
    t = float(scipy_t.ppf(1 - (1 - confidence) / 2, df))  # pyright: ignore[reportUnknownMemberType]
    return ratio * math.exp(-t * se), ratio * math.exp(t * se)


def levels(
    rng: np.random.Generator, center: float, n_groups: int, size: int, spread: float
) -> tuple[list[float], list[int]]:
    """Groups of `size` samples, each group at its own level around `center`."""
    xs: list[float] = []
    for _ in range(n_groups):
        level = center * (1 + rng.uniform(-spread, spread))
        xs += list(level * (1 + rng.uniform(-0.02, 0.02, size)))
    return xs, [size] * n_groups


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(min_value=0.5, max_value=2.0), min_size=0, max_size=120),
    st.floats(min_value=-0.3, max_value=0.3),
)
def test_drift_matches_its_formula(xs: list[float], trend: float) -> None:
    climbing = [x * (1 + trend * i / max(len(xs), 1)) for i, x in enumerate(xs)]
    got, want = within_run_drift(climbing), numpy_drift(climbing)
    if want is None:
        assert got is None
    else:
        assert got is not None and got >= 0.0
        assert got == pytest.approx(want, rel=1e-12, abs=1e-15)


def test_drift_of_a_climb_and_of_a_slow_start() -> None:
    # +20% over the run: blocks 2-5 span about 12% of it, far beyond their scatter.
    rng = np.random.default_rng(1)
    trend = [x * (1 + 0.2 * i / 99) for i, x in enumerate(rng.uniform(0.99, 1.01, 100))]
    assert (within_run_drift(trend) or 0.0) > 0.08
    # A slow first fifth is the end of a warm-up, which every run has: not drift.
    start = [1.5] * 20 + [1.0] * 80
    assert within_run_drift(start) == 0.0
    assert within_run_drift([1.0] * 24) is None
    assert within_run_drift([]) is None
    with pytest.raises(StatsError, match="index 30"):
        within_run_drift([1.0] * 30 + [math.nan])


@settings(max_examples=100, deadline=None)
@given(
    st.integers(min_value=0, max_value=2**32),
    st.sampled_from(["pooled", "welch"]),
    st.floats(min_value=0.5, max_value=0.999),
)
def test_grouped_ci_matches_its_formula(
    seed: int, spread: Literal["pooled", "welch"], confidence: float
) -> None:
    rng = np.random.default_rng(seed)
    base, base_sizes = levels(rng, 1e-3, int(rng.integers(2, 9)), int(rng.integers(1, 40)), 0.1)
    # A pooled baseline is compared with a run of one group or more; rounds need two a side.
    n_cur = int(rng.integers(1 if spread == "pooled" else 2, 9))
    cur, cur_sizes = levels(rng, 1.1e-3, n_cur, int(rng.integers(1, 40)), 0.1)
    got = grouped_ratio_ci(
        base,
        cur,
        baseline_sizes=base_sizes,
        current_sizes=cur_sizes,
        spread=spread,
        confidence=confidence,
    )
    want = scipy_grouped_ci(base, cur, (base_sizes, cur_sizes), spread, confidence)
    assert got == pytest.approx(want, rel=1e-10)
    ratio = tile_stats.median(cur) / tile_stats.median(base)
    assert got[0] <= ratio <= got[1]


def test_grouped_ci_needs_groups_that_fit() -> None:
    xs = [1.0] * 6

    def ci(
        base_sizes: Sequence[int],
        cur_sizes: Sequence[int],
        spread: Literal["pooled", "welch"] = "welch",
    ) -> tuple[float, float]:
        return grouped_ratio_ci(
            xs, xs, baseline_sizes=base_sizes, current_sizes=cur_sizes, spread=spread
        )

    assert ci([3, 3], (2, 2, 2)) == (1.0, 1.0)
    with pytest.raises(StatsError, match=r"baseline group sizes \[3, 2\] must be positive"):
        ci([3, 2], [2, 2, 2])
    with pytest.raises(StatsError, match="current_sizes must be a positive integer, got -1"):
        ci([3, 3], [7, -1])
    with pytest.raises(StatsError, match="two or more groups on each side"):
        ci([6], [3, 3])
    with pytest.raises(StatsError, match="two or more groups on one side"):
        ci([6], [6], "pooled")
    with pytest.raises(StatsError, match='spread must be "pooled", "welch" or "paired", got "t"'):
        ci([3, 3], [3, 3], "t")  # pyright: ignore[reportArgumentType]
    with pytest.raises(StatsError, match="baseline group 1 has median 0"):
        grouped_ratio_ci(
            [1.0, 0.0], xs, baseline_sizes=[1, 1], current_sizes=[3, 3], spread="welch"
        )


def odd_stretch(rng: np.random.Generator, center: float) -> list[float]:
    """200 samples around `center`, the last 30 of them 30% fast (one odd stretch)."""
    xs = center * rng.uniform(0.98, 1.02, 200)
    xs[170:] *= 0.7
    return list(xs)


def test_block_ci_moves_with_an_odd_stretch_only_as_a_median_does() -> None:
    rng = np.random.default_rng(7)
    base, cur = odd_stretch(rng, 1.0), odd_stretch(rng, 1.1)
    low, high = block_ratio_ci(base, cur, seed=3)
    assert (low, high) == block_ratio_ci(base, cur, seed=3)
    assert (low, high) != block_ratio_ci(base, cur, seed=4)
    assert 1.05 < low <= tile_stats.median(cur) / tile_stats.median(base) <= high < 1.15


def test_block_ci_is_wider_than_the_plain_one_when_a_run_wanders() -> None:
    rng = np.random.default_rng(8)
    base = list(rng.uniform(0.96, 1.04, 200))
    cur = [x * (1.03 if i >= 100 else 1.0) for i, x in enumerate(rng.uniform(0.96, 1.04, 200))]
    block = block_ratio_ci(base, cur)
    plain = tile_stats.compare(base, cur)
    assert block[1] - block[0] > plain.ci_high - plain.ci_low


@settings(max_examples=50, deadline=None)
@given(
    st.integers(min_value=5, max_value=300),
    st.integers(min_value=5, max_value=300),
    st.integers(min_value=0, max_value=2**64 - 1),
)
def test_block_ci_scales_with_the_current_run(n_base: int, n_cur: int, seed: int) -> None:
    # The draws depend on the seed and the sizes alone: doubling the current run doubles the CI.
    rng = np.random.default_rng(seed % 2**32)
    base, cur = list(rng.uniform(0.8, 1.2, n_base)), list(rng.uniform(0.8, 1.2, n_cur))
    low, high = block_ratio_ci(base, cur, seed=seed, resamples=200)
    assert low <= high
    doubled = block_ratio_ci(base, [2 * x for x in cur], seed=seed, resamples=200)
    assert doubled == (2 * low, 2 * high)


def test_block_ci_rejects_what_has_no_ratio() -> None:
    with pytest.raises(StatsError, match="at least 5 samples a side, got 4"):
        block_ratio_ci([1.0] * 4, [1.0] * 10)
    with pytest.raises(StatsError, match="baseline median is 0"):
        block_ratio_ci([0.0] * 10, [1.0] * 10)
    with pytest.raises(StatsError, match="sample is empty"):
        block_ratio_ci([1.0] * 10, [])
    with pytest.raises(StatsError, match="resamples must be"):
        block_ratio_ci([1.0] * 10, [1.0] * 10, resamples=0)
