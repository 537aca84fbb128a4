//! The one error type of the crate: every fallible function returns it instead of panicking.

use std::fmt;

/// Why a statistic could not be computed from the given input.
#[derive(Debug, Clone, PartialEq)]
pub enum StatsError {
    /// The sample has no values.
    EmptySample,
    /// The sample holds a NaN or an infinity (`index` is its position, `value` the value).
    NonFinite { index: usize, value: f64 },
    /// An option is out of range; the message names it and the accepted range.
    InvalidArgument(String),
}

impl fmt::Display for StatsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::EmptySample => f.write_str("sample is empty: need at least 1 value"),
            Self::NonFinite { index, value } => write!(
                f,
                "sample holds a non-finite value ({value}) at index {index}: \
                 drop failed or overflowed measurements before computing statistics"
            ),
            Self::InvalidArgument(msg) => f.write_str(msg),
        }
    }
}

impl std::error::Error for StatsError {}

/// Result alias used throughout the crate.
pub type Result<T> = std::result::Result<T, StatsError>;

/// Rejects empty samples and samples holding NaN or infinities.
pub(crate) fn check_sample(xs: &[f64]) -> Result<()> {
    if xs.is_empty() {
        return Err(StatsError::EmptySample);
    }
    match xs.iter().position(|x| !x.is_finite()) {
        Some(index) => Err(StatsError::NonFinite {
            index,
            value: xs[index],
        }),
        None => Ok(()),
    }
}

/// Rejects a confidence level outside the open interval (0, 1).
pub(crate) fn check_confidence(confidence: f64) -> Result<()> {
    if confidence > 0.0 && confidence < 1.0 {
        Ok(())
    } else {
        Err(StatsError::InvalidArgument(format!(
            "confidence must be strictly between 0 and 1, got {confidence}: use e.g. 0.95"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_problem() {
        assert_eq!(
            StatsError::EmptySample.to_string(),
            "sample is empty: need at least 1 value"
        );
        let e = check_sample(&[1.0, f64::NAN]).unwrap_err();
        assert!(matches!(e, StatsError::NonFinite { index: 1, .. }));
        assert!(e.to_string().contains("NaN"));
        assert!(check_sample(&[f64::NEG_INFINITY])
            .unwrap_err()
            .to_string()
            .contains("-inf"));
        assert!(check_confidence(1.5)
            .unwrap_err()
            .to_string()
            .contains("1.5"));
        assert!(check_confidence(f64::NAN).is_err());
        assert!(check_confidence(0.0).is_err());
        assert!(check_confidence(0.5).is_ok());
    }
}
