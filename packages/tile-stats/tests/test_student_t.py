"""Student's t quantile against t tables and scipy; bad input raises StatsError."""

from __future__ import annotations

import math

import pytest
from scipy.stats import t as scipy_t

from tile_stats import StatsError, student_t_quantile


@pytest.mark.parametrize(
    ("p", "df", "want"),
    [
        (0.975, 1, 12.7062047),
        (0.975, 2, 4.30265273),
        (0.975, 4, 2.77644511),
        (0.975, 10, 2.22813885),
        (0.975, 30, 2.04227246),
        (0.95, 5, 2.01504837),
        (0.975, 1e6, 1.95996636),
    ],
)
def test_known_values(p: float, df: float, want: float) -> None:
    assert student_t_quantile(p, df) == pytest.approx(want, rel=1e-8)


@pytest.mark.parametrize("df", [0.3, 1, 2.5, 4, 7.5, 29, 1000])
@pytest.mark.parametrize("p", [1e-9, 0.001, 0.025, 0.2, 0.5, 0.8, 0.975, 0.999])
def test_matches_scipy(p: float, df: float) -> None:
    want = scipy_t.ppf(p, df)  # pyright: ignore[reportUnknownMemberType]
    assert student_t_quantile(p, df) == pytest.approx(want, rel=1e-10, abs=1e-15)


def test_symmetric_and_between_integer_df() -> None:
    assert student_t_quantile(0.025, 4) == pytest.approx(-student_t_quantile(0.975, 4), rel=1e-12)
    assert 2.30600414 < student_t_quantile(0.975, 7.5) < 2.36462425  # df 8 and df 7


@pytest.mark.parametrize("p", [0.0, 1.0, -0.1, 1.5, math.nan])
def test_bad_probability(p: float) -> None:
    with pytest.raises(StatsError, match="probability p must be strictly between 0 and 1"):
        student_t_quantile(p, 4)


@pytest.mark.parametrize("df", [0.0, -1.0, math.inf, math.nan])
def test_bad_degrees_of_freedom(df: float) -> None:
    with pytest.raises(StatsError, match="degrees of freedom df must be a positive finite number"):
        student_t_quantile(0.975, df)
