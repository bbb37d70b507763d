//! The calibration runs: an instant server, a stalling server, a paused server process and a
//! stalling LLM server, each loaded through the caller's [`Runner`] and judged by
//! [`super::judge`].

use super::checks::{base_config, CalibrateError, CalibrationOutcome, Check, Runner, Sabotage};
use super::judge::{at, judge_llm, judge_stall, pass_word, render_bounds, tester_bounds, Measured};
use crate::pause::{pause_truth, PauseSpec, PauseWindow, Pauser};
use crate::stall::StallTruth;
use candor_core::results::RunResults;
use candor_core::units::{format_ns, format_rate};
use candor_load::{LoadConfig, LoadConfigError, LoadShape, RunOutcome, RunPlan};
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;

/// Runs `checks` in order, telling `say` what it does as it goes; the verdict of each.
pub fn calibrate<R: Runner>(
    checks: &[Check],
    sabotage: Sabotage,
    runner: &mut R,
    say: &mut dyn FnMut(&str),
) -> Result<CalibrationOutcome, CalibrateError<R::Error>> {
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
            Check::Llm => calibration.llm()?,
        };
        verdict.push((check, pass));
        (calibration.say)("\n");
    }
    Ok(CalibrationOutcome {
        checks: verdict,
        seconds: started.elapsed().as_secs_f64(),
    })
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
        config: &RunPlan,
        pauser: Option<&Arc<Pauser>>,
    ) -> Result<(RunOutcome, RunResults, PauseWindow), CalibrateError<R::Error>> {
        let mut c = config.clone();
        if self.sabotage == Sabotage::ClosedLoop {
            c.shape = LoadShape::ClosedLoop;
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
            if let Some(sent) = results.main.ttft_service.clone() {
                results.main.ttft = Some(sent);
            }
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

    /// (d) An OpenAI-compatible streaming server (`serve --llm`) whose first token is due 20 ms
    /// after it reads a request, stalling 200 ms every second: time to first token from the
    /// intended send against `T + W(t + T)` (docs/truth.md, "LLM time to first token").
    fn llm(&mut self) -> Result<bool, CalibrateError<R::Error>> {
        const TTFT: u64 = 20 * MS;
        const ITL: u64 = 2 * MS;
        const TOKENS: u32 = 4;
        let stall = candor_serve::Stall {
            every_ns: S,
            for_ns: 200 * MS,
        };
        let mut serve = candor_serve::llm::LlmConfig::new(SocketAddr::from(([127, 0, 0, 1], 0)));
        serve.ttft_ns = TTFT;
        serve.itl_ns = ITL;
        serve.output_tokens = TOKENS;
        serve.stall = Some(stall);
        let server = candor_serve::llm::start(serve).map_err(CalibrateError::LlmServe)?;
        let url = format!("http://{}/", server.local_addr());
        // Connections enough that no request waits for one: a stall holds the 20 streams due
        // in it and the 3 or so running; 64 leave room twice over. (A higher rate releases a
        // larger burst at each stall's end, which the top rows would read as the server's.)
        let mut c = base_config(&url, 100.0, 64, 1, 6 * S)?;
        c.use_synthetic_chat(16, TOKENS.into(), 16)
            .map_err(|e| LoadConfigError::Invalid(e.to_string()))?;
        if self.sabotage == Sabotage::ActualSend {
            // As the Python LLM benchmarks send: a small pool (4 here, where a stall holds 20
            // requests, as 10 are where it holds 50), timed from the actual send.
            c.connections = 4;
        }
        c.validate()?;
        (self.say)(&format!(
            "(d) LLM time to first token: `serve --llm` at {url} (first token 20ms after the request, a token every\n    \
             2ms, 4 tokens), frozen for 200ms every 1s (f = 20%), {} on {} connections, 6s\n",
            format_rate(100.0),
            c.connections
        ));
        let (outcome, res, _) = self.run_measured(&c, None)?;
        // A request intended at t is read at t; its first token is due at t + T and waits out a
        // stall it falls in.
        let from = outcome.start_ns + c.warmup_ns + TTFT;
        let to = from + c.duration_ns;
        // As in the stall check, the base is the measured TTFT from the actual send at p50 (the
        // server's T plus the loopback and both sides' parsing), most of which no stall touched.
        let base = res
            .main
            .ttft_service
            .as_ref()
            .and_then(|s| s.at(50.0))
            .unwrap_or(TTFT);
        let mut truth = StallTruth::periodic(0, 1, 0, from, to, base);
        truth.stalls = stall.windows_between(server.started_at_ns(), from, to);
        server.shutdown();
        (self.say)(&format!(
            "    truth: T + W(t + T) from the server's {} stall windows: {:.1}% of first tokens stalled\n",
            truth.stalls.len(),
            100.0 * truth.stalled_fraction()
        ));
        let empty = candor_core::Summary::of(&candor_core::new_histogram());
        let ttft = res.main.ttft.as_ref().unwrap_or(&empty);
        let stream_ns = (TTFT + ITL * u64::from(TOKENS - 1)) as f64;
        let j = judge_llm(&truth, ttft, &res.main.requests, &c, stream_ns);
        (self.say)(&j.table);
        (self.say)(&format!(
            "    accounting: {}  {}\n",
            j.accounting.1,
            pass_word(j.accounting.0)
        ));
        if !j.pass {
            (self.say)(
                "    => FAIL (LLM time to first token): the measured TTFT does not match what the stall windows\n       \
                 predict. A benchmark that reads low here hides the queue (it timed from the actual send, or\n       \
                 waited for a free connection before sending); one that reads high adds its own delay.\n",
            );
        }
        Ok(j.pass)
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
