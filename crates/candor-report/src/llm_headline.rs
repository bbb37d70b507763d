//! What a streamed or LLM run's reports lead with: TTFT, TPOT and ITL, goodput and output
//! tokens per second (the figures an LLM serving benchmark is read for), and the run's LLM
//! settings as its recorded command line gives them. Text and HTML both take them from here.

use candor_core::phase_results::Goodput;
use candor_core::results::{PhaseResults, RunResults};
use candor_core::units::format_ns;
use candor_core::Summary;

/// The headline figures of a phase with streams; each is `None` when the run did not record it
/// (a `--stream` run has no TTFT, a run without `--goodput` no goodput).
#[derive(Debug, Clone, PartialEq)]
pub struct StreamHeadline {
    pub ttft: Option<Summary>,
    pub ttft_service: Option<Summary>,
    pub tpot: Option<Summary>,
    pub itl: Option<Summary>,
    pub first_event: Option<Summary>,
    pub goodput: Option<Goodput>,
    pub output_tokens_per_s: Option<f64>,
    /// The input tokens the server's prefix cache served and all input tokens, when its usage
    /// said cached tokens.
    pub cached_tokens: Option<(u64, u64)>,
    /// Embeddings (`--llm openai-embeddings`): their latency (the response time), inputs and
    /// input tokens per second, in place of the token measures they do not have.
    pub embeddings: Option<(Summary, f64, f64)>,
}

impl StreamHeadline {
    /// The headline of `p`, `None` when the phase had no streams.
    pub fn of(p: &PhaseResults) -> Option<StreamHeadline> {
        let s = p.stream.as_ref()?;
        Some(StreamHeadline {
            ttft: p.ttft.clone(),
            ttft_service: p.ttft_service.clone(),
            tpot: p.tpot.clone(),
            itl: p.itl.clone(),
            first_event: p.first_event.clone(),
            goodput: s.goodput.clone(),
            output_tokens_per_s: s.llm.map(|t| t.output_tokens_per_s),
            cached_tokens: s
                .llm
                .filter(|t| t.cached_counted > 0)
                .map(|t| (t.cached_tokens, t.input_tokens)),
            embeddings: s.llm.filter(|t| t.inputs > 0).map(|t| {
                (
                    p.response_time.clone(),
                    t.inputs_per_s,
                    t.input_tokens_per_s,
                )
            }),
        })
    }

    /// The headline as (label, value) pairs in the order reports show them: TTFT (from the
    /// intended send; from the actual send beside it), TPOT, ITL, goodput, tokens/s. A run
    /// without TTFT (`--stream`) leads with its first event.
    pub fn figures(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut pair = |name: &str, s: &Option<Summary>| {
            if let Some(s) = s.as_ref().filter(|s| s.count > 0) {
                out.push((format!("{name} p50"), at(s, 50.0)));
                out.push((format!("{name} p99"), at(s, 99.0)));
            }
        };
        if let Some((latency, inputs, tokens)) = &self.embeddings {
            pair("latency", &Some(latency.clone()));
            out.push(("inputs/s".into(), format!("{inputs:.1}")));
            out.push(("input tokens/s".into(), format!("{tokens:.1}")));
            return out;
        }
        if self.ttft.is_some() {
            pair("TTFT", &self.ttft);
        } else {
            pair("first event", &self.first_event);
        }
        pair("TPOT", &self.tpot);
        pair("ITL", &self.itl);
        if let Some(g) = &self.goodput {
            out.push((
                "goodput".into(),
                format!("{:.2} req/s ({:.1}%)", g.per_s, g.fraction * 100.0),
            ));
        }
        if let Some(t) = self.output_tokens_per_s {
            out.push(("output tokens/s".into(), format!("{t:.1}")));
        }
        if let Some((cached, input)) = self.cached_tokens {
            let share = if input > 0 {
                format!(" ({:.1}% of input)", cached as f64 * 100.0 / input as f64)
            } else {
                String::new()
            };
            out.push((
                "cached input tokens".into(),
                format!("{}{share}", candor_core::units::format_count(cached)),
            ));
        }
        out
    }

    /// The text report's lines (two spaces in, like the lines above them).
    pub fn text(&self) -> String {
        let figures = self.figures();
        if figures.is_empty() {
            return String::new();
        }
        let mut out = String::from("  headline: ");
        let parts: Vec<String> = figures.iter().map(|(k, v)| format!("{k} {v}")).collect();
        out.push_str(&parts.join(" · "));
        out.push('\n');
        if let (Some(t), Some(ts)) = (&self.ttft, &self.ttft_service) {
            if t.count > 0 && ts.count > 0 {
                out.push_str(&format!(
                    "            TTFT p99 from the actual send (what a client timing from its own send reports): {}\n",
                    at(ts, 99.0)
                ));
            }
        }
        out
    }
}

/// The text report's lines for a streamed or LLM run: its headline, then its settings; empty
/// for other runs.
pub fn text_lead(r: &RunResults) -> String {
    let mut out = StreamHeadline::of(&r.main).map_or(String::new(), |h| h.text());
    let settings = settings(r);
    if !settings.is_empty() {
        let parts: Vec<String> = settings.iter().map(|(k, v)| format!("{k} {v}")).collect();
        out.push_str(&format!("  settings: {}\n", parts.join(" \u{b7} ")));
    }
    out
}

fn at(s: &Summary, p: f64) -> String {
    s.at(p)
        .map_or_else(|| "no data".to_string(), |v| format_ns(v as f64))
}

/// The flags of an LLM run's settings, with their labels, as the command line spells them.
const SETTINGS: [(&str, &str); 14] = [
    ("--llm", "API"),
    ("--model", "model"),
    ("--prompt-tokens", "prompt tokens"),
    ("--output-tokens", "output tokens (budget)"),
    ("--prompts", "prompts file"),
    ("--dataset", "dataset"),
    ("--tokenizer", "tokenizer"),
    ("--llm-body", "extra body fields"),
    ("--max-concurrency", "requests in flight (cap)"),
    ("--goodput", "goodput objectives"),
    ("--timeout", "timeout"),
    ("--stream-timeout", "stream timeout"),
    ("--event-timeout", "event timeout"),
    ("--stream", "stream framing"),
];

/// The settings of a streamed or LLM run: those its results' `config.llm` records (in effect,
/// defaults included), then the other flags its recorded command line carries, in a fixed
/// order (results without `config.llm`: the command line alone, a flag left at its default
/// not shown: the report invents nothing). `-T` is `--timeout`. Empty for
/// results without a command line (logs, merges) or without these flags.
pub fn settings(r: &RunResults) -> Vec<(&'static str, String)> {
    let args = &r.command_line;
    let value_of = |flag: &str| -> Option<String> {
        let mut found = None;
        for (i, a) in args.iter().enumerate() {
            let short = flag == "--timeout" && a == "-T";
            if a == flag || short {
                found = args.get(i + 1).cloned();
            } else if let Some(v) = a.strip_prefix(flag).and_then(|v| v.strip_prefix('=')) {
                found = Some(v.to_string());
            } else if let Some(v) = a
                .strip_prefix("-T")
                .filter(|v| flag == "--timeout" && !v.is_empty())
            {
                found = Some(v.trim_start_matches('=').to_string());
            }
        }
        found
    };
    // Results that record the LLM settings in effect (`config.llm`) give them, defaults
    // included; the command line adds only what those do not cover.
    let recorded = r.run_config().and_then(|c| c.llm);
    if value_of("--llm").is_none() && value_of("--stream").is_none() && recorded.is_none() {
        return Vec::new();
    }
    let mut rows = recorded.as_ref().map_or_else(Vec::new, |l| l.rows());
    rows.extend(
        SETTINGS
            .iter()
            .filter(|(flag, _)| recorded.is_none() || !RECORDED_FLAGS.contains(flag))
            // Bounds recorded as judged (--goodput's, or those --slo set) are the row already.
            .filter(|(flag, _)| {
                *flag != "--goodput" || recorded.as_ref().is_none_or(|l| l.goodput.is_none())
            })
            .filter_map(|(flag, label)| value_of(flag).map(|v| (*label, v))),
    );
    rows
}

/// The flags whose values `config.llm` records.
const RECORDED_FLAGS: [&str; 9] = [
    "--llm",
    "--model",
    "--prompt-tokens",
    "--output-tokens",
    "--prompts",
    "--tokenizer",
    "--llm-body",
    "--stream-timeout",
    "--event-timeout",
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic::synthetic_run;
    use candor_core::phase_results::{LlmTokens, StreamResults};
    use candor_core::{new_histogram, Summary};

    fn summary(values: &[u64]) -> Summary {
        let mut h = new_histogram();
        for &v in values {
            h.record(v).unwrap();
        }
        Summary::of(&h)
    }

    fn llm_phase() -> PhaseResults {
        let mut p = synthetic_run(1, 2, 100, 1_000_000, 0).main;
        p.ttft = Some(summary(&[50_000_000; 99]));
        p.ttft_service = Some(summary(&[40_000_000; 99]));
        p.tpot = Some(summary(&[10_000_000; 99]));
        p.itl = Some(summary(&[10_000_000; 99]));
        p.stream = Some(StreamResults {
            responses: 99,
            events: 2079,
            events_per_response: 21.0,
            failures: Default::default(),
            llm: Some(LlmTokens {
                output_tokens: 1980,
                output_tokens_per_s: 198.0,
                counted_from_usage: 99,
                counted_from_chunks: 0,
                ..Default::default()
            }),
            goodput: Some(Goodput::of("ttft<500ms".into(), 90, 99, 100, 10.0)),
        });
        p
    }

    #[test]
    fn cached_input_tokens_and_their_share_are_a_figure_when_the_server_said_them() {
        let mut p = llm_phase();
        let last = |p: &PhaseResults| StreamHeadline::of(p).unwrap().figures().pop().unwrap();
        assert_eq!(last(&p).0, "output tokens/s", "no cached tokens said");
        let t = p.stream.as_mut().unwrap().llm.as_mut().unwrap();
        (t.input_tokens, t.cached_tokens, t.cached_counted) = (3072, 2112, 12);
        assert_eq!(
            last(&p),
            (
                "cached input tokens".to_string(),
                "2,112 (68.8% of input)".to_string()
            )
        );
    }

    #[test]
    fn an_embeddings_run_leads_with_latency_inputs_and_input_tokens() {
        let mut p = llm_phase();
        p.ttft = None;
        p.tpot = None;
        p.itl = None;
        p.response_time = summary(&[20_000_000; 99]);
        let s = p.stream.as_mut().unwrap();
        s.goodput = None;
        s.llm = Some(LlmTokens {
            inputs: 40,
            inputs_per_s: 4.0,
            input_tokens_per_s: 48.0,
            ..Default::default()
        });
        let h = StreamHeadline::of(&p).unwrap();
        let figures = h.figures();
        let names: Vec<&str> = figures.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            names,
            ["latency p50", "latency p99", "inputs/s", "input tokens/s"]
        );
        assert_eq!(figures[2].1, "4.0");
        assert_eq!(figures[3].1, "48.0");
    }

    #[test]
    fn an_llm_run_leads_with_ttft_tpot_itl_goodput_and_tokens() {
        let h = StreamHeadline::of(&llm_phase()).unwrap();
        let names: Vec<String> = h.figures().into_iter().map(|(k, _)| k).collect();
        assert_eq!(
            names,
            [
                "TTFT p50",
                "TTFT p99",
                "TPOT p50",
                "TPOT p99",
                "ITL p50",
                "ITL p99",
                "goodput",
                "output tokens/s"
            ]
        );
        let text = h.text();
        assert!(text.starts_with("  headline: TTFT p50 50."), "{text}");
        assert!(text.contains("goodput 9.00 req/s (90.0%)"), "{text}");
        assert!(text.contains("output tokens/s 198.0"), "{text}");
        assert!(text.contains("from the actual send"), "{text}");
    }

    #[test]
    fn a_run_without_streams_has_no_headline_and_a_plain_stream_run_leads_with_first_event() {
        let mut p = synthetic_run(1, 2, 100, 1_000_000, 0).main;
        assert!(StreamHeadline::of(&p).is_none());
        p.first_event = Some(summary(&[5_000_000; 10]));
        p.stream = Some(StreamResults {
            responses: 10,
            events: 10,
            events_per_response: 1.0,
            failures: Default::default(),
            llm: None,
            goodput: None,
        });
        let names: Vec<String> = StreamHeadline::of(&p)
            .unwrap()
            .figures()
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(names, ["first event p50", "first event p99"]);
    }

    #[test]
    fn settings_are_what_the_command_line_carries_and_nothing_more() {
        let mut r = synthetic_run(1, 2, 100, 1_000_000, 0);
        let line = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        r.command_line = line("candor run http://x -R 10");
        assert!(settings(&r).is_empty());
        r.command_line = line(
            "candor run http://x --llm openai --model llama --output-tokens=20 -T 5s --tokenizer cl100k_base",
        );
        assert_eq!(
            settings(&r),
            [
                ("API", "openai".to_string()),
                ("model", "llama".to_string()),
                ("output tokens (budget)", "20".to_string()),
                ("tokenizer", "cl100k_base".to_string()),
                ("timeout", "5s".to_string()),
            ]
        );
        r.command_line = line("candor run http://x --llm openai -T2s");
        assert_eq!(settings(&r)[1], ("timeout", "2s".to_string()));
    }

    #[test]
    fn goodput_bounds_recorded_as_judged_are_one_row_not_two() {
        let mut r = synthetic_run(1, 2, 100, 1_000_000, 0);
        r.command_line = "candor run http://x --llm openai --goodput ttft:500"
            .split(' ')
            .map(String::from)
            .collect();
        let goodput = |r: &RunResults| {
            settings(r)
                .into_iter()
                .filter(|(k, _)| k.starts_with("goodput"))
                .collect::<Vec<_>>()
        };
        // Without config.llm: the command line's spelling.
        assert_eq!(
            goodput(&r),
            [("goodput objectives", "ttft:500".to_string())]
        );
        let llm = candor_core::results::LlmSettings {
            api: "openai".into(),
            goodput: Some("ttft<500ms".into()),
            ..Default::default()
        };
        r.config =
            candor_core::recorded::RecordedConfig::Run(Box::new(candor_core::results::RunConfig {
                llm: Some(llm),
                ..Default::default()
            }));
        assert_eq!(goodput(&r), [("goodput bounds", "ttft<500ms".to_string())]);
    }
}
