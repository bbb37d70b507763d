//! Kubernetes manifests for candor: an Indexed Job that runs one `candor run` shard per pod, all
//! starting at one agreed instant, each leaving its results JSON on a shared volume and in its
//! log for `candor merge`. Kubernetes does the scheduling; candor only writes the manifest.
//!
//! The manifest is typed (`manifest`) and serde_json writes it, as JSON or as a YAML file
//! (comment lines, then the JSON document, which is YAML), so no user text can change its
//! structure or its types. The run flags inside it are checked by the
//! caller (`candor k8s` parses them as `candor run` does); this crate checks what Kubernetes
//! itself requires of names and quantities.

mod job_spec;
pub mod manifest;

pub use job_spec::{pod_script, JobSpec};

use manifest::*;
use std::fmt::Write as _;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use thiserror::Error;

#[derive(Debug, Error, PartialEq)]
pub enum K8sError {
    #[error("--shards must be at least 1")]
    NoShards,
    #[error("invalid {0} '{1}': expected at most {2} lowercase letters, digits or '-', starting and ending with a letter or digit")]
    DnsLabel(&'static str, String, usize),
    #[error(
        "invalid {0} '{1}': expected a DNS subdomain (lowercase letters, digits, '-' and '.')"
    )]
    DnsSubdomain(&'static str, String),
    #[error(
        "invalid {0} '{1}': expected a positive Kubernetes quantity like 500m, 2, 512Mi or 1Gi"
    )]
    Quantity(&'static str, String),
    #[error("invalid --image '{0}': expected an image reference like ghcr.io/org/candor:0.1")]
    Image(String),
    #[error("--binary must not be empty")]
    EmptyBinary,
    #[error("--no-shell leaves the results only on the volume: give --pvc CLAIM")]
    NoShellNeedsVolume,
}

/// How long each pod's live view stays up after its shard's results are written.
pub const LIVE_LINGER: &str = "30s";

/// DNS-1123 label (names of Jobs, namespaces), as Kubernetes requires.
pub fn check_dns_label(what: &'static str, v: &str, max: usize) -> Result<(), K8sError> {
    let ok = !v.is_empty()
        && v.len() <= max
        && v.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !v.starts_with('-')
        && !v.ends_with('-');
    ok.then_some(())
        .ok_or_else(|| K8sError::DnsLabel(what, v.into(), max))
}

/// DNS-1123 subdomain (claim names).
pub fn check_dns_subdomain(what: &'static str, v: &str) -> Result<(), K8sError> {
    let ok = !v.is_empty()
        && v.len() <= 253
        && v.split('.').all(|l| {
            !l.is_empty()
                && l.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        });
    ok.then_some(())
        .ok_or_else(|| K8sError::DnsSubdomain(what, v.into()))
}

/// A Kubernetes resource quantity such as 500m, 2, 1.5, 512Mi or 1G (positive).
pub fn check_quantity(what: &'static str, v: &str) -> Result<(), K8sError> {
    let suffixes = [
        "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "m", "k", "M", "G", "T", "P", "E", "",
    ];
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    let ok = suffixes.iter().any(|suf| {
        v.strip_suffix(suf).is_some_and(|num| {
            let well_formed = match num.split_once('.') {
                Some((int, frac)) => digits(int) && digits(frac),
                None => digits(num),
            };
            well_formed && num.bytes().any(|b| matches!(b, b'1'..=b'9'))
        })
    });
    ok.then_some(())
        .ok_or_else(|| K8sError::Quantity(what, v.into()))
}

/// Kubernetes expands `$(NAME)` in command and args; a literal one is written `$$(NAME)`.
fn escape_expansion(arg: &str) -> String {
    arg.replace("$(", "$$(")
}

/// RFC 3339 of a wall-clock instant, whole seconds (rounded up so that the lead is never shorter).
pub fn rfc3339_ceil(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs() + u64::from(d.subsec_nanos() > 0);
    humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_secs(secs)).to_string()
}

/// Checks `spec` against what Kubernetes requires and builds its Job.
pub fn job(spec: &JobSpec) -> Result<Job, K8sError> {
    if spec.shards == 0 {
        return Err(K8sError::NoShards);
    }
    check_dns_label("--name", &spec.name, 63)?;
    check_dns_label("--namespace", &spec.namespace, 63)?;
    if spec.image.trim().is_empty() || spec.image.chars().any(char::is_whitespace) {
        return Err(K8sError::Image(spec.image.clone()));
    }
    if spec.binary.is_empty() {
        return Err(K8sError::EmptyBinary);
    }
    check_quantity("--cpu", &spec.cpu)?;
    check_quantity("--memory", &spec.memory)?;
    if let Some(pvc) = &spec.pvc {
        check_dns_subdomain("--pvc", pvc)?;
    }
    if spec.no_shell && spec.pvc.is_none() {
        return Err(K8sError::NoShellNeedsVolume);
    }
    Ok(manifest::build(spec, &candor_command(spec)))
}

/// The command line of one shard: `candor run` with the shard's flags, then the user's.
fn candor_command(spec: &JobSpec) -> Vec<String> {
    let mut args = vec![
        spec.binary.clone(),
        "run".into(),
        "--shard".into(),
        format!("$(JOB_COMPLETION_INDEX)/{}", spec.shards),
        "--start-at".into(),
        spec.start_at.clone(),
        "--json".into(),
        "$(CANDOR_RESULTS)".into(),
    ];
    if let Some(port) = spec.live_port {
        // All interfaces: the cluster's Prometheus reaches the pod on its own IP. The linger
        // keeps the final numbers up for two scrapes at the common 15 s interval.
        args.extend([
            "--live".into(),
            format!("0.0.0.0:{port}"),
            "--live-linger".into(),
            LIVE_LINGER.into(),
        ]);
    }
    args.extend(spec.run.iter().map(|a| escape_expansion(a)));
    args
}

/// Comment lines printed above the YAML: how to apply, wait, collect and merge.
pub fn usage_comment(spec: &JobSpec) -> String {
    let (ns, name, start_at) = (&spec.namespace, &spec.name, &spec.start_at);
    let mut c = format!(
        "# candor k8s: {n} shards of one schedule, every pod starting at {start_at}.\n\
         # Apply now (the start instant is fixed):  kubectl apply -f THIS_FILE\n\
         # Wait:     kubectl wait -n {ns} --for=condition=complete job/{name} --timeout=1h\n",
        n = spec.shards
    );
    if !spec.no_shell {
        let _ = write!(
            c,
            "# From the logs:  for p in $(kubectl get pods -n {ns} -l job-name={name} -o name); do kubectl logs -n {ns} \"$p\" > \"${{p#pod/}}.log\"; done\n\
             #                 candor merge *.log -o merged.json\n"
        );
    }
    if let Some(pvc) = &spec.pvc {
        let _ = writeln!(
            c,
            "# From the volume: copy /results (shard-0.json ...) of claim {pvc} out through any pod that mounts it\n\
             #                  (kubectl cp, see docs/scale-out.md), then  candor merge results/ -o merged.json"
        );
    }
    c.push_str("# Then:     candor report merged.json\n");
    if let Some(port) = spec.live_port {
        let _ = writeln!(
            c,
            "# Live:     Prometheus scrapes each pod's :{port}/metrics (label shard); p99 of all shards:\n\
             #           histogram_quantile(0.99, sum by (le) (rate(candor_response_time_seconds_bucket[1m])))\n\
             #           one pod's page: kubectl port-forward -n {ns} POD {port}, then http://127.0.0.1:{port}/"
        );
    }
    c
}

#[cfg(test)]
mod manifest_tests;
