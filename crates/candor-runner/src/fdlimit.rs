//! The open-file limit, checked before a run: every connection is a descriptor, and running out
//! mid-run turns into `connect` failures that look like the target's fault.

use candor_core::units::format_count;

/// The run needs more open files than the process may have.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct FdLimitError(String);

/// Descriptors a run needs besides its connections: stdio, per thread an epoll instance, a
/// timer and a waker, the reachability and TLS probes, and the
/// output files: 8 per thread and 64 in all is several times what these take.
pub fn needed(connections: usize, threads: usize) -> u64 {
    connections as u64 + 8 * threads as u64 + 64
}

/// What to do about the soft limit.
#[derive(Debug, PartialEq, Eq)]
pub enum Plan {
    /// The soft limit already covers the run.
    Enough,
    /// Raise the soft limit to this (not above the hard limit).
    Raise(u64),
    /// Even the hard limit is too low.
    TooLow,
}

/// Decides from the two limits (pure, so that every case is tested exactly).
pub fn plan(needed: u64, soft: u64, hard: u64) -> Plan {
    if soft >= needed {
        Plan::Enough
    } else if hard >= needed {
        Plan::Raise(needed)
    } else {
        Plan::TooLow
    }
}

/// Makes sure `connections` sockets can be open at once, raising the soft RLIMIT_NOFILE up to
/// the hard one if needed; otherwise a one-line error naming `ulimit -n`.
pub fn ensure(connections: usize, threads: usize) -> Result<(), FdLimitError> {
    let need = needed(connections, threads);
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        // Without the numbers nothing can be checked; the run will report connect failures.
        return Ok(());
    }
    // rlim_t is u32 on some 32-bit targets.
    #[allow(clippy::unnecessary_cast)]
    let (soft, hard) = (lim.rlim_cur as u64, lim.rlim_max as u64);
    match plan(need, soft, hard) {
        Plan::Enough => Ok(()),
        Plan::Raise(to) => {
            let raised = libc::rlimit {
                rlim_cur: to as libc::rlim_t,
                rlim_max: lim.rlim_max,
            };
            // SAFETY: setrlimit reads the struct we own.
            if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } != 0 {
                let e = std::io::Error::last_os_error();
                return Err(FdLimitError(format!(
                    "-c {connections} needs about {} open files but the limit is {} and raising it failed ({e}): \
                     run `ulimit -n {need}` first",
                    format_count(need),
                    format_count(soft)
                )));
            }
            Ok(())
        }
        Plan::TooLow => Err(FdLimitError(format!(
            "-c {connections} needs about {} open files but the limit is {} (hard limit {}): raise it with \
             `ulimit -n {need}` (the hard limit needs root or limits.conf) or use fewer connections",
            format_count(need),
            format_count(soft),
            format_count(hard)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans() {
        assert_eq!(plan(100, 1024, 4096), Plan::Enough);
        assert_eq!(plan(1024, 1024, 4096), Plan::Enough);
        assert_eq!(plan(2000, 1024, 4096), Plan::Raise(2000));
        assert_eq!(plan(4096, 1024, 4096), Plan::Raise(4096));
        assert_eq!(plan(20_000, 1024, 1024), Plan::TooLow);
    }

    #[test]
    fn need_grows_with_connections_and_threads() {
        assert_eq!(needed(16, 2), 16 + 16 + 64);
        assert!(needed(20_000, 2) > 20_000);
    }
}
