//! The push outputs of this process (`--out`): every run of the command reports its intervals
//! and its end to them, as to the live view.

use candor_load::{IntervalReport, RunOutcome, RunPlan};
pub use candor_push::RunSeries;
use candor_push::{OutputSpec, PushError, Pusher};
use std::sync::Mutex;
use std::time::Duration;

/// The most a run stopped by SIGINT or SIGTERM waits for its pushes after its results.
const INTERRUPTED_FLUSH: Duration = Duration::from_secs(1);

/// The pusher every run of this process reports to (one command per process, so one at most).
static PUSHER: Mutex<Option<Pusher>> = Mutex::new(None);

fn with(f: impl FnOnce(&mut Pusher)) {
    if let Some(p) = PUSHER.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
        f(p);
    }
}

/// The flags of the push outputs.
#[derive(clap::Args, Debug, Clone)]
pub struct PushArgs {
    /// Push the run's series while it runs and once more at its end: `prometheus-rw=URL`
    /// (Prometheus remote write with native histograms; `URL?classic` for classic buckets) or
    /// `otlp=URL` (OpenTelemetry metrics, OTLP/HTTP protobuf, exponential histograms) or
    /// `otlp-grpc=URL` (the same over OTLP/gRPC, e.g. http://collector:4317).
    /// Repeatable. See docs/outputs.md.
    #[arg(long = "out", value_name = "KIND=URL")]
    pub out: Vec<String>,
    /// A label on every pushed series, NAME=VALUE (repeatable).
    #[arg(long = "tag", value_name = "NAME=VALUE", requires = "out")]
    pub tag: Vec<String>,
    /// The run_id label of the pushed series (default: the --start-at instant, so that the shards
    /// of one run agree, else the start time and process id).
    #[arg(long, value_name = "ID", requires = "out")]
    pub run_id: Option<String>,
    /// How often the series are pushed during the run (whole seconds; the end is always pushed).
    #[arg(long, default_value = "5s", value_name = "DUR", requires = "out")]
    pub push_interval: candor_core::units::DurationArg,
    /// After the run, how long the outputs may take to deliver what is queued; what is left then
    /// is counted as dropped.
    #[arg(long, default_value = "10s", value_name = "DUR", requires = "out")]
    pub push_flush: candor_core::units::DurationArg,
}

/// The push outputs of this command; [`PushSession::close`] delivers the rest.
pub struct PushSession {
    flush: Duration,
}

/// The `--tag` labels, parsed.
type Tags = Vec<(String, String)>;

/// The outputs and tags of `args`, checked (pure: `candor k8s` checks the pods' flags with it).
pub fn check(args: &PushArgs) -> Result<(Vec<OutputSpec>, Tags), PushError> {
    let outputs = args
        .out
        .iter()
        .map(|o| OutputSpec::parse(o))
        .collect::<Result<Vec<_>, _>>()?;
    let tags = args
        .tag
        .iter()
        .map(|t| candor_push::parse_tag(t))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(id) = &args.run_id {
        candor_push::check_run_id(id)?;
    }
    Ok((outputs, tags))
}

/// Checks the flags and starts the outputs' threads (before any load: bad input is an error
/// here). `start_at_wall_ns` is the run's `--start-at`, if any; `series` numbers the runs of a
/// command of several (each step or repeat under its label).
pub fn start(
    args: &PushArgs,
    start_at_wall_ns: Option<u64>,
    series: Option<RunSeries>,
) -> Result<Option<PushSession>, PushError> {
    if args.out.is_empty() {
        return Ok(None);
    }
    let (outputs, tags) = check(args)?;
    let run_id = match (&args.run_id, start_at_wall_ns) {
        (Some(id), _) => id.clone(),
        (None, Some(at)) => candor_core::dates::rfc3339_millis(at as f64 / 1e9),
        (None, None) => format!(
            "{}-{}",
            candor_core::dates::rfc3339_millis(candor_core::clock::wall_clock_ns() as f64 / 1e9),
            std::process::id()
        ),
    };
    candor_push::check_run_id(&run_id)?;
    let every = Duration::from_nanos(args.push_interval.ns());
    let mut pusher = Pusher::start(&outputs, tags, run_id, every)?;
    if let Some(s) = series {
        pusher.number_runs(s);
    }
    *PUSHER.lock().unwrap_or_else(|e| e.into_inner()) = Some(pusher);
    Ok(Some(PushSession {
        flush: Duration::from_nanos(args.push_flush.ns()),
    }))
}

impl PushSession {
    /// Call after the results are written: delivers what is queued (within the flush time) and
    /// says on stderr what each output took and dropped.
    pub fn close(self) {
        let Some(p) = PUSHER.lock().unwrap_or_else(|e| e.into_inner()).take() else {
            return;
        };
        // A run stopped by a signal must end promptly: its pushes get a second at most.
        let flush = match crate::interrupt::received() {
            Some(_) => self.flush.min(INTERRUPTED_FLUSH),
            None => self.flush,
        };
        for (url, s) in p.close(flush) {
            let mut line = format!(
                "candor: pushed {} samples to {url} in {} requests",
                s.sent_samples, s.pushes
            );
            if s.dropped_samples > 0 {
                line.push_str(&format!("; {} samples dropped", s.dropped_samples));
                if let Some(e) = &s.last_error {
                    line.push_str(&format!(" (last error: {e})"));
                }
            }
            eprintln!("{line}");
        }
    }
}

/// A run of `config` begins.
pub fn begin(config: &RunPlan) {
    with(|p| {
        p.begin(
            (config.shard_count > 1).then_some(config.shard_index),
            config.shard_rate_per_s(),
            config.warmup_ns > 0,
        )
    });
}

/// One interval of the current run.
pub fn interval(report: &IntervalReport) {
    with(|p| p.interval(report));
}

/// The current run of `config` ended.
pub fn finish(outcome: &RunOutcome, config: &RunPlan) {
    with(|p| p.finish(outcome, &outcome.named_books(&config.config)));
}
