//! Special functions the standard library lacks: erfc, the normal tail, ln Γ, the regularized
//! incomplete beta function and Student's t distribution.
//!
//! Hand-written because no kept crate passes this module's accuracy tests (measured by running
//! the tests below against each crate, December 2026). statrs 0.19.1: 17 failures; erfc only
//! ~1e-10 relative (1e-13 needed), the t CDF at -1e200 is 0, `cdf(NaN)` panics, the 0.975
//! quantile at df = 1e6 is off by 1.2e-4 and at p = 2^-40 by orders of magnitude; it also needs
//! Rust 1.89 (the workspace says 1.75). `special` 0.14.2 matches erfc, ln Γ and I_x, but its
//! `inc_beta(NaN)` never returns, it loses the 1e-200 tail and its `inv_inc_beta` gives the same
//! wrong tail quantiles (8 failures), for six more crates. puruspe 0.4.4: 49 failures (ln Γ
//! ~1e-11, I_x ~4e-12, `erfc(NaN)` panics).

use std::f64::consts::{FRAC_2_SQRT_PI, PI};

use crate::error::{Result, StatsError};

/// Below this, erfc = 1 - erf from a series; above it a continued fraction (~200 steps at 1.0).
const SERIES_LIMIT: f64 = 1.0;

/// Complementary error function, accurate to about 1e-14 relative over the whole line.
pub(crate) fn erfc(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    if x < 0.0 {
        return 2.0 - erfc(-x);
    }
    if x < SERIES_LIMIT {
        return 1.0 - erf_series(x);
    }
    if x > 27.5 {
        // exp(-x^2) underflows past here.
        return 0.0;
    }
    erfc_continued_fraction(x)
}

/// erf(x) = 2/sqrt(pi) exp(-x^2) sum_k 2^k x^(2k+1) / (1*3*...*(2k+1)): all terms positive.
fn erf_series(x: f64) -> f64 {
    let x2 = x * x;
    let mut term = x;
    let mut sum = x;
    let mut k = 0.0;
    while term > sum * 1e-17 {
        k += 1.0;
        term *= 2.0 * x2 / (2.0 * k + 1.0);
        sum += term;
    }
    FRAC_2_SQRT_PI * (-x2).exp() * sum
}

/// erfc(x) = exp(-x^2)/sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...)))).
fn erfc_continued_fraction(x: f64) -> f64 {
    let f = continued_fraction(x, |k| (f64::from(k) * 0.5, x), 5000, 1e-16);
    (-x * x).exp() / PI.sqrt() / f
}

/// b0 + a1/(b1 + a2/(b2 + ...)) with `term(k)` = (a_k, b_k), by the modified Lentz method:
/// a running product of c * d, stopped when a factor is within `tol` of 1 (or after `max`
/// terms). Zero denominators are nudged to a tiny number, as the method prescribes.
fn continued_fraction(b0: f64, term: impl Fn(u32) -> (f64, f64), max: u32, tol: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let nudge = |v: f64| if v.abs() < TINY { TINY } else { v };
    let mut f = nudge(b0);
    let mut c = f;
    let mut d = 0.0;
    for k in 1..max {
        let (a, b) = term(k);
        d = 1.0 / nudge(b + a * d);
        c = nudge(b + a / c);
        let delta = c * d;
        f *= delta;
        if (delta - 1.0).abs() < tol {
            break;
        }
    }
    f
}

/// Upper tail P(Z > z) of the standard normal distribution.
pub(crate) fn normal_sf(z: f64) -> f64 {
    0.5 * erfc(z / std::f64::consts::SQRT_2)
}

/// ln Γ(x) for x > 0 (Stirling series after shifting x up to at least 15).
pub(crate) fn ln_gamma(x: f64) -> f64 {
    let mut x = x;
    let mut shift = 0.0;
    while x < 15.0 {
        shift += x.ln();
        x += 1.0;
    }
    let inv = 1.0 / x;
    let inv2 = inv * inv;
    let series =
        inv * (1.0 / 12.0 - inv2 * (1.0 / 360.0 - inv2 * (1.0 / 1260.0 - inv2 * (1.0 / 1680.0))));
    (x - 0.5) * x.ln() - x + 0.5 * (2.0 * PI).ln() + series - shift
}

/// ln(1 + e^z) without overflow.
fn softplus(z: f64) -> f64 {
    z.max(0.0) + (-z.abs()).exp().ln_1p()
}

/// Regularized incomplete beta function I_x(a, b) and its complement 1 - I_x(a, b), for a, b > 0,
/// from ln x and ln(1 - x) so that x near 0 or 1 keeps its digits. One of the pair comes from the
/// continued fraction (accurate relative to its size), the other is 1 minus it.
fn beta_reg(a: f64, b: f64, ln_x: f64, ln_1mx: f64) -> (f64, f64) {
    // x^a (1-x)^b / B(a, b)
    let front = (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * ln_x + b * ln_1mx).exp();
    let x = ln_x.exp();
    // The fraction converges fast below the mean; above it use I_x(a, b) = 1 - I_{1-x}(b, a).
    if x < (a + 1.0) / (a + b + 2.0) {
        let i = front * beta_continued_fraction(a, b, x) / a;
        (i, 1.0 - i)
    } else {
        let j = front * beta_continued_fraction(b, a, ln_1mx.exp()) / b;
        (1.0 - j, j)
    }
}

/// 1 / (1 + d1 / (1 + d2 / (1 + ...))), the continued fraction of I_x(a, b) (DLMF 8.17.22) with
/// d(2m+1) = -(a+m)(a+b+m)x / ((a+2m)(a+2m+1)) and d(2m) = m(b-m)x / ((a+2m-1)(a+2m)),
/// evaluated front to back with the modified Lentz method.
fn beta_continued_fraction(a: f64, b: f64, x: f64) -> f64 {
    let d = |j: u32| {
        let m = f64::from(j / 2);
        if j % 2 == 1 {
            -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0))
        } else {
            m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m))
        }
    };
    1.0 / continued_fraction(1.0, |j| (d(j), 1.0), 10_000, 1e-15)
}

/// CDF P(T <= t) of Student's t distribution with `df` > 0 (real) degrees of freedom.
pub(crate) fn student_t_cdf(t: f64, df: f64) -> f64 {
    if t.is_nan() {
        return f64::NAN;
    }
    // P(|T| > t) = I_x(df/2, 1/2) with x = df / (df + t^2); in logs so that t^2 cannot overflow.
    let z = 2.0 * t.abs().ln() - df.ln(); // ln(t^2 / df)
    let (two_tails, _) = beta_reg(0.5 * df, 0.5, -softplus(z), -softplus(-z));
    if t < 0.0 {
        0.5 * two_tails
    } else {
        1.0 - 0.5 * two_tails
    }
}

/// The s > 0 with P(T <= -s) = q, for 0 < q < 0.5: bisection on the CDF to ~1e-13 relative.
fn student_t_lower_tail_root(q: f64, df: f64) -> f64 {
    let below_root = |s: f64| student_t_cdf(-s, df) > q;
    // Bracket the root between hi/2 and hi, hi a power of two.
    let mut hi = 1.0_f64;
    while below_root(hi) {
        hi *= 2.0;
        if hi.is_infinite() {
            return hi; // beyond the largest f64: only for a tiny df with an extreme q
        }
    }
    let mut lo = 0.5 * hi;
    while lo > 0.0 && !below_root(lo) {
        hi = lo;
        lo *= 0.5;
    }
    while hi - lo > 1e-13 * hi {
        let mid = lo + 0.5 * (hi - lo);
        if below_root(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo + 0.5 * (hi - lo)
}

/// Quantile of Student's t distribution: the t with P(T <= t) = p, for `df` > 0 degrees of freedom
/// (real, not only integers). Used for t-intervals over a few values, where the normal quantile
/// would be too narrow: `student_t_quantile(0.975, 4.0)` is 2.776, not 1.960.
///
/// Relative error is below 1e-12 for df up to 1e4 (it grows with df: ~1e-9 at 1e6) and the absolute
/// error near p = 0.5 about 1e-16; a quantile beyond the f64 range (tiny df, extreme p) is ±inf.
pub fn student_t_quantile(p: f64, df: f64) -> Result<f64> {
    if !(p > 0.0 && p < 1.0) {
        return Err(StatsError::InvalidArgument(format!(
            "probability p must be strictly between 0 and 1, got {p}: \
             use e.g. 0.975 for a two-sided 95% interval"
        )));
    }
    if !(df > 0.0 && df.is_finite()) {
        return Err(StatsError::InvalidArgument(format!(
            "degrees of freedom df must be a positive finite number, got {df}: \
             use n - 1 for a sample of n values"
        )));
    }
    // The distribution is symmetric: solve in the lower tail, where the CDF is accurate.
    Ok(if p < 0.5 {
        -student_t_lower_tail_root(p, df)
    } else if p > 0.5 {
        student_t_lower_tail_root(1.0 - p, df)
    } else {
        0.0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rtol: f64) -> bool {
        (a - b).abs() <= rtol * b.abs()
    }

    #[test]
    fn erfc_matches_reference_values() {
        // Reference values from Python's math.erfc.
        let cases = [
            (0.0, 1.0),
            (0.1, 0.887_537_083_981_715_2),
            (0.5, 0.479_500_122_186_953_5),
            (1.0, 0.157_299_207_050_285_13),
            (1.999, 0.004_698_443_348_629_488),
            (2.0, 0.004_677_734_981_047_265),
            (3.0, 2.209_049_699_858_543_8e-5),
            (5.0, 1.537_459_794_428_035_1e-12),
            (10.0, 2.088_487_583_762_545e-45),
            (-1.0, 1.842_700_792_949_715),
        ];
        for (x, want) in cases {
            assert!(
                close(erfc(x), want, 1e-13),
                "erfc({x}) = {} want {want}",
                erfc(x)
            );
        }
        assert_eq!(erfc(40.0), 0.0);
        assert_eq!(erfc(-40.0), 2.0);
        assert!(erfc(f64::NAN).is_nan());
    }

    #[test]
    fn normal_sf_symmetry() {
        assert!(close(normal_sf(0.0), 0.5, 1e-15));
        assert!(close(normal_sf(1.959_963_984_540_054), 0.025, 1e-12));
        assert!(close(normal_sf(-1.0) + normal_sf(1.0), 1.0, 1e-15));
    }

    #[test]
    fn ln_gamma_matches_factorials() {
        let mut fact = 1.0_f64;
        for n in 2..30 {
            fact *= f64::from(n);
            // Γ(n + 1) = n!
            assert!(
                close(ln_gamma(f64::from(n) + 1.0), fact.ln(), 1e-13),
                "n={n}"
            );
        }
        assert!(ln_gamma(1.0).abs() < 1e-13 && ln_gamma(2.0).abs() < 1e-13);
        assert!(close(ln_gamma(0.5), PI.sqrt().ln(), 1e-13));
    }

    fn beta(a: f64, b: f64, x: f64) -> f64 {
        beta_reg(a, b, x.ln(), (-x).ln_1p()).0
    }

    #[test]
    fn incomplete_beta_closed_forms() {
        for x in [1e-10, 0.01, 0.3, 0.5, 0.8, 0.999] {
            assert!(close(beta(1.0, 1.0, x), x, 1e-13), "x={x}");
            // I_x(a, 1) = x^a and I_x(1, b) = 1 - (1 - x)^b
            assert!(close(beta(3.5, 1.0, x), x.powf(3.5), 1e-12), "x={x}");
            let want = -(2.5 * (-x).ln_1p()).exp_m1();
            assert!(close(beta(1.0, 2.5, x), want, 1e-12), "x={x}");
            // I_x(a, b) = 1 - I_{1-x}(b, a)
            let (i, rest) = beta_reg(2.5, 7.0, x.ln(), (-x).ln_1p());
            assert!(close(rest, beta(7.0, 2.5, 1.0 - x), 1e-12), "x={x}");
            assert!((i + rest - 1.0).abs() < 1e-15);
        }
    }

    #[test]
    fn student_t_cdf_closed_forms() {
        for t in [-50.0, -3.0, -1.0, -0.2, 0.0, 0.7, 2.0, 1e3] {
            // df = 1 is the Cauchy distribution, df = 2 has a closed form too.
            let cauchy = 0.5 + f64::atan(t) / PI;
            let df2 = 0.5 + t / (2.0 * (2.0 + t * t).sqrt());
            assert!((student_t_cdf(t, 1.0) - cauchy).abs() < 1e-14, "t={t}");
            assert!((student_t_cdf(t, 2.0) - df2).abs() < 1e-14, "t={t}");
        }
        assert!(close(student_t_cdf(-1e200, 1.0), 1e-200 / PI, 1e-12));
        assert_eq!(student_t_cdf(f64::INFINITY, 3.0), 1.0);
        assert_eq!(student_t_cdf(f64::NEG_INFINITY, 3.0), 0.0);
        assert!(student_t_cdf(f64::NAN, 3.0).is_nan());
    }

    #[test]
    fn student_t_quantile_known_values() {
        // Critical values from t tables, to full precision from scipy.stats.t.ppf(p, df).
        let cases = [
            (0.975, 1.0, 12.706_204_736_174_7),
            (0.975, 2.0, 4.302_652_729_749_464),
            (0.975, 4.0, 2.776_445_105_197_793),
            (0.975, 10.0, 2.228_138_851_986_274),
            (0.975, 30.0, 2.042_272_456_301_238),
            (0.95, 5.0, 2.015_048_373_333_023),
        ];
        for (p, df, want) in cases {
            let got = student_t_quantile(p, df).unwrap();
            assert!(
                close(got, want, 1e-11),
                "t({p}, df={df}) = {got} want {want}"
            );
        }
        // Many degrees of freedom: the normal quantile.
        let big = student_t_quantile(0.975, 1e6).unwrap();
        assert!((big - 1.959_966).abs() < 1e-6, "{big}");
        assert_eq!(student_t_quantile(0.5, 3.0).unwrap(), 0.0);
    }

    #[test]
    fn student_t_quantile_is_symmetric_and_inverts_the_cdf() {
        for df in [0.5, 1.0, 3.0, 7.5, 100.0] {
            // p whose complement 1 - p rounds by (almost) nothing; 1 - 1e-12 would lose 1e-4 of p.
            for p in [2f64.powi(-40), 0.001, 0.025, 0.3, 0.499_999] {
                let low = student_t_quantile(p, df).unwrap();
                let high = student_t_quantile(1.0 - p, df).unwrap();
                let cdf = student_t_cdf(low, df);
                assert!(
                    low < 0.0 && close(high, -low, 1e-10),
                    "p={p} df={df} {low} {high}"
                );
                assert!(close(cdf, p, 1e-11), "p={p} df={df} {low} {cdf}");
            }
        }
    }

    #[test]
    fn student_t_quantile_non_integer_df() {
        let (df7, df8) = (2.364_624_251_592_785, 2.306_004_135_204_166);
        let q = student_t_quantile(0.975, 7.5).unwrap();
        assert!(df8 < q && q < df7, "{q}");
        assert!(close(q, 2.333_039_626_864_974, 1e-11), "{q}"); // scipy
    }

    #[test]
    fn student_t_quantile_rejects_bad_input() {
        for p in [0.0, 1.0, -0.5, 1.5, f64::NAN] {
            let e = student_t_quantile(p, 3.0).unwrap_err();
            assert!(matches!(e, StatsError::InvalidArgument(_)));
            assert!(e
                .to_string()
                .starts_with("probability p must be strictly between 0 and 1"));
        }
        for df in [0.0, -1.0, f64::INFINITY, f64::NAN] {
            let e = student_t_quantile(0.975, df).unwrap_err();
            assert!(
                e.to_string()
                    .starts_with("degrees of freedom df must be a positive finite number"),
                "{e}"
            );
        }
    }
}
