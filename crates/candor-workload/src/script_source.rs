//! A wrk Lua script as a load thread's request source and response judge (`candor run -s`):
//! [`ScriptRun`] is what the run's threads share (each thread's Lua state, waiting to be taken,
//! the request names the script gave, the first script error, the time spent in Lua), a
//! [`ScriptSource`] asks the thread's `request()` what each schedule entry sends, and a
//! [`ScriptJudge`] in each connection's response observer hands `response(status, headers,
//! body)` what came back.
//!
//! Pipelined requests: `request()` may return several requests back to back, as wrk's pipelining
//! scripts do. Each is one request of candor's books (one schedule entry, one response, one
//! latency, as wrk counts each response), sent by the entries that follow, so `request()` is
//! called again only once they are all out; with `--pipeline N` they share a connection as any
//! pipelined requests do.
//!
//! The thread's Lua state is behind a mutex only because the core (the source) and the
//! connections (the judges) of one thread both hold it; no other thread ever takes it, so the
//! lock is never contended. Nothing here allocates per request once the buffers have grown to
//! the script's largest request; Lua itself allocates what the script makes.

use crate::source::{Next, RequestSource};
use candor_core::early_end::EarlyEnd;
use candor_core::results::StopReason;
use candor_script::{NameId, ResponseVerdict, ThreadScript};
use std::fmt;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Most `by_request` rows a script may name with `wrk.name` (the books are fixed before the
/// run, and each row's histograms are a few MB a thread); further names are counted under the
/// last row, [`OTHER_NAMES`].
pub const MAX_NAMES: usize = 32;

/// The row of requests sent without `wrk.name` (index 0).
pub const UNNAMED: &str = "(unnamed)";

/// The row of names beyond [`MAX_NAMES`].
pub const OTHER_NAMES: &str = "(other names)";

/// Why a script stopped the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScriptStop {
    /// `request()`, `response()` or `delay()` raised an error, or returned what cannot be sent;
    /// the message names the function and, for a Lua error, the file and line.
    Error(String),
    /// The script called `thread:stop()`.
    ThreadStop,
    /// The script called `os.exit(code)`: the run stops as for `thread:stop()`; the message
    /// says where.
    Exit { code: i32, message: String },
}

impl ScriptStop {
    /// The stop a script's error asks for.
    fn of(e: &candor_script::ScriptError) -> ScriptStop {
        match e {
            candor_script::ScriptError::Exit { code, .. } => ScriptStop::Exit {
                code: *code,
                message: e.to_string(),
            },
            _ => ScriptStop::Error(e.to_string()),
        }
    }
}

/// What the load threads of a script run share.
pub struct ScriptRun {
    /// One state per load thread (`setup` and `init` already run), taken by the threads.
    waiting: Mutex<Vec<ThreadScript>>,
    /// The `by_request` names in the order the script first gave them; index 0 is [`UNNAMED`].
    names: Mutex<Vec<String>>,
    /// The first reason the script stopped the run.
    stop: Mutex<Option<ScriptStop>>,
    stopped: AtomicBool,
    /// Where the run's early end is asked for (set when the run starts).
    end: Mutex<Option<Arc<EarlyEnd>>>,
    /// Whether the script defines `response()`: only then are headers and bodies handed over.
    judges: bool,
    /// Rows of per-name books each thread keeps: [`MAX_NAMES`] when the script may name its
    /// requests, else none (they cost memory and time at every interval).
    name_rows: usize,
    /// Whether the script defines `request()` (without it the request built after `init()` is
    /// sent every time, and no call is made).
    makes_requests: bool,
    /// Nanoseconds spent in `request()`, `response()` and `delay()`, and the calls, over every
    /// thread.
    lua_ns: AtomicU64,
    request_calls: AtomicU64,
    response_calls: AtomicU64,
    delay_calls: AtomicU64,
    /// `delay()` calls that returned a negative number or NaN (taken as no wait), and the
    /// first such value.
    odd_delays: AtomicU64,
    first_odd_delay: Mutex<Option<f64>>,
    /// `delay()` calls that asked for more than the whole run (its window and drain), held
    /// for the run's length instead, and the first such value (milliseconds, as returned).
    long_delays: AtomicU64,
    first_long_delay: Mutex<Option<f64>>,
    /// The run's length, window and drain (ns; 0 until it starts).
    span_ns: AtomicU64,
    /// The longest single `request()` call, in nanoseconds.
    longest_request_ns: AtomicU64,
    /// Monotonic instant at which the run's window and drain are over (0 until it starts): a
    /// script still running then is interrupted.
    deadline_ns: AtomicU64,
}

impl fmt::Debug for ScriptRun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScriptRun")
            .field("judges", &self.judges)
            .field("stop", &self.stop_reason())
            .finish_non_exhaustive()
    }
}

/// Time spent in the script during a run.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LuaTime {
    /// Nanoseconds in `request()`, `response()` and `delay()`, every thread together.
    pub total_ns: u64,
    /// Whether the script defines `request()` (otherwise `request_calls` is 0: the request
    /// built after `init()` was sent every time).
    pub makes_requests: bool,
    pub request_calls: u64,
    pub response_calls: u64,
    pub delay_calls: u64,
    pub longest_request_ns: u64,
    /// `delay()` calls that returned a negative number or NaN, taken as no wait, and the first
    /// value of that kind.
    pub odd_delays: u64,
    pub first_odd_delay: Option<f64>,
    /// `delay()` calls that asked to wait longer than the whole run (its window and drain,
    /// `run_span_ns`), each held its connection for that long instead (to the run's end, as
    /// wrk's wait does), and the first value of that kind.
    pub long_delays: u64,
    pub first_long_delay: Option<f64>,
    pub run_span_ns: u64,
}

impl ScriptRun {
    /// The run of `threads`, one state per load thread, in the order the threads take them;
    /// `named` when the script may set `wrk.name` (its text mentions `name`): only then are
    /// per-name books kept.
    pub fn new(threads: Vec<ThreadScript>, named: bool) -> ScriptRun {
        let judges = threads.iter().any(ThreadScript::wants_response);
        let makes_requests = threads.iter().any(ThreadScript::is_dynamic);
        let mut names = Vec::with_capacity(MAX_NAMES);
        names.push(UNNAMED.to_string());
        ScriptRun {
            waiting: Mutex::new(threads.into_iter().rev().collect()),
            names: Mutex::new(names),
            stop: Mutex::new(None),
            stopped: AtomicBool::new(false),
            end: Mutex::new(None),
            judges,
            name_rows: if named { MAX_NAMES } else { 0 },
            makes_requests,
            lua_ns: AtomicU64::new(0),
            request_calls: AtomicU64::new(0),
            response_calls: AtomicU64::new(0),
            delay_calls: AtomicU64::new(0),
            odd_delays: AtomicU64::new(0),
            first_odd_delay: Mutex::new(None),
            long_delays: AtomicU64::new(0),
            first_long_delay: Mutex::new(None),
            span_ns: AtomicU64::new(0),
            longest_request_ns: AtomicU64::new(0),
            deadline_ns: AtomicU64::new(0),
        }
    }

    /// Sets when the run's window and drain end (monotonic ns), once the run has started at
    /// `start_ns`.
    pub fn set_deadline(&self, start_ns: u64, at_ns: u64) {
        self.span_ns
            .store(at_ns.saturating_sub(start_ns), Ordering::Relaxed);
        self.deadline_ns.store(at_ns, Ordering::Relaxed);
    }

    /// When the run's window and drain end, once the run has started.
    pub fn deadline_ns(&self) -> Option<u64> {
        match self.deadline_ns.load(Ordering::Relaxed) {
            0 => None,
            at => Some(at),
        }
    }

    /// Where a script's stop asks the run to end (the run's [`EarlyEnd`]).
    pub fn set_end(&self, end: Arc<EarlyEnd>) {
        *lock(&self.end) = Some(end);
    }

    /// Why the script stopped the run, if it did.
    pub fn stop_reason(&self) -> Option<ScriptStop> {
        lock(&self.stop).clone()
    }

    /// The `by_request` names: index 0 is [`UNNAMED`], the rest as the script gave them.
    pub fn names(&self) -> Vec<String> {
        lock(&self.names).clone()
    }

    /// How many rows of per-name books each load thread keeps.
    pub fn name_rows(&self) -> usize {
        self.name_rows
    }

    /// Whether any request was named (only then are `by_request` rows reported).
    pub fn named(&self) -> bool {
        lock(&self.names).len() > 1
    }

    /// The time the script took.
    pub fn lua_time(&self) -> LuaTime {
        LuaTime {
            total_ns: self.lua_ns.load(Ordering::Relaxed),
            makes_requests: self.makes_requests,
            request_calls: self.request_calls.load(Ordering::Relaxed),
            response_calls: self.response_calls.load(Ordering::Relaxed),
            delay_calls: self.delay_calls.load(Ordering::Relaxed),
            longest_request_ns: self.longest_request_ns.load(Ordering::Relaxed),
            odd_delays: self.odd_delays.load(Ordering::Relaxed),
            first_odd_delay: *lock(&self.first_odd_delay),
            long_delays: self.long_delays.load(Ordering::Relaxed),
            first_long_delay: *lock(&self.first_long_delay),
            run_span_ns: self.span_ns.load(Ordering::Relaxed),
        }
    }

    /// Records the first stop and ends the run's schedule at once, as an abort does: nothing
    /// more is sent, what is out is counted as unfinished, and the results are written.
    fn halt(&self, why: ScriptStop) {
        {
            let mut stop = lock(&self.stop);
            if stop.is_none() {
                *stop = Some(why);
            }
        }
        if !self.stopped.swap(true, Ordering::AcqRel) {
            if let Some(end) = lock(&self.end).as_ref() {
                end.request(StopReason::Abort);
            }
        }
    }

    /// The global row of a name the script gave, registering it on first sight.
    fn register(&self, name: &str) -> u32 {
        let mut names = lock(&self.names);
        if let Some(i) = names.iter().position(|n| n == name) {
            return i as u32;
        }
        if names.len() + 1 >= MAX_NAMES {
            if names.len() + 1 == MAX_NAMES {
                names.push(OTHER_NAMES.to_string());
            }
            return (MAX_NAMES - 1) as u32;
        }
        names.push(name.to_string());
        (names.len() - 1) as u32
    }

    fn add_lua(&self, ns: u64) {
        self.lua_ns.fetch_add(ns, Ordering::Relaxed);
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panicking thread cannot leave these values half-written: take them as they are.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A load thread's script: its state, shared by the thread's source and its connections' judges.
type Shared = Arc<Mutex<ThreadScript>>;

/// What the time left of an offer must hold beyond twice a `request()` call's time for that
/// call to be made ahead: the call's spread about its estimate. The offer already leaves the
/// thread a sleep worth taking before its next send (the engine core's `prepare`).
/// At 20,000/s the offers are ~25 µs; a margin of 20 µs there allowed a batch of one or two
/// calls, each finding the state cold (in-Lua time per request 2.8 µs against 2.4 with 5 µs,
/// docs/benchmarks.md).
const PREPARE_MARGIN_NS: u64 = 5_000;

/// Most `request()` calls made ahead of their sends at once. Calls made back to back find the
/// Lua state (its interpreter, strings, heap) in the CPU's caches; one call after each sleep of
/// an open loop finds it cold, and evicts the engine's own data in turn (a call in a loop of
/// calls takes ~1 µs, one after each sleep 3-5 µs, docs/benchmarks.md).
pub const MAX_AHEAD: usize = 16;

/// The running estimate of one `request()` call's time after a call that took `spent_ns`: a
/// rise toward a slower call halfway at once, a fall an eighth of the way, and no call counted
/// as more than four times the estimate. A lone slow call (the thread preempted, a collection)
/// then does not keep the next hundred calls from being made ahead, while a script that turned
/// slow is followed within a few calls (a factor of 1,000 in a dozen).
fn next_call_estimate(estimate_ns: u64, spent_ns: u64) -> u64 {
    if estimate_ns == 0 {
        return spent_ns;
    }
    let counted = spent_ns.min(estimate_ns.saturating_mul(4));
    if counted > estimate_ns {
        estimate_ns + (counted - estimate_ns) / 2
    } else {
        estimate_ns - (estimate_ns - counted) / 8
    }
}

/// A `request()` call made ahead of its send: its bytes, where its requests end, its name's
/// row or its error, and whether it called `thread:stop()`.
struct Ahead {
    bytes: Vec<u8>,
    ends: Vec<usize>,
    outcome: Result<u32, candor_script::ScriptError>,
    stop: bool,
}

/// The request source of a script run's load thread (see the module's notes on pipelining).
pub struct ScriptSource {
    run: Arc<ScriptRun>,
    script: Shared,
    /// What the last `request()` returned, its requests' ends, and how many are sent.
    pending: Vec<u8>,
    ends: Vec<usize>,
    next_pending: usize,
    pending_row: u32,
    /// Calls made ahead in the time before their sends (see [`RequestSource::prepare`]), in
    /// call order: a ring of [`MAX_AHEAD`] places from `ahead_head`, `ahead_len` of them
    /// filled, their buffers swapped with `pending` as they are taken. The place at
    /// `ahead_head` of an empty ring is where a call made at its send goes.
    ahead: Vec<Ahead>,
    ahead_head: usize,
    ahead_len: usize,
    /// The requests the calls in the ring hold.
    ahead_requests: usize,
    /// Set when the ring ran empty: calls are then made ahead until it is full (or time or
    /// the entries due within the horizon run out), and not again until it is empty, so that
    /// they come in batches.
    filling: bool,
    /// A running estimate of one `request()` call's time (ns): a call is made ahead only when
    /// the send it would precede is well beyond it.
    call_ns: u64,
    /// Whether a call was made at its send yet: the first never is made ahead (its time is
    /// not known; a first call that never returns is then its entry's, as without this).
    timed: bool,
    /// The bytes each slot carries, and whether they are a HEAD request.
    slots: Vec<Vec<u8>>,
    heads: Vec<bool>,
    /// This state's names ([`NameId`] order) as rows of the run's books.
    rows: Vec<u32>,
    /// Whether the script defines `delay()`.
    has_delay: bool,
    /// Where this thread's connections go when the script set `thread.addr`.
    redirect: Option<SocketAddr>,
    /// Whether the last [`RequestSource::next`] made nothing because a stop ended `request()`.
    unmade_by_stop: bool,
}

impl ScriptSource {
    /// Takes one of the run's thread states for a load thread with `slots` slots; `None` when
    /// every state is taken (no more load threads than states are ever started).
    pub fn take(run: &Arc<ScriptRun>, slots: usize) -> Option<ScriptSource> {
        let script = lock(&run.waiting).pop()?;
        let has_delay = script.has_delay();
        let redirect = script.redirect();
        Some(ScriptSource {
            has_delay,
            redirect,
            run: Arc::clone(run),
            script: Arc::new(Mutex::new(script)),
            pending: Vec::with_capacity(1024),
            ends: Vec::with_capacity(16),
            next_pending: 0,
            pending_row: 0,
            ahead: (0..MAX_AHEAD)
                .map(|_| Ahead {
                    bytes: Vec::with_capacity(1024),
                    ends: Vec::with_capacity(16),
                    outcome: Ok(0),
                    stop: false,
                })
                .collect(),
            ahead_head: 0,
            ahead_len: 0,
            ahead_requests: 0,
            filling: false,
            call_ns: 0,
            timed: false,
            slots: (0..slots).map(|_| Vec::with_capacity(1024)).collect(),
            heads: vec![false; slots],
            rows: Vec::with_capacity(MAX_NAMES),
            unmade_by_stop: false,
        })
    }

    /// The address this thread's connections go to when the script set `thread.addr` (in
    /// `setup` or `init`); `None`: the run's target.
    pub fn redirect(&self) -> Option<SocketAddr> {
        self.redirect
    }

    /// A judge of the responses of one of this thread's connections, when the script defines
    /// `response()`.
    pub fn judge(&self) -> Option<ScriptJudge> {
        self.run.judges.then(|| ScriptJudge {
            run: Arc::clone(&self.run),
            script: Arc::clone(&self.script),
            status: 0,
            head: Vec::new(),
            fields: Vec::new(),
            body: Vec::new(),
        })
    }

    /// Calls `request()` into the ring's place `at`: what came of the call, booked (time,
    /// calls) but not yet acted on. Returns the call's time in Lua.
    fn call(&mut self, at: usize) -> u64 {
        let place = &mut self.ahead[at];
        place.bytes.clear();
        place.ends.clear();
        // Its own handle for the call (an atomic increment), so that self stays free.
        let shared = Arc::clone(&self.script);
        let mut script = lock(&shared);
        let made = script.next_request(&mut place.bytes);
        let spent = script.last_lua_ns();
        self.run.add_lua(spent);
        if script.is_dynamic() {
            // Without request() nothing was called: the request built after init() was copied.
            self.run.request_calls.fetch_add(1, Ordering::Relaxed);
        }
        self.run
            .longest_request_ns
            .fetch_max(spent, Ordering::Relaxed);
        self.call_ns = next_call_estimate(self.call_ns, spent);
        let stop = script.stop_requested();
        let outcome = match made {
            Ok(info) => {
                self.ahead[at].ends.extend_from_slice(script.request_ends());
                Ok(match info.name {
                    Some(id) => self.row(&script, id),
                    None => 0,
                })
            }
            Err(e) => Err(e),
        };
        let place = &mut self.ahead[at];
        place.outcome = outcome;
        place.stop = stop;
        spent
    }

    /// Takes the next `request()` call's requests (made ahead, or made now) as the current
    /// ones; false (the run stopping) when the call failed. A stop or an error of a call made
    /// ahead is acted on only now, when its requests are due, as if it had been made now.
    fn refill(&mut self) -> bool {
        let at = self.ahead_head;
        if self.ahead_len > 0 {
            self.ahead_head = (at + 1) % MAX_AHEAD;
            self.ahead_len -= 1;
            self.ahead_requests -= self.ahead[at].ends.len();
        } else {
            self.timed = true;
            let _ = self.call(at);
        }
        let place = &mut self.ahead[at];
        std::mem::swap(&mut self.pending, &mut place.bytes);
        std::mem::swap(&mut self.ends, &mut place.ends);
        let outcome = std::mem::replace(&mut place.outcome, Ok(0));
        let stop = place.stop;
        self.next_pending = 0;
        let row = match outcome {
            Ok(row) => row,
            Err(e) => {
                self.ends.clear();
                // A stop (a signal, the run's end, os.exit in this state or another) ended the
                // call, not a fault of the request: its entry was never made, so it ends
                // unsent (see RequestSource::unmade_by_stop), not failed. An interrupt is the
                // signal's stop, not the script's.
                self.unmade_by_stop = e.is_stop();
                if !matches!(e, candor_script::ScriptError::Interrupted { .. }) {
                    self.run.halt(ScriptStop::of(&e));
                }
                return false;
            }
        };
        self.pending_row = row;
        if stop {
            self.run.halt(ScriptStop::ThreadStop);
        }
        true
    }

    /// The row of the run's books for this state's name `id` (a state numbers its names from
    /// 0 as it first sees them, so a new one is always the next).
    fn row(&mut self, script: &ThreadScript, id: NameId) -> u32 {
        let i = id.index();
        if i >= self.rows.len() {
            self.rows.push(self.run.register(script.name(id)));
        }
        self.rows[i.min(self.rows.len() - 1)]
    }
}

impl RequestSource for ScriptSource {
    fn next(&mut self, slot: usize, _seq: u64, _taken: Option<(&[u8], bool)>) -> Next {
        self.unmade_by_stop = false;
        if self.next_pending >= self.ends.len() && !self.refill() {
            return Next {
                request: 0,
                sendable: false,
            };
        }
        let start = match self.next_pending {
            0 => 0,
            i => self.ends[i - 1],
        };
        let end = self.ends[self.next_pending];
        self.next_pending += 1;
        let bytes = &self.pending[start..end];
        self.heads[slot] = bytes.starts_with(b"HEAD ");
        let buf = &mut self.slots[slot];
        buf.clear();
        buf.extend_from_slice(bytes);
        Next {
            request: self.pending_row,
            sendable: true,
        }
    }

    fn made(&self, slot: usize) -> Option<(&[u8], bool)> {
        Some((&self.slots[slot], self.heads[slot]))
    }

    fn unmade_by_stop(&self) -> bool {
        self.unmade_by_stop
    }

    /// Once the script stopped the run (an error, `thread:stop()`), in this thread or another.
    fn halted(&self) -> bool {
        self.run.stopped.load(Ordering::Relaxed)
    }

    /// Makes `request()` calls ahead, back to back, while the time left of the offer is at least
    /// twice a call's time (plus `PREPARE_MARGIN_NS`) and the script has no `response()`: then
    /// nothing the run learns before the send can change what `request()` returns (with
    /// `response()` it is called at the send, so that it sees every response that came
    /// before). The send at its intended instant is then a copy. Calls come in batches of up to
    /// [`MAX_AHEAD`] (see there), each only for an entry due within the driver's horizon
    /// (`due`): never for an entry that does not exist.
    fn prepare(&mut self, offered_ns: u64, due: &mut dyn FnMut(usize) -> bool) -> bool {
        if self.run.judges || !self.timed || self.run.stopped.load(Ordering::Relaxed) {
            return false;
        }
        // The calls of one offer are made back to back, each paid from what is left of it.
        let mut left_ns = offered_ns;
        let mut made = false;
        // The first call of an offer is judged by the running estimate (mostly calls after a
        // sleep, which find the state cold); the next ones by the call before them.
        let mut next_ns = self.call_ns;
        while left_ns >= 2 * next_ns + PREPARE_MARGIN_NS {
            if self.ahead_len == 0 {
                self.filling = true;
            } else {
                // After a call that failed or stopped the thread, none: the run ends at its send.
                let last = &self.ahead[(self.ahead_head + self.ahead_len - 1) % MAX_AHEAD];
                if last.outcome.is_err() || last.stop {
                    break;
                }
            }
            let waiting =
                self.ends.len() - self.next_pending.min(self.ends.len()) + self.ahead_requests;
            if !self.filling || self.ahead_len == MAX_AHEAD || !due(waiting) {
                self.filling = false;
                break;
            }
            let at = (self.ahead_head + self.ahead_len) % MAX_AHEAD;
            let spent = self.call(at);
            self.ahead_len += 1;
            self.ahead_requests += self.ahead[at].ends.len();
            left_ns = left_ns.saturating_sub(spent);
            next_ns = spent;
            made = true;
        }
        made
    }

    /// `delay()`'s milliseconds (closed loop only: an open loop refuses a script with delay()).
    fn hold_ns(&mut self) -> u64 {
        if !self.has_delay {
            return 0;
        }
        let mut script = lock(&self.script);
        let asked = script.delay_ms();
        self.run.add_lua(script.last_lua_ns());
        self.run.delay_calls.fetch_add(1, Ordering::Relaxed);
        if let Some(odd) = script.odd_delay() {
            if self.run.odd_delays.fetch_add(1, Ordering::Relaxed) == 0 {
                *lock(&self.run.first_odd_delay) = Some(odd);
            }
        }
        let returned = script.returned_delay();
        drop(script);
        match asked {
            Ok(ms) => {
                let ns = ms.unwrap_or(0).saturating_mul(1_000_000);
                // A wait longer than the whole run (`math.huge` is +inf) could never end
                // within it: the connection is held to the run's end, as wrk's wait holds it,
                // bounded by the run's length instead of ~u64::MAX ns, and said once.
                let span = self.run.span_ns.load(Ordering::Relaxed);
                if span > 0 && ns > span {
                    if self.run.long_delays.fetch_add(1, Ordering::Relaxed) == 0 {
                        *lock(&self.run.first_long_delay) = Some(returned);
                    }
                    span
                } else {
                    ns
                }
            }
            Err(candor_script::ScriptError::Interrupted { .. }) => 0,
            Err(e) => {
                self.run.halt(ScriptStop::of(&e));
                0
            }
        }
    }
}

/// One connection's side of `response(status, headers, body)`: the response's head and body
/// gathered as they arrive (buffers reused from one response to the next), then judged.
pub struct ScriptJudge {
    run: Arc<ScriptRun>,
    script: Shared,
    status: u16,
    /// Header names and values back to back, and where each pair lies in it.
    head: Vec<u8>,
    fields: Vec<(usize, usize, usize)>,
    body: Vec<u8>,
}

impl Clone for ScriptJudge {
    fn clone(&self) -> Self {
        ScriptJudge {
            run: Arc::clone(&self.run),
            script: Arc::clone(&self.script),
            status: 0,
            head: Vec::new(),
            fields: Vec::new(),
            body: Vec::new(),
        }
    }
}

impl fmt::Debug for ScriptJudge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScriptJudge")
            .field("status", &self.status)
            .finish_non_exhaustive()
    }
}

impl ScriptJudge {
    /// A new response's head arrived with `status` (its headers are gathered after
    /// [`Self::clear_head`], before or after this: HTTP/2 decodes them with the status).
    pub fn begin(&mut self, status: u16) {
        self.status = status;
        self.body.clear();
    }

    /// The headers of a new response follow.
    pub fn clear_head(&mut self) {
        self.head.clear();
        self.fields.clear();
    }

    /// One header of the current response.
    pub fn header(&mut self, name: &[u8], value: &[u8]) {
        let at = self.head.len();
        self.head.extend_from_slice(name);
        let mid = self.head.len();
        self.head.extend_from_slice(value);
        self.fields.push((at, mid, self.head.len()));
    }

    /// The next bytes of the current response's body.
    pub fn body(&mut self, bytes: &[u8]) {
        self.body.extend_from_slice(bytes);
    }

    /// The response is complete: `response()` judges it. `Some(reason)` fails it (class
    /// `check`); a script error fails it too, with the error as its reason, and stops the run.
    /// A stop that ended the call (`os.exit` in this state or another, the run's end, a signal)
    /// is no verdict on the response: it stands as it came, and the run stops (a signal's own
    /// stop is the signal's).
    pub fn end(&mut self) -> Option<String> {
        let ScriptJudge {
            run,
            script,
            status,
            head,
            fields,
            body,
        } = self;
        let mut script = lock(script);
        let headers = fields.iter().map(|&(a, m, e)| (&head[a..m], &head[m..e]));
        let verdict = script.response(*status, headers, body);
        run.add_lua(script.last_lua_ns());
        run.response_calls.fetch_add(1, Ordering::Relaxed);
        let stop = script.stop_requested();
        drop(script);
        if stop {
            run.halt(ScriptStop::ThreadStop);
        }
        match verdict {
            Ok(ResponseVerdict::Ok) => None,
            Ok(ResponseVerdict::Fail(reason)) => Some(reason),
            Err(candor_script::ScriptError::Interrupted { .. }) => None,
            Err(e) if e.is_stop() => {
                run.halt(ScriptStop::of(&e));
                None
            }
            Err(e) => {
                let message = e.to_string();
                run.halt(ScriptStop::of(&e));
                Some(message)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::next_call_estimate;

    #[test]
    fn one_slow_call_moves_the_estimate_a_little_and_a_slow_script_soon_shows() {
        // The first call sets it.
        assert_eq!(next_call_estimate(0, 50_000), 50_000);
        // A 4 ms outlier among 3 µs calls counts as 12 µs: halfway there, 7.5 µs.
        assert_eq!(next_call_estimate(3_000, 4_000_000), 7_500);
        // Then back an eighth of the way per 3 µs call.
        assert_eq!(next_call_estimate(7_500, 3_000), 6_938);
        // A script that turned 1,000 times slower is followed within a dozen calls.
        let mut estimate = 3_000;
        let calls = (1..)
            .find(|_| {
                estimate = next_call_estimate(estimate, 3_000_000);
                estimate >= 2_900_000
            })
            .unwrap();
        assert!(calls <= 12, "{calls} calls");
        // A steady script's estimate is its time.
        assert_eq!(next_call_estimate(3_000, 3_000), 3_000);
    }
}
