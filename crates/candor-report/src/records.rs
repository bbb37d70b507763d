//! Reading a `--records` file back (one JSON line per request): its histograms and counts are
//! rebuilt by the same rules the engine books by, so that `candor report FILE.jsonl` shows the
//! run's own percentiles within the histograms' precision.

use candor_core::hist::record_clamped;
use candor_core::recorded::RecordedConfig;
use candor_core::results::{FailureClass, PhaseResults, StreamResults};
use candor_core::results::{Kind, Mode, RequestCounts, RunResults};
use candor_core::{new_histogram, Histo, Recorder, Summary};
use serde::Deserialize;

/// One line as `--records` writes it (docs/outputs.md); absent times did not happen.
#[derive(Debug, Deserialize)]
struct Line {
    #[serde(default)]
    run: u32,
    phase: String,
    outcome: String,
    class: Option<FailureClass>,
    #[serde(default)]
    answered: bool,
    status: Option<u16>,
    intended_ns: u64,
    sent_ns: Option<u64>,
    first_byte_ns: Option<u64>,
    first_event_ns: Option<u64>,
    first_token_ns: Option<u64>,
    end_ns: u64,
    events: Option<u64>,
    last_token_ns: Option<u64>,
    output_tokens: Option<u64>,
    input_tokens: Option<u64>,
    cached_tokens: Option<u64>,
    /// Streams: the inter-token latencies and the gaps between events, as the engine booked
    /// them, and how many more the writer cut (not in the line).
    #[serde(default)]
    itl_ns: Vec<u64>,
    #[serde(default)]
    event_gaps_ns: Vec<u64>,
    #[serde(default)]
    gaps_cut: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum RecordsReadError {
    #[error("line {line}: not a --records line: {reason}")]
    Line { line: usize, reason: String },
    #[error("line {line}: unknown {what} {value:?}")]
    Unknown {
        line: usize,
        what: &'static str,
        value: String,
    },
}

/// True when `text` opens as a `--records` file.
pub fn looks_like_records(text: &str) -> bool {
    let t = text.trim_start();
    t.starts_with("{\"seq\":") || t.starts_with("{\"run\":")
}

/// One phase's books, as the engine keeps them.
struct Phase {
    rec: Recorder,
    unfinished: Histo,
    first_event: Histo,
    ttft: Histo,
    ttft_service: Histo,
    tpot: Histo,
    itl: Histo,
    event_gap: Histo,
    gaps_cut: u64,
    /// Responses read as streams: those that delivered an event, and their events.
    streamed: Option<(u64, u64)>,
    /// LLM lines: their output, input and cached tokens summed (as the engine books them).
    tokens: Option<candor_core::results::LlmTokens>,
    counts: RequestCounts,
    /// Per run (`--repeat`; 0: a single run): the first and last intended send, and how many.
    spans: std::collections::BTreeMap<u32, (u64, u64, u64)>,
}

impl Phase {
    fn new() -> Phase {
        Phase {
            rec: Recorder::new(),
            unfinished: new_histogram(),
            first_event: new_histogram(),
            ttft: new_histogram(),
            ttft_service: new_histogram(),
            tpot: new_histogram(),
            itl: new_histogram(),
            event_gap: new_histogram(),
            gaps_cut: 0,
            streamed: None,
            tokens: None,
            counts: RequestCounts::default(),
            spans: Default::default(),
        }
    }

    fn book(&mut self, l: &Line, n: usize) -> Result<(), RecordsReadError> {
        let c = &mut self.counts;
        c.intended += 1;
        let span = self.spans.entry(l.run).or_insert((u64::MAX, 0, 0));
        *span = (
            span.0.min(l.intended_ns),
            span.1.max(l.intended_ns),
            span.2 + 1,
        );
        let age = l.end_ns.saturating_sub(l.intended_ns);
        let of = |t: Option<u64>| t.map(|t| t.saturating_sub(l.intended_ns));
        if let Some(t) = of(l.first_event_ns) {
            record_clamped(&mut self.first_event, t);
        }
        if let Some(t) = of(l.first_token_ns) {
            record_clamped(&mut self.ttft, t);
        }
        if let (Some(t), Some(s)) = (l.first_token_ns, l.sent_ns) {
            record_clamped(&mut self.ttft_service, t.saturating_sub(s));
        }
        // The time per output token of a stream that succeeded, as the stream reader takes it.
        if let (Some(f), Some(t), Some(n)) = (l.first_token_ns, l.last_token_ns, l.output_tokens) {
            if n >= 2 && t >= f {
                record_clamped(&mut self.tpot, (t - f) / (n - 1));
            }
        }
        // Zero-length gaps at the histogram's 1 ns floor and long ones clamped, as booked.
        for &g in &l.itl_ns {
            c.clamped_values += record_clamped(&mut self.itl, g) as u64;
        }
        for &g in &l.event_gaps_ns {
            c.clamped_values += record_clamped(&mut self.event_gap, g) as u64;
        }
        self.gaps_cut += l.gaps_cut;
        if l.output_tokens.is_some() || l.input_tokens.is_some() || l.cached_tokens.is_some() {
            let t = self.tokens.get_or_insert_with(Default::default);
            t.output_tokens += l.output_tokens.unwrap_or(0);
            if let Some(n) = l.input_tokens {
                t.input_tokens += n;
                t.input_counted += 1;
            }
            if let Some(n) = l.cached_tokens {
                t.cached_tokens += n;
                t.cached_counted += 1;
            }
        }
        if let Some(e) = l.events {
            let (r, n) = self.streamed.get_or_insert((0, 0));
            *r += u64::from(e > 0);
            *n += e;
        }
        match l.outcome.as_str() {
            "unfinished" => {
                c.in_flight_at_end += 1;
                match l.sent_ns {
                    Some(_) => c.sent_unanswered += 1,
                    None => c.queued_unsent += 1,
                }
                record_clamped(&mut self.unfinished, age);
                return Ok(());
            }
            "completed" => c.completed += 1,
            "failed" => {
                c.failed += 1;
                let class = l.class.ok_or_else(|| RecordsReadError::Line {
                    line: n,
                    reason: "a failed request without its class".into(),
                })?;
                *c.errors.get_mut(class) += 1;
            }
            other => {
                return Err(RecordsReadError::Unknown {
                    line: n,
                    what: "outcome",
                    value: other.into(),
                })
            }
        }
        if let Some(s) = l.status {
            c.status.count(s);
        }
        if let Some(t) = of(l.first_byte_ns) {
            self.rec.record_first_byte(t);
        }
        let service = l.sent_ns.map(|s| l.end_ns.saturating_sub(s));
        if l.outcome == "completed" || l.answered {
            let lag = l.sent_ns.map_or(0, |s| s.saturating_sub(l.intended_ns));
            self.rec.record(age, service.unwrap_or(age), lag);
        } else if l.class == Some(FailureClass::Timeout) {
            // A timeout is at least that slow (as the engine books it): response and service.
            c.clamped_values += record_clamped(&mut self.rec.response, age) as u64;
            if let Some(s) = service {
                c.clamped_values += record_clamped(&mut self.rec.service, s) as u64;
            }
        }
        Ok(())
    }

    /// The full histograms of its stream measures, as a run keeps them in `extra` (the HTML
    /// spectra, `compare --measure itl` and `merge` read them there).
    fn stream_histograms(&self) -> Vec<candor_core::results::NamedHistogram> {
        use candor_core::stream_measures::StreamMeasure as M;
        [
            (M::FirstEvent, &self.first_event),
            (M::EventGap, &self.event_gap),
            (M::Ttft, &self.ttft),
            (M::TtftService, &self.ttft_service),
            (M::Itl, &self.itl),
            (M::Tpot, &self.tpot),
        ]
        .into_iter()
        .filter(|(_, h)| !h.is_empty())
        .map(|(m, h)| candor_core::results::NamedHistogram::of(m.name(), h))
        .collect()
    }

    /// The phase's results; its length is estimated from its intended sends (the first to the
    /// last, plus one mean gap between them), summed over the runs of a `--repeat` file.
    fn results(&self) -> PhaseResults {
        let n = self.counts.intended;
        let duration_s: f64 = self
            .spans
            .values()
            .filter(|s| s.2 >= 2)
            .map(|&(first, last, k)| (last - first) as f64 * k as f64 / (k - 1) as f64 / 1e9)
            .sum();
        let target = (duration_s > 0.0).then(|| n as f64 / duration_s);
        let mut counts = self.counts;
        counts.clamped_values += self.rec.clamped;
        let mut p =
            PhaseResults::from_recorder(&self.rec, &self.unfinished, counts, duration_s, target);
        p.first_event = (!self.first_event.is_empty()).then(|| Summary::of(&self.first_event));
        p.ttft = (!self.ttft.is_empty()).then(|| Summary::of(&self.ttft));
        p.ttft_service = (!self.ttft_service.is_empty()).then(|| Summary::of(&self.ttft_service));
        p.tpot = (!self.tpot.is_empty()).then(|| Summary::of(&self.tpot));
        p.itl = (!self.itl.is_empty()).then(|| Summary::of(&self.itl));
        p.event_gap = (!self.event_gap.is_empty()).then(|| Summary::of(&self.event_gap));
        // Failed streams by name and how each count of output tokens was made are not in the
        // lines: the section shows what they carry.
        let llm = self.tokens.map(|mut t| {
            t.set_rates(duration_s);
            t
        });
        p.stream = self.streamed.map(|(responses, events)| StreamResults {
            responses,
            events,
            events_per_response: if responses > 0 {
                events as f64 / responses as f64
            } else {
                0.0
            },
            failures: Default::default(),
            llm,
            goodput: None,
        });
        p
    }
}

/// The results of a `--records` file (`source` names it).
pub fn results_from_records(text: &str, source: &str) -> Result<RunResults, RecordsReadError> {
    let mut phases = [Phase::new(), Phase::new()];
    for (i, raw) in text.lines().enumerate() {
        if raw.trim().is_empty() {
            continue;
        }
        let n = i + 1;
        let l: Line = serde_json::from_str(raw).map_err(|e| RecordsReadError::Line {
            line: n,
            reason: e.to_string(),
        })?;
        let phase = match l.phase.as_str() {
            "warmup" => 0,
            "measured" => 1,
            other => {
                return Err(RecordsReadError::Unknown {
                    line: n,
                    what: "phase",
                    value: other.into(),
                })
            }
        };
        phases[phase].book(&l, n)?;
    }
    let main = phases[1].results();
    let config = RecordedConfig::Other(serde_json::json!({ "records": source }));
    let mut r = RunResults::new(Kind::Run, Mode::OpenLoop, source, config, main);
    if phases[0].counts.intended > 0 {
        r.warmup = Some(phases[0].results());
    }
    r.extra = phases[1].stream_histograms();
    let cut: u64 = phases.iter().map(|p| p.gaps_cut).sum();
    if cut > 0 {
        r.warnings.push(format!(
            "{cut} gaps between events were cut from the file (past its lines' limit): ITL and \
             event gap are of the gaps it holds"
        ));
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "\
{\"seq\":0,\"phase\":\"warmup\",\"outcome\":\"completed\",\"status\":200,\"request\":0,\"thread\":0,\"intended_ns\":0,\"sent_ns\":10,\"first_byte_ns\":50,\"end_ns\":60}
{\"seq\":1,\"phase\":\"measured\",\"outcome\":\"completed\",\"status\":200,\"thread\":1,\"intended_ns\":1000,\"sent_ns\":1100,\"first_byte_ns\":1500,\"end_ns\":2000}
{\"seq\":2,\"phase\":\"measured\",\"outcome\":\"failed\",\"class\":\"status\",\"answered\":true,\"status\":503,\"thread\":0,\"intended_ns\":2000,\"sent_ns\":2000,\"first_byte_ns\":2400,\"end_ns\":2400}
{\"seq\":3,\"phase\":\"measured\",\"outcome\":\"failed\",\"class\":\"timeout\",\"answered\":false,\"thread\":1,\"intended_ns\":3000,\"sent_ns\":3000,\"end_ns\":9000}
{\"seq\":4,\"phase\":\"measured\",\"outcome\":\"unfinished\",\"thread\":0,\"intended_ns\":4000,\"end_ns\":9000}
";

    #[test]
    fn lines_are_booked_as_the_engine_books_them() {
        assert!(looks_like_records(FILE));
        let r = results_from_records(FILE, "r.jsonl").unwrap();
        let c = &r.main.requests;
        assert_eq!(
            (
                c.intended,
                c.completed,
                c.failed,
                c.in_flight_at_end,
                c.queued_unsent
            ),
            (4, 1, 2, 1, 1)
        );
        assert_eq!((c.errors.status, c.errors.timeout), (1, 1));
        assert_eq!((c.status.s2xx, c.status.s5xx), (1, 1));
        // Response times 1000 and 400 (answered) and 6000 (the timeout's age).
        assert_eq!(r.main.response_time.count, 3);
        // Within the histograms' three significant digits.
        let max = r.main.response_time.max_ns;
        assert!((6000..=6006).contains(&max), "{max}");
        assert_eq!(r.main.send_lag.max_ns, 100);
        // Four intended sends 1000 ns apart span 4 us.
        assert!((r.main.duration_s - 4e-6).abs() < 1e-12);
        assert_eq!(r.warmup.as_ref().unwrap().requests.intended, 1);
    }

    #[test]
    fn the_runs_of_a_repeat_file_add_their_lengths() {
        let line = |run, t| {
            format!("{{\"run\":{run},\"seq\":0,\"phase\":\"measured\",\"outcome\":\"unfinished\",\"thread\":0,\"intended_ns\":{t},\"end_ns\":{t}}}\n")
        };
        // Two runs of three sends 1 s apart: 3 s each.
        let text: String = [1, 2]
            .iter()
            .flat_map(|&run| (0..3).map(move |k| line(run, k * 1_000_000_000)))
            .collect();
        let r = results_from_records(&text, "r.jsonl").unwrap();
        assert_eq!(r.main.requests.intended, 6);
        assert!(
            (r.main.duration_s - 6.0).abs() < 1e-9,
            "{}",
            r.main.duration_s
        );
    }

    #[test]
    fn gaps_in_the_lines_rebuild_itl_and_event_gap_and_a_cut_is_said() {
        let text = "\
{\"seq\":0,\"phase\":\"measured\",\"outcome\":\"completed\",\"thread\":0,\"intended_ns\":0,\"end_ns\":90,\"events\":4,\"itl_ns\":[10,1000],\"event_gaps_ns\":[10,0,1000]}
{\"seq\":1,\"phase\":\"measured\",\"outcome\":\"completed\",\"thread\":0,\"intended_ns\":100,\"end_ns\":190,\"events\":2,\"itl_ns\":[30],\"event_gaps_ns\":[30],\"gaps_cut\":5,\"gaps_cut_max_ns\":7}
{\"seq\":2,\"phase\":\"measured\",\"outcome\":\"completed\",\"thread\":0,\"intended_ns\":200,\"end_ns\":290}
";
        let r = results_from_records(text, "r.jsonl").unwrap();
        use candor_core::stream_measures::StreamMeasure;
        let full = r.stream_histogram(StreamMeasure::Itl).unwrap().unwrap();
        assert_eq!((full.len(), full.max()), (3, 1000));
        assert!(r.stream_histogram(StreamMeasure::Ttft).is_none());
        let itl = r.main.itl.as_ref().unwrap();
        assert_eq!((itl.count, itl.min_ns, itl.max_ns), (3, 10, 1000));
        let gap = r.main.event_gap.as_ref().unwrap();
        // The zero-length gap is booked at the histogram's 1 ns floor, as the engine books it.
        assert_eq!((gap.count, gap.min_ns, gap.max_ns), (4, 1, 1000));
        assert_eq!(
            r.warnings,
            vec![
                "5 gaps between events were cut from the file (past its lines' limit): ITL and \
                  event gap are of the gaps it holds"
                    .to_string()
            ]
        );
        // A file without gaps (a run without streams, or written before them) has neither.
        let r = results_from_records(FILE, "r.jsonl").unwrap();
        assert!(r.main.itl.is_none() && r.main.event_gap.is_none() && r.warnings.is_empty());
    }

    #[test]
    fn the_tokens_of_the_lines_are_summed_with_the_responses_that_said_them() {
        let text = "\
{\"seq\":0,\"phase\":\"measured\",\"outcome\":\"completed\",\"thread\":0,\"intended_ns\":0,\"end_ns\":90,\"events\":4,\"input_tokens\":40,\"output_tokens\":3,\"cached_tokens\":32}
{\"seq\":1,\"phase\":\"measured\",\"outcome\":\"completed\",\"thread\":0,\"intended_ns\":100,\"end_ns\":190,\"events\":4,\"input_tokens\":40,\"output_tokens\":3}
{\"seq\":2,\"phase\":\"measured\",\"outcome\":\"failed\",\"class\":\"connect\",\"thread\":0,\"intended_ns\":200,\"end_ns\":290}
";
        let r = results_from_records(text, "r.jsonl").unwrap();
        let t = r.main.stream.as_ref().unwrap().llm.unwrap();
        assert_eq!(
            (
                t.output_tokens,
                t.input_tokens,
                t.input_counted,
                t.cached_tokens,
                t.cached_counted
            ),
            (6, 80, 2, 32, 1)
        );
        // A file without tokens has none.
        let r = results_from_records(FILE, "r.jsonl").unwrap();
        assert!(r.main.stream.is_none());
    }

    #[test]
    fn a_bad_line_names_its_number() {
        let e = results_from_records("{\"seq\":0}\n", "x").unwrap_err();
        assert!(
            e.to_string().starts_with("line 1: not a --records line"),
            "{e}"
        );
    }
}
