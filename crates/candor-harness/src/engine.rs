//! The engine: paces iterations on a schedule, hands each its intended start, records what it
//! measures, collects other threads' samplers and the jitter monitor at run boundaries.

use crate::alloc::{AllocStats, CountingAllocator};
use crate::clock::{Clock, MonotonicClock};
use crate::jitter::JitterMonitor;
use crate::phased::{HistSet, PhasedSet, E2E, SERVICE};
use crate::results::HarnessResults;
use crate::run_data::{Phase, RunData};
use crate::sampler::{ProbeId, Sampler, Stamp};
use crate::settings::Config;
use crate::text::{run_text, warmup_text};
use candor_core::hist::{new_histogram, record_clamped};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The code under test. Closures `FnMut(&mut Iteration)` implement it; implement it on a struct
/// to get the phase hooks.
pub trait Benchmark {
    /// One iteration. The harness calls it at (or, if the previous one overran, after) the
    /// iteration's intended start. Unless the iteration records its end itself
    /// ([`Iteration::sample_end_to_end`]) or hands it off to another thread
    /// ([`Iteration::hand_off`]), its end is taken when this returns.
    fn run(&mut self, ctx: &mut Iteration<'_>);
    /// Called before the warm-up and before each run.
    fn on_phase(&mut self, _phase: Phase) {}
    /// Called once after the last run.
    fn complete(&mut self) {}
}

impl<F: FnMut(&mut Iteration<'_>)> Benchmark for F {
    #[inline]
    fn run(&mut self, ctx: &mut Iteration<'_>) {
        self(ctx)
    }
}

/// What an iteration knows about itself, and where it records.
pub struct Iteration<'a> {
    intended: u64,
    actual: u64,
    index: u64,
    phase: Phase,
    set: &'a mut HistSet,
    clock: &'a dyn Clock,
    ended: bool,
    handed_off: bool,
}

impl Iteration<'_> {
    /// When the schedule says this iteration should have started (ns, the harness clock).
    /// End-to-end times are measured from here.
    #[inline]
    pub fn intended_start_ns(&self) -> u64 {
        self.intended
    }
    /// When the harness actually started it (later than intended if an earlier one overran).
    #[inline]
    pub fn actual_start_ns(&self) -> u64 {
        self.actual
    }
    /// Both start times, to send to another thread with the work.
    #[inline]
    pub fn stamp(&self) -> Stamp {
        Stamp {
            intended_ns: self.intended,
            actual_ns: self.actual,
        }
    }
    /// 0-based index of the iteration within its phase (warm-up or run).
    #[inline]
    pub fn index(&self) -> u64 {
        self.index
    }
    /// Which phase this iteration belongs to.
    #[inline]
    pub fn phase(&self) -> Phase {
        self.phase
    }
    /// The harness clock (the monotonic clock unless a test supplied another).
    #[inline]
    pub fn now_ns(&self) -> u64 {
        self.clock.now_ns()
    }
    /// Records a probe sample (a duration the benchmark measured).
    #[inline]
    pub fn sample(&mut self, probe: ProbeId, duration_ns: u64) {
        self.set.record(probe.slot(), duration_ns);
    }
    /// Records the iteration's end at `end_ns`: end-to-end from the intended start, service time
    /// from the actual start. Call it once per iteration (each call records a sample).
    #[inline]
    pub fn sample_end_to_end(&mut self, end_ns: u64) {
        self.set.record(E2E, end_ns.saturating_sub(self.intended));
        self.set.record(SERVICE, end_ns.saturating_sub(self.actual));
        self.ended = true;
    }
    /// [`Iteration::sample_end_to_end`] now; returns the time.
    #[inline]
    pub fn end_now(&mut self) -> u64 {
        let end = self.clock.now_ns();
        self.sample_end_to_end(end);
        end
    }
    /// Declares that another thread will record this iteration's end with
    /// [`Sampler::sample_end_to_end`]; returns the stamp to send it. The harness then counts on
    /// exactly one such sample per handed-off iteration, and waits for them at each run's end.
    #[inline]
    pub fn hand_off(&mut self) -> Stamp {
        self.handed_off = true;
        self.stamp()
    }
}

/// A configured harness. Create with [`Harness::builder`], then [`Harness::run`].
pub struct Harness {
    cfg: Config,
    /// Locked only when a sampler is created and at phase boundaries, never per sample.
    samplers: Arc<Mutex<Vec<Arc<PhasedSet>>>>,
}

impl Harness {
    pub(crate) fn new(cfg: Config) -> Self {
        Harness {
            cfg,
            samplers: Arc::new(Mutex::new(Vec::new())),
        }
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// A handle for recording from another thread; create one per recording thread.
    pub fn sampler(&self) -> Sampler {
        let set = Arc::new(PhasedSet::new(self.n_hists()));
        lock(&self.samplers).push(Arc::clone(&set));
        Sampler::new(set)
    }

    fn n_hists(&self) -> usize {
        crate::phased::FIRST_PROBE + self.cfg.probes.len()
    }

    /// Runs the warm-up and the measured runs on the monotonic clock.
    pub fn run<B: Benchmark>(&mut self, bench: B) -> HarnessResults {
        self.run_with_clock(&MonotonicClock, bench)
    }

    /// Runs on another clock, e.g. [`ManualClock`](crate::ManualClock) to test scheduling logic
    /// exactly. The jitter monitor always reads the real clock.
    pub fn run_with_clock<C: Clock, B: Benchmark>(
        &mut self,
        clock: &C,
        mut bench: B,
    ) -> HarnessResults {
        candor_core::set_fine_timer_slack();
        let start_unix_s = candor_core::wall_clock_ns() as f64 / 1e9;
        let mut warnings = Vec::new();
        let jitter = if self.cfg.record_os_jitter {
            match JitterMonitor::start(self.cfg.jitter_threshold_ns) {
                Ok(j) => {
                    // available_parallelism honours the affinity mask (taskset, cgroups).
                    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
                    warnings.extend(crate::jitter::crowding_warning(cpus));
                    Some(j)
                }
                Err(e) => {
                    warnings.push(format!("jitter monitor not started: {e}"));
                    None
                }
            }
        } else {
            None
        };
        // Read on this thread, the one that runs the iterations and whose counters they use.
        let count_allocations = CountingAllocator::is_installed();
        let mut engine = Engine {
            cfg: &self.cfg,
            count_allocations,
            samplers: &self.samplers,
            jitter: jitter.as_ref(),
            set: HistSet::new(self.n_hists()),
            scratch: HistSet::new(self.n_hists()),
            jscratch: HistSet::new(1),
        };

        let mut warmup = None;
        if self.cfg.warmup_iterations > 0 {
            bench.on_phase(Phase::Warmup);
            let w = engine.phase(clock, &mut bench, Phase::Warmup, self.cfg.warmup_iterations);
            if self.cfg.print {
                println!("{}", warmup_text(&w));
            }
            warmup = Some(w);
        }
        if !self.cfg.pause_after_warmup.is_zero() {
            let pause = self.cfg.pause_after_warmup.as_nanos().min(u64::MAX as u128) as u64;
            clock.sleep_until(clock.now_ns().saturating_add(pause));
        }
        let mut runs = Vec::with_capacity(self.cfg.runs as usize);
        for r in 1..=self.cfg.runs {
            bench.on_phase(Phase::Run(r));
            let data = engine.phase(clock, &mut bench, Phase::Run(r), self.cfg.iterations);
            if self.cfg.print {
                println!("{}", run_text(&self.cfg, &data));
            }
            runs.push(data);
        }
        bench.complete();
        drop(jitter);
        let results = HarnessResults::new(self.cfg.clone(), warmup, runs, start_unix_s, warnings);
        if self.cfg.print {
            print!("{}", results.summary_text());
            for w in results.warnings() {
                println!("warning: {w}");
            }
        }
        results
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic elsewhere while holding the lock leaves a plain Vec intact; keep going.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

struct Engine<'a> {
    cfg: &'a Config,
    samplers: &'a Mutex<Vec<Arc<PhasedSet>>>,
    jitter: Option<&'a JitterMonitor>,
    count_allocations: bool,
    set: HistSet,
    scratch: HistSet,
    jscratch: HistSet,
}

impl Engine<'_> {
    fn remote_e2e_total(&self) -> u64 {
        lock(self.samplers)
            .iter()
            .map(|s| s.e2e_count.load(Ordering::Acquire))
            .sum()
    }

    fn collect_samplers(&mut self, into_scratch: bool) {
        let samplers = lock(self.samplers);
        let into = if into_scratch {
            &mut self.scratch
        } else {
            &mut self.set
        };
        for s in samplers.iter() {
            // SAFETY: the harness thread is the only collector of its samplers.
            unsafe { s.collect_into(into) };
        }
    }

    fn phase<C: Clock, B: Benchmark>(
        &mut self,
        clock: &C,
        bench: &mut B,
        phase: Phase,
        iterations: u64,
    ) -> RunData {
        // Whatever other threads and the monitor recorded between phases belongs to no phase.
        self.scratch.reset();
        self.collect_samplers(true);
        let late_samples = self.scratch.hists[E2E].len();
        if let Some(j) = self.jitter {
            j.collect_into(&mut self.jscratch);
            self.jscratch.reset();
        }
        let remote_baseline = self.remote_e2e_total();
        self.set.reset();
        let mut send_lag = new_histogram();
        let mut wait_stalls = new_histogram();
        let stall_threshold = self.cfg.jitter_threshold_ns;
        let forgive = self.cfg.forgive_wait_stalls;
        let (mut forgiven, mut forgiven_ns) = (0u64, 0u64);
        let mut lag_clamped = 0u64;
        let mut allocs = AllocStats::default();
        let alloc_limit = match phase {
            Phase::Run(_) => self.cfg.max_allocations_per_iteration,
            Phase::Warmup => None,
        };

        let paced = phase != Phase::Warmup;
        let correct = self.cfg.account_for_coordinated_omission;
        let interval = self.cfg.interval_ns();
        let start = clock.now_ns();
        // The schedule is `base + (i - base_i) * interval`; only the uncorrected mode moves it.
        let mut base = start;
        let mut base_i = 0u64;
        let mut handed_off = 0u64;
        for i in 0..iterations {
            let (intended, actual) = if paced {
                let mut intended = base + ((i - base_i) as f64 * interval) as u64;
                if !correct {
                    let now = clock.now_ns();
                    if now > intended {
                        // Coordinated omission on purpose: forget the wait, restart the schedule.
                        base = now;
                        base_i = i;
                        intended = now;
                    }
                }
                let wake = clock.wait_until(intended);
                if wake.longest_gap_ns > stall_threshold {
                    record_clamped(&mut wait_stalls, wake.longest_gap_ns);
                    if correct && forgive && wake.at_ns > intended {
                        // JLBH's accounting, on request: the machine's stall is not the
                        // benchmark's; restart the schedule from the wake-up.
                        forgiven += 1;
                        forgiven_ns += wake.at_ns - intended;
                        base = wake.at_ns;
                        base_i = i;
                        intended = wake.at_ns;
                    }
                }
                let actual = wake.at_ns;
                // Uncorrected, as JLBH's: time from the actual start, so a wait that ran over
                // (the thread was descheduled while spinning) is forgotten too.
                (if correct { intended } else { actual }, actual)
            } else {
                let now = clock.now_ns();
                (now, now)
            };
            let mut ctx = Iteration {
                intended,
                actual,
                index: i,
                phase,
                set: &mut self.set,
                clock,
                ended: false,
                handed_off: false,
            };
            if self.count_allocations {
                // Only the measured code is inside the window: the harness's pacing before and
                // recording after are not.
                let before = CountingAllocator::thread_counts();
                bench.run(&mut ctx);
                let used = CountingAllocator::thread_counts().since(before);
                allocs.record(i, used, alloc_limit);
            } else {
                bench.run(&mut ctx);
            }
            let (ended, handed) = (ctx.ended, ctx.handed_off);
            if handed {
                handed_off += 1;
            } else if !ended {
                let end = clock.now_ns();
                self.set.record(E2E, end.saturating_sub(intended));
                self.set.record(SERVICE, end.saturating_sub(actual));
            }
            lag_clamped += record_clamped(&mut send_lag, actual - intended) as u64;
        }
        let end = clock.now_ns();

        let mut missing = 0;
        if handed_off > 0 {
            let deadline = Instant::now() + self.cfg.end_to_end_timeout;
            loop {
                let got = self.remote_e2e_total().saturating_sub(remote_baseline);
                if got >= handed_off {
                    break;
                }
                if Instant::now() >= deadline {
                    missing = handed_off - got;
                    break;
                }
                std::thread::sleep(std::time::Duration::from_micros(50));
            }
        }
        self.collect_samplers(false);
        let mut jitter = None;
        if let Some(j) = self.jitter {
            self.jscratch.reset();
            j.collect_into(&mut self.jscratch);
            jitter = Some(self.jscratch.hists[0].clone());
        }
        RunData {
            phase,
            start_ns: start,
            duration_ns: end - start,
            iterations,
            scheduled_ns: if paced {
                (iterations as f64 * interval) as u64
            } else {
                0
            },
            hists: self.set.hists.clone(),
            send_lag,
            wait_stalls,
            forgiven_stalls: (forgiven, forgiven_ns),
            allocations: self.count_allocations.then_some(allocs),
            jitter,
            clamped: self.set.clamped + lag_clamped,
            misrouted: self.set.misrouted,
            handed_off,
            missing_end_to_end: missing,
            late_samples,
        }
    }
}
