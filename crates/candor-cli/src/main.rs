//! The `candor` command: a thin front end that parses settings once and hands them to the
//! library crates. Every error ends as one line on stderr and a non-zero exit code.

// Every command prints through `stdio`: these shadow std's macros for the whole crate, so a closed
// pipe (`candor report a.json | head -1`) ends the output quietly in every command, present and
// future, instead of std's panic. Defined before `mod cmd` so that its modules see them.
macro_rules! print {
    ($($arg:tt)*) => { $crate::stdio::print(format_args!($($arg)*)) };
}
macro_rules! println {
    () => { $crate::stdio::print(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::stdio::print(format_args!("{}\n", format_args!($($arg)*))) };
}
macro_rules! eprint {
    ($($arg:tt)*) => { $crate::stdio::eprint(format_args!($($arg)*)) };
}
macro_rules! eprintln {
    () => { $crate::stdio::eprint(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::stdio::eprint(format_args!("{}\n", format_args!($($arg)*))) };
}

mod cmd;
mod stdio;

use clap::{CommandFactory, Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "candor",
    version,
    about = "Latency measurement that does not lie: open-loop load generation, honest reports, and self-checks",
    propagate_version = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run an open-loop (or closed-loop) load test (HTTP/1.1, HTTPS, HTTP/2, raw TCP, WebSocket, gRPC, SSE, OpenAI-compatible LLM streams) and report response time, service time and send lag.
    Run(Box<cmd::run::RunArgs>),
    /// Check candor itself against servers whose answer is known (instant, stalling, SIGSTOP-paused).
    Calibrate(cmd::calibrate::CalibrateArgs),
    /// Run the same test at several rates: response-time percentiles against offered load.
    Sweep(Box<cmd::sweep::SweepArgs>),
    /// Find the highest rate that meets the SLOs (bracket, bisect, confirm).
    Capacity(Box<cmd::capacity::CapacityArgs>),
    /// Apply HdrHistogram's after-the-fact coordinated-omission correction (an estimate) to a log.
    Correct(cmd::correct::CorrectArgs),
    /// Start the built-in HTTP/1.1 test server (optionally slow, stalling or faulty), or with --llm an OpenAI-compatible streaming one.
    Serve(cmd::serve::ServeArgs),
    /// Show coordinated omission on a built-in stalling server: closed loop vs open loop vs the truth.
    Demo(cmd::demo::DemoArgs),
    /// Report results (candor JSON or any HdrHistogram interval log): text summary, HTML (-o), .hgrm.
    Report(cmd::report::ReportArgs),
    /// Compare runs by percentile: changes, % Variation, and ratios with 95% confidence intervals.
    Compare(cmd::compare::CompareArgs),
    /// Merge runs exactly (histograms added, never percentiles averaged) into one results file.
    Merge(cmd::merge::MergeArgs),
    /// Print a Kubernetes Indexed Job running one shard of the schedule per pod, all starting together.
    K8s(cmd::k8s::K8sArgs),
    /// Print a shell completion script: candor completions bash|zsh|fish|elvish|powershell.
    Completions(cmd::completions::CompletionsArgs),
    /// Print the manual page candor(1) (roff; `candor man | man -l -`), or write all pages with --dir.
    Man(cmd::completions::ManArgs),
}

/// A command-line error in one line: clap's message with what it lists (missing arguments), its
/// tip if it has one, and where to look (the usage block stays behind `--help`).
fn one_line(err: &clap::Error) -> String {
    let rendered = err.render().to_string();
    let mut line = String::new();
    for l in rendered.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if l.starts_with("Usage:") || l.starts_with("For more information") {
            break;
        }
        match l.strip_prefix("tip: ") {
            Some(tip) => line.push_str(&format!(" ({tip})")),
            None if line.is_empty() => line.push_str(l.strip_prefix("error: ").unwrap_or(l)),
            None => {
                line.push(' ');
                line.push_str(l);
            }
        }
    }
    // The subcommand typed, whose --help explains its flags.
    let names: Vec<String> = Cli::command()
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .collect();
    let command = match std::env::args().skip(1).find(|a| !a.starts_with('-')) {
        Some(sub) if names.contains(&sub) => format!("candor {sub}"),
        _ => "candor".into(),
    };
    format!("{line}; see '{command} --help'")
}

/// A value of a flag with units (a duration, a rate) that does not parse: the flag and why, as
/// every check of a flag's value words it (`--timeout: '500' has no unit: ...`). Such a value is
/// bad input like any other the checks after parsing refuse (exit 1), not a misuse of the
/// command line's grammar (exit 2).
fn unit_value_error(err: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue};
    use std::error::Error;
    let reason = err
        .source()?
        .downcast_ref::<candor_core::units::UnitError>()?;
    let ContextValue::String(arg) = err.get(ContextKind::InvalidArg)? else {
        return None;
    };
    // clap names the argument as `--timeout <DUR>`: the flag is its first word.
    let flag = arg.split_whitespace().next()?;
    Some(format!("{flag}: {reason}"))
}

fn main() {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            match e.kind() {
                // Help and version are the answer asked for, not errors.
                ErrorKind::DisplayHelp
                | ErrorKind::DisplayVersion
                | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => e.exit(),
                _ => {
                    if let Some(line) = unit_value_error(&e) {
                        eprintln!("candor: error: {line}");
                        std::process::exit(1);
                    }
                    eprintln!("candor: error: {}", one_line(&e));
                    std::process::exit(2);
                }
            }
        }
    };
    let outcome = match cli.command {
        Command::Calibrate(args) => cmd::calibrate::main(args),
        Command::Sweep(args) => cmd::sweep::main(*args),
        Command::Capacity(args) => cmd::capacity::main(*args),
        Command::Correct(args) => cmd::correct::main(args),
        Command::Run(args) => cmd::run::main(*args),
        Command::Serve(args) => cmd::serve::main(args),
        Command::Demo(args) => cmd::demo::main(args),
        Command::Report(args) => cmd::report::main(args),
        Command::Compare(args) => cmd::compare::main(args),
        Command::Merge(args) => cmd::merge::main(args),
        Command::K8s(args) => cmd::k8s::main(args),
        Command::Completions(args) => cmd::completions::completions(args, Cli::command()),
        Command::Man(args) => cmd::completions::man(args, Cli::command()),
    };
    match outcome {
        Ok(code) => {
            if let Some(e) = stdio::take_failure() {
                eprintln!("candor: error: writing to stdout: {e}");
                std::process::exit(1);
            }
            std::process::exit(code)
        }
        // The reader has gone (`| head -1`): nothing is wrong and nobody is left to tell.
        Err(err) if stdio::caused_by_closed_pipe(&err) => std::process::exit(0),
        Err(err) => {
            if let Some(i) = err.downcast_ref::<cmd::interrupt::Interrupted>() {
                eprintln!("candor: {i}");
                std::process::exit(cmd::interrupt::exit_code(i.signal));
            }
            // `{:#}` joins the context chain on one line: "reading body file x: No such file".
            eprintln!("candor: error: {err:#}");
            std::process::exit(1);
        }
    }
}
