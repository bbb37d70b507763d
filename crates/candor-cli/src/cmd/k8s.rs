//! `candor k8s`: prints a Kubernetes Indexed Job that runs one `candor run` shard per pod (built
//! by `candor_k8s`), after checking the run flags with `candor run`'s own parsing and validation,
//! without resolving the target's host (it usually exists only inside the cluster).

use anyhow::{bail, Result};
use candor_core::units::DurationArg;
use candor_k8s::{job, rfc3339_ceil, usage_comment, JobSpec};
use candor_load::config::TargetUrl;
use candor_runner::flags::{load_config, parse_start_at, run_config, RunArgs};
use clap::{Args, Parser, ValueEnum};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

#[derive(Clone, Copy, Debug, PartialEq, ValueEnum)]
pub enum ManifestFormat {
    Yaml,
    Json,
}

#[derive(Args, Debug, Clone)]
pub struct K8sArgs {
    /// Number of shards: one pod each, run in parallel (completions = parallelism = N).
    #[arg(long, value_name = "N")]
    pub shards: u32,
    /// Container image with `candor` (and /bin/sh, unless --no-shell) on its PATH. The repository's
    /// Containerfile builds one (`podman build -t candor -f Containerfile .`, or docker build);
    /// push it to a registry the cluster can pull from.
    #[arg(long)]
    pub image: String,
    /// Name of the Job (a DNS label: lowercase letters, digits, '-').
    #[arg(long, default_value = "candor-load")]
    pub name: String,
    /// Namespace of the Job.
    #[arg(long, default_value = "default")]
    pub namespace: String,
    /// Time from now to the common --start-at: enough to schedule the pods and pull the image.
    /// The instant is fixed when the manifest is printed, so apply it right away.
    #[arg(
        long,
        default_value = "60s",
        value_name = "DUR",
        conflicts_with = "start_at"
    )]
    pub lead: DurationArg,
    /// The common start instant instead of now + --lead (RFC 3339 or epoch seconds).
    #[arg(long, value_name = "TIME")]
    pub start_at: Option<String>,
    /// CPU request per pod (Kubernetes quantity). Give the pod at least as many CPUs as load threads.
    #[arg(long, default_value = "2", value_name = "QUANTITY")]
    pub cpu: String,
    /// Memory request and limit per pod (Kubernetes quantity).
    #[arg(long, default_value = "512Mi", value_name = "QUANTITY")]
    pub memory: String,
    /// Also limit CPU to the request (Guaranteed QoS). A CPU limit throttles the generator in CFS
    /// periods unless the nodes run the static CPU manager, so it is off by default.
    #[arg(long)]
    pub guaranteed: bool,
    /// PersistentVolumeClaim (ReadWriteMany when pods land on several nodes) mounted at /results,
    /// where every pod writes shard-INDEX.json. Without it, /results is an emptyDir and the
    /// results are collected from the pods' logs.
    #[arg(long, value_name = "CLAIM")]
    pub pvc: Option<String>,
    /// The candor executable inside the image.
    #[arg(long, default_value = "candor", value_name = "PATH")]
    pub binary: String,
    /// Run candor directly (for images without a shell): results only on the volume, not in the
    /// log; requires --pvc.
    #[arg(long)]
    pub no_shell: bool,
    /// Serve each pod's live view (page, /events, Prometheus /metrics) on this port, with the
    /// container port and the prometheus.io/scrape annotations set so that a cluster's Prometheus
    /// scrapes every shard; the shards' histograms add up exactly with `sum by (le)`.
    #[arg(long, value_name = "PORT", value_parser = clap::value_parser!(u16).range(1..))]
    pub live_port: Option<u16>,
    /// Output format (kubectl accepts both).
    #[arg(long, value_enum, default_value = "yaml")]
    pub format: ManifestFormat,
    /// `candor run` flags and the target URL, after `--`, exactly as for one process with the
    /// total rate: -R is the total over all shards.
    #[arg(last = true, required = true, value_name = "RUN FLAGS")]
    pub run: Vec<String>,
}

/// The run flags as `candor run` will parse them.
#[derive(Parser, Debug)]
#[command(name = "candor run", no_binary_name = true)]
struct RunFlags {
    #[command(flatten)]
    run: RunArgs,
}

/// Checks the run flags of every pod here, before any pod exists: parsed and validated as
/// `candor run` does, except what only the pods can do (resolve the host, read files).
fn check_run_flags(flags: &[String]) -> Result<()> {
    if flags
        .iter()
        .any(|f| f == "--live" || f.starts_with("--live=") || f.starts_with("--live-linger"))
    {
        bail!("--live and --live-linger in the run flags would bind inside each pod without a port or scrape annotations; use candor k8s --live-port PORT");
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
        anyhow::anyhow!(
            "invalid candor run flags after --: {}",
            what.trim_start_matches("error: ")
        )
    })?;
    let a = &parsed.run;
    if a.load.shard.is_some() || a.load.start_at.is_some() || a.json.is_some() {
        bail!("--shard, --start-at and --json are set by candor k8s for every pod; leave them out of the run flags");
    }
    if !a.slo.is_empty() {
        bail!("--slo in the run flags would judge each pod on its share alone and fail the Job on one shard's verdict; judge the merged result instead: candor merge --slo ...");
    }
    if a.pause_pid.is_some() {
        bail!("--pause-pid names a process on this machine, not one in the pods");
    }
    if a.repeat.is_some() {
        bail!("--repeat in the run flags: the pods are shards of one schedule starting together; repeat the Job and merge the results with candor merge --as-repeats");
    }
    if a.load.body_file.is_some() {
        bail!(
            "--body-file would be read inside the pod; mount the file in the image or use --body"
        );
    }
    // The host is resolved by each pod; everything else is checked as `candor run` checks it,
    // on the same URL at the loopback address. Files named in the run flags are read inside the
    // pods, from the image or a volume.
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

/// The Job's spec from the flags, starting at `start_at` (RFC 3339).
fn job_spec(args: &K8sArgs, start_at: String) -> Result<JobSpec> {
    check_run_flags(&args.run)?;
    Ok(JobSpec {
        shards: args.shards,
        image: args.image.clone(),
        name: args.name.clone(),
        namespace: args.namespace.clone(),
        start_at,
        cpu: args.cpu.clone(),
        memory: args.memory.clone(),
        guaranteed: args.guaranteed,
        pvc: args.pvc.clone(),
        binary: args.binary.clone(),
        no_shell: args.no_shell,
        live_port: args.live_port,
        run: args.run.clone(),
    })
}

pub fn main(args: K8sArgs) -> Result<i32> {
    let at = match &args.start_at {
        Some(t) => UNIX_EPOCH + Duration::from_nanos(parse_start_at(t)?),
        None => {
            let lead = args.lead.ns();
            SystemTime::now() + Duration::from_nanos(lead)
        }
    };
    // Pods need time to be scheduled and to pull the image; the manifest is still printed (the
    // shards would start late and say so), but the user should know now.
    match at.duration_since(SystemTime::now()) {
        Ok(ahead) if ahead >= Duration::from_secs(10) => {}
        Ok(ahead) => eprintln!(
            "candor k8s: warning: the start is only {:.1}s away; pods that come up later start late (see docs/scale-out.md)",
            ahead.as_secs_f64()
        ),
        Err(_) => eprintln!(
            "candor k8s: warning: the start is in the past; every shard will start late"
        ),
    }
    // Every pod's `candor run` refuses a --start-at more than a day ahead (a typo in a date would
    // wait for years): a manifest whose pods would all refuse it is refused here.
    let at_ns = at
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos().min(u64::MAX as u128) as u64);
    let now_ns = candor_core::clock::wall_clock_ns();
    if at_ns > now_ns.saturating_add(candor_runner::flags::START_AT_HORIZON_NS) {
        bail!(
            "the common start is {:.1} days ahead: each pod's candor run refuses a --start-at more than a day \
             ahead; apply the manifest closer to the start",
            (at_ns - now_ns) as f64 / 86_400e9
        );
    }
    let spec = job_spec(&args, rfc3339_ceil(at))?;
    let manifest = job(&spec)?;
    match args.format {
        ManifestFormat::Yaml => print!("{}", manifest.to_yaml(&usage_comment(&spec))),
        ManifestFormat::Json => println!("{}", manifest.to_json_pretty()),
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(run: &str) -> Result<()> {
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
    }

    #[test]
    fn hosts_and_files_that_exist_only_in_the_pods_are_accepted() {
        // `.invalid` never resolves (RFC 6761): only a pod's resolver could know such a name.
        check("-R 2k http://checkout.invalid:8080/").unwrap();
        check("--requests /data/requests.jsonl http://svc.invalid/").unwrap();
        check("--payload-file /data/ping.bin --expect-bytes 4 tcp://db.invalid:5432").unwrap();
    }

    #[test]
    fn the_flags_become_the_job() {
        #[derive(Parser)]
        struct Wrap {
            #[command(flatten)]
            a: K8sArgs,
        }
        let parse = |flags: &str| Wrap::try_parse_from(flags.split_whitespace()).map(|w| w.a);
        let a = parse("k8s --shards 3 --image img:1 --pvc r --live-port 9464 -- -R 3k http://svc/");
        let spec = job_spec(&a.unwrap(), "2026-11-22T01:00:00Z".into()).unwrap();
        assert_eq!((spec.shards, spec.live_port), (3, Some(9464)));
        assert_eq!(spec.pvc.as_deref(), Some("r"));
        assert_eq!(spec.run, ["-R", "3k", "http://svc/"]);
        assert!(parse("k8s --shards 2 --image i --live-port 0 -- http://a/").is_err());
    }
}
