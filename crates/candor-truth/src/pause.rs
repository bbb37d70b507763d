//! Pausing a process under test during a run (SIGSTOP, then SIGCONT: the "^Z test"), timed on
//! the run's own monotonic clock, and the truth that the pause predicts.

use crate::stall::StallTruth;
use crate::table::{render_truth, truth_rows, Drain};
use candor_core::units::{format_ns, parse_duration_ns, UnitError};
use candor_core::{now_ns, precise_sleep_until, Summary};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum PauseError {
    #[error("--pause-pid must be a positive process id, got {0}")]
    NotPositive(i32),
    #[error("--pause-pid {0} is candor itself")]
    Myself(i32),
    #[error("--pause-pid {0}: cannot signal that process: {1}")]
    CannotSignal(i32, std::io::Error),
    #[error("--pause-at: {0}")]
    At(UnitError),
    #[error("--pause-for: {0}")]
    For(UnitError),
    #[error("--pause-for must be longer than zero")]
    ZeroLength,
    #[error("signalling pid {0}: {1}")]
    Signal(i32, String),
    #[error("the pause thread panicked")]
    ThreadPanicked,
}

/// Pause `pid` from `at_ns` after the run's first intended send, for `for_ns`.
#[derive(Debug, Clone, Copy)]
pub struct PauseSpec {
    pub pid: i32,
    pub at_ns: u64,
    pub for_ns: u64,
}

impl PauseSpec {
    /// Validates the flags: a live process that is not candor itself, a positive length.
    pub fn from_flags(pid: i32, at: &str, for_: &str) -> Result<PauseSpec, PauseError> {
        if pid <= 0 {
            // kill() with 0 or a negative pid signals whole process groups: never do that.
            return Err(PauseError::NotPositive(pid));
        }
        if pid as u32 == std::process::id() {
            return Err(PauseError::Myself(pid));
        }
        // SAFETY: signal 0 only checks that the process exists and may be signalled.
        if unsafe { libc::kill(pid, 0) } != 0 {
            return Err(PauseError::CannotSignal(
                pid,
                std::io::Error::last_os_error(),
            ));
        }
        let at_ns = parse_duration_ns(at).map_err(PauseError::At)?;
        let for_ns = parse_duration_ns(for_).map_err(PauseError::For)?;
        if for_ns == 0 {
            return Err(PauseError::ZeroLength);
        }
        Ok(PauseSpec { pid, at_ns, for_ns })
    }
}

/// `[stop, resume)` of the pause on the monotonic clock, if it happened.
pub type PauseWindow = Option<(u64, u64)>;

/// The thread that pauses and resumes the process; [`Pauser::finish`] always resumes it.
pub struct Pauser {
    spec: PauseSpec,
    cancel: Mutex<Option<Sender<()>>>,
    thread: Mutex<Option<JoinHandle<Result<PauseWindow, PauseError>>>>,
}

/// Sleeps until `target` unless cancelled (then returns false at once).
fn sleep_until(target: u64, cancel: &Receiver<()>) -> bool {
    // Coarse, cancellable waiting first; the last 2 ms on the precise pacer.
    loop {
        let now = now_ns();
        if now + 2_000_000 >= target {
            break;
        }
        let wait = std::time::Duration::from_nanos(target - now - 2_000_000);
        match cancel.recv_timeout(wait) {
            Err(RecvTimeoutError::Timeout) => continue,
            _ => return false,
        }
    }
    precise_sleep_until(target);
    true
}

fn signal(pid: i32, sig: libc::c_int) -> Result<(), PauseError> {
    // SAFETY: plain kill(2) on a validated positive pid.
    if unsafe { libc::kill(pid, sig) } != 0 {
        return Err(PauseError::Signal(
            pid,
            std::io::Error::last_os_error().to_string(),
        ));
    }
    Ok(())
}

/// Best effort: real-time priority for the pause thread, which sleeps nearly all the time but
/// must wake on time on a busy machine (the truth uses the instants it records, so lateness only
/// shifts the window; this keeps it close to what was asked). Without the privilege it stays
/// an ordinary thread.
fn raise_priority() {
    let param = libc::sched_param { sched_priority: 1 };
    // SAFETY: sets the scheduling policy of the calling thread only.
    unsafe {
        libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &param);
    }
}

impl Pauser {
    pub fn new(spec: PauseSpec) -> Arc<Pauser> {
        Arc::new(Pauser {
            spec,
            cancel: Mutex::new(None),
            thread: Mutex::new(None),
        })
    }

    pub fn spec(&self) -> PauseSpec {
        self.spec
    }

    /// The run's start hook: starts the pausing thread relative to the run's first intended send.
    pub fn hook(self: &Arc<Self>) -> Arc<dyn Fn(u64) + Send + Sync> {
        let me = self.clone();
        Arc::new(move |start_ns| {
            let (tx, rx) = channel::<()>();
            let spec = me.spec;
            let handle = std::thread::Builder::new()
                .name("candor-pause".into())
                .spawn(move || {
                    raise_priority();
                    if !sleep_until(start_ns + spec.at_ns, &rx) {
                        return Ok(None);
                    }
                    signal(spec.pid, libc::SIGSTOP)?;
                    let stopped = now_ns();
                    // Cancelled or not, the process is resumed; early only on cancel.
                    let _ = sleep_until(stopped + spec.for_ns, &rx);
                    signal(spec.pid, libc::SIGCONT)?;
                    Ok(Some((stopped, now_ns())))
                });
            match handle {
                Ok(h) => {
                    *me.cancel.lock().unwrap_or_else(|p| p.into_inner()) = Some(tx);
                    *me.thread.lock().unwrap_or_else(|p| p.into_inner()) = Some(h);
                }
                Err(e) => eprintln!("candor: warning: cannot start the pause thread: {e}"),
            }
        })
    }

    /// Ends the pause (resuming the process if it is still stopped) and returns the actual
    /// `[stop, resume)` window on the monotonic clock, if the pause happened.
    pub fn finish(&self) -> Result<PauseWindow, PauseError> {
        if let Some(tx) = self.cancel.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = tx.send(());
        }
        let handle = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take();
        match handle {
            None => Ok(None),
            Some(h) => h.join().unwrap_or_else(|_| {
                // Never leave the target stopped.
                let _ = signal(self.spec.pid, libc::SIGCONT);
                Err(PauseError::ThreadPanicked)
            }),
        }
    }
}

/// The truth of one pause `[stop, cont)` over the measured window `[from, to)` of intended
/// sends, on top of the normal service time `base_ns`.
pub fn pause_truth(window: (u64, u64), from_ns: u64, to_ns: u64, base_ns: u64) -> StallTruth {
    let mut truth = StallTruth::periodic(0, 1, 0, from_ns, to_ns, base_ns);
    truth.stalls = vec![window];
    truth
}

/// What `candor run --expect` prints after the report: the pause's predicted distribution next
/// to the measured response time, without a verdict (a live target is not a calibrated one).
pub fn expectation(truth: &StallTruth, response_time: &Summary, drain: &Drain) -> String {
    let (stop, cont) = truth.stalls.first().copied().unwrap_or_default();
    let mut text = format!(
        "\nExpected for a {} pause ({:.1}% of the measured window's intended sends fall in it; each waits\n\
         until the pause ends, uniform on (0, {}]) versus measured response time:\n",
        format_ns((cont - stop) as f64),
        100.0 * truth.stalled_fraction(),
        format_ns((cont - stop) as f64)
    );
    text.push_str(&render_truth(
        &truth_rows(truth, response_time, drain),
        false,
    ));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pause_flags_are_validated() {
        assert!(PauseSpec::from_flags(0, "1s", "1s").is_err());
        assert!(PauseSpec::from_flags(-5, "1s", "1s").is_err());
        let me = std::process::id() as i32;
        assert!(PauseSpec::from_flags(me, "1s", "1s").is_err());
        // pid 1 exists on Linux; a zero length or a bad duration is refused.
        assert!(PauseSpec::from_flags(1, "1s", "0s").is_err());
        assert!(PauseSpec::from_flags(1, "soon", "1s").is_err());
    }

    #[test]
    fn the_expectation_names_the_pause_and_its_share() {
        const S: u64 = 1_000_000_000;
        // A 1 s pause in a 10 s window: 10% of intended sends wait for it.
        let truth = pause_truth((2 * S, 3 * S), 0, 10 * S, 0);
        let mut h = candor_core::new_histogram();
        h.record(1_000).unwrap();
        let text = expectation(&truth, &Summary::of(&h), &Drain::NONE);
        assert!(
            text.contains("Expected for a 1.000s pause (10.0%"),
            "{text}"
        );
        assert!(text.contains("p99.99") && !text.contains("pass"), "{text}");
    }
}
