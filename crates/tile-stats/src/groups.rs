//! t-intervals and t tests of a ratio of medians from the scatter between groups of samples:
//! the rounds of one run, the runs of a baseline pooled from several processes, or (lacking
//! both) blocks of consecutive samples of one run.
//!
//! Samples within a group share whatever state the machine was in; the groups' medians are
//! what varies from one measurement to the next. Their scatter is the run-to-run noise
//! measured, where [`crate::within_run_drift`] can only guess at it.

use std::str::FromStr;

use crate::bootstrap::Interval;
use crate::describe::{mean_unchecked, quantile_select};
use crate::drift::MIN_BLOCK;
use crate::error::{check_confidence, check_sample, Result, StatsError};
use crate::special::{student_t_cdf, student_t_quantile};

/// A run with no groups of its own is cut into this many blocks for [`run_blocks`].
pub const RUN_BLOCKS: usize = 8;

/// How the two sides' scatters combine into the standard error of their difference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spread {
    /// One variance pooled over the sides with two or more groups: for a baseline pooled from
    /// several runs, whose spread between runs stands for the current run's too.
    Pooled,
    /// Each side with its own variance and Welch's degrees of freedom: for runs in rounds,
    /// whose rounds each side measured for itself.
    Welch,
    /// Group k of one side paired with group k of the other: for two runs whose rounds took
    /// turns in one time window (`tile bench --against`), so that whatever moved the machine
    /// during a pair of rounds moved both of its halves. The test is on the pairs' differences.
    Paired,
}

impl Spread {
    /// The name used on the Python side.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pooled => "pooled",
            Self::Welch => "welch",
            Self::Paired => "paired",
        }
    }
}

impl FromStr for Spread {
    type Err = StatsError;

    fn from_str(s: &str) -> Result<Self> {
        match s {
            "pooled" => Ok(Self::Pooled),
            "welch" => Ok(Self::Welch),
            "paired" => Ok(Self::Paired),
            other => Err(StatsError::InvalidArgument(format!(
                "spread must be \"pooled\", \"welch\" or \"paired\", got {other:?}"
            ))),
        }
    }
}

/// Sample variance (ddof = 1) of at least two values.
fn variance(xs: &[f64]) -> f64 {
    let mean = mean_unchecked(xs);
    xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (xs.len() - 1) as f64
}

/// Standard error of the difference of the sides' means and its degrees of freedom, with one
/// variance pooled over the sides that have two or more values.
///
/// For a baseline pooled from several runs: the spread of its per-run log medians is the
/// variance of one run's log median, process-to-process effects included, and the current run
/// (usually one) is taken to vary as much.
fn pooled_se(sides: [&[f64]; 2]) -> Result<(f64, f64)> {
    let df: usize = sides.iter().map(|v| v.len() - 1).sum();
    if df == 0 {
        return Err(StatsError::InvalidArgument(
            "a pooled spread needs two or more groups on one side, got one on each".into(),
        ));
    }
    let squares: f64 = sides
        .iter()
        .filter(|v| v.len() > 1)
        .map(|v| variance(v) * (v.len() - 1) as f64)
        .sum();
    let weight: f64 = sides.iter().map(|v| 1.0 / v.len() as f64).sum();
    Ok(((squares / df as f64 * weight).sqrt(), df as f64))
}

/// What the other cases of a comparison say about one case's run-to-run variance: the mean of
/// their variances of log run medians, worth `df` degrees of freedom (a prior, as in a
/// moderated t test).
///
/// Three runs give a case's own variance two degrees of freedom: by chance it comes out far too
/// small (identical code then looks changed) or far too large (a real change is missed), and
/// Student's t with two degrees of freedom needs a change 4.3 standard errors wide. Every case
/// of a run shares the processes whose speeds differ, so their variances are evidence for
/// each other's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prior {
    /// The variance of one run's log median that the other cases suggest.
    pub variance: f64,
    /// How many degrees of freedom it is worth beside the case's own.
    pub df: f64,
}

/// [`pooled_se`] with the case's own variance shrunk toward `prior`:
/// (df * s^2 + prior.df * prior.variance) / (df + prior.df), on df + prior.df degrees of
/// freedom (Smyth's moderated t, with the prior given rather than fitted).
fn moderated_se(sides: [&[f64]; 2], prior: Prior) -> Result<(f64, f64)> {
    if !(prior.variance.is_finite() && prior.variance >= 0.0 && prior.df.is_finite())
        || prior.df < 0.0
    {
        return Err(StatsError::InvalidArgument(format!(
            "a prior needs a finite variance and degrees of freedom >= 0, got {prior:?}"
        )));
    }
    let (se, df) = pooled_se(sides)?;
    let weight: f64 = sides.iter().map(|v| 1.0 / v.len() as f64).sum();
    let own = se * se / weight;
    let shrunk = (df * own + prior.df * prior.variance) / (df + prior.df);
    Ok(((shrunk * weight).sqrt(), df + prior.df))
}

/// The variance (ddof = 1) of the log medians of `xs` cut into consecutive groups of `sizes`:
/// for a baseline pooled from runs, how far one run's log median moves; `None` for fewer than
/// two groups. Errors as [`grouped_compare`] does on its sides.
pub fn group_log_variance(xs: &[f64], sizes: &[usize]) -> Result<Option<f64>> {
    check_sample(xs)?;
    let medians = log_medians("sample", xs, sizes)?;
    Ok((medians.len() >= 2).then(|| variance(&medians)))
}

/// Standard error of the mean of the pairs' differences (current minus baseline) and its
/// degrees of freedom: for rounds that took turns, pair k measured under one machine state.
fn paired_se(sides: [&[f64]; 2]) -> Result<(f64, f64)> {
    let [base, cur] = sides;
    if base.len() != cur.len() || base.len() < 2 {
        return Err(StatsError::InvalidArgument(format!(
            "a paired spread needs the same number (two or more) of groups on each side, got {} and {}",
            base.len(),
            cur.len()
        )));
    }
    let differences: Vec<f64> = cur.iter().zip(base).map(|(c, b)| c - b).collect();
    let k = differences.len() as f64;
    Ok(((variance(&differences) / k).sqrt(), k - 1.0))
}

/// Standard error of the difference of the sides' means, each side with its own variance, and
/// Welch's degrees of freedom (for runs in rounds: each side's rounds are its own).
fn welch_se(sides: [&[f64]; 2]) -> Result<(f64, f64)> {
    if let Some(v) = sides.iter().find(|v| v.len() < 2) {
        return Err(StatsError::InvalidArgument(format!(
            "a Welch spread needs two or more groups on each side, got {}",
            v.len()
        )));
    }
    let terms = sides.map(|v| variance(v) / v.len() as f64);
    let se = (terms[0] + terms[1]).sqrt();
    let sizes = sides.map(|v| v.len() as f64);
    if se == 0.0 {
        return Ok((se, sizes[0] + sizes[1] - 2.0));
    }
    let spread = terms[0] * terms[0] / (sizes[0] - 1.0) + terms[1] * terms[1] / (sizes[1] - 1.0);
    Ok((se, se.powi(4) / spread))
}

/// The log median of each consecutive group of `sizes` samples.
fn log_medians(side: &str, xs: &[f64], sizes: &[usize]) -> Result<Vec<f64>> {
    if sizes.contains(&0) || sizes.iter().sum::<usize>() != xs.len() {
        return Err(StatsError::InvalidArgument(format!(
            "{side} group sizes {sizes:?} must be positive and add up to its {} samples",
            xs.len()
        )));
    }
    let mut buf = Vec::new();
    let mut start = 0;
    let mut out = Vec::with_capacity(sizes.len());
    for &size in sizes {
        buf.clear();
        buf.extend_from_slice(&xs[start..start + size]);
        let median = quantile_select(&mut buf, 0.5);
        if median <= 0.0 {
            return Err(StatsError::InvalidArgument(format!(
                "{side} group {} has median {median}: group medians must be positive (timings)",
                out.len()
            )));
        }
        out.push(median.ln());
        start += size;
    }
    Ok(out)
}

/// A ratio of medians judged from the scatter of the two sides' group medians.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GroupedComparison {
    /// median(current) / median(baseline), of all samples; for [`Spread::Paired`], the
    /// geometric mean of the pairs' ratios of medians.
    pub ratio: f64,
    /// t-interval of the ratio: ratio * exp(±t * se).
    pub ci: Interval,
    /// Two-sided p-value of Student's t test of the difference of the sides' mean log group
    /// medians (pooled or Welch, as the spread says).
    pub p_value: f64,
    /// Standard error of that difference, in log units.
    pub se: f64,
    /// Degrees of freedom of the test.
    pub df: f64,
}

/// median(current) / median(baseline) judged from the scatter of each side's group medians:
/// its t-interval and the p-value of a t test on the groups' log medians.
///
/// Each side's samples are cut into consecutive groups of the given sizes. Groups are rounds
/// (spread over the run, each with fresh inputs: their scatter is how far the machine moves a
/// case within a run; use [`Spread::Welch`]), whole runs of a pooled baseline (their spread
/// includes what stays fixed for a whole process, which rounds cannot see; use
/// [`Spread::Pooled`]), or blocks of consecutive samples of one run each ([`run_blocks`]; Welch),
/// the weakest evidence, which sees only how the run wandered. The standard error of the
/// difference of the two sides' mean log group medians, with Student's t at `confidence`, sets
/// the CI's width around the ratio of the overall medians: ratio * exp(±t * se). The p-value is
/// the two-sided t test of that difference: the samples within a group share the machine's
/// state, so the groups, not the samples, are the independent measurements.
///
/// Why: on a 2-core VM, rounds that make their inputs anew brought the process-to-process SD
/// of a tile-std case's mean kernel/reference ratio from 6.2% to 3.7%, yet the SD between
/// processes was still 1.5-3x what the round scatter predicts; a baseline pooled from five
/// runs took tile-std's A/A false alarms from 4.6% of cases (rounds alone) to 0.8%
/// (docs/measurement.md, "Runs in rounds"). A Mann-Whitney test on the pooled raw samples
/// gave p = 1e-15 to runs of identical code under a changed load (issue 33).
///
/// Errors on empty or non-finite samples, sizes that are not positive or do not add up to a
/// side's samples, a group median that is not positive, too few groups for the spread (Welch:
/// two on each side; pooled: two on one side), or a confidence outside (0, 1).
pub fn grouped_compare(
    baseline: &[f64],
    baseline_sizes: &[usize],
    current: &[f64],
    current_sizes: &[usize],
    spread: Spread,
    confidence: f64,
) -> Result<GroupedComparison> {
    let sides = [(baseline, baseline_sizes), (current, current_sizes)];
    moderated_compare(sides, spread, None, confidence)
}

/// [`grouped_compare`] with, for [`Spread::Pooled`], the case's variance shrunk toward a
/// [`Prior`] from the comparison's other cases; the other spreads ignore `prior`.
pub fn moderated_compare(
    sides: [(&[f64], &[usize]); 2],
    spread: Spread,
    prior: Option<Prior>,
    confidence: f64,
) -> Result<GroupedComparison> {
    let [(baseline, baseline_sizes), (current, current_sizes)] = sides;
    check_sample(baseline)?;
    check_sample(current)?;
    check_confidence(confidence)?;
    let base = log_medians("baseline", baseline, baseline_sizes)?;
    let cur = log_medians("current", current, current_sizes)?;
    let (se, df) = match spread {
        Spread::Pooled => match prior {
            Some(prior) => moderated_se([&base, &cur], prior)?,
            None => pooled_se([&base, &cur])?,
        },
        Spread::Welch => welch_se([&base, &cur])?,
        Spread::Paired => paired_se([&base, &cur])?,
    };
    let t = student_t_quantile(1.0 - (1.0 - confidence) / 2.0, df)?;
    let difference = mean_unchecked(&cur) - mean_unchecked(&base);
    let ratio = match spread {
        // Pairs may hold unequal numbers of samples (a loaded round times fewer): the overall
        // medians would weigh the machine's states unevenly between the sides.
        Spread::Paired => difference.exp(),
        _ => {
            quantile_select(&mut current.to_vec(), 0.5)
                / quantile_select(&mut baseline.to_vec(), 0.5)
        }
    };
    let p_value = if se > 0.0 {
        (2.0 * student_t_cdf(-(difference / se).abs(), df)).clamp(0.0, 1.0)
    } else if difference == 0.0 {
        1.0 // every group alike on both sides: no evidence of any difference
    } else {
        0.0
    };
    Ok(GroupedComparison {
        ratio,
        ci: Interval {
            low: ratio * (-t * se).exp(),
            high: ratio * (t * se).exp(),
        },
        p_value,
        se,
        df,
    })
}

/// CI of median(current) / median(baseline) from the scatter of each side's group medians:
/// the interval of [`grouped_compare`].
pub fn grouped_ratio_ci(
    baseline: &[f64],
    baseline_sizes: &[usize],
    current: &[f64],
    current_sizes: &[usize],
    spread: Spread,
    confidence: f64,
) -> Result<Interval> {
    grouped_compare(
        baseline,
        baseline_sizes,
        current,
        current_sizes,
        spread,
        confidence,
    )
    .map(|c| c.ci)
}

/// How [`run_blocks`] cuts a run: `skip` samples left out at the start, then blocks of `sizes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunBlocks {
    pub skip: usize,
    pub sizes: Vec<usize>,
}

/// Blocks of consecutive samples that cut a run of `n` samples with no groups of its own, for a
/// t test on block medians when nothing else measured the run-to-run noise: the run is cut
/// into [`RUN_BLOCKS`] + 1 blocks as equal as they can be (fewer when a block would hold fewer
/// than [`MIN_BLOCK`] samples), and the first is left out, as in [`crate::within_run_drift`]
/// (on a CPU it still carries the end of the warm-up). `None` below two blocks kept.
///
/// Blocks see how the run wandered, which the samples' own scatter hides, but not what stays
/// fixed for the whole process: a comparison on them is the honest fallback, not a measure of
/// the run-to-run noise.
pub fn run_blocks(n: usize) -> Option<RunBlocks> {
    let count = (RUN_BLOCKS + 1).min(n / MIN_BLOCK);
    if count < 3 {
        return None;
    }
    let (size, extra) = (n / count, n % count);
    let mut sizes: Vec<usize> = (0..count).map(|i| size + usize::from(i < extra)).collect();
    let skip = sizes.remove(0);
    Some(RunBlocks { skip, sizes })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    /// Groups of `size` samples around center * level, uniform within ±1%.
    fn grouped(center: f64, levels: &[f64], size: usize, seed: u64) -> (Vec<f64>, Vec<usize>) {
        let mut rng = Rng::new(seed);
        let mut xs = Vec::new();
        for level in levels {
            for _ in 0..size {
                let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
                xs.push(center * level * (1.0 + 0.02 * (u - 0.5)));
            }
        }
        (xs, vec![size; levels.len()])
    }

    #[test]
    fn welch_matches_the_textbook_formula() {
        // One sample per group: the log medians are the logs themselves.
        let (a, b) = ([1.0, 1.1, 0.9, 1.05], [1.2, 1.3, 1.25]);
        let la: Vec<f64> = a.iter().map(|x: &f64| x.ln()).collect();
        let lb: Vec<f64> = b.iter().map(|x: &f64| x.ln()).collect();
        let (va, vb) = (variance(&la) / 4.0, variance(&lb) / 3.0);
        let se = (va + vb).sqrt();
        let df = (va + vb).powi(2) / (va * va / 3.0 + vb * vb / 2.0);
        let (got_se, got_df) = welch_se([&la, &lb]).unwrap();
        assert_eq!(got_se, se);
        assert!((got_df - df).abs() < 1e-12 * df, "{got_df} {df}");
        let ci = grouped_ratio_ci(&a, &[1; 4], &b, &[1; 3], Spread::Welch, 0.95).unwrap();
        let t = student_t_quantile(0.975, df).unwrap();
        let ratio = 1.25 / 1.025;
        assert!((ci.low - ratio * (-t * se).exp()).abs() < 1e-15);
        assert!((ci.high - ratio * (t * se).exp()).abs() < 1e-15);
        // The variance of 1, 2, 3, 4 (ddof = 1) is 5/3.
        assert!((variance(&[1.0, 2.0, 3.0, 4.0]) - 5.0 / 3.0).abs() < 1e-15);
    }

    #[test]
    fn paired_sees_a_change_that_the_load_hides_from_welch() {
        // Four rounds taken in turns under four machine states, the current side 10% slower in
        // each: scipy.stats.ttest_rel(log(b), log(a)) gives p = 0.000289; unpaired (Welch) the
        // states' spread hides the change (p = 0.62).
        let (a, b) = ([1.0, 1.5, 0.8, 1.2], [1.11, 1.64, 0.89, 1.31]);
        let paired = grouped_compare(&a, &[1; 4], &b, &[1; 4], Spread::Paired, 0.95).unwrap();
        assert!(
            (paired.p_value - 0.000_289_414_738_769_467_36).abs() < 1e-10,
            "{paired:?}"
        );
        assert_eq!(paired.df, 3.0);
        // The ratio is the pairs' geometric mean, not the ratio of the pooled medians.
        let mean_log: f64 = a.iter().zip(&b).map(|(x, y)| (y / x).ln()).sum::<f64>() / 4.0;
        assert!((paired.ratio - mean_log.exp()).abs() < 1e-12, "{paired:?}");
        let welch = grouped_compare(&a, &[1; 4], &b, &[1; 4], Spread::Welch, 0.95).unwrap();
        assert!(welch.p_value > 0.5, "{welch:?}");
        // Pairs need as many groups on each side, two or more.
        assert!(grouped_compare(&a, &[1; 4], &b[..3], &[1; 3], Spread::Paired, 0.95).is_err());
        assert!(grouped_compare(&a[..1], &[1], &b[..1], &[1], Spread::Paired, 0.95).is_err());
        assert_eq!("paired".parse::<Spread>().unwrap(), Spread::Paired);
    }

    #[test]
    fn pooled_uses_the_side_that_has_a_spread() {
        // Four baseline runs, one current run: s^2 from the baseline's 3 degrees of freedom,
        // se = s * sqrt(1/4 + 1/1).
        let base = [0.1_f64, -0.1, 0.05, -0.05];
        let (se, df) = pooled_se([&base, &[0.3]]).unwrap();
        let s2 = variance(&base);
        assert_eq!(df, 3.0);
        assert!((se - (s2 * 1.25).sqrt()).abs() < 1e-15);
        assert!(pooled_se([&[0.0], &[1.0]]).is_err());
        assert!(welch_se([&base, &[0.3]]).is_err());
    }

    #[test]
    fn a_prior_pulls_the_variance_toward_it_and_adds_its_degrees_of_freedom() {
        let base = [0.1_f64, -0.1, 0.0];
        let (se, df) = pooled_se([&base, &[0.3]]).unwrap();
        // A prior equal to the case's own variance changes only the degrees of freedom.
        let same = Prior {
            variance: variance(&base),
            df: 4.0,
        };
        let (se_same, df_same) = moderated_se([&base, &[0.3]], same).unwrap();
        assert!((se_same - se).abs() < 1e-15 && df_same == df + 4.0);
        // A prior four times the variance, worth as much as the case's own two degrees of
        // freedom: the variance is their mean, 2.5 times the case's.
        let wide = Prior {
            variance: 4.0 * variance(&base),
            df: 2.0,
        };
        let (se_wide, _) = moderated_se([&base, &[0.3]], wide).unwrap();
        assert!((se_wide / se - 2.5_f64.sqrt()).abs() < 1e-12);
        // No degrees of freedom: the prior is ignored.
        let none = Prior {
            variance: 1.0,
            df: 0.0,
        };
        assert_eq!(moderated_se([&base, &[0.3]], none).unwrap(), (se, df));
        assert!(moderated_se(
            [&base, &[0.3]],
            Prior {
                variance: -1.0,
                df: 1.0
            }
        )
        .is_err());
        assert!(moderated_se(
            [&base, &[0.3]],
            Prior {
                variance: 1.0,
                df: f64::NAN
            }
        )
        .is_err());
    }

    #[test]
    fn moderated_compare_applies_the_prior_to_pooled_runs_only() {
        let (a, sa) = grouped(1.0, &[1.0, 1.001, 0.999], 20, 1);
        let (b, sb) = grouped(1.1, &[1.0], 20, 2);
        let prior = Some(Prior {
            variance: 0.01,
            df: 4.0,
        });
        let plain = grouped_compare(&a, &sa, &b, &sb, Spread::Pooled, 0.95).unwrap();
        let shrunk =
            moderated_compare([(&a, &sa), (&b, &sb)], Spread::Pooled, prior, 0.95).unwrap();
        // Three runs that happened to agree: alone, a 10% change is certain; beside cases that
        // move 10% between runs, it is not.
        assert!(
            plain.p_value < 0.01 && shrunk.p_value > 0.05,
            "{plain:?} {shrunk:?}"
        );
        assert_eq!(shrunk.df, plain.df + 4.0);
        let (c, sc) = grouped(1.0, &[1.0, 1.01, 0.99], 20, 3);
        let welch = grouped_compare(&a, &sa, &c, &sc, Spread::Welch, 0.95).unwrap();
        let sides = [(&a[..], &sa[..]), (&c[..], &sc[..])];
        assert_eq!(
            moderated_compare(sides, Spread::Welch, prior, 0.95).unwrap(),
            welch
        );
    }

    #[test]
    fn group_log_variance_is_the_variance_of_the_groups_log_medians() {
        let xs = [1.0, 1.0, 1.0, 2.0, 2.0, 2.0];
        let v = group_log_variance(&xs, &[3, 3]).unwrap().unwrap();
        assert!((v - variance(&[0.0, 2.0_f64.ln()])).abs() < 1e-15);
        assert_eq!(group_log_variance(&xs, &[6]).unwrap(), None);
        assert!(group_log_variance(&xs, &[2, 3]).is_err());
    }

    #[test]
    fn p_values_match_scipy() {
        // One sample per group: scipy.stats.ttest_ind(log(b), log(a), equal_var=False).
        let (a, b) = ([1.0, 1.1, 0.9, 1.05], [1.2, 1.3, 1.25]);
        let c = grouped_compare(&a, &[1; 4], &b, &[1; 3], Spread::Welch, 0.95).unwrap();
        assert!(
            (c.p_value - 0.009_596_305_325_970_377).abs() < 1e-10,
            "{c:?}"
        );
        assert_eq!(
            c.ci,
            grouped_ratio_ci(&a, &[1; 4], &b, &[1; 3], Spread::Welch, 0.95).unwrap()
        );
        // Pooled, four baseline runs against one: t = (0.3 - 0) / (s * sqrt(1/4 + 1)), 3 df.
        let base: Vec<f64> = [0.1_f64, -0.1, 0.05, -0.05]
            .iter()
            .map(|x| x.exp())
            .collect();
        let c =
            grouped_compare(&base, &[1; 4], &[0.3_f64.exp()], &[1], Spread::Pooled, 0.95).unwrap();
        assert!(
            (c.p_value - 0.060_540_086_643_469_15).abs() < 1e-10,
            "{c:?}"
        );
        assert_eq!(c.df, 3.0);
        // The interval excludes 1 exactly when the test is significant at its level (here the
        // ratio of overall medians is the ratio of the group means' exponentials).
        assert!(c.ci.low < 1.0 && c.p_value > 0.05);
    }

    #[test]
    fn identical_groups_give_p_one_and_distinct_constant_groups_p_zero() {
        let xs = [2.0; 12];
        let c = grouped_compare(&xs, &[4, 4, 4], &xs, &[6, 6], Spread::Welch, 0.95).unwrap();
        assert_eq!((c.p_value, c.ratio, c.se), (1.0, 1.0, 0.0));
        let ys = [3.0; 12];
        let c = grouped_compare(&xs, &[4, 4, 4], &ys, &[6, 6], Spread::Welch, 0.95).unwrap();
        assert_eq!(c.p_value, 0.0);
    }

    #[test]
    fn run_blocks_cut_a_run_into_even_blocks_without_the_first() {
        assert_eq!(run_blocks(14), None);
        let blocks = |skip, sizes: Vec<usize>| Some(RunBlocks { skip, sizes });
        assert_eq!(run_blocks(15), blocks(5, vec![5, 5]));
        assert_eq!(run_blocks(23), blocks(6, vec![6, 6, 5]));
        assert_eq!(run_blocks(900), blocks(100, vec![100; 8]));
        for n in 15..500 {
            let b = run_blocks(n).unwrap();
            assert_eq!(b.skip + b.sizes.iter().sum::<usize>(), n);
            assert!(b.skip >= MIN_BLOCK && b.sizes.iter().all(|&s| s >= MIN_BLOCK));
            assert!((2..=RUN_BLOCKS).contains(&b.sizes.len()));
        }
    }

    #[test]
    fn property_identical_code_in_groups_is_significant_about_alpha_of_the_time() {
        // Groups whose levels scatter by ±5%, on both sides alike: the Welch test at 0.05 calls
        // about 5% of such pairs different, where a test on the pooled samples (each group's
        // samples tight around its level) would call most of them different.
        let mut rng = Rng::new(31);
        let mut level = || 1.0 + 0.1 * ((rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 - 0.5);
        let mut significant = 0;
        for case in 0..400 {
            let a: Vec<f64> = (0..6).map(|_| level()).collect();
            let b: Vec<f64> = (0..6).map(|_| level()).collect();
            let (base, bs) = grouped(1.0, &a, 20, case);
            let (cur, cs) = grouped(1.0, &b, 20, case + 1000);
            let c = grouped_compare(&base, &bs, &cur, &cs, Spread::Welch, 0.95).unwrap();
            significant += usize::from(c.p_value < 0.05);
        }
        assert!((5..=40).contains(&significant), "{significant} of 400");
    }

    #[test]
    fn identical_groups_give_the_ratio_alone() {
        let xs = [2.0; 12];
        let ys = [3.0; 12];
        for spread in [Spread::Pooled, Spread::Welch] {
            let ci = grouped_ratio_ci(&xs, &[4, 4, 4], &ys, &[6, 6], spread, 0.95).unwrap();
            assert_eq!((ci.low, ci.high), (1.5, 1.5));
        }
    }

    #[test]
    fn rejects_groups_that_do_not_fit() {
        let xs = [1.0; 6];
        let ci = |b: &[usize], c: &[usize]| grouped_ratio_ci(&xs, b, &xs, c, Spread::Welch, 0.95);
        assert!(ci(&[3, 3], &[2, 2, 2]).is_ok());
        let e = ci(&[3, 2], &[2, 2, 2]).unwrap_err().to_string();
        assert!(e.contains("baseline group sizes [3, 2]"), "{e}");
        assert!(ci(&[6, 0], &[2, 2, 2]).is_err());
        assert!(ci(&[6], &[2, 2, 2])
            .unwrap_err()
            .to_string()
            .contains("each side"));
        let zeros = [0.0, 0.0, 1.0, 1.0];
        let e = grouped_ratio_ci(&zeros, &[2, 2], &xs, &[3, 3], Spread::Welch, 0.95).unwrap_err();
        assert!(
            e.to_string().contains("baseline group 0 has median 0"),
            "{e}"
        );
        assert!(grouped_ratio_ci(&xs, &[3, 3], &xs, &[3, 3], Spread::Welch, 1.0).is_err());
        assert!(grouped_ratio_ci(&[], &[], &xs, &[3, 3], Spread::Welch, 0.9).is_err());
        assert_eq!("welch".parse::<Spread>().unwrap(), Spread::Welch);
        assert_eq!(Spread::Pooled.as_str(), "pooled");
        assert!("t"
            .parse::<Spread>()
            .unwrap_err()
            .to_string()
            .contains("\"t\""));
    }

    #[test]
    fn property_scale_free_and_symmetric() {
        // Random groupings: the interval contains the ratio, scales with the current run, and
        // swapping the sides (Welch treats them alike) gives the reciprocal interval.
        let mut rng = Rng::new(17);
        for case in 0..200 {
            let levels: Vec<f64> = (0..3 + rng.below(6))
                .map(|_| 1.0 + rng.below(100) as f64 / 1000.0)
                .collect();
            let (base, bs) = grouped(1e-3, &levels, 1 + rng.below(30) as usize, case);
            let (cur, cs) = grouped(1.1e-3, &levels[1..], 1 + rng.below(30) as usize, case + 1);
            let ci = grouped_ratio_ci(&base, &bs, &cur, &cs, Spread::Welch, 0.95).unwrap();
            let ratio = crate::median(&cur).unwrap() / crate::median(&base).unwrap();
            assert!(ci.low <= ratio && ratio <= ci.high);
            let doubled: Vec<f64> = cur.iter().map(|x| 2.0 * x).collect();
            let twice = grouped_ratio_ci(&base, &bs, &doubled, &cs, Spread::Welch, 0.95).unwrap();
            assert!((twice.low / ci.low - 2.0).abs() < 1e-12, "case {case}");
            assert!((twice.high / ci.high - 2.0).abs() < 1e-12, "case {case}");
            let back = grouped_ratio_ci(&cur, &cs, &base, &bs, Spread::Welch, 0.95).unwrap();
            assert!((back.low * ci.high - 1.0).abs() < 1e-12, "case {case}");
            assert!((back.high * ci.low - 1.0).abs() < 1e-12, "case {case}");
            let wider = grouped_ratio_ci(&base, &bs, &cur, &cs, Spread::Welch, 0.99).unwrap();
            assert!(wider.low <= ci.low && ci.high <= wider.high);
        }
    }

    #[test]
    fn property_pooled_runs_cover_a_process_level_shift() {
        // Runs of the same code that each land at their own level, spread by ±5%: the 95% CI
        // of a new run against a baseline pooled from 5 such runs covers 1 about 95% of the
        // time, though every run alone is far tighter than that spread.
        let mut rng = Rng::new(23);
        let mut level = || 1.0 + 0.1 * ((rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 - 0.5);
        let mut covered = 0;
        for case in 0..400 {
            let levels: Vec<f64> = (0..5).map(|_| level()).collect();
            let (base, bs) = grouped(1.0, &levels, 20, case);
            let (cur, cs) = grouped(1.0, &[level()], 20, case + 1000);
            let ci = grouped_ratio_ci(&base, &bs, &cur, &cs, Spread::Pooled, 0.95).unwrap();
            covered += usize::from(ci.low <= 1.0 && 1.0 <= ci.high);
        }
        assert!((340..=400).contains(&covered), "{covered} of 400");
    }
}
