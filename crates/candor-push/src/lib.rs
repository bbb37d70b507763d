//! candor's push outputs (`--out`): a run's series sent while it runs and once more at its end,
//! to Prometheus remote write (native histograms, or classic buckets for old receivers) or
//! OpenTelemetry (OTLP over HTTP or gRPC). Fed
//! from the interval reports the run's collector already makes, on a thread of its own per
//! output: nothing is added to the load threads, and a receiver that is down only costs the
//! samples it could not take (counted).

mod answer;
pub mod format;
pub mod grpc;
pub mod native;
pub mod otlp;
pub mod remote_write;
pub mod sender;
pub mod series;
pub mod state;

pub use format::Format;
pub use sender::PushStats;
pub use state::{PushState, RunLabels};

use candor_load::engine::books::PhaseAcc;
use candor_load::load_run::RunOutcome;
use candor_load::IntervalReport;
use std::time::Duration;

/// Bad `--out`, `--tag` or `--run-id` input: said in one line before any load.
#[derive(Debug, thiserror::Error)]
pub enum PushError {
    #[error(
        "invalid --out '{0}': expected prometheus-rw=URL (optionally URL?classic), otlp=URL or otlp-grpc=URL"
    )]
    Out(String),
    #[error("invalid --out URL '{url}': {why}")]
    Url { url: String, why: String },
    #[error("invalid --tag '{0}': expected NAME=VALUE with NAME of letters, digits and _ (not starting with a digit or __), not run_id, shard, phase, step, repeat or le")]
    Tag(String),
    #[error("invalid --run-id '{0}': expected 1 to 128 printable characters")]
    RunId(String),
    #[error("cannot start the push thread: {0}")]
    Thread(std::io::Error),
}

/// The formats `--out` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputKind {
    /// `prometheus-rw`: Prometheus remote write.
    RemoteWrite,
    /// `otlp`: OpenTelemetry metrics over OTLP/HTTP (protobuf).
    Otlp,
    /// `otlp-grpc`: the same messages over OTLP/gRPC.
    OtlpGrpc,
}

/// One `--out` destination, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputSpec {
    pub kind: OutputKind,
    pub url: String,
    /// `?classic` at the end of the URL: classic `_bucket` series instead of native histograms.
    pub classic: bool,
}

impl OutputSpec {
    /// Parses `prometheus-rw=URL[?classic]`.
    pub fn parse(text: &str) -> Result<OutputSpec, PushError> {
        let (kind, url) = text
            .split_once('=')
            .ok_or_else(|| PushError::Out(text.into()))?;
        let kind = match kind {
            "prometheus-rw" => OutputKind::RemoteWrite,
            "otlp" => OutputKind::Otlp,
            "otlp-grpc" => OutputKind::OtlpGrpc,
            _ => return Err(PushError::Out(text.into())),
        };
        let (url, classic) = match url.strip_suffix("?classic") {
            Some(u) if kind == OutputKind::RemoteWrite => (u, true),
            _ => (url, false),
        };
        let bad = |why: &str| PushError::Url {
            url: url.into(),
            why: why.into(),
        };
        let uri: ureq::http::Uri = url.parse().map_err(|_| bad("not a URL"))?;
        match uri.scheme_str() {
            Some("http" | "https") => {}
            _ => return Err(bad("the scheme must be http:// or https://")),
        }
        if uri.host().is_none_or(str::is_empty) {
            return Err(bad("no host"));
        }
        Ok(OutputSpec {
            kind,
            url: url.into(),
            classic,
        })
    }
}

/// Labels candor sets itself; a `--tag` may not take them.
const RESERVED: [&str; 7] = ["run_id", "shard", "phase", "name", "step", "repeat", "le"];

/// The runs of a command of several (`sweep` and `capacity` steps, `run --repeat`'s repeats):
/// each run's series carry its number from 1 under this label, so that runs stay apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunSeries {
    /// `step`: a step of `candor sweep` or a probe of `candor capacity`.
    Step,
    /// `repeat`: one of `candor run --repeat N`.
    Repeat,
}

impl RunSeries {
    /// The label's name.
    pub fn label(self) -> &'static str {
        match self {
            RunSeries::Step => "step",
            RunSeries::Repeat => "repeat",
        }
    }
}

/// Parses one `--tag NAME=VALUE`.
pub fn parse_tag(text: &str) -> Result<(String, String), PushError> {
    let bad = || PushError::Tag(text.into());
    let (k, v) = text.split_once('=').ok_or_else(bad)?;
    let mut chars = k.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    if !first_ok
        || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        || k.starts_with("__")
        || RESERVED.contains(&k)
        || v.is_empty()
    {
        return Err(bad());
    }
    Ok((k.into(), v.into()))
}

/// Checks a `--run-id`.
pub fn check_run_id(id: &str) -> Result<(), PushError> {
    if id.is_empty() || id.len() > 128 || id.chars().any(|c| c.is_control()) {
        return Err(PushError::RunId(id.into()));
    }
    Ok(())
}

/// Every output of a command, fed by its runs.
pub struct Pusher {
    outputs: Vec<(String, sender::Sender)>,
    tags: Vec<(String, String)>,
    run_id: String,
    /// Push every this many intervals (and at the end).
    every: u64,
    state: Option<PushState>,
    intervals: u64,
    last_ms: i64,
    /// Numbers each run under this label (commands of several runs).
    series: Option<RunSeries>,
    /// Runs begun so far.
    runs: u32,
}

impl Pusher {
    /// Starts a push thread per output.
    pub fn start(
        outputs: &[OutputSpec],
        tags: Vec<(String, String)>,
        run_id: String,
        every: Duration,
    ) -> Result<Pusher, PushError> {
        let mut started = Vec::new();
        for o in outputs {
            let format: Box<dyn Format> = match o.kind {
                OutputKind::RemoteWrite => {
                    Box::new(remote_write::RemoteWrite { classic: o.classic })
                }
                OutputKind::Otlp | OutputKind::OtlpGrpc => Box::new(otlp::Otlp),
            };
            let grpc = match o.kind {
                OutputKind::OtlpGrpc => o.url.parse().ok().as_ref().and_then(grpc::Endpoint::of),
                _ => None,
            };
            let s =
                sender::Sender::start(format, o.url.clone(), grpc).map_err(PushError::Thread)?;
            started.push((o.url.clone(), s));
        }
        Ok(Pusher {
            outputs: started,
            tags,
            run_id,
            every: every.as_secs().max(1),
            state: None,
            intervals: 0,
            last_ms: 0,
            series: None,
            runs: 0,
        })
    }

    /// Labels each run that follows with its number under `series`'s label.
    pub fn number_runs(&mut self, series: RunSeries) {
        self.series = Some(series);
    }

    /// A run begins: counters start from zero (each step of a sweep is a run of its own).
    pub fn begin(&mut self, shard: Option<u32>, target_per_s: Option<f64>, has_warmup: bool) {
        let mut common = vec![("run_id".to_string(), self.run_id.clone())];
        if let Some(s) = shard {
            common.push(("shard".into(), s.to_string()));
        }
        self.runs += 1;
        if let Some(series) = self.series {
            common.push((series.label().into(), self.runs.to_string()));
        }
        common.extend(self.tags.iter().cloned());
        self.state = Some(PushState::new(RunLabels {
            common,
            target_per_s,
            has_warmup,
            start_unix_ns: candor_core::clock::wall_clock_ns(),
        }));
        self.intervals = 0;
    }

    /// One interval: pushed every `every` intervals.
    pub fn interval(&mut self, r: &IntervalReport) {
        let Some(state) = self.state.as_mut() else {
            return;
        };
        state.interval(r);
        self.intervals += 1;
        if self.intervals.is_multiple_of(self.every) {
            self.push();
        }
    }

    /// The run ended: its final numbers are pushed.
    /// `named`: the measured phase's books per request name (`RunOutcome::named_books`).
    pub fn finish(&mut self, outcome: &RunOutcome, named: &[(String, &PhaseAcc)]) {
        if let Some(state) = self.state.as_mut() {
            state.finish(outcome);
            state.names(named);
            self.push();
        }
    }

    fn push(&mut self) {
        let Some(state) = &self.state else { return };
        // Strictly increasing: a receiver refuses a second, different value at the same instant.
        let now = (candor_core::clock::wall_clock_ns() / 1_000_000) as i64;
        self.last_ms = now.max(self.last_ms + 1);
        let batch = state.batch(self.last_ms);
        for (_, s) in &self.outputs {
            s.send(batch.clone());
        }
    }

    /// Delivers what is queued (at most `flush` for all), then stops: each output's URL and stats.
    pub fn close(self, flush: Duration) -> Vec<(String, PushStats)> {
        // The threads flush side by side: each close only waits for its own.
        let deadline = std::time::Instant::now() + flush;
        self.outputs
            .into_iter()
            .map(|(url, s)| {
                let left = deadline.saturating_duration_since(std::time::Instant::now());
                (url, s.close(left))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_specs_parse_or_say_why_not() {
        let o = OutputSpec::parse("prometheus-rw=http://127.0.0.1:9090/api/v1/write").unwrap();
        assert_eq!(o.url, "http://127.0.0.1:9090/api/v1/write");
        assert!(!o.classic);
        let c = OutputSpec::parse("prometheus-rw=https://p.example/api/v1/write?classic").unwrap();
        assert!(c.classic);
        let t = OutputSpec::parse("otlp=http://127.0.0.1:4318/v1/metrics").unwrap();
        assert_eq!((t.kind, t.classic), (OutputKind::Otlp, false));
        let g = OutputSpec::parse("otlp-grpc=http://127.0.0.1:4317").unwrap();
        assert_eq!(
            (g.kind, g.url.as_str()),
            (OutputKind::OtlpGrpc, "http://127.0.0.1:4317")
        );
        assert!(grpc::Endpoint::of(&g.url.parse().unwrap()).is_some());
        assert_eq!(c.url, "https://p.example/api/v1/write");
        for bad in [
            "prometheus-rw",
            "influx=http://x/",
            "prometheus-rw=ftp://x/",
            "prometheus-rw=not a url",
            "prometheus-rw=",
        ] {
            let e = OutputSpec::parse(bad).unwrap_err().to_string();
            assert!(
                !e.contains('\n') && e.starts_with("invalid --out"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn tags_are_label_names_and_not_candor_s_own() {
        assert_eq!(
            parse_tag("team=payments").unwrap(),
            ("team".into(), "payments".into())
        );
        assert_eq!(parse_tag("_x1=a=b").unwrap(), ("_x1".into(), "a=b".into()));
        for bad in [
            "team",
            "1x=a",
            "a-b=c",
            "__name__=x",
            "run_id=x",
            "phase=x",
            "name=x",
            "shard=1",
            "le=1",
            "step=1",
            "repeat=2",
            "x=",
        ] {
            assert!(parse_tag(bad).is_err(), "{bad}");
        }
        assert!(check_run_id("r-20261128").is_ok());
        assert!(check_run_id("").is_err() && check_run_id("a\nb").is_err());
    }

    #[test]
    fn the_runs_of_a_series_are_numbered_under_their_label() {
        let labels_of = |p: &Pusher| p.state.as_ref().unwrap().batch(0).series[0].labels.clone();
        let tags = vec![("team".to_string(), "a".to_string())];
        let mut p = Pusher::start(&[], tags.clone(), "r".into(), Duration::from_secs(1)).unwrap();
        p.number_runs(RunSeries::Step);
        for step in ["1", "2"] {
            p.begin(Some(3), Some(10.0), false);
            let l = labels_of(&p);
            let pairs: Vec<(&str, &str)> = l.iter().map(|(k, v)| (&k[..], &v[..])).collect();
            assert_eq!(
                pairs[..4],
                [
                    ("run_id", "r"),
                    ("shard", "3"),
                    ("step", step),
                    ("team", "a")
                ]
            );
        }
        // A single run has no such label.
        let mut one = Pusher::start(&[], tags, "r".into(), Duration::from_secs(1)).unwrap();
        one.begin(None, None, false);
        assert!(!labels_of(&one)
            .iter()
            .any(|(k, _)| k == "step" || k == "repeat"));
        assert_eq!(RunSeries::Repeat.label(), "repeat");
    }
}
