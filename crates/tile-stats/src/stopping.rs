//! Adaptive stopping rule for sampling: stop on precision, time or run budget.
//!
//! It is called after every batch, so the median's interval comes from order statistics (a
//! distribution-free binomial interval) rather than a bootstrap: O(n), no resampling.

use crate::describe::quantile_select;
use crate::error::{check_confidence, Result, StatsError};
use crate::special::ln_gamma;

/// When to stop sampling.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StopRule {
    /// Stop once the relative half-width of the median's CI is at most this (0.01 = 1%).
    pub target_precision: f64,
    /// Never stop on precision or time before this many samples.
    pub min_runs: usize,
    /// Always stop at this many samples.
    pub max_runs: usize,
    /// Stop (after `min_runs`) once this much time has elapsed; may be infinite.
    pub max_time_s: f64,
    /// Never stop on precision before this much time has elapsed.
    pub min_time_s: f64,
    /// Confidence level of the median's interval.
    pub confidence: f64,
}

/// Why sampling stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    Precision,
    MaxTime,
    MaxRuns,
}

impl StopReason {
    /// The name recorded as `stop_reason`: "precision", "max_time" or "max_runs".
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Precision => "precision",
            Self::MaxTime => "max_time",
            Self::MaxRuns => "max_runs",
        }
    }
}

/// Whether to stop, why, and the precision reached so far.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StopDecision {
    pub stop: bool,
    /// Set exactly when `stop` is true.
    pub reason: Option<StopReason>,
    /// (ci_high - ci_low) / 2 / |median|; `None` while too few samples bound the median at this
    /// confidence, or when the median is 0.
    pub rel_half_width: Option<f64>,
}

impl StopRule {
    fn validate(&self) -> Result<()> {
        let bad = |msg: String| Err(StatsError::InvalidArgument(msg));
        if !(self.target_precision > 0.0 && self.target_precision.is_finite()) {
            return bad(format!(
                "target_precision must be a positive finite number, got {}: use e.g. 0.01 for 1%",
                self.target_precision
            ));
        }
        if self.min_runs == 0 {
            return bad("min_runs must be at least 1, got 0".into());
        }
        if self.max_runs < self.min_runs {
            return bad(format!(
                "max_runs ({}) must be at least min_runs ({})",
                self.max_runs, self.min_runs
            ));
        }
        if !(self.min_time_s >= 0.0 && self.min_time_s.is_finite()) {
            return bad(format!(
                "min_time_s must be a finite number >= 0, got {}",
                self.min_time_s
            ));
        }
        if self.max_time_s.is_nan() || self.max_time_s < self.min_time_s {
            return bad(format!(
                "max_time_s ({}) must be at least min_time_s ({})",
                self.max_time_s, self.min_time_s
            ));
        }
        check_confidence(self.confidence)
    }
}

/// Decides whether sampling can stop, given the samples so far and the time spent.
///
/// Order: precision (once `min_runs` and `min_time_s` are reached), then `max_runs`, then
/// `max_time_s` (once `min_runs` are reached: a floor on samples beats the time budget, as in
/// hyperfine and pytest-benchmark).
pub fn should_stop(samples: &[f64], elapsed_s: f64, rule: &StopRule) -> Result<StopDecision> {
    rule.validate()?;
    if !(elapsed_s >= 0.0 && elapsed_s.is_finite()) {
        return Err(StatsError::InvalidArgument(format!(
            "elapsed_s must be a finite number >= 0, got {elapsed_s}"
        )));
    }
    if let Some(index) = samples.iter().position(|x| !x.is_finite()) {
        return Err(StatsError::NonFinite {
            index,
            value: samples[index],
        });
    }
    let n = samples.len();
    let rel_half_width = relative_half_width(samples, rule.confidence);
    let enough_runs = n >= rule.min_runs;
    let reason = if enough_runs
        && elapsed_s >= rule.min_time_s
        && rel_half_width.is_some_and(|w| w <= rule.target_precision)
    {
        Some(StopReason::Precision)
    } else if n >= rule.max_runs {
        Some(StopReason::MaxRuns)
    } else if enough_runs && elapsed_s >= rule.max_time_s {
        Some(StopReason::MaxTime)
    } else {
        None
    };
    Ok(StopDecision {
        stop: reason.is_some(),
        reason,
        rel_half_width,
    })
}

/// Half-width of the order-statistic CI of the median, relative to the median.
fn relative_half_width(samples: &[f64], confidence: f64) -> Option<f64> {
    let n = samples.len();
    let j = median_ci_rank(n, confidence)?;
    let mut buf = samples.to_vec();
    let median = quantile_select(&mut buf, 0.5);
    if median == 0.0 {
        return None;
    }
    let select = |buf: &mut [f64], k: usize| *buf.select_nth_unstable_by(k, f64::total_cmp).1;
    let low = select(&mut buf, j - 1);
    let high = select(&mut buf, n - j);
    Some((high - low) / 2.0 / median.abs())
}

/// Largest 1-based rank `j` with P(B <= j - 1) <= (1 - confidence) / 2 for B ~ Binomial(n, 1/2),
/// so that [x_(j), x_(n+1-j)] covers the median with at least `confidence`; `None` if n is too
/// small for that.
fn median_ci_rank(n: usize, confidence: f64) -> Option<usize> {
    if n == 0 {
        return None;
    }
    let half_alpha = (1.0 - confidence) / 2.0;
    let nf = n as f64;
    // Mass below mean - 8.5 sd is under 1e-17, below any representable half_alpha: skip it.
    let start = (nf / 2.0 - 4.25 * nf.sqrt()).floor().max(0.0) as usize;
    let log_pmf = ln_gamma(nf + 1.0)
        - ln_gamma(start as f64 + 1.0)
        - ln_gamma((n - start) as f64 + 1.0)
        - nf * std::f64::consts::LN_2;
    let mut pmf = log_pmf.exp();
    let mut cdf = 0.0;
    let mut k = start;
    loop {
        cdf += pmf;
        if cdf > half_alpha {
            // P(B <= k) is too large, so j - 1 = k - 1 is the largest that fits.
            return if k == 0 { None } else { Some(k) };
        }
        pmf *= (n - k) as f64 / (k + 1) as f64;
        k += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule() -> StopRule {
        StopRule {
            target_precision: 0.01,
            min_runs: 10,
            max_runs: 1000,
            max_time_s: 10.0,
            min_time_s: 0.0,
            confidence: 0.95,
        }
    }

    #[test]
    fn ranks_match_binomial_tables() {
        // Classic table for the 95% CI of the median: n=6 -> (1, 6), n=10 -> (2, 9), n=20 -> (6, 15).
        assert_eq!(median_ci_rank(5, 0.95), None);
        assert_eq!(median_ci_rank(6, 0.95), Some(1));
        assert_eq!(median_ci_rank(10, 0.95), Some(2));
        assert_eq!(median_ci_rank(20, 0.95), Some(6));
        assert_eq!(median_ci_rank(100, 0.95), Some(40));
        // Large n: about n/2 - 0.98 sqrt(n).
        let j = median_ci_rank(1_000_000, 0.95).unwrap();
        assert!((499_015..=499_025).contains(&j), "{j}");
    }

    #[test]
    fn stops_on_precision_only_after_min_runs() {
        let tight = vec![1.0; 9];
        let d = should_stop(&tight, 0.1, &rule()).unwrap();
        assert!(!d.stop && d.reason.is_none());
        assert_eq!(d.rel_half_width, Some(0.0));
        let d = should_stop(&[1.0; 10], 0.1, &rule()).unwrap();
        assert_eq!(d.reason, Some(StopReason::Precision));
        let slow = StopRule {
            min_time_s: 1.0,
            ..rule()
        };
        assert!(!should_stop(&[1.0; 10], 0.1, &slow).unwrap().stop);
    }

    #[test]
    fn stops_on_budgets() {
        let noisy: Vec<f64> = (0..20).map(|i| 1.0 + f64::from(i % 5)).collect();
        let d = should_stop(&noisy, 1.0, &rule()).unwrap();
        assert!(!d.stop && d.rel_half_width.unwrap() > 0.01);
        let d = should_stop(&noisy, 10.0, &rule()).unwrap();
        assert_eq!(d.reason, Some(StopReason::MaxTime));
        let d = should_stop(
            &noisy,
            1.0,
            &StopRule {
                max_runs: 20,
                ..rule()
            },
        )
        .unwrap();
        assert_eq!(d.reason, Some(StopReason::MaxRuns));
        // The time budget does not cut below min_runs.
        let d = should_stop(&noisy[..5], 100.0, &rule()).unwrap();
        assert!(!d.stop && d.rel_half_width.is_none());
        assert!(!should_stop(&[], 0.0, &rule()).unwrap().stop);
    }

    #[test]
    fn rejects_bad_rules() {
        for bad in [
            StopRule {
                target_precision: 0.0,
                ..rule()
            },
            StopRule {
                min_runs: 0,
                ..rule()
            },
            StopRule {
                max_runs: 5,
                ..rule()
            },
            StopRule {
                max_time_s: f64::NAN,
                ..rule()
            },
            StopRule {
                min_time_s: 20.0,
                ..rule()
            },
            StopRule {
                confidence: 1.0,
                ..rule()
            },
        ] {
            assert!(should_stop(&[1.0], 0.0, &bad).is_err(), "{bad:?}");
        }
        assert!(should_stop(&[1.0], -1.0, &rule()).is_err());
        assert!(should_stop(&[1.0, f64::NAN], 0.0, &rule()).is_err());
        let unbounded = StopRule {
            max_time_s: f64::INFINITY,
            ..rule()
        };
        assert!(!should_stop(&[1.0, 2.0], 1e9, &unbounded).unwrap().stop);
    }
}
