"""Two-sample statistics against scipy and a numpy bootstrap reference."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import mannwhitneyu  # pyright: ignore[reportUnknownVariableType]

from tile_stats import Comparison, compare, mann_whitney_u


def scipy_mwu(a: object, b: object) -> tuple[float, float]:
    # scipy ships no type stubs (scipy-stubs is not a dependency): its names are untyped.
    r = mannwhitneyu(a, b, alternative="two-sided", method="asymptotic", use_continuity=True)
    return float(r.statistic), float(r.pvalue)  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]


def pairs() -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(99)
    out = [
        (rng.normal(0, 1, 50), rng.normal(0.3, 1, 60)),
        (rng.normal(0, 1, 8), rng.normal(0, 1, 5)),
        (rng.lognormal(0, 1, 500), rng.lognormal(0.05, 1, 400)),
        (rng.normal(0, 1, 200), rng.normal(2, 1, 200)),  # tiny p-value
        (np.round(rng.normal(0, 2, 80)), np.round(rng.normal(0.5, 2, 70))),  # heavy ties
        (rng.integers(0, 3, 40).astype(float), rng.integers(0, 3, 45).astype(float)),
        (np.array([1.0]), np.array([2.0, 3.0])),
    ]
    return out


@pytest.mark.parametrize("ab", pairs(), ids=lambda ab: f"{ab[0].size}x{ab[1].size}")
def test_mann_whitney_matches_scipy(ab: tuple[np.ndarray, np.ndarray]) -> None:
    a, b = ab
    u, p = mann_whitney_u(a, b)
    want_u, want_p = scipy_mwu(a, b)
    assert u == want_u
    assert p == pytest.approx(want_p, rel=1e-9, abs=1e-300)
    assert mann_whitney_u(b, a) == pytest.approx((a.size * b.size - u, p), rel=1e-12)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(min_value=-5, max_value=5), min_size=1, max_size=40),
    st.lists(st.integers(min_value=-5, max_value=5), min_size=1, max_size=40),
)
def test_mann_whitney_matches_scipy_with_ties(a: list[int], b: list[int]) -> None:
    u, p = mann_whitney_u([float(x) for x in a], [float(x) for x in b])
    want_u, want_p = scipy_mwu(a, b)
    assert u == want_u
    assert p == pytest.approx(want_p, rel=1e-9, abs=1e-15)
    assert 0.0 <= p <= 1.0


def numpy_ratio_ci(
    base: np.ndarray, cur: np.ndarray, *, resamples: int, confidence: float
) -> tuple[float, float]:
    rng = np.random.default_rng(0)
    mb = np.median(base[rng.integers(0, base.size, (resamples, base.size))], axis=1)
    mc = np.median(cur[rng.integers(0, cur.size, (resamples, cur.size))], axis=1)
    alpha = 1 - confidence
    low, high = np.quantile(mc / mb, [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)


@pytest.mark.parametrize("slowdown", [1.0, 1.02, 1.3])
def test_compare_matches_references(slowdown: float) -> None:
    rng = np.random.default_rng(int(slowdown * 100))
    base = rng.lognormal(np.log(100.0), 0.05, size=300)
    cur = rng.lognormal(np.log(100.0 * slowdown), 0.05, size=250)
    c = compare(base, cur, resamples=20_000, seed=1)
    assert isinstance(c, Comparison)
    assert c.ratio == pytest.approx(np.median(cur) / np.median(base), rel=1e-14)
    ref = numpy_ratio_ci(base, cur, resamples=20_000, confidence=0.95)
    width = ref[1] - ref[0]
    assert c.ci_low == pytest.approx(ref[0], abs=0.12 * width)
    assert c.ci_high == pytest.approx(ref[1], abs=0.12 * width)
    assert c.ci_low <= c.ratio <= c.ci_high
    want_u, want_p = scipy_mwu(cur, base)  # U is that of `current`
    assert c.u_statistic == want_u
    assert c.p_value == pytest.approx(want_p, rel=1e-9, abs=1e-300)
    assert (c.n_baseline, c.n_current) == (300, 250)
    if slowdown == 1.3:
        assert c.ci_low > 1.25 and c.p_value < 1e-30


def test_compare_to_dict_and_determinism() -> None:
    base, cur = [10.0, 11.0, 10.5, 10.2, 10.9], [12.0, 12.5, 11.8, 12.2]
    c = compare(base, cur, seed=5)
    assert c == compare(base, cur, seed=5)
    d = c.to_dict()
    assert list(d) == [
        "ratio", "ci_low", "ci_high", "p_value", "u_statistic", "n_baseline", "n_current",
    ]  # fmt: skip
    assert all(getattr(c, k) == v for k, v in d.items())
    assert type(d["n_baseline"]) is int
    assert "ratio=" in repr(c)
