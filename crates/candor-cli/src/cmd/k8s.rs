//! `candor k8s`: prints a Kubernetes Indexed Job that runs one `candor run` shard per pod, all
//! starting at one agreed instant, each leaving its results JSON on a shared volume and in its log
//! for `candor merge`. Kubernetes does the scheduling; candor only writes the manifest.

use crate::cmd::run::{parse_start_at, RunArgs};
use anyhow::{bail, Context, Result};
use candor_core::units::{parse_duration_ns, parse_rate};
use candor_report::shards::{LOG_JSON_BEGIN, LOG_JSON_END};
use clap::{Args, Parser, ValueEnum};
use std::fmt::Write as _;
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
    pub lead: String,
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

/// A YAML/JSON tree that keeps the order fields are written in (Kubernetes readers expect
/// apiVersion and kind first).
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    Str(String),
    Int(i64),
    Map(Vec<(String, Node)>),
    Seq(Vec<Node>),
}

fn s(v: impl Into<String>) -> Node {
    Node::Str(v.into())
}

fn map(entries: Vec<(&str, Node)>) -> Node {
    Node::Map(
        entries
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    )
}

fn seq_str<I: IntoIterator<Item = S>, S: Into<String>>(items: I) -> Node {
    Node::Seq(items.into_iter().map(|i| s(i)).collect())
}

impl Node {
    /// JSON (also what the tests inspect).
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Node::Str(v) => serde_json::Value::String(v.clone()),
            Node::Int(v) => serde_json::Value::from(*v),
            Node::Map(m) => {
                serde_json::Value::Object(m.iter().map(|(k, v)| (k.clone(), v.to_json())).collect())
            }
            Node::Seq(v) => serde_json::Value::Array(v.iter().map(Node::to_json).collect()),
        }
    }

    /// Block-style YAML. Every string is written double-quoted with JSON escapes, which YAML
    /// reads identically, so no value can turn into a number, a boolean or a comment.
    pub fn to_yaml(&self) -> String {
        let mut out = String::new();
        self.emit(0, &mut out);
        out
    }

    fn scalar(&self) -> Option<String> {
        match self {
            Node::Str(v) => Some(serde_json::to_string(v).expect("strings serialize")),
            Node::Int(v) => Some(v.to_string()),
            Node::Map(m) if m.is_empty() => Some("{}".into()),
            Node::Seq(v) if v.is_empty() => Some("[]".into()),
            _ => None,
        }
    }

    fn emit(&self, indent: usize, out: &mut String) {
        let pad = " ".repeat(indent);
        match self {
            Node::Map(m) => {
                for (k, v) in m {
                    let key = yaml_key(k);
                    match v.scalar() {
                        Some(sc) => {
                            let _ = writeln!(out, "{pad}{key}: {sc}");
                        }
                        None => {
                            let _ = writeln!(out, "{pad}{key}:");
                            v.emit(indent + 2, out);
                        }
                    }
                }
            }
            Node::Seq(items) => {
                for item in items {
                    match item.scalar() {
                        Some(sc) => {
                            let _ = writeln!(out, "{pad}- {sc}");
                        }
                        None => {
                            // The item's block, with its first line's indent replaced by "- ".
                            let mut block = String::new();
                            item.emit(indent + 2, &mut block);
                            let _ = write!(out, "{pad}- {}", &block[indent + 2..]);
                        }
                    }
                }
            }
            _ => {
                let _ = writeln!(out, "{pad}{}", self.scalar().unwrap_or_default());
            }
        }
    }
}

/// Plain keys stay plain; anything else is quoted.
fn yaml_key(k: &str) -> String {
    let plain = k.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/'));
    if plain {
        k.to_string()
    } else {
        serde_json::to_string(k).expect("strings serialize")
    }
}

/// DNS-1123 label (names of Jobs, namespaces), as Kubernetes requires.
fn check_dns_label(what: &str, v: &str, max: usize) -> Result<()> {
    let ok = !v.is_empty()
        && v.len() <= max
        && v.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !v.starts_with('-')
        && !v.ends_with('-');
    if !ok {
        bail!("invalid {what} '{v}': expected at most {max} lowercase letters, digits or '-', starting and ending with a letter or digit");
    }
    Ok(())
}

/// DNS-1123 subdomain (claim names).
fn check_dns_subdomain(what: &str, v: &str) -> Result<()> {
    let ok = !v.is_empty()
        && v.len() <= 253
        && v.split('.').all(|l| {
            !l.is_empty()
                && l.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        });
    if !ok {
        bail!("invalid {what} '{v}': expected a DNS subdomain (lowercase letters, digits, '-' and '.')");
    }
    Ok(())
}

/// A Kubernetes resource quantity such as 500m, 2, 1.5, 512Mi or 1G (positive).
fn check_quantity(what: &str, v: &str) -> Result<()> {
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
    if !ok {
        bail!("invalid {what} '{v}': expected a positive Kubernetes quantity like 500m, 2, 512Mi or 1Gi");
    }
    Ok(())
}

/// The run flags as `candor run` will parse them (host names are not resolved here: the target
/// is usually a cluster-internal name).
#[derive(Parser, Debug)]
#[command(name = "candor run", no_binary_name = true)]
struct RunFlags {
    #[command(flatten)]
    run: RunArgs,
}

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
    if candor_load::workload::profile::is_profile(&a.rate) {
        candor_load::workload::profile::Profile::parse(&a.rate).context("-R/--rate")?;
    } else {
        parse_rate(&a.rate).context("-R/--rate")?;
    }
    for (flag, v) in [
        ("--duration", a.load.duration_text()),
        ("--timeout", a.load.timeout.as_str()),
        ("--warmup", a.load.warmup.as_str()),
    ] {
        parse_duration_ns(v).with_context(|| flag.to_string())?;
    }
    if a.load.body_file.is_some() {
        bail!(
            "--body-file would be read inside the pod; mount the file in the image or use --body"
        );
    }
    Ok(())
}

/// How long each pod's live view stays up after its shard's results are written.
const K8S_LIVE_LINGER: &str = "30s";

/// Kubernetes expands `$(NAME)` in command and args; a literal one is written `$$(NAME)`.
fn escape_expansion(arg: &str) -> String {
    arg.replace("$(", "$$(")
}

/// The shell step of each pod: run the shard, then copy its results JSON into the log between
/// markers so that `kubectl logs` is enough to collect it. The exit status is candor's.
fn pod_script() -> String {
    format!(
        "\"$@\"\nrc=$?\nif [ -f \"$CANDOR_RESULTS\" ]; then\n  echo '{LOG_JSON_BEGIN}'\n  cat \"$CANDOR_RESULTS\"\n  echo '{LOG_JSON_END}'\nfi\nexit $rc\n"
    )
}

/// RFC 3339 of a wall-clock instant, whole seconds (rounded up so that the lead is never shorter).
fn rfc3339_ceil(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs() + u64::from(d.subsec_nanos() > 0);
    humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_secs(secs)).to_string()
}

/// The manifest for `args`, with the common start instant `start_at` (RFC 3339).
pub fn manifest(args: &K8sArgs, start_at: &str) -> Result<Node> {
    if args.shards == 0 {
        bail!("--shards must be at least 1");
    }
    check_dns_label("--name", &args.name, 63)?;
    check_dns_label("--namespace", &args.namespace, 63)?;
    if args.image.trim().is_empty() || args.image.chars().any(char::is_whitespace) {
        bail!(
            "invalid --image '{}': expected an image reference like ghcr.io/org/candor:0.1",
            args.image
        );
    }
    if args.binary.is_empty() {
        bail!("--binary must not be empty");
    }
    check_quantity("--cpu", &args.cpu)?;
    check_quantity("--memory", &args.memory)?;
    if let Some(pvc) = &args.pvc {
        check_dns_subdomain("--pvc", pvc)?;
    }
    if args.no_shell && args.pvc.is_none() {
        bail!("--no-shell leaves the results only on the volume: give --pvc CLAIM");
    }
    check_run_flags(&args.run)?;

    let n = args.shards;
    let mut candor_args = vec![
        args.binary.clone(),
        "run".into(),
        "--shard".into(),
        format!("$(JOB_COMPLETION_INDEX)/{n}"),
        "--start-at".into(),
        start_at.to_string(),
        "--json".into(),
        "$(CANDOR_RESULTS)".into(),
    ];
    if let Some(port) = args.live_port {
        // All interfaces: the cluster's Prometheus reaches the pod on its own IP. The linger
        // keeps the final numbers up for two scrapes at the common 15 s interval.
        candor_args.extend([
            "--live".into(),
            format!("0.0.0.0:{port}"),
            "--live-linger".into(),
            K8S_LIVE_LINGER.into(),
        ]);
    }
    candor_args.extend(args.run.iter().map(|a| escape_expansion(a)));

    let (command, container_args) = if args.no_shell {
        (candor_args[..1].to_vec(), candor_args[1..].to_vec())
    } else {
        // `sh -c SCRIPT NAME ARGS...`: the args reach the script as "$@", unquoted by no one.
        (
            vec![
                "/bin/sh".into(),
                "-c".into(),
                pod_script(),
                "candor-shard".into(),
            ],
            candor_args,
        )
    };

    let mut requests = vec![("cpu", s(&args.cpu)), ("memory", s(&args.memory))];
    let mut limits = vec![("memory", s(&args.memory))];
    if args.guaranteed {
        limits.insert(0, ("cpu", s(&args.cpu)));
    }
    requests.sort_by_key(|(k, _)| *k);

    let volume = match &args.pvc {
        Some(claim) => map(vec![
            ("name", s("results")),
            ("persistentVolumeClaim", map(vec![("claimName", s(claim))])),
        ]),
        None => map(vec![("name", s("results")), ("emptyDir", map(vec![]))]),
    };
    let labels = || {
        map(vec![
            ("app.kubernetes.io/name", s("candor")),
            ("app.kubernetes.io/instance", s(&args.name)),
        ])
    };
    let mut container = vec![
        ("name", s("candor")),
        ("image", s(&args.image)),
        ("command", seq_str(command)),
        ("args", seq_str(container_args)),
        (
            "env",
            Node::Seq(vec![
                map(vec![
                    ("name", s("JOB_COMPLETION_INDEX")),
                    (
                        "valueFrom",
                        map(vec![(
                            "fieldRef",
                            map(vec![(
                                "fieldPath",
                                s("metadata.annotations['batch.kubernetes.io/job-completion-index']"),
                            )]),
                        )]),
                    ),
                ]),
                map(vec![
                    ("name", s("CANDOR_RESULTS")),
                    ("value", s("/results/shard-$(JOB_COMPLETION_INDEX).json")),
                ]),
            ]),
        ),
        (
            "resources",
            map(vec![("requests", map(requests)), ("limits", map(limits))]),
        ),
        (
            "volumeMounts",
            Node::Seq(vec![map(vec![
                ("name", s("results")),
                ("mountPath", s("/results")),
            ])]),
        ),
    ];
    let mut template_meta = vec![("labels", labels())];
    if let Some(port) = args.live_port {
        container.push((
            "ports",
            Node::Seq(vec![map(vec![
                ("name", s("live")),
                ("containerPort", Node::Int(i64::from(port))),
                ("protocol", s("TCP")),
            ])]),
        ));
        template_meta.push((
            "annotations",
            map(vec![
                ("prometheus.io/scrape", s("true")),
                ("prometheus.io/port", s(port.to_string())),
                ("prometheus.io/path", s("/metrics")),
            ]),
        ));
    }
    let container = map(container);
    let pod_spec = map(vec![
        // A retried shard would send its share of the schedule twice.
        ("restartPolicy", s("Never")),
        // One generator per node where possible, so that shards do not share CPUs.
        (
            "topologySpreadConstraints",
            Node::Seq(vec![map(vec![
                ("maxSkew", Node::Int(1)),
                ("topologyKey", s("kubernetes.io/hostname")),
                ("whenUnsatisfiable", s("ScheduleAnyway")),
                ("labelSelector", map(vec![("matchLabels", labels())])),
            ])]),
        ),
        ("containers", Node::Seq(vec![container])),
        ("volumes", Node::Seq(vec![volume])),
    ]);
    Ok(map(vec![
        ("apiVersion", s("batch/v1")),
        ("kind", s("Job")),
        (
            "metadata",
            map(vec![
                ("name", s(&args.name)),
                ("namespace", s(&args.namespace)),
                ("labels", labels()),
                (
                    "annotations",
                    map(vec![
                        ("candor/start-at", s(start_at)),
                        ("candor/shards", s(n.to_string())),
                    ]),
                ),
            ]),
        ),
        (
            "spec",
            map(vec![
                ("completionMode", s("Indexed")),
                ("completions", Node::Int(i64::from(n))),
                ("parallelism", Node::Int(i64::from(n))),
                // A failed shard is reported, never re-run: a retry would double-send its share.
                ("backoffLimit", Node::Int(0)),
                (
                    "template",
                    map(vec![("metadata", map(template_meta)), ("spec", pod_spec)]),
                ),
            ]),
        ),
    ]))
}

/// Comment lines printed above the YAML: how to apply, wait, collect and merge.
fn usage_comment(args: &K8sArgs, start_at: &str) -> String {
    let (ns, name) = (&args.namespace, &args.name);
    let mut c = format!(
        "# candor k8s: {n} shards of one schedule, every pod starting at {start_at}.\n\
         # Apply now (the start instant is fixed):  kubectl apply -f THIS_FILE\n\
         # Wait:     kubectl wait -n {ns} --for=condition=complete job/{name} --timeout=1h\n",
        n = args.shards
    );
    if !args.no_shell {
        let _ = write!(
            c,
            "# From the logs:  for p in $(kubectl get pods -n {ns} -l job-name={name} -o name); do kubectl logs -n {ns} \"$p\" > \"${{p#pod/}}.log\"; done\n\
             #                 candor merge *.log -o merged.json\n"
        );
    }
    if let Some(pvc) = &args.pvc {
        let _ = writeln!(
            c,
            "# From the volume: copy /results (shard-0.json ...) of claim {pvc} out through any pod that mounts it\n\
             #                  (kubectl cp, see docs/scale-out.md), then  candor merge results/ -o merged.json"
        );
    }
    c.push_str("# Then:     candor report merged.json\n");
    if let Some(port) = args.live_port {
        let _ = writeln!(
            c,
            "# Live:     Prometheus scrapes each pod's :{port}/metrics (label shard); p99 of all shards:\n\
             #           histogram_quantile(0.99, sum by (le) (rate(candor_response_time_seconds_bucket[1m])))\n\
             #           one pod's page: kubectl port-forward -n {ns} POD {port}, then http://127.0.0.1:{port}/"
        );
    }
    c
}

pub fn main(args: K8sArgs) -> Result<i32> {
    let at = match &args.start_at {
        Some(t) => UNIX_EPOCH + Duration::from_nanos(parse_start_at(t)?),
        None => {
            let lead = parse_duration_ns(&args.lead).context("--lead")?;
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
    let start_at = rfc3339_ceil(at);
    let m = manifest(&args, &start_at)?;
    match args.format {
        ManifestFormat::Yaml => print!("{}---\n{}", usage_comment(&args, &start_at), m.to_yaml()),
        ManifestFormat::Json => println!(
            "{}",
            serde_json::to_string_pretty(&m.to_json()).expect("json serializes")
        ),
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(extra: &[&str]) -> K8sArgs {
        #[derive(Parser)]
        struct Wrap {
            #[command(flatten)]
            a: K8sArgs,
        }
        let mut v = vec!["candor-k8s"];
        v.extend_from_slice(extra);
        Wrap::try_parse_from(v).expect("valid test flags").a
    }

    fn example() -> K8sArgs {
        args(&[
            "--shards",
            "4",
            "--image",
            "ghcr.io/x/candor:0.1",
            "--pvc",
            "candor-results",
            "--",
            "-R",
            "40k",
            "-c",
            "64",
            "-d",
            "60s",
            "http://svc:8080/",
        ])
    }

    const AT: &str = "2026-11-22T01:00:00Z";

    #[test]
    fn indexed_job_with_one_pod_per_shard_and_no_retries() {
        let j = manifest(&example(), AT).unwrap().to_json();
        assert_eq!(j["apiVersion"], "batch/v1");
        assert_eq!(j["kind"], "Job");
        let spec = &j["spec"];
        assert_eq!(spec["completionMode"], "Indexed");
        assert_eq!(spec["completions"], 4);
        assert_eq!(spec["parallelism"], 4);
        assert_eq!(spec["backoffLimit"], 0);
        let pod = &spec["template"]["spec"];
        assert_eq!(pod["restartPolicy"], "Never");
        let c = &pod["containers"][0];
        assert_eq!(c["image"], "ghcr.io/x/candor:0.1");
        let env = &c["env"][0];
        assert_eq!(env["name"], "JOB_COMPLETION_INDEX");
        assert_eq!(
            env["valueFrom"]["fieldRef"]["fieldPath"],
            "metadata.annotations['batch.kubernetes.io/job-completion-index']"
        );
        assert_eq!(
            c["env"][1]["value"],
            "/results/shard-$(JOB_COMPLETION_INDEX).json"
        );
        let a: Vec<&str> = c["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(
            a,
            [
                "candor",
                "run",
                "--shard",
                "$(JOB_COMPLETION_INDEX)/4",
                "--start-at",
                AT,
                "--json",
                "$(CANDOR_RESULTS)",
                "-R",
                "40k",
                "-c",
                "64",
                "-d",
                "60s",
                "http://svc:8080/"
            ]
        );
        assert_eq!(c["command"][0], "/bin/sh");
        assert_eq!(c["command"][3], "candor-shard");
        let script = c["command"][2].as_str().unwrap();
        assert!(script.starts_with("\"$@\"\nrc=$?"), "{script}");
        assert!(
            script.contains(LOG_JSON_BEGIN) && script.contains("exit $rc"),
            "{script}"
        );
        assert_eq!(c["resources"]["requests"]["cpu"], "2");
        assert_eq!(c["resources"]["limits"]["memory"], "512Mi");
        assert!(c["resources"]["limits"].get("cpu").is_none());
        assert_eq!(c["volumeMounts"][0]["mountPath"], "/results");
        assert_eq!(
            pod["volumes"][0]["persistentVolumeClaim"]["claimName"],
            "candor-results"
        );
        assert_eq!(j["metadata"]["annotations"]["candor/start-at"], AT);
    }

    #[test]
    fn live_port_serves_metrics_and_asks_to_be_scraped() {
        let mut v = vec![
            "--shards",
            "2",
            "--image",
            "i:1",
            "--live-port",
            "9464",
            "--",
        ];
        v.extend(["-R", "2k", "http://svc/"]);
        let j = manifest(&args(&v), AT).unwrap().to_json();
        let t = &j["spec"]["template"];
        let ann = &t["metadata"]["annotations"];
        assert_eq!(ann["prometheus.io/scrape"], "true");
        assert_eq!(ann["prometheus.io/port"], "9464");
        assert_eq!(ann["prometheus.io/path"], "/metrics");
        let c = &t["spec"]["containers"][0];
        assert_eq!(c["ports"][0]["containerPort"], 9464);
        let a: Vec<&str> = c["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let i = a.iter().position(|x| *x == "--live").unwrap();
        assert_eq!(a[i + 1], "0.0.0.0:9464");
        assert_eq!(a[i + 2..i + 4], ["--live-linger", K8S_LIVE_LINGER]);
        // Without it: no port, no annotations.
        let j = manifest(&example(), AT).unwrap().to_json();
        assert!(j["spec"]["template"]["metadata"]
            .get("annotations")
            .is_none());
        assert!(j["spec"]["template"]["spec"]["containers"][0]
            .get("ports")
            .is_none());
        // --live itself is refused in the run flags.
        let bad = args(&[
            "--shards",
            "2",
            "--image",
            "i",
            "--",
            "--live",
            "0.0.0.0:1",
            "http://a/",
        ]);
        let e = manifest(&bad, AT).unwrap_err().to_string();
        assert!(e.contains("--live-port"), "{e}");
        assert!(args_err(&[
            "--shards",
            "2",
            "--image",
            "i",
            "--live-port",
            "0",
            "--",
            "http://a/"
        ]));
    }

    fn args_err(extra: &[&str]) -> bool {
        #[derive(Parser)]
        struct Wrap {
            #[command(flatten)]
            a: K8sArgs,
        }
        let mut v = vec!["candor-k8s"];
        v.extend_from_slice(extra);
        Wrap::try_parse_from(v).is_err()
    }

    #[test]
    fn options_shape_the_pod() {
        let a = args(&[
            "--shards",
            "2",
            "--image",
            "img:1",
            "--name",
            "checkout-load",
            "--namespace",
            "perf",
            "--cpu",
            "1500m",
            "--memory",
            "1Gi",
            "--guaranteed",
            "--",
            "-R",
            "2k",
            "http://a/",
        ]);
        let j = manifest(&a, AT).unwrap().to_json();
        assert_eq!(j["metadata"]["name"], "checkout-load");
        assert_eq!(j["metadata"]["namespace"], "perf");
        let c = &j["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(c["resources"]["limits"]["cpu"], "1500m");
        assert_eq!(c["resources"]["requests"]["memory"], "1Gi");
        // No claim: the results still exist in the pod (emptyDir) for the log copy.
        assert!(j["spec"]["template"]["spec"]["volumes"][0]["emptyDir"].is_object());
        let a = args(&[
            "--shards",
            "3",
            "--image",
            "img:1",
            "--pvc",
            "r",
            "--no-shell",
            "--binary",
            "/usr/local/bin/candor",
            "--",
            "http://a/",
        ]);
        let j = manifest(&a, AT).unwrap().to_json();
        let c = &j["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(c["command"], serde_json::json!(["/usr/local/bin/candor"]));
        assert_eq!(c["args"][0], "run");
        assert_eq!(c["args"][2], "$(JOB_COMPLETION_INDEX)/3");
    }

    #[test]
    fn user_text_cannot_break_out_of_yaml_or_kubernetes_expansion() {
        let a = args(&[
            "--shards",
            "1",
            "--image",
            "img:1",
            "--",
            "-H",
            "X-Note: a: b # c \"q\" $(HOME)",
            "--body",
            "yes\n- no",
            "http://a/",
        ]);
        let m = manifest(&a, AT).unwrap();
        let args = m.to_json()["spec"]["template"]["spec"]["containers"][0]["args"].clone();
        assert!(args
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v == "X-Note: a: b # c \"q\" $$(HOME)"));
        let yaml = m.to_yaml();
        assert!(
            yaml.contains(r#"- "X-Note: a: b # c \"q\" $$(HOME)""#),
            "{yaml}"
        );
        assert!(yaml.contains(r#"- "yes\n- no""#), "{yaml}");
    }

    #[test]
    fn yaml_layout() {
        let n = map(vec![
            ("a", s("x")),
            ("b", Node::Int(3)),
            (
                "c",
                Node::Seq(vec![
                    map(vec![("d", s("y")), ("e", seq_str(["p", "q"]))]),
                    s("z"),
                ]),
            ),
            ("f", map(vec![])),
            ("weird key", s("")),
        ]);
        assert_eq!(
            n.to_yaml(),
            "a: \"x\"\nb: 3\nc:\n  - d: \"y\"\n    e:\n      - \"p\"\n      - \"q\"\n  - \"z\"\nf: {}\n\"weird key\": \"\"\n"
        );
    }

    #[test]
    fn bad_options_fail_with_one_clear_line() {
        let err = |extra: &[&str]| {
            let mut v = vec!["--shards", "2", "--image", "img:1"];
            v.extend_from_slice(extra);
            manifest(&args(&v), AT).unwrap_err().to_string()
        };
        assert!(
            err(&["--name", "Bad_Name", "--", "http://a/"]).contains("invalid --name 'Bad_Name'")
        );
        assert!(err(&["--cpu", "two", "--", "http://a/"]).contains("invalid --cpu 'two'"));
        assert!(err(&["--memory", "0", "--", "http://a/"]).contains("invalid --memory '0'"));
        assert!(err(&["--", "--shard", "0/2", "http://a/"]).contains("set by candor k8s"));
        assert!(err(&["--", "--json", "x", "http://a/"]).contains("set by candor k8s"));
        assert!(err(&["--", "--no-such-flag", "http://a/"]).contains("invalid candor run flags"));
        assert!(err(&["--", "--slo", "p99<1ms", "http://a/"]).contains("candor merge --slo"));
        assert!(err(&["--", "-R", "fast", "http://a/"]).contains("-R/--rate"));
        assert!(err(&["--no-shell", "--", "http://a/"]).contains("give --pvc CLAIM"));
        let zero = args(&["--shards", "0", "--image", "i", "--", "http://a/"]);
        assert!(manifest(&zero, AT)
            .unwrap_err()
            .to_string()
            .contains("at least 1"));
        for q in ["500m", "2", "1.5", "512Mi", "1G"] {
            assert!(check_quantity("q", q).is_ok(), "{q}");
        }
        for q in ["", "m", "1.", ".5", "-1", "1 Gi", "0m", "5x"] {
            assert!(check_quantity("q", q).is_err(), "{q}");
        }
    }

    #[test]
    fn start_instant_is_rounded_up_to_a_whole_second() {
        let t = UNIX_EPOCH + Duration::from_millis(1_795_000_000_250);
        assert_eq!(rfc3339_ceil(t), "2026-11-18T11:06:41Z");
        let t = UNIX_EPOCH + Duration::from_secs(1_795_000_000);
        assert_eq!(rfc3339_ceil(t), "2026-11-18T11:06:40Z");
    }
}
