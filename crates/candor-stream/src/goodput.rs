//! Goodput as vLLM's benchmark defines it (`--goodput`): the requests per second that meet
//! every given per-request objective, each judged on the request's own values (its TTFT, its
//! TPOT, its end-to-end latency), not on a percentile of the run. Parsed once into
//! [`GoodputSlo`]; [`GoodputSlo::meets`] is called per completed request and allocates nothing.

use std::fmt;

/// One per-request bound: a value meets it when below it (`<`) or at most it (`<=`, and
/// vLLM's `name:ms` form, whose rule is "at most").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bound {
    pub ns: u64,
    pub inclusive: bool,
}

impl Bound {
    #[inline]
    pub fn admits(self, value_ns: u64) -> bool {
        if self.inclusive {
            value_ns <= self.ns
        } else {
            value_ns < self.ns
        }
    }
}

/// The per-request objectives of `--goodput`; a request is good when it completed and meets
/// every one given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GoodputSlo {
    /// Time to first token.
    pub ttft: Option<Bound>,
    /// Time per output token (a response of one token has none, and meets it, as in vLLM
    /// where its TPOT is 0).
    pub tpot: Option<Bound>,
    /// End-to-end latency: the response time.
    pub e2el: Option<Bound>,
}

/// Why `--goodput` could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid --goodput '{text}': {why}; expected e.g. 'ttft<500ms,tpot<50ms,e2el<5s' (or vLLM's 'ttft:500 tpot:50', in ms)")]
pub struct GoodputError {
    pub text: String,
    pub why: String,
}

impl GoodputSlo {
    /// Parses `ttft<500ms,tpot<=50ms,e2el<5s`, or vLLM's `ttft:500 tpot:50` (milliseconds,
    /// "at most"); items are separated by commas or spaces, each measure at most once.
    pub fn parse(text: &str) -> Result<GoodputSlo, GoodputError> {
        let err = |why: String| GoodputError {
            text: text.to_string(),
            why,
        };
        let mut slo = GoodputSlo::default();
        let mut any = false;
        for item in text
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|s| !s.is_empty())
        {
            let (name, bound) = if let Some((n, v)) = item.split_once("<=") {
                (
                    n,
                    Bound {
                        ns: duration(v).map_err(&err)?,
                        inclusive: true,
                    },
                )
            } else if let Some((n, v)) = item.split_once('<') {
                (
                    n,
                    Bound {
                        ns: duration(v).map_err(&err)?,
                        inclusive: false,
                    },
                )
            } else if let Some((n, v)) = item.split_once(':') {
                let ms: f64 = v
                    .parse()
                    .ok()
                    .filter(|ms: &f64| ms.is_finite() && *ms > 0.0)
                    .ok_or_else(|| {
                        err(format!("'{v}' is not a positive number of milliseconds"))
                    })?;
                (
                    n,
                    Bound {
                        ns: (ms * 1e6).round() as u64,
                        inclusive: true,
                    },
                )
            } else {
                return Err(err(format!("'{item}' has no '<' or ':' before its limit")));
            };
            let slot = match name.to_ascii_lowercase().as_str() {
                "ttft" => &mut slo.ttft,
                "tpot" => &mut slo.tpot,
                "e2el" | "response_time" => &mut slo.e2el,
                other => {
                    return Err(err(format!(
                        "unknown measure '{other}' (goodput judges ttft, tpot and e2el per request)"
                    )))
                }
            };
            if slot.replace(bound).is_some() {
                return Err(err(format!("'{name}' is given twice")));
            }
            any = true;
        }
        if !any {
            return Err(err("no objective given".into()));
        }
        Ok(slo)
    }

    /// Whether a completed request with these values is good: `ttft` (none: no token came),
    /// `tpot` (none: fewer than two tokens) and `e2el`, all in ns.
    #[inline]
    pub fn meets(&self, ttft: Option<u64>, tpot: Option<u64>, e2el: u64) -> bool {
        let ttft_ok = self.ttft.is_none_or(|b| ttft.is_some_and(|v| b.admits(v)));
        let tpot_ok = self.tpot.is_none_or(|b| b.admits(tpot.unwrap_or(0)));
        let e2el_ok = self.e2el.is_none_or(|b| b.admits(e2el));
        ttft_ok && tpot_ok && e2el_ok
    }
}

fn duration(v: &str) -> Result<u64, String> {
    if v.parse::<f64>().is_ok() {
        return Err(format!("'{v}' needs a unit, e.g. {v}ms"));
    }
    match candor_core::units::parse_duration_ns(v) {
        Ok(0) => Err("a limit of zero can never be met".into()),
        Ok(ns) => Ok(ns),
        Err(e) => Err(e.to_string()),
    }
}

/// `ns` in the largest unit that writes it whole (`500ms`, `1500us`), so that it parses back to
/// the same bound.
fn exact(ns: u64) -> String {
    for (unit, per) in [("s", 1_000_000_000), ("ms", 1_000_000), ("us", 1_000)] {
        if ns.is_multiple_of(per) {
            return format!("{}{unit}", ns / per);
        }
    }
    format!("{ns}ns")
}

impl fmt::Display for GoodputSlo {
    /// The canonical text (`ttft<500ms,tpot<=50ms`), as the results record it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for (name, b) in [
            ("ttft", self.ttft),
            ("tpot", self.tpot),
            ("e2el", self.e2el),
        ] {
            let Some(b) = b else { continue };
            if !first {
                f.write_str(",")?;
            }
            first = false;
            let op = if b.inclusive { "<=" } else { "<" };
            write!(f, "{name}{op}{}", exact(b.ns))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn both_forms_parse_to_the_same_bounds_and_vllms_is_at_most() {
        let ours = GoodputSlo::parse("ttft<=500ms, tpot<=50ms").unwrap();
        let vllm = GoodputSlo::parse("ttft:500 tpot:50").unwrap();
        assert_eq!(ours, vllm);
        assert_eq!(
            ours.ttft,
            Some(Bound {
                ns: 500 * MS,
                inclusive: true
            })
        );
        assert_eq!(ours.e2el, None);
        let strict = GoodputSlo::parse("e2el<2s").unwrap();
        assert_eq!(strict.e2el.unwrap().ns, 2_000 * MS);
        assert!(!strict.e2el.unwrap().inclusive);
    }

    #[test]
    fn bad_text_names_what_is_wrong() {
        for (text, says) in [
            ("", "no objective"),
            ("ttft<500", "needs a unit"),
            ("itl<5ms", "unknown measure 'itl'"),
            ("ttft<1s,ttft<2s", "given twice"),
            ("ttft=5ms", "no '<' or ':'"),
            ("ttft:-3", "positive number"),
            ("tpot<0ms", "zero"),
        ] {
            let e = GoodputSlo::parse(text).unwrap_err().to_string();
            assert!(e.contains(says), "{text}: {e}");
        }
    }

    #[test]
    fn a_request_is_good_only_when_it_meets_every_bound_given() {
        let slo = GoodputSlo::parse("ttft<100ms,tpot<=10ms,e2el<1s").unwrap();
        assert!(slo.meets(Some(99 * MS), Some(10 * MS), 999 * MS));
        assert!(
            !slo.meets(Some(100 * MS), Some(10 * MS), 999 * MS),
            "< is strict"
        );
        assert!(!slo.meets(Some(99 * MS), Some(10 * MS + 1), 999 * MS));
        assert!(!slo.meets(Some(99 * MS), Some(MS), 1_000 * MS));
        // No token: no TTFT to meet the bound with. One token: no TPOT, which meets it.
        assert!(!slo.meets(None, None, MS));
        assert!(slo.meets(Some(MS), None, MS));
        // Bounds not given do not judge.
        let ttft_only = GoodputSlo::parse("ttft:100").unwrap();
        assert!(ttft_only.meets(Some(100 * MS), Some(u64::MAX), u64::MAX));
    }

    #[test]
    fn the_text_it_records_parses_back_to_it() {
        let slo = GoodputSlo::parse("tpot<=50ms,ttft<0.5s,e2el<1500us").unwrap();
        assert_eq!(slo.to_string(), "ttft<500ms,tpot<=50ms,e2el<1500us");
        assert_eq!(GoodputSlo::parse(&slo.to_string()).unwrap(), slo);
        let vllm = GoodputSlo::parse("ttft:0.25").unwrap();
        assert_eq!(vllm.to_string(), "ttft<=250us");
    }
}
