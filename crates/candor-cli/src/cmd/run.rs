//! `candor run`: parse and validate the flags once, run the engine, print the report.

pub use crate::cmd::load_args::*;
use crate::cmd::outputs::Output;
use anyhow::{Context, Result};
use candor_core::results::{RunResults, StopReason};
use candor_core::units::{format_ns, format_rate};
use candor_load::run::RunOptions;
use candor_load::schedule::ArrivalKind;
use candor_load::{IntervalReport, LoadConfig};
use std::io::Write as _;
use std::sync::Arc;

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
        "spin_us": c.spin_ns.map(|n| n as f64 / 1e3),
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
