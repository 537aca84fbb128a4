//! Statistics for benchmark samples: summaries, bootstrap confidence intervals, Tukey outliers,
//! two-sample comparisons, an adaptive stopping rule and Student's t quantile, the measures of
//! run-to-run noise that a comparison of two runs needs (within-run drift, a block bootstrap of
//! a ratio of medians, t-intervals and t tests over groups of samples: rounds, runs or blocks),
//! and Benjamini-Hochberg adjusted p-values for the many cases of one comparison.
//!
//! Every function validates its input and returns [`StatsError`] instead of panicking: empty
//! samples, NaN or infinite values, and out-of-range options are errors. Quantiles follow
//! numpy's default (linear) method. Random resampling is seeded and deterministic.
//!
//! ```
//! use tile_stats::{summarize, BootstrapOptions};
//!
//! let s = summarize(&[1.0, 2.0, 3.0, 4.0, 100.0], &BootstrapOptions::default()).unwrap();
//! assert_eq!(s.median, 3.0);
//! assert_eq!(s.outliers.severe, 1);
//! assert!(s.ci.low <= s.median && s.median <= s.ci.high);
//! ```

mod block;
mod bootstrap;
mod compare;
mod describe;
mod drift;
mod error;
mod fdr;
mod groups;
mod rng;
mod special;
mod stopping;

pub use block::{block_ratio_ci, BOOT_BLOCKS};
pub use bootstrap::{bootstrap_ci, BootstrapOptions, Interval, Statistic, MAX_RESAMPLES};
pub use compare::{compare, mann_whitney_u, Comparison, MannWhitney};
pub use describe::{
    describe, mean, median, quantile, stdev, tukey_outliers, Description, Outliers,
};
pub use drift::{within_run_drift, DRIFT_BLOCKS, MIN_BLOCK};
pub use error::{Result, StatsError};
pub use fdr::benjamini_hochberg;
pub use groups::{
    group_log_variance, grouped_compare, grouped_ratio_ci, moderated_compare, run_blocks,
    GroupedComparison, Prior, Spread, RUN_BLOCKS,
};
pub use special::student_t_quantile;
pub use stopping::{should_stop, StopDecision, StopReason, StopRule};

/// Everything tile records about a sample: point statistics, the bootstrap CI of the median and
/// Tukey outlier counts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    pub n: usize,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    pub median: f64,
    /// Sample standard deviation (ddof = 1); 0 for a single value.
    pub stdev: f64,
    /// Median absolute deviation from the median, unscaled.
    pub mad: f64,
    pub q1: f64,
    pub q3: f64,
    pub p5: f64,
    pub p95: f64,
    /// Percentile bootstrap CI of the median.
    pub ci: Interval,
    pub outliers: Outliers,
}

/// Summarizes a sample: [`describe`] plus the bootstrap CI of the median.
pub fn summarize(xs: &[f64], opts: &BootstrapOptions) -> Result<Summary> {
    error::check_sample(xs)?;
    opts.validate()?;
    let mut sorted = xs.to_vec();
    sorted.sort_unstable_by(f64::total_cmp);
    let d = describe::describe_sorted(&sorted);
    let ci = bootstrap::median_ci_sorted(&sorted, opts, None);
    Ok(Summary {
        n: d.n,
        min: d.min,
        max: d.max,
        mean: d.mean,
        median: d.median,
        stdev: d.stdev,
        mad: d.mad,
        q1: d.q1,
        q3: d.q3,
        p5: d.p5,
        p95: d.p95,
        ci,
        outliers: d.outliers,
    })
}
