"""Bad input raises StatsError (a ValueError) with a clear message, never a panic."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypedDict

import pytest

import tile_stats
from tile_stats import Comparison, StatsError, StopDecision

GOOD = [1.0, 2.0, 3.0, 4.0]


class Stop(TypedDict):
    """A valid stopping rule; each test breaks one part of it."""

    target_precision: float
    min_runs: int
    max_runs: int
    elapsed_s: float
    max_time_s: float


STOP = Stop(target_precision=0.01, min_runs=2, max_runs=10, elapsed_s=0.0, max_time_s=1.0)

# Every public function, called with one sample argument.
ONE_SAMPLE: dict[str, Callable[[Any], object]] = {
    "median": tile_stats.median,
    "quantile": lambda xs: tile_stats.quantile(xs, 0.5),
    "summarize": tile_stats.summarize,
    "bootstrap_ci": tile_stats.bootstrap_ci,
    "bootstrap_ci_mean": lambda xs: tile_stats.bootstrap_ci(xs, statistic="mean"),
    "mwu_a": lambda xs: tile_stats.mann_whitney_u(xs, GOOD),
    "mwu_b": lambda xs: tile_stats.mann_whitney_u(GOOD, xs),
    "compare_baseline": lambda xs: tile_stats.compare(xs, GOOD),
    "compare_current": lambda xs: tile_stats.compare(GOOD, xs),
}


def test_stats_error_is_a_value_error() -> None:
    assert issubclass(StatsError, ValueError)
    assert StatsError.__module__ == "tile_stats"


@pytest.mark.parametrize("fn", ONE_SAMPLE.values(), ids=list(ONE_SAMPLE))
def test_empty_sample(fn: Callable[[Any], object]) -> None:
    with pytest.raises(StatsError, match=r"^sample is empty: need at least 1 value$"):
        fn([])


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("fn", ONE_SAMPLE.values(), ids=list(ONE_SAMPLE))
def test_non_finite_values(fn: Callable[[Any], object], bad: float) -> None:
    with pytest.raises(StatsError, match=r"non-finite value \((NaN|inf|-inf)\) at index 2"):
        fn([1.0, 2.0, bad, 3.0])


def _compare_with_itself(xs: list[float], **options: Any) -> Comparison:
    return tile_stats.compare(xs, xs, **options)


def _should_stop(xs: list[float], **options: Any) -> StopDecision:
    return tile_stats.should_stop(xs, **STOP, **options)


def test_should_stop_rejects_non_finite_samples() -> None:
    with pytest.raises(StatsError, match="index 1"):
        tile_stats.should_stop([1.0, math.nan], **STOP)


@pytest.mark.parametrize("resamples", [0, -1, -(2**40), 10**12])
@pytest.mark.parametrize(
    "fn",
    [
        tile_stats.summarize,
        tile_stats.bootstrap_ci,
        _compare_with_itself,
    ],
    ids=["summarize", "bootstrap_ci", "compare"],
)
def test_bad_resample_count(fn: Callable[..., object], resamples: int) -> None:
    with pytest.raises(StatsError, match="resamples must be"):
        fn(GOOD, resamples=resamples)


@pytest.mark.parametrize("confidence", [1.5, 1.0, 0.0, -0.1, math.nan, math.inf])
@pytest.mark.parametrize(
    "fn",
    [
        tile_stats.summarize,
        tile_stats.bootstrap_ci,
        _compare_with_itself,
        _should_stop,
    ],
    ids=["summarize", "bootstrap_ci", "compare", "should_stop"],
)
def test_bad_confidence(fn: Callable[..., object], confidence: float) -> None:
    with pytest.raises(StatsError, match="confidence must be strictly between 0 and 1"):
        fn(GOOD, confidence=confidence)


@pytest.mark.parametrize("q", [-0.01, 1.01, math.nan])
def test_bad_quantile(q: float) -> None:
    with pytest.raises(StatsError, match="quantile q must be between 0 and 1"):
        tile_stats.quantile(GOOD, q)


def test_bad_statistic() -> None:
    with pytest.raises(StatsError, match='statistic must be "median" or "mean", got "mode"'):
        tile_stats.bootstrap_ci(GOOD, statistic="mode")  # pyright: ignore[reportArgumentType]


@pytest.mark.parametrize("seed", [2**64, -(2**63) - 1])
def test_seed_out_of_range(seed: int) -> None:
    with pytest.raises(StatsError, match="seed must fit in 64 bits"):
        tile_stats.bootstrap_ci(GOOD, seed=seed)


def test_zero_baseline_median() -> None:
    with pytest.raises(StatsError, match="baseline median is 0"):
        tile_stats.compare([0.0, 0.0, 1.0], GOOD)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"target_precision": 0.0}, "target_precision must be a positive finite number"),
        ({"target_precision": -0.01}, "target_precision"),
        ({"min_runs": 0}, "min_runs must be at least 1"),
        ({"min_runs": -3}, "min_runs must be a positive integer, got -3"),
        ({"max_runs": 1}, r"max_runs \(1\) must be at least min_runs \(2\)"),
        ({"max_runs": -1}, "max_runs must be a positive integer"),
        ({"elapsed_s": -1.0}, "elapsed_s must be a finite number >= 0"),
        ({"elapsed_s": math.nan}, "elapsed_s"),
        ({"max_time_s": math.nan}, "max_time_s"),
        ({"min_time_s": 2.0}, r"max_time_s \(1\) must be at least min_time_s \(2\)"),
        ({"min_time_s": -1.0}, "min_time_s must be a finite number >= 0"),
    ],
)
def test_bad_stopping_rule(change: dict[str, float], message: str) -> None:
    with pytest.raises(StatsError, match=message):
        tile_stats.should_stop(GOOD, **{**STOP, **change})  # pyright: ignore[reportArgumentType]


def test_options_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        tile_stats.summarize(GOOD, 0.9)  # pyright: ignore[reportCallIssue]
    with pytest.raises(TypeError):
        tile_stats.should_stop(GOOD, 0.01, 2, 10, 0.0, 1.0)  # pyright: ignore[reportCallIssue]
