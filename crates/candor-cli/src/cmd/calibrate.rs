//! `candor calibrate`: the tool checks itself on this machine against servers whose answer is
//! known in advance (the procedures and bounds are `candor_truth::calibrate`).
//!
//! `CANDOR_CALIBRATE_SABOTAGE` (deliberately undocumented in `--help`) breaks the generator on
//! purpose so that the check itself can be checked: `closed-loop` sends like wrk (each connection
//! waits for its answer), `actual-send` times requests from the actual write instead of the
//! intended send time. Either must make calibration fail.

use crate::cmd::run::{execute_with, recorded_config};
use crate::cmd::EXIT_VERDICT_FAILED;
use anyhow::{Context, Result};
use candor_core::results::RunResults;
use candor_load::{LoadConfig, RunOutcome};
use candor_truth::calibrate::{calibrate, CalibrateError, Check, Runner, Sabotage, StartHook};
use clap::Args;
use std::process::Command;

#[derive(Args, Debug)]
pub struct CalibrateArgs {
    /// Only run these checks (comma-separated: tester, stall, pause).
    #[arg(long, value_name = "LIST", default_value = "tester,stall,pause")]
    pub only: String,
}

/// Calibration loads run as `candor run` runs them (limits, probe, Ctrl-C), with no live line;
/// the paused server is this executable's `candor serve`.
struct CliRunner;

impl Runner for CliRunner {
    type Error = anyhow::Error;

    fn run(
        &mut self,
        config: &LoadConfig,
        on_start: Option<StartHook>,
    ) -> Result<(RunOutcome, RunResults)> {
        let outcome = execute_with(config, false, on_start)?;
        crate::cmd::interrupt::check("calibration")?;
        let results = outcome.to_results(config, vec![], recorded_config(config));
        Ok((outcome, results))
    }

    fn child_server(&self) -> Result<Command> {
        let exe = std::env::current_exe().context("finding the candor executable")?;
        let mut command = Command::new(exe);
        command.args(["serve", "--listen", "127.0.0.1:0", "--threads", "1"]);
        Ok(command)
    }
}

pub fn main(args: CalibrateArgs) -> Result<i32> {
    let sabotage = Sabotage::parse(std::env::var("CANDOR_CALIBRATE_SABOTAGE").ok().as_deref())
        .map_err(one_line)?;
    let checks = Check::parse_list(&args.only).map_err(one_line)?;
    let verdict = calibrate(&checks, sabotage, &mut CliRunner, &mut |text| {
        print!("{text}")
    })
    .map_err(one_line)?;
    print!("{}", verdict.render());
    Ok(if verdict.pass() {
        0
    } else {
        EXIT_VERDICT_FAILED
    })
}

/// The run's own error as it was (an interruption keeps its type, so that `main` exits 130/143).
fn one_line(e: CalibrateError<anyhow::Error>) -> anyhow::Error {
    match e {
        CalibrateError::Run(run) => run,
        other => anyhow::anyhow!(other.to_string()),
    }
}
