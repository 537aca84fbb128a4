//! Percentile bootstrap confidence intervals, seeded and deterministic.
//!
//! Resampling never sorts: the sample is sorted once, each resample only counts how often every
//! sorted position was drawn, and a walk over the counts finds the middle order statistics. That
//! is O(n) per resample with no allocation. Resamples are generated in fixed blocks, each with its
//! own random stream, so the result depends on the seed alone, not on how many threads ran.

use std::str::FromStr;

use crate::describe::{lerp, mean_unchecked, quantile_select, quantile_sorted};
use crate::error::{check_confidence, check_sample, Result, StatsError};
use crate::rng::Rng;

/// Resamples per random stream; fixed so that results do not depend on the thread count.
const BLOCK: usize = 128;
/// Upper bound on the resample count, so a typo cannot exhaust memory.
pub const MAX_RESAMPLES: usize = 100_000_000;
/// Below this many random draws in total, threads cost more than they save.
const PARALLEL_MIN_DRAWS: usize = 1 << 21;

/// Options of every bootstrap: resample count, confidence level and seed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BootstrapOptions {
    pub resamples: usize,
    pub confidence: f64,
    pub seed: u64,
}

impl Default for BootstrapOptions {
    fn default() -> Self {
        Self {
            resamples: 2000,
            confidence: 0.95,
            seed: 0,
        }
    }
}

impl BootstrapOptions {
    /// Checks the resample count and the confidence level.
    pub fn validate(&self) -> Result<()> {
        if self.resamples == 0 {
            return Err(StatsError::InvalidArgument(
                "resamples must be at least 1, got 0: use e.g. 2000".into(),
            ));
        }
        if self.resamples > MAX_RESAMPLES {
            // Each resample keeps one f64: past this the buffer alone is gigabytes.
            return Err(StatsError::InvalidArgument(format!(
                "resamples must be at most {MAX_RESAMPLES}, got {}: 10000 is plenty for a 95% CI",
                self.resamples
            )));
        }
        check_confidence(self.confidence)
    }
}

/// The statistic a bootstrap interval is computed for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Statistic {
    Median,
    Mean,
}

impl Statistic {
    /// The name used on the Python side.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Median => "median",
            Self::Mean => "mean",
        }
    }
}

impl FromStr for Statistic {
    type Err = StatsError;

    fn from_str(s: &str) -> Result<Self> {
        match s {
            "median" => Ok(Self::Median),
            "mean" => Ok(Self::Mean),
            other => Err(StatsError::InvalidArgument(format!(
                "statistic must be \"median\" or \"mean\", got {other:?}"
            ))),
        }
    }
}

/// A closed interval `[low, high]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    pub low: f64,
    pub high: f64,
}

/// Percentile bootstrap confidence interval of the median or the mean of `xs`.
///
/// The interval is widened, where needed, to contain the point estimate (the plain percentile
/// interval can miss it in degenerate cases, which would read as nonsense in a report).
pub fn bootstrap_ci(xs: &[f64], statistic: Statistic, opts: &BootstrapOptions) -> Result<Interval> {
    check_sample(xs)?;
    opts.validate()?;
    Ok(match statistic {
        Statistic::Median => {
            let mut sorted = xs.to_vec();
            sorted.sort_unstable_by(f64::total_cmp);
            median_ci_sorted(&sorted, opts, None)
        }
        Statistic::Mean => {
            let n = xs.len();
            let mut reps = replicate(opts, n, None, || (), |rng, ()| resample_mean(xs, rng));
            let (min, max) = xs
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
                    (lo.min(x), hi.max(x))
                });
            // Rounding can put a mean an ulp outside [min, max]; mathematically it never is.
            let mean = mean_unchecked(xs).clamp(min, max);
            let ci = percentile_interval(&mut reps, opts.confidence, mean);
            Interval {
                low: ci.low.clamp(min, max),
                high: ci.high.clamp(min, max),
            }
        }
    })
}

/// Bootstrap interval of the median of a sorted, valid sample; `threads` overrides the default.
pub(crate) fn median_ci_sorted(
    sorted: &[f64],
    opts: &BootstrapOptions,
    threads: Option<usize>,
) -> Interval {
    let n = sorted.len();
    let mut reps = replicate(
        opts,
        n,
        threads,
        || vec![0u32; n],
        |rng, counts| resample_median(sorted, counts, rng),
    );
    percentile_interval(&mut reps, opts.confidence, quantile_sorted(sorted, 0.5))
}

/// Bootstrap interval of median(current) / median(baseline), resampling both independently.
pub(crate) fn ratio_ci_sorted(
    baseline: &[f64],
    current: &[f64],
    opts: &BootstrapOptions,
    estimate: f64,
) -> Result<Interval> {
    let (nb, nc) = (baseline.len(), current.len());
    let mut reps = replicate(
        opts,
        nb + nc,
        None,
        || (vec![0u32; nb], vec![0u32; nc]),
        |rng, (cb, cc)| {
            let b = resample_median(baseline, cb, rng);
            resample_median(current, cc, rng) / b
        },
    );
    if reps.iter().any(|r| !r.is_finite()) {
        return Err(StatsError::InvalidArgument(
            "a bootstrap resample of the baseline has median 0, so the ratio of medians is \
             undefined: compare strictly positive measurements such as timings"
                .into(),
        ));
    }
    Ok(percentile_interval(&mut reps, opts.confidence, estimate))
}

/// Median of one resample (with replacement) of a sorted sample; `counts` is scratch of len n.
#[inline]
fn resample_median(sorted: &[f64], counts: &mut [u32], rng: &mut Rng) -> f64 {
    let n = sorted.len();
    counts.fill(0);
    rng.indices(n, n, |i| counts[i] += 1);
    // 0-based ranks of the middle order statistics (equal for odd n).
    let (lo_rank, hi_rank) = ((n - 1) / 2, n / 2);
    // Skip whole chunks first: their sums vectorize, and the branch is taken ~n/32 times only.
    const CHUNK: usize = 16;
    let mut seen = 0usize;
    let mut i = 0;
    for chunk in counts.chunks_exact(CHUNK) {
        let total = chunk.iter().sum::<u32>() as usize;
        if seen + total > lo_rank {
            break;
        }
        seen += total;
        i += CHUNK;
    }
    loop {
        seen += counts[i] as usize;
        if seen > lo_rank {
            break;
        }
        i += 1;
    }
    let a = sorted[i];
    if seen > hi_rank {
        return a;
    }
    i += 1;
    while counts[i] == 0 {
        i += 1;
    }
    lerp(a, sorted[i], 0.5)
}

/// Mean of one resample (with replacement).
#[inline]
fn resample_mean(xs: &[f64], rng: &mut Rng) -> f64 {
    let n = xs.len();
    let mut sum = 0.0;
    rng.indices(n, n, |i| sum += xs[i]);
    sum / n as f64
}

/// Runs `stat` once per resample, block by block, each block on its own random stream.
pub(crate) fn replicate<S, I, F>(
    opts: &BootstrapOptions,
    draws_per_resample: usize,
    threads: Option<usize>,
    init: I,
    stat: F,
) -> Vec<f64>
where
    I: Fn() -> S + Sync,
    F: Fn(&mut Rng, &mut S) -> f64 + Sync,
{
    let mut out = vec![0.0; opts.resamples];
    let blocks = opts.resamples.div_ceil(BLOCK);
    let threads = threads
        .unwrap_or_else(|| default_threads(opts.resamples.saturating_mul(draws_per_resample)))
        .clamp(1, blocks);
    let run = |first_block: usize, part: &mut [f64]| {
        let mut scratch = init();
        for (j, chunk) in part.chunks_mut(BLOCK).enumerate() {
            let mut rng = Rng::stream(opts.seed, (first_block + j) as u64);
            for slot in chunk {
                *slot = stat(&mut rng, &mut scratch);
            }
        }
    };
    if threads == 1 {
        run(0, &mut out);
        return out;
    }
    let blocks_per_thread = blocks.div_ceil(threads);
    std::thread::scope(|scope| {
        for (t, part) in out.chunks_mut(blocks_per_thread * BLOCK).enumerate() {
            let run = &run;
            scope.spawn(move || run(t * blocks_per_thread, part));
        }
    });
    out
}

fn default_threads(draws: usize) -> usize {
    if draws < PARALLEL_MIN_DRAWS {
        return 1;
    }
    std::thread::available_parallelism().map_or(1, |n| n.get().min(8))
}

/// Percentile interval of bootstrap replicates, widened to contain `estimate`.
pub(crate) fn percentile_interval(reps: &mut [f64], confidence: f64, estimate: f64) -> Interval {
    let alpha = 1.0 - confidence;
    let low = quantile_select(reps, alpha / 2.0);
    let high = quantile_select(reps, 1.0 - alpha / 2.0);
    Interval {
        low: low.min(estimate),
        high: high.max(estimate),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(n: usize, seed: u64) -> Vec<f64> {
        let mut rng = Rng::new(seed);
        (0..n)
            .map(|_| 1.0 + (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64)
            .collect()
    }

    /// Straightforward reference: draw indices, sort the resample, take the median.
    fn naive_median(sorted: &[f64], rng: &mut Rng) -> f64 {
        let n = sorted.len();
        let mut r = Vec::with_capacity(n);
        rng.indices(n, n, |i| r.push(sorted[i]));
        r.sort_unstable_by(f64::total_cmp);
        quantile_sorted(&r, 0.5)
    }

    #[test]
    fn counting_median_equals_sorting_median() {
        for n in [1, 2, 3, 4, 7, 10, 16, 17, 51, 100, 257] {
            let mut sorted = sample(n, n as u64);
            sorted.sort_unstable_by(f64::total_cmp);
            let mut counts = vec![0u32; n];
            let (mut r1, mut r2) = (Rng::new(3), Rng::new(3));
            for _ in 0..200 {
                assert_eq!(
                    resample_median(&sorted, &mut counts, &mut r1),
                    naive_median(&sorted, &mut r2)
                );
            }
        }
    }

    #[test]
    fn result_does_not_depend_on_threads() {
        let mut sorted = sample(300, 1);
        sorted.sort_unstable_by(f64::total_cmp);
        let opts = BootstrapOptions {
            resamples: 1000,
            confidence: 0.9,
            seed: 5,
        };
        let one = median_ci_sorted(&sorted, &opts, Some(1));
        for threads in [2, 3, 7] {
            assert_eq!(median_ci_sorted(&sorted, &opts, Some(threads)), one);
        }
    }

    #[test]
    fn intervals_bracket_and_depend_on_seed() {
        let xs = sample(200, 9);
        let opts = BootstrapOptions {
            resamples: 2000,
            confidence: 0.95,
            seed: 1,
        };
        for stat in [Statistic::Median, Statistic::Mean] {
            let ci = bootstrap_ci(&xs, stat, &opts).unwrap();
            assert!(ci.low < ci.high);
            assert_eq!(ci, bootstrap_ci(&xs, stat, &opts).unwrap());
            let other = BootstrapOptions { seed: 2, ..opts };
            assert_ne!(ci, bootstrap_ci(&xs, stat, &other).unwrap());
        }
        let med = crate::median(&xs).unwrap();
        let ci = bootstrap_ci(&xs, Statistic::Median, &opts).unwrap();
        assert!(ci.low <= med && med <= ci.high);
        // A uniform(1, 2) median has standard error about 0.5 / sqrt(200) * ... ~ 0.035.
        assert!(ci.high - ci.low < 0.3, "{ci:?}");
    }

    #[test]
    fn single_value_and_bad_options() {
        let ci = bootstrap_ci(&[4.0], Statistic::Median, &BootstrapOptions::default()).unwrap();
        assert_eq!(
            ci,
            Interval {
                low: 4.0,
                high: 4.0
            }
        );
        let bad = BootstrapOptions {
            resamples: 0,
            ..Default::default()
        };
        assert!(bootstrap_ci(&[1.0], Statistic::Mean, &bad).is_err());
        let bad = BootstrapOptions {
            confidence: 1.0,
            ..Default::default()
        };
        assert!(bootstrap_ci(&[1.0], Statistic::Mean, &bad).is_err());
        assert!(bootstrap_ci(&[], Statistic::Mean, &Default::default()).is_err());
        assert_eq!("mean".parse::<Statistic>().unwrap(), Statistic::Mean);
        assert!("mode"
            .parse::<Statistic>()
            .unwrap_err()
            .to_string()
            .contains("\"mode\""));
    }
}
