//! The calibration procedures of `candor calibrate`: candor checks itself on this machine
//! against servers whose answer is known in advance: (a) an instant server (the generator's own
//! floor, judged by fixed bounds), (b) a periodically stalling server and (c) a server process
//! paused with SIGSTOP, each judged against the truth its stall windows predict.
//!
//! The procedures run loads through a [`Runner`] that the caller provides (the command line's
//! run: file limits, pre-run probe, signals), so this crate does not depend on the front end.

use crate::pause::{pause_truth, PauseError, PauseSpec, PauseWindow, Pauser};
use crate::stall::StallTruth;
use crate::table::{render_truth, truth_rows, Drain};
use candor_core::results::{PhaseResults, RequestCounts, RunResults};
use candor_core::units::{format_count, format_ns, format_rate};
use candor_core::Summary;
use candor_load::{LoadConfig, LoadConfigError, RunOutcome, Target};
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use thiserror::Error;

/// Called with the monotonic instant of the run's first intended send.
pub type StartHook = Arc<dyn Fn(u64) + Send + Sync>;

/// What stopped a calibration; `E` is the [`Runner`]'s own error, passed through untouched.
#[derive(Debug, Error)]
pub enum CalibrateError<E> {
    #[error("CANDOR_CALIBRATE_SABOTAGE={0}: expected closed-loop or actual-send")]
    Sabotage(String),
    #[error("--only: unknown check '{0}' (tester, stall, pause)")]
    UnknownCheck(String),
    #[error("starting the {0} server: {1}")]
    Serve(&'static str, candor_serve::ServeError),
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
        config: &LoadConfig,
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
}

impl Check {
    /// `tester,stall,pause` (any subset, any order) into the checks, run in the canonical order.
    pub fn parse_list<E>(text: &str) -> Result<Vec<Check>, CalibrateError<E>> {
        let mut wanted = Vec::new();
        for w in text.split(',').map(str::trim) {
            wanted.push(match w {
                "tester" => Check::Tester,
                "stall" => Check::Stall,
                "pause" => Check::Pause,
                other => return Err(CalibrateError::UnknownCheck(other.into())),
            });
        }
        Ok([Check::Tester, Check::Stall, Check::Pause]
            .into_iter()
            .filter(|c| wanted.contains(c))
            .collect())
    }

    pub fn title(self) -> &'static str {
        match self {
            Check::Tester => "test the tester",
            Check::Stall => "periodic stall",
            Check::Pause => "SIGSTOP pause",
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
    /// Time requests from the actual write instead of the intended send time.
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

/// One bound check of the tester run.
#[derive(Debug, Clone)]
pub struct Bound {
    pub what: &'static str,
    pub limit: &'static str,
    pub measured: String,
    pub pass: bool,
}

/// The pass/fail of every check run, in order, and the wall time they took.
#[derive(Debug, Clone)]
pub struct Verdict {
    pub checks: Vec<(Check, bool)>,
    pub seconds: f64,
}

impl Verdict {
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

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;

/// Runs `checks` in order, telling `say` what it does as it goes; the verdict of each.
pub fn calibrate<R: Runner>(
    checks: &[Check],
    sabotage: Sabotage,
    runner: &mut R,
    say: &mut dyn FnMut(&str),
) -> Result<Verdict, CalibrateError<R::Error>> {
    say("candor calibrate: checking candor against servers whose answer is known in advance (~20 s)\n");
    if sabotage != Sabotage::None {
        say("SABOTAGED on purpose by CANDOR_CALIBRATE_SABOTAGE: this run must FAIL\n");
    }
    say("\n");
    let started = std::time::Instant::now();
    let mut verdict = Vec::new();
    let mut calibration = Calibration {
        sabotage,
        runner,
        say,
    };
    for &check in checks {
        let pass = match check {
            Check::Tester => calibration.tester()?,
            Check::Stall => calibration.stall()?,
            Check::Pause => calibration.pause()?,
        };
        verdict.push((check, pass));
        (calibration.say)("\n");
    }
    Ok(Verdict {
        checks: verdict,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// The settings shared by every calibration run.
fn base_config(
    url: &str,
    rate: f64,
    conns: usize,
    threads: usize,
    dur: u64,
) -> Result<LoadConfig, LoadConfigError> {
    let mut c = LoadConfig::new(Target::parse(url)?);
    c.rate = Some(rate);
    c.connections = conns;
    c.threads = threads;
    c.duration_ns = dur;
    c.timeout_ns = 5 * S;
    c.drain_ns = 5 * S;
    c.validate()?;
    Ok(c)
}

/// Every request of a calibration run must complete: (pass, the counts).
pub fn accounting(r: &RequestCounts) -> (bool, String) {
    (
        r.balanced() && r.completed == r.intended && r.failed == 0,
        format!(
            "{} intended, {} completed, {} failed, {} unfinished",
            format_count(r.intended),
            format_count(r.completed),
            format_count(r.failed),
            format_count(r.in_flight_at_end)
        ),
    )
}

fn at(s: &Summary, p: f64) -> f64 {
    s.at(p).unwrap_or(0) as f64
}

/// What a calibration run measured.
#[derive(Clone, Copy)]
pub struct Measured<'a> {
    pub response_time: &'a Summary,
    pub service_time: &'a Summary,
    pub send_lag: &'a Summary,
    pub requests: &'a RequestCounts,
}

impl<'a> Measured<'a> {
    pub fn of(phase: &'a PhaseResults) -> Measured<'a> {
        Measured {
            response_time: &phase.response_time,
            service_time: &phase.service_time,
            send_lag: &phase.send_lag,
            requests: &phase.requests,
        }
    }
}

/// The bounds of the tester run against an instant server: candor's own floor must be small.
pub fn tester_bounds(m: &Measured<'_>) -> Vec<Bound> {
    let (acc_ok, acc) = accounting(m.requests);
    let gap50 = at(m.response_time, 50.0) - at(m.service_time, 50.0);
    let gap99 = at(m.response_time, 99.0) - at(m.service_time, 99.0);
    let late_share = m.requests.generator_late as f64 / m.requests.intended.max(1) as f64;
    let lag50 = at(m.send_lag, 50.0);
    let lag99 = at(m.send_lag, 99.0);
    let rt99 = at(m.response_time, 99.0);
    let bound = |what, limit, measured, pass| Bound {
        what,
        limit,
        measured,
        pass,
    };
    vec![
        bound("send lag p50", "< 50us", format_ns(lag50), lag50 < 50e3),
        bound("send lag p99", "< 1ms", format_ns(lag99), lag99 < 1e6),
        bound(
            "response - service, p50",
            "< 100us",
            format_ns(gap50),
            gap50 < 100e3,
        ),
        bound(
            "response - service, p99",
            "< 1ms",
            format_ns(gap99),
            gap99 < 1e6,
        ),
        bound("response time p99", "< 5ms", format_ns(rt99), rt99 < 5e6),
        // One scheduler hiccup of a few ms per second delays ~6 of 2,000 sends (0.3%); more
        // than that means candor is systematically short of CPU.
        bound(
            "sent >1ms late by candor",
            "< 0.5%",
            format!("{:.3}%", 100.0 * late_share),
            late_share < 0.005,
        ),
        bound("accounting", "all completed", acc, acc_ok),
    ]
}

/// The table of the tester's bounds with a pass/fail column.
pub fn render_bounds(bounds: &[Bound]) -> String {
    let mut out = format!(
        "    {:<28} {:>14} {:>44}  result\n",
        "check", "bound", "measured"
    );
    for b in bounds {
        out.push_str(&format!(
            "    {:<28} {:>14} {:>44}  {}\n",
            b.what,
            b.limit,
            b.measured,
            if b.pass { "pass" } else { "FAIL" }
        ));
    }
    out
}

/// A stall check's judgement: the truth table and the two side conditions.
pub struct StallJudgement {
    pub table: String,
    pub service_p90_ns: f64,
    pub service_ok: bool,
    pub accounting: (bool, String),
    pub pass: bool,
}

/// Judges a run of `config` against the truth of its stall windows.
pub fn judge_stall(truth: &StallTruth, m: &Measured<'_>, config: &LoadConfig) -> StallJudgement {
    // The configured rate, also under the closed-loop sabotage: the allowance only widens upwards,
    // so it cannot make a blind measurement pass.
    let drain = Drain {
        rate_per_s: config.rate.unwrap_or(0.0),
        connections: config.connections,
        round_ns: at(m.service_time, 90.0),
    };
    let rows = truth_rows(truth, m.response_time, &drain);
    let table: String = render_truth(&rows, true)
        .lines()
        .map(|l| format!("  {l}\n"))
        .collect();
    let service_p90_ns = at(m.service_time, 90.0);
    let service_ok = service_p90_ns < 5e6;
    let accounting = accounting(m.requests);
    let pass = rows.iter().all(|r| r.pass()) && service_ok && accounting.0;
    StallJudgement {
        table,
        service_p90_ns,
        service_ok,
        accounting,
        pass,
    }
}

fn pass_word(pass: bool) -> &'static str {
    if pass {
        "pass"
    } else {
        "FAIL"
    }
}

struct Calibration<'a, R> {
    sabotage: Sabotage,
    runner: &'a mut R,
    say: &'a mut dyn FnMut(&str),
}

/// A one-thread in-process server on a free loopback port.
fn local_server<E>(
    what: &'static str,
    stall: Option<candor_serve::Stall>,
) -> Result<(candor_serve::ServerHandle, String), CalibrateError<E>> {
    let mut serve = candor_serve::ServeConfig::new(SocketAddr::from(([127, 0, 0, 1], 0)));
    serve.threads = 1;
    serve.stall = stall;
    let server = candor_serve::start(serve).map_err(|e| CalibrateError::Serve(what, e))?;
    let url = format!("http://{}/", server.local_addr());
    Ok((server, url))
}

impl<R: Runner> Calibration<'_, R> {
    fn run_measured(
        &mut self,
        config: &LoadConfig,
        pauser: Option<&Arc<Pauser>>,
    ) -> Result<(RunOutcome, RunResults, PauseWindow), CalibrateError<R::Error>> {
        let mut c = config.clone();
        if self.sabotage == Sabotage::ClosedLoop {
            c.rate = None;
        }
        let ran = self.runner.run(&c, pauser.map(|p| p.hook()));
        // The process is resumed whatever became of the run.
        let window = match pauser {
            Some(p) => p.finish()?,
            None => None,
        };
        let (outcome, mut results) = ran.map_err(CalibrateError::Run)?;
        if self.sabotage == Sabotage::ActualSend {
            // What a tool that starts its clock at the actual write would report.
            results.main.response_time = results.main.service_time.clone();
        }
        Ok((outcome, results, window))
    }

    /// (a) Against an instant server: is the generator's own floor within bounds?
    fn tester(&mut self) -> Result<bool, CalibrateError<R::Error>> {
        let (server, url) = local_server("instant", None)?;
        let mut c = base_config(&url, 2000.0, 8, 1, 3 * S)?;
        c.warmup_ns = 500 * MS;
        (self.say)(&format!(
            "(a) test the tester: instant server at {url}, {} on 8 connections, 1 thread, 3s after 0.5s warm-up\n",
            format_rate(2000.0)
        ));
        let (_, res, _) = self.run_measured(&c, None)?;
        server.shutdown();
        let m = &res.main;
        (self.say)(&format!(
            "    floor: response time p50 {} p99 {} max {}; service time p50 {} p99 {}\n",
            format_ns(at(&m.response_time, 50.0)),
            format_ns(at(&m.response_time, 99.0)),
            format_ns(m.response_time.max_ns as f64),
            format_ns(at(&m.service_time, 50.0)),
            format_ns(at(&m.service_time, 99.0)),
        ));
        let bounds = tester_bounds(&Measured::of(m));
        (self.say)(&render_bounds(&bounds));
        let ok = bounds.iter().all(|b| b.pass);
        if !ok {
            (self.say)(
                "    => FAIL: candor's own overhead is not small against a server that does nothing. Its numbers\n       \
                 would partly measure candor itself: the machine is busy (other processes, CPU frequency scaling,\n       \
                 a VM's stolen time), or pacing is broken. Re-run on a quieter machine before trusting results.\n",
            );
        }
        Ok(ok)
    }

    fn judge(&mut self, title: &str, truth: &StallTruth, res: &RunResults, c: &LoadConfig) -> bool {
        let j = judge_stall(truth, &Measured::of(&res.main), c);
        (self.say)(&j.table);
        (self.say)(&format!(
            "    service time p90 {} (< 5ms: only requests already in flight see a stall)  {}\n",
            format_ns(j.service_p90_ns),
            pass_word(j.service_ok)
        ));
        (self.say)(&format!(
            "    accounting: {}  {}\n",
            j.accounting.1,
            pass_word(j.accounting.0)
        ));
        if !j.pass {
            (self.say)(&format!(
                "    => FAIL ({title}): the measured response times do not match the distribution that the stall\n       \
                 windows alone predict. A tool that reads low here under-reports stalls (coordinated omission:\n       \
                 it stopped sending or timed from the actual send); one that reads high is adding its own delay.\n"
            ));
        }
        j.pass
    }

    /// (b) A periodically stalling server: predicted versus measured.
    fn stall(&mut self) -> Result<bool, CalibrateError<R::Error>> {
        let stall = candor_serve::Stall {
            every_ns: S,
            for_ns: 200 * MS,
        };
        let (server, url) = local_server("stalling", Some(stall))?;
        let c = base_config(&url, 1000.0, 16, 2, 6 * S)?;
        (self.say)(&format!(
            "(b) periodic stall: server frozen for 200ms every 1s (f = 20%), {} on 16 connections, 6s\n",
            format_rate(1000.0)
        ));
        let (outcome, res, _) = self.run_measured(&c, None)?;
        let from = outcome.start_ns + c.warmup_ns;
        let to = from + c.duration_ns;
        let base = res.main.service_time.at(50.0).unwrap_or(0);
        let mut truth = StallTruth::periodic(0, 1, 0, from, to, base);
        // The server's real windows over the measured span: exact whatever the phase.
        truth.stalls = server.stall_windows_between(from, to);
        server.shutdown();
        (self.say)(&format!(
            "    truth from the server's {} stall windows over the measured {}: {:.1}% of intended sends stalled\n",
            truth.stalls.len(),
            format_ns(c.duration_ns as f64),
            100.0 * truth.stalled_fraction()
        ));
        Ok(self.judge("periodic stall", &truth, &res, &c))
    }

    /// (c) SIGSTOP of a server process for 1 s in a 5 s run.
    fn pause(&mut self) -> Result<bool, CalibrateError<R::Error>> {
        let command = self.runner.child_server().map_err(CalibrateError::Run)?;
        let server = ChildServer::start(command)?;
        let pid = server.child.id() as i32;
        let spec = PauseSpec::from_flags(pid, "1500ms", "1s")?;
        let c = base_config(&server.url, 1000.0, 16, 2, 5 * S)?;
        (self.say)(&format!(
            "(c) SIGSTOP pause: `candor serve` (pid {pid}) stopped 1.5s into a 5s run for 1s, {} on 16 connections\n",
            format_rate(1000.0)
        ));
        let pauser = Pauser::new(spec);
        let (outcome, res, window) = self.run_measured(&c, Some(&pauser))?;
        drop(server);
        let Some((stop, cont)) = window else {
            (self.say)("    the pause did not happen  FAIL\n");
            return Ok(false);
        };
        let from = outcome.start_ns + c.warmup_ns;
        let to = from + c.duration_ns;
        let base = res.main.service_time.at(50.0).unwrap_or(0);
        let truth = pause_truth((stop, cont), from, to, base);
        (self.say)(&format!(
            "    process stopped at {:.3}s for {} (SIGSTOP..SIGCONT on CLOCK_MONOTONIC): {:.1}% of intended sends in it\n",
            (stop - outcome.start_ns) as f64 / 1e9,
            format_ns((cont - stop) as f64),
            100.0 * truth.stalled_fraction()
        ));
        Ok(self.judge("SIGSTOP pause", &truth, &res, &c))
    }
}

/// A server child process (the pause needs a separate process to stop); ended when dropped.
struct ChildServer {
    child: Child,
    url: String,
}

impl ChildServer {
    fn start<E>(mut command: Command) -> Result<ChildServer, CalibrateError<E>> {
        let failed =
            |what: &str, e: std::io::Error| CalibrateError::ChildServer(format!("{what}: {e}"));
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| failed("starting candor serve", e))?;
        let mut line = String::new();
        let read = match child.stdout.take() {
            Some(stdout) => BufReader::new(stdout)
                .read_line(&mut line)
                .map_err(|e| failed("reading the serve banner", e)),
            None => Err(CalibrateError::ChildServer("serve stdout".into())),
        };
        let url = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .map(|w| w.trim_end_matches([',', ')']).to_string());
        let server = ChildServer {
            child,
            url: url.unwrap_or_default(),
        };
        read?;
        if server.url.is_empty() {
            // Dropping it ends the child.
            return Err(CalibrateError::ChildServer(format!(
                "candor serve printed no address: {line:?}"
            )));
        }
        Ok(server)
    }
}

impl Drop for ChildServer {
    fn drop(&mut self) {
        // SIGCONT first in case anything left it stopped, then end the child we started.
        // SAFETY: signalling our own child by its pid.
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGCONT);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candor_core::new_histogram;

    const US: u64 = 1_000;

    /// A summary of `n` samples of `value_ns`.
    fn flat(value_ns: u64, n: u64) -> Summary {
        let mut h = new_histogram();
        h.record_n(value_ns, n).unwrap();
        Summary::of(&h)
    }

    fn all_completed(n: u64) -> RequestCounts {
        RequestCounts {
            intended: n,
            completed: n,
            ..RequestCounts::default()
        }
    }

    #[test]
    fn checks_and_sabotage_parse_strictly() {
        type E = CalibrateError<String>;
        assert_eq!(
            Check::parse_list::<String>("pause, tester").unwrap(),
            [Check::Tester, Check::Pause],
            "run in the canonical order"
        );
        let e: E = Check::parse_list::<String>("tester,speed").unwrap_err();
        assert_eq!(
            e.to_string(),
            "--only: unknown check 'speed' (tester, stall, pause)"
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
    fn an_idle_floor_passes_every_bound_and_each_fault_fails_its_own() {
        let (rt, st, lag) = (
            flat(60 * US, 6_000),
            flat(50 * US, 6_000),
            flat(5 * US, 6_000),
        );
        let counts = all_completed(6_000);
        let floor = Measured {
            response_time: &rt,
            service_time: &st,
            send_lag: &lag,
            requests: &counts,
        };
        let bounds = tester_bounds(&floor);
        assert!(bounds.iter().all(|b| b.pass), "{}", render_bounds(&bounds));
        let failing = |f: &Measured<'_>| -> Vec<&'static str> {
            tester_bounds(f)
                .into_iter()
                .filter(|b| !b.pass)
                .map(|b| b.what)
                .collect()
        };
        // Sends 2 ms late: the lag and the response - service gap both show it.
        let (late_rt, late_lag) = (flat(2_050 * US, 6_000), flat(2_000 * US, 6_000));
        let late = Measured {
            response_time: &late_rt,
            send_lag: &late_lag,
            ..floor
        };
        assert_eq!(
            failing(&late),
            [
                "send lag p50",
                "send lag p99",
                "response - service, p50",
                "response - service, p99"
            ]
        );
        // 1% of the sends late by candor's own fault.
        let behind = RequestCounts {
            generator_late: 60,
            ..counts
        };
        assert_eq!(
            failing(&Measured {
                requests: &behind,
                ..floor
            }),
            ["sent >1ms late by candor"]
        );
        // One request that never completed.
        let lost = RequestCounts {
            completed: 5_999,
            in_flight_at_end: 1,
            ..counts
        };
        assert_eq!(
            failing(&Measured {
                requests: &lost,
                ..floor
            }),
            ["accounting"]
        );
        assert!(render_bounds(&tester_bounds(&late)).contains("FAIL"));
    }

    /// Response times an honest open loop records at 1 kHz against `truth`, each stalled one
    /// plus `extra(wait)`.
    fn honest(truth: &StallTruth, extra: impl Fn(u64) -> u64) -> Summary {
        let mut h = new_histogram();
        for t in (truth.from_ns..truth.to_ns).step_by(MS as usize) {
            let wait = truth
                .stalls
                .iter()
                .find(|&&(s, e)| t >= s && t < e)
                .map_or(0, |&(_, e)| e - t);
            let late = if wait > 0 { extra(wait) } else { 0 };
            h.record(truth.base_ns + wait + late).unwrap();
        }
        Summary::of(&h)
    }

    #[test]
    fn a_stall_is_judged_by_its_truth_table_the_service_time_and_the_books() {
        // The periodic-stall check: 200 ms every 1 s over 6 s, 1,000/s on 16 connections.
        let truth = StallTruth::periodic(0, S, 200 * MS, 0, 6 * S, 50 * US);
        let mut config = base_config("http://127.0.0.1:9/", 1000.0, 16, 2, 6 * S).unwrap();
        let (rt, st, lag) = (
            honest(&truth, |_| 0),
            flat(50 * US, 6_000),
            flat(5 * US, 6_000),
        );
        let counts = all_completed(6_000);
        let m = Measured {
            response_time: &rt,
            service_time: &st,
            send_lag: &lag,
            requests: &counts,
        };
        let j = judge_stall(&truth, &m, &config);
        assert!(j.pass, "{}", j.table);
        assert!(
            j.table.lines().all(|l| l.starts_with("    ")),
            "indented under the check"
        );
        // A closed loop records only the fast answers: the stalled rows fail.
        let blind = flat(50 * US, 6_000);
        let j = judge_stall(
            &truth,
            &Measured {
                response_time: &blind,
                ..m
            },
            &config,
        );
        assert!(!j.pass && j.table.contains("FAIL") && j.service_ok && j.accounting.0);
        // Slow service (the server, not the stall) fails its own line.
        let slow = flat(6 * MS, 6_000);
        let j = judge_stall(
            &truth,
            &Measured {
                service_time: &slow,
                ..m
            },
            &config,
        );
        assert!(!j.pass && !j.service_ok);
        // A lost request fails the books whatever the percentiles say.
        let lost = RequestCounts {
            completed: 5_999,
            in_flight_at_end: 1,
            ..counts
        };
        let j = judge_stall(
            &truth,
            &Measured {
                requests: &lost,
                ..m
            },
            &config,
        );
        assert!(!j.pass && !j.accounting.0);
        // Rounds of 4 ms: the backlog after each stall leaves 16 at a time, and an honest
        // measurement shows it; the allowance follows the configured rate, none without one.
        let round = flat(4 * MS, 6_000);
        let drain = Drain {
            rate_per_s: 1000.0,
            connections: 16,
            round_ns: round.at(90.0).unwrap() as f64,
        };
        let drained = honest(&truth, |wait| {
            drain.allowance_ns(200.0 * MS as f64, wait as f64) as u64
        });
        let m = Measured {
            response_time: &drained,
            service_time: &round,
            ..m
        };
        let j = judge_stall(&truth, &m, &config);
        assert!(j.pass, "{}", j.table);
        config.rate = None;
        assert!(!judge_stall(&truth, &m, &config).pass);
    }

    #[test]
    fn the_verdict_names_the_failed_checks() {
        let pass = Verdict {
            checks: vec![(Check::Tester, true), (Check::Pause, true)],
            seconds: 9.4,
        };
        assert!(pass.pass());
        assert_eq!(
            pass.render(),
            "RESULT: PASS (2 of 2 checks, 9s). candor's numbers on this machine match the known truth.\n"
        );
        let fail = Verdict {
            checks: vec![(Check::Tester, true), (Check::Stall, false)],
            seconds: 12.0,
        };
        assert!(!fail.pass());
        assert!(fail
            .render()
            .starts_with("RESULT: FAIL (periodic stall; 12s)."));
    }
}
