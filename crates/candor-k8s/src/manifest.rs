//! The Job as typed Kubernetes objects (only the fields candor sets, apiVersion and kind
//! first), serialized by serde: JSON, and YAML as JSON under comment lines.

use crate::job_spec::{pod_script, JobSpec};
use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Job {
    pub api_version: &'static str,
    pub kind: &'static str,
    pub metadata: JobMeta,
    pub spec: JobBody,
}

#[derive(Debug, Clone, Serialize)]
pub struct JobMeta {
    pub name: String,
    pub namespace: String,
    pub labels: Labels,
    pub annotations: JobAnnotations,
}

/// The recommended `app.kubernetes.io` labels; also the pods' spread selector.
#[derive(Debug, Clone, Serialize)]
pub struct Labels {
    #[serde(rename = "app.kubernetes.io/name")]
    pub name: &'static str,
    #[serde(rename = "app.kubernetes.io/instance")]
    pub instance: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct JobAnnotations {
    #[serde(rename = "candor/start-at")]
    pub start_at: String,
    #[serde(rename = "candor/shards")]
    pub shards: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JobBody {
    pub completion_mode: &'static str,
    pub completions: u32,
    pub parallelism: u32,
    pub backoff_limit: u32,
    pub template: PodTemplate,
}

#[derive(Debug, Clone, Serialize)]
pub struct PodTemplate {
    pub metadata: PodMeta,
    pub spec: PodSpec,
}

#[derive(Debug, Clone, Serialize)]
pub struct PodMeta {
    pub labels: Labels,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ScrapeAnnotations>,
}

/// The annotations a cluster's Prometheus reads to scrape a pod.
#[derive(Debug, Clone, Serialize)]
pub struct ScrapeAnnotations {
    #[serde(rename = "prometheus.io/scrape")]
    pub scrape: &'static str,
    #[serde(rename = "prometheus.io/port")]
    pub port: String,
    #[serde(rename = "prometheus.io/path")]
    pub path: &'static str,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodSpec {
    pub restart_policy: &'static str,
    pub topology_spread_constraints: Vec<TopologySpread>,
    pub containers: Vec<Container>,
    pub volumes: Vec<Volume>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TopologySpread {
    pub max_skew: u32,
    pub topology_key: &'static str,
    pub when_unsatisfiable: &'static str,
    pub label_selector: LabelSelector,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelector {
    pub match_labels: Labels,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Container {
    pub name: &'static str,
    pub image: String,
    pub command: Vec<String>,
    pub args: Vec<String>,
    pub env: Vec<EnvVar>,
    pub resources: Resources,
    pub volume_mounts: Vec<VolumeMount>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ports: Option<Vec<ContainerPort>>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EnvVar {
    pub name: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value_from: Option<EnvVarSource>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EnvVarSource {
    pub field_ref: FieldRef,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FieldRef {
    pub field_path: &'static str,
}

#[derive(Debug, Clone, Serialize)]
pub struct Resources {
    pub requests: Quantities,
    pub limits: Quantities,
}

#[derive(Debug, Clone, Serialize)]
pub struct Quantities {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu: Option<String>,
    pub memory: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VolumeMount {
    pub name: &'static str,
    pub mount_path: &'static str,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerPort {
    pub name: &'static str,
    pub container_port: u16,
    pub protocol: &'static str,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Volume {
    pub name: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub persistent_volume_claim: Option<ClaimSource>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub empty_dir: Option<EmptyDir>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClaimSource {
    pub claim_name: String,
}

/// `emptyDir: {}`: a scratch volume with the defaults.
#[derive(Debug, Clone, Serialize)]
pub struct EmptyDir {}

impl Job {
    /// The manifest as pretty JSON.
    pub fn to_json_pretty(&self) -> String {
        serde_json::to_string_pretty(self).expect("a Job has only strings, numbers, lists and maps")
    }

    /// The manifest as a YAML file: the comment lines of `usage_comment`, then the manifest as
    /// one document in YAML's JSON-compatible flow style. Every string is double-quoted with
    /// JSON escapes, which YAML 1.1 readers (kubectl's, PyYAML) and 1.2 readers read alike, so
    /// no user text can turn into a boolean (`yes`, `on`, `y`), a date, a number or a comment;
    /// block-style emitters leave some of those plain (see docs/design.md).
    pub fn to_yaml(&self, comment: &str) -> String {
        format!("{comment}---\n{}\n", self.to_json_pretty())
    }
}

/// The Job of `spec`, each pod running `candor` (the shard's command line).
pub(crate) fn build(spec: &JobSpec, candor: &[String]) -> Job {
    let labels = || Labels {
        name: "candor",
        instance: spec.name.clone(),
    };
    let (command, args) = if spec.no_shell {
        (candor[..1].to_vec(), candor[1..].to_vec())
    } else {
        // `sh -c SCRIPT NAME ARGS...`: the args reach the script as "$@", unquoted by no one.
        let shell = ["/bin/sh", "-c", &pod_script(), "candor-shard"];
        (shell.map(String::from).to_vec(), candor.to_vec())
    };
    let container = Container {
        name: "candor",
        image: spec.image.clone(),
        command,
        args,
        env: vec![
            EnvVar {
                name: "JOB_COMPLETION_INDEX",
                value: None,
                value_from: Some(EnvVarSource {
                    field_ref: FieldRef {
                        field_path:
                            "metadata.annotations['batch.kubernetes.io/job-completion-index']",
                    },
                }),
            },
            EnvVar {
                name: "CANDOR_RESULTS",
                value: Some("/results/shard-$(JOB_COMPLETION_INDEX).json"),
                value_from: None,
            },
        ],
        resources: Resources {
            requests: Quantities {
                cpu: Some(spec.cpu.clone()),
                memory: spec.memory.clone(),
            },
            limits: Quantities {
                cpu: spec.guaranteed.then(|| spec.cpu.clone()),
                memory: spec.memory.clone(),
            },
        },
        volume_mounts: vec![VolumeMount {
            name: "results",
            mount_path: "/results",
        }],
        ports: spec.live_port.map(|port| {
            vec![ContainerPort {
                name: "live",
                container_port: port,
                protocol: "TCP",
            }]
        }),
    };
    let volume = Volume {
        name: "results",
        persistent_volume_claim: spec.pvc.as_ref().map(|claim| ClaimSource {
            claim_name: claim.clone(),
        }),
        empty_dir: spec.pvc.is_none().then_some(EmptyDir {}),
    };
    Job {
        api_version: "batch/v1",
        kind: "Job",
        metadata: JobMeta {
            name: spec.name.clone(),
            namespace: spec.namespace.clone(),
            labels: labels(),
            annotations: JobAnnotations {
                start_at: spec.start_at.clone(),
                shards: spec.shards.to_string(),
            },
        },
        spec: JobBody {
            completion_mode: "Indexed",
            completions: spec.shards,
            parallelism: spec.shards,
            // A failed shard is reported, never re-run: a retry would double-send its share.
            backoff_limit: 0,
            template: PodTemplate {
                metadata: PodMeta {
                    labels: labels(),
                    annotations: spec.live_port.map(|port| ScrapeAnnotations {
                        scrape: "true",
                        port: port.to_string(),
                        path: "/metrics",
                    }),
                },
                spec: PodSpec {
                    // A retried shard would send its share of the schedule twice.
                    restart_policy: "Never",
                    // One generator per node where possible, so that shards do not share CPUs.
                    topology_spread_constraints: vec![TopologySpread {
                        max_skew: 1,
                        topology_key: "kubernetes.io/hostname",
                        when_unsatisfiable: "ScheduleAnyway",
                        label_selector: LabelSelector {
                            match_labels: labels(),
                        },
                    }],
                    containers: vec![container],
                    volumes: vec![volume],
                },
            },
        },
    }
}
