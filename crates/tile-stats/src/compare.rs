//! Two-sample comparison: ratio of medians with a bootstrap interval, and Mann-Whitney U.

use crate::bootstrap::{ratio_ci_sorted, BootstrapOptions, Interval};
use crate::describe::quantile_sorted;
use crate::error::{check_sample, Result, StatsError};
use crate::special::normal_sf;

/// Mann-Whitney U test result: `u` is the statistic of the first sample, `p_value` two-sided.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MannWhitney {
    pub u: f64,
    pub p_value: f64,
}

/// Mann-Whitney U test, two-sided, normal approximation with tie and continuity corrections.
///
/// Same convention as `scipy.stats.mannwhitneyu(a, b, method="asymptotic")`: `u` counts the
/// pairs where the value from `a` is larger, ties counting one half.
pub fn mann_whitney_u(a: &[f64], b: &[f64]) -> Result<MannWhitney> {
    check_sample(a)?;
    check_sample(b)?;
    let (n1, n2) = (a.len(), b.len());
    let mut pooled: Vec<(f64, bool)> = a
        .iter()
        .map(|&x| (x, true))
        .chain(b.iter().map(|&x| (x, false)))
        .collect();
    pooled.sort_unstable_by(|x, y| x.0.total_cmp(&y.0));
    let (mut rank_sum_a, mut tie_term) = (0.0_f64, 0.0_f64);
    let mut i = 0;
    while i < pooled.len() {
        // Values equal to pooled[i] occupy 0-based positions i..j and share their average rank.
        let mut j = i + 1;
        while j < pooled.len() && pooled[j].0 == pooled[i].0 {
            j += 1;
        }
        let t = (j - i) as f64;
        let avg_rank = (i + j + 1) as f64 / 2.0;
        let from_a = pooled[i..j].iter().filter(|p| p.1).count();
        rank_sum_a += avg_rank * from_a as f64;
        tie_term += t * t * t - t;
        i = j;
    }
    let (f1, f2) = (n1 as f64, n2 as f64);
    let u1 = rank_sum_a - f1 * (f1 + 1.0) / 2.0;
    let u = u1.max(f1 * f2 - u1);
    let n = f1 + f2;
    let sigma = (f1 * f2 / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)))).sqrt();
    let p_value = if sigma > 0.0 {
        let z = (u - f1 * f2 / 2.0 - 0.5) / sigma;
        (2.0 * normal_sf(z)).clamp(0.0, 1.0)
    } else {
        // Every value is tied: no evidence of any difference.
        1.0
    };
    Ok(MannWhitney { u: u1, p_value })
}

/// Comparison of a current sample against a baseline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Comparison {
    /// median(current) / median(baseline).
    pub ratio: f64,
    /// Bootstrap interval of the ratio (both samples resampled independently).
    pub ci: Interval,
    /// Two-sided Mann-Whitney p-value.
    pub p_value: f64,
    /// U statistic of `current` against `baseline` (scipy's `mannwhitneyu(current, baseline)`):
    /// pairs where current is larger; divided by `n_current * n_baseline` it estimates
    /// P(current > baseline).
    pub u_statistic: f64,
    pub n_baseline: usize,
    pub n_current: usize,
}

/// Compares `current` against `baseline`: ratio of medians with a bootstrap CI, and a U test.
pub fn compare(baseline: &[f64], current: &[f64], opts: &BootstrapOptions) -> Result<Comparison> {
    check_sample(baseline)?;
    check_sample(current)?;
    opts.validate()?;
    let sorted = |xs: &[f64]| {
        let mut v = xs.to_vec();
        v.sort_unstable_by(f64::total_cmp);
        v
    };
    let (base, cur) = (sorted(baseline), sorted(current));
    let base_median = quantile_sorted(&base, 0.5);
    if base_median == 0.0 {
        return Err(StatsError::InvalidArgument(
            "baseline median is 0, so the ratio of medians is undefined: \
             compare strictly positive measurements such as timings"
                .into(),
        ));
    }
    let ratio = quantile_sorted(&cur, 0.5) / base_median;
    let ci = ratio_ci_sorted(&base, &cur, opts, ratio)?;
    let mw = mann_whitney_u(current, baseline)?;
    Ok(Comparison {
        ratio,
        ci,
        p_value: mw.p_value,
        u_statistic: mw.u,
        n_baseline: baseline.len(),
        n_current: current.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mann_whitney_matches_scipy() {
        // scipy.stats.mannwhitneyu(a, b, method="asymptotic") -> U=2.5, p=0.02810006355731762
        let a = [1.0, 2.0, 3.0, 4.0, 5.0];
        let b = [3.0, 6.0, 7.0, 8.0, 9.0, 10.0];
        let r = mann_whitney_u(&a, &b).unwrap();
        assert_eq!(r.u, 2.5);
        assert!(
            (r.p_value - 0.028_100_063_557_317_62).abs() < 1e-12,
            "{r:?}"
        );
        let flipped = mann_whitney_u(&b, &a).unwrap();
        assert_eq!(flipped.u, 27.5);
        assert_eq!(flipped.p_value, r.p_value);
    }

    #[test]
    fn all_tied_gives_p_one() {
        let r = mann_whitney_u(&[1.0, 1.0], &[1.0, 1.0, 1.0]).unwrap();
        assert_eq!((r.u, r.p_value), (3.0, 1.0));
        let r = mann_whitney_u(&[1.0], &[2.0]).unwrap();
        assert_eq!((r.u, r.p_value), (0.0, 1.0));
    }

    #[test]
    fn compare_detects_a_slowdown() {
        let base: Vec<f64> = (0..100).map(|i| 10.0 + f64::from(i % 10) * 0.01).collect();
        let cur: Vec<f64> = base.iter().map(|x| x * 1.2).collect();
        let c = compare(&base, &cur, &BootstrapOptions::default()).unwrap();
        assert!((c.ratio - 1.2).abs() < 1e-12);
        assert!(c.ci.low <= c.ratio && c.ratio <= c.ci.high);
        assert!(c.ci.low > 1.15 && c.ci.high < 1.25, "{c:?}");
        assert!(c.p_value < 1e-10);
        assert_eq!(c.u_statistic, 10_000.0);
        assert_eq!((c.n_baseline, c.n_current), (100, 100));
    }

    #[test]
    fn compare_rejects_zero_baseline() {
        let e = compare(&[0.0, 0.0, 1.0], &[1.0], &BootstrapOptions::default()).unwrap_err();
        assert!(e.to_string().contains("baseline median is 0"));
        let e = compare(&[0.0, 1.0, 1.0], &[1.0], &BootstrapOptions::default()).unwrap_err();
        assert!(e.to_string().contains("resample"));
    }
}
