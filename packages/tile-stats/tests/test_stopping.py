"""The adaptive stopping rule."""

from __future__ import annotations

from typing import TypedDict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tile_stats import StopDecision, should_stop


class Rule(TypedDict):
    """The stopping rule's settings these tests hold fixed."""

    target_precision: float
    min_runs: int
    max_runs: int
    max_time_s: float


RULE = Rule(target_precision=0.01, min_runs=10, max_runs=500, max_time_s=5.0)


def tight(n: int) -> list[float]:
    """Timings with 0.1% spread: precise after a handful of runs."""
    return (100.0 * (1 + 0.001 * np.random.default_rng(n).standard_normal(n))).tolist()


def noisy(n: int) -> list[float]:
    """Timings with 50% spread: 1% precision needs thousands of runs."""
    return (100.0 * np.random.default_rng(n).lognormal(0.0, 0.5, n)).tolist()


def test_stops_on_precision_after_min_runs() -> None:
    d = should_stop(tight(10), elapsed_s=0.1, **RULE)
    assert isinstance(d, StopDecision)
    assert (d.stop, d.reason) == (True, "precision")
    assert d.rel_half_width is not None and d.rel_half_width <= 0.01


@pytest.mark.parametrize("n", range(10))
def test_never_stops_before_min_runs(n: int) -> None:
    d = should_stop(tight(n) if n else [], elapsed_s=100.0, **RULE)
    assert (d.stop, d.reason) == (False, None)


def test_rel_half_width_is_the_order_statistic_interval() -> None:
    xs = [float(x) for x in range(1, 21)]  # 95% CI of the median is [x_(6), x_(15)] = [6, 15]
    d = should_stop(xs, elapsed_s=0.0, **RULE)
    assert d.rel_half_width == pytest.approx((15 - 6) / 2 / 10.5)
    assert should_stop(xs[:5], elapsed_s=0.0, **RULE).rel_half_width is None  # unbounded


def test_min_time_delays_precision() -> None:
    d = should_stop(tight(20), elapsed_s=0.5, min_time_s=1.0, **RULE)
    assert not d.stop
    assert should_stop(tight(20), elapsed_s=1.0, min_time_s=1.0, **RULE).reason == "precision"


def test_stops_on_max_runs() -> None:
    d = should_stop(noisy(500), elapsed_s=1.0, **RULE)
    assert (d.stop, d.reason) == (True, "max_runs")
    assert not should_stop(noisy(499), elapsed_s=1.0, **RULE).stop


def test_stops_on_max_time() -> None:
    assert not should_stop(noisy(50), elapsed_s=4.99, **RULE).stop
    d = should_stop(noisy(50), elapsed_s=5.0, **RULE)
    assert (d.stop, d.reason) == (True, "max_time")
    assert d.rel_half_width is not None and d.rel_half_width > 0.01


def test_infinite_time_budget() -> None:
    rule: Rule = {**RULE, "max_time_s": float("inf")}
    assert not should_stop(noisy(50), elapsed_s=1e9, **rule).stop


def test_adaptive_loop_ends_by_precision() -> None:
    rng = np.random.default_rng(3)
    samples: list[float] = []
    while True:
        samples.extend((50.0 * rng.lognormal(0.0, 0.02, 5)).tolist())
        d = should_stop(samples, elapsed_s=0.001 * len(samples), **RULE)
        if d.stop:
            break
    assert d.reason == "precision"
    assert 10 <= len(samples) < 100
    assert "precision" in repr(d)


@settings(max_examples=200, deadline=None)
@given(
    xs=st.lists(st.floats(min_value=1e-3, max_value=1e3), max_size=60),
    min_runs=st.integers(min_value=1, max_value=30),
    extra=st.integers(min_value=0, max_value=30),
    elapsed=st.floats(min_value=0.0, max_value=10.0),
    precision=st.floats(min_value=1e-4, max_value=1.0),
)
def test_decision_is_consistent(
    xs: list[float], min_runs: int, extra: int, elapsed: float, precision: float
) -> None:
    max_runs = min_runs + extra
    d = should_stop(
        xs,
        target_precision=precision,
        min_runs=min_runs,
        max_runs=max_runs,
        elapsed_s=elapsed,
        max_time_s=5.0,
    )
    assert d.stop == (d.reason is not None)
    if len(xs) >= max_runs:
        assert d.stop
    if len(xs) < min_runs:
        assert not d.stop
    if d.reason == "precision":
        assert d.rel_half_width is not None and d.rel_half_width <= precision
    if d.reason == "max_time":
        assert elapsed >= 5.0
