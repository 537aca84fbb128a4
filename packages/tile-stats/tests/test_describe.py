"""Point statistics against numpy, input conversion, and ordering properties."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tile_stats
from tile_stats import Summary, summarize

QS = [0.0, 0.01, 0.05, 0.1, 0.25, 0.33, 0.5, 0.75, 0.9, 0.95, 0.99, 1.0]

finite = st.floats(min_value=-1e9, max_value=1e9, allow_nan=False, allow_infinity=False)
samples = st.lists(finite, min_size=1, max_size=300)


def random_samples() -> list[np.ndarray]:
    """Samples of many sizes and shapes, ties included."""
    rng = np.random.default_rng(2024)
    out = [rng.lognormal(0.0, 0.5, size=n) for n in (1, 2, 3, 4, 5, 10, 11, 100, 1001)]
    out.append(rng.normal(-3.0, 10.0, size=257))
    out.append(np.round(rng.normal(0.0, 2.0, size=500)))  # many ties
    out.append(np.full(20, 7.25))
    return out


@pytest.mark.parametrize("xs", random_samples(), ids=lambda xs: f"n{xs.size}")
def test_quantiles_match_numpy(xs: np.ndarray) -> None:
    for q in QS:
        assert tile_stats.quantile(xs, q) == pytest.approx(np.quantile(xs, q), rel=1e-13, abs=1e-13)
    assert tile_stats.median(xs) == pytest.approx(np.median(xs), rel=1e-13, abs=1e-13)


@pytest.mark.parametrize("xs", random_samples(), ids=lambda xs: f"n{xs.size}")
def test_summary_matches_numpy(xs: np.ndarray) -> None:
    s = summarize(xs)
    med = np.median(xs)
    q1, q3 = np.quantile(xs, [0.25, 0.75])
    assert s.n == xs.size
    assert (s.min, s.max) == (xs.min(), xs.max())
    assert s.mean == pytest.approx(xs.mean(), rel=1e-12, abs=1e-12)
    want_stdev = xs.std(ddof=1) if xs.size > 1 else 0.0
    assert s.stdev == pytest.approx(want_stdev, rel=1e-10, abs=1e-12)
    assert s.median == pytest.approx(med, rel=1e-13)
    assert s.mad == pytest.approx(np.median(np.abs(xs - med)), rel=1e-12, abs=1e-12)
    assert (s.q1, s.q3) == pytest.approx((q1, q3), rel=1e-13)
    assert (s.p5, s.p95) == pytest.approx(tuple(np.quantile(xs, [0.05, 0.95])), rel=1e-13)
    iqr = q3 - q1
    beyond_mild = (xs < q1 - 1.5 * iqr) | (xs > q3 + 1.5 * iqr)
    beyond_severe = (xs < q1 - 3 * iqr) | (xs > q3 + 3 * iqr)
    assert s.outliers_severe == int(beyond_severe.sum())
    assert s.outliers_mild == int((beyond_mild & ~beyond_severe).sum())
    assert s.ci_low <= s.median <= s.ci_high


def test_tukey_outliers_known_case() -> None:
    xs = [*range(1, 21), 35, 100]  # q1 = 6.25, q3 = 16.75: 35 is mild, 100 severe
    s = summarize(xs)
    assert (s.outliers_mild, s.outliers_severe) == (1, 1)


def test_accepts_any_sequence_of_numbers() -> None:
    values = [3.0, 1.0, 2.0, 10.0]
    want = 2.5
    assert tile_stats.median(values) == want
    assert tile_stats.median(tuple(values)) == want
    assert tile_stats.median(np.array(values)) == want
    assert tile_stats.median(np.array(values, dtype=np.float32)) == want
    assert tile_stats.median(np.array([3, 1, 2, 10])) == want
    assert tile_stats.median(np.array(values)[::-1]) == want  # non-contiguous view
    assert tile_stats.median(x for x in values) == want
    assert tile_stats.median([3, 1, 2, 10]) == want
    assert tile_stats.median(range(5)) == 2.0


def test_non_numbers_raise_type_error() -> None:
    with pytest.raises(TypeError):
        tile_stats.median(["a", "b"])  # pyright: ignore[reportArgumentType]
    with pytest.raises(TypeError):
        tile_stats.median(3.0)  # pyright: ignore[reportArgumentType]


def test_summary_is_frozen_and_has_plain_dict() -> None:
    s = summarize([1.0, 2.0, 3.0, 4.0])
    with pytest.raises(AttributeError):
        s.median = 0.0  # pyright: ignore[reportAttributeAccessIssue]
    d = s.to_dict()
    assert list(d) == [
        "n", "min", "max", "mean", "median", "stdev", "mad", "q1", "q3", "p5", "p95",
        "ci_low", "ci_high", "outliers_mild", "outliers_severe",
    ]  # fmt: skip
    assert all(getattr(s, k) == v for k, v in d.items())
    assert type(d["n"]) is int and type(d["outliers_mild"]) is int
    assert s == summarize([1.0, 2.0, 3.0, 4.0])
    assert "median=2.5" in repr(s)
    assert isinstance(s, Summary)


def test_single_value() -> None:
    s = summarize([5.0])
    assert (s.n, s.min, s.max, s.median, s.mean, s.stdev, s.mad) == (1, 5, 5, 5, 5, 0, 0)
    assert (s.ci_low, s.ci_high) == (5.0, 5.0)


@settings(max_examples=200, deadline=None)
@given(samples)
def test_order_of_statistics(xs: list[float]) -> None:
    s = summarize(xs, resamples=200)
    assert s.min <= s.p5 <= s.q1 <= s.median <= s.q3 <= s.p95 <= s.max
    assert s.min <= s.mean <= s.max
    assert s.ci_low <= s.median <= s.ci_high
    assert s.min <= s.ci_low and s.ci_high <= s.max
    assert s.stdev >= 0 and s.mad >= 0
    assert 0 <= s.outliers_severe + s.outliers_mild <= s.n
    assert all(math.isfinite(v) for v in s.to_dict().values())


@settings(max_examples=200, deadline=None)
@given(samples, st.floats(min_value=0.0, max_value=1.0))
def test_quantile_matches_numpy_property(xs: list[float], q: float) -> None:
    want = float(np.quantile(np.array(xs), q))
    assert tile_stats.quantile(xs, q) == want  # same interpolation formula, bit for bit
