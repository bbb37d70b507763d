//! The results model: what a run (or a harness benchmark) produced, as written to JSON.
//!
//! This is a stable contract for scripts and CI. Fields are only ever added; a change that would
//! break readers bumps [`SCHEMA_VERSION`], and readers refuse versions newer than their own.

use crate::analysis::Analysis;
use crate::hist::{
    from_base64_v2, to_base64_v2_compressed, HistCodecError, Histo, Recorder, Summary,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of the JSON layout written by this build.
pub const SCHEMA_VERSION: u32 = 1;

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
    Template,
}

impl FailureClass {
    pub const ALL: [FailureClass; 8] = [
        FailureClass::Connect,
        FailureClass::Read,
        FailureClass::Write,
        FailureClass::Timeout,
        FailureClass::Parse,
        FailureClass::Status,
        FailureClass::Check,
        FailureClass::Template,
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
        }
    }
    /// Each class's name and count, in the order of [`FailureClass::ALL`].
    pub fn by_class(&self) -> [(&'static str, u64); 8] {
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
        self.completed + self.errors.status + self.errors.check
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
}

impl EncodedHistograms {
    pub fn of(r: &Recorder) -> Self {
        EncodedHistograms {
            response_time: to_base64_v2_compressed(&r.response),
            service_time: to_base64_v2_compressed(&r.service),
            send_lag: to_base64_v2_compressed(&r.send_lag),
        }
    }

    /// Decodes back into a recorder (clamped count is not part of the histograms).
    pub fn decode(&self) -> Result<Recorder, HistCodecError> {
        let mut r = Recorder::new();
        add_decoded(&mut r.response, &self.response_time)?;
        add_decoded(&mut r.service, &self.service_time)?;
        add_decoded(&mut r.send_lag, &self.send_lag)?;
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
            unfinished_age: Summary::of(unfinished),
            histograms: EncodedHistograms::of(r),
            events: Vec::new(),
            analysis: None,
            pool: None,
            pacing: None,
            status_codes: BTreeMap::new(),
            connection_faults: BTreeMap::new(),
        }
    }
}

/// A few percentiles of one measure in one interval, for time series and live views.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct IntervalStats {
    pub count: u64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
}

impl IntervalStats {
    pub fn of(h: &Histo) -> Self {
        use crate::hist::value_at;
        IntervalStats {
            count: h.len(),
            p50_ns: value_at(h, 50.0),
            p90_ns: value_at(h, 90.0),
            p99_ns: value_at(h, 99.0),
            p999_ns: value_at(h, 99.9),
            max_ns: value_at(h, 100.0),
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
    pub histograms: EncodedHistograms,
}

/// The machine a result was measured on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    pub cpu_model: String,
    pub cores: usize,
    pub kernel: String,
    pub hostname: String,
}

impl Environment {
    /// Reads the environment of this machine (Linux /proc; best effort elsewhere).
    pub fn current() -> Self {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split(':').nth(1))
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|| "unknown".into());
        let read = |p: &str| {
            std::fs::read_to_string(p)
                .map(|s| s.trim().to_string())
                .unwrap_or_else(|_| "unknown".into())
        };
        Environment {
            cpu_model,
            cores: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            kernel: read("/proc/sys/kernel/osrelease"),
            hostname: read("/proc/sys/kernel/hostname"),
        }
    }
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

/// Why the measured window ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// It ran for the planned duration (`-d`, or the window of `-n`).
    Duration,
    /// Every `--precision` target was reached before the planned end.
    Precision,
    /// An objective could no longer pass (`--abort-on-fail`).
    Abort,
    /// A signal (SIGINT, SIGTERM) cut it short.
    Interrupt,
}

impl StopReason {
    pub fn name(self) -> &'static str {
        match self {
            StopReason::Duration => "duration",
            StopReason::Precision => "precision",
            StopReason::Abort => "abort",
            StopReason::Interrupt => "interrupt",
        }
    }
}

/// A `--precision` target and how close the measured window came to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrecisionRow {
    /// 0 < percentile < 100.
    pub percentile: f64,
    /// The half-width asked for, as a fraction of the estimate (0.05 = ±5%).
    pub target: f64,
    pub samples: u64,
    pub estimate_ns: u64,
    /// The 95% order-statistic interval; `None` where the samples cannot bound it.
    pub ci_low_ns: Option<u64>,
    pub ci_high_ns: Option<u64>,
    /// The larger distance from the estimate to a bound, as a fraction of the estimate;
    /// `None` while the interval is unbounded.
    pub half_width: Option<f64>,
    pub reached: bool,
}

/// Details of how the measured window ended, when there is more to say than its reason.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StopDetail {
    /// Seconds from the first intended send (warm-up included) to the end of the schedule.
    pub at_s: f64,
    /// Measured (not warm-up) intervals complete when the decision was made.
    pub intervals: u64,
    /// `--precision` targets with the interval reached over the whole measured window.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub precision: Vec<PrecisionRow>,
    /// The objective that could no longer pass (an abort).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objective: Option<String>,
    /// In plain words.
    pub detail: String,
}

/// What produced a results file; how a reader knows which settings and books to expect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// `candor run` (and every step of a sweep or capacity search).
    Run,
    /// The in-process harness (`candor-harness`).
    Harness,
    /// `candor merge` of several results.
    Merged,
    /// An HdrHistogram interval log read by `candor report` (never written as JSON by candor).
    Hlog,
    /// A throughput sweep (`candor sweep --json`): the kind of a [`SweepResults`] file.
    ///
    /// [`SweepResults`]: ../../candor_analysis/sweep/struct.SweepResults.html
    Sweep,
}

impl Kind {
    /// The name used in JSON and reports.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Run => "run",
            Kind::Harness => "harness",
            Kind::Merged => "merged",
            Kind::Hlog => "hlog",
            Kind::Sweep => "sweep",
        }
    }
}

/// Compares with the JSON name, so that a reader can check a kind against the contract's text.
impl PartialEq<&str> for Kind {
    fn eq(&self, name: &&str) -> bool {
        self.name() == *name
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How the requests were paced, which decides what the latency means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// Sent on a schedule and timed from the intended send time.
    OpenLoop,
    /// Each connection sends again when answered: service time only.
    ClosedLoop,
    /// Read from an interval log: no schedule is known.
    IntervalLog,
    /// A merge of results with different modes, in input order (`open-loop + closed-loop`).
    Mixed(Vec<Mode>),
}

impl Mode {
    /// The name used in JSON and reports.
    pub fn name(&self) -> String {
        match self {
            Mode::OpenLoop => "open-loop".into(),
            Mode::ClosedLoop => "closed-loop".into(),
            Mode::IntervalLog => "interval log".into(),
            Mode::Mixed(parts) => parts.iter().map(Mode::name).collect::<Vec<_>>().join(" + "),
        }
    }

    /// True for a closed loop (not for a mix that contains one).
    pub fn is_closed_loop(&self) -> bool {
        *self == Mode::ClosedLoop
    }

    /// The one mode of all `modes` when they agree, else their mix in order (flattened).
    pub fn common(modes: impl IntoIterator<Item = Mode>) -> Option<Mode> {
        let all: Vec<Mode> = modes
            .into_iter()
            .flat_map(|m| match m {
                Mode::Mixed(parts) => parts,
                one => vec![one],
            })
            .collect();
        let first = all.first()?.clone();
        Some(if all.iter().all(|m| *m == first) {
            first
        } else {
            Mode::Mixed(all)
        })
    }
}

/// Compares with the JSON name (`"open-loop + closed-loop"` for a mix).
impl PartialEq<&str> for Mode {
    fn eq(&self, name: &&str) -> bool {
        self.name() == *name
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name())
    }
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Mode, String> {
        let one = |p: &str| match p {
            "open-loop" => Ok(Mode::OpenLoop),
            "closed-loop" => Ok(Mode::ClosedLoop),
            "interval log" => Ok(Mode::IntervalLog),
            other => Err(format!(
                "unknown mode {other:?} (expected open-loop, closed-loop or interval log)"
            )),
        };
        if s.contains(" + ") {
            s.split(" + ")
                .map(one)
                .collect::<Result<_, _>>()
                .map(Mode::Mixed)
        } else {
            one(s)
        }
    }
}

impl Serialize for Mode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
    }
}

impl<'de> Deserialize<'de> for Mode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Mode, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// How a load run's intended send times were spaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ArrivalName {
    Constant,
    Poisson,
}

impl ArrivalName {
    /// The name used in JSON and reports.
    pub fn name(self) -> &'static str {
        match self {
            ArrivalName::Constant => "constant",
            ArrivalName::Poisson => "poisson",
        }
    }
}

/// The protocol a load run spoke, as recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ProtocolName {
    #[serde(rename = "http/1.1")]
    Http1,
    #[serde(rename = "http/1.1 (TLS)")]
    Http1Tls,
    #[serde(rename = "h2c")]
    H2c,
    #[serde(rename = "h2 (TLS)")]
    H2Tls,
    #[serde(rename = "tcp")]
    Tcp,
}

impl ProtocolName {
    /// The protocol in the words of a report's first line: "HTTP/1.1", "HTTP/1.1 over TLS",
    /// "HTTP/2, h2c", "HTTP/2 over TLS, h2", "raw TCP".
    pub fn describe(self) -> &'static str {
        match self {
            ProtocolName::Http1 => "HTTP/1.1",
            ProtocolName::Http1Tls => "HTTP/1.1 over TLS",
            ProtocolName::H2c => "HTTP/2, h2c",
            ProtocolName::H2Tls => "HTTP/2 over TLS, h2",
            ProtocolName::Tcp => "raw TCP",
        }
    }
}

/// The settings of a load run (`kind` run) as its results record them: the `config` object.
///
/// Fields are in alphabetical order so that the JSON keeps the key order earlier builds wrote.
/// Every field has a default so that older files, and the settings of other tools, read as far
/// as they go (see [`RunResults::run_config`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunConfig {
    pub arrival: Option<ArrivalName>,
    pub body_bytes: usize,
    /// The accepted statuses (`--check-status`); `None` for raw TCP, which has none.
    pub check_status: Option<String>,
    pub connections: usize,
    pub drain_s: f64,
    pub duration_s: f64,
    /// Header lines, with Authorization values redacted: results are made to be shared.
    pub headers: Vec<String>,
    /// Seconds into the run at which a signal stopped it (measured, not a setting).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interrupted_after_s: Option<f64>,
    pub interval_s: f64,
    /// How late this process started after the agreed `--start-at` (measured, not a setting;
    /// kept beside `start_at_unix_s` so that `candor merge` can say how late each shard was).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub late_start_s: Option<f64>,
    pub method: String,
    pub pipeline: usize,
    /// The `-R` load profile (stages), as given; absent for one rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    pub protocol: Option<ProtocolName>,
    /// The total rate (all shards); `None` in closed-loop mode.
    pub rate_per_s: Option<f64>,
    pub request_set_size: Option<usize>,
    /// `-n`: the number of requests asked for, when the run was sized by count.
    pub requests_total: Option<u64>,
    /// The Poisson seed; `None` for constant arrivals.
    pub seed: Option<u64>,
    pub shard_count: u32,
    pub shard_index: u32,
    /// `--spin` in microseconds; null when the pacer chose the spin from measured wake-ups.
    pub spin_us: Option<f64>,
    pub start_at_unix_s: Option<f64>,
    /// HTTP/2 streams per connection; `None` for other protocols.
    pub streams: Option<usize>,
    pub threads: usize,
    pub timeout_s: f64,
    pub tls_insecure: bool,
    pub warmup_s: f64,
}

pub use crate::recorded::{
    HarnessConfig, HlogConfig, MergedConfig, MergedSource, RecordedConfig, ShardRecord,
    ShardSetRecord,
};

impl RunConfig {
    /// The `config` value of a results file.
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("run settings always serialize")
    }
}

/// Everything a run wrote: the measured window at the top level, warm-up and intervals beside it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResults {
    pub schema_version: u32,
    pub candor_version: String,
    pub kind: Kind,
    pub mode: Mode,
    pub target: String,
    pub command_line: Vec<String>,
    /// Wall-clock start of the run (warm-up included), seconds since the Unix epoch.
    pub start_time_unix_s: f64,
    pub environment: Environment,
    /// The settings the run used, typed by the tool that made it: a [`RunConfig`] for runs
    /// (read it with [`RunResults::run_config`]), the harness's own settings, what a merge was
    /// made from, an interval log's header, or (older files) the JSON as it was read.
    pub config: RecordedConfig,
    #[serde(flatten)]
    pub main: PhaseResults,
    pub warmup: Option<PhaseResults>,
    pub intervals: Vec<Interval>,
    /// Further named histograms: harness probes, the platform jitter monitor, TLS handshakes...
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra: Vec<NamedHistogram>,
    /// Reasons not to trust the numbers, in plain words; empty when none were found.
    pub warnings: Vec<String>,
    /// Why the measured window ended (runs only; absent in older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<StopReason>,
    /// How it ended, for `--precision` and `--abort-on-fail`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<StopDetail>,
    /// Load-profile stages (`stages`) and the per-name breakdown (`by_request`); absent when
    /// the run had neither.
    #[serde(flatten, default)]
    pub workload: crate::workload_results::WorkloadResults,
    /// The runs of `candor run --repeat N` (or `candor merge --as-repeats`), each whole with its
    /// own histograms and books, in the order they ran; the rest of the file is their union.
    /// Empty (and absent from the file) for a single run, so older files read as before.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repeats: Vec<RunResults>,
}

/// Errors reading a results file.
#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    #[error("not candor results JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("written by a newer candor (schema {found}, this build reads up to {supported}); upgrade candor")]
    FutureVersion { found: u32, supported: u32 },
}

/// Reads a versioned candor JSON file (results or sweep), refusing a future schema before looking
/// at anything else: a file from a newer candor says "upgrade", not a confusing field error.
/// Files without a `schema_version` and every version up to [`SCHEMA_VERSION`] load.
pub fn read_versioned<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, ResultsError> {
    let value: serde_json::Value = serde_json::from_str(text)?;
    if let Some(found) = value.get("schema_version").and_then(|v| v.as_u64()) {
        if found > SCHEMA_VERSION as u64 {
            return Err(ResultsError::FutureVersion {
                found: found as u32,
                supported: SCHEMA_VERSION,
            });
        }
    }
    Ok(serde_json::from_value(value)?)
}

/// The `kind` of a candor JSON document, if it names one candor knows.
pub fn kind_of(text: &str) -> Option<Kind> {
    let value: serde_json::Value = serde_json::from_str(text).ok()?;
    serde_json::from_value(value.get("kind")?.clone()).ok()
}

impl RunResults {
    /// Parses results JSON (see [`read_versioned`]).
    pub fn from_json(text: &str) -> Result<Self, ResultsError> {
        read_versioned(text)
    }

    pub fn to_json_pretty(&self) -> String {
        serde_json::to_string_pretty(self).expect("results always serialize")
    }

    /// The settings of a load run, read as far as they go: whole when typed, else field by field
    /// from an untyped object (`None` for other tools' settings and for a value that is not an
    /// object: no tool writes that).
    pub fn run_config(&self) -> Option<RunConfig> {
        let other = match &self.config {
            RecordedConfig::Run(c) => return Some((**c).clone()),
            RecordedConfig::Other(v) if v.is_object() => v,
            _ => return None,
        };
        // Field by field, so that one odd value (another tool's) loses only that field.
        let mut c = RunConfig::default();
        let get = |k: &str| other.get(k).cloned();
        macro_rules! field {
            ($($name:ident),*) => {$(
                if let Some(v) = get(stringify!($name)) {
                    if let Ok(x) = serde_json::from_value(v) {
                        c.$name = x;
                    }
                }
            )*};
        }
        field!(
            arrival,
            body_bytes,
            check_status,
            connections,
            drain_s,
            duration_s,
            headers,
            interrupted_after_s,
            interval_s,
            late_start_s,
            method,
            pipeline,
            protocol,
            rate_per_s,
            request_set_size,
            requests_total,
            seed,
            shard_count,
            shard_index,
            spin_us,
            start_at_unix_s,
            streams,
            threads,
            timeout_s,
            tls_insecure,
            warmup_s
        );
        Some(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hist::new_histogram;

    fn sample() -> RunResults {
        let mut r = Recorder::new();
        for i in 1..=1000u64 {
            r.record(i * 1000, i * 900, i * 100);
        }
        let requests = RequestCounts {
            intended: 1002,
            completed: 1000,
            in_flight_at_end: 2,
            sent_unanswered: 1,
            queued_unsent: 1,
            ..Default::default()
        };
        RunResults {
            schema_version: SCHEMA_VERSION,
            candor_version: "test".into(),
            kind: Kind::Run,
            mode: Mode::OpenLoop,
            target: "http://127.0.0.1:1/".into(),
            command_line: vec!["candor".into()],
            start_time_unix_s: 1.0,
            environment: Environment::default(),
            config: serde_json::json!({"rate": 1000}).into(),
            main: PhaseResults::from_recorder(&r, &new_histogram(), requests, 1.0, Some(1000.0)),
            warmup: None,
            intervals: vec![],
            extra: vec![],
            warnings: vec![],
            stop_reason: None,
            stop: None,
            workload: Default::default(),
            repeats: Vec::new(),
        }
    }

    #[test]
    fn status_codes_are_counted_without_allocating_and_written_by_code() {
        let mut c = CodeCounts::default();
        for code in [200, 200, 404, 0, 599, 600, 99, 100] {
            c.count(code);
        }
        assert_eq!(c.total(), 7, "0 (no status) is not counted");
        let mut d = CodeCounts::default();
        d.add(&c);
        d.count(200);
        let map = d.to_map();
        let expected: Vec<(&str, u64)> =
            vec![("100", 1), ("200", 3), ("404", 1), ("599", 1), ("other", 2)];
        assert_eq!(
            map.iter()
                .map(|(k, n)| (k.as_str(), *n))
                .collect::<Vec<_>>(),
            expected
        );
        assert_eq!(
            status_codes_line(&map),
            "100 ×1  200 ×3  404 ×1  599 ×1  other ×2"
        );
        d.reset();
        assert_eq!(d.total(), 0);
        // In the JSON next to `requests`; absent when empty, and older files read without it.
        let mut res = sample();
        let text = res.to_json_pretty();
        assert!(!text.contains("status_codes") && !text.contains("connection_faults"));
        res.main.status_codes = map;
        res.main.connection_faults = [("connect refused or failed".to_string(), 4)].into();
        let v: serde_json::Value = serde_json::from_str(&res.to_json_pretty()).unwrap();
        assert_eq!(v["status_codes"]["200"], 3);
        assert_eq!(v["connection_faults"]["connect refused or failed"], 4);
        let back = RunResults::from_json(&v.to_string()).unwrap();
        assert_eq!(back.main.status_codes, res.main.status_codes);
        assert_eq!(back.main.connection_faults, res.main.connection_faults);
    }

    #[test]
    fn json_round_trip_and_contract_fields() {
        let res = sample();
        assert!(res.main.requests.balanced());
        let text = res.to_json_pretty();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        for key in [
            "response_time",
            "service_time",
            "send_lag",
            "requests",
            "rate",
            "duration_s",
        ] {
            assert!(v.get(key).is_some(), "missing top-level {key}");
        }
        assert_eq!(v["response_time"]["percentiles"][4]["percentile"], 99.9);
        assert_eq!(v["requests"]["status"]["2xx"], 0);
        let back = RunResults::from_json(&text).unwrap();
        assert_eq!(back, res);
        let decoded = back.main.histograms.decode().unwrap();
        assert_eq!(decoded.response.len(), 1000);
    }

    #[test]
    fn files_without_the_new_counters_still_load() {
        let mut v: serde_json::Value = serde_json::from_str(&sample().to_json_pretty()).unwrap();
        v["requests"]["errors"]
            .as_object_mut()
            .unwrap()
            .remove("status");
        v["requests"]
            .as_object_mut()
            .unwrap()
            .remove("connections_opened");
        let back = RunResults::from_json(&v.to_string()).unwrap();
        assert_eq!(back.main.requests.errors.status, 0);
        assert_eq!(back.main.requests.connections_opened, 0);
    }

    #[test]
    fn status_and_check_failures_balance_the_books_and_count_as_responses() {
        let r = RequestCounts {
            intended: 10,
            completed: 3,
            failed: 7,
            errors: ErrorCounts {
                status: 4,
                check: 2,
                timeout: 1,
                ..Default::default()
            },
            ..Default::default()
        };
        assert!(r.balanced());
        // Answered but failed (status or checks) is not unanswered.
        assert_eq!(r.responses(), 9);
        assert_eq!(r.errors.dominant(), Some((FailureClass::Status, 4)));
        assert_eq!(ErrorCounts::default().dominant(), None);
        let tie = ErrorCounts {
            read: 2,
            parse: 2,
            ..Default::default()
        };
        assert_eq!(tie.dominant(), Some((FailureClass::Read, 2)));
        let p = PhaseResults::from_recorder(&Recorder::new(), &new_histogram(), r, 2.0, None);
        assert_eq!(p.rate.achieved_per_s, 4.5);
    }

    #[test]
    fn kinds_and_modes_keep_their_json_names() {
        for (k, name) in [
            (Kind::Run, "run"),
            (Kind::Harness, "harness"),
            (Kind::Merged, "merged"),
            (Kind::Hlog, "hlog"),
            (Kind::Sweep, "sweep"),
        ] {
            assert_eq!(serde_json::to_value(k).unwrap(), name);
            assert_eq!(k.name(), name);
        }
        let mixed = Mode::common([Mode::OpenLoop, Mode::ClosedLoop, Mode::OpenLoop]).unwrap();
        assert_eq!(mixed.name(), "open-loop + closed-loop + open-loop");
        let back: Mode = serde_json::from_value(serde_json::json!(mixed.name())).unwrap();
        assert_eq!(back, mixed);
        assert_eq!(
            Mode::common([Mode::ClosedLoop, Mode::ClosedLoop]),
            Some(Mode::ClosedLoop)
        );
        assert_eq!("interval log".parse(), Ok(Mode::IntervalLog));
        assert!(Mode::ClosedLoop == "closed-loop" && Kind::Merged == "merged");
        let e = serde_json::from_value::<Mode>(serde_json::json!("half-open")).unwrap_err();
        assert!(e.to_string().contains("unknown mode"), "{e}");
    }

    #[test]
    fn run_settings_keep_the_layout_earlier_builds_wrote() {
        let c = RunConfig {
            arrival: Some(ArrivalName::Poisson),
            protocol: Some(ProtocolName::Http1Tls),
            rate_per_s: Some(100.0),
            connections: 4,
            ..Default::default()
        };
        // The struct writes its fields in declaration order (a `Value` would sort them anyway).
        let text = serde_json::to_string(&c).unwrap();
        let v = c.to_value();
        let at = |k: &String| text.find(&format!("\"{k}\":")).unwrap();
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert!(keys.windows(2).all(|w| at(w[0]) < at(w[1])), "{text}");
        assert_eq!(v["protocol"], "http/1.1 (TLS)");
        assert_eq!(v["arrival"], "poisson");
        assert!(v.get("late_start_s").is_none() && v["seed"].is_null());
        let mut r = sample();
        r.config = RecordedConfig::from_value(v.clone());
        assert_eq!(r.run_config(), Some(c.clone()), "typed whole");
        let mut odd = v;
        odd["connections"] = serde_json::json!("many");
        r.config = odd.into();
        let read = r.run_config().unwrap();
        assert_eq!(read.connections, 0, "an odd value loses only its field");
        assert_eq!(read.rate_per_s, Some(100.0));
        r.config = serde_json::json!({"harness": {}}).into();
        assert_eq!(r.run_config().unwrap(), RunConfig::default());
        r.config = serde_json::json!(null).into();
        assert_eq!(r.run_config(), None);
    }

    #[test]
    fn analysis_reads_typed_and_an_unknown_layout_does_not_refuse_the_file() {
        let mut res = sample();
        res.main.analysis = Some(Analysis {
            confidence: vec![],
            highest_supported_percentile: Some(99.9),
            saturation: None,
            coordinated_omission: None,
            stationarity: None,
            slo: vec![crate::analysis::SloVerdict {
                objective: "p99<1ms".into(),
                measured: Some(1e6),
                pass: false,
                note: String::new(),
            }],
        });
        let text = res.to_json_pretty();
        let back = RunResults::from_json(&text).unwrap();
        assert_eq!(back, res);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["analysis"]["slo"][0]["pass"], false);
        let mut odd = v.clone();
        odd["analysis"] = serde_json::json!({"confidence": "an earlier layout"});
        let back = RunResults::from_json(&odd.to_string()).unwrap();
        assert_eq!(back.main.analysis, None);
        assert_eq!(back.main.requests, res.main.requests);
    }

    #[test]
    fn future_schema_is_refused_clearly() {
        let mut v: serde_json::Value = serde_json::from_str(&sample().to_json_pretty()).unwrap();
        v["schema_version"] = serde_json::json!(99);
        let err = RunResults::from_json(&v.to_string()).unwrap_err();
        assert!(err.to_string().contains("newer candor"), "{err}");
    }
}
