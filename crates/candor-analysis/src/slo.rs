//! Service-level objectives: `p99<10ms,p99.9<50ms,max<1s,errors<0.1%`, parsed once and evaluated
//! on a run's response time (from the intended send time) unless another measure is named
//! (`service_time.p99<2ms`, `send_lag.max<5ms`), and objectives on whether the load was really
//! offered (`rate>=95%`: completions per second against the target).

use crate::confidence;
use candor_core::results::{PhaseResults, RunResults};
use candor_core::units::{format_count, format_ns, format_rate, parse_duration_ns};
use candor_core::workload_results::StageResults;
use candor_core::{Histo, Recorder, Summary};
use serde::{Deserialize, Serialize};
use std::fmt;

/// What an objective constrains.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Response time at a percentile, 0 < p < 100.
    Percentile(f64),
    /// The largest response time.
    Max,
    /// The mean response time.
    Mean,
    /// Requests not served (failed or still unfinished at the end) per intended request.
    Errors,
    /// Completions per second over the measured window as a fraction of the target rate; a lower
    /// limit (`rate>=95%`).
    Rate,
    /// LLM runs: the share of intended requests that met every per-request objective (of
    /// `--goodput`, or the bounds the `--slo` latencies set), from the intended send; a lower
    /// limit (`goodput>=90%`).
    Goodput,
}

/// Which recorded measure a latency objective constrains.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Measure {
    /// From the intended send time to the last byte of the response.
    #[default]
    ResponseTime,
    /// From the actual send to the last byte of the response.
    ServiceTime,
    /// Actual send minus intended send.
    SendLag,
    /// From the intended send time to the first byte of the response.
    FirstByte,
    /// Streamed responses (`--stream`, `--llm`): from the intended send to the first event.
    FirstEvent,
    /// Between consecutive events of one streamed response.
    EventGap,
    /// LLM runs: time to first token from the intended send, and from the actual send.
    Ttft,
    TtftService,
    /// LLM runs: inter-token latency (each gap between content chunks).
    Itl,
    /// LLM runs: time per output token, `(last - first token) / (tokens - 1)`.
    Tpot,
}

impl Measure {
    pub fn name(self) -> &'static str {
        match self {
            Measure::ResponseTime => "response time",
            Measure::ServiceTime => "service time",
            Measure::SendLag => "send lag",
            Measure::FirstByte => "first byte",
            Measure::FirstEvent => "first event",
            Measure::EventGap => "event gap",
            Measure::Ttft => "ttft",
            Measure::TtftService => "ttft (actual send)",
            Measure::Itl => "itl",
            Measure::Tpot => "tpot",
        }
    }

    /// The flag that records this measure, for a measure only streamed responses have.
    pub fn needs(self) -> Option<&'static str> {
        match self {
            Measure::FirstEvent | Measure::EventGap => Some("--stream or --llm"),
            Measure::Ttft | Measure::TtftService | Measure::Itl | Measure::Tpot => Some("--llm"),
            _ => None,
        }
    }

    /// This measure's histogram in `rec` (none for the stream measures, kept as summaries).
    pub fn of(self, rec: &Recorder) -> Option<&Histo> {
        match self {
            Measure::ResponseTime => Some(&rec.response),
            Measure::ServiceTime => Some(&rec.service),
            Measure::SendLag => Some(&rec.send_lag),
            Measure::FirstByte => Some(&rec.first_byte),
            _ => None,
        }
    }

    fn summary(self, main: &candor_core::results::PhaseResults) -> &Summary {
        static NONE: std::sync::OnceLock<Summary> = std::sync::OnceLock::new();
        // A run without values of a measure has no samples of it: the objective has no data.
        let none = || NONE.get_or_init(|| Summary::of(&candor_core::hist::new_histogram()));
        match self {
            Measure::ResponseTime => &main.response_time,
            Measure::ServiceTime => &main.service_time,
            Measure::SendLag => &main.send_lag,
            // A run without first bytes has no samples of it: the objective has no data.
            Measure::FirstByte => main.first_byte.as_ref().unwrap_or_else(none),
            Measure::FirstEvent => main.first_event.as_ref().unwrap_or_else(none),
            Measure::EventGap => main.event_gap.as_ref().unwrap_or_else(none),
            Measure::Ttft => main.ttft.as_ref().unwrap_or_else(none),
            Measure::TtftService => main.ttft_service.as_ref().unwrap_or_else(none),
            Measure::Itl => main.itl.as_ref().unwrap_or_else(none),
            Measure::Tpot => main.tpot.as_ref().unwrap_or_else(none),
        }
    }

    fn parse(name: &str) -> Option<Measure> {
        Some(match name {
            "response_time" | "response" => Measure::ResponseTime,
            "service_time" | "service" => Measure::ServiceTime,
            "send_lag" | "lag" => Measure::SendLag,
            "first_byte" | "ttfb" => Measure::FirstByte,
            "first_event" => Measure::FirstEvent,
            "event_gap" => Measure::EventGap,
            "ttft" => Measure::Ttft,
            "ttft_service" => Measure::TtftService,
            "itl" => Measure::Itl,
            "tpot" => Measure::Tpot,
            _ => return None,
        })
    }
}

/// One objective, e.g. `p99<10ms`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Objective {
    /// The text as written (without spaces), used as its label.
    pub text: String,
    /// The measure of a latency metric (response time unless named).
    #[serde(default)]
    pub measure: Measure,
    pub metric: Metric,
    /// Nanoseconds for latency metrics; a fraction (0.001 = 0.1%) for errors and rate.
    pub limit: f64,
    /// `<=` rather than `<` (`>=` rather than `>` for the rate).
    pub inclusive: bool,
}

/// A parsed list of objectives.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SloSet {
    pub objectives: Vec<Objective>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("invalid SLO '{expr}': {why}; expected a comma-separated list like 'p99<10ms,p99.9<50ms,max<1s,errors<0.1%,rate>=95%,send_lag.p99<1ms'")]
pub struct SloError {
    pub expr: String,
    pub why: String,
}

pub use candor_core::analysis::SloVerdict;

impl fmt::Display for Objective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Objective {
    /// Parses one objective such as `p99.9<=50ms`, `max<1s`, `mean<2ms` or `errors<0.1%`.
    pub fn parse(text: &str) -> Result<Objective, SloError> {
        let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let err = |why: &str| SloError {
            expr: compact.clone(),
            why: why.to_string(),
        };
        if compact.is_empty() {
            return Err(err(
                "empty objective (two commas in a row, or a trailing comma?)",
            ));
        }
        let lowered = compact.to_ascii_lowercase();
        let is_rate = lowered.starts_with("rate") || lowered.starts_with("goodput");
        let (lhs, rhs, inclusive) = if is_rate {
            if let Some((l, r)) = compact.split_once(">=") {
                (l, r, true)
            } else if let Some((l, r)) = compact.split_once('>') {
                (l, r, false)
            } else {
                return Err(err(
                    "the rate and goodput take a lower limit: rate>=95%, goodput>=90%",
                ));
            }
        } else if let Some((l, r)) = compact.split_once("<=") {
            (l, r, true)
        } else if let Some((l, r)) = compact.split_once('<') {
            (l, r, false)
        } else if compact.contains('>') || compact.contains('=') {
            return Err(err(
                "only upper limits are supported (and lower ones for the rate and goodput: rate>=95%, goodput>=90%): use '<' or '<='",
            ));
        } else {
            return Err(err("missing '<' between the measure and its limit"));
        };
        if rhs.contains('<') || rhs.contains('>') {
            return Err(err("more than one comparison"));
        }
        if rhs.is_empty() {
            return Err(err("missing limit after the comparison"));
        }
        let lower = lhs.to_ascii_lowercase();
        // A dot after a name without digits names a measure; in `p99.9` it is a decimal point.
        let (measure, name) = match lower.split_once('.') {
            Some((m, rest)) if !m.chars().any(|c| c.is_ascii_digit()) => match Measure::parse(m) {
                Some(measure) => (Some(measure), rest.to_string()),
                None => {
                    return Err(err(&format!(
                        "unknown measure '{m}' (use response_time, service_time, send_lag, first_byte, \
                         first_event, event_gap, ttft, ttft_service, itl or tpot)"
                    )))
                }
            },
            _ => (None, lower.clone()),
        };
        let metric = match name.as_str() {
            "" => return Err(err("missing measure before '<' (p99, max, mean or errors)")),
            "max" | "p100" => Metric::Max,
            "mean" | "avg" => Metric::Mean,
            "errors" | "error" | "err" => Metric::Errors,
            "rate" => Metric::Rate,
            "goodput" => Metric::Goodput,
            n if n.starts_with('p') => {
                let p: f64 = n[1..].parse().map_err(|_| {
                    err(&format!(
                        "'{lhs}' is not a percentile (write p50, p99, p99.9...)"
                    ))
                })?;
                if !(p > 0.0 && p < 100.0) {
                    return Err(err(&format!(
                        "percentile {p} is outside (0, 100); use 'max' for the largest value"
                    )));
                }
                Metric::Percentile(p)
            }
            _ => {
                return Err(err(&format!(
                    "unknown measure '{lhs}' (use pNN like p99.9, max, mean, errors or rate, optionally \
                     after response_time., service_time. or send_lag.)"
                )))
            }
        };
        if measure.is_some() && matches!(metric, Metric::Errors | Metric::Rate | Metric::Goodput) {
            return Err(err(
                "errors, rate and goodput are counts, not latencies: write them without a measure",
            ));
        }
        let measure = measure.unwrap_or_default();
        if let (Some(_), Metric::Percentile(p)) = (measure.needs(), metric) {
            // The stream measures are kept as summaries: only their percentiles can be read.
            if !candor_core::hist::SUMMARY_PERCENTILES.contains(&p) {
                return Err(err(&format!(
                    "{} is kept at p50, p75, p90, p99, p99.9, p99.99 and p99.999 only, not p{p}",
                    measure.name()
                )));
            }
        }
        let limit = match metric {
            Metric::Errors | Metric::Rate | Metric::Goodput => {
                let (what, like) = match metric {
                    Metric::Rate => ("rate", "rate>=95% (of the target)"),
                    Metric::Goodput => ("goodput", "goodput>=90% (of the intended requests)"),
                    _ => ("errors", "errors<0.1%"),
                };
                let pct = rhs.strip_suffix('%').ok_or_else(|| {
                    err(&format!("the {what} limit is a percentage, like {like}"))
                })?;
                let v: f64 = pct
                    .parse()
                    .map_err(|_| err(&format!("'{rhs}' is not a percentage")))?;
                if !(0.0..=100.0).contains(&v) || !v.is_finite() {
                    return Err(err(&format!(
                        "the {what} limit must be between 0% and 100%"
                    )));
                }
                v / 100.0
            }
            _ => {
                if rhs.ends_with('%') {
                    return Err(err(
                        "a latency limit is a duration like 10ms, not a percentage",
                    ));
                }
                if rhs.parse::<f64>().is_ok() {
                    let op = if inclusive { "<=" } else { "<" };
                    return Err(err(&format!("add a unit, e.g. {lhs}{op}{rhs}ms")));
                }
                let ns = parse_duration_ns(rhs).map_err(|e| err(&e.to_string()))?;
                if ns == 0 {
                    return Err(err("a latency limit of zero can never be met"));
                }
                ns as f64
            }
        };
        Ok(Objective {
            text: compact,
            measure,
            metric,
            limit,
            inclusive,
        })
    }

    /// True when `measured` meets the objective.
    pub fn holds(&self, measured: f64) -> bool {
        match (self.metric, self.inclusive) {
            (Metric::Rate | Metric::Goodput, true) => measured >= self.limit,
            (Metric::Rate | Metric::Goodput, false) => measured > self.limit,
            (_, true) => measured <= self.limit,
            (_, false) => measured < self.limit,
        }
    }

    /// The limit formatted for people.
    pub fn limit_text(&self) -> String {
        match self.metric {
            Metric::Errors | Metric::Rate | Metric::Goodput => format!("{}%", self.limit * 100.0),
            _ => format_ns(self.limit),
        }
    }

    /// True for objectives on a latency (a percentile, the max or the mean of a measure).
    pub fn is_latency(&self) -> bool {
        matches!(
            self.metric,
            Metric::Percentile(_) | Metric::Max | Metric::Mean
        )
    }

    /// Evaluates on `results` (`rec` is its decoded histograms, if available, so that any
    /// percentile can be read, not only the summary's).
    pub fn evaluate(&self, results: &RunResults, rec: Option<&Recorder>) -> SloVerdict {
        self.evaluate_phase(&results.main, rec)
    }

    /// Evaluates on one phase of a run: the measured window, or one stage of a load profile
    /// (whose own target and window judge `rate>=`).
    pub fn evaluate_phase(&self, main: &PhaseResults, rec: Option<&Recorder>) -> SloVerdict {
        let verdict = |measured: Option<f64>, note: String| SloVerdict {
            objective: self.text.clone(),
            pass: measured.is_some_and(|m| self.holds(m)),
            measured,
            note,
        };
        match self.metric {
            Metric::Errors => {
                let r = &main.requests;
                if r.intended == 0 {
                    return verdict(None, "no request accounting in this input".into());
                }
                let bad = r.failed + r.in_flight_at_end;
                verdict(
                    Some(bad as f64 / r.intended as f64),
                    format!(
                        "{} failed + {} unfinished of {} intended",
                        format_count(r.failed),
                        format_count(r.in_flight_at_end),
                        format_count(r.intended)
                    ),
                )
            }
            Metric::Goodput => match main.stream.as_ref().and_then(|s| s.goodput.as_ref()) {
                Some(g) => verdict(
                    Some(g.fraction),
                    format!(
                        "{} of {} intended met {}",
                        format_count(g.good),
                        format_count(main.requests.intended),
                        g.slo
                    ),
                ),
                None => verdict(
                    None,
                    "no goodput was judged (give --goodput, or ttft, tpot or response-time objectives, with --llm)"
                        .into(),
                ),
            },
            Metric::Rate => {
                let Some(target) = main.rate.target_per_s.filter(|t| *t > 0.0) else {
                    return verdict(
                        None,
                        "a closed loop (-R max) has no target rate to compare with".into(),
                    );
                };
                if main.duration_s <= 0.0 {
                    return verdict(None, "no measured window".into());
                }
                let achieved = main.requests.completed as f64 / main.duration_s;
                verdict(
                    Some(achieved / target),
                    format!(
                        "{} completed in {:.1} s: {:.1}/s of {:.1}/s",
                        format_count(main.requests.completed),
                        main.duration_s,
                        achieved,
                        target
                    ),
                )
            }
            _ if self.measure.summary(main).count == 0 => verdict(
                None,
                format!("no {} values were recorded", self.measure.name()),
            ),
            Metric::Max => verdict(
                Some(self.measure.summary(main).max_ns as f64),
                String::new(),
            ),
            Metric::Mean => verdict(Some(self.measure.summary(main).mean_ns), String::new()),
            Metric::Percentile(p) => {
                let summary = self.measure.summary(main);
                let value = match rec.and_then(|r| self.measure.of(r)) {
                    Some(h) => Some(candor_core::hist::value_at(h, p)),
                    None => summary.at(p),
                };
                let n = summary.count;
                let need = confidence::samples_needed(p / 100.0);
                let note = if n < need {
                    format!(
                        "only {} samples: p{p} needs about {} for a stable estimate",
                        format_count(n),
                        format_count(need)
                    )
                } else {
                    String::new()
                };
                match value {
                    Some(v) => verdict(Some(v as f64), note),
                    None => verdict(
                        None,
                        format!(
                            "p{p} is not in this file's summary and its histogram is unreadable"
                        ),
                    ),
                }
            }
        }
    }
}

impl SloSet {
    /// Parses a comma-separated list; several lists (repeated flags) can be joined with
    /// [`SloSet::extend`].
    pub fn parse(text: &str) -> Result<SloSet, SloError> {
        if text.trim().is_empty() {
            return Err(SloError {
                expr: text.to_string(),
                why: "no objectives given".into(),
            });
        }
        let objectives = text
            .split(',')
            .map(Objective::parse)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(SloSet { objectives })
    }

    /// Parses every string (each a comma-separated list) into one set.
    pub fn parse_all<S: AsRef<str>>(texts: &[S]) -> Result<SloSet, SloError> {
        let mut set = SloSet::default();
        for t in texts {
            set.extend(SloSet::parse(t.as_ref())?);
        }
        Ok(set)
    }

    pub fn extend(&mut self, other: SloSet) {
        self.objectives.extend(other.objectives);
    }

    pub fn is_empty(&self) -> bool {
        self.objectives.is_empty()
    }

    /// True when one of the objectives limits errors (the capacity search otherwise demands
    /// that every request is served): an errors budget, or a goodput share (a failed or
    /// unfinished request is not good, so the share already counts it).
    pub fn limits_errors(&self) -> bool {
        self.objectives
            .iter()
            .any(|o| matches!(o.metric, Metric::Errors | Metric::Goodput))
    }

    /// True when one of the objectives is a goodput share (it needs per-request bounds).
    pub fn judges_goodput(&self) -> bool {
        self.objectives.iter().any(|o| o.metric == Metric::Goodput)
    }

    /// Evaluates every objective on `results`.
    pub fn evaluate(&self, results: &RunResults) -> Vec<SloVerdict> {
        self.evaluate_phase(&results.main)
    }

    /// Evaluates every objective on one phase (the measured window, or a stage).
    pub fn evaluate_phase(&self, phase: &PhaseResults) -> Vec<SloVerdict> {
        let rec = phase.histograms.decode().ok();
        self.objectives
            .iter()
            .map(|o| o.evaluate_phase(phase, rec.as_ref()))
            .collect()
    }

    /// Judges every objective on each stage of a load profile as well, from the stage's own
    /// histograms and counts, and records the verdicts as the stage's `analysis.slo`. The whole
    /// run's verdicts (and so the exit code) stay the run's: a stage's are what it contributed.
    pub fn judge_stages(&self, results: &mut RunResults) {
        if self.is_empty() {
            return;
        }
        for stage in &mut results.workload.stages {
            let slo = self.evaluate_phase(&stage.results);
            match &mut stage.results.analysis {
                Some(a) => a.slo = slo,
                None => {
                    stage.results.analysis = Some(crate::Analysis {
                        confidence: Vec::new(),
                        highest_supported_percentile: None,
                        saturation: None,
                        coordinated_omission: None,
                        stationarity: None,
                        slo,
                    })
                }
            }
        }
    }
}

/// The per-stage verdicts that [`SloSet::judge_stages`] recorded, a block per stage under its
/// window and target (as the text report's stage table names them); empty when none were.
pub fn render_stages(stages: &[StageResults]) -> String {
    let judged: Vec<(usize, &StageResults, &Vec<SloVerdict>)> = stages
        .iter()
        .enumerate()
        .filter_map(|(k, s)| {
            let slo = &s.results.analysis.as_ref()?.slo;
            (!slo.is_empty()).then_some((k, s, slo))
        })
        .collect();
    if judged.is_empty() {
        return String::new();
    }
    let mut out =
        String::from("objectives per stage (the pass or fail above is the whole run's):\n");
    for (k, s, verdicts) in judged {
        let target = if s.from_per_s == s.to_per_s {
            format_rate(s.from_per_s)
        } else {
            format!("{}..{}", format_rate(s.from_per_s), format_rate(s.to_per_s))
        };
        out.push_str(&format!(
            "  stage {} ({:.1}-{:.1}s {target}):\n",
            k + 1,
            s.start_s,
            s.start_s + s.results.duration_s
        ));
        for line in render(verdicts).lines() {
            out.push_str(&format!("    {line}\n"));
        }
    }
    out
}

/// True when every verdict passed.
pub fn all_pass(verdicts: &[SloVerdict]) -> bool {
    verdicts.iter().all(|v| v.pass)
}

/// One line per verdict: `SLO p99<10ms      response time = 4.21ms   PASS`.
pub fn render(verdicts: &[SloVerdict]) -> String {
    let mut out = String::new();
    for v in verdicts {
        // The label says what was measured; parsing it again cannot fail for a verdict's own text.
        let objective = Objective::parse(&v.objective).ok();
        let measured = match (v.measured, &objective) {
            (None, _) => "cannot be measured".to_string(),
            (Some(m), Some(o)) if o.metric == Metric::Errors => {
                format!("errors = {:.4}%", m * 100.0)
            }
            (Some(m), Some(o)) if o.metric == Metric::Rate => {
                format!("rate = {:.2}% of target", m * 100.0)
            }
            (Some(m), Some(o)) if o.metric == Metric::Goodput => {
                format!("goodput = {:.2}% of intended", m * 100.0)
            }
            (Some(m), Some(o)) => format!("{} = {}", o.measure.name(), format_ns(m)),
            (Some(m), None) => format_ns(m),
        };
        out.push_str(&format!(
            "SLO {:<16} {:<32} {}{}\n",
            v.objective,
            measured,
            if v.pass { "PASS" } else { "FAIL" },
            if v.note.is_empty() {
                String::new()
            } else {
                format!("  ({})", v.note)
            }
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_example() {
        let s = SloSet::parse("p99<10ms, p99.9<50ms,max<1s,errors<0.1%").unwrap();
        assert_eq!(s.objectives.len(), 4);
        assert_eq!(s.objectives[0].metric, Metric::Percentile(99.0));
        assert_eq!(s.objectives[0].limit, 10e6);
        assert_eq!(s.objectives[1].metric, Metric::Percentile(99.9));
        assert_eq!(s.objectives[2].metric, Metric::Max);
        assert_eq!(s.objectives[2].limit, 1e9);
        assert_eq!(s.objectives[3].metric, Metric::Errors);
        assert!((s.objectives[3].limit - 0.001).abs() < 1e-12);
        assert!(!s.objectives[0].inclusive);
        assert!(SloSet::parse("mean<=2ms").unwrap().objectives[0].inclusive);
    }

    #[test]
    fn the_stream_measures_are_named_and_judged_on_their_summaries() {
        let s = SloSet::parse(
            "ttft.p99<500ms,ttft_service.p50<1s,itl.p99.9<30ms,tpot.max<50ms,first_event.mean<1s,event_gap.p99<5ms",
        )
        .unwrap();
        let measures: Vec<Measure> = s.objectives.iter().map(|o| o.measure).collect();
        assert_eq!(
            measures,
            [
                Measure::Ttft,
                Measure::TtftService,
                Measure::Itl,
                Measure::Tpot,
                Measure::FirstEvent,
                Measure::EventGap
            ]
        );
        assert_eq!(Measure::Ttft.needs(), Some("--llm"));
        assert_eq!(Measure::EventGap.needs(), Some("--stream or --llm"));
        assert_eq!(Measure::FirstByte.needs(), None);
        // Only the summary's percentiles can be read of them.
        let e = SloSet::parse("tpot.p95<1s").unwrap_err().to_string();
        assert!(e.contains("tpot is kept at p50"), "{e}");
        // Judged on the phase's summary: ttft p99 is 400 ms here, tpot has no samples.
        let mut h = candor_core::hist::new_histogram();
        for v in [100_000_000u64, 400_000_000] {
            h.record(v).unwrap();
        }
        let mut phase = PhaseResults::from_recorder(
            &Recorder::new(),
            &candor_core::hist::new_histogram(),
            Default::default(),
            1.0,
            None,
        );
        phase.ttft = Some(Summary::of(&h));
        let verdicts = SloSet::parse("ttft.p99<500ms,ttft.p50<50ms,tpot.p99<1s")
            .unwrap()
            .evaluate_phase(&phase);
        let pass: Vec<bool> = verdicts.iter().map(|v| v.pass).collect();
        assert_eq!(pass, [true, false, false]);
        assert!(verdicts[2].note.contains("no tpot values"), "{verdicts:?}");
    }

    #[test]
    fn malformed_expressions_say_what_is_wrong() {
        let cases = [
            ("", "no objectives"),
            ("p99<10ms,", "empty objective"),
            ("p99>10ms", "only upper limits"),
            ("rate<95%", "lower limit"),
            ("rate>=95", "percentage"),
            ("rate>=120%", "between 0% and 100%"),
            ("send_lag.errors<1%", "without a measure"),
            ("queue.p99<1ms", "unknown measure 'queue'"),
            ("send_lag.p101<1ms", "outside (0, 100)"),
            ("service_time.p99<1", "add a unit"),
            ("send_lag.q5<1ms", "unknown measure"),
            ("p99=10ms", "only upper limits"),
            ("p99 10ms", "missing '<'"),
            ("p99<", "missing limit"),
            ("<10ms", "missing measure"),
            ("q99<10ms", "unknown measure"),
            ("pxx<10ms", "not a percentile"),
            ("p101<1s", "outside (0, 100)"),
            ("p0<1s", "outside (0, 100)"),
            ("p99<10parsecs", "invalid duration"),
            ("p99<1%", "not a percentage"),
            ("errors<0.1", "percentage"),
            ("errors<abc%", "not a percentage"),
            ("errors<120%", "between 0% and 100%"),
            ("p99<0ms", "never be met"),
            ("p99<1ms<2ms", "more than one"),
            ("rate>=9%>1%", "more than one"),
            ("p99<10", "add a unit, e.g. p99<10ms"),
            ("max<=1.5", "add a unit, e.g. max<=1.5ms"),
            ("mean<0", "add a unit"),
        ];
        for (text, want) in cases {
            let e = SloSet::parse(text).expect_err(text).to_string();
            assert!(e.contains(want), "{text:?}: {e}");
            assert!(!e.contains('\n'), "one line: {e}");
        }
    }

    fn run_with(values_ns: &[u64], failed: u64) -> RunResults {
        let mut rec = candor_core::Recorder::new();
        for &v in values_ns {
            rec.record(v, 10, 0);
        }
        RunResults {
            candor_version: "t".into(),
            ..RunResults::new(
                candor_core::results::Kind::Run,
                candor_core::results::Mode::OpenLoop,
                "x",
                serde_json::Value::Null,
                candor_core::results::PhaseResults::from_recorder(
                    &rec,
                    &candor_core::new_histogram(),
                    candor_core::results::RequestCounts {
                        intended: values_ns.len() as u64 + failed,
                        completed: values_ns.len() as u64,
                        failed,
                        ..Default::default()
                    },
                    1.0,
                    Some(1000.0),
                ),
            )
        }
    }

    #[test]
    fn evaluates_on_response_time_with_strict_and_inclusive_limits() {
        // 1..=1000 ns: p99 = 990 ns, max = 1000 ns (values below 2048 are exact at 3 digits).
        let values: Vec<u64> = (1..=1000).collect();
        let r = run_with(&values, 2);
        let v = SloSet::parse(
            "p99<991ns,p99<990ns,p99<=990ns,max<1us,max<=1us,errors<0.1%,errors<0.2%,p99.5<996ns",
        )
        .unwrap()
        .evaluate(&r);
        let pass: Vec<bool> = v.iter().map(|v| v.pass).collect();
        assert_eq!(
            pass,
            [true, false, true, false, true, false, true, true],
            "{v:?}"
        );
        assert_eq!(v[0].measured, Some(990.0));
        // 2 failed of 1002 intended is 0.1996%.
        assert!((v[5].measured.unwrap() - 2.0 / 1002.0).abs() < 1e-12);
        // p99 from 1,000 samples is below the 10,000 the rule of thumb asks for.
        assert!(v[0].note.contains("10,000"), "{}", v[0].note);
        let text = render(&v);
        assert!(text.contains("FAIL") && text.contains("PASS"));
    }

    #[test]
    fn errors_count_unfinished_requests_and_empty_inputs_fail() {
        let mut r = run_with(&[100, 200], 0);
        r.main.requests.intended += 1;
        r.main.requests.in_flight_at_end = 1;
        let v = SloSet::parse("errors<1%").unwrap().evaluate(&r);
        assert!(!v[0].pass);
        let empty = run_with(&[], 0);
        let v = SloSet::parse("p99<1s,errors<1%").unwrap().evaluate(&empty);
        assert!(v.iter().all(|v| !v.pass && v.measured.is_none()), "{v:?}");
    }

    #[test]
    fn parses_measures_and_the_rate() {
        let s = SloSet::parse(
            "rate>=95%,rate>50%,send_lag.p99<1ms,service_time.p99.9<=2ms,send_lag.max<5ms,response_time.mean<3ms",
        )
        .unwrap();
        let o = &s.objectives;
        assert_eq!((o[0].metric, o[0].inclusive), (Metric::Rate, true));
        assert!((o[0].limit - 0.95).abs() < 1e-12);
        assert_eq!((o[1].metric, o[1].inclusive), (Metric::Rate, false));
        assert_eq!(o[2].measure, Measure::SendLag);
        assert_eq!(o[2].metric, Metric::Percentile(99.0));
        assert_eq!(o[2].limit, 1e6);
        assert_eq!(o[3].measure, Measure::ServiceTime);
        assert_eq!(o[3].metric, Metric::Percentile(99.9));
        assert!(o[3].inclusive);
        assert_eq!((o[4].measure, o[4].metric), (Measure::SendLag, Metric::Max));
        assert_eq!(
            (o[5].measure, o[5].metric),
            (Measure::ResponseTime, Metric::Mean)
        );
        assert_eq!(
            SloSet::parse("p99<1ms").unwrap().objectives[0].measure,
            Measure::ResponseTime
        );
        // The rate is a lower limit: 95% passes >=95% and fails >95%.
        assert!(o[0].holds(0.95) && !o[0].holds(0.9499));
        assert!(SloSet::parse("rate>95%").unwrap().objectives[0].holds(0.951));
        assert!(!SloSet::parse("rate>95%").unwrap().objectives[0].holds(0.95));
    }

    #[test]
    fn evaluates_the_rate_and_other_measures() {
        // run_with records service 10 ns and send lag 0 for every value; target 1000/s over 1 s.
        let values: Vec<u64> = (1..=950).collect();
        let r = run_with(&values, 0);
        let v = SloSet::parse("rate>=95%,rate>95%,service_time.p99<11ns,service_time.max<10ns,send_lag.max<=1ns,send_lag.p50<2ns")
            .unwrap_or_else(|e| panic!("{e}"))
            .evaluate(&r);
        let pass: Vec<bool> = v.iter().map(|v| v.pass).collect();
        assert_eq!(pass, [true, false, true, false, true, true], "{v:?}");
        assert!((v[0].measured.unwrap() - 0.95).abs() < 1e-12);
        assert_eq!(v[2].measured, Some(10.0));
        let text = render(&v);
        assert!(text.contains("rate = 95.00% of target"), "{text}");
        assert!(text.contains("service time = "), "{text}");
        // A closed loop has no target: the rate objective cannot be measured, and fails.
        let mut closed = run_with(&values, 0);
        closed.main.rate.target_per_s = None;
        let v = SloSet::parse("rate>=95%").unwrap().evaluate(&closed);
        assert!(!v[0].pass && v[0].measured.is_none() && v[0].note.contains("closed loop"));
    }

    #[test]
    fn each_stage_is_judged_on_its_own_books() {
        use candor_core::workload_results::StageResults;
        let stage = |values: Vec<u64>, start_s: f64, from: f64, to: f64| StageResults {
            start_s,
            from_per_s: from,
            to_per_s: to,
            results: crate::test_support::run_of(&values, Some((from + to) / 2.0), "open-loop")
                .main,
        };
        // 100 requests in each 1 s stage: a quiet hold (1..=100 ns), then a ramp whose target
        // averages 150/s and whose latencies are ten times higher.
        let mut r = run_with(&(1..=200).collect::<Vec<u64>>(), 0);
        r.workload.stages = vec![
            stage((1..=100).collect(), 0.0, 100.0, 100.0),
            stage((1000..=1099).collect(), 1.0, 100.0, 200.0),
        ];
        let set = SloSet::parse("p99<500ns,rate>=90%").unwrap();
        // The whole run: p99 of 1..=200 is 198 ns; 200 completed of 1000/s is 20%.
        let whole = set.evaluate(&r);
        assert!(whole[0].pass && !whole[1].pass);
        set.judge_stages(&mut r);
        let verdicts = |k: usize| {
            r.workload.stages[k]
                .results
                .analysis
                .as_ref()
                .unwrap()
                .slo
                .clone()
        };
        assert!(verdicts(0)[0].pass, "{:?}", verdicts(0));
        assert_eq!(verdicts(0)[0].measured, Some(99.0));
        assert!(verdicts(0)[1].pass, "100 of 100/s");
        assert!(!verdicts(1)[0].pass);
        assert_eq!(verdicts(1)[0].measured, Some(1098.0));
        // 100 in a stage whose target averages 150/s: 66.7%.
        assert!(!verdicts(1)[1].pass);
        assert!((verdicts(1)[1].measured.unwrap() - 2.0 / 3.0).abs() < 1e-9);
        let text = render_stages(&r.workload.stages);
        assert!(text.starts_with("objectives per stage (the pass or fail above is the whole run's):\n  stage 1 (0.0-1.0s 100.0/s):\n    SLO p99<500ns"), "{text}");
        assert!(
            text.contains("  stage 2 (1.0-2.0s 100.0/s..200.0/s):\n"),
            "{text}"
        );
        assert_eq!(text.matches("FAIL").count(), 2, "{text}");
        // No objectives: nothing judged, nothing shown.
        let mut plain = run_with(&[1, 2, 3], 0);
        plain.workload.stages = vec![stage(vec![1, 2], 0.0, 2.0, 2.0)];
        SloSet::default().judge_stages(&mut plain);
        assert!(plain.workload.stages[0].results.analysis.is_none());
        assert!(render_stages(&plain.workload.stages).is_empty());
    }
}

#[cfg(test)]
mod goodput_tests;
