//! Running a load test: start the workers on one shared schedule origin, collect their interval
//! histograms as the run goes (for the live view and the time series), merge their totals, and
//! return the numbers (`RunOutcome`); the results file and its verdicts are built above the
//! engine (`candor_runner::run_results`).

use crate::collector::Collector;
pub use crate::collector::IntervalReport;
use crate::plan::RunPlan;
use candor_core::clock::wall_clock_ns;
use candor_core::now_ns;
use candor_core::results::{
    Interval, PacingMargin, PacingResults, PhaseResults, PoolResults, RequestCounts, StopReason,
};
use candor_engine::config::LoadConfig;
pub use candor_engine::phase_outcome::PhaseOutcome;
use candor_engine::request_plan::prepare_requests;
use candor_engine::seam::unit::ProtocolUnit;
pub use candor_engine::shared::EarlyEnd;
use candor_engine::shared::{IntervalData, IntervalMsg, PhaseAcc, WorkerError, WorkerSetup};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Hooks and controls for a run.
#[derive(Clone, Default)]
pub struct RunOptions {
    /// Set to stop early (Ctrl-C): sending stops, outstanding requests are reported as such.
    pub stop: Arc<AtomicBool>,
    /// Set from `on_interval` to end the measured window early for a reason other than a signal
    /// (`--precision` reached, an objective that can no longer pass); see [`EarlyEnd`].
    pub end: Arc<EarlyEnd>,
    /// Called first thing on every worker thread (tests use it to mark threads).
    pub worker_start_hook: Option<Arc<dyn Fn() + Send + Sync>>,
    /// Called once with the monotonic instant of the first intended send (warm-up included),
    /// once every connection pool is open and before the first send, so that timed actions (an
    /// injected server pause) can be scheduled on the run's own clock.
    pub on_start: Option<Arc<dyn Fn(u64) + Send + Sync>>,
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("cannot start a load thread: {0}")]
    Thread(std::io::Error),
    #[error("a load thread failed: {0}")]
    Worker(candor_engine::shared::WorkerError),
    /// The request set of a run with several targets did not compile (validation normally
    /// catches it first).
    #[error("a load thread failed: {0}")]
    Requests(candor_workload::WorkloadError),
    #[error(transparent)]
    Tls(#[from] candor_engine::transport::tls::TlsError),
}

/// Everything a run measured.
pub struct RunOutcome {
    /// Monotonic instant of the first intended send (start of the warm-up, if any).
    pub start_ns: u64,
    pub start_wall_ns: u64,
    /// How late this process was for a given `--start-at` (0 when on time or not given).
    pub late_start_ns: u64,
    pub main: PhaseOutcome,
    pub warmup: Option<PhaseOutcome>,
    pub intervals: Vec<Interval>,
    /// Set when the run was stopped early (a signal): how long after the first intended send
    /// (warm-up included) the workers had all ended.
    pub interrupted_after_ns: Option<u64>,
    /// Set when `RunOptions::end` ended the run early: why, and how long after the first intended
    /// send (warm-up included) the schedule ended.
    pub ended_early: Option<(StopReason, u64)>,
    /// How the connection pool opened before the first intended send (every protocol).
    pub pool: Option<PoolResults>,
    /// What pacing cost (open loop).
    pub pacing: Option<PacingResults>,
    /// The requests the run compiled (HTTP requests): the names its per-request rows and
    /// failure examples go by.
    pub requests: Option<Arc<candor_workload::CompiledRequests>>,
    /// An `--llm` run's backend as its `/v1/models` named it before the load (set by the
    /// runner, which asks; see `llm_backend`).
    pub llm_backend: Option<candor_core::results::LlmBackend>,
    /// The model the requests named when the server named it (`--model` not given; set by the
    /// runner, see `llm_model`).
    pub llm_model_from_server: Option<String>,
}

/// Runs the load test described by `config`, calling `on_interval` after each interval.
pub fn run(
    plan: &RunPlan,
    options: RunOptions,
    on_interval: &mut (dyn FnMut(&IntervalReport) + Send),
) -> Result<RunOutcome, RunError> {
    let config = Arc::new(plan.config.clone());
    let protocol = &plan.protocol;
    if let Some(script) = &config.workload.script {
        // A script's error or thread:stop() ends the schedule as an abort does.
        script.set_end(options.end.clone());
    }
    // The requests are compiled once here (each extra target's once, with its own Host) and
    // shared by every thread, the books and the outcome.
    let compiled = candor_engine::request_plan::compile_for(&config, &**protocol)
        .map_err(RunError::Requests)?;
    let (gate, threads) = start_threads(&config, compiled.as_ref(), protocol, &options)?;
    let (pool, start) = open_and_start(&config, &options, gate, threads.earliest_ns);
    let (joined, collector) =
        collect_intervals(&config, &options, threads, start.mono_ns, on_interval);
    let (phases, failed_threads) = merge_threads(joined, config.threads)?;
    Ok(outcome(
        &config,
        &options,
        compiled,
        Ended {
            phases,
            failed_threads,
            collector,
            start,
            pool,
        },
    ))
}

/// The load threads of a run, started, each opening its pool before the gate lets it send.
struct Threads {
    handles: Vec<std::thread::JoinHandle<Result<[PhaseAcc; 2], WorkerError>>>,
    from_workers: crossbeam_channel::Receiver<IntervalMsg>,
    to_pool: crossbeam_channel::Sender<Box<IntervalData>>,
    count: usize,
    earliest_ns: u64,
}

/// Starts a load thread per thread and target, each with its share of the connections and of
/// the schedule.
fn start_threads(
    config: &Arc<LoadConfig>,
    compiled: Option<&Arc<candor_workload::CompiledRequests>>,
    protocol: &Arc<dyn ProtocolUnit>,
    options: &RunOptions,
) -> Result<(candor_engine::pool::Gate, Threads), RunError> {
    let requests = prepare_requests(config, protocol.request_form());
    let tls = protocol.thread_tls(config)?;
    // Request lines with their own "url": a worker per target and thread, each with the
    // thread's connections to its target and the entries of the thread's stream chosen for it.
    let targets: Vec<Arc<LoadConfig>> = std::iter::once(config.clone())
        .chain(config.workload.targets.iter().map(|t| {
            let mut c = (**config).clone();
            c.target = t.clone();
            Arc::new(c)
        }))
        .collect();
    // What each target's threads share: its requests (prepared and compiled with its own Host)
    // and its TLS configuration, made once per target.
    let mut per_target = vec![(requests, compiled.cloned(), tls)];
    for config in &targets[1..] {
        per_target.push((
            prepare_requests(config, protocol.request_form()),
            candor_engine::request_plan::compile_for(config, &**protocol)
                .map_err(RunError::Requests)?,
            protocol.thread_tls(config)?,
        ));
    }
    let filters: Vec<Option<candor_engine::schedule::SeqFilter>> = if targets.len() > 1 {
        let compiled = compiled.ok_or_else(|| {
            RunError::Requests(candor_workload::WorkloadError::Invalid(
                "request lines with their own \"url\" need HTTP requests".into(),
            ))
        })?;
        let picker = Arc::new(compiled.picker.clone());
        let target_of: Arc<[usize]> = config.workload.target_of.clone().into();
        let seed = config.workload.seed;
        (0..targets.len())
            .map(|t| {
                let (picker, target_of) = (picker.clone(), target_of.clone());
                Some(candor_engine::schedule::SeqFilter(Arc::new(move |seq| {
                    target_of[picker.choose(seed, seq) as usize] == t
                })))
            })
            .collect()
    } else {
        vec![None]
    };
    // A target no line names (the command line's, when every line has its own "url") gets no
    // workers: it would only hold connections open.
    let active: Vec<usize> = (0..targets.len())
        .filter(|t| targets.len() == 1 || config.workload.target_of.contains(t))
        .collect();
    let threads = config.threads;
    let workers = threads * active.len();
    let (to_collector, from_workers) = crossbeam_channel::bounded::<IntervalMsg>(workers * 16);
    let (to_pool, pool) = crossbeam_channel::bounded::<Box<IntervalData>>(workers * 16);
    for _ in 0..workers * 3 {
        let _ = to_pool.try_send(Box::new(IntervalData::for_streams(
            config.stream.kind.is_some() || config.stream.llm,
        )));
    }
    // Threads open their connection pools first; the schedule starts once every pool is ready
    // (and not before 50 ms from now, time for every thread to start), or at the common start
    // instant given (shards) if that is later; one already past is missed, reported, and the
    // schedule starts with the pools, its shape kept (see `start_instant`).
    let earliest_ns = now_ns() + 50_000_000;
    let (gate, tickets) = candor_engine::pool::gate(workers);
    let mut handles = Vec::with_capacity(workers);
    for (w, ticket) in tickets.into_iter().enumerate() {
        let (t, target) = (w % threads, active[w / threads]);
        let (config, filter) = (targets[target].clone(), filters[target].clone());
        let (requests, compiled, tls) = per_target[target].clone();
        let connections =
            config.connections / threads + usize::from(t < config.connections % threads);
        let (lane, stride) = config.lane(t);
        let (stream_config, end_offset_ns) =
            (config.clone(), config.warmup_ns + config.duration_ns);
        // Made once the pools are open and the start is set; a trace that cannot be opened
        // then fails the thread with its reason.
        let schedule_at = move |start_ns| {
            stream_config
                .thread_schedule(start_ns, t)
                .map(|s| match &filter {
                    Some(keep) => s.map(|s| s.filtered(keep.clone(), start_ns + end_offset_ns)),
                    None => s,
                })
                .map_err(candor_engine::shared::WorkerError::Schedule)
        };
        let setup = WorkerSetup {
            config: config.clone(),
            requests,
            compiled,
            requests_are: protocol.requests_are(),
            slots: protocol.slots(),
            connections,
            // Until the pools are open and the start is set: far ahead, so that what happens
            // while a pool opens is booked as before the start.
            start_ns: candor_engine::pool::UNKNOWN_START_NS,
            schedule: None,
            to_collector: to_collector.clone(),
            pool: pool.clone(),
            stop: options.stop.clone(),
            end: options.end.clone(),
            on_start: options.worker_start_hook.clone(),
            seq_lane: lane,
            seq_stride: stride,
        };
        let end = options.end.clone();
        let protocol = protocol.clone();
        let handle = std::thread::Builder::new()
            .name(if targets.len() > 1 {
                format!("candor-load-{t}-{target}")
            } else {
                format!("candor-load-{t}")
            })
            .spawn(
                move || -> Result<[PhaseAcc; 2], candor_engine::shared::WorkerError> {
                    // A panic the driver could not contain (its books lost) still ends the run
                    // for every thread, at once, and is named: the others' results are kept.
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        if let Some(hook) = &setup.on_start {
                            hook();
                        }
                        protocol.run_thread(setup, tls, ticket, Box::new(schedule_at))
                    }))
                    .unwrap_or_else(|payload| {
                        end.request(StopReason::Failure);
                        Err(candor_engine::shared::WorkerError::PanickedWith(
                            candor_engine::shared::panic_message(&*payload),
                        ))
                    })
                },
            )
            .map_err(RunError::Thread)?;
        handles.push(handle);
    }
    let threads = Threads {
        handles,
        from_workers,
        to_pool,
        count: workers,
        earliest_ns,
    };
    Ok((gate, threads))
}

/// Waits for every thread's pool to open, then sets the start and lets the threads go.
fn open_and_start(
    config: &LoadConfig,
    options: &RunOptions,
    gate: candor_engine::pool::Gate,
    earliest_ns: u64,
) -> (candor_engine::pool::PoolTally, StartInstant) {
    let pool = gate.wait_pools();
    let earliest_ns = candor_engine::pool::earliest_start(earliest_ns, now_ns());
    let start = start_instant(
        config.start_at_wall_ns,
        earliest_ns,
        (now_ns(), wall_clock_ns()),
    );
    let start_ns = start.mono_ns;
    if let Some(hook) = &options.on_start {
        hook(start_ns);
    }
    gate.start(start_ns);
    if let Some(script) = &config.workload.script {
        // A script still in Lua past the run's end (an endless loop in request()) is stopped
        // there, not waited for.
        script.set_deadline(
            start_ns,
            start_ns
                .saturating_add(config.warmup_ns)
                .saturating_add(config.duration_ns)
                .saturating_add(config.drain_ns),
        );
    }
    (pool, start)
}

/// Merges and reports the threads' intervals while they run, and joins them.
#[allow(clippy::type_complexity)]
fn collect_intervals(
    config: &LoadConfig,
    options: &RunOptions,
    threads: Threads,
    start_ns: u64,
    on_interval: &mut (dyn FnMut(&IntervalReport) + Send),
) -> (
    Vec<std::thread::Result<Result<[PhaseAcc; 2], WorkerError>>>,
    Collector,
) {
    let Threads {
        handles,
        from_workers,
        to_pool,
        count: workers,
        ..
    } = threads;
    let total_ns = config.warmup_ns + config.duration_ns;
    let mut collector = Collector {
        pending: BTreeMap::new(),
        threads: workers,
        interval_ns: config.interval_ns,
        warmup_end_offset_ns: config.warmup_ns,
        total_ns,
        start_ns,
        done: candor_engine::interval_store::IntervalStore::new(),
        totals: [RequestCounts::default(); 2],
        llm: config.stream.llm,
        goodput: config.goodput.is_some(),
        embeddings: config.stream.embeddings.is_some(),
        conversations: config.conversations.is_some(),
    };
    // The intervals are merged, encoded and reported by a thread of background priority while
    // the workers run, so that this bookkeeping (about a millisecond of CPU a second) does not
    // delay a send on a core the load threads share with it. Once the workers have ended, this
    // thread, at its usual priority, takes over whatever is still queued, so that the end of a
    // run (an interrupt's included) waits for at most the one message the background thread is
    // on. Should that thread not start, this one collects while the workers run, as it would
    // alone; should `on_interval` panic there, the run is stopped, the queue kept empty so that
    // no worker waits on it, and the panic carried on from here once the workers have ended.
    let collecting = std::sync::Mutex::new((&mut collector, &mut *on_interval));
    let collect = |msg: IntervalMsg| {
        let mut guard = collecting.lock().unwrap_or_else(|p| p.into_inner());
        let (collector, on_interval) = &mut *guard;
        collector.accept(msg, &to_pool, &mut **on_interval);
    };
    let workers_done = AtomicBool::new(false);
    let (joined, panicked) = std::thread::scope(|scope| {
        let background = std::thread::Builder::new()
            .name("candor-collect".into())
            .spawn_scoped(scope, || {
                // An open loop's threads sleep between sends, and the collector runs in those
                // sleeps; a closed loop's never do, so there it keeps its share of the core (a
                // collector starved for seconds would make the workers allocate interval boxes
                // and, after 16 intervals, wait for it).
                if config.is_open_loop() {
                    candor_engine::priority::lower_to_background();
                }
                let collected = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    while !workers_done.load(Ordering::Acquire) {
                        match from_workers.recv() {
                            Ok(msg) => collect(msg),
                            Err(_) => break,
                        }
                    }
                }));
                collected.err().inspect(|_| {
                    options.stop.store(true, Ordering::Relaxed);
                    while from_workers.recv().is_ok() {}
                })
            });
        if background.is_err() {
            while let Ok(msg) = from_workers.recv() {
                collect(msg);
            }
        }
        let joined: Vec<_> = handles.into_iter().map(|h| h.join()).collect();
        workers_done.store(true, Ordering::Release);
        let panicked = background.ok().and_then(|b| b.join().ok().flatten());
        (joined, panicked)
    });
    if let Some(payload) = panicked {
        std::panic::resume_unwind(payload);
    }
    // Every worker has dropped its sender, so this ends once the queue is empty.
    while let Ok(msg) = from_workers.recv() {
        collector.accept(msg, &to_pool, on_interval);
    }
    collector.finish_all(&to_pool, on_interval);
    (joined, collector)
}

/// The threads' phases added up; a thread that panicked is named, its totals lost.
#[allow(clippy::type_complexity)]
fn merge_threads(
    joined: Vec<std::thread::Result<Result<[PhaseAcc; 2], WorkerError>>>,
    threads: usize,
) -> Result<([PhaseAcc; 2], Vec<String>), RunError> {
    let mut phases = [PhaseAcc::new(), PhaseAcc::new()];
    let mut failed_threads = Vec::new();
    for (w, worker) in joined.into_iter().enumerate() {
        let worker_phases = match worker
            .map_err(|_| candor_engine::shared::WorkerError::Panicked)
            .and_then(|done| done)
        {
            Ok(done) => done,
            // Lost with its books (intervals it reported are in the time series); the rest of
            // the run is kept and the failure named.
            Err(candor_engine::shared::WorkerError::PanickedWith(message)) => {
                failed_threads.push(candor_engine::shared::thread_failure_warning(
                    &format!("candor-load-{}", w % threads),
                    &format!("{message}; its own totals are lost"),
                ));
                continue;
            }
            Err(e) => return Err(RunError::Worker(e)),
        };
        for (into, from) in phases.iter_mut().zip(worker_phases) {
            into.merge(from);
        }
    }
    Ok((phases, failed_threads))
}

/// What a run came to once its threads ended.
struct Ended {
    phases: [PhaseAcc; 2],
    failed_threads: Vec<String>,
    collector: Collector,
    start: StartInstant,
    pool: candor_engine::pool::PoolTally,
}

/// The run's outcome: its phases over the measured window (cut short by a stop or an early
/// end), intervals, pool and pacing.
fn outcome(
    config: &LoadConfig,
    options: &RunOptions,
    requests: Option<Arc<candor_workload::CompiledRequests>>,
    ended: Ended,
) -> RunOutcome {
    let Ended {
        phases,
        failed_threads,
        collector,
        start,
        pool,
    } = ended;
    let (start_ns, start_wall_ns, late_start_ns) = (start.mono_ns, start.wall_ns, start.late_ns);
    let workers = collector.threads;
    let total_ns = config.warmup_ns + config.duration_ns;
    let stopped_early = options.stop.load(std::sync::atomic::Ordering::Relaxed);
    let elapsed_ns = now_ns().saturating_sub(start_ns);
    // A signal ends everything at once; an early end asked for by the owner ends the schedule at
    // its instant (and drains, unless it aborts).
    let ended_early = options
        .end
        .requested()
        .map(|(reason, at)| (reason, at.saturating_sub(start_ns)))
        .filter(|&(_, after)| after < total_ns);
    let measured_ns = if stopped_early {
        let end = ended_early.map_or(elapsed_ns, |(_, after)| after.min(elapsed_ns));
        end.saturating_sub(config.warmup_ns)
            .clamp(1, config.duration_ns)
    } else if let Some((_, after)) = ended_early {
        after
            .saturating_sub(config.warmup_ns)
            .clamp(1, config.duration_ns)
    } else {
        config.duration_ns
    };
    let [warm, mut main] = phases;
    main.warnings.extend(failed_threads);
    let (intervals, interval_fallback) = collector.done.into_vec();
    if let Some(why) = interval_fallback {
        main.warnings.push(format!(
            "the per-interval histograms were kept in memory instead of a temporary file: {why}"
        ));
    }
    let pacing = config.is_open_loop().then(|| PacingResults {
        margin: match config.spin_ns {
            Some(_) => PacingMargin::Fixed,
            None => PacingMargin::Adaptive,
        },
        spin_s: main.pacing.spin_ns as f64 / 1e9,
        spin_share: main.pacing.spin_ns as f64 / (workers as f64 * elapsed_ns.max(1) as f64),
        margin_us: main.pacing.margin_ns as f64 / 1e3,
        wakeups: main.pacing.wakeups,
        socket_wakeups: main.pacing.socket_wakeups,
    });
    let to_outcome = |p: PhaseAcc, duration_ns| PhaseOutcome {
        recorder: p.rec,
        unfinished: p.unfinished,
        counts: p.counts,
        tls_handshake: p.tls_handshake,
        first_message: p.first_message,
        duration_ns,
        warnings: p.warnings,
        workload: p.workload,
        failures: p.failures,
        faults: p.faults,
        codes: p.codes,
        stream: p.stream,
        reply_codes: p.reply_codes,
        protocol_counts: p.protocol_counts,
    };
    RunOutcome {
        start_ns,
        start_wall_ns,
        late_start_ns,
        warmup: (config.warmup_ns > 0).then(|| to_outcome(warm, config.warmup_ns)),
        main: to_outcome(main, measured_ns),
        intervals,
        interrupted_after_ns: stopped_early.then_some(elapsed_ns),
        ended_early,
        pool: (pool.connections() > 0).then(|| pool.results()),
        pacing,
        requests,
        llm_backend: None,
        llm_model_from_server: None,
    }
}

/// When the schedule starts, on both clocks, and how late that is for a `--start-at`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StartInstant {
    /// Monotonic instant of the first intended send.
    pub mono_ns: u64,
    /// The same instant on the wall clock.
    pub wall_ns: u64,
    /// How long after the agreed `--start-at` this is (0 when on time or none was given).
    pub late_ns: u64,
}

/// The start of the schedule: `earliest_ns` (monotonic: the pools are ready) unless an agreed
/// wall-clock instant `start_at` lies after it. An agreed instant already past when the pools
/// are ready is missed: the schedule starts at `earliest_ns` with its shape kept (no backlog is
/// sent at once) and the lateness is measured on the wall clock, where the agreed instant lives.
/// `now` is one paired reading (monotonic, wall) that maps one clock onto the other.
pub fn start_instant(start_at: Option<u64>, earliest_ns: u64, now: (u64, u64)) -> StartInstant {
    let (now_mono, now_wall) = (now.0 as i128, now.1 as i128);
    let earliest_wall = (now_wall + (earliest_ns as i128 - now_mono)).max(0) as u64;
    match start_at {
        Some(at) if at > earliest_wall => StartInstant {
            mono_ns: earliest_ns.saturating_add(at - earliest_wall),
            wall_ns: at,
            late_ns: 0,
        },
        Some(at) => StartInstant {
            mono_ns: earliest_ns,
            wall_ns: earliest_wall,
            late_ns: earliest_wall - at,
        },
        None => StartInstant {
            mono_ns: earliest_ns,
            wall_ns: earliest_wall,
            late_ns: 0,
        },
    }
}

impl RunOutcome {
    /// The measured phase's numbers, with the pool and pacing: a shard's target is its share of
    /// the total rate.
    pub fn main_results(&self, config: &LoadConfig) -> PhaseResults {
        let mut main = self.main.results(config);
        main.pool = self.pool.clone();
        main.pacing = self.pacing;
        main
    }

    /// The warm-up's numbers, if the run had one.
    pub fn warmup_results(&self, config: &LoadConfig) -> Option<PhaseResults> {
        self.warmup.as_ref().map(|w| w.results(config))
    }

    /// Why the run ended: a signal, an early end, or its planned duration.
    pub fn stop_reason(&self) -> StopReason {
        if self.interrupted_after_ns.is_some() {
            StopReason::Interrupt
        } else {
            self.ended_early
                .map_or(StopReason::Duration, |(reason, _)| reason)
        }
    }
}

impl RunOutcome {
    /// The per-stage and per-name results, from the measured phase's books.
    pub fn workload_results(
        &self,
        config: &LoadConfig,
    ) -> candor_core::workload_results::WorkloadResults {
        use candor_core::workload_results::{StageResults, WorkloadResults};
        let mut out = WorkloadResults {
            failure_examples: self.failure_examples(config),
            ..WorkloadResults::default()
        };
        let Some(books) = &self.main.workload else {
            return out;
        };
        let share = config.shard_share();
        let results = |acc: &PhaseAcc, duration_ns: u64, target: Option<f64>| {
            let mut r = PhaseResults::from_recorder(
                &acc.rec,
                &acc.unfinished,
                acc.counts,
                duration_ns as f64 / 1e9,
                target,
            );
            acc.reply_codes.write_into(&mut r);
            r
        };
        if let Some(profile) = config.shape.profile() {
            let mut start_ns = 0u64;
            for (stage, acc) in profile.stages.iter().zip(&books.stages) {
                let target = (stage.from_per_s + stage.to_per_s) / 2.0 * share;
                out.stages.push(StageResults {
                    start_s: start_ns as f64 / 1e9,
                    from_per_s: stage.from_per_s * share,
                    to_per_s: stage.to_per_s * share,
                    results: results(acc, stage.duration_ns, Some(target)),
                });
                start_ns += stage.duration_ns;
            }
        }
        for (name, acc) in self.named_books(config) {
            out.by_request
                .insert(name, results(acc, self.main.duration_ns, None));
        }
        out
    }

    /// The measured phase's books per request name, as `by_request` reports them: a request
    /// set's every name, a script's names only when it named requests (`wrk.name`) and only
    /// those it used; empty without names.
    pub fn named_books<'a>(&'a self, config: &LoadConfig) -> Vec<(String, &'a PhaseAcc)> {
        let Some(books) = &self.main.workload else {
            return Vec::new();
        };
        let (names, script) = match (&config.workload.script, &self.requests) {
            (Some(script), _) if script.named() => (script.names(), true),
            (Some(_), _) | (None, None) => return Vec::new(),
            (None, Some(compiled)) => (compiled.names.clone(), false),
        };
        names
            .into_iter()
            .zip(&books.names)
            .filter(|(_, acc)| !script || acc.counts.intended > 0)
            .collect()
    }
}

impl RunOutcome {
    /// The measured window's earliest failed responses, named as the per-name breakdown names
    /// their requests, their intended times from the first intended send.
    fn failure_examples(
        &self,
        config: &LoadConfig,
    ) -> Vec<candor_core::workload_results::FailureExample> {
        use candor_core::workload_results::FailureExample;
        let samples = self.main.failures.sorted();
        if samples.is_empty() {
            return Vec::new();
        }
        let compiled = self.requests.as_deref();
        // A trace's records carry their own method and path, which are not kept per request.
        let replayed = config.shape.replay_plan().is_some();
        let script_names = config.workload.script.as_ref().map(|s| s.names());
        let name = |request: u32| {
            if replayed {
                return "replayed request".to_string();
            }
            if let Some(names) = &script_names {
                return names
                    .get(request as usize)
                    .cloned()
                    .unwrap_or_else(|| format!("request {request}"));
            }
            compiled
                .as_ref()
                .and_then(|c| {
                    let index = *c.name_of.get(request as usize)?;
                    c.names.get(index).cloned()
                })
                .unwrap_or_else(|| format!("request {request}"))
        };
        samples
            .iter()
            .map(|s| {
                FailureExample::new(
                    name(s.request),
                    s.seq,
                    s.intended.saturating_sub(self.start_ns) as f64 / 1e9,
                    s.status,
                    s.check,
                    s.body(),
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn an_agreed_start_ahead_is_kept_on_the_monotonic_clock() {
        // Monotonic 100 s is wall 1e9 s; the pools are ready at monotonic 101 s.
        let now = (100 * S, 1_000_000_000 * S);
        let at = 1_000_000_030 * S;
        let s = start_instant(Some(at), 101 * S, now);
        assert_eq!(
            s,
            StartInstant {
                mono_ns: 130 * S,
                wall_ns: at,
                late_ns: 0
            }
        );
    }

    #[test]
    fn a_missed_start_keeps_the_shape_and_its_lateness_is_wall_clock_time() {
        // Machine up for 60 s: monotonic 60 s is wall 1e9 s. Whatever the uptime, the lateness is
        // the wall-clock distance to the agreed instant (one hour, or years for 2020).
        for uptime in [60 * S, 86_400 * S] {
            let now = (uptime, 1_000_000_000 * S);
            let ready = uptime + S / 10;
            let hour_ago = 1_000_000_000 * S - 3600 * S;
            let s = start_instant(Some(hour_ago), ready, now);
            assert_eq!(s.mono_ns, ready, "the schedule starts with the pools");
            assert_eq!(s.wall_ns, 1_000_000_000 * S + S / 10);
            assert_eq!(s.late_ns, 3600 * S + S / 10);
            let y2020 = 1_577_836_800 * S;
            let now = (uptime, 1_795_000_000 * S);
            let s = start_instant(Some(y2020), uptime, now);
            assert_eq!(s.late_ns, (1_795_000_000 - 1_577_836_800) * S);
            assert_eq!(s.mono_ns, uptime);
        }
        let s = start_instant(None, 7 * S, (5 * S, 50 * S));
        assert_eq!(
            s,
            StartInstant {
                mono_ns: 7 * S,
                wall_ns: 52 * S,
                late_ns: 0
            }
        );
    }

    #[test]
    fn a_failed_thread_is_reported_in_the_words_it_always_was() {
        use candor_engine::shared::WorkerError;
        let said = |e: WorkerError| RunError::Worker(e).to_string();
        assert_eq!(
            said(WorkerError::Schedule(std::io::Error::other(
                "no such trace"
            ))),
            "a load thread failed: opening the schedule: no such trace"
        );
        assert_eq!(
            said(WorkerError::NoStart),
            "a load thread failed: the run ended before its start"
        );
        assert_eq!(
            said(WorkerError::Setup(std::io::Error::other("timerfd"))),
            "a load thread failed: timerfd"
        );
        assert_eq!(
            said(WorkerError::Panicked),
            "a load thread failed: panicked"
        );
    }
}
