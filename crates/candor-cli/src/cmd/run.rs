//! `candor run`: parse and validate the flags once, run the engine, print the report.

use crate::cmd::outputs::Output;
use anyhow::{Context, Result};
use candor_core::results::{RunResults, StopReason};
use candor_core::units::{format_ns, format_rate, parse_duration_ns, parse_rate, Rate};
use candor_load::run::RunOptions;
use candor_load::schedule::ArrivalKind;
use candor_load::{IntervalReport, LoadConfig, Target};
use clap::{Args, ValueEnum};
use std::io::Write as _;
use std::sync::Arc;

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
    #[arg(short = 'c', long, default_value_t = 16)]
    pub connections: usize,
    /// Number of load threads; connections and rate are shared evenly between them.
    #[arg(short = 't', long, default_value_t = 2)]
    pub threads: usize,
    /// Length of the measured window, with its unit: us, ms, s, m or h (a bare number is refused).
    #[arg(short = 'd', long, default_value = "10s", value_name = "DUR")]
    pub duration: String,
    /// A request with no full response this long after it was written fails as a timeout
    /// (its response time is recorded as its age at that moment) and its connection is reopened.
    /// With its unit (a bare number is refused).
    #[arg(short = 'T', long, default_value = "2s", value_name = "DUR")]
    pub timeout: String,
    /// Extra request header, "Name: value" (repeatable).
    #[arg(short = 'H', long = "header", value_name = "HEADER")]
    pub headers: Vec<String>,
    /// HTTP method.
    #[arg(short = 'm', long, default_value = "GET")]
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
    pub warmup: String,
    /// How intended send times are spaced.
    #[arg(long, value_enum, default_value = "constant")]
    pub arrival: ArrivalArg,
    /// Seed of the Poisson arrival generator (same seed, same schedule).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// After the last intended send, wait this long for outstanding requests (default: the timeout);
    /// whatever is still unfinished is reported with its age.
    #[arg(long, value_name = "DUR")]
    pub drain: Option<String>,
    /// Advanced: spin on the clock for this long before each intended send instead of sleeping
    /// (precision against CPU use).
    #[arg(long, default_value = "60us", value_name = "DUR")]
    pub spin: String,
    /// Run as shard I of N of one schedule (0-based): this process sends its share 1/N of the
    /// total rate, interleaved so that the N shards together form the single-process schedule.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// Wall-clock instant of the first intended send (RFC 3339, e.g. 2026-11-21T23:00:00Z, or Unix
    /// epoch seconds), so that shards on several machines begin together.
    #[arg(long, value_name = "TIME")]
    pub start_at: Option<String>,
    /// HTTP/1.1 pipelining: up to N requests in flight per connection, each timed from its own
    /// intended send time.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub pipeline: usize,
    /// Speak HTTP/2 (prior knowledge over http://, ALPN over https://).
    #[arg(long)]
    pub h2: bool,
    /// HTTP/2: concurrent streams per connection; a due request waits for a free stream.
    #[arg(long, default_value_t = 100, value_name = "N")]
    pub streams: usize,
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
    /// HTTP statuses that count as success: codes, classes or ranges, e.g. '200,404' or
    /// '2xx,3xx'; any other response fails (class "status"), its latency still recorded.
    /// Default: everything below 400.
    #[arg(long, value_name = "LIST")]
    pub check_status: Option<String>,
    /// Target URL: http://host:port/path (port optional), https://..., or tcp://host:port.
    /// `http://user:password@host/` sends Basic authorization (percent-decoded, as curl does)
    /// unless an Authorization header is given.
    pub url: String,
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
    /// "max" for a closed loop where each connection sends as soon as its previous response arrives.
    #[arg(
        short = 'R',
        long = "rate",
        default_value = "1k",
        value_name = "RATE",
        allow_hyphen_values = true
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
    /// one PASS/FAIL line each after the report; exit code 3 if any fails.
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
    pub live_view: crate::cmd::live::LiveArgs,
}

/// Parses `-R`: a rate per second, or `None` for a closed loop (`max`).
pub fn rate_flag(text: &str) -> Result<Option<f64>> {
    Ok(match parse_rate(text).context("-R/--rate")? {
        Rate::PerSecond(r) => Some(r),
        Rate::Max => None,
    })
}

/// The window of `-n N` at `rate`: long enough to hold all N intended sends (the schedule itself
/// stops after exactly N, see `Schedule::with_limit`).
pub fn count_window_ns(count: u64, rate: f64) -> u64 {
    (count as f64 * 1e9 / rate).ceil().max(1.0) as u64
}

/// Validated settings from the flags, at `rate` (`None`: closed loop), optionally for exactly
/// `count` requests (`-n`).
pub fn load_config(a: &LoadArgs, rate: Option<f64>, count: Option<u64>) -> Result<LoadConfig> {
    let target = Target::parse(&a.url)?;
    let mut c = LoadConfig::new(target);
    c.rate = rate;
    c.connections = a.connections;
    c.threads = a.threads;
    c.duration_ns = parse_duration_ns(&a.duration).context("--duration")?;
    if let (Some(n), Some(r)) = (count, rate) {
        c.duration_ns = count_window_ns(n, r);
    }
    c.count = count;
    c.timeout_ns = parse_duration_ns(&a.timeout).context("--timeout")?;
    c.warmup_ns = parse_duration_ns(&a.warmup).context("--warmup")?;
    c.drain_ns = match &a.drain {
        Some(d) => parse_duration_ns(d).context("--drain")?,
        None => c.timeout_ns,
    };
    c.spin_ns = parse_duration_ns(&a.spin).context("--spin")?;
    c.arrival = match a.arrival {
        ArrivalArg::Constant => ArrivalKind::Constant,
        ArrivalArg::Poisson => ArrivalKind::Poisson { seed: a.seed },
    };
    c.method = a.method.to_ascii_uppercase();
    c.headers = a.headers.clone();
    c.body = match (&a.body, &a.body_file) {
        (Some(b), _) => b.clone().into_bytes(),
        (None, Some(path)) => std::fs::read(path)
            .with_context(|| format!("reading --body-file {}", path.display()))?,
        (None, None) => Vec::new(),
    };
    c.pipeline = a.pipeline;
    c.http2 = a.h2;
    c.streams = a.streams;
    c.tls = candor_load::TlsOptions {
        insecure: a.insecure,
        ca_file: a.ca.clone(),
    };
    if let Some(path) = &a.requests {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading --requests {}", path.display()))?;
        c.requests = candor_load::requests::parse_request_set(&text)
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    }
    c.request_order = match a.request_order {
        RequestOrderArg::RoundRobin => candor_load::RequestOrder::RoundRobin,
        RequestOrderArg::Random => candor_load::RequestOrder::Random { seed: a.seed },
    };
    c.payload = match (&a.payload, &a.payload_file) {
        (Some(p), _) => {
            candor_load::tcp::parse_payload(p).map_err(|e| anyhow::anyhow!("--payload: {e}"))?
        }
        (None, Some(path)) => std::fs::read(path)
            .with_context(|| format!("reading --payload-file {}", path.display()))?,
        (None, None) => Vec::new(),
    };
    c.framing = if let Some(n) = a.expect_bytes {
        Some(candor_load::Framing::ExpectBytes(n))
    } else if let Some(d) = &a.expect_delimiter {
        Some(candor_load::Framing::Delimiter(candor_load::tcp::unescape(
            d,
        )))
    } else if let Some(kind) = &a.length_prefix {
        let width = match kind.as_str() {
            "u8" => 1,
            "u16be" | "u16" => 2,
            "u32be" | "u32" => 4,
            "u64be" | "u64" => 8,
            other => anyhow::bail!(
                "invalid --length-prefix '{other}': expected u8, u16be, u32be or u64be"
            ),
        };
        Some(candor_load::Framing::LengthPrefix { width })
    } else {
        None
    };
    if let Some(list) = &a.check_status {
        if c.target.scheme == candor_load::Scheme::Tcp {
            anyhow::bail!(
                "--check-status applies to HTTP targets; raw tcp:// responses have no status"
            );
        }
        c.accept_status = candor_load::StatusSet::parse(list)
            .map_err(|e| anyhow::anyhow!("invalid --check-status '{list}': {e}"))?;
    }
    c.apply_url_credentials();
    if let Some(shard) = &a.shard {
        (c.shard_index, c.shard_count) = parse_shard(shard)?;
    }
    if let Some(at) = &a.start_at {
        c.start_at_wall_ns = Some(parse_start_at(at)?);
    }
    c.validate()?;
    Ok(c)
}

/// Parses `I/N`.
pub fn parse_shard(text: &str) -> Result<(u32, u32)> {
    let parsed = text
        .split_once('/')
        .and_then(|(i, n)| Some((i.trim().parse::<u32>().ok()?, n.trim().parse::<u32>().ok()?)));
    match parsed {
        Some((i, n)) if n > 0 && i < n => Ok((i, n)),
        _ => anyhow::bail!("invalid --shard '{text}': expected I/N with 0 <= I < N, e.g. 0/4"),
    }
}

/// Parses an RFC 3339 timestamp or Unix epoch seconds into wall-clock nanoseconds.
pub fn parse_start_at(text: &str) -> Result<u64> {
    if let Ok(secs) = text.trim().parse::<f64>() {
        if secs.is_finite() && secs > 0.0 {
            return Ok((secs * 1e9) as u64);
        }
    }
    let t = humantime::parse_rfc3339_weak(text.trim()).map_err(|_| {
        anyhow::anyhow!("invalid --start-at '{text}': expected RFC 3339 (2026-11-21T23:00:00Z) or epoch seconds")
    })?;
    Ok(t.duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0))
}

/// The configuration as recorded in the results.
pub fn config_json(c: &LoadConfig) -> serde_json::Value {
    serde_json::json!({
        "rate_per_s": c.rate,
        "connections": c.connections,
        "threads": c.threads,
        "duration_s": c.duration_ns as f64 / 1e9,
        "requests_total": c.count,
        "warmup_s": c.warmup_ns as f64 / 1e9,
        "timeout_s": c.timeout_ns as f64 / 1e9,
        "drain_s": c.drain_ns as f64 / 1e9,
        "arrival": match c.arrival { ArrivalKind::Constant => "constant".to_string(), ArrivalKind::Poisson { .. } => "poisson".to_string() },
        "seed": match c.arrival { ArrivalKind::Poisson { seed } => Some(seed), ArrivalKind::Constant => None },
        "method": c.method,
        // Credentials stay out of results files, which are made to be shared.
        "headers": c.headers.iter().map(|h| redact_header(h)).collect::<Vec<_>>(),
        "check_status": (c.target.scheme != candor_load::Scheme::Tcp).then(|| c.accept_status.to_string()),
        "body_bytes": c.body.len(),
        "interval_s": c.interval_ns as f64 / 1e9,
        "spin_us": c.spin_ns as f64 / 1e3,
        "shard_index": c.shard_index,
        "shard_count": c.shard_count,
        "start_at_unix_s": c.start_at_wall_ns.map(|n| n as f64 / 1e9),
        "protocol": match (c.target.scheme, c.http2) {
            (candor_load::Scheme::Tcp, _) => "tcp",
            (candor_load::Scheme::Https, true) => "h2 (TLS)",
            (candor_load::Scheme::Http, true) => "h2c",
            (candor_load::Scheme::Https, false) => "http/1.1 (TLS)",
            (candor_load::Scheme::Http, false) => "http/1.1",
        },
        "pipeline": c.pipeline,
        "streams": c.http2.then_some(c.streams),
        "request_set_size": (!c.requests.is_empty()).then_some(c.requests.len()),
        "tls_insecure": c.tls.insecure,
    })
}

/// `Authorization: (redacted)` for an Authorization header line, the line itself otherwise.
fn redact_header(line: &str) -> String {
    match line.split_once(':') {
        Some((name, _)) if name.trim().eq_ignore_ascii_case("authorization") => {
            format!("{}: (redacted)", name.trim())
        }
        _ => line.to_string(),
    }
}

/// This process's command line for the results, with the URL's password hidden as in the
/// target and Authorization header values hidden as in the configuration.
pub fn command_line(config: &LoadConfig, url_given: &str) -> Vec<String> {
    let mut header_value_next = false;
    std::env::args()
        .map(|arg| {
            let redact_value = std::mem::take(&mut header_value_next);
            header_value_next = arg == "-H" || arg == "--header";
            if arg == url_given {
                config.target.url.clone()
            } else if redact_value {
                redact_header(&arg)
            } else if let Some(h) = arg.strip_prefix("--header=") {
                format!("--header={}", redact_header(h))
            } else {
                arg
            }
        })
        .collect()
}

/// Runs a configured load test with an optional live line on stderr; Ctrl-C stops it early.
pub fn execute(config: &LoadConfig, live: bool) -> Result<candor_load::RunOutcome> {
    execute_with(config, live, None)
}

/// [`execute`] with a hook called with the monotonic instant of the first intended send.
pub fn execute_with(
    config: &LoadConfig,
    live: bool,
    on_start: Option<Arc<dyn Fn(u64) + Send + Sync>>,
) -> Result<candor_load::RunOutcome> {
    execute_watched(config, live, on_start, &mut |_| None)
}

/// [`execute_with`] with a watch called after every interval: when it names a reason, the
/// measured window ends early for it (see `candor_load::run::EarlyEnd`).
pub fn execute_watched(
    config: &LoadConfig,
    live: bool,
    on_start: Option<Arc<dyn Fn(u64) + Send + Sync>>,
    watch: &mut dyn FnMut(&IntervalReport) -> Option<StopReason>,
) -> Result<candor_load::RunOutcome> {
    crate::cmd::fdlimit::ensure(config.connections, config.threads)?;
    // Fail before starting threads if nothing listens there, or if it does not speak the
    // protocol of the run (TLS and its certificate, HTTP/2): a run in which nothing could work
    // must not look like a result.
    let probe_timeout = std::time::Duration::from_millis((config.timeout_ns / 1_000_000).max(100));
    config.target.check_reachable(probe_timeout)?;
    candor_load::probe::check_protocol(config, probe_timeout)?;
    let stop = crate::cmd::interrupt::install()?.stop.clone();
    crate::cmd::live::begin(config);
    let end = Arc::new(candor_load::run::EarlyEnd::default());
    let options = RunOptions {
        stop: stop.clone(),
        end: end.clone(),
        worker_start_hook: None,
        on_start,
    };
    let mut total_failed = 0u64;
    let mut on_interval = |r: &IntervalReport| {
        crate::cmd::live::interval(r);
        if end.requested().is_none() {
            if let Some(reason) = watch(r) {
                end.request(reason);
            }
        }
        total_failed += r.failed;
        if live {
            let mut err = std::io::stderr().lock();
            let _ = write!(
                err,
                "\r\x1b[2K[{:>6.1}s / {:.0}s{}] {:>10}  failures {}  p99 {}  max {}",
                r.elapsed_s,
                r.total_s,
                if r.warmup { " warm-up" } else { "" },
                format_rate(r.completed as f64 / r.length_s),
                total_failed,
                format_ns(r.response_time.p99_ns as f64),
                format_ns(r.response_time.max_ns as f64),
            );
            let _ = err.flush();
        }
    };
    let outcome = candor_load::run(config, options, &mut on_interval)?;
    crate::cmd::live::finish(&outcome, stop.load(std::sync::atomic::Ordering::Relaxed));
    if live {
        eprint!("\r\x1b[2K");
    }
    Ok(outcome)
}

pub fn stderr_is_terminal() -> bool {
    // SAFETY: isatty only inspects the descriptor.
    unsafe { libc::isatty(2) == 1 }
}

pub fn main(args: RunArgs) -> Result<i32> {
    let config = load_config(&args.load, rate_flag(&args.rate)?, args.count)?;
    let live = !args.quiet && stderr_is_terminal();
    let mut extras = crate::cmd::pause::RunExtras::from_flags(
        &args.slo,
        &args.precision,
        args.abort_on_fail,
        args.pause_pid,
        args.pause_at.as_deref(),
        args.pause_for.as_deref(),
        args.expect,
        &config,
    )?;
    let json_to_stdout = args.json.as_deref() == Some("-");
    // Every output is opened before the load starts: a bad path costs a second, not the run.
    let mut json_out = Output::open_opt("--json", args.json.as_deref().filter(|p| *p != "-"))?;
    let mut hlog_out = Output::open_opt("--hlog", args.hlog.as_deref())?;
    let mut hgrm_out = Output::open_opt("--hgrm", args.hgrm.as_deref())?;
    let live_view = crate::cmd::live::start(&args.live_view)?;
    let outcome = extras.execute(&config, live)?;
    let mut results = outcome.to_results(
        &config,
        command_line(&config, &args.load.url),
        config_json(&config),
    );
    let (verdict_text, code) = extras.finish(&outcome, &config, &mut results);
    let mut text = candor_report::text::render(&results);
    if args.latency {
        text.push_str(&spectrum(&results)?);
    }
    text.push_str(&verdict_text);
    let interrupted = crate::cmd::interrupt::received();
    if let (Some(sig), Some(after)) = (interrupted, outcome.interrupted_after_ns) {
        text.push_str(&format!(
            "\ninterrupted by {} after {:.1} s: partial results\n",
            crate::cmd::interrupt::name(sig),
            after as f64 / 1e9
        ));
    }
    if json_to_stdout {
        eprint!("{text}");
        println!("{}", results.to_json_pretty());
    } else {
        print!("{text}");
    }
    let written = write_outputs(
        &results,
        json_out.as_mut(),
        hlog_out.as_mut(),
        hgrm_out.as_mut(),
    );
    if let Some(l) = live_view {
        l.close();
    }
    if !written {
        return Ok(1);
    }
    if let Some(sig) = interrupted {
        return Ok(crate::cmd::interrupt::exit_code(sig));
    }
    // Written and reported above; a run where nothing worked must not pass for a result.
    if let Some(diagnosis) = candor_report::text::no_success(&results.main.requests) {
        if code != 0 {
            // A failed SLO already set the exit code the verdict announced; keep it.
            eprintln!("candor: error: {diagnosis}");
            return Ok(code);
        }
        anyhow::bail!(diagnosis);
    }
    Ok(code)
}

/// Writes the JSON, `.hlog` and `.hgrm` outputs that were asked for, each independently of the
/// others; false if any failed (each failure already printed).
pub fn write_outputs(
    results: &RunResults,
    json: Option<&mut Output>,
    hlog: Option<&mut Output>,
    hgrm: Option<&mut Output>,
) -> bool {
    let mut items: Vec<(&mut Output, Result<Vec<u8>>)> = Vec::new();
    if let Some(o) = json {
        items.push((o, Ok((results.to_json_pretty() + "\n").into_bytes())));
    }
    if let Some(o) = hlog {
        items.push((o, Ok(candor_report::hlog::write_hlog(results).into_bytes())));
    }
    if let Some(o) = hgrm {
        let bytes = results
            .main
            .histograms
            .decode()
            .context("decoding histograms")
            .map(|rec| candor_report::hgrm::write_hgrm(&rec.response, 5, 1e6).into_bytes());
        items.push((o, bytes));
    }
    crate::cmd::outputs::write_all(items)
}

/// The full percentile spectrum of the response and service times, in milliseconds.
fn spectrum(results: &RunResults) -> Result<String> {
    let rec = results
        .main
        .histograms
        .decode()
        .context("decoding histograms")?;
    let mut out = String::new();
    out.push_str("\nResponse time (from intended send), percentile spectrum in ms:\n");
    out.push_str(&candor_report::hgrm::write_hgrm(&rec.response, 5, 1e6));
    out.push_str("\nService time (from actual send), percentile spectrum in ms:\n");
    out.push_str(&candor_report::hgrm::write_hgrm(&rec.service, 5, 1e6));
    Ok(out)
}
