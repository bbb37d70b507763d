//! The measures of streamed responses (`--stream`, `--llm`) as one typed set, and their form in
//! each interval of a run: percentiles, events and output tokens, and the histograms that let
//! merges, comparisons and logs use them exactly.

use crate::hist::{from_base64_v2, to_base64_v2_compressed, HistCodecError};
use crate::interval_stats::IntervalStats;
use crate::{new_histogram, Histo};
use serde::{Deserialize, Serialize};

/// One measure of streamed responses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StreamMeasure {
    /// From the intended send to the first event of a response.
    FirstEvent,
    /// Between consecutive events of one response.
    EventGap,
    /// From the intended send to the first token (LLM).
    Ttft,
    /// From the actual send to the first token (LLM): what a sender timing from its own send
    /// reports.
    TtftService,
    /// Between consecutive content chunks (LLM).
    Itl,
    /// (last token - first token) / (output tokens - 1) (LLM).
    Tpot,
}

impl StreamMeasure {
    /// Every measure, in the order reports show them.
    pub const ALL: [StreamMeasure; 6] = [
        StreamMeasure::Ttft,
        StreamMeasure::TtftService,
        StreamMeasure::Itl,
        StreamMeasure::Tpot,
        StreamMeasure::FirstEvent,
        StreamMeasure::EventGap,
    ];

    /// The measure's name in the results (JSON fields, `extra` histograms, `.hlog` tags).
    pub fn name(self) -> &'static str {
        match self {
            StreamMeasure::FirstEvent => "first_event",
            StreamMeasure::EventGap => "event_gap",
            StreamMeasure::Ttft => "ttft",
            StreamMeasure::TtftService => "ttft_service",
            StreamMeasure::Itl => "itl",
            StreamMeasure::Tpot => "tpot",
        }
    }

    /// The measure in words, for report headings.
    pub fn label(self) -> &'static str {
        match self {
            StreamMeasure::FirstEvent => "first event",
            StreamMeasure::EventGap => "event gap",
            StreamMeasure::Ttft => "TTFT",
            StreamMeasure::TtftService => "TTFT from the actual send",
            StreamMeasure::Itl => "ITL",
            StreamMeasure::Tpot => "TPOT",
        }
    }

    /// The measure of a results name (see [`StreamMeasure::name`]).
    pub fn of_name(name: &str) -> Option<StreamMeasure> {
        StreamMeasure::ALL.into_iter().find(|m| m.name() == name)
    }
}

/// The streams' histograms of one interval, base64 of the V2 compressed encoding; a measure
/// without samples in the interval is absent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamHistograms {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_event: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_gap: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_service: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub itl: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpot: Option<String>,
}

impl StreamHistograms {
    fn slot(&mut self, m: StreamMeasure) -> &mut Option<String> {
        match m {
            StreamMeasure::FirstEvent => &mut self.first_event,
            StreamMeasure::EventGap => &mut self.event_gap,
            StreamMeasure::Ttft => &mut self.ttft,
            StreamMeasure::TtftService => &mut self.ttft_service,
            StreamMeasure::Itl => &mut self.itl,
            StreamMeasure::Tpot => &mut self.tpot,
        }
    }

    /// The encoded histogram of `m`, if the interval recorded it.
    pub fn get(&self, m: StreamMeasure) -> Option<&String> {
        match m {
            StreamMeasure::FirstEvent => self.first_event.as_ref(),
            StreamMeasure::EventGap => self.event_gap.as_ref(),
            StreamMeasure::Ttft => self.ttft.as_ref(),
            StreamMeasure::TtftService => self.ttft_service.as_ref(),
            StreamMeasure::Itl => self.itl.as_ref(),
            StreamMeasure::Tpot => self.tpot.as_ref(),
        }
    }

    /// The histogram of `m` decoded (empty when the interval recorded none).
    pub fn decode(&self, m: StreamMeasure) -> Result<Histo, HistCodecError> {
        let mut h = new_histogram();
        if let Some(text) = self.get(m) {
            let d = from_base64_v2(text)?;
            for v in d.iter_recorded() {
                h.saturating_record_n(v.value_iterated_to(), v.count_at_value());
            }
        }
        Ok(h)
    }
}

/// What the streamed responses that ended in one interval came to (by completion time, as the
/// interval's response times).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntervalStream {
    /// Responses that delivered at least one event, and their events.
    pub responses: u64,
    pub events: u64,
    /// LLM runs: the output tokens of the responses that ended in the interval, and those per
    /// second of the interval's length (tokens/s over time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens_per_s: Option<f64>,
    /// LLM runs: the input tokens (the server's `usage.prompt_tokens`) of the responses that
    /// ended in the interval, input plus output, and each per second of the interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens_per_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_tokens_per_s: Option<f64>,
    /// LLM runs whose server said them: of the input tokens, those its prefix cache served
    /// (`usage.prompt_tokens_details.cached_tokens`) in the responses that ended in the
    /// interval; absent when no response of the interval said them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
    /// Embeddings runs: the inputs embedded by the answers that ended in the interval, and
    /// per second of it (inputs/s over time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs_per_s: Option<f64>,
    /// `--goodput` (or the bounds `--slo` set): the responses completed in the interval that
    /// met every per-request bound (from the intended send), and those per second of it:
    /// goodput over time. Booked at completion, as the interval's `completed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub good: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub good_per_s: Option<f64>,
    /// Multi-turn runs: the conversations started, turns taken and ends decided in the
    /// interval (by when they happened, as `completed`); the intervals together hold the
    /// phases' conversations exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversations: Option<crate::llm_run::Conversations>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_event: Option<IntervalStats>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_gap: Option<IntervalStats>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft: Option<IntervalStats>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_service: Option<IntervalStats>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub itl: Option<IntervalStats>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpot: Option<IntervalStats>,
    pub histograms: StreamHistograms,
}

impl IntervalStream {
    /// An interval's streams from its histograms and counts; `output_tokens` is `Some` in LLM
    /// runs only, and its rate is over `length_s`.
    pub fn of<'a>(
        responses: u64,
        events: u64,
        output_tokens: Option<u64>,
        length_s: f64,
        histograms: impl IntoIterator<Item = (StreamMeasure, &'a Histo)>,
    ) -> IntervalStream {
        let mut s = IntervalStream {
            responses,
            events,
            output_tokens,
            output_tokens_per_s: output_tokens.map(|n| {
                if length_s > 0.0 {
                    n as f64 / length_s
                } else {
                    0.0
                }
            }),
            input_tokens: None,
            input_tokens_per_s: None,
            total_tokens: None,
            total_tokens_per_s: None,
            cached_tokens: None,
            inputs: None,
            inputs_per_s: None,
            good: None,
            good_per_s: None,
            conversations: None,
            first_event: None,
            event_gap: None,
            ttft: None,
            ttft_service: None,
            itl: None,
            tpot: None,
            histograms: StreamHistograms::default(),
        };
        for (m, h) in histograms {
            if h.is_empty() {
                continue;
            }
            *s.stats_slot(m) = Some(IntervalStats::of(h));
            *s.histograms.slot(m) = Some(to_base64_v2_compressed(h));
        }
        s
    }

    /// An LLM interval's input tokens: sets them, their total with the output tokens, and
    /// both per second of `length_s` (nothing when the interval counts no output tokens: no
    /// LLM run).
    pub fn with_input_tokens(mut self, input: u64, length_s: f64) -> IntervalStream {
        let Some(output) = self.output_tokens else {
            return self;
        };
        let per_s = |n: u64| {
            if length_s > 0.0 {
                n as f64 / length_s
            } else {
                0.0
            }
        };
        let total = input.saturating_add(output);
        self.input_tokens = Some(input);
        self.input_tokens_per_s = Some(per_s(input));
        self.total_tokens = Some(total);
        self.total_tokens_per_s = Some(per_s(total));
        self
    }

    /// An LLM interval whose responses said their cached input tokens (`counted` of them
    /// said, `cached` tokens in all); nothing when none said them.
    pub fn with_cached_tokens(mut self, cached: u64, counted: u64) -> IntervalStream {
        if counted > 0 {
            self.cached_tokens = Some(cached);
        }
        self
    }

    /// A multi-turn run's interval: what its conversations did in it.
    pub fn with_conversations(mut self, c: crate::llm_run::Conversations) -> IntervalStream {
        self.conversations = Some(c);
        self
    }

    /// An embeddings run's interval: `inputs` were embedded, per second of `length_s`.
    pub fn with_inputs(mut self, inputs: u64, length_s: f64) -> IntervalStream {
        self.inputs = Some(inputs);
        self.inputs_per_s = Some(if length_s > 0.0 {
            inputs as f64 / length_s
        } else {
            0.0
        });
        self
    }

    /// A goodput run's interval: `good` responses met the bounds, per second of `length_s`.
    pub fn with_goodput(mut self, good: u64, length_s: f64) -> IntervalStream {
        self.good = Some(good);
        self.good_per_s = Some(if length_s > 0.0 {
            good as f64 / length_s
        } else {
            0.0
        });
        self
    }

    fn stats_slot(&mut self, m: StreamMeasure) -> &mut Option<IntervalStats> {
        match m {
            StreamMeasure::FirstEvent => &mut self.first_event,
            StreamMeasure::EventGap => &mut self.event_gap,
            StreamMeasure::Ttft => &mut self.ttft,
            StreamMeasure::TtftService => &mut self.ttft_service,
            StreamMeasure::Itl => &mut self.itl,
            StreamMeasure::Tpot => &mut self.tpot,
        }
    }

    /// The interval's percentiles of `m`, if it recorded any.
    pub fn stats(&self, m: StreamMeasure) -> Option<IntervalStats> {
        match m {
            StreamMeasure::FirstEvent => self.first_event,
            StreamMeasure::EventGap => self.event_gap,
            StreamMeasure::Ttft => self.ttft,
            StreamMeasure::TtftService => self.ttft_service,
            StreamMeasure::Itl => self.itl,
            StreamMeasure::Tpot => self.tpot,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_measure_is_found_by_its_name() {
        for m in StreamMeasure::ALL {
            assert_eq!(StreamMeasure::of_name(m.name()), Some(m));
        }
        assert_eq!(StreamMeasure::of_name("response_time"), None);
    }

    #[test]
    fn an_interval_keeps_what_it_recorded_and_tokens_per_second_over_its_length() {
        let mut ttft = new_histogram();
        ttft.record(50_000_000).unwrap();
        ttft.record(350_000_000).unwrap();
        let empty = new_histogram();
        let s = IntervalStream::of(
            2,
            18,
            Some(16),
            0.5,
            [(StreamMeasure::Ttft, &ttft), (StreamMeasure::Itl, &empty)],
        );
        assert_eq!(s.output_tokens_per_s, Some(32.0));
        assert_eq!((s.good, s.good_per_s), (None, None));
        let g = s.clone().with_goodput(3, 0.5);
        assert_eq!((g.good, g.good_per_s), (Some(3), Some(6.0)));
        let json = serde_json::to_string(&g).unwrap();
        assert!(json.contains("\"good\":3,\"good_per_s\":6.0"), "{json}");
        assert_eq!(s.stats(StreamMeasure::Ttft).unwrap().count, 2);
        assert!(s.stats(StreamMeasure::Itl).is_none());
        assert!(s.histograms.itl.is_none());
        let back = s.histograms.decode(StreamMeasure::Ttft).unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!(back.max(), ttft.max());
        let json = serde_json::to_string(&s).unwrap();
        assert!(!json.contains("\"itl\""), "{json}");
        assert_eq!(serde_json::from_str::<IntervalStream>(&json).unwrap(), s);
    }
}
