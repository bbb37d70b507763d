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
    fn conventional_exit_codes() {
        assert_eq!(exit_code(libc::SIGINT), 130);
        assert_eq!(exit_code(libc::SIGTERM), 143);
        assert_eq!(name(libc::SIGTERM), "SIGTERM");
    }
}
