"""Type stubs of the Rust extension `tile_stats._native` (hand-written; keep in sync)."""

from collections.abc import Iterable, Sequence
from typing import Literal, final

__all__ = [
    "Comparison",
    "GroupedComparison",
    "StatsError",
    "StopDecision",
    "Summary",
    "benjamini_hochberg",
    "block_ratio_ci",
    "bootstrap_ci",
    "compare",
    "group_log_variance",
    "grouped_compare",
    "grouped_ratio_ci",
    "mann_whitney_u",
    "median",
    "quantile",
    "run_blocks",
    "should_stop",
    "student_t_quantile",
    "summarize",
    "within_run_drift",
]

class StatsError(ValueError):
    """Raised when statistics cannot be computed: empty sample, NaN/inf, option out of range."""

@final
class Summary:
    """Statistics of one sample; `ci_low`/`ci_high` bound the median (percentile bootstrap)."""

    @property
    def n(self) -> int: ...
    @property
    def min(self) -> float: ...
    @property
    def max(self) -> float: ...
    @property
    def mean(self) -> float: ...
    @property
    def median(self) -> float: ...
    @property
    def stdev(self) -> float:
        """Sample standard deviation (ddof=1); 0.0 for a single value."""
    @property
    def mad(self) -> float:
        """Median absolute deviation from the median, unscaled."""
    @property
    def q1(self) -> float: ...
    @property
    def q3(self) -> float: ...
    @property
    def p5(self) -> float: ...
    @property
    def p95(self) -> float: ...
    @property
    def ci_low(self) -> float: ...
    @property
    def ci_high(self) -> float: ...
    @property
    def outliers_mild(self) -> int:
        """Values beyond 1.5 IQR from the quartiles but within 3 IQR."""
    @property
    def outliers_severe(self) -> int:
        """Values beyond 3 IQR from the quartiles."""
    def to_dict(self) -> dict[str, float]:
        """All attributes as a plain dict (`n` and the outlier counts are ints)."""

@final
class Comparison:
    """Current sample against a baseline."""

    @property
    def ratio(self) -> float:
        """median(current) / median(baseline); above 1 means current is larger (slower)."""
    @property
    def ci_low(self) -> float: ...
    @property
    def ci_high(self) -> float: ...
    @property
    def p_value(self) -> float:
        """Two-sided Mann-Whitney U p-value."""
    @property
    def u_statistic(self) -> float:
        """U of current against baseline: pairs where current is larger, ties count 1/2."""
    @property
    def n_baseline(self) -> int: ...
    @property
    def n_current(self) -> int: ...
    def to_dict(self) -> dict[str, float]:
        """All attributes as a plain dict (the sizes are ints)."""

@final
class GroupedComparison:
    """A ratio of medians judged from the scatter of the two sides' group medians."""

    @property
    def ratio(self) -> float:
        """median(current) / median(baseline), of all samples; with spread `paired`, the
        geometric mean of the pairs' ratios of medians."""
    @property
    def ci_low(self) -> float: ...
    @property
    def ci_high(self) -> float: ...
    @property
    def p_value(self) -> float:
        """Two-sided t test of the difference of the sides' mean log group medians."""
    @property
    def se(self) -> float:
        """Standard error of that difference, in log units."""
    @property
    def df(self) -> float:
        """Degrees of freedom of the test."""

@final
class StopDecision:
    """Whether adaptive sampling may stop, and why."""

    @property
    def stop(self) -> bool: ...
    @property
    def reason(self) -> Literal["precision", "max_time", "max_runs"] | None: ...
    @property
    def rel_half_width(self) -> float | None:
        """(ci_high - ci_low) / 2 / |median|; None while too few samples bound the median."""

def median(xs: Iterable[float]) -> float:
    """Median of a sample (numpy's linear interpolation)."""

def quantile(xs: Iterable[float], q: float) -> float:
    """Quantile `q` in [0, 1] of a sample (numpy's default linear method)."""

def student_t_quantile(p: float, df: float) -> float:
    """Quantile `p` in (0, 1) of Student's t distribution with `df` > 0 degrees of freedom."""

def summarize(
    xs: Iterable[float], *, confidence: float = 0.95, resamples: int = 2000, seed: int = 0
) -> Summary:
    """Summary statistics, bootstrap CI of the median and Tukey outlier counts."""

def bootstrap_ci(
    xs: Iterable[float],
    *,
    statistic: Literal["median", "mean"] = "median",
    confidence: float = 0.95,
    resamples: int = 10000,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap confidence interval (low, high) of the median or the mean."""

def mann_whitney_u(a: Iterable[float], b: Iterable[float]) -> tuple[float, float]:
    """(U of `a`, two-sided p-value): normal approximation, tie and continuity corrected."""

def compare(
    baseline: Iterable[float],
    current: Iterable[float],
    *,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> Comparison:
    """Ratio of medians (current / baseline) with a bootstrap CI, and a Mann-Whitney U test."""

def should_stop(
    samples: Iterable[float],
    *,
    target_precision: float,
    min_runs: int,
    max_runs: int,
    elapsed_s: float,
    max_time_s: float,
    min_time_s: float = 0.0,
    confidence: float = 0.95,
) -> StopDecision:
    """Adaptive stopping rule: "precision", then "max_runs", then "max_time"."""

def within_run_drift(samples: Iterable[float]) -> float | None:
    """How far the median wandered within one run, beyond what sampling noise explains.

    `samples` in the order they were taken, cut into 5 blocks; the first is left out (it
    still carries the end of the warm-up, which every run has). Returns (R - E) / median, at
    least 0: R the range of the 4 block medians, E the range that sampling noise alone would
    give them. None with fewer than 25 samples or a median that is not positive.
    """

def block_ratio_ci(
    baseline: Iterable[float],
    current: Iterable[float],
    *,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> tuple[float, float]:
    """Bootstrap CI (low, high) of median(current) / median(baseline), resampling blocks.

    Each run is cut into 10 blocks of consecutive samples (at least 5 each; the first left out
    when more than two remain); a resample draws as many blocks with replacement. Samples that
    drift together stay together, so the CI is as wide as a run's wandering makes its median
    uncertain. Needs at least 5 samples a side.
    """

def grouped_ratio_ci(
    baseline: Iterable[float],
    current: Iterable[float],
    *,
    baseline_sizes: Sequence[int],
    current_sizes: Sequence[int],
    spread: Literal["pooled", "welch", "paired"],
    confidence: float = 0.95,
) -> tuple[float, float]:
    """t-interval (low, high) of median(current) / median(baseline) from group medians.

    Each side's samples are cut into consecutive groups of the given sizes (rounds, or the runs
    of a pooled baseline). The standard error of the difference of the sides' mean log group
    medians, with Student's t, sets the width around the ratio of the overall medians:
    `"welch"` gives each side its own variance (rounds; two or more groups a side), `"pooled"`
    one variance over the sides that have two or more groups (a baseline pooled from runs).
    """

def grouped_compare(
    baseline: Iterable[float],
    current: Iterable[float],
    *,
    baseline_sizes: Sequence[int],
    current_sizes: Sequence[int],
    spread: Literal["pooled", "welch", "paired"],
    confidence: float = 0.95,
    prior_variance: float | None = None,
    prior_df: float = 0.0,
) -> GroupedComparison:
    """median(current) / median(baseline) with a t-interval and a t test on group medians.

    The groups as for `grouped_ratio_ci` (rounds, the runs of a pooled baseline, or blocks of
    one run from `run_blocks`); the p-value is the two-sided t test (pooled or Welch) of the
    difference of the sides' mean log group medians, and the interval is `grouped_ratio_ci`'s.
    `paired`: group k of each side was measured in turn with the other's (`tile bench
    --against`); the test is on the k differences (as many groups on each side, two or more).
    `prior_variance`, `prior_df` (`pooled` only): the run-to-run variance of a log median that
    the comparison's other cases suggest, worth `prior_df` degrees of freedom; the case's own
    is shrunk toward it and the test gains those degrees of freedom (a moderated t test).
    """

def group_log_variance(samples: Iterable[float], *, sizes: Sequence[int]) -> float | None:
    """The variance (ddof 1) of the log medians of `samples` cut into consecutive groups of
    `sizes` (the runs of a pooled baseline): how far one run's log median moves. None for
    fewer than two groups."""

def run_blocks(n: int) -> tuple[int, list[int]] | None:
    """(skip, sizes): a run of `n` samples with no groups of its own cut into up to 9 blocks of
    consecutive samples (at least 5 each), the first left out (`skip` samples: it still
    carries the end of the warm-up) and the `sizes` of the others, for `grouped_compare` on
    the samples after `skip`; None below two blocks kept."""

def benjamini_hochberg(p_values: Iterable[float], *, family: int | None = None) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (q-values), in the order given.

    Calling every test with q <= alpha a discovery keeps the false discovery rate at most
    alpha. `family` (default: as many as given) counts tests whose p-value is not given as
    p = 1. Same as R's `p.adjust(p, "BH")`.
    """
