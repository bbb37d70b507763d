//! Shared foundations of candor: the monotonic clock, precise pacing, histogram recording,
//! unit parsing and formatting, and the results model that every report reads.

pub mod analysis;
pub mod bounded;
pub mod clock;
pub mod dates;
pub mod early_end;
pub mod exact_sleep;
pub mod hist;
pub mod interval_stats;
pub mod llm_run;
pub mod phase_results;
pub mod protocol_name;
pub mod recorded;
pub mod reply_codes;
pub mod results;
pub mod run_config;
pub mod sleep_or_spin;
pub mod stream_measures;
pub mod table;
pub mod thresholds;
pub mod timerfd;
pub mod units;
pub mod workload_results;

pub use clock::{now_ns, wall_clock_ns};
pub use exact_sleep::{precise_sleep_until, set_fine_timer_slack, SPIN_MARGIN_NS};
pub use hist::{new_histogram, Histo, Recorder, Summary, HIGHEST_TRACKABLE_NS, SIGNIFICANT_DIGITS};
pub use sleep_or_spin::{Listen, PaceStats, Pacer, Pacing, Wait};
