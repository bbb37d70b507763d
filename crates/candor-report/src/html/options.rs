//! What a report page is asked for: its title and the service-level objectives drawn and
//! checked on it.

/// A service-level objective drawn on the spectrum and checked in a table.
#[derive(Debug, Clone, PartialEq)]
pub struct Slo {
    pub label: String,
    /// 0..=100 (100 = max).
    pub percentile: f64,
    pub threshold_ns: u64,
}

/// An SLO line of the HTML report that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SloParseError {
    #[error(
        "invalid SLO '{0}': expected [NAME:]pPERCENTILE=DURATION, like p99=5ms or api:p99.9=20ms"
    )]
    Form(String),
    #[error("invalid SLO '{text}': {reason}")]
    Duration { text: String, reason: String },
}

impl Slo {
    /// Parses `p99=5ms`, `p99.9<=20ms`, `max=1s` or `NAME:p99=5ms` (label defaults to the
    /// percentile).
    pub fn parse(text: &str) -> Result<Slo, SloParseError> {
        let err = || SloParseError::Form(text.to_string());
        let (label, spec) = match text.split_once(':') {
            Some((l, s)) if !l.trim().is_empty() => (Some(l.trim().to_string()), s),
            _ => (None, text),
        };
        let (p, d) = spec
            .split_once("<=")
            .or_else(|| spec.split_once('='))
            .ok_or_else(err)?;
        let p = p.trim();
        let percentile = if p.eq_ignore_ascii_case("max") {
            100.0
        } else {
            p.trim_start_matches(['p', 'P'])
                .parse::<f64>()
                .map_err(|_| err())?
        };
        if !(0.0..=100.0).contains(&percentile) {
            return Err(err());
        }
        let threshold_ns = candor_core::units::parse_duration_ns(d.trim()).map_err(|e| {
            SloParseError::Duration {
                text: text.to_string(),
                reason: e.to_string(),
            }
        })?;
        Ok(Slo {
            label: label.unwrap_or_else(|| p.to_string()),
            percentile,
            threshold_ns,
        })
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct HtmlOptions {
    /// Page title; a default naming the runs when `None`.
    pub title: Option<String>,
    pub slos: Vec<Slo>,
}
