//! Block bootstrap of a ratio of medians: resampling stretches of consecutive samples.
//!
//! The plain bootstrap ([`crate::compare`]) treats samples as independent, so its CI is as
//! narrow as the noise between neighbouring samples. On a shared CPU a run's speed wanders for
//! seconds at a time: samples that drift together must be resampled together, or the CI is too
//! narrow for the run-to-run noise.

use crate::bootstrap::{percentile_interval, replicate, BootstrapOptions, Interval};
use crate::describe::quantile_select;
use crate::drift::MIN_BLOCK;
use crate::error::{check_sample, Result, StatsError};
use crate::rng::Rng;

/// A run is cut into this many blocks of consecutive samples (each of at least [`MIN_BLOCK`]).
pub const BOOT_BLOCKS: usize = 10;

/// The blocks a run is resampled from: `kept` is `count` blocks of `size` samples, back to back.
#[derive(Debug, PartialEq)]
struct Blocks<'a> {
    kept: &'a [f64],
    size: usize,
    count: usize,
}

/// Cuts `xs` into [`BOOT_BLOCKS`] blocks of at least [`MIN_BLOCK`] samples; the samples left
/// over at the end, fewer than a block, are dropped, and so is the first block when more than
/// two remain (it still carries the end of the warm-up, as in [`crate::within_run_drift`]).
fn blocks(xs: &[f64]) -> Result<Blocks<'_>> {
    let size = MIN_BLOCK.max(xs.len() / BOOT_BLOCKS);
    let count = xs.len() / size;
    if count == 0 {
        return Err(StatsError::InvalidArgument(format!(
            "a block bootstrap needs at least {MIN_BLOCK} samples a side, got {}",
            xs.len()
        )));
    }
    let skip = usize::from(count > 2);
    Ok(Blocks {
        kept: &xs[skip * size..count * size],
        size,
        count: count - skip,
    })
}

/// Median of one resample: as many blocks as there are, drawn with replacement.
fn resample_median(b: &Blocks<'_>, buf: &mut Vec<f64>, rng: &mut Rng) -> f64 {
    buf.clear();
    rng.indices(b.count, b.count, |i| {
        buf.extend_from_slice(&b.kept[i * b.size..(i + 1) * b.size]);
    });
    quantile_select(buf, 0.5)
}

/// Bootstrap CI of median(current) / median(baseline), resampling blocks of consecutive samples.
///
/// Each run is cut into [`BOOT_BLOCKS`] blocks of at least [`MIN_BLOCK`] samples (the first
/// left out when more than two remain, as in [`crate::within_run_drift`]; samples left over at
/// the end dropped); a resample draws as many blocks with replacement. Samples that drift
/// together stay together, so the CI is as wide as the run's wandering makes its median
/// uncertain, and a single odd block moves it only as much as it moves a median.
///
/// Why blocks: within a pinned run on a shared 2-core VM, the kernel/reference ratio of a ~7 µs
/// kernel sometimes jumps for one stretch (0.7x for the last ~30 of 150 samples). Widening the
/// noise floor by the range of block medians ([`crate::within_run_drift`]) takes such a
/// stretch as drift and held detection of a +10% change at about half; this CI reached 95-97%
/// detection on pinned runs. On unpinned (multi-threaded) runs the ratio moves between runs
/// more than within them, and this CI let 35% of suites raise a false alarm: use it only where
/// what moves a run shows within the run (`benchmarks/compare_false_alarms.py`).
///
/// A percentile interval of the resampled ratios, widened where needed to contain the ratio of
/// the medians, as every interval of this crate. Errors on empty or non-finite samples, fewer
/// than [`MIN_BLOCK`] samples a side, or a baseline median (or resampled median) of 0.
pub fn block_ratio_ci(
    baseline: &[f64],
    current: &[f64],
    opts: &BootstrapOptions,
) -> Result<Interval> {
    check_sample(baseline)?;
    check_sample(current)?;
    opts.validate()?;
    let (base, cur) = (blocks(baseline)?, blocks(current)?);
    let base_median = quantile_select(&mut baseline.to_vec(), 0.5);
    if base_median == 0.0 {
        return Err(StatsError::InvalidArgument(
            "baseline median is 0, so the ratio of medians is undefined: \
             compare strictly positive measurements such as timings"
                .into(),
        ));
    }
    let ratio = quantile_select(&mut current.to_vec(), 0.5) / base_median;
    let mut reps = replicate(
        opts,
        base.kept.len() + cur.kept.len(),
        None,
        || {
            (
                Vec::with_capacity(base.kept.len()),
                Vec::with_capacity(cur.kept.len()),
            )
        },
        |rng, (b, c)| {
            let low = resample_median(&base, b, rng);
            resample_median(&cur, c, rng) / low
        },
    );
    if reps.iter().any(|r| !r.is_finite()) {
        return Err(StatsError::InvalidArgument(
            "a block resample of the baseline has median 0, so the ratio of medians is \
             undefined: compare strictly positive measurements such as timings"
                .into(),
        ));
    }
    Ok(percentile_interval(&mut reps, opts.confidence, ratio))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` values uniform in center * (1 ± spread / 2), from `seed`.
    fn noisy(n: usize, center: f64, spread: f64, seed: u64) -> Vec<f64> {
        let mut rng = Rng::new(seed);
        (0..n)
            .map(|_| {
                let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
                center * (1.0 + spread * (u - 0.5))
            })
            .collect()
    }

    fn opts(seed: u64) -> BootstrapOptions {
        BootstrapOptions {
            resamples: 2000,
            confidence: 0.95,
            seed,
        }
    }

    #[test]
    fn blocks_are_a_tenth_of_the_run_without_the_first_and_the_rest() {
        let xs: Vec<f64> = (0..199).map(f64::from).collect();
        let b = blocks(&xs).unwrap();
        assert_eq!((b.size, b.count), (19, 9));
        assert_eq!((b.kept[0], b.kept[b.kept.len() - 1]), (19.0, 189.0));
        // Short runs: blocks of 5; with two blocks or fewer, the first is kept.
        let b = blocks(&xs[..12]).unwrap();
        assert_eq!((b.size, b.count, b.kept.len()), (5, 2, 10));
        let b = blocks(&xs[..15]).unwrap();
        assert_eq!((b.size, b.count, b.kept[0]), (5, 2, 5.0));
        assert!(blocks(&xs[..4])
            .unwrap_err()
            .to_string()
            .contains("at least 5"));
    }

    #[test]
    fn seeded_and_contains_the_ratio() {
        let base = noisy(200, 1.0, 0.1, 1);
        let cur = noisy(150, 1.1, 0.1, 2);
        let ci = block_ratio_ci(&base, &cur, &opts(3)).unwrap();
        assert_eq!(ci, block_ratio_ci(&base, &cur, &opts(3)).unwrap());
        assert_ne!(ci, block_ratio_ci(&base, &cur, &opts(4)).unwrap());
        let ratio = crate::median(&cur).unwrap() / crate::median(&base).unwrap();
        assert!(ci.low <= ratio && ratio <= ci.high, "{ci:?} {ratio}");
        assert!(ci.low > 1.05 && ci.high < 1.15, "{ci:?}");
    }

    #[test]
    fn rejects_what_has_no_ratio() {
        let good = [1.0; 10];
        assert!(block_ratio_ci(&[1.0; 4], &good, &opts(0)).is_err());
        assert!(block_ratio_ci(&good, &[], &opts(0)).is_err());
        assert!(block_ratio_ci(&good, &[1.0, f64::INFINITY], &opts(0)).is_err());
        let e = block_ratio_ci(&[0.0; 10], &good, &opts(0)).unwrap_err();
        assert!(e.to_string().contains("baseline median is 0"));
        // Median 1, but half the blocks are zeros: some resample has median 0.
        let zeros: Vec<f64> = (0..40).map(|i| f64::from(u8::from(i >= 19))).collect();
        let e = block_ratio_ci(&zeros, &good, &opts(0)).unwrap_err();
        assert!(e.to_string().contains("block resample"), "{e}");
    }

    #[test]
    fn one_odd_stretch_moves_it_as_much_as_it_moves_a_median() {
        // 200 samples, the last 30 of each run 30% fast; the current run 10% slower.
        let odd = |center: f64, seed: u64| -> Vec<f64> {
            let mut xs = noisy(200, center, 0.08, seed);
            xs[170..].iter_mut().for_each(|x| *x *= 0.7);
            xs
        };
        let ci = block_ratio_ci(&odd(1.0, 1), &odd(1.1, 2), &opts(0)).unwrap();
        assert!(ci.low > 1.05 && ci.low < 1.1, "{ci:?}");
    }

    #[test]
    fn stretches_that_drift_together_widen_it() {
        // A current run whose second half is 3% slower than its first: the block CI is wider
        // than the plain bootstrap's, which sees only the noise between neighbours.
        let base = noisy(200, 1.0, 0.08, 3);
        let mut cur = noisy(200, 1.0, 0.08, 4);
        cur[100..].iter_mut().for_each(|x| *x *= 1.03);
        let block = block_ratio_ci(&base, &cur, &opts(0)).unwrap();
        let plain = crate::compare(&base, &cur, &opts(0)).unwrap().ci;
        assert!(
            block.high - block.low > plain.high - plain.low,
            "{block:?} {plain:?}"
        );
    }

    #[test]
    fn property_scales_with_the_current_run() {
        // The draws depend on the seed and the sizes alone: doubling every current sample
        // doubles the interval exactly.
        let mut rng = Rng::new(5);
        for case in 0..50 {
            let nb = 5 + rng.below(300) as usize;
            let nc = 5 + rng.below(300) as usize;
            let opts = |seed| BootstrapOptions {
                resamples: 200,
                ..opts(seed)
            };
            let base = noisy(nb, 1.0, 0.2, case);
            let cur = noisy(nc, 1.0, 0.2, case + 100);
            let doubled: Vec<f64> = cur.iter().map(|x| 2.0 * x).collect();
            let ci = block_ratio_ci(&base, &cur, &opts(case)).unwrap();
            let twice = block_ratio_ci(&base, &doubled, &opts(case)).unwrap();
            assert_eq!((twice.low, twice.high), (2.0 * ci.low, 2.0 * ci.high));
            assert!(ci.low <= ci.high);
        }
    }

    #[test]
    fn property_covers_the_true_ratio_of_steady_runs() {
        // Independent samples (no drift at all), true ratio 1.1: the 90% interval covers it in
        // most runs. Blocks cost some coverage at small sizes, as any block bootstrap does.
        let mut covered = 0;
        for seed in 0..200 {
            let base = noisy(100, 1.0, 0.2, seed);
            let cur = noisy(100, 1.1, 0.2, seed + 1000);
            let o = BootstrapOptions {
                resamples: 400,
                confidence: 0.9,
                seed,
            };
            let ci = block_ratio_ci(&base, &cur, &o).unwrap();
            covered += usize::from(ci.low <= 1.1 && 1.1 <= ci.high);
        }
        assert!((150..=195).contains(&covered), "{covered} of 200");
    }
}
