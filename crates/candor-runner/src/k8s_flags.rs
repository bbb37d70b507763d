//! `candor k8s`'s checks, made on this machine before any pod exists: the `candor run` flags
//! every pod is given, parsed and validated with `candor run`'s own code (without resolving the
//! target's host, which usually exists only inside the cluster, or reading the files the pods
//! read), and the Job's common start.

use crate::flags::{load_config, parse_start_at, run_config, FlagError, RunArgs};
use crate::shard_flags::START_AT_HORIZON_NS;
use candor_load::config::TargetUrl;
use clap::Parser;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Why the Job cannot be made as asked, in one line.
#[derive(Debug, thiserror::Error)]
pub enum K8sFlagError {
    /// A run flag the pods cannot be given.
    #[error("{0}")]
    Refused(&'static str),
    /// clap's message up to its usage block.
    #[error("invalid candor run flags after --: {0}")]
    Parse(String),
    #[error(transparent)]
    Target(#[from] candor_load::TargetError),
    #[error(transparent)]
    Flags(#[from] FlagError),
    #[error(transparent)]
    Push(#[from] candor_push::PushError),
    #[error(
        "the common start is {days:.1} days ahead: each pod's candor run refuses a --start-at more than a day \
         ahead; apply the manifest closer to the start"
    )]
    TooFarAhead { days: f64 },
}

#[derive(Parser, Debug)]
#[command(name = "candor run", no_binary_name = true)]
struct RunFlags {
    #[command(flatten)]
    run: RunArgs,
}

/// Checks the run flags of every pod here, before any pod exists: parsed and validated as
/// `candor run` does, except what only the pods can do (resolve the host, read files).
pub fn check_run_flags(flags: &[String]) -> Result<(), K8sFlagError> {
    if flags
        .iter()
        .any(|f| f == "--live" || f.starts_with("--live=") || f.starts_with("--live-linger"))
    {
        return Err(K8sFlagError::Refused("--live and --live-linger in the run flags would bind inside each pod without a port or scrape annotations; use candor k8s --live-port PORT"));
    }
    let parsed = RunFlags::try_parse_from(flags).map_err(|e| {
        // clap's message up to its usage block, on one line.
        let text = e.to_string();
        let what: Vec<&str> = text
            .lines()
            .take_while(|l| !l.trim().is_empty() && !l.starts_with("Usage:"))
            .map(str::trim)
            .collect();
        let what = what.join(" ");
        K8sFlagError::Parse(what.trim_start_matches("error: ").to_string())
    })?;
    let a = &parsed.run;
    if a.load.shard.is_some() || a.load.start_at.is_some() || a.json.is_some() {
        return Err(K8sFlagError::Refused("--shard, --start-at and --json are set by candor k8s for every pod; leave them out of the run flags"));
    }
    if !a.slo.is_empty() {
        return Err(K8sFlagError::Refused("--slo in the run flags would judge each pod on its share alone and fail the Job on one shard's verdict; judge the merged result instead: candor merge --slo ..."));
    }
    if a.pause_pid.is_some() {
        return Err(K8sFlagError::Refused(
            "--pause-pid names a process on this machine, not one in the pods",
        ));
    }
    if a.repeat.is_some() {
        return Err(K8sFlagError::Refused("--repeat in the run flags: the pods are shards of one schedule starting together; repeat the Job and merge the results with candor merge --as-repeats"));
    }
    if a.load.body_file.is_some() {
        return Err(K8sFlagError::Refused(
            "--body-file would be read inside the pod; mount the file in the image or use --body",
        ));
    }
    // The host is resolved by each pod; everything else is checked as `candor run` checks it,
    // on the same URL at the loopback address. Files named in the run flags are read inside the
    // pods, from the image or a volume.
    // The pods push under their shard label and the common --start-at as run_id.
    crate::push_view::check(&a.push)?;
    let mut run = parsed.run;
    run.load.url = TargetUrl::parse(&run.load.url)?.on_loopback();
    run.load.requests = None;
    run.load.data = None;
    if run.load.payload_file.take().is_some() {
        run.load.payload = Some("(read from --payload-file in the pod)".into());
    }
    if run.load.replay.take().is_some() {
        // The trace, read in the pod, sets the schedule there: only the other flags are checked.
        load_config(&run.load, Some(1.0), None)?;
        return Ok(());
    }
    run_config(&run)?;
    Ok(())
}

/// The Job's common start: `--start-at`, or `lead_ns` from now; with a warning for stderr when
/// it is so near (or past) that pods coming up later start late. A start more than a day ahead
/// is refused: every pod's `candor run` would refuse it (a typo in a date would wait for years).
pub fn common_start(
    start_at: Option<&str>,
    lead_ns: u64,
) -> Result<(SystemTime, Option<String>), K8sFlagError> {
    let at = match start_at {
        Some(t) => UNIX_EPOCH + Duration::from_nanos(parse_start_at(t)?),
        None => SystemTime::now() + Duration::from_nanos(lead_ns),
    };
    // Pods need time to be scheduled and to pull the image; the manifest is still printed (the
    // shards would start late and say so), but the user should know now.
    let warning = match at.duration_since(SystemTime::now()) {
        Ok(ahead) if ahead >= Duration::from_secs(10) => None,
        Ok(ahead) => Some(format!(
            "candor k8s: warning: the start is only {:.1}s away; pods that come up later start late (see docs/scale-out.md)",
            ahead.as_secs_f64()
        )),
        Err(_) => Some(
            "candor k8s: warning: the start is in the past; every shard will start late".to_string(),
        ),
    };
    let at_ns = at
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos().min(u64::MAX as u128) as u64);
    let now_ns = candor_core::clock::wall_clock_ns();
    if at_ns > now_ns.saturating_add(START_AT_HORIZON_NS) {
        return Err(K8sFlagError::TooFarAhead {
            days: (at_ns - now_ns) as f64 / 86_400e9,
        });
    }
    Ok((at, warning))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(run: &str) -> Result<(), K8sFlagError> {
        let run: Vec<String> = run.split_whitespace().map(String::from).collect();
        check_run_flags(&run)
    }

    #[test]
    fn run_flags_are_checked_as_candor_run_checks_them() {
        let err = |run: &str| check(run).unwrap_err().to_string();
        assert!(err("--shard 0/2 http://a/").contains("set by candor k8s"));
        assert!(err("--json x http://a/").contains("set by candor k8s"));
        assert!(err("--no-such-flag http://a/").contains("invalid candor run flags"));
        assert!(err("--slo p99<1ms http://a/").contains("candor merge --slo"));
        assert!(err("-R fast http://a/").contains("-R/--rate"));
        assert!(err("--live 0.0.0.0:1 http://a/").contains("--live-port"));
        assert!(err("--body-file b http://a/").contains("--body-file"));
        assert!(err("--repeat 3 http://a/").contains("merge --as-repeats"));
        // What only `candor run`'s validation knew before: threads, framing, schemes, units.
        assert!(err("-t 4 -c 2 http://a/").contains("connections (2)"));
        assert!(err("tcp://db:5432").contains("response framing"));
        assert!(err("ftp://a/").contains("unsupported scheme"));
        assert!(err("-d 10 http://a/").contains("--duration"));
        assert!(err("--out influx=http://a/ http://a/").contains("invalid --out"));
        assert!(err("--out otlp=http://c/ --tag shard=1 http://a/").contains("invalid --tag"));
    }

    #[test]
    fn hosts_and_files_that_exist_only_in_the_pods_are_accepted() {
        // `.invalid` never resolves (RFC 6761): only a pod's resolver could know such a name.
        check("-R 2k http://checkout.invalid:8080/").unwrap();
        check("--out prometheus-rw=http://prom.invalid:9090/api/v1/write --tag team=a http://a/")
            .unwrap();
        check("--requests /data/requests.jsonl http://svc.invalid/").unwrap();
        check("--payload-file /data/ping.bin --expect-bytes 4 tcp://db.invalid:5432").unwrap();
    }
}
