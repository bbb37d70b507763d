//! candor's known-answer checks, the one meaning of "truth" in candor: latency distributions
//! predicted from known stall windows (`stall`), measured-versus-predicted tables and their
//! tolerance policy (`table`), pausing a process under test with SIGSTOP (`pause`), and the
//! calibration procedures of `candor calibrate` (`calibrate`). See docs/truth.md and
//! docs/truth-tools.md.

pub mod calibrate;
pub mod pause;
pub mod stall;
pub mod table;

pub use pause::{PauseError, PauseSpec, PauseWindow, Pauser};
pub use stall::{StallTruth, Statistic, TRUTH_ROWS};
pub use table::{render_truth, stall_tolerance_ns, truth_rows, Drain, TruthRow};
