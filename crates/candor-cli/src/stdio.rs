//! The one way every command writes to stdout and stderr: a reader that went away (`| head -1`)
//! ends the output quietly instead of a panic, and the command still finishes its other work
//! (a `run` piped into `head` still writes its `--json` file).

use std::fmt;
use std::io::{ErrorKind, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Set once stdout's reader has closed the pipe: later output is dropped, as a C tool killed by
/// SIGPIPE would drop it, but without killing the process (its sockets and files are not done).
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// The first failure to write stdout other than a closed pipe (a full disk): reported at exit.
static STDOUT_FAILED: Mutex<Option<std::io::Error>> = Mutex::new(None);

/// Set when an output file is `-`: stdout then carries that data alone, and the text a command
/// prints goes to stderr instead (as `run --json -` does), so the two never interleave.
static STDOUT_IS_DATA: AtomicBool = AtomicBool::new(false);

/// Hands stdout to the output `dest` when it is `-`: from then on `print!` writes to stderr.
pub fn give_stdout_to(dest: Option<&candor_report::export::Destination>) {
    if dest.is_some_and(|d| d.is_stdout()) {
        give_stdout_to_data();
    }
}

/// Hands stdout to an output on `-` (`ExportManager::uses_stdout`): from then on `print!`
/// writes to stderr.
pub fn give_stdout_to_data() {
    STDOUT_IS_DATA.store(true, Ordering::Relaxed);
}

/// What `print!` and `println!` expand to in this crate (see `main.rs`).
pub fn print(args: fmt::Arguments) {
    if STDOUT_IS_DATA.load(Ordering::Relaxed) {
        return eprint(args);
    }
    write_stdout(|out| out.write_fmt(args));
}

/// Writes bytes made elsewhere (a manual page, a completion script) to stdout.
pub fn print_bytes(bytes: &[u8]) {
    write_stdout(|out| out.write_all(bytes));
}

fn write_stdout(write: impl FnOnce(&mut std::io::StdoutLock) -> std::io::Result<()>) {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut out = std::io::stdout().lock();
    // Flushed at once so that a failure is seen here, not in the exit's silent flush.
    if let Err(e) = write(&mut out).and_then(|()| out.flush()) {
        if is_closed_pipe(&e) {
            STDOUT_CLOSED.store(true, Ordering::Relaxed);
        } else {
            let mut failed = STDOUT_FAILED.lock().unwrap_or_else(|p| p.into_inner());
            failed.get_or_insert(e);
        }
    }
}

/// What `eprint!` and `eprintln!` expand to in this crate: a closed stderr (`2>&1 | head`) is
/// not worth a panic, and there is nowhere left to say so.
pub fn eprint(args: fmt::Arguments) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_fmt(args).and_then(|()| err.flush());
}

/// The reader of a pipe has gone: the one write failure that is not an error.
pub fn is_closed_pipe(e: &std::io::Error) -> bool {
    e.kind() == ErrorKind::BrokenPipe
}

/// True when `err` comes from a closed pipe somewhere in its chain (a banner that could not be
/// printed, a page rendered straight into stdout).
pub fn caused_by_closed_pipe(err: &anyhow::Error) -> bool {
    err.chain()
        .filter_map(|c| c.downcast_ref::<std::io::Error>())
        .any(is_closed_pipe)
}

/// A failure to write stdout that was not a closed pipe, taken once at exit.
pub fn take_failure() -> Option<std::io::Error> {
    STDOUT_FAILED
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
}
