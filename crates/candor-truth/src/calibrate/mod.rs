//! The calibration procedures of `candor calibrate`: candor checks itself on this machine
//! against servers whose answer is known in advance: (a) an instant server (the generator's own
//! floor, judged by fixed bounds), (b) a periodically stalling server and (c) a server process
//! paused with SIGSTOP, each judged against the truth its stall windows predict, and, when asked
//! for (`--only ...,llm`), (d) an OpenAI-compatible streaming server whose first token is known,
//! stalling: time to first token judged against `T + W(t + T)` (docs/truth.md).
//!
//! The procedures run loads through a [`Runner`] that the caller provides (the command line's
//! run: file limits, pre-run probe, signals), so this crate does not depend on the front end.
//!
//! `checks` holds what a calibration is asked and answers (checks, sabotages, the runner, the
//! outcome, the errors), `judge` the decisions (pure, unit-tested), `procedure` the runs and
//! servers around them.

mod checks;
mod judge;
mod procedure;

pub use checks::{CalibrateError, CalibrationOutcome, Check, Runner, Sabotage, StartHook};

pub use judge::{
    accounting, judge_llm, judge_stall, render_bounds, tester_bounds, Bound, LlmJudgement,
    Measured, StallJudgement,
};
pub use procedure::calibrate;
