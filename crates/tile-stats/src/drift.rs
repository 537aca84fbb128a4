//! Within-run drift: how far a median wandered during one run, beyond what sampling explains.
//!
//! A per-sample CI only sees the noise between neighbouring samples. A median that wandered by
//! x% within one run can differ by as much between two runs, so a comparison widens its noise
//! floor by this drift when nothing better measures the run-to-run noise.

use crate::describe::quantile_select;
use crate::error::{Result, StatsError};

/// The run is cut into this many blocks of consecutive samples; the first is left out.
pub const DRIFT_BLOCKS: usize = 5;
/// The fewest samples a block needs for its median to be worth judging.
pub const MIN_BLOCK: usize = 5;
/// Standard error of a median from its MAD, for normal data: sqrt(pi / 2) * 1.4826 * MAD / sqrt(n).
const MEDIAN_SE: f64 = 1.2533 * 1.4826;
/// Expected range of 4 independent standard normal values (d2 of 4): the blocks judged,
/// `DRIFT_BLOCKS - 1`.
const D2_OF_4: f64 = 2.059;

/// How far the median wandered within one run, beyond what sampling noise explains, relative
/// to the run's median; `None` with fewer than [`MIN_BLOCK`] samples a block (fewer than 25) or
/// a median that is not positive.
///
/// `samples` are in the order they were taken, cut into [`DRIFT_BLOCKS`] blocks. The first
/// block is left out: on a CPU it still carries the end of the warm-up (the first samples often
/// run 10-50% slow), which every run has and which so cancels in a ratio, while this measures
/// the wandering that differs from run to run.
///
/// The result is (R - E) / median, at least 0: R is the range (max - min) of the four block
/// medians, and E the range that independent samples would give them alone, d2(4) times the
/// mean standard error of a block median (a median's standard error taken as
/// 1.2533 * 1.4826 * MAD / sqrt(block size)). With few samples a block the medians scatter by
/// chance; counting that scatter as drift left half the +10% changes of a ~7 µs kernel
/// `inconclusive` (`benchmarks/compare_false_alarms.py --pin`: 10 of 20 detected, 14 of 20 with
/// the scatter taken out, false alarms unchanged).
///
/// Errors on NaN or infinite samples.
pub fn within_run_drift(samples: &[f64]) -> Result<Option<f64>> {
    if let Some(index) = samples.iter().position(|x| !x.is_finite()) {
        return Err(StatsError::NonFinite {
            index,
            value: samples[index],
        });
    }
    let n = samples.len();
    if n < DRIFT_BLOCKS * MIN_BLOCK {
        return Ok(None);
    }
    let center = quantile_select(&mut samples.to_vec(), 0.5);
    if center <= 0.0 {
        return Ok(None);
    }
    // Block i ends at round(i * n / DRIFT_BLOCKS); i * n / DRIFT_BLOCKS is never halfway
    // between two integers, so rounding half up is exact.
    let cut = |i: usize| (2 * i * n + DRIFT_BLOCKS) / (2 * DRIFT_BLOCKS);
    let (mut low, mut high, mut errors) = (f64::INFINITY, f64::NEG_INFINITY, 0.0);
    let mut buf = Vec::with_capacity(n / DRIFT_BLOCKS + 1);
    for i in 1..DRIFT_BLOCKS {
        let block = &samples[cut(i)..cut(i + 1)];
        buf.clear();
        buf.extend_from_slice(block);
        let median = quantile_select(&mut buf, 0.5);
        buf.iter_mut().for_each(|x| *x = (*x - median).abs());
        let mad = quantile_select(&mut buf, 0.5);
        errors += MEDIAN_SE * mad / (block.len() as f64).sqrt();
        low = low.min(median);
        high = high.max(median);
    }
    let expected = D2_OF_4 * errors / (DRIFT_BLOCKS - 1) as f64;
    Ok(Some((high - low - expected).max(0.0) / center))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

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

    #[test]
    fn too_few_samples_or_no_positive_median_give_none() {
        assert_eq!(within_run_drift(&[]).unwrap(), None);
        assert_eq!(within_run_drift(&[1.0; 24]).unwrap(), None);
        assert_eq!(within_run_drift(&[1.0; 25]).unwrap(), Some(0.0));
        assert_eq!(within_run_drift(&[0.0; 30]).unwrap(), None);
        assert_eq!(within_run_drift(&[-1.0; 30]).unwrap(), None);
        let e = within_run_drift(&[1.0, f64::NAN]).unwrap_err();
        assert!(matches!(e, StatsError::NonFinite { index: 1, .. }));
    }

    #[test]
    fn a_steady_climb_is_its_block_range() {
        // 0..100 in order: blocks 2-5 are 20..40, ..., 80..100 with medians 29.5 .. 89.5 (a
        // range of 60) and a MAD of 5 each, around a median of 49.5.
        let xs: Vec<f64> = (0..100).map(f64::from).collect();
        let expected = D2_OF_4 * MEDIAN_SE * 5.0 / 20f64.sqrt();
        let got = within_run_drift(&xs).unwrap().unwrap();
        assert!((got - (60.0 - expected) / 49.5).abs() < 1e-12, "{got}");
    }

    #[test]
    fn the_first_block_is_left_out() {
        // A slow start (the end of a warm-up) in the first fifth does not count as drift.
        let mut xs = vec![1.0; 100];
        xs[..20].iter_mut().for_each(|x| *x = 1.5);
        assert_eq!(within_run_drift(&xs).unwrap(), Some(0.0));
        xs[20] = 1.5; // one slow sample inside block 2 moves no median
        assert_eq!(within_run_drift(&xs).unwrap(), Some(0.0));
    }

    #[test]
    fn blocks_follow_rounded_cuts() {
        // n = 27: cuts at round(5.4, 10.8, 16.2, 21.6) = 5, 11, 16, 22; blocks 2-5 are 5..11,
        // 11..16, 16..22, 22..27. A constant level per block makes the range exact.
        let levels = [
            (0, 5, 9.0),
            (5, 11, 1.0),
            (11, 16, 2.0),
            (16, 22, 2.0),
            (22, 27, 3.0),
        ];
        let mut xs = vec![0.0; 27];
        for (a, b, level) in levels {
            xs[a..b].iter_mut().for_each(|x| *x = level);
        }
        assert_eq!(within_run_drift(&xs).unwrap(), Some(2.0 / 2.0));
    }

    #[test]
    fn property_scale_free_and_not_negative() {
        // Random runs with random trends: the drift is >= 0 and the same in any unit.
        let mut rng = Rng::new(11);
        for case in 0..200u64 {
            let n = 25 + rng.below(400) as usize;
            let trend = (rng.below(41) as f64 - 20.0) / 100.0;
            let xs: Vec<f64> = noisy(n, 1e-3, 0.1, case)
                .iter()
                .enumerate()
                .map(|(i, x)| x * (1.0 + trend * i as f64 / n as f64))
                .collect();
            let drift = within_run_drift(&xs).unwrap().unwrap();
            assert!(drift >= 0.0);
            let scaled: Vec<f64> = xs.iter().map(|x| x * 1024.0).collect();
            assert_eq!(
                within_run_drift(&scaled).unwrap(),
                Some(drift),
                "case {case}"
            );
            // Reordering samples within a block changes none of its statistics.
            let mut shuffled = xs.clone();
            let last = (2 * (DRIFT_BLOCKS - 1) * n + DRIFT_BLOCKS) / (2 * DRIFT_BLOCKS);
            shuffled[last..].reverse();
            assert_eq!(
                within_run_drift(&shuffled).unwrap(),
                Some(drift),
                "case {case}"
            );
        }
    }

    #[test]
    fn property_chance_scatter_is_not_drift_but_a_trend_is() {
        // Steady runs, uniform within ±15%: blocks of 10 have medians that differ by chance,
        // and the drift stays well below that range. A +20% climb over the run is still seen.
        let (mut chance_total, mut drift_total) = (0.0, 0.0);
        for seed in 0..100 {
            let xs = noisy(50, 1.0, 0.3, seed);
            let medians: Vec<f64> = (1..5)
                .map(|i| quantile_select(&mut xs[i * 10..(i + 1) * 10].to_vec(), 0.5))
                .collect();
            let range = medians.iter().copied().fold(f64::MIN, f64::max)
                - medians.iter().copied().fold(f64::MAX, f64::min);
            chance_total += range;
            drift_total += within_run_drift(&xs).unwrap().unwrap();
            let trend: Vec<f64> = noisy(50, 1.0, 0.02, seed + 1000)
                .iter()
                .enumerate()
                .map(|(i, x)| x * (1.0 + 0.2 * i as f64 / 49.0))
                .collect();
            assert!(
                within_run_drift(&trend).unwrap().unwrap() > 0.08,
                "seed {seed}"
            );
        }
        assert!(
            drift_total < chance_total / 3.0,
            "{drift_total} {chance_total}"
        );
    }
}
