//! Python bindings of tile-stats: converts types and maps errors, nothing else.

use pyo3::buffer::PyBuffer;
use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

create_exception!(
    tile_stats,
    StatsError,
    PyValueError,
    "Raised when statistics cannot be computed: empty sample, NaN/inf values, or an option out of range."
);

fn to_py(e: tile_stats::StatsError) -> PyErr {
    StatsError::new_err(e.to_string())
}

/// Reads any iterable of numbers; 1-D float64 buffers (numpy arrays) are copied directly.
fn sample(obj: &Bound<'_, PyAny>) -> PyResult<Vec<f64>> {
    if let Ok(list) = obj.downcast::<PyList>() {
        return list.iter().map(|x| x.extract::<f64>()).collect();
    }
    if let Ok(tuple) = obj.downcast::<PyTuple>() {
        return tuple.iter().map(|x| x.extract::<f64>()).collect();
    }
    if let Ok(buf) = PyBuffer::<f64>::get(obj) {
        if buf.dimensions() == 1 {
            return buf.to_vec(obj.py());
        }
    }
    obj.try_iter()?.map(|x| x?.extract::<f64>()).collect()
}

/// A count option: negative values become a `StatsError` rather than an `OverflowError`.
fn count(name: &str, value: i64) -> PyResult<usize> {
    usize::try_from(value)
        .map_err(|_| StatsError::new_err(format!("{name} must be a positive integer, got {value}")))
}

/// Any seed that fits in 64 bits, negative ones included (taken modulo 2**64).
fn seed(value: i128) -> PyResult<u64> {
    if value < i128::from(i64::MIN) || value > i128::from(u64::MAX) {
        return Err(StatsError::new_err(format!(
            "seed must fit in 64 bits, got {value}"
        )));
    }
    Ok(value as u64)
}

fn options(
    confidence: f64,
    resamples: i64,
    seed_value: i128,
) -> PyResult<tile_stats::BootstrapOptions> {
    Ok(tile_stats::BootstrapOptions {
        resamples: count("resamples", resamples)?,
        confidence,
        seed: seed(seed_value)?,
    })
}

/// Median of a sample (numpy's linear interpolation).
#[pyfunction]
fn median(xs: &Bound<'_, PyAny>) -> PyResult<f64> {
    tile_stats::median(&sample(xs)?).map_err(to_py)
}

/// Quantile `q` in [0, 1] of a sample (numpy's default linear method).
#[pyfunction]
fn quantile(xs: &Bound<'_, PyAny>, q: f64) -> PyResult<f64> {
    tile_stats::quantile(&sample(xs)?, q).map_err(to_py)
}

/// Quantile `p` in (0, 1) of Student's t distribution with `df` > 0 degrees of freedom.
#[pyfunction]
fn student_t_quantile(p: f64, df: f64) -> PyResult<f64> {
    tile_stats::student_t_quantile(p, df).map_err(to_py)
}

/// Statistics of one sample; `ci_low`/`ci_high` bound the median (percentile bootstrap).
#[pyclass(frozen, get_all, eq, module = "tile_stats")]
#[derive(Clone, PartialEq)]
struct Summary {
    n: usize,
    min: f64,
    max: f64,
    mean: f64,
    median: f64,
    stdev: f64,
    mad: f64,
    q1: f64,
    q3: f64,
    p5: f64,
    p95: f64,
    ci_low: f64,
    ci_high: f64,
    outliers_mild: usize,
    outliers_severe: usize,
}

#[pymethods]
impl Summary {
    /// All attributes as a plain dict.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("n", self.n)?;
        for (k, v) in [
            ("min", self.min),
            ("max", self.max),
            ("mean", self.mean),
            ("median", self.median),
            ("stdev", self.stdev),
            ("mad", self.mad),
            ("q1", self.q1),
            ("q3", self.q3),
            ("p5", self.p5),
            ("p95", self.p95),
            ("ci_low", self.ci_low),
            ("ci_high", self.ci_high),
        ] {
            d.set_item(k, v)?;
        }
        d.set_item("outliers_mild", self.outliers_mild)?;
        d.set_item("outliers_severe", self.outliers_severe)?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        format!(
            "Summary(n={}, median={:?}, ci_low={:?}, ci_high={:?}, mean={:?}, stdev={:?}, \
             min={:?}, max={:?}, outliers_mild={}, outliers_severe={})",
            self.n,
            self.median,
            self.ci_low,
            self.ci_high,
            self.mean,
            self.stdev,
            self.min,
            self.max,
            self.outliers_mild,
            self.outliers_severe
        )
    }
}

/// Summary statistics, bootstrap CI of the median and Tukey outlier counts.
#[pyfunction]
#[pyo3(signature = (xs, *, confidence=0.95, resamples=2000, seed=0))]
fn summarize(
    py: Python<'_>,
    xs: &Bound<'_, PyAny>,
    confidence: f64,
    resamples: i64,
    seed: i128,
) -> PyResult<Summary> {
    let xs = sample(xs)?;
    let opts = options(confidence, resamples, seed)?;
    let s = py
        .allow_threads(|| tile_stats::summarize(&xs, &opts))
        .map_err(to_py)?;
    Ok(Summary {
        n: s.n,
        min: s.min,
        max: s.max,
        mean: s.mean,
        median: s.median,
        stdev: s.stdev,
        mad: s.mad,
        q1: s.q1,
        q3: s.q3,
        p5: s.p5,
        p95: s.p95,
        ci_low: s.ci.low,
        ci_high: s.ci.high,
        outliers_mild: s.outliers.mild,
        outliers_severe: s.outliers.severe,
    })
}

/// Percentile bootstrap confidence interval (low, high) of the median or the mean.
#[pyfunction]
#[pyo3(signature = (xs, *, statistic="median", confidence=0.95, resamples=10000, seed=0))]
fn bootstrap_ci(
    py: Python<'_>,
    xs: &Bound<'_, PyAny>,
    statistic: &str,
    confidence: f64,
    resamples: i64,
    seed: i128,
) -> PyResult<(f64, f64)> {
    let xs = sample(xs)?;
    let statistic: tile_stats::Statistic = statistic.parse().map_err(to_py)?;
    let opts = options(confidence, resamples, seed)?;
    let ci = py
        .allow_threads(|| tile_stats::bootstrap_ci(&xs, statistic, &opts))
        .map_err(to_py)?;
    Ok((ci.low, ci.high))
}

/// (U of `a`, two-sided p-value): normal approximation, tie and continuity corrected.
#[pyfunction]
fn mann_whitney_u(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<(f64, f64)> {
    let r = tile_stats::mann_whitney_u(&sample(a)?, &sample(b)?).map_err(to_py)?;
    Ok((r.u, r.p_value))
}

/// Current sample against a baseline.
#[pyclass(frozen, get_all, eq, module = "tile_stats")]
#[derive(Clone, PartialEq)]
struct Comparison {
    ratio: f64,
    ci_low: f64,
    ci_high: f64,
    p_value: f64,
    u_statistic: f64,
    n_baseline: usize,
    n_current: usize,
}

#[pymethods]
impl Comparison {
    /// All attributes as a plain dict.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("ratio", self.ratio)?;
        d.set_item("ci_low", self.ci_low)?;
        d.set_item("ci_high", self.ci_high)?;
        d.set_item("p_value", self.p_value)?;
        d.set_item("u_statistic", self.u_statistic)?;
        d.set_item("n_baseline", self.n_baseline)?;
        d.set_item("n_current", self.n_current)?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        format!(
            "Comparison(ratio={:?}, ci_low={:?}, ci_high={:?}, p_value={:?}, u_statistic={:?}, \
             n_baseline={}, n_current={})",
            self.ratio,
            self.ci_low,
            self.ci_high,
            self.p_value,
            self.u_statistic,
            self.n_baseline,
            self.n_current
        )
    }
}

/// Ratio of medians (current / baseline) with a bootstrap CI, and a Mann-Whitney U test.
#[pyfunction]
#[pyo3(signature = (baseline, current, *, confidence=0.95, resamples=2000, seed=0))]
fn compare(
    py: Python<'_>,
    baseline: &Bound<'_, PyAny>,
    current: &Bound<'_, PyAny>,
    confidence: f64,
    resamples: i64,
    seed: i128,
) -> PyResult<Comparison> {
    let (baseline, current) = (sample(baseline)?, sample(current)?);
    let opts = options(confidence, resamples, seed)?;
    let c = py
        .allow_threads(|| tile_stats::compare(&baseline, &current, &opts))
        .map_err(to_py)?;
    Ok(Comparison {
        ratio: c.ratio,
        ci_low: c.ci.low,
        ci_high: c.ci.high,
        p_value: c.p_value,
        u_statistic: c.u_statistic,
        n_baseline: c.n_baseline,
        n_current: c.n_current,
    })
}

/// How far the median wandered within one run beyond sampling noise, relative to its median;
/// None with fewer than 25 samples or a median that is not positive.
#[pyfunction]
fn within_run_drift(samples: &Bound<'_, PyAny>) -> PyResult<Option<f64>> {
    tile_stats::within_run_drift(&sample(samples)?).map_err(to_py)
}

/// Bootstrap CI (low, high) of median(current) / median(baseline), resampling blocks of
/// consecutive samples.
#[pyfunction]
#[pyo3(signature = (baseline, current, *, confidence=0.95, resamples=2000, seed=0))]
fn block_ratio_ci(
    py: Python<'_>,
    baseline: &Bound<'_, PyAny>,
    current: &Bound<'_, PyAny>,
    confidence: f64,
    resamples: i64,
    seed: i128,
) -> PyResult<(f64, f64)> {
    let (baseline, current) = (sample(baseline)?, sample(current)?);
    let opts = options(confidence, resamples, seed)?;
    let ci = py
        .allow_threads(|| tile_stats::block_ratio_ci(&baseline, &current, &opts))
        .map_err(to_py)?;
    Ok((ci.low, ci.high))
}

/// Group sizes: each a count.
fn sizes(name: &str, values: Vec<i64>) -> PyResult<Vec<usize>> {
    values.into_iter().map(|v| count(name, v)).collect()
}

/// t-interval (low, high) of median(current) / median(baseline) from the scatter of each side's
/// group medians (rounds, or the runs of a pooled baseline).
#[pyfunction]
#[pyo3(signature = (baseline, current, *, baseline_sizes, current_sizes, spread, confidence=0.95))]
fn grouped_ratio_ci(
    baseline: &Bound<'_, PyAny>,
    current: &Bound<'_, PyAny>,
    baseline_sizes: Vec<i64>,
    current_sizes: Vec<i64>,
    spread: &str,
    confidence: f64,
) -> PyResult<(f64, f64)> {
    let spread: tile_stats::Spread = spread.parse().map_err(to_py)?;
    let ci = tile_stats::grouped_ratio_ci(
        &sample(baseline)?,
        &sizes("baseline_sizes", baseline_sizes)?,
        &sample(current)?,
        &sizes("current_sizes", current_sizes)?,
        spread,
        confidence,
    )
    .map_err(to_py)?;
    Ok((ci.low, ci.high))
}

/// A ratio of medians judged from the scatter of the two sides' group medians.
#[pyclass(frozen, get_all, eq, module = "tile_stats")]
#[derive(Clone, PartialEq)]
struct GroupedComparison {
    ratio: f64,
    ci_low: f64,
    ci_high: f64,
    p_value: f64,
    se: f64,
    df: f64,
}

#[pymethods]
impl GroupedComparison {
    fn __repr__(&self) -> String {
        format!(
            "GroupedComparison(ratio={:?}, ci_low={:?}, ci_high={:?}, p_value={:?}, se={:?}, \
             df={:?})",
            self.ratio, self.ci_low, self.ci_high, self.p_value, self.se, self.df
        )
    }
}

/// median(current) / median(baseline) with a t-interval and a t test on each side's group
/// medians (rounds, the runs of a pooled baseline, or blocks of one run).
#[pyfunction]
#[pyo3(signature = (
    baseline, current, *, baseline_sizes, current_sizes, spread, confidence=0.95,
    prior_variance=None, prior_df=0.0,
))]
#[allow(clippy::too_many_arguments)] // the Python keyword arguments, each documented
fn grouped_compare(
    baseline: &Bound<'_, PyAny>,
    current: &Bound<'_, PyAny>,
    baseline_sizes: Vec<i64>,
    current_sizes: Vec<i64>,
    spread: &str,
    confidence: f64,
    prior_variance: Option<f64>,
    prior_df: f64,
) -> PyResult<GroupedComparison> {
    let spread: tile_stats::Spread = spread.parse().map_err(to_py)?;
    let (base, cur) = (sample(baseline)?, sample(current)?);
    let base_sizes = sizes("baseline_sizes", baseline_sizes)?;
    let cur_sizes = sizes("current_sizes", current_sizes)?;
    let prior = prior_variance.map(|variance| tile_stats::Prior {
        variance,
        df: prior_df,
    });
    let sides = [(&base[..], &base_sizes[..]), (&cur[..], &cur_sizes[..])];
    let c = tile_stats::moderated_compare(sides, spread, prior, confidence).map_err(to_py)?;
    Ok(GroupedComparison {
        ratio: c.ratio,
        ci_low: c.ci.low,
        ci_high: c.ci.high,
        p_value: c.p_value,
        se: c.se,
        df: c.df,
    })
}

/// The variance of the log medians of `samples` cut into groups of `sizes` (the runs of a
/// pooled baseline); None for fewer than two groups.
#[pyfunction]
#[pyo3(signature = (samples, *, sizes))]
fn group_log_variance(samples: &Bound<'_, PyAny>, sizes: Vec<i64>) -> PyResult<Option<f64>> {
    let groups = self::sizes("sizes", sizes)?;
    tile_stats::group_log_variance(&sample(samples)?, &groups).map_err(to_py)
}

/// (samples left out at the start, block sizes) that cut a run of `n` samples with no groups
/// of its own; None below two blocks.
#[pyfunction]
fn run_blocks(n: i64) -> PyResult<Option<(usize, Vec<usize>)>> {
    Ok(tile_stats::run_blocks(count("n", n)?).map(|b| (b.skip, b.sizes)))
}

/// Benjamini-Hochberg adjusted p-values, in the order given; `family` (default: as many as
/// given) counts tests whose p-value is not given as p = 1.
#[pyfunction]
#[pyo3(signature = (p_values, *, family=None))]
fn benjamini_hochberg(p_values: &Bound<'_, PyAny>, family: Option<i64>) -> PyResult<Vec<f64>> {
    let p_values = sample(p_values)?;
    let family = match family {
        Some(value) => count("family", value)?,
        None => p_values.len(),
    };
    tile_stats::benjamini_hochberg(&p_values, family).map_err(to_py)
}

/// Whether adaptive sampling may stop, and why.
#[pyclass(frozen, get_all, eq, module = "tile_stats")]
#[derive(Clone, PartialEq)]
struct StopDecision {
    stop: bool,
    reason: Option<&'static str>,
    rel_half_width: Option<f64>,
}

#[pymethods]
impl StopDecision {
    fn __repr__(&self) -> String {
        let reason = self.reason.map_or("None".to_owned(), |r| format!("'{r}'"));
        let width = self
            .rel_half_width
            .map_or("None".to_owned(), |w| format!("{w:?}"));
        format!(
            "StopDecision(stop={}, reason={reason}, rel_half_width={width})",
            if self.stop { "True" } else { "False" }
        )
    }
}

/// Adaptive stopping rule: "precision", then "max_runs", then "max_time".
#[pyfunction]
#[pyo3(signature = (samples, *, target_precision, min_runs, max_runs, elapsed_s, max_time_s, min_time_s=0.0, confidence=0.95))]
#[allow(clippy::too_many_arguments)]
fn should_stop(
    samples: &Bound<'_, PyAny>,
    target_precision: f64,
    min_runs: i64,
    max_runs: i64,
    elapsed_s: f64,
    max_time_s: f64,
    min_time_s: f64,
    confidence: f64,
) -> PyResult<StopDecision> {
    let rule = tile_stats::StopRule {
        target_precision,
        min_runs: count("min_runs", min_runs)?,
        max_runs: count("max_runs", max_runs)?,
        max_time_s,
        min_time_s,
        confidence,
    };
    let d = tile_stats::should_stop(&sample(samples)?, elapsed_s, &rule).map_err(to_py)?;
    Ok(StopDecision {
        stop: d.stop,
        reason: d.reason.map(tile_stats::StopReason::as_str),
        rel_half_width: d.rel_half_width,
    })
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("StatsError", m.py().get_type::<StatsError>())?;
    m.add_class::<Summary>()?;
    m.add_class::<Comparison>()?;
    m.add_class::<StopDecision>()?;
    m.add_class::<GroupedComparison>()?;
    m.add_function(wrap_pyfunction!(median, m)?)?;
    m.add_function(wrap_pyfunction!(quantile, m)?)?;
    m.add_function(wrap_pyfunction!(student_t_quantile, m)?)?;
    m.add_function(wrap_pyfunction!(summarize, m)?)?;
    m.add_function(wrap_pyfunction!(bootstrap_ci, m)?)?;
    m.add_function(wrap_pyfunction!(mann_whitney_u, m)?)?;
    m.add_function(wrap_pyfunction!(compare, m)?)?;
    m.add_function(wrap_pyfunction!(should_stop, m)?)?;
    m.add_function(wrap_pyfunction!(within_run_drift, m)?)?;
    m.add_function(wrap_pyfunction!(block_ratio_ci, m)?)?;
    m.add_function(wrap_pyfunction!(grouped_ratio_ci, m)?)?;
    m.add_function(wrap_pyfunction!(grouped_compare, m)?)?;
    m.add_function(wrap_pyfunction!(group_log_variance, m)?)?;
    m.add_function(wrap_pyfunction!(run_blocks, m)?)?;
    m.add_function(wrap_pyfunction!(benjamini_hochberg, m)?)?;
    Ok(())
}
