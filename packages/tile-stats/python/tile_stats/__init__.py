"""tile-stats: the statistics engine of tile, written in Rust.

Summaries with a bootstrap CI of the median and Tukey outlier counts, bootstrap intervals,
two-sample comparisons (ratio of medians and Mann-Whitney U), the adaptive stopping rule and
Student's t quantile.
Quantiles follow numpy's default (linear) method; resampling is seeded and deterministic.
"""

from __future__ import annotations

from tile_stats._native import (
    Comparison,
    StatsError,
    StopDecision,
    Summary,
    bootstrap_ci,
    compare,
    mann_whitney_u,
    median,
    quantile,
    should_stop,
    student_t_quantile,
    summarize,
)

__all__ = [
    # one sample
    "Summary",
    "bootstrap_ci",
    "median",
    "quantile",
    "summarize",
    # two samples
    "Comparison",
    "compare",
    "mann_whitney_u",
    # sampling
    "StopDecision",
    "should_stop",
    # distributions
    "student_t_quantile",
    # errors
    "StatsError",
]
