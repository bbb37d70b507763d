//! The platform jitter monitor: a thread that reads the clock in a tight loop and records every
//! gap between two readings above a threshold, i.e. the times the thread was not running.
//! Shown beside the results so that the machine's hiccups can be told from the code's.

use crate::phased::{HistSet, PhasedSet, E2E};
use candor_core::now_ns;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// The warning for a jitter monitor started with `cpus` CPUs available to the process, if it
/// needs one. The monitor spins for the whole session, so with fewer than 3 CPUs it takes the
/// core that the benchmark thread's neighbours (the OS, other processes) would otherwise use and
/// they preempt the benchmark thread instead: on the 2-core machine of docs/benchmarks.md
/// ("candor-harness vs JLBH") it doubled the hiccup example's p99 under load.
pub(crate) fn crowding_warning(cpus: usize) -> Option<String> {
    (cpus < 3).then(|| {
        format!(
            "the jitter monitor spins on a CPU of its own and this process may use only {cpus}: \
             it competes with the benchmark thread and inflates its tail; turn it off \
             (record_os_jitter(false)) unless the jitter itself is wanted"
        )
    })
}

pub(crate) struct JitterMonitor {
    pub set: Arc<PhasedSet>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl JitterMonitor {
    /// Starts the spinning thread. Gaps above `threshold_ns` go into histogram 0 of its set.
    pub fn start(threshold_ns: u64) -> std::io::Result<Self> {
        let set = Arc::new(PhasedSet::new(1));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let set = Arc::clone(&set);
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name("candor-jitter".into())
                .spawn(move || {
                    let mut last = now_ns();
                    while !stop.load(Ordering::Relaxed) {
                        let now = now_ns();
                        let gap = now.saturating_sub(last);
                        if gap > threshold_ns {
                            // SAFETY: this thread is the set's only writer.
                            unsafe { set.write(|s| s.record(E2E, gap)) };
                        }
                        last = now;
                    }
                })?
        };
        Ok(JitterMonitor {
            set,
            stop,
            thread: Some(thread),
        })
    }

    /// Moves the gaps recorded since the last collection into `into` (histogram 0).
    pub fn collect_into(&self, into: &mut HistSet) {
        // SAFETY: the harness thread is the only collector.
        unsafe { self.set.collect_into(into) }
    }
}

impl Drop for JitterMonitor {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warns_only_when_the_monitor_would_crowd_the_benchmark() {
        assert!(crowding_warning(1).is_some());
        let w = crowding_warning(2).expect("2 CPUs: one spinning monitor, one benchmark thread");
        assert!(
            w.contains("only 2") && w.contains("record_os_jitter(false)"),
            "{w}"
        );
        assert_eq!(crowding_warning(3), None);
        assert_eq!(crowding_warning(64), None);
    }
}
