//! `candor k8s`: prints a Kubernetes Indexed Job that runs one `candor run` shard per pod (built
//! by `candor_k8s`), after checking the run flags with `candor run`'s own parsing and validation,
//! without resolving the target's host (it usually exists only inside the cluster).

use anyhow::Result;
use candor_core::units::DurationArg;
use candor_k8s::{job, rfc3339_ceil, usage_comment, JobSpec};
use candor_runner::k8s_flags::{check_run_flags, common_start};
use clap::{Args, ValueEnum};

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
    let (at, warning) = common_start(args.start_at.as_deref(), args.lead.ns())?;
    if let Some(w) = warning {
        eprintln!("{w}");
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
    use clap::Parser;

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
