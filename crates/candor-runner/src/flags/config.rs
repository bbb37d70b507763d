//! The flags made one validated `LoadConfig`, each concern set by its own module in an order
//! that decides which of two wrong flags is named first.

use super::args::{LoadArgs, RunArgs};
use super::error::{FlagError, Result};
use super::shape::{arrival, run_shape, window_ns};
use super::{protocol, requests, stream};
use crate::shard_flags::{check_start_ahead, parse_shard, parse_start_at};
use candor_core::units::DurationArg;
use candor_load::config::DEFAULT_THREADS;
use candor_load::{LoadConfig, LoadConfigError, LoadShape, ProtocolFlags, RunPlan, Target};
use std::sync::Arc;

/// Validated settings of `candor run`: `-R` as one rate, `max`, or a load profile of stages, or
/// `--replay`'s trace.
pub fn run_config(args: &RunArgs) -> Result<RunPlan> {
    let mut c = shape_config(&args.load, run_shape(args)?)?;
    // An unreadable --slo is refused where the objectives are parsed.
    if let Ok(slos) = candor_analysis::SloSet::parse_all(&args.slo) {
        goodput_from_slo(&mut c, &slos)?;
    }
    Ok(c)
}

/// An LLM run without --goodput judges goodput by the per-request bounds its --slo sets; a
/// goodput objective (`goodput>=90%`) with no bounds to judge requests by is refused.
pub fn goodput_from_slo(c: &mut RunPlan, slos: &candor_analysis::SloSet) -> Result<()> {
    if c.goodput.is_none() && c.stream.llm {
        c.goodput = crate::goodput_of_slo::goodput_of_slo(&slos.objectives);
    }
    match slos
        .objectives
        .iter()
        .find(|o| o.metric == candor_analysis::slo::Metric::Goodput)
    {
        Some(o) if c.goodput.is_none() => Err(FlagError::Invalid(format!(
            "--slo {}: no per-request bounds to judge goodput by: give --goodput (e.g. \
             'ttft<500ms,tpot<50ms') or ttft, tpot or response-time objectives, with --llm",
            o.text
        ))),
        _ => Ok(()),
    }
}

/// Validated settings from the flags, at `rate` (`None`: closed loop), optionally for exactly
/// `count` requests (`-n`).
pub fn load_config(a: &LoadArgs, rate: Option<f64>, count: Option<u64>) -> Result<RunPlan> {
    let shape = LoadShape::of_rate(rate, arrival(a), count).map_err(LoadConfigError::from)?;
    shape_config(a, shape)
}

/// Validated settings from the flags, offering the load `shape`; the measured window is the
/// shape's own when it has one (`-n` at its rate, the stages, a trace), else `-d`.
pub fn shape_config(a: &LoadArgs, shape: LoadShape) -> Result<RunPlan> {
    let target = Target::parse(&a.url)?;
    let mut c = LoadConfig::new(target);
    let mut protocol = ProtocolFlags::default();
    c.connections = a.max_concurrency.unwrap_or(a.connections);
    if a.max_concurrency == Some(0) {
        return Err(FlagError::Invalid(
            "--max-concurrency must be at least 1".to_string(),
        ));
    }
    c.threads = a
        .threads
        .unwrap_or(DEFAULT_THREADS.min(c.connections.max(1)));
    // Not given: LoadConfig's default window, set by `new`.
    c.duration_ns = window_ns(a, &shape, c.duration_ns)?;
    c.shape = shape;
    c.timeout_ns = a.timeout.ns();
    c.event_timeout_ns = a.event_timeout.as_ref().map_or(0, DurationArg::ns);
    if a.event_timeout.is_some() && c.event_timeout_ns == 0 {
        return Err(FlagError::Invalid(
            "--event-timeout must be positive".to_string(),
        ));
    }
    c.warmup_ns = a.warmup.as_ref().map_or(0, DurationArg::ns);
    c.drain_ns = a.drain.as_ref().map_or(c.timeout_ns, DurationArg::ns);
    c.spin_ns = a.spin.as_ref().map(DurationArg::ns);
    requests::message(a, &mut c)?;
    protocol::connection_flags(a, &mut c, &mut protocol)?;
    requests::request_file(a, &mut c)?;
    stream::stream_flags(a, &mut c)?;
    requests::workload_flags(a, &mut c)?;
    protocol::tcp_flags(a, &mut protocol)?;
    // After the data and the seed: a templated gRPC message's first request is filled here.
    protocol.grpc =
        crate::grpc_flags::apply(&crate::grpc_flags::GrpcFlags::of(a), &mut c)?.map(Arc::new);
    // The protocol the target and its flags choose, which checks its own flags.
    let unit = candor_load::registry::choose(&c.target, protocol)?;
    if a.max_concurrency.is_some() && unit.slots().per_connection != 1 {
        return Err(FlagError::Invalid(format!(
            "--max-concurrency caps requests in flight at one per connection (HTTP/1.1), but \
             each connection here carries {}: use -c and --streams",
            unit.slots().per_connection
        )));
    }
    protocol::check_status(a, &mut c)?;
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
        protocol: unit,
    };
    plan.validate()?;
    Ok(plan)
}

/// `candor run`'s validated settings from load flags written as one argument (`words`, as
/// `flag` took them, e.g. calibrate's `--noise-load "-R 1k -c 8"`) against `url`, quiet.
pub fn run_config_of_words(flag: &'static str, words: &str, url: &str) -> Result<RunPlan> {
    use clap::{Args as _, FromArgMatches as _};
    let mut argv = vec!["run".to_string(), "--quiet".to_string()];
    argv.extend(words.split_whitespace().map(str::to_string));
    argv.push(url.to_string());
    let matches = RunArgs::augment_args(clap::Command::new("run"))
        .try_get_matches_from(&argv)
        .map_err(|e| {
            let first = e.to_string();
            let first = first
                .lines()
                .next()
                .unwrap_or("")
                .trim_start_matches("error: ");
            FlagError::Invalid(format!("{flag} {words:?}: {first}"))
        })?;
    let run_args =
        RunArgs::from_arg_matches(&matches).map_err(|e| FlagError::Invalid(e.to_string()))?;
    run_config(&run_args)
}

#[cfg(test)]
mod tests {
    use super::*;
    use candor_load::schedule::ArrivalKind;
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
    fn max_concurrency_caps_requests_in_flight_with_one_connection_each() {
        let url = "http://127.0.0.1:9/";
        let c = config_of(&["--llm", "openai", "--max-concurrency", "3", url]).unwrap();
        assert_eq!(
            (c.connections, c.threads, c.protocol.slots().per_connection),
            (3, 2, 1)
        );
        let err = |args: &[&str]| config_of(args).unwrap_err().to_string();
        assert!(err(&["--llm", "openai", "--max-concurrency", "0", url])
            .contains("--max-concurrency must be at least 1"));
        assert!(err(&["--max-concurrency", "3", url]).contains("--llm"));
        assert!(
            err(&["--llm", "openai", "--max-concurrency", "3", "-c", "8", url])
                .contains("cannot be used with")
        );
        assert!(
            err(&["--llm", "openai", "--max-concurrency", "3", "--h2", url])
                .contains("use -c and --streams")
        );
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
            ProtocolFlags {
                switches: vec![&candor_load::registry::H2],
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
}
