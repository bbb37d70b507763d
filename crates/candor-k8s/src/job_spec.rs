//! What a Job is built from and the shell step each of its pods runs: the manifest needs
//! both, and the checks and usage text in `lib.rs` need the spec, so they sit below both.

use candor_report::pod_log::{LOG_JSON_BEGIN, LOG_JSON_END};

/// What the Job is made of; `run` are the `candor run` flags and URL, already checked.
#[derive(Debug, Clone)]
pub struct JobSpec {
    pub shards: u32,
    pub image: String,
    pub name: String,
    pub namespace: String,
    /// The common start instant, RFC 3339.
    pub start_at: String,
    pub cpu: String,
    pub memory: String,
    /// Also limit CPU to the request (Guaranteed QoS).
    pub guaranteed: bool,
    /// A PersistentVolumeClaim mounted at /results (else an emptyDir).
    pub pvc: Option<String>,
    /// The candor executable inside the image.
    pub binary: String,
    /// Run candor directly, without /bin/sh (results only on the volume).
    pub no_shell: bool,
    /// Serve each pod's live view on this port, scraped by Prometheus.
    pub live_port: Option<u16>,
    pub run: Vec<String>,
}

/// The shell step of each pod: run the shard, then copy its results JSON into the log between
/// markers so that `kubectl logs` is enough to collect it. The exit status is candor's.
pub fn pod_script() -> String {
    format!(
        "\"$@\"\nrc=$?\nif [ -f \"$CANDOR_RESULTS\" ]; then\n  echo '{LOG_JSON_BEGIN}'\n  cat \"$CANDOR_RESULTS\"\n  echo '{LOG_JSON_END}'\nfi\nexit $rc\n"
    )
}
