//! Settings of a load run, parsed and validated once before anything starts.

use crate::schedule::ArrivalKind;
pub use crate::shape::LoadShape;

pub use candor_wire::requests::{RequestOrder, RequestSpec};
pub use candor_wire::target::{Credentials, Scheme, Target, TargetError, TargetUrl};
use thiserror::Error;

#[derive(Debug, Error)]
pub enum LoadConfigError {
    #[error(transparent)]
    Target(#[from] TargetError),
    #[error(transparent)]
    Shape(#[from] crate::shape::ShapeError),
    #[error(transparent)]
    Header(#[from] candor_wire::wire::HeaderError),
    #[error(transparent)]
    Request(#[from] candor_wire::wire::RequestError),
    #[error("{0}")]
    Invalid(String),
}

/// Whether a body has a placeholder, so that its length is only known when it is filled.
pub fn has_placeholder(body: &[u8]) -> bool {
    body.windows(2).any(|w| w == b"{{")
}

/// TLS settings for `https://` targets.
#[derive(Debug, Clone, Default)]
pub struct TlsOptions {
    /// Skip certificate verification (testing only).
    pub insecure: bool,
    /// Trust these PEM certificates (instead of the system roots).
    pub ca_file: Option<std::path::PathBuf>,
}

/// The highest rate one load thread may be asked to pace: one intended send per 10 ns.
///
/// Each send costs at least a clock read (~20 ns through the vDSO), a histogram record and a
/// write system call (hundreds of ns), so no thread can keep a faster schedule; beyond this the
/// backlog of never-sent requests grows by about the whole rate every second, and the run
/// measures only candor. The ceiling is deliberately 10x or more above any reachable rate, so it
/// only refuses rates that are certainly typos or overflows (`-R 1e12`).
pub const MAX_RATE_PER_THREAD: f64 = 1e8;

/// The defaults of a run, written once: [`LoadConfig::new`] and the command line's flags take
/// them from here. Connections kept open to the target.
pub const DEFAULT_CONNECTIONS: usize = 16;
/// Load threads (fewer when fewer connections are asked for).
pub const DEFAULT_THREADS: usize = 2;
/// HTTP/2 streams per connection.
pub const DEFAULT_STREAMS: usize = 100;
/// HTTP method.
pub const DEFAULT_METHOD: &str = "GET";
/// Total intended rate, as `-R` writes it.
pub const DEFAULT_RATE: &str = "1k";
/// The measured window, as `-d` writes it.
pub const DEFAULT_DURATION: &str = "10s";
/// A request's timeout (and the drain unless `--drain` says otherwise), as `-T` writes it.
pub const DEFAULT_TIMEOUT: &str = "2s";

/// A default above, in nanoseconds or per second.
fn default_ns(text: &str) -> u64 {
    candor_core::units::parse_duration_ns(text).expect("the defaults are valid durations")
}

/// The arrival process (re-exported for users of the engine).
pub type Arrival = ArrivalKind;

/// Everything the engine needs, validated.
#[derive(Debug, Clone)]
pub struct LoadConfig {
    pub target: Target,
    /// What load is offered and when: a rate, `-n` requests, stages, a trace, or a closed loop.
    pub shape: LoadShape,
    pub connections: usize,
    pub threads: usize,
    pub duration_ns: u64,
    pub warmup_ns: u64,
    /// A request with no complete response this long after its actual send fails as a timeout.
    pub timeout_ns: u64,
    /// `--event-timeout`: a streamed response whose next event does not come this long after
    /// its previous one fails (class `stream`, named `event_timeout`); 0: no such bound.
    pub event_timeout_ns: u64,
    /// `--stream-timeout`: once a streamed response's first event has come, the bound on the
    /// whole response from its send, in place of `timeout_ns` (which then bounds only the wait
    /// for the first event); 0: `timeout_ns` bounds the whole response.
    pub stream_timeout_ns: u64,
    /// After the last intended send, how long to wait for outstanding requests.
    pub drain_ns: u64,
    /// Length of the interval histograms.
    pub interval_ns: u64,
    pub method: String,
    /// Extra headers as "Name: value".
    pub headers: Vec<String>,
    pub body: Vec<u8>,
    /// Spin on the clock for this long before each send instead of sleeping; `None` lets the
    /// pacer choose from the measured wake-up lateness ([`candor_core::Pacer`]).
    pub spin_ns: Option<u64>,
    /// This process is shard `shard_index` of `shard_count` of one schedule at the shape's total
    /// rate.
    pub shard_index: u32,
    pub shard_count: u32,
    /// Wall-clock instant (ns since the Unix epoch) of the first intended send, shared by shards.
    pub start_at_wall_ns: Option<u64>,
    pub tls: TlsOptions,
    /// A request set; empty means the single request given by method, path, headers and body.
    pub requests: Vec<RequestSpec>,
    pub request_order: RequestOrder,
    /// How responses are read as streams of events (`--stream`, `--llm`).
    pub stream: candor_stream::tap::StreamSettings,
    /// An `--llm` run's settings as its results record them (`config.llm`).
    pub llm_settings: Option<candor_core::results::LlmSettings>,
    /// `--goodput`: the per-request objectives whose met requests per second are reported.
    pub goodput: Option<candor_stream::goodput::GoodputSlo>,
    /// HTTP statuses that count as success; any other response fails in class `status`.
    pub accept_status: candor_wire::status::StatusSet,
    /// Templates' data, weights and names, and response checks.
    pub workload: candor_workload::WorkloadConfig,
    /// `--records`: where the load threads hand each request's record (see [`crate::records`]).
    pub records: Option<crate::records::RecordSink>,
    /// Multi-turn conversations (`--multi-turn`, `--turns`): which request follows which, and
    /// the think time before each follow-up (see [`crate::core`]).
    pub conversations: Option<ConversationSettings>,
}

/// A multi-turn run's conversations as the load threads follow them.
#[derive(Debug, Clone)]
pub struct ConversationSettings {
    pub plan: std::sync::Arc<candor_workload::conversation::ConversationPlan>,
    /// `--think-time`: from a turn's completion to its follow-up's intended send, drawn per
    /// follow-up under `seed` (`--seed`).
    pub think: candor_workload::think::ThinkTime,
    pub seed: u64,
}

impl LoadConfig {
    /// Makes this an LLM run of `count` distinct synthetic chat prompts of `prompt_tokens`, each
    /// asking for `output_tokens`, as `--llm openai` without `--prompts` sends them (model
    /// `default`): for the built-in known-truth runs of `demo --llm` and `calibrate`.
    pub fn use_synthetic_chat(
        &mut self,
        prompt_tokens: u64,
        output_tokens: u64,
        count: usize,
    ) -> Result<(), candor_workload::prompts::PromptError> {
        use candor_workload::prompts::{requests, LlmApi};
        let list = candor_workload::synthetic::fixed(prompt_tokens, output_tokens, count)?;
        let mut specs = requests(LlmApi::Chat, "default", &list, &[])?;
        for s in &mut specs {
            s.path = LlmApi::Chat.path().to_string();
        }
        self.method = "POST".to_string();
        self.requests = specs;
        self.stream.llm = true;
        Ok(())
    }

    /// Whether sends follow a schedule (a rate, a profile or a replayed trace) rather than each
    /// response (a closed loop).
    pub fn is_open_loop(&self) -> bool {
        self.shape.is_open_loop()
    }

    /// The share of the total load this process offers: 1 / `shard_count` (a rate's share is
    /// divided, not multiplied by this, so that it is the same float as ever).
    pub fn shard_share(&self) -> f64 {
        1.0 / self.shard_count.max(1) as f64
    }

    /// This process's share of the total intended rate; `None` in a closed loop.
    pub fn shard_rate_per_s(&self) -> Option<f64> {
        self.shape
            .rate_per_s()
            .map(|r| r / self.shard_count.max(1) as f64)
    }

    /// One load thread's share of a total rate `total_per_s` (across shards and threads).
    pub(crate) fn thread_rate_per_s(&self, total_per_s: f64) -> f64 {
        total_per_s / (self.shard_count.max(1) as f64 * self.threads as f64)
    }

    /// The schedule of this process's load thread `thread` (of `threads`), starting at
    /// `start_ns` (the warm-up's start): its lane of the one schedule all shards and threads
    /// interleave (see [`LoadConfig::lane`]); `None` in a closed loop.
    pub fn thread_schedule(
        &self,
        start_ns: u64,
        thread: usize,
    ) -> std::io::Result<Option<crate::schedule::Schedule>> {
        let (lane, stride) = self.lane(thread);
        self.shape.schedule(
            start_ns,
            self.warmup_ns,
            &self.target.host_header,
            lane,
            stride,
        )
    }

    /// Load thread `thread`'s lane and the number of lanes of the one schedule: lanes of all
    /// shards interleave (shard s, thread t is lane s + N·t of N·T), so the union of every
    /// shard's threads is the single-process schedule at the total rate.
    pub fn lane(&self, thread: usize) -> (u64, u64) {
        let shards = self.shard_count as u64;
        (
            self.shard_index as u64 + shards * thread as u64,
            shards * self.threads as u64,
        )
    }

    /// A configuration with wrk2-like defaults for `target`.
    pub fn new(target: Target) -> Self {
        LoadConfig {
            target,
            shape: match candor_core::units::parse_rate(DEFAULT_RATE) {
                Ok(candor_core::units::Rate::PerSecond(per_s)) => LoadShape::constant(per_s),
                _ => unreachable!("the default rate is a rate per second"),
            },
            connections: DEFAULT_CONNECTIONS,
            threads: DEFAULT_THREADS,
            duration_ns: default_ns(DEFAULT_DURATION),
            warmup_ns: 0,
            timeout_ns: default_ns(DEFAULT_TIMEOUT),
            event_timeout_ns: 0,
            stream_timeout_ns: 0,
            drain_ns: default_ns(DEFAULT_TIMEOUT),
            interval_ns: 1_000_000_000,
            method: DEFAULT_METHOD.into(),
            headers: Vec::new(),
            body: Vec::new(),
            spin_ns: None,
            shard_index: 0,
            shard_count: 1,
            start_at_wall_ns: None,
            tls: TlsOptions::default(),
            requests: Vec::new(),
            request_order: RequestOrder::RoundRobin,
            stream: Default::default(),
            llm_settings: None,
            goodput: None,
            accept_status: candor_wire::status::StatusSet::default(),
            workload: Default::default(),
            records: None,
            conversations: None,
        }
    }

    /// Resolves the targets the request set's lines name by `"url"` (see
    /// [`candor_wire::requests::RequestLine::url`]): a URL of the command line's target (same scheme,
    /// address and Host) is that target; each other one becomes a target of its own, with its own
    /// connections. Call once the request set is final.
    pub fn resolve_request_targets(&mut self) -> Result<(), LoadConfigError> {
        let same = |a: &Target, b: &Target| {
            a.scheme == b.scheme && a.addr == b.addr && a.host_header == b.host_header
        };
        let mut targets: Vec<Target> = Vec::new();
        let mut target_of = Vec::with_capacity(self.workload.lines.len());
        for line in &self.workload.lines {
            let Some(url) = &line.url else {
                target_of.push(0);
                continue;
            };
            let t = Target::parse(url)?;
            let index = if same(&t, &self.target) {
                0
            } else if let Some(i) = targets.iter().position(|x| same(x, &t)) {
                i + 1
            } else {
                targets.push(t);
                targets.len()
            };
            target_of.push(index);
        }
        if !targets.is_empty() {
            self.workload.targets = targets;
            self.workload.target_of = target_of;
        }
        Ok(())
    }

    /// Adds each `-H` header to every request of the request set that has no header of that name
    /// (a line's own header wins), so that `-H` means every request, with `--requests` as
    /// without. Call once the request set is final.
    pub fn apply_headers_to_request_set(&mut self) {
        for r in &mut self.requests {
            for h in &self.headers {
                let name = h.split(':').next().unwrap_or(h).trim();
                if !candor_wire::request_form::has_header(&r.headers, name) {
                    r.headers.push(h.clone());
                }
            }
        }
    }

    /// Sends the URL's credentials as `Authorization: Basic` with every request (the single
    /// request and each of a request set) that has no Authorization header of its own, as curl
    /// does. Call once the headers and the request set are final; calling it again adds nothing.
    pub fn apply_url_credentials(&mut self) {
        let Some(c) = &self.target.credentials else {
            return;
        };
        let line = c.basic_header();
        let add = |headers: &mut Vec<String>| {
            if !candor_wire::request_form::has_header(headers, "authorization") {
                headers.push(line.clone());
            }
        };
        add(&mut self.headers);
        // Never to another target a line names by its "url": the credentials are this host's.
        let target_of = &self.workload.target_of;
        for (i, r) in self.requests.iter_mut().enumerate() {
            if target_of.get(i).is_none_or(|&t| t == 0) {
                add(&mut r.headers);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_credentials_become_basic_authorization() {
        let t = Target::parse("http://us%40er:p%3Ass@127.0.0.1:8080/x").unwrap();
        let c = t.credentials.clone().unwrap();
        assert_eq!(
            (c.user.as_slice(), c.password.as_slice()),
            (&b"us@er"[..], &b"p:ss"[..])
        );
        // base64("us@er:p:ss"), percent-decoded first, as curl does.
        assert_eq!(c.basic_header(), "Authorization: Basic dXNAZXI6cDpzcw==");
        assert_eq!(t.url, "http://us%40er:***@127.0.0.1:8080/x");
        assert!(!format!("{t:?}").contains("p:ss") && !format!("{t:?}").contains("p%3Ass"));
        assert_eq!(t.host_header, "127.0.0.1:8080");

        let mut config = LoadConfig::new(t.clone());
        config.apply_url_credentials();
        config.apply_url_credentials();
        let bytes =
            crate::request_plan::prepare_requests(&config, crate::seam::unit::RequestForm::Http);
        assert_eq!(
            &*bytes[0].bytes,
            format!(
                "GET /x HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n{}Authorization: Basic dXNAZXI6cDpzcw==\r\n\r\n",
                candor_wire::request_form::USER_AGENT_LINE
            )
            .as_bytes()
        );

        // The user's own Authorization header wins, per request of a set too.
        let mut config = LoadConfig::new(t);
        config.headers = vec!["authorization: Bearer t".into()];
        config.requests = vec![
            RequestSpec {
                method: "GET".into(),
                path: "/a".into(),
                headers: vec![],
                body: vec![],
            },
            RequestSpec {
                method: "GET".into(),
                path: "/b".into(),
                headers: vec!["Authorization: Bearer b".into()],
                body: vec![],
            },
        ];
        config.apply_url_credentials();
        assert_eq!(config.headers, vec!["authorization: Bearer t"]);
        assert_eq!(
            config.requests[0].headers,
            vec!["Authorization: Basic dXNAZXI6cDpzcw=="]
        );
        assert_eq!(config.requests[1].headers, vec!["Authorization: Bearer b"]);

        // A user without a password sends an empty one; no credentials, no header.
        let t = Target::parse("http://alice@127.0.0.1/").unwrap();
        assert_eq!(
            t.credentials.unwrap().basic_header(),
            "Authorization: Basic YWxpY2U6"
        );
        let mut plain = LoadConfig::new(Target::parse("http://127.0.0.1/").unwrap());
        plain.apply_url_credentials();
        assert!(plain.headers.is_empty());
        assert_eq!(plain.target.url, "http://127.0.0.1/");
    }

    #[test]
    fn validation() {
        let t = Target::parse("http://127.0.0.1:1/").unwrap();
        let mut c = LoadConfig::new(t);
        assert!(c.validate(&*crate::seam::unit::testing::in_order()).is_ok());
        c.connections = 1;
        c.threads = 2;
        assert!(c
            .validate(&*crate::seam::unit::testing::in_order())
            .unwrap_err()
            .to_string()
            .contains("at least the number of threads"));
        c.connections = 4;
        c.shape = crate::shape::LoadShape::constant(0.0);
        assert!(c
            .validate(&*crate::seam::unit::testing::in_order())
            .is_err());
        c.shape = crate::shape::LoadShape::ClosedLoop;
        c.headers = vec!["NoColon".into()];
        assert!(c
            .validate(&*crate::seam::unit::testing::in_order())
            .is_err());
    }

    #[test]
    fn rates_no_thread_can_pace_are_refused() {
        let t = Target::parse("http://127.0.0.1:1/").unwrap();
        let mut c = LoadConfig::new(t);
        c.threads = 2;
        c.connections = 2;
        // Exactly the ceiling per thread passes; the next representable rate above it fails.
        c.shape = crate::shape::LoadShape::constant(2.0 * MAX_RATE_PER_THREAD);
        assert!(c.validate(&*crate::seam::unit::testing::in_order()).is_ok());
        for r in [
            2.0 * MAX_RATE_PER_THREAD * 1.0001,
            1e12,
            18446744073709551616.0,
        ] {
            c.shape = crate::shape::LoadShape::constant(r);
            let e = c
                .validate(&*crate::seam::unit::testing::in_order())
                .unwrap_err()
                .to_string();
            assert!(e.contains("beyond what any machine can pace"), "{e}");
            // One short line, never a number written out in hundreds of digits.
            assert!(e.len() < 250, "{e}");
        }
        c.shape = crate::shape::LoadShape::constant(1e300);
        let e = c
            .validate(&*crate::seam::unit::testing::in_order())
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("rate 1.000e300/s is 5.000e299/s per load thread"),
            "{e}"
        );
        // Shards split the total rate: 4 shards of 2 threads may share 8x the ceiling.
        c.shard_count = 4;
        c.shape = crate::shape::LoadShape::constant(8.0 * MAX_RATE_PER_THREAD);
        assert!(c.validate(&*crate::seam::unit::testing::in_order()).is_ok());
    }
}
