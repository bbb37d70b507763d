//! Checks that a loaded results file describes something that could have happened: books that
//! balance, counts and times in range, and merges whose sums fit in 64 bits. A file that fails is
//! refused with the reason, before any number of it reaches a report or a merge.

use candor_core::results::{EncodedHistograms, PhaseResults, RequestCounts, RunResults};
use serde_json::Value;

/// The largest request count a results file may hold (2^56, about 7.2e16).
///
/// Derivation: a generator at 100 million requests per second (far beyond any machine candor
/// runs on) needs 22 years to send 2^56 requests, so a larger count is not a measurement. The
/// bound also makes every sum the checks and merges compute safe: `balanced()` adds at most a
/// dozen such counts, and 256 of them still fit in 64 bits, so no check can itself overflow.
pub const MAX_REQUEST_COUNT: u64 = 1 << 56;

/// The longest a run, a phase or an interval may last, and the furthest from the run's start an
/// interval may begin: a century (3.16e9 s). No measurement lasts that long, and the bound keeps
/// every figure derived from it finite (`duration_s: 1e308` would print as "infm measured").
pub const MAX_DURATION_S: f64 = 100.0 * 365.25 * 86_400.0;

/// The highest rate a results file may state, per second: [`MAX_REQUEST_COUNT`], as no second
/// can hold more requests than a whole file may.
pub const MAX_RATE_PER_S: f64 = MAX_REQUEST_COUNT as f64;

/// Why a results file is impossible.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Impossible {
    #[error("{field} = {value} is beyond any possible run (more than 2^56 requests)")]
    Count { field: String, value: u64 },
    #[error(
        "{phase} requests do not balance: intended {intended} is not completed {completed} + failed \
         {failed} + unfinished {unfinished}"
    )]
    Books {
        phase: &'static str,
        intended: u64,
        completed: u64,
        failed: u64,
        unfinished: u64,
    },
    #[error(
        "{phase} requests do not balance: unfinished {unfinished} is not sent-and-unanswered {sent} + \
         never-sent {unsent}"
    )]
    Unfinished {
        phase: &'static str,
        unfinished: u64,
        sent: u64,
        unsent: u64,
    },
    #[error("{phase} requests do not balance: failed {failed} is not the sum of the failure classes {classes}")]
    Classes {
        phase: &'static str,
        failed: u64,
        classes: String,
    },
    #[error("{field} = {} is not a possible {what}", plain(*.value))]
    Number {
        field: String,
        value: f64,
        what: &'static str,
    },
    #[error("merging overflows: the sum of {field} over the inputs exceeds 2^64")]
    Overflow { field: String },
    #[error("{field} = {summary} but its histogram holds {histogram} values: the summary was not made from it")]
    SummaryCount {
        field: String,
        summary: u64,
        histogram: u64,
    },
    #[error("{phase} requests: {what} count {statuses} final responses but only {answered} requests completed or failed")]
    Statuses {
        phase: &'static str,
        what: &'static str,
        statuses: u64,
        answered: u64,
    },
    #[error("{field} is not an HdrHistogram (base64 of the V2 compressed encoding): {reason}")]
    Histogram { field: String, reason: String },
}

/// A number as a person would write it: 1e308, not 309 digits.
fn plain(v: f64) -> String {
    if v.is_finite() && v.abs() >= 1e15 {
        format!("{v:e}")
    } else {
        v.to_string()
    }
}

/// Every count in `requests` (bytes excepted: their bound is 64 bits) as (JSON path, value).
/// Walking the serialized form keeps the check complete when counters are added to the model.
fn counts(prefix: &str, requests: &RequestCounts) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    let v = serde_json::to_value(requests).unwrap_or(Value::Null);
    leaves(prefix, &v, &mut out);
    out
}

fn leaves(prefix: &str, v: &Value, out: &mut Vec<(String, u64)>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                leaves(&format!("{prefix}.{k}"), v, out);
            }
        }
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                out.push((prefix.to_string(), u));
            }
        }
        _ => {}
    }
}

fn is_bytes(path: &str) -> bool {
    path.rsplit('.')
        .next()
        .is_some_and(|k| k.starts_with("bytes"))
}

fn finite(field: String, value: f64, what: &'static str, min: f64) -> Result<(), Impossible> {
    within(field, value, what, min, f64::MAX)
}

/// `value` is a number in `min..=max`.
fn within(
    field: String,
    value: f64,
    what: &'static str,
    min: f64,
    max: f64,
) -> Result<(), Impossible> {
    if value.is_finite() && value >= min && value <= max {
        Ok(())
    } else {
        Err(Impossible::Number { field, value, what })
    }
}

fn check_phase(name: &'static str, p: &PhaseResults) -> Result<(), Impossible> {
    let r = &p.requests;
    for (field, value) in counts(&format!("{name}.requests"), r) {
        if !is_bytes(&field) && value > MAX_REQUEST_COUNT {
            return Err(Impossible::Count { field, value });
        }
    }
    // Every term is at most 2^56 now, so these sums cannot overflow.
    let unfinished = r.in_flight_at_end;
    if r.intended != r.completed + r.failed + unfinished {
        return Err(Impossible::Books {
            phase: name,
            intended: r.intended,
            completed: r.completed,
            failed: r.failed,
            unfinished,
        });
    }
    if unfinished != r.sent_unanswered + r.queued_unsent {
        return Err(Impossible::Unfinished {
            phase: name,
            unfinished,
            sent: r.sent_unanswered,
            unsent: r.queued_unsent,
        });
    }
    if !r.balanced() {
        return Err(Impossible::Classes {
            phase: name,
            failed: r.failed,
            classes: serde_json::to_string(&r.errors).unwrap_or_default(),
        });
    }
    if r.generator_late > r.intended {
        return Err(Impossible::Count {
            field: format!(
                "{name}.requests.generator_late (of {} intended)",
                r.intended
            ),
            value: r.generator_late,
        });
    }
    within(
        format!("{name}.duration_s"),
        p.duration_s,
        "duration (seconds, at most a century)",
        0.0,
        MAX_DURATION_S,
    )?;
    within(
        format!("{name}.rate.achieved_per_s"),
        p.rate.achieved_per_s,
        "rate",
        0.0,
        MAX_RATE_PER_S,
    )?;
    if let Some(t) = p.rate.target_per_s {
        within(
            format!("{name}.rate.target_per_s"),
            t,
            "rate",
            0.0,
            MAX_RATE_PER_S,
        )?;
    }
    for (key, summary) in [
        ("response_time", &p.response_time),
        ("service_time", &p.service_time),
        ("send_lag", &p.send_lag),
        ("unfinished_age", &p.unfinished_age),
    ] {
        // A mean or a spread beyond the largest value recorded is not a summary of it.
        let top = summary.max_ns as f64 + 1.0;
        within(
            format!("{name}.{key}.mean_ns"),
            summary.mean_ns,
            "mean (at most the max)",
            0.0,
            top,
        )?;
        within(
            format!("{name}.{key}.stdev_ns"),
            summary.stdev_ns,
            "standard deviation (at most the max)",
            0.0,
            top,
        )?;
    }
    let [response, service, lag] = histograms(&format!("{name}.histograms"), &p.histograms)?;
    // A report prints the summaries (samples, "supports percentiles up to"): they must be the
    // histograms' own, or the text would contradict the histograms it also draws.
    for (field, summary, histogram) in [
        ("response_time.count", &p.response_time, response),
        ("service_time.count", &p.service_time, service),
        ("send_lag.count", &p.send_lag, lag),
    ] {
        if summary.count != histogram {
            return Err(Impossible::SummaryCount {
                field: format!("{name}.{field}"),
                summary: summary.count,
                histogram,
            });
        }
    }
    // The first byte is optional: its summary and histogram come together or not at all.
    let first_byte = match &p.histograms.first_byte {
        Some(text) => histogram(format!("{name}.histograms.first_byte"), text)?,
        None => 0,
    };
    let summary = p.first_byte.as_ref().map_or(0, |s| s.count);
    if summary != first_byte {
        return Err(Impossible::SummaryCount {
            field: format!("{name}.first_byte.count"),
            summary,
            histogram: first_byte,
        });
    }
    // Every final response belongs to one request that completed or failed (1xx are interim
    // responses, counted besides the final one, so they are left out).
    let answered = r.completed + r.failed;
    let s = &r.status;
    let classes = s.s2xx + s.s3xx + s.s4xx + s.s5xx;
    let codes: u64 = p
        .status_codes
        .iter()
        .filter(|(code, _)| !code.starts_with('1'))
        .map(|(_, n)| (*n).min(MAX_REQUEST_COUNT))
        .sum();
    for (what, statuses) in [("status classes", classes), ("status_codes", codes)] {
        if statuses > answered {
            return Err(Impossible::Statuses {
                phase: name,
                what,
                statuses,
                answered,
            });
        }
    }
    Ok(())
}

/// The three histograms decode, as a merge, a comparison or an HTML report will need them to.
/// Returns their value counts (response time, service time, send lag).
fn histograms(prefix: &str, h: &EncodedHistograms) -> Result<[u64; 3], Impossible> {
    let mut lens = [0; 3];
    for (len, (key, text)) in lens.iter_mut().zip([
        ("response_time", &h.response_time),
        ("service_time", &h.service_time),
        ("send_lag", &h.send_lag),
    ]) {
        *len = histogram(format!("{prefix}.{key}"), text)?;
    }
    Ok(lens)
}

/// Decodes one histogram; its value count.
fn histogram(field: String, text: &str) -> Result<u64, Impossible> {
    candor_core::hist::from_base64_v2(text)
        .map(|h| h.len())
        .map_err(|e| Impossible::Histogram {
            field,
            reason: e.to_string(),
        })
}

/// Checks one loaded file: books, counts and times.
pub fn check(r: &RunResults) -> Result<(), Impossible> {
    finite(
        "start_time_unix_s".into(),
        r.start_time_unix_s,
        "time",
        f64::MIN,
    )?;
    check_phase("main", &r.main)?;
    if let Some(w) = &r.warmup {
        check_phase("warmup", w)?;
    }
    for s in &r.workload.stages {
        check_phase("stages[]", &s.results)?;
    }
    for p in r.workload.by_request.values() {
        check_phase("by_request[]", p)?;
    }
    for (i, x) in r.extra.iter().enumerate() {
        histogram(format!("extra[{i}].histogram ({})", x.name), &x.histogram)?;
    }
    for (i, iv) in r.intervals.iter().enumerate() {
        within(
            format!("intervals[{i}].start_s"),
            iv.start_s,
            "time",
            -MAX_DURATION_S,
            MAX_DURATION_S,
        )?;
        within(
            format!("intervals[{i}].length_s"),
            iv.length_s,
            "interval length",
            0.0,
            MAX_DURATION_S,
        )?;
        histograms(&format!("intervals[{i}].histograms"), &iv.histograms)?;
        for (k, v) in [("completed", iv.completed), ("failed", iv.failed)] {
            if v > MAX_REQUEST_COUNT {
                return Err(Impossible::Count {
                    field: format!("intervals[{i}].{k}"),
                    value: v,
                });
            }
        }
    }
    Ok(())
}

/// Checks that adding the request counts of `phases` cannot overflow any counter (bytes
/// included), so that the merge can add them with the model's own `add`.
pub fn check_sum(phases: &[&PhaseResults]) -> Result<(), Impossible> {
    let mut sums: Vec<(String, u128)> = Vec::new();
    for p in phases {
        for (field, value) in counts("requests", &p.requests) {
            match sums.iter_mut().find(|(f, _)| *f == field) {
                Some((_, s)) => *s += u128::from(value),
                None => sums.push((field, u128::from(value))),
            }
        }
    }
    match sums.into_iter().find(|(_, s)| *s > u128::from(u64::MAX)) {
        Some((field, _)) => Err(Impossible::Overflow { field }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic::synthetic_run;

    #[test]
    fn real_runs_pass() {
        let r = synthetic_run(1, 5, 100, 1_000_000, 2);
        check(&r).unwrap();
    }

    #[test]
    fn books_that_do_not_balance_are_refused() {
        let mut r = synthetic_run(1, 5, 100, 1_000_000, 0);
        r.main.requests.intended = 7;
        r.main.requests.completed = 400;
        r.main.requests.failed = 0;
        let e = check(&r).unwrap_err();
        assert_eq!(
            e.to_string(),
            "main requests do not balance: intended 7 is not completed 400 + failed 0 + unfinished 0"
        );
        let mut r = synthetic_run(1, 5, 100, 1_000_000, 0);
        r.main.requests.in_flight_at_end += 1;
        r.main.requests.intended += 1;
        assert!(matches!(check(&r), Err(Impossible::Unfinished { .. })));
        let mut r = synthetic_run(1, 5, 100, 1_000_000, 0);
        r.main.requests.failed += 1;
        r.main.requests.intended += 1;
        assert!(matches!(check(&r), Err(Impossible::Classes { .. })));
    }

    #[test]
    fn histograms_that_do_not_decode_and_absurd_durations_are_refused() {
        let bad = |f: &dyn Fn(&mut RunResults)| {
            let mut r = synthetic_run(1, 5, 100, 1_000_000, 1);
            f(&mut r);
            check(&r).unwrap_err().to_string()
        };
        let e = bad(&|r| r.main.histograms.response_time = "!!!notbase64".into());
        assert!(
            e.starts_with("main.histograms.response_time is not an HdrHistogram"),
            "{e}"
        );
        // Valid base64 that is no histogram, in an interval and in a warm-up.
        let e = bad(&|r| r.intervals[1].histograms.send_lag = "AAAA".into());
        assert!(
            e.starts_with("intervals[1].histograms.send_lag is not"),
            "{e}"
        );
        let e = bad(&|r| r.warmup.as_mut().unwrap().histograms.service_time = String::new());
        assert!(e.starts_with("warmup.histograms.service_time"), "{e}");
        for (field, e) in [
            ("main.duration_s", bad(&|r| r.main.duration_s = 1e308)),
            (
                "main.duration_s",
                bad(&|r| r.main.duration_s = MAX_DURATION_S * 1.01),
            ),
            (
                "main.rate.achieved_per_s",
                bad(&|r| r.main.rate.achieved_per_s = 1e300),
            ),
            (
                "intervals[0].length_s",
                bad(&|r| r.intervals[0].length_s = 1e20),
            ),
            (
                "intervals[0].start_s",
                bad(&|r| r.intervals[0].start_s = -1e20),
            ),
            (
                "main.response_time.mean_ns",
                bad(&|r| r.main.response_time.mean_ns = 1e308),
            ),
            (
                "main.send_lag.stdev_ns",
                bad(&|r| r.main.send_lag.stdev_ns = f64::NAN),
            ),
        ] {
            assert!(e.starts_with(&format!("{field} = ")), "{field}: {e}");
        }
        // A long but possible run passes.
        let mut r = synthetic_run(1, 5, 100, 1_000_000, 1);
        r.main.duration_s = 30.0 * 86_400.0;
        check(&r).unwrap();
    }

    #[test]
    fn counts_and_times_out_of_range_are_refused() {
        let mut r = synthetic_run(1, 5, 100, 1_000_000, 0);
        r.main.requests.completed = u64::MAX;
        r.main.requests.intended = u64::MAX;
        let e = check(&r).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("main.requests.completed = 18446744073709551615 is beyond"),
            "{e}"
        );
        let mut r = synthetic_run(1, 5, 100, 1_000_000, 0);
        r.main.requests.errors.timeout = MAX_REQUEST_COUNT + 1;
        assert!(matches!(check(&r), Err(Impossible::Count { .. })));
        let mut r = synthetic_run(1, 5, 100, 1_000_000, 0);
        r.intervals[2].length_s = -1.0;
        assert_eq!(
            check(&r).unwrap_err().to_string(),
            "intervals[2].length_s = -1 is not a possible interval length"
        );
        let mut r = synthetic_run(1, 5, 100, 1_000_000, 0);
        r.main.duration_s = f64::NAN;
        assert!(matches!(check(&r), Err(Impossible::Number { .. })));
        let mut r = synthetic_run(1, 5, 100, 1_000_000, 0);
        r.main.requests.generator_late = r.main.requests.intended + 1;
        assert!(matches!(check(&r), Err(Impossible::Count { .. })));
        // Bytes may be large (they are only bounded by 64 bits).
        let mut r = synthetic_run(1, 5, 100, 1_000_000, 0);
        r.main.requests.bytes_read = u64::MAX;
        check(&r).unwrap();
    }

    #[test]
    fn sums_that_overflow_are_found() {
        let mut a = synthetic_run(1, 5, 100, 1_000_000, 0);
        let b = synthetic_run(2, 5, 100, 1_000_000, 0);
        check_sum(&[&a.main, &b.main]).unwrap();
        a.main.requests.bytes_read = u64::MAX;
        assert_eq!(
            check_sum(&[&a.main, &b.main]).unwrap_err().to_string(),
            "merging overflows: the sum of requests.bytes_read over the inputs exceeds 2^64"
        );
    }

    #[test]
    fn summaries_and_status_counts_that_contradict_the_histograms_are_refused() {
        let ok = synthetic_run(1, 5, 100, 1_000_000, 0);
        check(&ok).unwrap();
        let n = ok.main.response_time.count;
        let mut r = ok.clone();
        r.main.response_time.count = 999_999;
        assert_eq!(
            check(&r).unwrap_err().to_string(),
            format!("main.response_time.count = 999999 but its histogram holds {n} values: the summary was not made from it")
        );
        let mut r = ok.clone();
        r.main.send_lag.count += 1;
        assert!(matches!(check(&r), Err(Impossible::SummaryCount { .. })));
        let answered = ok.main.requests.completed + ok.main.requests.failed;
        let mut r = ok.clone();
        r.main.requests.status.s2xx = answered + 1;
        assert!(check(&r)
            .unwrap_err()
            .to_string()
            .starts_with("main requests: status classes count"));
        let mut r = ok.clone();
        r.main.status_codes.insert("200".into(), answered + 1);
        assert!(matches!(
            check(&r),
            Err(Impossible::Statuses {
                what: "status_codes",
                ..
            })
        ));
        // Interim 1xx responses come besides a final one: not counted against the requests.
        let mut r = ok.clone();
        r.main.requests.status.s1xx = answered * 2;
        r.main.status_codes.insert("100".into(), answered * 2);
        check(&r).unwrap();
    }
}
