//! The connection pool each load thread opens before the first intended send, and the start
//! gate: every thread opens its connections and reports how that went, the run sets the common
//! start instant once every pool is ready, and only then does the schedule begin. So the measured
//! window starts with a ready pool, and connecting (and TLS handshakes) is timed on its own
//! instead of landing in the first requests' send lag.

use candor_core::hist::record_clamped;
use candor_core::now_ns;
use candor_core::results::PoolResults;
use candor_core::timerfd::TimerFd;
use candor_core::{new_histogram, Histo, Summary};
use crossbeam_channel::{Receiver, Sender};
use mio::{Events, Poll, Token};

/// The start a load thread's books are made with before the real one is known: far ahead, so
/// that what happens while its pool opens is booked as before the start.
pub const UNKNOWN_START_NS: u64 = u64::MAX / 4;

/// A load thread's error when the run ended before setting the start (another thread failed).
pub const NO_START: &str = "the run ended before its start";

/// How long after the last pool is ready the schedule starts: time for every thread to learn
/// the instant and be asleep waiting for it (a wake-up from a channel takes tens of
/// microseconds; a busy machine can take milliseconds, which then shows as send lag).
pub const START_AFTER_POOL_NS: u64 = 10_000_000;

/// Connects (and TLS handshakes) a thread has under way at once while its pool opens: issuing
/// thousands of connects before looking at any would time each one from its call to when the
/// thread got round to it, not to when it was ready, and would send the target a burst of
/// SYNs deeper than many listen backlogs (511 in nginx).
pub const CONNECTS_IN_FLIGHT: usize = 128;

/// While a pool opens, how often a load thread looks whether the run was stopped (a signal is
/// delivered to one thread; the others learn of it from the shared flag).
pub const STOP_CHECK_NS: u64 = 10_000_000;

/// The token of a load thread's timerfd in its poll (connections are tokens `0..n`).
pub const TIMER: Token = Token(usize::MAX - 1);

/// What opening its pool asks of a load thread's driver: every driver opens its pool with
/// [`open`].
pub trait Opener {
    fn connection_count(&self) -> usize;
    /// Whether connection `i` is being opened (connect, TLS handshake, a protocol's greeting).
    fn opening(&self, i: usize) -> bool;
    fn start_connect(&mut self, i: usize, now: u64);
    /// The run was stopped, or the thread met a condition that makes it meaningless.
    fn given_up(&self) -> bool;
    fn handle_event(&mut self, ev: &mio::event::Event);
    /// The driver's poll and timerfd (registered as [`TIMER`]).
    fn waits(&mut self) -> (&mut Poll, &mut TimerFd);
    /// Where the report being made is kept while the pool opens (the connection events that
    /// make a connection ready add to it).
    fn report(&mut self) -> &mut Option<PoolReport>;
    /// How long the pool may take (`--timeout`).
    fn timeout_ns(&self) -> u64;
}

/// Opens every connection of `driver`, at most [`CONNECTS_IN_FLIGHT`] at a time, until all are
/// ready or failed, or `--timeout` has passed, or the run is stopped; connections not ready by
/// then are left to the requests that get them, which wait for them.
pub fn open<D: Opener>(driver: &mut D) -> PoolReport {
    candor_core::set_fine_timer_slack();
    let started = now_ns();
    *driver.report() = Some(PoolReport::new(driver.connection_count()));
    let deadline = started.saturating_add(driver.timeout_ns());
    let mut events = Events::with_capacity(1024);
    let mut next = 0;
    loop {
        let mut in_flight = (0..next).filter(|&i| driver.opening(i)).count();
        while next < driver.connection_count() && in_flight < CONNECTS_IN_FLIGHT {
            driver.start_connect(next, now_ns());
            // A connect refused at once leaves the connection down, not opening.
            in_flight += usize::from(driver.opening(next));
            next += 1;
        }
        if in_flight == 0 || now_ns() >= deadline || driver.given_up() {
            break;
        }
        let (poll, timer) = driver.waits();
        // Woken at least every STOP_CHECK_NS: a signal reaches another thread, and the stop it
        // asks for must not wait for the pool's deadline.
        timer.arm(deadline.min(now_ns() + STOP_CHECK_NS));
        if let Err(e) = poll.poll(&mut events, None) {
            if e.kind() != std::io::ErrorKind::Interrupted {
                break;
            }
        }
        for ev in events.iter() {
            if ev.token() == TIMER {
                driver.waits().1.fired();
                continue;
            }
            driver.handle_event(ev);
        }
    }
    let mut report = driver.report().take().expect("set above");
    report.open_ns = now_ns() - started;
    report
}

/// The earliest instant the schedule can start: just after the last pool was ready at
/// `pool_ready_ns`, and not before `not_before_ns`. (`--start-at`, which shards agree on, may set
/// a later one; a pool not ready by then starts the schedule here, and how late is reported: see
/// `load_run::start_instant`.)
pub fn earliest_start(not_before_ns: u64, pool_ready_ns: u64) -> u64 {
    not_before_ns.max(pool_ready_ns + START_AFTER_POOL_NS)
}

/// How one load thread's pool opened.
#[derive(Debug)]
pub struct PoolReport {
    pub connections: u64,
    /// Connected (and TLS handshake done) before the gate.
    pub ready: u64,
    /// Per ready connection: from the connect call to ready.
    pub connect_time: Histo,
    /// From the first connect call to the last connection ready, or to giving up on the rest.
    pub open_ns: u64,
}

impl PoolReport {
    pub fn new(connections: usize) -> PoolReport {
        PoolReport {
            connections: connections as u64,
            ready: 0,
            connect_time: new_histogram(),
            open_ns: 0,
        }
    }

    /// A connection became ready `ns` after its connect call.
    pub fn ready(&mut self, ns: u64) {
        self.ready += 1;
        record_clamped(&mut self.connect_time, ns);
    }
}

/// The pools of every thread of a run, together.
#[derive(Debug)]
pub struct PoolTally {
    connections: u64,
    ready: u64,
    connect_time: Histo,
    open_ns: u64,
}

impl Default for PoolTally {
    fn default() -> Self {
        PoolTally {
            connections: 0,
            ready: 0,
            connect_time: new_histogram(),
            open_ns: 0,
        }
    }
}

impl PoolTally {
    /// Adds a thread's pool; the threads open theirs at once, so the run's opening time is the
    /// slowest thread's.
    pub fn add(&mut self, r: &PoolReport) {
        self.connections += r.connections;
        self.ready += r.ready;
        self.connect_time
            .add(&r.connect_time)
            .expect("pool histograms share one layout");
        self.open_ns = self.open_ns.max(r.open_ns);
    }

    pub fn connections(&self) -> u64 {
        self.connections
    }

    pub fn results(&self) -> PoolResults {
        PoolResults {
            connections: self.connections,
            ready: self.ready,
            not_ready: self.connections - self.ready,
            open_s: self.open_ns as f64 / 1e9,
            connect_time: Summary::of(&self.connect_time),
        }
    }
}

/// A load thread's side of the gate.
pub struct GateTicket {
    to_run: Sender<PoolReport>,
    start: Receiver<u64>,
}

impl GateTicket {
    /// Hands over the pool's report and blocks until the run sets the start instant; `None` if
    /// the run gave up (it ended before starting).
    pub fn report_and_wait(self, report: PoolReport) -> Option<u64> {
        let GateTicket { to_run, start } = self;
        let _ = to_run.send(report);
        // The run counts reports until every ticket has reported or is gone.
        drop(to_run);
        start.recv().ok()
    }
}

/// The run's side of the gate.
pub struct Gate {
    from_threads: Receiver<PoolReport>,
    starts: Vec<Sender<u64>>,
}

/// A gate for `threads` load threads and one ticket for each.
pub fn gate(threads: usize) -> (Gate, Vec<GateTicket>) {
    let (to_run, from_threads) = crossbeam_channel::bounded(threads);
    let mut starts = Vec::with_capacity(threads);
    let tickets = (0..threads)
        .map(|_| {
            let (tx, rx) = crossbeam_channel::bounded(1);
            starts.push(tx);
            GateTicket {
                to_run: to_run.clone(),
                start: rx,
            }
        })
        .collect();
    (
        Gate {
            from_threads,
            starts,
        },
        tickets,
    )
}

impl Gate {
    /// Waits until every thread has reported its pool or ended without a report (a thread that
    /// failed to start: its error is the run's), and tallies the reports.
    pub fn wait_pools(&self) -> PoolTally {
        let mut tally = PoolTally::default();
        while let Ok(r) = self.from_threads.recv() {
            tally.add(&r);
        }
        tally
    }

    /// Lets every waiting thread begin, with the schedule starting at `start_ns`.
    pub fn start(self, start_ns: u64) {
        for s in self.starts {
            let _ = s.send(start_ns);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_start_follows_the_pool() {
        assert_eq!(earliest_start(0, 5_000), 5_000 + START_AFTER_POOL_NS);
        assert_eq!(earliest_start(90_000_000, 5_000), 90_000_000);
    }

    #[test]
    fn reports_add_up_and_the_slowest_thread_sets_the_opening_time() {
        let mut a = PoolReport::new(3);
        a.ready(1_000);
        a.ready(3_000);
        a.open_ns = 4_000;
        let mut b = PoolReport::new(2);
        b.ready(2_000);
        b.open_ns = 9_000;
        let mut t = PoolTally::default();
        t.add(&a);
        t.add(&b);
        let r = t.results();
        assert_eq!((r.connections, r.ready, r.not_ready), (5, 3, 2));
        assert_eq!(r.open_s, 9e-6);
        assert_eq!(r.connect_time.count, 3);
        // Reported as the highest value equivalent to its bucket (3 significant digits).
        assert_eq!(r.connect_time.max_ns, 3_001);
    }

    #[test]
    fn the_gate_waits_for_every_thread_or_its_end_then_starts_them_all() {
        let (gate, mut tickets) = gate(3);
        // Thread 2 fails before its pool: its ticket goes without a report.
        drop(tickets.pop());
        let handles: Vec<_> = tickets
            .into_iter()
            .enumerate()
            .map(|(i, ticket)| {
                std::thread::spawn(move || {
                    let mut r = PoolReport::new(10);
                    r.ready(100 * (i as u64 + 1));
                    ticket.report_and_wait(r)
                })
            })
            .collect();
        let tally = gate.wait_pools();
        let r = tally.results();
        assert_eq!((r.connections, r.ready), (20, 2));
        gate.start(42);
        for h in handles {
            assert_eq!(h.join().unwrap(), Some(42));
        }
    }

    #[test]
    fn a_gate_dropped_without_a_start_releases_the_threads() {
        let (gate, mut tickets) = gate(1);
        let t = tickets.pop().unwrap();
        let h = std::thread::spawn(move || t.report_and_wait(PoolReport::new(1)));
        let _ = gate.wait_pools();
        drop(gate);
        assert_eq!(h.join().unwrap(), None);
    }
}
