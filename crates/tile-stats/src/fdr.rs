//! False discoveries across the many cases of one comparison: Benjamini-Hochberg.
//!
//! A run of m cases tested each at alpha raises about alpha * m false alarms on identical
//! code: 1 in 20 cases, or 500 at 10,000 cases. Judging each case by its adjusted p-value
//! instead keeps the expected share of false discoveries among the cases called changed at
//! most alpha, and when nothing changed the chance of any discovery at all at most alpha.

use crate::error::{Result, StatsError};

/// Benjamini-Hochberg adjusted p-values (q-values), in the order given.
///
/// With the p-values sorted ascending, p_(1) <= ... <= p_(m), the adjusted value of p_(i) is
/// min over j >= i of min(1, m * p_(j) / j). Calling every case with q <= alpha a discovery is
/// the Benjamini-Hochberg step-up procedure at level alpha: the false discovery rate is at most
/// alpha for independent or positively dependent tests (cases measured in one process are the
/// latter). Same as R's `p.adjust(p, "BH")` and statsmodels' `multipletests(p, method="fdr_bh")`.
///
/// `family` is the number of tests the control counts, at least `p_values.len()`: tests whose
/// p-value is not given (not measured yet) count as p = 1, which never makes another case a
/// discovery. Pass `p_values.len()` when every test is given.
///
/// Errors on a p-value that is NaN or outside [0, 1], or a family smaller than the p-values.
pub fn benjamini_hochberg(p_values: &[f64], family: usize) -> Result<Vec<f64>> {
    if let Some(index) = p_values.iter().position(|p| !(0.0..=1.0).contains(p)) {
        return Err(StatsError::InvalidArgument(format!(
            "p-values must be in [0, 1], got {} at index {index}",
            p_values[index]
        )));
    }
    if family < p_values.len() {
        return Err(StatsError::InvalidArgument(format!(
            "family ({family}) must count at least the {} p-values given",
            p_values.len()
        )));
    }
    let mut order: Vec<usize> = (0..p_values.len()).collect();
    order.sort_unstable_by(|&a, &b| p_values[a].total_cmp(&p_values[b]));
    let m = family as f64;
    let mut adjusted = vec![0.0; p_values.len()];
    let mut running = 1.0_f64;
    for (rank, &index) in order.iter().enumerate().rev() {
        // m / rank first: a factor of exactly 1 for the largest leaves that p-value as it is.
        running = running.min(p_values[index] * (m / (rank + 1) as f64));
        adjusted[index] = running;
    }
    Ok(adjusted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    fn close(a: &[f64], b: &[f64]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-12)
    }

    #[test]
    fn matches_r_p_adjust() {
        // R: p.adjust(c(0.01, 0.04, 0.03, 0.005, 0.5, 0.2), "BH")
        //    0.030 0.060 0.060 0.030 0.500 0.240
        let p = [0.01, 0.04, 0.03, 0.005, 0.5, 0.2];
        let q = benjamini_hochberg(&p, p.len()).unwrap();
        assert!(close(&q, &[0.03, 0.06, 0.06, 0.03, 0.5, 0.24]), "{q:?}");
        // Ties share one value; one test is left as it is.
        let q = benjamini_hochberg(&[0.02, 0.02, 0.02], 3).unwrap();
        assert!(close(&q, &[0.02, 0.02, 0.02]), "{q:?}");
        assert_eq!(benjamini_hochberg(&[0.3], 1).unwrap(), vec![0.3]);
        assert!(benjamini_hochberg(&[], 0).unwrap().is_empty());
    }

    #[test]
    fn a_larger_family_counts_the_missing_tests_as_p_one() {
        let q = benjamini_hochberg(&[0.01], 5).unwrap();
        assert!(close(&q, &[0.05]), "{q:?}");
        let all = benjamini_hochberg(&[0.01, 1.0, 1.0, 1.0, 1.0], 5).unwrap();
        assert_eq!(all[0], q[0]);
    }

    #[test]
    fn rejects_what_is_not_a_p_value() {
        for bad in [f64::NAN, -0.1, 1.5] {
            let e = benjamini_hochberg(&[0.1, bad], 2).unwrap_err().to_string();
            assert!(e.contains("index 1"), "{e}");
        }
        assert!(benjamini_hochberg(&[0.1, 0.2], 1).is_err());
    }

    #[test]
    fn property_monotone_and_at_least_the_p_value() {
        let mut rng = Rng::new(5);
        for _ in 0..200 {
            let n = 1 + rng.below(50) as usize;
            let p: Vec<f64> = (0..n).map(|_| rng.below(1001) as f64 / 1000.0).collect();
            let q = benjamini_hochberg(&p, n).unwrap();
            for i in 0..n {
                assert!(q[i] >= p[i] && q[i] <= 1.0);
                for j in 0..n {
                    if p[i] <= p[j] {
                        assert!(q[i] <= q[j], "{p:?} {q:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn property_null_p_values_rarely_give_a_discovery() {
        // 200 runs of 1,000 identical cases (uniform p-values): per-case alpha 0.05 finds about
        // 50 in every run; BH at 0.05 finds any at all in about 5% of runs.
        let mut rng = Rng::new(9);
        let (mut per_case, mut runs_with_any) = (0, 0);
        for _ in 0..200 {
            let p: Vec<f64> = (0..1000)
                .map(|_| (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64)
                .collect();
            per_case += p.iter().filter(|&&x| x < 0.05).count();
            let q = benjamini_hochberg(&p, p.len()).unwrap();
            runs_with_any += usize::from(q.iter().any(|&x| x < 0.05));
        }
        assert!(per_case > 200 * 40, "{per_case}");
        assert!(runs_with_any <= 20, "{runs_with_any} of 200");
    }
}
