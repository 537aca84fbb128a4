//! Descriptive statistics: quantiles (numpy's default linear method), moments, MAD, outliers.

use crate::error::{check_sample, Result, StatsError};

/// Interpolates between `a` and `b` exactly as numpy's `_lerp` does, so results match bit for bit.
#[inline]
pub(crate) fn lerp(a: f64, b: f64, t: f64) -> f64 {
    let diff = b - a;
    if t >= 0.5 {
        b - diff * (1.0 - t)
    } else {
        a + diff * t
    }
}

/// Position of quantile `q` in a sorted sample of `n` values: (lower index, fraction to the next).
#[inline]
fn position(n: usize, q: f64) -> (usize, f64) {
    let virtual_index = (n - 1) as f64 * q;
    if virtual_index >= (n - 1) as f64 {
        return (n - 1, 0.0);
    }
    let lo = virtual_index.floor();
    (lo as usize, virtual_index - lo)
}

/// Quantile `q` of an already sorted, non-empty sample.
pub(crate) fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    let (lo, t) = position(sorted.len(), q);
    if t == 0.0 {
        sorted[lo]
    } else {
        lerp(sorted[lo], sorted[lo + 1], t)
    }
}

/// Quantile `q` of a non-empty, unsorted buffer in O(n) with a quickselect; reorders `buf`.
pub(crate) fn quantile_select(buf: &mut [f64], q: f64) -> f64 {
    let (lo, t) = position(buf.len(), q);
    let (_, &mut a, above) = buf.select_nth_unstable_by(lo, f64::total_cmp);
    if t == 0.0 {
        return a;
    }
    let b = above.iter().copied().fold(f64::INFINITY, f64::min);
    lerp(a, b, t)
}

pub(crate) fn check_q(q: f64) -> Result<()> {
    if (0.0..=1.0).contains(&q) {
        Ok(())
    } else {
        Err(StatsError::InvalidArgument(format!(
            "quantile q must be between 0 and 1, got {q}: use e.g. 0.5 for the median"
        )))
    }
}

/// Quantile `q` in [0, 1] with linear interpolation (numpy's default method).
pub fn quantile(xs: &[f64], q: f64) -> Result<f64> {
    check_sample(xs)?;
    check_q(q)?;
    Ok(quantile_select(&mut xs.to_vec(), q))
}

/// Median (the 0.5 quantile, interpolated between the middle values for even sizes).
pub fn median(xs: &[f64]) -> Result<f64> {
    quantile(xs, 0.5)
}

/// Arithmetic mean, compensated (Neumaier) so long samples do not drift.
pub fn mean(xs: &[f64]) -> Result<f64> {
    check_sample(xs)?;
    Ok(mean_unchecked(xs))
}

pub(crate) fn mean_unchecked(xs: &[f64]) -> f64 {
    let n = xs.len() as f64;
    let (mut sum, mut comp) = (0.0_f64, 0.0_f64);
    for &x in xs {
        let t = sum + x;
        comp += if sum.abs() >= x.abs() {
            (sum - t) + x
        } else {
            (x - t) + sum
        };
        sum = t;
    }
    let total = sum + comp;
    if total.is_finite() {
        total / n
    } else {
        // The sum overflowed although every value is finite: scale first.
        xs.iter().map(|x| x / n).sum()
    }
}

/// Sample standard deviation (ddof = 1); 0 for a single value.
pub fn stdev(xs: &[f64]) -> Result<f64> {
    check_sample(xs)?;
    Ok(stdev_unchecked(xs, mean_unchecked(xs)))
}

fn stdev_unchecked(xs: &[f64], mean: f64) -> f64 {
    if xs.len() < 2 {
        return 0.0;
    }
    // Divide by the largest deviation first so squares cannot overflow.
    let scale = xs.iter().fold(0.0_f64, |m, x| m.max((x - mean).abs()));
    if scale == 0.0 {
        return 0.0;
    }
    let ss: f64 = xs.iter().map(|x| ((x - mean) / scale).powi(2)).sum();
    scale * (ss / (xs.len() - 1) as f64).sqrt()
}

/// Tukey outlier counts: mild is beyond 1.5 IQR from the quartiles (but within 3), severe beyond 3.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Outliers {
    pub mild: usize,
    pub severe: usize,
}

/// Counts Tukey outliers of a sample.
pub fn tukey_outliers(xs: &[f64]) -> Result<Outliers> {
    check_sample(xs)?;
    let mut sorted = xs.to_vec();
    sorted.sort_unstable_by(f64::total_cmp);
    Ok(outliers_sorted(
        &sorted,
        quantile_sorted(&sorted, 0.25),
        quantile_sorted(&sorted, 0.75),
    ))
}

fn outliers_sorted(sorted: &[f64], q1: f64, q3: f64) -> Outliers {
    let iqr = q3 - q1;
    let (mild_lo, mild_hi) = (q1 - 1.5 * iqr, q3 + 1.5 * iqr);
    let (severe_lo, severe_hi) = (q1 - 3.0 * iqr, q3 + 3.0 * iqr);
    let mut out = Outliers::default();
    for &x in sorted {
        if x < severe_lo || x > severe_hi {
            out.severe += 1;
        } else if x < mild_lo || x > mild_hi {
            out.mild += 1;
        }
    }
    out
}

/// Point statistics of a sample (no resampling).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Description {
    pub n: usize,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    pub median: f64,
    pub stdev: f64,
    /// Median absolute deviation from the median, unscaled.
    pub mad: f64,
    pub q1: f64,
    pub q3: f64,
    pub p5: f64,
    pub p95: f64,
    pub outliers: Outliers,
}

/// Describes a sample; see [`describe_sorted`] when a sorted copy already exists.
pub fn describe(xs: &[f64]) -> Result<Description> {
    check_sample(xs)?;
    let mut sorted = xs.to_vec();
    sorted.sort_unstable_by(f64::total_cmp);
    Ok(describe_sorted(&sorted))
}

/// Describes a sorted, non-empty, finite sample.
pub(crate) fn describe_sorted(sorted: &[f64]) -> Description {
    let q = |p| quantile_sorted(sorted, p);
    let median = q(0.5);
    let (q1, q3) = (q(0.25), q(0.75));
    let mut deviations: Vec<f64> = sorted.iter().map(|x| (x - median).abs()).collect();
    let (min, max) = (sorted[0], sorted[sorted.len() - 1]);
    // Rounding can push the mean an ulp outside [min, max]; it never is mathematically.
    let mean = mean_unchecked(sorted).clamp(min, max);
    Description {
        n: sorted.len(),
        min,
        max,
        mean,
        median,
        stdev: stdev_unchecked(sorted, mean),
        mad: quantile_select(&mut deviations, 0.5),
        q1,
        q3,
        p5: q(0.05),
        p95: q(0.95),
        outliers: outliers_sorted(sorted, q1, q3),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_follow_numpy_linear() {
        let xs = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0];
        // np.quantile(xs, [0, .05, .25, .5, .75, .95, 1])
        let want = [1.0, 1.0, 1.75, 3.5, 5.25, 7.949_999_999_999_998, 9.0];
        for (q, w) in [0.0, 0.05, 0.25, 0.5, 0.75, 0.95, 1.0]
            .into_iter()
            .zip(want)
        {
            assert!((quantile(&xs, q).unwrap() - w).abs() < 1e-12, "q={q}");
        }
        assert_eq!(median(&[2.0]).unwrap(), 2.0);
        assert_eq!(median(&[1.0, 2.0]).unwrap(), 1.5);
        assert!(quantile(&xs, 1.1).is_err());
        assert!(quantile(&xs, f64::NAN).is_err());
        assert_eq!(quantile(&[], 0.5), Err(StatsError::EmptySample));
    }

    #[test]
    fn select_agrees_with_sorted() {
        let xs: Vec<f64> = (0..101).map(|i| f64::from((i * 37) % 101) * 0.5).collect();
        let mut sorted = xs.clone();
        sorted.sort_unstable_by(f64::total_cmp);
        for q in [0.0, 0.01, 0.33, 0.5, 0.999, 1.0] {
            assert_eq!(
                quantile_select(&mut xs.clone(), q),
                quantile_sorted(&sorted, q)
            );
        }
    }

    #[test]
    fn moments() {
        let xs = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        assert_eq!(mean(&xs).unwrap(), 5.0);
        // sample stdev: sqrt(32 / 7)
        assert!((stdev(&xs).unwrap() - (32.0_f64 / 7.0).sqrt()).abs() < 1e-15);
        assert_eq!(stdev(&[3.0]).unwrap(), 0.0);
        assert_eq!(mean(&[f64::MAX, f64::MAX]).unwrap(), f64::MAX);
        assert!(stdev(&[f64::MAX, f64::MAX / 2.0]).unwrap().is_finite());
    }

    #[test]
    fn description_and_outliers() {
        let mut xs: Vec<f64> = (1..=20).map(f64::from).collect();
        xs.push(35.0); // q1 = 6.25, q3 = 16.75, IQR = 10.5: mild in (32.5, 48.25]
        xs.push(100.0); // severe (> 48.25)
        let d = describe(&xs).unwrap();
        assert_eq!(d.n, 22);
        assert_eq!((d.min, d.max), (1.0, 100.0));
        assert_eq!(d.outliers, Outliers { mild: 1, severe: 1 });
        assert_eq!(tukey_outliers(&xs).unwrap(), d.outliers);
        assert_eq!(d.median, 11.5);
        // |x - 11.5| sorted: 0.5, 0.5, 1.5, 1.5, ... ; median of 22 deviations
        assert_eq!(d.mad, 5.5);
        assert!(d.p5 <= d.q1 && d.q1 <= d.median && d.median <= d.q3 && d.q3 <= d.p95);
    }
}
