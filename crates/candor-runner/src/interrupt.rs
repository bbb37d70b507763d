//! SIGINT and SIGTERM for the whole process: the first one asks every run (and every later step
//! of a sweep or capacity search) to stop and write what it has; a second one exits at once.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// The process-wide stop request.
pub struct Interrupt {
    /// Set by the first SIGINT or SIGTERM; the load engines poll it.
    pub stop: Arc<AtomicBool>,
    /// The number of the signal that set `stop` (0: none yet).
    signal: Arc<AtomicUsize>,
}

static INTERRUPT: OnceLock<Interrupt> = OnceLock::new();

/// Installs the handlers once and returns the shared stop request.
pub fn install() -> Result<&'static Interrupt, std::io::Error> {
    if let Some(i) = INTERRUPT.get() {
        return Ok(i);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let signal = Arc::new(AtomicUsize::new(0));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // Registered first so that it runs before the flag is set: it exits only on a second
        // signal, when the first has already asked for a stop that has not come quickly enough.
        signal_hook::flag::register_conditional_shutdown(sig, exit_code(sig), stop.clone())?;
        signal_hook::flag::register_usize(sig, signal.clone(), sig as usize)?;
        signal_hook::flag::register(sig, stop.clone())?;
    }
    Ok(INTERRUPT.get_or_init(|| Interrupt { stop, signal }))
}

impl Interrupt {
    /// The signal that interrupted the process, if one did.
    pub fn signal(&self) -> Option<i32> {
        if !self.stop.load(Ordering::Relaxed) {
            return None;
        }
        match self.signal.load(Ordering::Relaxed) {
            0 => None,
            s => Some(s as i32),
        }
    }
}

/// The signal that interrupted the process, if the handlers are installed and one arrived.
pub fn received() -> Option<i32> {
    INTERRUPT.get().and_then(Interrupt::signal)
}

/// How often a wait that a signal must cut short looks at the stop request.
const POLL_NS: u64 = 10_000_000;

/// Runs `f` on a thread of its own and waits for its answer unless `stop` is set first: then
/// `Ok(None)` at once, and `f` is left to finish (or time out) on its own; an error when the
/// thread could not start or `f` panicked. For the blocking steps
/// before a run (connect and protocol probes), which cannot look at the flag themselves.
pub fn unless_stopped<T: Send + 'static>(
    stop: &AtomicBool,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<Option<T>, std::io::Error> {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name("candor-probe".into())
        .spawn(move || {
            let _ = tx.send(f());
        })?;
    loop {
        if stop.load(Ordering::Relaxed) {
            return Ok(None);
        }
        match rx.recv_timeout(std::time::Duration::from_nanos(POLL_NS)) {
            Ok(v) => return Ok(Some(v)),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            // `f` ended without an answer: it panicked, and that must not pass for a check.
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                return Err(std::io::Error::other(
                    "the check ended without an answer (it panicked)",
                ))
            }
        }
    }
}

/// While alive, a first SIGINT or SIGTERM ends the process at once (one line on stderr, exit
/// 130 or 143). For the phase in which the flags' files are read: a FIFO without a writer or a
/// long `--replay` scan blocks where no flag is looked at, and there are no results to write yet.
pub struct ExitOnStop {
    done: Arc<AtomicBool>,
}

/// Starts an [`ExitOnStop`] guard for `what` (e.g. "reading the run's inputs"); without the
/// handlers installed it does nothing.
pub fn exit_on_stop(what: &'static str) -> ExitOnStop {
    let done = Arc::new(AtomicBool::new(false));
    if let Some(i) = INTERRUPT.get() {
        let (stop, finished) = (i.stop.clone(), done.clone());
        let watcher = move || loop {
            if finished.load(Ordering::Relaxed) {
                return;
            }
            if stop.load(Ordering::Relaxed) {
                let signal = received().unwrap_or(libc::SIGINT);
                eprintln!("candor: {what} interrupted by {}", name(signal));
                std::process::exit(exit_code(signal));
            }
            std::thread::sleep(std::time::Duration::from_nanos(POLL_NS));
        };
        // Without the thread a signal is only seen later, as before: not worth failing for.
        let _ = std::thread::Builder::new()
            .name("candor-stop-watch".into())
            .spawn(watcher);
    }
    ExitOnStop { done }
}

impl Drop for ExitOnStop {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
    }
}

/// Sleeps for `ns` unless a signal asks for a stop meanwhile; true when the whole sleep passed.
/// (Before the handlers are installed there is nothing to wait for: a plain sleep.)
pub fn sleep(ns: u64) -> bool {
    let Some(i) = INTERRUPT.get() else {
        std::thread::sleep(std::time::Duration::from_nanos(ns));
        return true;
    };
    let end = candor_core::now_ns().saturating_add(ns);
    loop {
        if i.stop.load(Ordering::Relaxed) {
            return false;
        }
        let now = candor_core::now_ns();
        if now >= end {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_nanos((end - now).min(POLL_NS)));
    }
}

/// A command cut short by a signal: `main` prints it as one line and exits with
/// [`exit_code`] of the signal.
#[derive(Debug)]
pub struct Interrupted {
    pub signal: i32,
    /// What was cut short, e.g. "the demo".
    pub what: String,
}

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} interrupted by {}", self.what, name(self.signal))
    }
}

impl std::error::Error for Interrupted {}

/// Ends a command of several runs after the run a signal cut short: an `Interrupted` error.
pub fn check(what: &str) -> Result<(), Interrupted> {
    match received() {
        Some(signal) => Err(Interrupted {
            signal,
            what: what.to_string(),
        }),
        None => Ok(()),
    }
}

/// The shell's convention: 128 + the signal number (130 for SIGINT, 143 for SIGTERM).
pub fn exit_code(signal: i32) -> i32 {
    128 + signal
}

/// "SIGINT", "SIGTERM" or the number.
pub fn name(signal: i32) -> String {
    match signal {
        libc::SIGINT => "SIGINT".into(),
        libc::SIGTERM => "SIGTERM".into(),
        other => format!("signal {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_ends_the_wait_for_a_blocked_step_at_once() {
        let stop = AtomicBool::new(false);
        assert_eq!(unless_stopped(&stop, || 7).unwrap(), Some(7));
        stop.store(true, Ordering::Relaxed);
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        // A step that would block forever (until the test ends) is not waited for.
        let started = std::time::Instant::now();
        assert_eq!(
            unless_stopped(&stop, move || rx.recv().is_ok()).unwrap(),
            None
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(60));
        drop(tx);
    }

    #[test]
    fn conventional_exit_codes() {
        assert_eq!(exit_code(libc::SIGINT), 130);
        assert_eq!(exit_code(libc::SIGTERM), 143);
        assert_eq!(name(libc::SIGTERM), "SIGTERM");
    }
}
