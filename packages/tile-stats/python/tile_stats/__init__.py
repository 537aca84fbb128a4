"""tile-stats: the statistics engine of tile, written in Rust.

Summaries with a bootstrap CI of the median and Tukey outlier counts, bootstrap intervals,
two-sample comparisons (ratio of medians and Mann-Whitney U), the adaptive stopping rule,
Student's t quantile, the measures of run-to-run noise that comparing two runs needs
(within-run drift, a block bootstrap of the ratio, t-intervals and t tests over rounds, pooled
runs or blocks of one run), and Benjamini-Hochberg adjusted p-values across many cases.
Quantiles follow numpy's default (linear) method; resampling is seeded and deterministic.
"""

from __future__ import annotations

from tile_stats._native import (
    Comparison,
    GroupedComparison,
    StatsError,
    StopDecision,
    Summary,
    benjamini_hochberg,
    block_ratio_ci,
    bootstrap_ci,
    compare,
    group_log_variance,
    grouped_compare,
    grouped_ratio_ci,
    mann_whitney_u,
    median,
    quantile,
    run_blocks,
    should_stop,
    student_t_quantile,
    summarize,
    within_run_drift,
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
    # run-to-run noise
    "GroupedComparison",
    "block_ratio_ci",
    "group_log_variance",
    "grouped_compare",
    "grouped_ratio_ci",
    "run_blocks",
    "within_run_drift",
    # many cases
    "benjamini_hochberg",
    # sampling
    "StopDecision",
    "should_stop",
    # distributions
    "student_t_quantile",
    # errors
    "StatsError",
]
