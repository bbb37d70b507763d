//! What a results file says about how it was made: the kind of file, the mode, the machine
//! (`Environment`) and the settings of a load run (`RunConfig`).

use serde::{Deserialize, Serialize};

/// The machine a result was measured on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    pub cpu_model: String,
    pub cores: usize,
    pub kernel: String,
    pub hostname: String,
}

impl Environment {
    /// Reads the environment of this machine (Linux /proc; best effort elsewhere).
    pub fn current() -> Self {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split(':').nth(1))
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|| "unknown".into());
        let read = |p: &str| {
            std::fs::read_to_string(p)
                .map(|s| s.trim().to_string())
                .unwrap_or_else(|_| "unknown".into())
        };
        Environment {
            cpu_model,
            cores: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            kernel: read("/proc/sys/kernel/osrelease"),
            hostname: read("/proc/sys/kernel/hostname"),
        }
    }
}

/// What produced a results file; how a reader knows which settings and books to expect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// `candor run` (and every step of a sweep or capacity search).
    Run,
    /// The in-process harness (`candor-harness`).
    Harness,
    /// `candor merge` of several results.
    Merged,
    /// An HdrHistogram interval log read by `candor report` (never written as JSON by candor).
    Hlog,
    /// A throughput sweep (`candor sweep --json`): the kind of a [`SweepResults`] file.
    ///
    /// [`SweepResults`]: ../../candor_analysis/sweep_results/struct.SweepResults.html
    Sweep,
}

impl Kind {
    /// The name used in JSON and reports.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Run => "run",
            Kind::Harness => "harness",
            Kind::Merged => "merged",
            Kind::Hlog => "hlog",
            Kind::Sweep => "sweep",
        }
    }
}

/// Compares with the JSON name, so that a reader can check a kind against the contract's text.
impl PartialEq<&str> for Kind {
    fn eq(&self, name: &&str) -> bool {
        self.name() == *name
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How the requests were paced, which decides what the latency means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// Sent on a schedule and timed from the intended send time.
    OpenLoop,
    /// Each connection sends again when answered: service time only.
    ClosedLoop,
    /// Read from an interval log: no schedule is known.
    IntervalLog,
    /// A merge of results with different modes, in input order (`open-loop + closed-loop`).
    Mixed(Vec<Mode>),
}

impl Mode {
    /// The name used in JSON and reports.
    pub fn name(&self) -> String {
        match self {
            Mode::OpenLoop => "open-loop".into(),
            Mode::ClosedLoop => "closed-loop".into(),
            Mode::IntervalLog => "interval log".into(),
            Mode::Mixed(parts) => parts.iter().map(Mode::name).collect::<Vec<_>>().join(" + "),
        }
    }

    /// True for a closed loop (not for a mix that contains one).
    pub fn is_closed_loop(&self) -> bool {
        *self == Mode::ClosedLoop
    }

    /// The one mode of all `modes` when they agree, else their mix in order (flattened).
    pub fn common(modes: impl IntoIterator<Item = Mode>) -> Option<Mode> {
        let all: Vec<Mode> = modes
            .into_iter()
            .flat_map(|m| match m {
                Mode::Mixed(parts) => parts,
                one => vec![one],
            })
            .collect();
        let first = all.first()?.clone();
        Some(if all.iter().all(|m| *m == first) {
            first
        } else {
            Mode::Mixed(all)
        })
    }
}

/// Compares with the JSON name (`"open-loop + closed-loop"` for a mix).
impl PartialEq<&str> for Mode {
    fn eq(&self, name: &&str) -> bool {
        self.name() == *name
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name())
    }
}

/// A `mode` no build of candor writes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown mode {0:?} (expected open-loop, closed-loop or interval log)")]
pub struct UnknownMode(pub String);

impl std::str::FromStr for Mode {
    type Err = UnknownMode;
    fn from_str(s: &str) -> Result<Mode, UnknownMode> {
        let one = |p: &str| match p {
            "open-loop" => Ok(Mode::OpenLoop),
            "closed-loop" => Ok(Mode::ClosedLoop),
            "interval log" => Ok(Mode::IntervalLog),
            other => Err(UnknownMode(other.to_string())),
        };
        if s.contains(" + ") {
            s.split(" + ")
                .map(one)
                .collect::<Result<_, _>>()
                .map(Mode::Mixed)
        } else {
            one(s)
        }
    }
}

impl Serialize for Mode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
    }
}

impl<'de> Deserialize<'de> for Mode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Mode, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// How a load run's intended send times were spaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ArrivalName {
    Constant,
    Poisson,
}

impl ArrivalName {
    /// The name used in JSON and reports.
    pub fn name(self) -> &'static str {
        match self {
            ArrivalName::Constant => "constant",
            ArrivalName::Poisson => "poisson",
        }
    }
}

pub use crate::protocol_name::ProtocolName;

/// The settings of a load run (`kind` run) as its results record them: the `config` object.
///
/// Fields are in alphabetical order so that the JSON keeps the key order earlier builds wrote.
/// Every field has a default so that older files, and the settings of other tools, read as far
/// as they go (see [`RunResults::run_config`](crate::results::RunResults::run_config)).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunConfig {
    pub arrival: Option<ArrivalName>,
    pub body_bytes: usize,
    /// The accepted statuses (`--check-status`); `None` for raw TCP, which has none.
    pub check_status: Option<String>,
    pub connections: usize,
    pub drain_s: f64,
    pub duration_s: f64,
    /// The gRPC method a gRPC run called (`package.Service/Method`); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grpc_call: Option<String>,
    /// Header lines, with Authorization values redacted: results are made to be shared.
    pub headers: Vec<String>,
    /// Seconds into the run at which a signal stopped it (measured, not a setting).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interrupted_after_s: Option<f64>,
    pub interval_s: f64,
    /// How late this process started after the agreed `--start-at` (measured, not a setting;
    /// kept beside `start_at_unix_s` so that `candor merge` can say how late each shard was).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub late_start_s: Option<f64>,
    /// An `--llm` run's settings in effect; absent for other runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llm: Option<crate::llm_run::LlmSettings>,
    pub method: String,
    pub pipeline: usize,
    /// The `-R` load profile (stages), as given; absent for one rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    pub protocol: Option<ProtocolName>,
    /// The total rate (all shards); `None` in closed-loop mode.
    pub rate_per_s: Option<f64>,
    pub request_set_size: Option<usize>,
    /// `-n`: the number of requests asked for, when the run was sized by count.
    pub requests_total: Option<u64>,
    /// The Poisson seed; `None` for constant arrivals.
    pub seed: Option<u64>,
    pub shard_count: u32,
    pub shard_index: u32,
    /// `--spin` in microseconds; null when the pacer chose the spin from measured wake-ups.
    pub spin_us: Option<f64>,
    pub start_at_unix_s: Option<f64>,
    /// HTTP/2 streams per connection; `None` for other protocols.
    pub streams: Option<usize>,
    pub threads: usize,
    pub timeout_s: f64,
    pub tls_insecure: bool,
    pub warmup_s: f64,
    /// A WebSocket run's messages were binary frames (`--ws-binary`) rather than text; absent
    /// for other protocols.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ws_binary: Option<bool>,
    /// How a WebSocket run matched replies to messages (`--ws-match`: `order` or
    /// `json:FIELD`); absent for other protocols.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ws_match: Option<String>,
}

impl RunConfig {
    /// The `config` value of a results file.
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("run settings always serialize")
    }
}
