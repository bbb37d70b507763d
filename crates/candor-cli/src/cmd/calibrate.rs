//! `candor calibrate`: the tool checks itself on this machine against servers whose answer is
//! known in advance (the procedures and bounds are `candor_truth::calibrate`); with `--noise URL`
//! it measures instead how much one run differs from the next against URL, the noise floor
//! `candor compare --noise` takes for one run a side.
//!
//! `CANDOR_CALIBRATE_SABOTAGE` (deliberately undocumented in `--help`) breaks the generator on
//! purpose so that the check itself can be checked: `closed-loop` sends like wrk (each connection
//! waits for its answer), `actual-send` times requests from the actual write instead of the
//! intended send time. Either must make calibration fail.

use crate::cmd::EXIT_VERDICT_FAILED;
use anyhow::{Context, Result};
use candor_core::results::RunResults;
use candor_load::{RunOutcome, RunPlan};
use candor_report::noise::noise_text;
use candor_runner::flags::run_config_of_words;
use candor_runner::{execute_with, recorded_config};
use candor_truth::calibrate::{calibrate, CalibrateError, Check, Runner, Sabotage, StartHook};
use clap::Args;
use std::process::Command;

#[derive(Args, Debug)]
pub struct CalibrateArgs {
    /// Only run these checks (comma-separated: tester, stall, pause, llm; llm, a stalling LLM
    /// server's time to first token, runs only when named).
    #[arg(
        long,
        value_name = "LIST",
        default_value = "tester,stall,pause",
        conflicts_with = "noise"
    )]
    pub only: String,
    /// Measure this machine's run-to-run variation against URL instead (several identical runs,
    /// 1 s apart) and print the noise floor to pass to `candor compare --noise`.
    #[arg(long, value_name = "URL")]
    pub noise: Option<String>,
    /// Runs of --noise (at least 3; more runs, a tighter floor).
    #[arg(long, value_name = "N", default_value_t = 6, requires = "noise",
          value_parser = clap::value_parser!(u32).range(3..=100))]
    pub noise_runs: u32,
    /// Load flags of each --noise run, as `candor run` takes them (quote them as one argument):
    /// use those of the runs you will compare.
    #[arg(
        long,
        value_name = "FLAGS",
        default_value = "-R 1k -c 8 -d 3s",
        requires = "noise",
        allow_hyphen_values = true
    )]
    pub noise_load: String,
}

/// `--noise URL`: identical runs, the spread of their percentiles, the floor.
fn noise(args: &CalibrateArgs, url: &str) -> Result<i32> {
    let config = run_config_of_words("--noise-load", &args.noise_load, url)?;
    let n = args.noise_runs as usize;
    let mut hists = Vec::with_capacity(n);
    for k in 0..n {
        if k > 0 {
            std::thread::sleep(std::time::Duration::from_secs(1));
        }
        crate::cmd::interrupt::check("the noise calibration")?;
        eprintln!("candor: noise run {} of {n}", k + 1);
        let outcome = execute_with(&config, false, None)?;
        crate::cmd::interrupt::check("the noise calibration")?;
        let r = candor_runner::run_results(&outcome, &config, vec![], recorded_config(&config));
        if let Some(diagnosis) = candor_report::text::no_success(&r.main.requests) {
            anyhow::bail!("noise run {}: {diagnosis}", k + 1);
        }
        hists.push(
            r.main
                .histograms
                .decode()
                .context("decoding a run's histograms")?
                .response,
        );
    }
    let (text, floor) = noise_text(&hists, url, &args.noise_load);
    print!("{text}");
    if floor.is_none() {
        anyhow::bail!(
            "the runs have too few samples for a noise floor (p50 needs ~200 a run); \
             raise -R or -d in --noise-load"
        );
    }
    Ok(0)
}

/// Calibration loads run as `candor run` runs them (limits, probe, Ctrl-C), with no live line;
/// the paused server is this executable's `candor serve`.
struct CliRunner;

impl Runner for CliRunner {
    type Error = anyhow::Error;

    fn run(
        &mut self,
        config: &RunPlan,
        on_start: Option<StartHook>,
    ) -> Result<(RunOutcome, RunResults)> {
        let outcome = execute_with(config, false, on_start)?;
        crate::cmd::interrupt::check("calibration")?;
        let results = candor_runner::run_results(&outcome, config, vec![], recorded_config(config));
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
    if let Some(url) = &args.noise {
        return noise(&args, url);
    }
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
