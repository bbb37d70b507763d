//! What a calibration is asked and answers: the checks it runs, the sabotages that must fail
//! them, the [`Runner`] its loads go through, its outcome and what stops it.

use crate::pause::PauseError;
use candor_core::results::RunResults;
use candor_load::{LoadConfigError, LoadShape, RunOutcome, RunPlan, Target};
use std::process::Command;
use std::sync::Arc;
use thiserror::Error;

/// Called with the monotonic instant of the run's first intended send.
pub type StartHook = Arc<dyn Fn(u64) + Send + Sync>;

/// What stopped a calibration; `E` is the [`Runner`]'s own error, passed through untouched.
#[derive(Debug, Error)]
pub enum CalibrateError<E> {
    #[error("CANDOR_CALIBRATE_SABOTAGE={0}: expected closed-loop or actual-send")]
    Sabotage(String),
    #[error("--only: unknown check '{0}' (tester, stall, pause, llm)")]
    UnknownCheck(String),
    #[error("starting the {0} server: {1}")]
    Serve(&'static str, candor_serve::ServeError),
    #[error("starting the LLM server: {0}")]
    LlmServe(candor_serve::llm::LlmError),
    #[error(transparent)]
    Config(#[from] LoadConfigError),
    #[error(transparent)]
    Pause(#[from] PauseError),
    #[error("{0}")]
    ChildServer(String),
    #[error("{0}")]
    Run(E),
}

/// How the loads of a calibration are run, and how a server in a separate process is started.
pub trait Runner {
    type Error;

    /// Runs `config`, calling `on_start` at the first intended send; the outcome and its results.
    fn run(
        &mut self,
        config: &RunPlan,
        on_start: Option<StartHook>,
    ) -> Result<(RunOutcome, RunResults), Self::Error>;

    /// The command of an HTTP server in its own process (the pause check stops it) that prints
    /// its `http://` address on its first line.
    fn child_server(&self) -> Result<Command, Self::Error>;
}

/// One check of a calibration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    Tester,
    Stall,
    Pause,
    /// Time to first token of a stalling LLM server (not in the default list).
    Llm,
}

impl Check {
    /// `tester,stall,pause,llm` (any subset, any order) into the checks, run in the canonical
    /// order.
    pub fn parse_list<E>(text: &str) -> Result<Vec<Check>, CalibrateError<E>> {
        let mut wanted = Vec::new();
        for w in text.split(',').map(str::trim) {
            wanted.push(match w {
                "tester" => Check::Tester,
                "stall" => Check::Stall,
                "pause" => Check::Pause,
                "llm" => Check::Llm,
                other => return Err(CalibrateError::UnknownCheck(other.into())),
            });
        }
        Ok([Check::Tester, Check::Stall, Check::Pause, Check::Llm]
            .into_iter()
            .filter(|c| wanted.contains(c))
            .collect())
    }

    pub fn title(self) -> &'static str {
        match self {
            Check::Tester => "test the tester",
            Check::Stall => "periodic stall",
            Check::Pause => "SIGSTOP pause",
            Check::Llm => "LLM time to first token",
        }
    }
}

/// A deliberate fault that calibration must catch (`CANDOR_CALIBRATE_SABOTAGE`, undocumented in
/// `--help`): it proves that the check itself is not a rubber stamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sabotage {
    None,
    /// Send like wrk: each connection waits for its answer.
    ClosedLoop,
    /// Time requests from the actual write instead of the intended send time (and, in the LLM
    /// check, send over 10 connections, as the Python LLM benchmarks do).
    ActualSend,
}

impl Sabotage {
    /// The value of `CANDOR_CALIBRATE_SABOTAGE`, if set.
    pub fn parse<E>(value: Option<&str>) -> Result<Sabotage, CalibrateError<E>> {
        match value {
            None | Some("") => Ok(Sabotage::None),
            Some("closed-loop") => Ok(Sabotage::ClosedLoop),
            Some("actual-send") => Ok(Sabotage::ActualSend),
            Some(other) => Err(CalibrateError::Sabotage(other.into())),
        }
    }
}

/// The pass/fail of every check run, in order, and the wall time they took.
#[derive(Debug, Clone)]
pub struct CalibrationOutcome {
    pub checks: Vec<(Check, bool)>,
    pub seconds: f64,
}

impl CalibrationOutcome {
    pub fn pass(&self) -> bool {
        self.checks.iter().all(|c| c.1)
    }

    /// The closing `RESULT:` line(s).
    pub fn render(&self) -> String {
        let secs = self.seconds;
        let n = self.checks.len();
        let failed: Vec<&str> = self
            .checks
            .iter()
            .filter(|c| !c.1)
            .map(|c| c.0.title())
            .collect();
        if failed.is_empty() {
            format!("RESULT: PASS ({n} of {n} checks, {secs:.0}s). candor's numbers on this machine match the known truth.\n")
        } else {
            format!(
                "RESULT: FAIL ({}; {secs:.0}s). Do not trust latency figures from this machine/build until this passes:\n\
                 see the explanation under each failed check, and docs/truth-tools.md.\n",
                failed.join(", ")
            )
        }
    }
}

/// The settings shared by every calibration run.
pub(crate) fn base_config(
    url: &str,
    rate: f64,
    conns: usize,
    threads: usize,
    dur: u64,
) -> Result<RunPlan, LoadConfigError> {
    const S: u64 = 1_000_000_000;
    let mut c = RunPlan::new(Target::parse(url)?, Default::default())?;
    c.shape = LoadShape::constant(rate);
    c.connections = conns;
    c.threads = threads;
    c.duration_ns = dur;
    c.timeout_ns = 5 * S;
    c.drain_ns = 5 * S;
    c.validate()?;
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_and_sabotage_parse_strictly() {
        type E = CalibrateError<String>;
        assert_eq!(
            Check::parse_list::<String>("pause, tester").unwrap(),
            [Check::Tester, Check::Pause],
            "run in the canonical order"
        );
        assert_eq!(
            Check::parse_list::<String>("llm,stall").unwrap(),
            [Check::Stall, Check::Llm]
        );
        let e: E = Check::parse_list::<String>("tester,speed").unwrap_err();
        assert_eq!(
            e.to_string(),
            "--only: unknown check 'speed' (tester, stall, pause, llm)"
        );
        assert_eq!(Sabotage::parse::<String>(None).unwrap(), Sabotage::None);
        assert_eq!(Sabotage::parse::<String>(Some("")).unwrap(), Sabotage::None);
        assert_eq!(
            Sabotage::parse::<String>(Some("closed-loop")).unwrap(),
            Sabotage::ClosedLoop
        );
        assert_eq!(
            Sabotage::parse::<String>(Some("actual-send")).unwrap(),
            Sabotage::ActualSend
        );
        let e: E = Sabotage::parse::<String>(Some("slow")).unwrap_err();
        assert!(e
            .to_string()
            .contains("expected closed-loop or actual-send"));
    }

    #[test]
    fn the_verdict_names_the_failed_checks() {
        let pass = CalibrationOutcome {
            checks: vec![(Check::Tester, true), (Check::Pause, true)],
            seconds: 9.4,
        };
        assert!(pass.pass());
        assert_eq!(
            pass.render(),
            "RESULT: PASS (2 of 2 checks, 9s). candor's numbers on this machine match the known truth.\n"
        );
        let fail = CalibrationOutcome {
            checks: vec![(Check::Tester, true), (Check::Stall, false)],
            seconds: 12.0,
        };
        assert!(!fail.pass());
        assert!(fail
            .render()
            .starts_with("RESULT: FAIL (periodic stall; 12s)."));
    }
}
