"""t tests over groups of samples and Benjamini-Hochberg, against scipy and statsmodels' formulas."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import t as scipy_t

import tile_stats
from tile_stats import StatsError, benjamini_hochberg, grouped_compare, run_blocks


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(0.5, 2.0), min_size=2, max_size=8),
    st.lists(st.floats(0.5, 2.0), min_size=2, max_size=8),
)
def test_welch_p_value_is_scipys_on_the_log_group_medians(a: list[float], b: list[float]) -> None:
    # One sample per group: the group medians are the samples themselves.
    c = grouped_compare(a, b, baseline_sizes=[1] * len(a), current_sizes=[1] * len(b),
                        spread="welch")  # fmt: skip
    la, lb = np.log(a), np.log(b)
    va, vb = la.var(ddof=1) / la.size, lb.var(ddof=1) / lb.size
    if va + vb == 0:
        assert c.p_value == (1.0 if la.mean() == lb.mean() else 0.0)
        return
    # Welch's t test as scipy.stats.ttest_ind(lb, la, equal_var=False) computes it.
    df = (va + vb) ** 2 / (va**2 / (la.size - 1) + vb**2 / (lb.size - 1))
    t = (lb.mean() - la.mean()) / math.sqrt(va + vb)
    want = 2 * float(scipy_t.sf(abs(t), df))  # pyright: ignore[reportUnknownMemberType]
    assert c.p_value == pytest.approx(want, rel=1e-6, abs=1e-12)
    assert c.ci_low <= c.ratio <= c.ci_high
    assert (c.ci_low, c.ci_high) == tile_stats.grouped_ratio_ci(
        a, b, baseline_sizes=[1] * len(a), current_sizes=[1] * len(b), spread="welch"
    )


def test_pooled_p_value_uses_the_spread_of_the_runs() -> None:
    base = [math.exp(x) for x in (0.1, -0.1, 0.05, -0.05)]
    c = grouped_compare(base, [math.exp(0.3)], baseline_sizes=[1] * 4, current_sizes=[1],
                        spread="pooled")  # fmt: skip
    se = math.sqrt(np.var(np.log(base), ddof=1) * (1 / 4 + 1))
    assert c.df == 3 and c.se == pytest.approx(se)
    want = 2 * float(scipy_t.sf(0.3 / se, 3))  # pyright: ignore[reportUnknownMemberType]
    assert c.p_value == pytest.approx(want)


def test_run_blocks_leave_out_the_first_block() -> None:
    assert run_blocks(14) is None
    assert run_blocks(15) == (5, [5, 5])
    skip, sizes = run_blocks(1000) or (0, [])
    assert skip + sum(sizes) == 1000 and len(sizes) == 8
    with pytest.raises(StatsError, match="n must be a positive integer"):
        run_blocks(-1)


def statsmodels_bh(p: list[float]) -> list[float]:
    """statsmodels' multipletests(p, method="fdr_bh")[1], written out."""
    order = np.argsort(p)
    ranked = np.asarray(p)[order] * len(p) / np.arange(1, len(p) + 1)
    ranked = np.minimum.accumulate(ranked[::-1])[::-1].clip(max=1)
    out = np.empty(len(p))
    out[order] = ranked
    return out.tolist()


@settings(max_examples=80, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=40))
def test_benjamini_hochberg_matches_statsmodels(p: list[float]) -> None:
    assert benjamini_hochberg(p) == pytest.approx(statsmodels_bh(p), rel=1e-12, abs=1e-15)


def test_benjamini_hochberg_family_and_errors() -> None:
    assert benjamini_hochberg([0.01], family=5) == pytest.approx([0.05])
    assert benjamini_hochberg([]) == []
    with pytest.raises(StatsError, match="family"):
        benjamini_hochberg([0.1, 0.2], family=1)
    with pytest.raises(StatsError, match=r"\[0, 1\]"):
        benjamini_hochberg([1.5])


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(0.5, 2.0), min_size=2, max_size=6),
    st.floats(0.5, 2.0),
    st.floats(0.0, 0.5),
    st.floats(0.0, 10.0),
)
def test_a_prior_gives_the_moderated_t_test(
    a: list[float], b: float, prior_variance: float, prior_df: float
) -> None:
    # Pooled runs against one run, the variance shrunk toward the prior (Smyth's moderated t):
    # s2 = (d * s^2 + d0 * s0^2) / (d + d0) on d + d0 degrees of freedom.
    c = grouped_compare(a, [b], baseline_sizes=[1] * len(a), current_sizes=[1], spread="pooled",
                        prior_variance=prior_variance, prior_df=prior_df)  # fmt: skip
    la = np.log(a)
    d = la.size - 1
    assert tile_stats.group_log_variance(a, sizes=[1] * len(a)) == pytest.approx(la.var(ddof=1))
    s2 = (d * la.var(ddof=1) + prior_df * prior_variance) / (d + prior_df)
    se = math.sqrt(s2 * (1 / la.size + 1))
    assert c.df == d + prior_df and c.se == pytest.approx(se, rel=1e-9, abs=1e-15)
    # Identical runs leave a spread of rounding alone (se ~1e-17 for six copies of 1.5): t is
    # then a ratio of two rounding errors, numpy's and the library's, so only a real spread is
    # compared (hypothesis found [1.5] * 6 against 1.5, p 1.0 against numpy's 0.44).
    if se > 1e-12:
        t = (math.log(b) - la.mean()) / se
        want = 2 * float(scipy_t.sf(abs(t), d + prior_df))  # pyright: ignore[reportUnknownMemberType]
        assert c.p_value == pytest.approx(want, rel=1e-6, abs=1e-12)


def test_group_log_variance_needs_two_groups_and_sizes_that_add_up() -> None:
    assert tile_stats.group_log_variance([1.0, 2.0], sizes=[2]) is None
    with pytest.raises(StatsError, match="add up"):
        tile_stats.group_log_variance([1.0, 2.0], sizes=[1, 2])
    with pytest.raises(StatsError, match="prior"):
        grouped_compare([1.0, 2.0], [1.5], baseline_sizes=[1, 1], current_sizes=[1],
                        spread="pooled", prior_variance=-1.0, prior_df=2.0)  # fmt: skip
