//! The flags of `candor run` (and the load flags that `sweep`, `capacity` and `k8s` share), and their
//! validation into a `LoadConfig` before any load is sent.

use candor_core::bounded::{
    strip_bom, MAX_BODY_FILE_BYTES, MAX_LINE_BYTES, MAX_REQUESTS_FILE_BYTES,
};
use candor_core::units::UnitError;
use candor_core::units::{parse_rate, DurationArg, Rate};
use candor_load::schedule::ArrivalKind;
use candor_load::workload::check::CheckError;
use candor_load::workload::check::{BodyNeedle, HeaderCheck};
use candor_load::workload::data::DataError;
use candor_load::workload::data::{DataOrder, DataTable};
use candor_load::workload::profile::ProfileError;
use candor_load::workload::profile::{is_profile, Profile};
use candor_load::workload::replay::ReplayError;
use candor_load::workload::replay::ReplayPlan;
use candor_load::workload::WorkloadError;
use candor_load::LoadConfigError;
use candor_load::{LoadConfig, LoadShape, RunPlan, Target};
use clap::{Args, ValueEnum};

pub use crate::shard_flags::{check_start_ahead, parse_shard, parse_start_at, START_AT_HORIZON_NS};

/// A flag of `candor run` (or of the commands that share its load flags) that cannot work, in one
/// line naming the flag.
#[derive(Debug, thiserror::Error)]
pub enum FlagError {
    #[error("{flag}")]
    Value {
        flag: &'static str,
        source: UnitError,
    },
    #[error("-R/--rate")]
    Profile(#[from] ProfileError),
    /// Not `#[from]` nor a source: the reason is part of the one line.
    #[error("{flag} {path}: {reason}")]
    Read {
        flag: &'static str,
        path: String,
        reason: candor_core::bounded::BoundedReadError,
    },
    #[error(transparent)]
    Target(#[from] candor_load::TargetError),
    #[error(transparent)]
    Config(#[from] LoadConfigError),
    #[error(transparent)]
    Replay(#[from] ReplayError),
    #[error(transparent)]
    Data(#[from] DataError),
    #[error(transparent)]
    Check(#[from] CheckError),
    #[error(transparent)]
    Workload(#[from] WorkloadError),
    #[error("{0}")]
    Invalid(String),
}

pub(crate) type Result<T> = std::result::Result<T, FlagError>;

/// Names the flag whose value failed to parse.
fn flag<T>(r: std::result::Result<T, UnitError>, flag: &'static str) -> Result<T> {
    r.map_err(|source| FlagError::Value { flag, source })
}

/// Reads a file named by a flag, of at most `max_bytes` (and `max_line` per line).
fn read(
    path: &std::path::Path,
    flag: &'static str,
    max_bytes: u64,
    max_line: Option<usize>,
) -> Result<Vec<u8>> {
    candor_core::bounded::read_file(path, max_bytes, max_line).map_err(|reason| FlagError::Read {
        flag,
        path: path.display().to_string(),
        reason,
    })
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum ArrivalArg {
    /// Evenly spaced intended send times.
    Constant,
    /// Exponential gaps between intended send times (a Poisson process), seeded by --seed.
    Poisson,
}

/// The load settings shared by `run`, `sweep` and `capacity` (which set the rate themselves, so
/// the rate flags live in [`RunArgs`]).
#[derive(Args, Debug, Clone)]
pub struct LoadArgs {
    /// Number of connections kept open to the target (at least one per thread).
    #[arg(short = 'c', long, default_value_t = candor_load::config::DEFAULT_CONNECTIONS)]
    pub connections: usize,
    /// Number of load threads; connections and rate are shared evenly between them. Default 2,
    /// or -c when fewer connections are asked for; a -t above -c is refused (each thread needs a
    /// connection), as wrk refuses it.
    #[arg(short = 't', long, value_name = "N")]
    pub threads: Option<usize>,
    /// Length of the measured window, with its unit: us, ms, s, m or h (a bare number is refused).
    /// Default 10s.
    #[arg(short = 'd', long, value_name = "DUR", allow_hyphen_values = true)]
    pub duration: Option<DurationArg>,
    /// A request with no full response this long after it was written fails as a timeout
    /// (its response time is recorded as its age at that moment) and its connection is reopened.
    /// With its unit (a bare number is refused).
    #[arg(
        short = 'T',
        long,
        default_value = candor_load::config::DEFAULT_TIMEOUT,
        value_name = "DUR",
        allow_hyphen_values = true
    )]
    pub timeout: DurationArg,
    /// --stream/--llm: a streamed response whose next event does not come within DUR of its
    /// previous event fails (class "stream", named event_timeout, its events counted) and its
    /// connection is closed (HTTP/2: its stream is reset). Before the first event only
    /// --timeout bounds the wait.
    #[arg(long, value_name = "DUR")]
    pub event_timeout: Option<DurationArg>,
    /// --llm: goodput as vLLM defines it, the requests per second that meet every one of
    /// these per-request objectives, judged on each request's own TTFT, TPOT and end-to-end
    /// latency (from the intended send; the actual-send twin is reported beside it), e.g.
    /// 'ttft<500ms,tpot<50ms,e2el<5s' or vLLM's 'ttft:500 tpot:50' (ms, at most). Without it
    /// an --llm run takes these bounds from its --slo objectives on ttft, tpot and the
    /// response time (the loosest limit of each).
    #[arg(long, value_name = "SLOS")]
    pub goodput: Option<String>,
    /// Extra request header, "Name: value" (repeatable).
    #[arg(short = 'H', long = "header", value_name = "HEADER")]
    pub headers: Vec<String>,
    /// HTTP method.
    #[arg(short = 'm', long, default_value = candor_load::config::DEFAULT_METHOD)]
    pub method: String,
    /// Request body (sent with a Content-Length header).
    #[arg(long, conflicts_with = "body_file")]
    pub body: Option<String>,
    /// Read the request body from a file.
    #[arg(long, value_name = "FILE")]
    pub body_file: Option<std::path::PathBuf>,
    /// Run the same load for this long first; it is measured but reported separately and
    /// excluded from the main results.
    #[arg(long, default_value = "0s", value_name = "DUR")]
    pub warmup: DurationArg,
    /// How intended send times are spaced.
    #[arg(long, value_enum, default_value = "constant")]
    pub arrival: ArrivalArg,
    /// Seed of the Poisson arrival generator (same seed, same schedule).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// After the last intended send, wait this long for outstanding requests (default: the timeout);
    /// whatever is still unfinished is reported with its age.
    #[arg(long, value_name = "DUR")]
    pub drain: Option<DurationArg>,
    /// Advanced: spin on the clock for this long before each intended send instead of sleeping
    /// (precision against CPU use; 0 never spins). Default: as long as this machine's measured
    /// timer wake-up lateness requires to keep send lag p99 within 25us.
    #[arg(long, value_name = "DUR")]
    pub spin: Option<DurationArg>,
    /// Run as shard I of N of one schedule (0-based): this process sends its share 1/N of the
    /// total rate, interleaved so that the N shards together form the single-process schedule.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// Wall-clock instant of the first intended send (RFC 3339, e.g. 2026-11-21T23:00:00Z, or Unix
    /// epoch seconds), so that shards on several machines begin together. The run waits for it
    /// (a signal ends the wait); one more than a day ahead needs --start-at-far. One already past
    /// is missed: the schedule starts when the connections are ready, and the lateness is reported.
    #[arg(long, value_name = "TIME")]
    pub start_at: Option<String>,
    /// Accept a --start-at more than a day ahead (a typo in a date would otherwise wait for years).
    #[arg(long, requires = "start_at")]
    pub start_at_far: bool,
    /// HTTP/1.1 pipelining: up to N requests in flight per connection, each timed from its own
    /// intended send time.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub pipeline: usize,
    /// Speak HTTP/2 (prior knowledge over http://, ALPN over https://).
    #[arg(long)]
    pub h2: bool,
    /// HTTP/2: concurrent streams per connection; WebSocket: messages in flight per connection.
    /// A due request waits for a free place.
    #[arg(long, default_value_t = candor_load::config::DEFAULT_STREAMS, value_name = "N")]
    pub streams: usize,
    /// WebSocket: how a reply is matched to its message: 'order' (the next reply answers the
    /// oldest unanswered message) or 'json:FIELD' (candor writes a unique number into each
    /// message's top-level FIELD and matches the reply carrying it).
    #[arg(long, value_name = "order|json:FIELD")]
    pub ws_match: Option<String>,
    /// WebSocket: send messages as binary frames (default: text).
    #[arg(long)]
    pub ws_binary: bool,
    /// HTTPS: do not verify the server certificate (traffic is still encrypted).
    #[arg(long, short = 'k')]
    pub insecure: bool,
    /// HTTPS: trust the certificates in this PEM file instead of the system roots, as issuers or
    /// as the server's own certificate (a self-signed one, even if marked as a CA).
    #[arg(long, value_name = "FILE")]
    pub ca: Option<std::path::PathBuf>,
    /// Many different requests: a JSON-lines file, one {"method", "path", "headers", "body"} per
    /// line (see docs/protocols.md); all are encoded before the run.
    #[arg(long, value_name = "FILE")]
    pub requests: Option<std::path::PathBuf>,
    /// How the next request of --requests is chosen.
    #[arg(long, value_enum, default_value = "round-robin")]
    pub request_order: RequestOrderArg,
    /// tcp://: the bytes sent per request: text with \r \n \t \0 escapes, or hex:0a0b...
    #[arg(long, conflicts_with = "payload_file")]
    pub payload: Option<String>,
    /// tcp://: read the request payload from a file (sent verbatim).
    #[arg(long, value_name = "FILE")]
    pub payload_file: Option<std::path::PathBuf>,
    /// tcp://: a response is exactly N bytes.
    #[arg(long, value_name = "N", group = "framing")]
    pub expect_bytes: Option<usize>,
    /// tcp://: a response ends with this string (escapes as in --payload), e.g. '\r\n'.
    #[arg(long, value_name = "STR", group = "framing")]
    pub expect_delimiter: Option<String>,
    /// tcp://: a response is a big-endian length prefix then that many bytes: u8, u16be, u32be, u64be.
    #[arg(long, value_name = "KIND", group = "framing")]
    pub length_prefix: Option<String>,
    /// Read every response's body as a stream of events: sse (server-sent events), chunks
    /// (each HTTP/1.1 chunk) or lines (newline-delimited JSON), timing the first event and the
    /// gaps between events. Without it, a response whose Content-Type is text/event-stream is
    /// read as server-sent events.
    #[arg(long, value_name = "KIND", value_parser = ["sse", "chunks", "lines"])]
    pub stream: Option<String>,
    /// Benchmark an OpenAI-compatible LLM server: POST /v1/chat/completions (openai) or
    /// /v1/completions (openai-completions), streaming with usage; measures TTFT, ITL, TPOT and
    /// output tokens. The URL is the server's base (its path is replaced).
    #[arg(long, value_name = "API", value_parser = ["openai", "openai-completions"],
          conflicts_with_all = ["requests", "body", "body_file", "method"])]
    pub llm: Option<String>,
    /// --llm: the model name sent with every request.
    #[arg(long, value_name = "NAME", default_value = "default", requires = "llm")]
    pub model: String,
    /// --llm: prompts, one JSON object per line: {"prompt": "...", "max_tokens": N} or
    /// {"messages": [...], "max_tokens": N}.
    #[arg(
        long,
        value_name = "FILE",
        requires = "llm",
        conflicts_with = "prompt_tokens"
    )]
    pub prompts: Option<std::path::PathBuf>,
    /// --llm without --prompts: synthetic prompts of N tokens (a token is 3/4 of a word).
    #[arg(long, value_name = "N", requires = "llm", default_value_t = 128)]
    pub prompt_tokens: u64,
    /// --llm without --prompts: the output tokens each synthetic prompt asks for.
    #[arg(long, value_name = "N", requires = "llm", default_value_t = 128)]
    pub output_tokens: u64,
    /// HTTP statuses that count as success: codes, classes or ranges, e.g. '200,404' or
    /// '2xx,3xx'; any other response fails (class "status"), its latency still recorded.
    /// Default: everything below 400. For gRPC targets, grpc-status names or numbers, e.g.
    /// 'OK,NOT_FOUND' (default OK); any other fails in class "grpc".
    #[arg(long, value_name = "LIST")]
    pub check_status: Option<String>,
    /// The body of every response must contain this text (matched as the body streams in); a
    /// response without it fails in class "check", its latency still recorded.
    #[arg(long, value_name = "TEXT")]
    pub check_body: Option<String>,
    /// Every response must carry this header with this value, 'Name: value' (repeatable); a
    /// response without it fails in class "check".
    #[arg(long, value_name = "HEADER")]
    pub check_header: Vec<String>,
    /// Values for {{data:COLUMN}} placeholders: a CSV file with a header row (RFC 4180 quoting);
    /// request seq takes row seq mod rows, or a random row with --data-order random.
    #[arg(long, value_name = "FILE.csv")]
    pub data: Option<std::path::PathBuf>,
    /// How rows of --data are taken.
    #[arg(long, value_enum, default_value = "sequential")]
    pub data_order: DataOrderArg,
    /// Take the schedule and the requests from a trace: JSON lines ({"at": seconds, "path", ...})
    /// or an NCSA common/combined access log; each record is sent at its offset from the first.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["requests", "data"])]
    pub replay: Option<std::path::PathBuf>,
    /// Replay this many times faster than recorded (0.5 = half speed).
    #[arg(long, default_value_t = 1.0, value_name = "X", requires = "replay")]
    pub speed: f64,
    /// Replay a trace with more than 1% malformed lines, skipping them (they are counted).
    #[arg(long, requires = "replay")]
    pub lenient: bool,
    /// gRPC: the method to call, package.Service/Method.
    #[arg(long, value_name = "METHOD")]
    pub call: Option<String>,
    /// gRPC: a .proto file describing the service (repeatable), compiled in process (no protoc).
    #[arg(long, value_name = "FILE.proto")]
    pub proto: Vec<std::path::PathBuf>,
    /// gRPC: a directory where --proto files and their imports are found (repeatable).
    #[arg(long, value_name = "DIR")]
    pub import_path: Vec<std::path::PathBuf>,
    /// gRPC: fetch the service's descriptors from the server's reflection service instead of
    /// --proto.
    #[arg(long)]
    pub reflect: bool,
    /// Target URL: http://host:port/path (port optional), https://..., tcp://host:port, or
    /// grpc://host:port (gRPC over HTTP/2 in the clear), grpcs://host:port (over TLS) with --call.
    /// `http://user:password@host/` sends Basic authorization (percent-decoded, as curl does)
    /// unless an Authorization header is given.
    pub url: String,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum DataOrderArg {
    /// Row seq mod rows: in file order, wrapping.
    Sequential,
    /// A random row per request (seeded by --seed).
    Random,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum RequestOrderArg {
    /// Cycle through the requests in file order.
    RoundRobin,
    /// Pick uniformly at random (seeded by --seed).
    Random,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Total intended requests per second across all threads (k and M suffixes accepted), or
    /// "max" for a closed loop where each connection sends as soon as its previous response arrives,
    /// or a load profile: comma-separated stages RATE:DUR (hold) and FROM..TO:DUR (linear ramp),
    /// e.g. 500:30s,500..5000:2m,5000:1m; the run then lasts the stages' sum (-d may be left out,
    /// or must equal it).
    #[arg(
        short = 'R',
        long = "rate",
        default_value = candor_load::config::DEFAULT_RATE,
        value_name = "RATE",
        allow_hyphen_values = true,
        conflicts_with = "replay"
    )]
    pub rate: String,
    /// Send exactly N requests on the schedule of -R (constant arrival) instead of running for
    /// -d: the window lasts N / rate.
    #[arg(
        short = 'n',
        long = "requests-total",
        value_name = "N",
        conflicts_with = "duration"
    )]
    pub count: Option<u64>,
    #[command(flatten)]
    pub load: LoadArgs,
    /// Print the full percentile spectrum of response time (and service time) in the .hgrm layout.
    #[arg(short = 'L', long)]
    pub latency: bool,
    /// Write the results as JSON to FILE ("-" for stdout; the text report then goes to stderr).
    #[arg(long, value_name = "FILE")]
    pub json: Option<String>,
    /// Write an HdrHistogram interval log (format 1.3, one line per second and measure: untagged =
    /// response time, Tag=service_time, Tag=send_lag), readable by HdrHistogram's Java tools.
    #[arg(long, value_name = "FILE")]
    pub hlog: Option<String>,
    /// Write the response-time percentile distribution (.hgrm, in milliseconds) as Java prints it.
    #[arg(long, value_name = "FILE")]
    pub hgrm: Option<String>,
    /// No live progress line.
    #[arg(short, long)]
    pub quiet: bool,
    /// Service-level objectives on response time, e.g. 'p99<10ms,p99.9<50ms,max<1s,errors<0.1%':
    /// one PASS/FAIL line each after the report; exit code 3 if any fails. With -R stages, each
    /// stage is judged too (shown and recorded; the exit code is the whole run's).
    #[arg(long, value_name = "SLO")]
    pub slo: Vec<String>,
    /// Stop as soon as an objective of --slo can no longer pass (the error budget is spent, the
    /// rate stayed below its objective for 5 consecutive seconds, a latency bound is already
    /// broken for the whole run); exit code 3, naming the objective and the moment.
    #[arg(long, requires = "slo")]
    pub abort_on_fail: bool,
    /// Run until precise: end the measured window once the 95% confidence interval of the
    /// percentile lies within ±X% of its estimate, e.g. 'p99=5%' (repeatable; all must be reached;
    /// -d is the upper bound).
    #[arg(long, value_name = "PNN=X%", conflicts_with = "count")]
    pub precision: Vec<String>,
    /// Pause this process (SIGSTOP, then SIGCONT) during the run, e.g. the server under test.
    #[arg(long, value_name = "PID", requires_all = ["pause_at", "pause_for"])]
    pub pause_pid: Option<i32>,
    /// When to pause, from the first intended send (warm-up included).
    #[arg(long, value_name = "DUR", requires = "pause_pid")]
    pub pause_at: Option<String>,
    /// How long the pause lasts.
    #[arg(long, value_name = "DUR", requires = "pause_pid")]
    pub pause_for: Option<String>,
    /// With a pause: print the response-time distribution the pause predicts beside the measured one.
    #[arg(long, requires = "pause_pid")]
    pub expect: bool,
    #[command(flatten)]
    pub live_view: crate::live_view::LiveArgs,
    /// A wrk Lua script (wrk 4 and wrk2 API): its request() makes every request, its
    /// response() judges every response (false or wrk.fail("why") fails it as `check`), its
    /// done() reports after the run. See docs/scripts.md.
    #[arg(short = 's', long, value_name = "FILE")]
    pub script: Option<std::path::PathBuf>,
    /// Most memory each of the script's Lua states may hold (the setup state and one per load
    /// thread), e.g. `64MiB`, `1GiB`: an allocation past it fails the callback that made it and
    /// stops the run (default 256MiB).
    #[arg(long, value_name = "SIZE", requires = "script", value_parser = parse_script_memory)]
    pub script_memory: Option<usize>,
    /// Arguments for the script's init(args), after `--` (`args[0]` is the URL, as in wrk).
    #[arg(last = true, value_name = "SCRIPT_ARGS", requires = "script")]
    pub script_args: Vec<String>,
    /// Run the test N times, --repeat-pause apart: the results hold each run and their union, and `candor compare` judges across runs.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000), conflicts_with_all = ["precision", "pause_pid", "abort_on_fail", "start_at", "shard", "live"])]
    pub repeat: Option<u32>,
    /// The pause between repeats (default 1s).
    #[arg(long, value_name = "DUR", requires = "repeat")]
    pub repeat_pause: Option<DurationArg>,
}

impl RunArgs {
    /// `--slo`, `--precision`, `--abort-on-fail`, the pause and `--expect`, parsed.
    pub fn extras(
        &self,
    ) -> std::result::Result<crate::extras::ExtrasFlags, crate::extras::ExtrasError> {
        crate::extras::ExtrasFlags::parse(
            &self.slo,
            &self.precision,
            self.abort_on_fail,
            (
                self.pause_pid,
                self.pause_at.as_deref(),
                self.pause_for.as_deref(),
            ),
            self.expect,
        )
    }
}

impl LoadArgs {
    /// `-d` as given (`None`: not given).
    pub fn duration_ns(&self) -> Option<u64> {
        self.duration.as_ref().map(DurationArg::ns)
    }
}

/// Validated settings of `candor run`: `-R` as one rate, `max`, or a load profile of stages, or
/// `--replay`'s trace.
pub fn run_config(args: &RunArgs) -> Result<RunPlan> {
    let mut c = shape_config(&args.load, run_shape(args)?)?;
    // An LLM run without --goodput judges goodput by the per-request bounds its --slo sets
    // (an unreadable --slo is refused where the objectives are parsed).
    if c.goodput.is_none() && c.stream.llm {
        if let Ok(slos) = candor_analysis::SloSet::parse_all(&args.slo) {
            c.goodput = crate::goodput_of_slo::goodput_of_slo(&slos.objectives);
        }
    }
    Ok(c)
}

/// The load shape `-R`, `-n` and `--replay` ask for.
fn run_shape(args: &RunArgs) -> Result<LoadShape> {
    if let Some(path) = &args.load.replay {
        if args.count.is_some() {
            return Err(FlagError::Invalid(
                "-n does not combine with --replay".to_string(),
            ));
        }
        let plan = ReplayPlan::scan(path, args.load.speed, args.load.lenient)?;
        let window_ns = replay_window_ns(&args.load, &plan)?;
        return Ok(LoadShape::replay(plan, window_ns)?);
    }
    if !is_profile(&args.rate) {
        return Ok(
            LoadShape::of_rate(rate_flag(&args.rate)?, arrival(&args.load), args.count)
                .map_err(LoadConfigError::from)?,
        );
    }
    let profile = Profile::parse(&args.rate)?;
    if args.count.is_some() {
        return Err(FlagError::Invalid(
            "-n does not combine with -R stages: the stages set how many requests are sent"
                .to_string(),
        ));
    }
    if let Some(d) = &args.load.duration {
        if d.ns() != profile.duration_ns() {
            return Err(FlagError::Invalid(format!(
                "-d {d} disagrees with the -R stages, which last {}; leave -d out or make it their sum",
                candor_core::units::format_ns(profile.duration_ns() as f64)
            )));
        }
    }
    Ok(LoadShape::Stages {
        profile,
        arrival: arrival(&args.load),
    })
}

/// `--replay`'s window: the trace, or less when `-d` cuts it short.
fn replay_window_ns(a: &LoadArgs, plan: &ReplayPlan) -> Result<u64> {
    let trace_ns = plan.duration_ns();
    Ok(a.duration_ns().map_or(trace_ns, |d| d.min(trace_ns)))
}

/// Parses `-R`: a rate per second, or `None` for a closed loop (`max`).
pub fn rate_flag(text: &str) -> Result<Option<f64>> {
    Ok(match flag(parse_rate(text), "-R/--rate")? {
        Rate::PerSecond(r) => Some(r),
        Rate::Max => None,
    })
}

/// Parses a rate flag that must offer a load (a sweep's or a capacity search's rates, the
/// demo's): a rate per second; `max` (a closed loop) is refused.
pub fn open_rate(text: &str, name: &'static str) -> Result<f64> {
    match flag(parse_rate(text), name)? {
        Rate::PerSecond(r) => Ok(r),
        Rate::Max => Err(FlagError::Invalid(format!(
            "{name} must be a rate, not 'max' (a closed loop offers no load of its own)"
        ))),
    }
}

/// The window of `-n N` at `rate`: long enough to hold all N intended sends (the schedule itself
/// stops after exactly N, see `Schedule::with_limit`).
pub fn count_window_ns(count: u64, rate: f64) -> u64 {
    (count as f64 * 1e9 / rate).ceil().max(1.0) as u64
}

/// `--arrival` (with `--seed`).
fn arrival(a: &LoadArgs) -> ArrivalKind {
    match a.arrival {
        ArrivalArg::Constant => ArrivalKind::Constant,
        ArrivalArg::Poisson => ArrivalKind::Poisson { seed: a.seed },
    }
}

/// Validated settings from the flags, at `rate` (`None`: closed loop), optionally for exactly
/// `count` requests (`-n`).
/// Synthetic prompts made for `--llm` without `--prompts`: distinct ones, so that a server's
/// prefix cache cannot answer one from another, sent round robin.
const SYNTHETIC_PROMPTS: usize = 64;

/// `--stream` and `--llm`: how responses are read, and an LLM run's requests.
fn llm_and_stream(a: &LoadArgs, c: &mut LoadConfig) -> Result<()> {
    use candor_load::stream::StreamKind;
    use candor_load::workload::prompts::{self, LlmApi};
    c.stream.kind = match &a.stream {
        Some(k) => Some(k.parse::<StreamKind>().map_err(FlagError::Invalid)?),
        None => None,
    };
    let Some(api) = &a.llm else {
        return Ok(());
    };
    // Named before anything else the scheme would refuse: the flags --llm sets (a POST, its
    // requests) are not what a grpc:// or ws:// user gave, so their conflicts would mislead.
    let scheme = c.target.scheme;
    let other = if c.target.grpc {
        Some(if scheme == candor_load::Scheme::Https {
            "grpcs://"
        } else {
            "grpc://"
        })
    } else if scheme.is_websocket() {
        Some("ws:// and wss://")
    } else if scheme == candor_load::Scheme::Tcp {
        Some("tcp://")
    } else {
        None
    };
    if let Some(other) = other {
        return Err(FlagError::Invalid(format!(
            "--llm needs an http:// or https:// target (an OpenAI-compatible server), not {other}"
        )));
    }
    let api: LlmApi = api
        .parse()
        .map_err(|e: prompts::PromptError| FlagError::Invalid(e.to_string()))?;
    let list = match &a.prompts {
        Some(path) => {
            let bytes = read(
                path,
                "--prompts",
                MAX_REQUESTS_FILE_BYTES,
                Some(MAX_LINE_BYTES),
            )?;
            let text = std::str::from_utf8(strip_bom(&bytes)).map_err(|e| {
                FlagError::Invalid(format!(
                    "--prompts {}: not UTF-8 text (invalid byte at offset {})",
                    path.display(),
                    e.valid_up_to()
                ))
            })?;
            prompts::parse_prompts(text, &path.display().to_string())
        }
        None => prompts::synthetic(a.prompt_tokens, a.output_tokens, SYNTHETIC_PROMPTS),
    }
    .map_err(|e| FlagError::Invalid(e.to_string()))?;
    let mut specs = prompts::requests(api, &a.model, &list, &a.headers)
        .map_err(|e| FlagError::Invalid(e.to_string()))?;
    for s in &mut specs {
        s.path = api.path().to_string();
    }
    c.method = "POST".to_string();
    c.requests = specs;
    c.stream.llm = true;
    Ok(())
}

pub fn load_config(a: &LoadArgs, rate: Option<f64>, count: Option<u64>) -> Result<RunPlan> {
    let shape = LoadShape::of_rate(rate, arrival(a), count).map_err(LoadConfigError::from)?;
    shape_config(a, shape)
}

/// Validated settings from the flags, offering the load `shape`; the measured window is the
/// shape's own when it has one (`-n` at its rate, the stages, a trace), else `-d`.
pub fn shape_config(a: &LoadArgs, shape: LoadShape) -> Result<RunPlan> {
    let target = Target::parse(&a.url)?;
    let mut c = LoadConfig::new(target);
    let mut protocol = candor_load::ProtocolFlags::default();
    c.connections = a.connections;
    c.threads = a
        .threads
        .unwrap_or(DEFAULT_THREADS.min(a.connections.max(1)));
    c.duration_ns = match &shape {
        // Not given: LoadConfig's default window, set by `new`.
        LoadShape::ClosedLoop | LoadShape::Rate { .. } => a.duration_ns().unwrap_or(c.duration_ns),
        LoadShape::Count { per_s, count } => {
            let (n, r) = (*count, *per_s);
            let window = n as f64 * 1e9 / r;
            if window.is_nan() || window > candor_core::units::MAX_DURATION_NS as f64 {
                return Err(FlagError::Invalid(format!(
                    "-n {n} at {} would last {:.3e} s, longer than the longest window -d accepts ({:.0} years): \
                     the run could never finish; lower -n or raise -R",
                    candor_core::units::format_rate(r),
                    window / 1e9,
                    candor_core::units::MAX_DURATION_NS as f64 / 1e9 / (365.25 * 86_400.0)
                )));
            }
            count_window_ns(n, r)
        }
        LoadShape::Stages { profile, .. } => profile.duration_ns(),
        LoadShape::Replay { plan, .. } => replay_window_ns(a, plan)?,
    };
    c.shape = shape;
    c.timeout_ns = a.timeout.ns();
    c.event_timeout_ns = a.event_timeout.as_ref().map_or(0, DurationArg::ns);
    if a.event_timeout.is_some() && c.event_timeout_ns == 0 {
        return Err(FlagError::Invalid(
            "--event-timeout must be positive".to_string(),
        ));
    }
    c.warmup_ns = a.warmup.ns();
    c.drain_ns = a.drain.as_ref().map_or(c.timeout_ns, DurationArg::ns);
    c.spin_ns = a.spin.as_ref().map(DurationArg::ns);
    c.method = a.method.to_ascii_uppercase();
    c.headers = a.headers.clone();
    c.body = match (&a.body, &a.body_file) {
        (Some(b), _) => b.clone().into_bytes(),
        (None, Some(path)) => read(path, "--body-file", MAX_BODY_FILE_BYTES, None)?,
        (None, None) => Vec::new(),
    };
    protocol.h2 = a.h2;
    protocol.streams = a.streams;
    protocol.pipeline = a.pipeline;
    protocol.check_status = a.check_status.is_some();
    if let Some(m) = &a.ws_match {
        protocol.ws_match = m.parse().map_err(FlagError::Invalid)?;
    }
    protocol.ws_binary = a.ws_binary;
    c.tls = candor_load::TlsOptions {
        insecure: a.insecure,
        ca_file: a.ca.clone(),
    };
    if let Some(path) = &a.requests {
        let bytes = read(
            path,
            "--requests",
            MAX_REQUESTS_FILE_BYTES,
            Some(MAX_LINE_BYTES),
        )?;
        let text = std::str::from_utf8(strip_bom(&bytes)).map_err(|e| {
            FlagError::Invalid(format!(
                "--requests {}: not UTF-8 text (invalid byte at offset {})",
                path.display(),
                e.valid_up_to()
            ))
        })?;
        let lines = if c.target.scheme.is_websocket() {
            candor_load::requests::parse_message_lines(text)
        } else {
            candor_load::requests::parse_request_lines(text)
        }
        .map_err(|e| FlagError::Invalid(format!("{}: {e}", path.display())))?;
        c.requests = lines.iter().map(|l| l.spec.clone()).collect();
        c.workload.lines = lines;
        c.apply_headers_to_request_set();
        c.resolve_request_targets()?;
    }
    llm_and_stream(a, &mut c)?;
    if let Some(text) = &a.goodput {
        c.goodput = Some(
            candor_load::stream::goodput::GoodputSlo::parse(text)
                .map_err(|e| FlagError::Invalid(e.to_string()))?,
        );
    }
    c.workload.seed = a.seed;
    if let Some(path) = &a.data {
        c.workload.data = Some(std::sync::Arc::new(DataTable::load(path)?));
    }
    c.workload.data_order = match a.data_order {
        DataOrderArg::Sequential => DataOrder::Sequential,
        DataOrderArg::Random => DataOrder::Random,
    };
    if let Some(text) = &a.check_body {
        c.workload.checks.body = Some(BodyNeedle::new(text.as_bytes())?);
    }
    for h in &a.check_header {
        c.workload.checks.headers.push(HeaderCheck::parse(h)?);
    }
    c.request_order = match a.request_order {
        RequestOrderArg::RoundRobin => candor_load::RequestOrder::RoundRobin,
        RequestOrderArg::Random => candor_load::RequestOrder::Random { seed: a.seed },
    };
    protocol.payload = match (&a.payload, &a.payload_file) {
        (Some(p), _) => candor_load::protocol::tcp::parse_payload(p)
            .map_err(|e| FlagError::Invalid(format!("--payload: {e}")))?,
        (None, Some(path)) => read(path, "--payload-file", MAX_BODY_FILE_BYTES, None)?,
        (None, None) => Vec::new(),
    };
    protocol.framing = if let Some(n) = a.expect_bytes {
        Some(candor_load::Framing::ExpectBytes(n))
    } else if let Some(d) = &a.expect_delimiter {
        Some(candor_load::Framing::Delimiter(
            candor_load::protocol::tcp::unescape(d),
        ))
    } else if let Some(kind) = &a.length_prefix {
        let width = match kind.as_str() {
            "u8" => 1,
            "u16be" | "u16" => 2,
            "u32be" | "u32" => 4,
            "u64be" | "u64" => 8,
            other => {
                return Err(FlagError::Invalid(format!(
                    "invalid --length-prefix '{other}': expected u8, u16be, u32be or u64be"
                )))
            }
        };
        Some(candor_load::Framing::LengthPrefix { width })
    } else {
        None
    };
    // After the data and the seed: a templated gRPC message's first request is filled here.
    crate::grpc_flags::apply(&crate::grpc_flags::GrpcFlags::of(a), &mut c)?;
    // The protocol checks its own flags (here: a status to check, where there is one).
    let protocol = candor_load::registry::choose(&c.target, protocol)?;
    if let Some(list) = a.check_status.as_ref().filter(|_| c.grpc.is_none()) {
        c.accept_status = candor_load::StatusSet::parse(list)
            .map_err(|e| FlagError::Invalid(format!("invalid --check-status '{list}': {e}")))?;
    }
    c.apply_url_credentials();
    if let Some(shard) = &a.shard {
        (c.shard_index, c.shard_count) = parse_shard(shard)?;
    }
    if let Some(at) = &a.start_at {
        let ns = parse_start_at(at)?;
        check_start_ahead(at, ns, candor_core::clock::wall_clock_ns(), a.start_at_far)?;
        c.start_at_wall_ns = Some(ns);
    }
    let plan = RunPlan {
        config: c,
        protocol,
    };
    plan.validate()?;
    Ok(plan)
}

/// Threads when -t is not given (fewer when -c asks for fewer connections).
pub use candor_load::config::DEFAULT_THREADS;

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Run {
        #[command(flatten)]
        run: RunArgs,
    }

    fn config_of(args: &[&str]) -> Result<RunPlan> {
        let parsed = Run::try_parse_from(std::iter::once("run").chain(args.iter().copied()))
            .map_err(|e| FlagError::Invalid(e.to_string()))?;
        run_config(&parsed.run)
    }

    #[test]
    fn an_llm_run_without_goodput_takes_its_bounds_from_slo_and_goodput_wins_when_given() {
        let url = "http://127.0.0.1:9/";
        let c = config_of(&[
            "--llm",
            "openai",
            "--slo",
            "ttft.p99<500ms,tpot.p99<50ms",
            url,
        ]);
        assert_eq!(
            c.unwrap().goodput.map(|g| g.to_string()).as_deref(),
            Some("ttft<500ms,tpot<50ms")
        );
        let c = config_of(&[
            "--llm",
            "openai",
            "--slo",
            "ttft.p99<500ms",
            "--goodput",
            "ttft<1s",
            url,
        ]);
        assert_eq!(
            c.unwrap().goodput.map(|g| g.to_string()).as_deref(),
            Some("ttft<1s")
        );
        // Not an LLM run: no goodput, whatever --slo says.
        let c = config_of(&["--slo", "p99<2s", url]).unwrap();
        assert!(c.goodput.is_none());
    }

    #[test]
    fn llm_on_a_target_that_is_not_http_names_that_conflict_alone() {
        for (url, says) in [
            ("grpc://127.0.0.1:9", "not grpc://"),
            ("grpcs://127.0.0.1:9", "not grpcs://"),
            ("ws://127.0.0.1:9/", "not ws://"),
            ("tcp://127.0.0.1:9", "not tcp://"),
        ] {
            let e = config_of(&["--llm", "openai", url])
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("--llm needs an http:// or https:// target"),
                "{url}: {e}"
            );
            assert!(e.contains(says), "{url}: {e}");
            assert!(
                !e.contains("--call") && !e.contains("--method"),
                "{url}: {e}"
            );
        }
    }

    #[test]
    fn the_flags_defaults_are_the_engines() {
        let url = "http://127.0.0.1:1/";
        let flags = config_of(&[url]).unwrap();
        let engine = RunPlan::new(Target::parse(url).unwrap(), Default::default()).unwrap();
        assert_eq!(
            (flags.connections, flags.threads, flags.protocol.slots()),
            (engine.connections, engine.threads, engine.protocol.slots())
        );
        // HTTP/2's streams per connection: the flag's default is the protocol's.
        let h2 = config_of(&[url, "--h2"]).unwrap();
        let h2_engine = RunPlan::new(
            Target::parse(url).unwrap(),
            candor_load::ProtocolFlags {
                h2: true,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(h2.protocol.slots(), h2_engine.protocol.slots());
        assert_eq!(
            (
                flags.duration_ns,
                flags.timeout_ns,
                flags.drain_ns,
                flags.warmup_ns
            ),
            (
                engine.duration_ns,
                engine.timeout_ns,
                engine.drain_ns,
                engine.warmup_ns
            )
        );
        assert_eq!(flags.method, engine.method);
        assert_eq!(flags.shape.rate_per_s(), engine.shape.rate_per_s());
        assert_eq!(flags.shape.arrival(), engine.shape.arrival());
    }

    #[test]
    fn rate_count_stages_and_max_become_one_shape() {
        let url = "http://127.0.0.1:1/";
        let shape = |args: &[&str]| {
            config_of(&[args, &[url]].concat())
                .map(|c| (c.config.shape, c.config.duration_ns))
                .map_err(|e| e.to_string())
        };
        assert!(matches!(
            shape(&["-R", "max"]),
            Ok((LoadShape::ClosedLoop, 10_000_000_000))
        ));
        assert!(matches!(
            shape(&["-R", "2k", "-d", "3s", "--arrival", "poisson", "--seed", "9"]),
            Ok((LoadShape::Rate { per_s, arrival: ArrivalKind::Poisson { seed: 9 } }, 3_000_000_000)) if per_s == 2000.0
        ));
        // -n: the window holds exactly N sends at the rate.
        assert!(matches!(
            shape(&["-R", "100", "-n", "50"]),
            Ok((LoadShape::Count { count: 50, .. }, 500_000_000))
        ));
        // Stages: the run lasts their sum.
        assert!(matches!(
            shape(&["-R", "100:1s,100..300:2s"]),
            Ok((LoadShape::Stages { .. }, 3_000_000_000))
        ));
        assert_eq!(
            shape(&["-R", "max", "-n", "5"]).unwrap_err(),
            "-n needs a rate (-R): the N requests are sent on the open-loop schedule"
        );
        assert!(shape(&["-R", "10", "-n", "5", "--arrival", "poisson"])
            .unwrap_err()
            .starts_with("-n needs --arrival constant"));
    }

    #[test]
    fn rates_that_must_offer_a_load_refuse_max() {
        assert_eq!(open_rate("2k", "--min").unwrap(), 2000.0);
        assert_eq!(
            open_rate("max", "--min").unwrap_err().to_string(),
            "--min must be a rate, not 'max' (a closed loop offers no load of its own)"
        );
        assert!(open_rate("fast", "--rates").is_err());
    }

    #[test]
    fn start_instants_outside_what_a_u64_of_nanoseconds_holds_are_refused() {
        for bad in [
            "1e300",
            "inf",
            "NaN",
            "-5",
            "0",
            "9999-01-01T00:00:00Z",
            "1969-12-31T23:59:59Z",
        ] {
            assert!(parse_start_at(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_start_at("1.5").unwrap(), 1_500_000_000);
        assert_eq!(
            parse_start_at("2026-11-22T00:00:00Z").unwrap(),
            1_795_305_600_000_000_000
        );
        let now = 1_795_000_000_000_000_000;
        let day = START_AT_HORIZON_NS;
        assert!(check_start_ahead("x", now + day, now, false).is_ok());
        assert!(check_start_ahead("x", now + day + 1, now, false).is_err());
        assert!(check_start_ahead("x", now + 400 * day, now, true).is_ok());
        assert!(check_start_ahead("x", now - day, now, false).is_ok());
    }
}

/// `--script-memory`: bytes, or a number with `KiB`, `MiB` or `GiB` (`K`, `M`, `G` the same), at
/// least 1 MiB (a Lua state with its libraries and the wrk module holds a few hundred KiB).
fn parse_script_memory(s: &str) -> std::result::Result<usize, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kib" => 10,
        "m" | "mib" => 20,
        "g" | "gib" => 30,
        _ => return Err(format!("{s:?} is not a size (say 64MiB or 1GiB)")),
    };
    let n: usize = digits
        .parse()
        .map_err(|_| format!("{s:?} is not a size (say 64MiB or 1GiB)"))?;
    let bytes = n
        .checked_mul(1 << shift)
        .ok_or_else(|| format!("{s:?} is too large"))?;
    if bytes < 1 << 20 {
        return Err(format!(
            "{s:?} is less than 1MiB, too little for a Lua state"
        ));
    }
    Ok(bytes)
}

#[cfg(test)]
mod script_memory_tests {
    use super::parse_script_memory;

    #[test]
    fn sizes_in_bytes_and_binary_units() {
        assert_eq!(parse_script_memory("64MiB"), Ok(64 << 20));
        assert_eq!(parse_script_memory("1G"), Ok(1 << 30));
        assert_eq!(parse_script_memory("2097152"), Ok(2 << 20));
        assert!(parse_script_memory("512KiB").is_err());
        assert!(parse_script_memory("lots").is_err());
        assert!(parse_script_memory("99999999999999999999G").is_err());
    }
}
