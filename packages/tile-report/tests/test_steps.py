"""Step detection on series with known truth: planted steps, flat noise, hiccups, repeats; and
the plot of a fit (`trend_plot`)."""

from __future__ import annotations

import math
import random
import re
from collections.abc import Sequence

import pytest

from tile_report import Fit, Point, Series, commit_points, fit_steps, trends
from tile_report._trend import trend_plot


def _series(
    values: Sequence[float],
    *,
    commits: Sequence[str | None] | None = None,
    dirty: Sequence[bool] | None = None,
    ci: float = 0.003,
) -> Series:
    """One run per value, each at its own commit unless `commits` says otherwise."""
    points = tuple(
        Point(
            run_id=f"bench-20260101T000000Z-{i:08x}",
            created_at=f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}Z",
            commit=(commits[i] if commits is not None else f"{i:040x}"),
            commit_time=None,
            subject=f"commit {i}",
            branch="main",
            dirty=dirty[i] if dirty is not None else False,
            median_s=v,
            ci_low_s=v * (1 - ci),
            ci_high_s=v * (1 + ci),
            n=50,
        )
        for i, v in enumerate(values)
    )
    return Series("k/case[n=1]", "k/case", "NVIDIA H200", "cupti", False, points)


def _noisy(
    n: int, sigma: float, seed: int, step_at: int | None = None, step: float = 0.0
) -> list[float]:
    rng = random.Random(seed)
    return [
        1e-3
        * (1 + (step if step_at is not None and i >= step_at else 0))
        * math.exp(rng.gauss(0, sigma))
        for i in range(n)
    ]


def _fit(values: Sequence[float]) -> Fit:
    return fit_steps(commit_points(_series(values)))


@pytest.mark.parametrize("seed", range(20))
def test_a_planted_ten_percent_step_is_found_at_its_commit(seed: int) -> None:
    fit = _fit(_noisy(12, 0.01, seed, step_at=6, step=0.10))
    assert [(s.index, s.kind) for s in fit.steps] == [(6, "regression")]
    step = fit.steps[0]
    assert step.standing
    assert 0.06 < step.change < 0.14
    assert fit.points[step.index].subject == "commit 6"


def test_a_flat_noisy_series_has_no_step() -> None:
    # 100 series of 30 commits with 3% noise between runs: none has a regression, and at most
    # one a step at all (chance lands a 5.05% "improvement" at 5 sigma in seed 49).
    stepped = [seed for seed in range(100) if _fit(_noisy(30, 0.03, seed)).steps]
    regressed = [
        seed
        for seed in stepped
        if any(s.kind == "regression" for s in _fit(_noisy(30, 0.03, seed)).steps)
    ]
    assert regressed == []
    assert len(stepped) <= 1, stepped


def test_the_noise_estimate_follows_the_scatter_between_runs() -> None:
    quiet = _fit(_noisy(30, 0.005, 1))
    loud = _fit(_noisy(30, 0.05, 1))
    assert 0.002 <= quiet.noise < 0.01
    assert 0.03 < loud.noise < 0.08


def test_one_slow_run_in_the_middle_is_a_hiccup_not_two_steps() -> None:
    values = _noisy(12, 0.01, 3)
    values[5] *= 1.4
    fit = _fit(values)
    assert fit.steps == ()
    # Not a step, but not noise either: a spike, reported at its commit (issue #40).
    (spike,) = fit.spikes
    assert spike.index == 5 and 0.3 < spike.change < 0.5


@pytest.mark.parametrize("seed", range(10))
def test_a_flat_noisy_series_has_no_spike(seed: int) -> None:
    assert _fit(_noisy(30, 0.01, seed)).spikes == ()


def test_a_slow_latest_run_waits_for_a_second_run_to_confirm_it() -> None:
    values = _noisy(10, 0.01, 4)
    values[-1] *= 1.2
    assert _fit(values).steps == ()  # one run: maybe a hiccup
    confirmed = [*values, values[-1] * 1.01]
    fit = _fit(confirmed)
    assert [(s.index, s.kind, s.standing) for s in fit.steps] == [(9, "regression", True)]


def test_a_regression_fixed_later_does_not_stand() -> None:
    values = _noisy(15, 0.01, 5, step_at=5, step=0.2)
    values[10:] = [v / 1.2 for v in values[10:]]
    fit = _fit(values)
    kinds = [(s.index, s.kind, s.standing) for s in fit.steps]
    assert kinds == [(5, "regression", False), (10, "improvement", True)]


def test_a_speedup_is_an_improvement() -> None:
    fit = _fit(_noisy(12, 0.01, 6, step_at=4, step=-0.15))
    assert [(s.index, s.kind) for s in fit.steps] == [(4, "improvement")]


def test_a_change_below_min_change_is_not_reported_however_clear() -> None:
    values = _noisy(20, 0.002, 7, step_at=10, step=0.03)
    assert _fit(values).steps == ()
    fit = fit_steps(commit_points(_series(values)), min_change=0.02)
    assert [s.index for s in fit.steps] == [10]


def test_runs_of_one_commit_are_one_point_and_show_the_noise_between_runs() -> None:
    commits = [f"{i // 3:040x}" for i in range(18)]  # 6 commits, 3 runs each
    values = _noisy(18, 0.02, 8)
    points = commit_points(_series(values, commits=commits))
    assert [len(p.runs) for p in points] == [3] * 6
    assert points[0].value_s == sorted(values[:3])[1]
    assert fit_steps(points).noise > 0.01


def test_dirty_runs_are_left_out_unless_asked_for() -> None:
    values = _noisy(8, 0.01, 9)
    values[7] *= 1.5
    dirty = [False] * 7 + [True]
    series = _series(values, dirty=dirty)
    assert len(commit_points(series)) == 7
    with_dirty = commit_points(series, include_dirty=True)
    assert len(with_dirty) == 8
    assert with_dirty[-1].dirty
    assert with_dirty[-1].label.endswith("+")


def test_too_few_commits_say_nothing() -> None:
    fit = _fit([1e-3, 1e-3, 2e-3])
    assert fit.steps == ()
    assert len(fit.levels) == 1


def test_trends_keep_the_latest_commits_when_asked() -> None:
    (trend,) = trends([_series(_noisy(10, 0.01, 10))], last=4)
    assert [p.subject for p in trend.fit.points] == [f"commit {i}" for i in range(6, 10)]


# ---------------------------------------------------------------- the plot


def _dots(svg: str) -> list[float]:
    """The y of each median's dot, in commit order."""
    return [float(y) for y in re.findall(r'<circle[^>]* cy="([-\d.]+)"', svg)]


def test_a_ten_percent_change_after_a_74x_step_stays_visible() -> None:
    # Issue 40: 74 ms, a fix to 1 ms, then a 10% regression. On a linear axis from 0 to 74 ms
    # the last step is a fifth of a pixel; on a log axis (said on the axis) it can be seen.
    svg = trend_plot(_fit([74e-3] * 4 + [1.0e-3] * 4 + [1.1e-3] * 4), "k", title="k/case[n=1]")
    assert svg is not None
    dots = _dots(svg)
    assert len(dots) == 12
    assert dots[4] - dots[-1] >= 2.0  # y grows downwards: the slower point is higher
    assert "median (log scale)" in svg


def test_a_narrow_series_keeps_its_linear_axis() -> None:
    svg = trend_plot(_fit([1.0e-3] * 4 + [1.1e-3] * 4), "k", title="k/case[n=1]")
    assert svg is not None and "log scale" not in svg


def test_runs_without_a_commit_are_named_by_their_time_not_their_run_id() -> None:
    # A project without git (issue 40): the axis said "commits" under run-id suffixes.
    values = [1e-3] * 4
    fit = fit_steps(commit_points(_series(values, commits=[None] * 4)))
    assert [p.label for p in fit.points] == ["01-01 00:00"] * 4
    svg = trend_plot(fit, "k", title="k/case[n=1]")
    assert svg is not None
    assert "runs by time (no git commit), oldest first" in svg and "00000000" not in svg
    mixed = fit_steps(commit_points(_series(values, commits=[None, "a" * 40, None, "b" * 40])))
    assert [p.label for p in mixed.points] == ["01-01 00:00", "aaaaaaa", "01-01 00:00", "bbbbbbb"]
    svg = trend_plot(mixed, "k", title="k/case[n=1]")
    assert svg is not None and "commits (a run without one: its time), oldest first" in svg
    full = trend_plot(_fit(values), "k", title="k/case[n=1]")
    assert full is not None and "commits, oldest first" in full
