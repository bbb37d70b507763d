//! `candor calibrate`: the tool checks itself on this machine against servers whose answer is
//! known in advance: (a) an instant server (the generator's own floor), (b) a periodically
//! stalling server and (c) a server process paused with SIGSTOP, each compared with the truth.
//!
//! `CANDOR_CALIBRATE_SABOTAGE` (deliberately undocumented in `--help`) breaks the generator on
//! purpose so that the check itself can be checked: `closed-loop` sends like wrk (each connection
//! waits for its answer), `actual-send` times requests from the actual write instead of the
//! intended send time. Either must make calibration fail.

use crate::cmd::pause::{render_truth, truth_rows, Drain, PauseSpec, PauseWindow, Pauser};
use crate::cmd::run::execute_with;
use anyhow::{bail, Context, Result};
use candor_core::results::{PhaseResults, RunResults};
use candor_core::truth::StallTruth;
use candor_core::units::{format_count, format_ns, format_rate};
use candor_load::{LoadConfig, Target};
use clap::Args;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

#[derive(Args, Debug)]
pub struct CalibrateArgs {
    /// Only run these checks (comma-separated: tester, stall, pause).
    #[arg(long, value_name = "LIST", default_value = "tester,stall,pause")]
    pub only: String,
}

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;

#[derive(Clone, Copy, PartialEq)]
enum Sabotage {
    None,
    ClosedLoop,
    ActualSend,
}

fn sabotage() -> Result<Sabotage> {
    match std::env::var("CANDOR_CALIBRATE_SABOTAGE").as_deref() {
        Err(_) | Ok("") => Ok(Sabotage::None),
        Ok("closed-loop") => Ok(Sabotage::ClosedLoop),
        Ok("actual-send") => Ok(Sabotage::ActualSend),
        Ok(other) => {
            bail!("CANDOR_CALIBRATE_SABOTAGE={other}: expected closed-loop or actual-send")
        }
    }
}

/// One bound check of the tester run.
struct Bound {
    what: &'static str,
    limit: String,
    measured: String,
    pass: bool,
}

fn run_measured(
    config: &LoadConfig,
    sab: Sabotage,
    pauser: Option<&std::sync::Arc<Pauser>>,
) -> Result<(candor_load::RunOutcome, RunResults, PauseWindow)> {
    let mut c = config.clone();
    if sab == Sabotage::ClosedLoop {
        c.rate = None;
    }
    let outcome = execute_with(&c, false, pauser.map(|p| p.hook()));
    let window = match pauser {
        Some(p) => p.finish()?,
        None => None,
    };
    let outcome = outcome?;
    crate::cmd::interrupt::check("calibration")?;
    let mut results = outcome.to_results(&c, vec![], crate::cmd::run::recorded_config(&c));
    if sab == Sabotage::ActualSend {
        // What a tool that starts its clock at the actual write would report.
        results.main.response_time = results.main.service_time.clone();
    }
    Ok((outcome, results, window))
}

fn base_config(url: &str, rate: f64, conns: usize, threads: usize, dur: u64) -> Result<LoadConfig> {
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

fn accounting_ok(p: &PhaseResults) -> (bool, String) {
    let r = &p.requests;
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

/// (a) Against an instant server: is the generator's own floor within bounds?
fn tester(sab: Sabotage) -> Result<bool> {
    let mut serve = candor_serve::ServeConfig::new("127.0.0.1:0".parse()?);
    serve.threads = 1;
    let server = candor_serve::start(serve).context("starting the instant server")?;
    let url = format!("http://{}/", server.local_addr());
    let mut c = base_config(&url, 2000.0, 8, 1, 3 * S)?;
    c.warmup_ns = 500 * MS;
    println!(
        "(a) test the tester: instant server at {url}, {} on 8 connections, 1 thread, 3s after 0.5s warm-up",
        format_rate(2000.0)
    );
    let (_, res, _) = run_measured(&c, sab, None)?;
    server.shutdown();
    let m = &res.main;
    let at = |s: &candor_core::Summary, p: f64| s.at(p).unwrap_or(0) as f64;
    let (acc_ok, acc) = accounting_ok(m);
    let gap50 = at(&m.response_time, 50.0) - at(&m.service_time, 50.0);
    let gap99 = at(&m.response_time, 99.0) - at(&m.service_time, 99.0);
    let late_share = m.requests.generator_late as f64 / m.requests.intended.max(1) as f64;
    let bounds = [
        Bound {
            what: "send lag p50",
            limit: "< 50us".into(),
            measured: format_ns(at(&m.send_lag, 50.0)),
            pass: at(&m.send_lag, 50.0) < 50e3,
        },
        Bound {
            what: "send lag p99",
            limit: "< 1ms".into(),
            measured: format_ns(at(&m.send_lag, 99.0)),
            pass: at(&m.send_lag, 99.0) < 1e6,
        },
        Bound {
            what: "response - service, p50",
            limit: "< 100us".into(),
            measured: format_ns(gap50),
            pass: gap50 < 100e3,
        },
        Bound {
            what: "response - service, p99",
            limit: "< 1ms".into(),
            measured: format_ns(gap99),
            pass: gap99 < 1e6,
        },
        Bound {
            what: "response time p99",
            limit: "< 5ms".into(),
            measured: format_ns(at(&m.response_time, 99.0)),
            pass: at(&m.response_time, 99.0) < 5e6,
        },
        Bound {
            what: "sent >1ms late by candor",
            // One scheduler hiccup of a few ms per second delays ~6 of 2,000 sends (0.3%); more
            // than that means candor is systematically short of CPU.
            limit: "< 0.5%".into(),
            measured: format!("{:.3}%", 100.0 * late_share),
            pass: late_share < 0.005,
        },
        Bound {
            what: "accounting",
            limit: "all completed".into(),
            measured: acc,
            pass: acc_ok,
        },
    ];
    println!(
        "    floor: response time p50 {} p99 {} max {}; service time p50 {} p99 {}",
        format_ns(at(&m.response_time, 50.0)),
        format_ns(at(&m.response_time, 99.0)),
        format_ns(m.response_time.max_ns as f64),
        format_ns(at(&m.service_time, 50.0)),
        format_ns(at(&m.service_time, 99.0)),
    );
    println!(
        "    {:<28} {:>14} {:>44}  result",
        "check", "bound", "measured"
    );
    let mut ok = true;
    for b in &bounds {
        ok &= b.pass;
        println!(
            "    {:<28} {:>14} {:>44}  {}",
            b.what,
            b.limit,
            b.measured,
            if b.pass { "pass" } else { "FAIL" }
        );
    }
    if !ok {
        println!(
            "    => FAIL: candor's own overhead is not small against a server that does nothing. Its numbers\n       \
             would partly measure candor itself: the machine is busy (other processes, CPU frequency scaling,\n       \
             a VM's stolen time), or pacing is broken. Re-run on a quieter machine before trusting results."
        );
    }
    Ok(ok)
}

fn judge_truth(title: &str, truth: &StallTruth, res: &RunResults, config: &LoadConfig) -> bool {
    // The configured rate, also under the closed-loop sabotage: the allowance only widens upwards,
    // so it cannot make a blind measurement pass.
    let drain = Drain {
        rate_per_s: config.rate.unwrap_or(0.0),
        connections: config.connections,
        round_ns: res.main.service_time.at(90.0).unwrap_or(0) as f64,
    };
    let rows = truth_rows(truth, &res.main.response_time, &drain);
    print!("{}", indent(&render_truth(&rows, true)));
    let mut ok = rows.iter().all(|r| r.pass());
    let serv90 = res.main.service_time.at(90.0).unwrap_or(0) as f64;
    let serv_ok = serv90 < 5e6;
    println!(
        "    service time p90 {} (< 5ms: only requests already in flight see a stall)  {}",
        format_ns(serv90),
        if serv_ok { "pass" } else { "FAIL" }
    );
    let (acc_ok, acc) = accounting_ok(&res.main);
    println!(
        "    accounting: {acc}  {}",
        if acc_ok { "pass" } else { "FAIL" }
    );
    ok &= serv_ok && acc_ok;
    if !ok {
        println!(
            "    => FAIL ({title}): the measured response times do not match the distribution that the stall\n       \
             windows alone predict. A tool that reads low here under-reports stalls (coordinated omission:\n       \
             it stopped sending or timed from the actual send); one that reads high is adding its own delay."
        );
    }
    ok
}

fn indent(s: &str) -> String {
    s.lines().map(|l| format!("  {l}\n")).collect()
}

/// (b) A periodically stalling server: predicted versus measured.
fn stall(sab: Sabotage) -> Result<bool> {
    let (every, for_) = (S, 200 * MS);
    let mut serve = candor_serve::ServeConfig::new("127.0.0.1:0".parse()?);
    serve.threads = 1;
    serve.stall = Some(candor_serve::Stall {
        every_ns: every,
        for_ns: for_,
    });
    let server = candor_serve::start(serve).context("starting the stalling server")?;
    let url = format!("http://{}/", server.local_addr());
    let c = base_config(&url, 1000.0, 16, 2, 6 * S)?;
    println!(
        "(b) periodic stall: server frozen for 200ms every 1s (f = 20%), {} on 16 connections, 6s",
        format_rate(1000.0)
    );
    let (outcome, res, _) = run_measured(&c, sab, None)?;
    let from = outcome.start_ns + c.warmup_ns;
    let to = from + c.duration_ns;
    let base = res.main.service_time.at(50.0).unwrap_or(0);
    let mut truth = StallTruth::periodic(0, 1, 0, from, to, base);
    // The server's real windows over the measured span: exact whatever the phase.
    truth.stalls = server.stall_windows_between(from, to);
    server.shutdown();
    println!(
        "    truth from the server's {} stall windows over the measured {}: {:.1}% of intended sends stalled",
        truth.stalls.len(),
        format_ns(c.duration_ns as f64),
        100.0 * truth.stalled_fraction()
    );
    Ok(judge_truth("periodic stall", &truth, &res, &c))
}

/// A `candor serve` child process (the pause needs a separate process to stop).
struct ChildServer {
    child: Child,
    url: String,
}

impl ChildServer {
    fn start() -> Result<ChildServer> {
        let exe = std::env::current_exe().context("finding the candor executable")?;
        let mut child = Command::new(exe)
            .args(["serve", "--listen", "127.0.0.1:0", "--threads", "1"])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("starting candor serve")?;
        let mut line = String::new();
        let stdout = child.stdout.take().context("serve stdout")?;
        BufReader::new(stdout)
            .read_line(&mut line)
            .context("reading the serve banner")?;
        let url = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .map(|w| w.trim_end_matches([',', ')']).to_string());
        match url {
            Some(url) => Ok(ChildServer { child, url }),
            None => {
                let _ = child.kill();
                let _ = child.wait();
                bail!("candor serve printed no address: {line:?}")
            }
        }
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

/// (c) SIGSTOP of a server process for 1 s in a 5 s run.
fn pause(sab: Sabotage) -> Result<bool> {
    let server = ChildServer::start()?;
    let pid = server.child.id() as i32;
    let spec = PauseSpec::from_flags(pid, "1500ms", "1s")?;
    let c = base_config(&server.url, 1000.0, 16, 2, 5 * S)?;
    println!(
        "(c) SIGSTOP pause: `candor serve` (pid {pid}) stopped 1.5s into a 5s run for 1s, {} on 16 connections",
        format_rate(1000.0)
    );
    let pauser = Pauser::new(spec);
    let (outcome, res, window) = run_measured(&c, sab, Some(&pauser))?;
    drop(server);
    let Some((stop, cont)) = window else {
        println!("    the pause did not happen  FAIL");
        return Ok(false);
    };
    let from = outcome.start_ns + c.warmup_ns;
    let to = from + c.duration_ns;
    let base = res.main.service_time.at(50.0).unwrap_or(0);
    let mut truth = StallTruth::periodic(0, 1, 0, from, to, base);
    truth.stalls = vec![(stop, cont)];
    println!(
        "    process stopped at {:.3}s for {} (SIGSTOP..SIGCONT on CLOCK_MONOTONIC): {:.1}% of intended sends in it",
        (stop - outcome.start_ns) as f64 / 1e9,
        format_ns((cont - stop) as f64),
        100.0 * truth.stalled_fraction()
    );
    Ok(judge_truth("SIGSTOP pause", &truth, &res, &c))
}

pub fn main(args: CalibrateArgs) -> Result<i32> {
    let sab = sabotage()?;
    let wanted: Vec<&str> = args.only.split(',').map(str::trim).collect();
    for w in &wanted {
        if !["tester", "stall", "pause"].contains(w) {
            bail!("--only: unknown check '{w}' (tester, stall, pause)");
        }
    }
    println!("candor calibrate: checking candor against servers whose answer is known in advance (~20 s)");
    if sab != Sabotage::None {
        println!("SABOTAGED on purpose by CANDOR_CALIBRATE_SABOTAGE: this run must FAIL");
    }
    println!();
    let started = std::time::Instant::now();
    let mut results = Vec::new();
    if wanted.contains(&"tester") {
        results.push(("test the tester", tester(sab)?));
        println!();
    }
    if wanted.contains(&"stall") {
        results.push(("periodic stall", stall(sab)?));
        println!();
    }
    if wanted.contains(&"pause") {
        results.push(("SIGSTOP pause", pause(sab)?));
        println!();
    }
    let failed: Vec<&str> = results.iter().filter(|r| !r.1).map(|r| r.0).collect();
    let secs = started.elapsed().as_secs_f64();
    if failed.is_empty() {
        println!(
            "RESULT: PASS ({} of {} checks, {secs:.0}s). candor's numbers on this machine match the known truth.",
            results.len(),
            results.len()
        );
        Ok(0)
    } else {
        println!(
            "RESULT: FAIL ({}; {secs:.0}s). Do not trust latency figures from this machine/build until this passes:\n\
             see the explanation under each failed check, and docs/truth-tools.md.",
            failed.join(", ")
        );
        Ok(3)
    }
}
