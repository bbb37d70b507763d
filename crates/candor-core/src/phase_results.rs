//! The numbers of one measured phase as results record them: requests and failures by class,
//! status codes, rates, the encoded histograms and their summaries, the pool, pacing and the
//! interval time series.

use crate::analysis::Analysis;
use crate::hist::{
    from_base64_v2, to_base64_v2_compressed, HistCodecError, Histo, Recorder, Summary,
};
pub use crate::interval_stats::IntervalStats;
use crate::stream_measures::StreamMeasure;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Failures by class. Every failed request is in exactly one class.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ErrorCounts {
    /// The connection a request waited for could not be established.
    pub connect: u64,
    /// The connection failed or closed before the whole response arrived.
    pub read: u64,
    /// Writing the request failed.
    pub write: u64,
    /// No complete response within `--timeout` of the actual send.
    pub timeout: u64,
    /// The response was not valid HTTP (or not valid for the protocol in use), or the server
    /// sent bytes no request had asked for.
    pub parse: u64,
    /// A full response arrived with a status outside the accepted set (by default >= 400). Its
    /// latency is recorded like any response's: it was a real answer. Absent in older files.
    #[serde(default)]
    pub status: u64,
    /// A full response failed a response check (`--check-body`, `--check-header`, or a request
    /// line's own); its latency is recorded as for `status`. Absent in older files.
    #[serde(default)]
    pub check: u64,
    /// A templated request could not be made and was not sent: a value filled into it (a
    /// `{{data:COLUMN}}` cell) holds a line break, NUL or other control character (tab excepted) where it would go into a header. Absent
    /// in older files.
    #[serde(default)]
    pub template: u64,
    /// A streamed response (`--stream`, `--llm`) that failed as a stream: cut off after events
    /// had come, an error event, an LLM stream without `[DONE]`, an event that is no
    /// completion chunk, a bad usage count, an answer that was no event stream (the events it
    /// had delivered are counted in `stream`, the failure by name in `stream.failures`).
    /// Absent in older files.
    #[serde(default)]
    pub stream: u64,
    /// A gRPC call ended with a `grpc-status` outside the accepted set (by default anything but
    /// `OK`); its latency is recorded as for `status`. The counts per status name are in
    /// `grpc_status`. Absent in older files and in runs where none failed so.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub grpc: u64,
    /// The server sent a reply that answers no request on the wire (a WebSocket message that
    /// `--ws-match` places on none): the connection is ended, and the requests it had on the
    /// wire fail in this class, as their replies can no longer be told apart. Absent in older
    /// files and in runs where none failed so.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub protocol: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The class of a failed request (the fields of [`ErrorCounts`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureClass {
    Connect,
    Read,
    Write,
    Timeout,
    Parse,
    Status,
    Check,
    /// A templated request could not be made: a value filled in cannot stand where it goes (a
    /// line break in a header value). Nothing was sent.
    Template,
    /// A streamed response failed as a stream (`--stream`, `--llm`): cut off after events had
    /// come, or an LLM stream's events or end were wrong.
    Stream,
    /// A gRPC call whose `grpc-status` is outside the accepted set.
    Grpc,
    /// The request was on the wire when the server sent a reply that matches no request (a
    /// WebSocket message `--ws-match` places on none).
    Protocol,
}

impl FailureClass {
    pub const ALL: [FailureClass; 11] = [
        FailureClass::Connect,
        FailureClass::Read,
        FailureClass::Write,
        FailureClass::Timeout,
        FailureClass::Parse,
        FailureClass::Status,
        FailureClass::Check,
        FailureClass::Template,
        FailureClass::Stream,
        FailureClass::Grpc,
        FailureClass::Protocol,
    ];

    /// The name used in JSON and reports.
    pub fn name(self) -> &'static str {
        match self {
            FailureClass::Connect => "connect",
            FailureClass::Read => "read",
            FailureClass::Write => "write",
            FailureClass::Timeout => "timeout",
            FailureClass::Parse => "parse",
            FailureClass::Status => "status",
            FailureClass::Check => "check",
            FailureClass::Template => "template",
            FailureClass::Stream => "stream",
            FailureClass::Grpc => "grpc",
            FailureClass::Protocol => "protocol",
        }
    }
}

impl ErrorCounts {
    pub fn total(&self) -> u64 {
        FailureClass::ALL.iter().map(|&c| self.get(c)).sum()
    }
    pub fn add(&mut self, o: &ErrorCounts) {
        self.connect += o.connect;
        self.read += o.read;
        self.write += o.write;
        self.timeout += o.timeout;
        self.parse += o.parse;
        self.status += o.status;
        self.check += o.check;
        self.template += o.template;
        self.stream += o.stream;
        self.grpc += o.grpc;
        self.protocol += o.protocol;
    }
    pub fn get(&self, class: FailureClass) -> u64 {
        match class {
            FailureClass::Connect => self.connect,
            FailureClass::Read => self.read,
            FailureClass::Write => self.write,
            FailureClass::Timeout => self.timeout,
            FailureClass::Parse => self.parse,
            FailureClass::Status => self.status,
            FailureClass::Check => self.check,
            FailureClass::Template => self.template,
            FailureClass::Stream => self.stream,
            FailureClass::Grpc => self.grpc,
            FailureClass::Protocol => self.protocol,
        }
    }
    /// The count of `class`, to add to.
    pub fn get_mut(&mut self, class: FailureClass) -> &mut u64 {
        match class {
            FailureClass::Connect => &mut self.connect,
            FailureClass::Read => &mut self.read,
            FailureClass::Write => &mut self.write,
            FailureClass::Timeout => &mut self.timeout,
            FailureClass::Parse => &mut self.parse,
            FailureClass::Status => &mut self.status,
            FailureClass::Check => &mut self.check,
            FailureClass::Template => &mut self.template,
            FailureClass::Stream => &mut self.stream,
            FailureClass::Grpc => &mut self.grpc,
            FailureClass::Protocol => &mut self.protocol,
        }
    }
    /// Each class's name and count, in the order of [`FailureClass::ALL`].
    pub fn by_class(&self) -> [(&'static str, u64); 11] {
        FailureClass::ALL.map(|c| (c.name(), self.get(c)))
    }
    /// The class with the most failures (the first of equals), `None` when nothing failed.
    pub fn dominant(&self) -> Option<(FailureClass, u64)> {
        FailureClass::ALL
            .iter()
            .map(|&c| (c, self.get(c)))
            .filter(|&(_, n)| n > 0)
            .fold(
                None,
                |best: Option<(FailureClass, u64)>, (c, n)| match best {
                    Some((_, m)) if m >= n => best,
                    _ => Some((c, n)),
                },
            )
    }
}

/// Responses received by status class: the completed ones and those that failed for their
/// status (class `status`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct StatusCounts {
    #[serde(rename = "1xx")]
    pub s1xx: u64,
    #[serde(rename = "2xx")]
    pub s2xx: u64,
    #[serde(rename = "3xx")]
    pub s3xx: u64,
    #[serde(rename = "4xx")]
    pub s4xx: u64,
    #[serde(rename = "5xx")]
    pub s5xx: u64,
}

impl StatusCounts {
    #[inline]
    pub fn count(&mut self, status: u16) {
        match status {
            100..=199 => self.s1xx += 1,
            200..=299 => self.s2xx += 1,
            300..=399 => self.s3xx += 1,
            400..=499 => self.s4xx += 1,
            _ => self.s5xx += 1,
        }
    }
    /// Each class's name (`1xx` .. `5xx`) and count.
    pub fn by_class(&self) -> [(&'static str, u64); 5] {
        [
            ("1xx", self.s1xx),
            ("2xx", self.s2xx),
            ("3xx", self.s3xx),
            ("4xx", self.s4xx),
            ("5xx", self.s5xx),
        ]
    }
    pub fn add(&mut self, o: &StatusCounts) {
        self.s1xx += o.s1xx;
        self.s2xx += o.s2xx;
        self.s3xx += o.s3xx;
        self.s4xx += o.s4xx;
        self.s5xx += o.s5xx;
    }
}

/// Responses by status code in fixed storage, so that counting one allocates nothing: a slot
/// per code from 100 to 599 and one for any other code a server sent.
#[derive(Debug, Clone, PartialEq)]
pub struct CodeCounts {
    counts: Box<[u64; CodeCounts::SLOTS]>,
}

impl Default for CodeCounts {
    fn default() -> Self {
        CodeCounts {
            counts: Box::new([0; CodeCounts::SLOTS]),
        }
    }
}

impl CodeCounts {
    const SLOTS: usize = 501;
    /// The key of codes outside 100..=599 in [`CodeCounts::to_map`].
    pub const OTHER: &'static str = "other";

    /// Counts a response with status `code` (0, the protocol has none, is not counted).
    #[inline]
    pub fn count(&mut self, code: u16) {
        if code == 0 {
            return;
        }
        let i = match code {
            100..=599 => (code - 100) as usize,
            _ => Self::SLOTS - 1,
        };
        self.counts[i] += 1;
    }

    pub fn add(&mut self, o: &CodeCounts) {
        for (a, b) in self.counts.iter_mut().zip(o.counts.iter()) {
            *a += b;
        }
    }

    pub fn reset(&mut self) {
        self.counts.fill(0);
    }

    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Each code that occurred and its count, in code order (`"other"` last).
    pub fn iter(&self) -> impl Iterator<Item = (Option<u16>, u64)> + '_ {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(i, &n)| ((i < Self::SLOTS - 1).then_some(i as u16 + 100), n))
    }

    /// The counts as the results write them: `{"200": 9000, "404": 12}`.
    pub fn to_map(&self) -> BTreeMap<String, u64> {
        self.iter()
            .map(|(code, n)| (code.map_or(Self::OTHER.to_string(), |c| c.to_string()), n))
            .collect()
    }
}

/// `status_codes` in words for a report line, in code order: `200 ×9,000  404 ×12`.
pub fn status_codes_line(codes: &BTreeMap<String, u64>) -> String {
    let mut v: Vec<(&String, &u64)> = codes.iter().collect();
    // Three-digit codes sort as text in code order; "other" goes last.
    v.sort_by_key(|(k, _)| (k.as_str() == CodeCounts::OTHER, k.as_str()));
    v.iter()
        .map(|(k, n)| format!("{k} ×{}", crate::units::format_count(**n)))
        .collect::<Vec<_>>()
        .join("  ")
}

/// `grpc_status` in words for a report line, most frequent first (then by name):
/// `OK ×9,000  UNAVAILABLE ×12`.
pub fn grpc_status_line(codes: &BTreeMap<String, u64>) -> String {
    let mut v: Vec<(&String, &u64)> = codes.iter().collect();
    v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    v.iter()
        .map(|(k, n)| format!("{k} ×{}", crate::units::format_count(**n)))
        .collect::<Vec<_>>()
        .join("  ")
}

/// The accounting of every request the schedule intended:
/// `intended = completed + failed + in_flight_at_end`, always.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct RequestCounts {
    pub intended: u64,
    /// Full responses received with an accepted status (by default < 400; any for raw TCP).
    pub completed: u64,
    pub failed: u64,
    /// Requests neither completed nor failed when the run ended (`sent_unanswered + queued_unsent`).
    pub in_flight_at_end: u64,
    /// Of those, requests written but not answered.
    pub sent_unanswered: u64,
    /// Of those, requests that were due but never found a free connection.
    pub queued_unsent: u64,
    pub errors: ErrorCounts,
    pub status: StatusCounts,
    /// Bytes of requests put on the wire, counted per write: a request cut off part way counts
    /// as far as it went.
    pub bytes_written: u64,
    pub bytes_read: u64,
    /// Values above the histogram range (1 h), recorded as 1 h.
    pub clamped_values: u64,
    /// Requests sent more than 1 ms after their intended time although a connection had been free
    /// since before that time: the generator itself fell behind.
    #[serde(default)]
    pub generator_late: u64,
    /// Connections established in this phase: the initial ones and every reconnect (after a
    /// close, an error or a timeout), so that a reconnect storm shows. 0 in older files.
    #[serde(default)]
    pub connections_opened: u64,
}

impl RequestCounts {
    pub fn add(&mut self, o: &RequestCounts) {
        self.intended += o.intended;
        self.completed += o.completed;
        self.failed += o.failed;
        self.in_flight_at_end += o.in_flight_at_end;
        self.sent_unanswered += o.sent_unanswered;
        self.queued_unsent += o.queued_unsent;
        self.errors.add(&o.errors);
        self.status.add(&o.status);
        self.bytes_written += o.bytes_written;
        self.bytes_read += o.bytes_read;
        self.clamped_values += o.clamped_values;
        self.generator_late += o.generator_late;
        self.connections_opened += o.connections_opened;
    }

    /// Full responses received, whatever their status or content: the completed requests and
    /// those that failed for their status or their response checks (answered but failed is not
    /// unanswered).
    pub fn responses(&self) -> u64 {
        self.completed + self.errors.status + self.errors.check + self.errors.grpc
    }

    /// True when nothing vanished from the accounting.
    pub fn balanced(&self) -> bool {
        self.intended == self.completed + self.failed + self.in_flight_at_end
            && self.in_flight_at_end == self.sent_unanswered + self.queued_unsent
            && self.failed == self.errors.total()
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct RateFigures {
    /// Intended requests per second; `None` in closed-loop mode.
    pub target_per_s: Option<f64>,
    /// Responses per second of the measured window (completed, plus responses that failed for
    /// their status or their checks: the server answered them).
    pub achieved_per_s: f64,
}

/// Full histograms, base64 of the V2 compressed encoding, so any tool can re-analyse or merge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EncodedHistograms {
    pub response_time: String,
    pub service_time: String,
    pub send_lag: String,
    /// From the intended send to the first byte of the response; absent when none was
    /// recorded (older files, producers that do not see responses arrive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_byte: Option<String>,
}

impl EncodedHistograms {
    pub fn of(r: &Recorder) -> Self {
        EncodedHistograms {
            response_time: to_base64_v2_compressed(&r.response),
            service_time: to_base64_v2_compressed(&r.service),
            send_lag: to_base64_v2_compressed(&r.send_lag),
            first_byte: (!r.first_byte.is_empty()).then(|| to_base64_v2_compressed(&r.first_byte)),
        }
    }

    /// Decodes back into a recorder (clamped count is not part of the histograms).
    pub fn decode(&self) -> Result<Recorder, HistCodecError> {
        let mut r = Recorder::new();
        add_decoded(&mut r.response, &self.response_time)?;
        add_decoded(&mut r.service, &self.service_time)?;
        add_decoded(&mut r.send_lag, &self.send_lag)?;
        if let Some(first_byte) = &self.first_byte {
            add_decoded(&mut r.first_byte, first_byte)?;
        }
        Ok(r)
    }
}

fn add_decoded(into: &mut Histo, text: &str) -> Result<(), HistCodecError> {
    let h = from_base64_v2(text)?;
    // Histograms from other builds may have other bounds; adding clamps nothing within 1 h.
    for v in h.iter_recorded() {
        into.saturating_record_n(v.value_iterated_to(), v.count_at_value());
    }
    Ok(())
}

/// Results of one phase (the measured window, or the warm-up).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseResults {
    pub duration_s: f64,
    pub rate: RateFigures,
    pub requests: RequestCounts,
    pub response_time: Summary,
    pub service_time: Summary,
    pub send_lag: Summary,
    /// From the intended send to the first byte of the response (the status line, HTTP/2's
    /// HEADERS), of every response whose first byte arrived, failed ones included. Absent when
    /// none was recorded (older files, the in-process harness).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_byte: Option<Summary>,
    /// Streamed responses (`--stream`, `--llm`): from the intended send to the first event,
    /// and the gaps between consecutive events of a response. Absent in runs without streams.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_event: Option<Summary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_gap: Option<Summary>,
    /// LLM runs (`--llm`): time to first token from the intended send (`ttft`) and from the
    /// actual send (`ttft_service`, as `service_time` is to `response_time`), inter-token
    /// latency (`itl`, each gap between content chunks) and time per output token (`tpot`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft: Option<Summary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_service: Option<Summary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub itl: Option<Summary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpot: Option<Summary>,
    /// What the streamed responses came to: events, failures by name, LLM tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<StreamResults>,
    /// Multi-turn LLM runs (`--multi-turn`, `--turns`): how the conversations ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversations: Option<crate::llm_run::Conversations>,
    /// Ages (now minus intended time) of requests still unfinished when the run ended.
    pub unfinished_age: Summary,
    pub histograms: EncodedHistograms,
    /// Marked moments of the run, such as an injected pause of the server (`--pause-pid`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<TimelineEvent>,
    /// Derived figures written by `candor-analysis` (order-statistic confidence intervals, which
    /// percentiles the sample count supports, saturation and coordinated-omission verdicts, SLO
    /// verdicts); absent in older files, and recomputable from the histograms.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "analysis_as_far_as_known"
    )]
    pub analysis: Option<Analysis>,
    /// The connection pool opened before the first intended send (on the measured phase of
    /// HTTP/1.1 and TCP runs; absent in older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool: Option<PoolResults>,
    /// What precise pacing cost over the whole run (on the measured phase of open-loop runs,
    /// every protocol; absent in older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pacing: Option<PacingResults>,
    /// Responses by status code (`{"200": 9000, "404": 12}`; `"other"` for codes outside
    /// 100..=599), the completed ones and those that failed for their status or checks. Absent
    /// in older files, in raw TCP runs and when nothing was answered.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub status_codes: BTreeMap<String, u64>,
    /// Connections that failed, by cause in words (refused, a failed TLS handshake, closed or
    /// reset before the response, a GOAWAY with its code before any response, ...): each
    /// failure of a connection once, however many requests it carried. Absent in older files
    /// and when none failed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub connection_faults: BTreeMap<String, u64>,
    /// gRPC calls by the `grpc-status` they ended with, by name (`{"OK": 9000,
    /// "UNAVAILABLE": 12}`), the accepted ones and those that failed in class `grpc`. Absent in
    /// other protocols' runs and in older files.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub grpc_status: BTreeMap<String, u64>,
    /// What the protocol counted of its own transport, by name (HTTP/3: QUIC's
    /// `quic_packets_sent`, `quic_packets_lost`). Absent in other protocols' runs and in older
    /// files.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub protocol_counts: BTreeMap<String, u64>,
}

/// Reads `analysis` when it has this build's layout, else none: the figures are recomputed from
/// the histograms by every reader, so a blob an older build wrote in an earlier layout (the
/// coordinated-omission signature changed once) must not make the whole file unreadable.
fn analysis_as_far_as_known<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Analysis>, D::Error> {
    let value = Option::<serde_json::Value>::deserialize(d)?;
    Ok(value.and_then(|v| serde_json::from_value(v).ok()))
}

/// What the streamed responses of a phase came to (`--stream`, `--llm`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamResults {
    /// Responses that delivered at least one event, and the events they delivered (those of
    /// failed streams included).
    pub responses: u64,
    pub events: u64,
    /// `events / responses` (0 without responses).
    pub events_per_response: f64,
    /// Streams that failed, by name (`stream_cut`, `stream_error`, `no_done`, `event_timeout`,
    /// `not_json`, `not_openai`, `bad_usage`, `not_event_stream`, and in other classes
    /// `rate_limited` and `timeout`); only names that occurred.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub failures: BTreeMap<String, u64>,
    /// LLM runs: the output tokens of the responses whose streams succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm: Option<LlmTokens>,
    /// `--goodput`: the requests that met every per-request objective.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput: Option<Goodput>,
}

/// Goodput as vLLM defines it: completed requests that met every per-request objective
/// (`slo`), per second of the measured window and as a fraction of the intended requests;
/// judged on values from the intended send, and (`*_service`) from the actual send, as a
/// client that times from its own send would judge them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Goodput {
    pub slo: String,
    pub good: u64,
    pub per_s: f64,
    pub fraction: f64,
    pub good_service: u64,
    pub per_s_service: f64,
    pub fraction_service: f64,
}

impl Goodput {
    /// `good` requests (`good_service` judged from the actual send) that met `slo`, per second
    /// of a window of `duration_s` and as a fraction of the `intended` requests (a failed or
    /// unfinished request is not good); 0 for an empty window or none intended.
    pub fn of(
        slo: String,
        good: u64,
        good_service: u64,
        intended: u64,
        duration_s: f64,
    ) -> Goodput {
        let per_s = |n: u64| {
            if duration_s > 0.0 {
                n as f64 / duration_s
            } else {
                0.0
            }
        };
        let fraction = |n: u64| {
            if intended > 0 {
                n as f64 / intended as f64
            } else {
                0.0
            }
        };
        Goodput {
            slo,
            good,
            per_s: per_s(good),
            fraction: fraction(good),
            good_service,
            per_s_service: per_s(good_service),
            fraction_service: fraction(good_service),
        }
    }
}

fn is_zero_f64(n: &f64) -> bool {
    *n == 0.0
}

/// The tokens of an LLM run's successful responses: output, input (the server's
/// `usage.prompt_tokens`) and their total, each per second of the measured window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct LlmTokens {
    pub output_tokens: u64,
    /// Output tokens per second of the measured window.
    pub output_tokens_per_s: f64,
    /// Responses whose count is the server's `usage.completion_tokens`, and responses whose
    /// count is the chunks that carried content (a server that sent no usage).
    pub counted_from_usage: u64,
    pub counted_from_chunks: u64,
    /// Input tokens as the server's usage reported them (`usage.prompt_tokens`), over the
    /// `input_counted` responses that said; results written before these were read have 0.
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub input_counted: u64,
    #[serde(default)]
    pub input_tokens_per_s: f64,
    /// Embeddings (`--llm openai-embeddings`): the inputs embedded by successful answers (each
    /// answer's `data` objects), and per second of the measured window; absent otherwise.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub inputs: u64,
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub inputs_per_s: f64,
    /// Of the input tokens, those the server's prefix cache served, as its usage said them
    /// (`usage.prompt_tokens_details.cached_tokens`), over the `cached_counted` responses that
    /// said; results written before these were read have 0.
    #[serde(default)]
    pub cached_tokens: u64,
    #[serde(default)]
    pub cached_counted: u64,
    /// Input plus output tokens, and per second.
    #[serde(default)]
    pub total_tokens: u64,
    #[serde(default)]
    pub total_tokens_per_s: f64,
    /// Responses whose count is the run's tokenizer's (`--tokenizer`, a server without usage).
    #[serde(default)]
    pub counted_by_tokenizer: u64,
    /// `--tokenizer` with a server that sends usage: the two counts side by side.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokenizer_check: Option<crate::llm_run::TokenizerCheck>,
}

impl LlmTokens {
    /// Sets the total and the per-second figures over a window of `seconds`.
    pub fn set_rates(&mut self, seconds: f64) {
        self.total_tokens = self.input_tokens.saturating_add(self.output_tokens);
        let per_s = |n: u64| {
            if seconds > 0.0 {
                n as f64 / seconds
            } else {
                0.0
            }
        };
        self.output_tokens_per_s = per_s(self.output_tokens);
        self.input_tokens_per_s = per_s(self.input_tokens);
        self.inputs_per_s = per_s(self.inputs);
        self.total_tokens_per_s = per_s(self.total_tokens);
    }
}

/// How the connection pool opened before the first intended send, apart from the requests:
/// the measured window starts with every connection that could be opened ready.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PoolResults {
    /// Connections the run asked for.
    pub connections: u64,
    /// Of them, ready (connected, TLS handshake done) before the first intended send.
    pub ready: u64,
    /// Of them, failed or not ready in time; the requests given to them connect again and
    /// count the wait.
    pub not_ready: u64,
    /// From the first connect to the last connection ready (the slowest thread), seconds.
    pub open_s: f64,
    /// Per connection, from the connect call to ready (TCP connect, plus the TLS handshake).
    pub connect_time: Summary,
}

/// What precise pacing cost: the time the load threads spent polling without blocking while
/// nothing was due and nothing arrived.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PacingResults {
    /// The adaptive spin margin (`adaptive`) or `--spin` (`fixed`).
    pub margin: PacingMargin,
    /// CPU seconds spent spinning, all threads together.
    pub spin_s: f64,
    /// `spin_s` as a share of the threads' time (threads x the run's length).
    pub spin_share: f64,
    /// The largest spin margin in force at the end, microseconds.
    pub margin_us: f64,
    /// Timer wake-ups whose lateness was measured.
    pub wakeups: u64,
    /// Blocking waits a socket ended before the timer (a response, a connect, room to write):
    /// one per request in an open loop that wakes for every response; with the kernel's receive
    /// timestamps, only where a response frees the slot a send waits for, or ends the drain.
    #[serde(default)]
    pub socket_wakeups: u64,
}

/// How the spin margin before each send was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PacingMargin {
    /// From the measured lateness of timer wake-ups.
    Adaptive,
    /// Fixed by `--spin`.
    Fixed,
}

/// A marked moment on a run's timeline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimelineEvent {
    /// What happened, e.g. "pause" (SIGSTOP .. SIGCONT of a process).
    pub kind: String,
    /// Seconds from the start of the run (warm-up included), like `Interval::start_s`.
    pub at_s: f64,
    pub length_s: f64,
    /// Plain words, e.g. "SIGSTOP/SIGCONT of pid 1234".
    #[serde(default)]
    pub detail: String,
}

impl PhaseResults {
    pub fn from_recorder(
        r: &Recorder,
        unfinished: &Histo,
        requests: RequestCounts,
        duration_s: f64,
        target_per_s: Option<f64>,
    ) -> Self {
        PhaseResults {
            duration_s,
            rate: RateFigures {
                target_per_s,
                achieved_per_s: if duration_s > 0.0 {
                    requests.responses() as f64 / duration_s
                } else {
                    0.0
                },
            },
            requests,
            response_time: Summary::of(&r.response),
            service_time: Summary::of(&r.service),
            send_lag: Summary::of(&r.send_lag),
            first_byte: (!r.first_byte.is_empty()).then(|| Summary::of(&r.first_byte)),
            first_event: None,
            event_gap: None,
            ttft: None,
            ttft_service: None,
            itl: None,
            tpot: None,
            stream: None,
            conversations: None,
            unfinished_age: Summary::of(unfinished),
            histograms: EncodedHistograms::of(r),
            events: Vec::new(),
            analysis: None,
            pool: None,
            pacing: None,
            status_codes: BTreeMap::new(),
            connection_faults: BTreeMap::new(),
            grpc_status: BTreeMap::new(),
            protocol_counts: BTreeMap::new(),
        }
    }
}

/// One interval (normally one second) of the run, by completion time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// Seconds from the start of the run (warm-up included) to the interval's start.
    pub start_s: f64,
    pub length_s: f64,
    /// True for intervals inside the warm-up.
    pub warmup: bool,
    pub completed: u64,
    pub failed: u64,
    pub response_time: IntervalStats,
    pub service_time: IntervalStats,
    pub send_lag: IntervalStats,
    /// Absent when the interval recorded no first byte.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_byte: Option<IntervalStats>,
    pub histograms: EncodedHistograms,
    /// The streamed responses that ended in this interval (`--stream`, `--llm`); absent in runs
    /// without streams.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<crate::stream_measures::IntervalStream>,
}

/// A named histogram reported beside the three main measures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NamedHistogram {
    pub name: String,
    pub summary: Summary,
    /// Base64 of the V2 compressed encoding.
    pub histogram: String,
}

impl NamedHistogram {
    pub fn of(name: &str, h: &Histo) -> Self {
        NamedHistogram {
            name: name.to_string(),
            summary: Summary::of(h),
            histogram: to_base64_v2_compressed(h),
        }
    }
}

impl PhaseResults {
    /// The phase's summary of stream measure `m`, if it recorded any.
    pub fn stream_summary(&self, m: StreamMeasure) -> Option<&Summary> {
        match m {
            StreamMeasure::FirstEvent => self.first_event.as_ref(),
            StreamMeasure::EventGap => self.event_gap.as_ref(),
            StreamMeasure::Ttft => self.ttft.as_ref(),
            StreamMeasure::TtftService => self.ttft_service.as_ref(),
            StreamMeasure::Itl => self.itl.as_ref(),
            StreamMeasure::Tpot => self.tpot.as_ref(),
        }
    }

    /// Sets the phase's summary of stream measure `m`.
    pub fn set_stream_summary(&mut self, m: StreamMeasure, s: Option<Summary>) {
        *match m {
            StreamMeasure::FirstEvent => &mut self.first_event,
            StreamMeasure::EventGap => &mut self.event_gap,
            StreamMeasure::Ttft => &mut self.ttft,
            StreamMeasure::TtftService => &mut self.ttft_service,
            StreamMeasure::Itl => &mut self.itl,
            StreamMeasure::Tpot => &mut self.tpot,
        } = s;
    }
}
