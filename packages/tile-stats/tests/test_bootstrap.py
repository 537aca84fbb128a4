"""Bootstrap intervals against a numpy reference of the same percentile method."""

from __future__ import annotations

from typing import Literal

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tile_stats import bootstrap_ci, summarize

Stat = Literal["median", "mean"]


def numpy_ci(
    xs: np.ndarray, statistic: Stat, *, resamples: int, confidence: float, seed: int
) -> tuple[float, float]:
    """Percentile bootstrap: resample with replacement, take the alpha/2 and 1-alpha/2 quantiles."""
    rng = np.random.default_rng(seed)
    draws = xs[rng.integers(0, xs.size, size=(resamples, xs.size))]
    stats = np.median(draws, axis=1) if statistic == "median" else draws.mean(axis=1)
    alpha = 1 - confidence
    low, high = np.quantile(stats, [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)


@pytest.mark.parametrize("statistic", ["median", "mean"])
@pytest.mark.parametrize("confidence", [0.8, 0.95, 0.99])
@pytest.mark.parametrize("n", [30, 400])
def test_matches_numpy_reference(statistic: Stat, confidence: float, n: int) -> None:
    xs = np.random.default_rng(n).lognormal(0.0, 0.3, size=n)
    ours = bootstrap_ci(xs, statistic=statistic, confidence=confidence, resamples=20_000, seed=3)
    ref = numpy_ci(xs, statistic, resamples=20_000, confidence=confidence, seed=3)
    # Both are Monte Carlo estimates of the same interval; the endpoints wander by a few
    # percent of its width with 20,000 resamples (more for the lumpy bootstrap median).
    width = ref[1] - ref[0]
    tol = 0.04 if statistic == "mean" else 0.12
    assert ours[0] == pytest.approx(ref[0], abs=tol * width)
    assert ours[1] == pytest.approx(ref[1], abs=tol * width)


def test_interval_of_the_mean_is_near_the_normal_theory_one() -> None:
    xs = np.random.default_rng(7).normal(10.0, 2.0, size=2000)
    low, high = bootstrap_ci(xs, statistic="mean", resamples=20_000)
    half = 1.959964 * xs.std(ddof=1) / np.sqrt(xs.size)
    assert low == pytest.approx(xs.mean() - half, abs=0.05 * half)
    assert high == pytest.approx(xs.mean() + half, abs=0.05 * half)


def test_summary_ci_is_the_median_bootstrap() -> None:
    xs = np.random.default_rng(1).exponential(size=300)
    s = summarize(xs, confidence=0.9, resamples=3000, seed=11)
    assert (s.ci_low, s.ci_high) == bootstrap_ci(xs, confidence=0.9, resamples=3000, seed=11)


def test_wider_confidence_gives_wider_interval() -> None:
    xs = np.random.default_rng(2).normal(size=500)
    widths: list[float] = []
    for c in (0.5, 0.8, 0.95, 0.999):
        low, high = bootstrap_ci(xs, confidence=c, resamples=5000)
        widths.append(high - low)
    assert widths == sorted(widths)
    assert widths[0] < widths[-1]


def test_seeds() -> None:
    xs = np.random.default_rng(5).lognormal(size=200)
    assert bootstrap_ci(xs, seed=1) == bootstrap_ci(xs, seed=1)
    intervals = {bootstrap_ci(xs, seed=s, resamples=2000) for s in range(10)}
    # The median's bootstrap distribution is lumpy, so two seeds can share an endpoint value.
    assert len(intervals) >= 5
    means = {bootstrap_ci(xs, statistic="mean", seed=s) for s in range(10)}
    assert len(means) == 10


def test_negative_seeds_wrap_modulo_2_64() -> None:
    xs = [1.0, 2.0, 3.0, 5.0, 8.0]
    assert bootstrap_ci(xs, seed=-1) == bootstrap_ci(xs, seed=2**64 - 1)


def test_big_workload_is_deterministic() -> None:
    # Large enough to take the multi-threaded path; the result must not depend on it.
    xs = np.random.default_rng(9).normal(size=5000)
    a = bootstrap_ci(xs, resamples=1000, seed=4)
    assert a == bootstrap_ci(xs, resamples=1000, seed=4)
    assert a == bootstrap_ci(xs.tolist(), resamples=1000, seed=4)


finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)


@settings(max_examples=150, deadline=None)
@given(
    xs=st.lists(finite, min_size=1, max_size=100),
    statistic=st.sampled_from(["median", "mean"]),
    confidence=st.floats(min_value=0.01, max_value=0.999),
    seed=st.integers(min_value=0, max_value=2**64 - 1),
)
def test_interval_brackets_estimate_and_is_reproducible(
    xs: list[float], statistic: Stat, confidence: float, seed: int
) -> None:
    ci = bootstrap_ci(xs, statistic=statistic, confidence=confidence, resamples=300, seed=seed)
    estimate = float(np.median(xs)) if statistic == "median" else float(np.mean(xs))
    assert ci[0] <= ci[1]
    assert ci[0] <= estimate + 1e-9 * max(1.0, abs(estimate))
    assert ci[1] >= estimate - 1e-9 * max(1.0, abs(estimate))
    assert min(xs) <= ci[0] and ci[1] <= max(xs)
    assert ci == bootstrap_ci(
        xs, statistic=statistic, confidence=confidence, resamples=300, seed=seed
    )


@settings(max_examples=50, deadline=None)
@given(
    data_seed=st.integers(min_value=0, max_value=2**32),
    n=st.integers(min_value=20, max_value=300),
    seeds=st.lists(
        st.integers(min_value=0, max_value=2**64 - 1), min_size=2, max_size=2, unique=True
    ),
)
def test_different_seeds_differ(data_seed: int, n: int, seeds: list[int]) -> None:
    # Continuous data: the bootstrap mean takes so many values that a tie means a shared stream.
    xs = np.random.default_rng(data_seed).normal(size=n)
    a = bootstrap_ci(xs, statistic="mean", resamples=500, seed=seeds[0])
    b = bootstrap_ci(xs, statistic="mean", resamples=500, seed=seeds[1])
    assert a != b
