//! The decisions of a calibration, pure: the tester's bounds and the judgements of a stall and of
//! an LLM server's time to first token.

use crate::stall::StallTruth;
use crate::table::{render_truth, truth_rows, Drain};
use candor_core::results::{PhaseResults, RequestCounts};
use candor_core::units::{format_count, format_ns};
use candor_core::Summary;
use candor_load::LoadConfig;

/// One bound check of the tester run.
#[derive(Debug, Clone)]
pub struct Bound {
    pub what: &'static str,
    pub limit: &'static str,
    pub measured: String,
    pub pass: bool,
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

pub(crate) fn at(s: &Summary, p: f64) -> f64 {
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
        rate_per_s: config.shape.rate_per_s().unwrap_or(0.0),
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

/// An LLM check's judgement: the truth table of its time to first token and its books.
pub struct LlmJudgement {
    pub table: String,
    pub accounting: (bool, String),
    pub pass: bool,
}

/// Judges the time to first token from the intended send (`ttft`) of an LLM run of `config`
/// against `truth` (`T + W(t + T)`); the stall's backlog is allowed the streams it waits behind,
/// each `stream_ns` long.
pub fn judge_llm(
    truth: &StallTruth,
    ttft: &Summary,
    requests: &RequestCounts,
    config: &LoadConfig,
    stream_ns: f64,
) -> LlmJudgement {
    let drain = Drain {
        rate_per_s: config.shape.rate_per_s().unwrap_or(0.0),
        connections: config.connections,
        round_ns: stream_ns,
    };
    let mut rows = truth_rows(truth, ttft, &drain);
    // At R requests/s the stalled waits lie 1/R apart, not on the continuous formula: a stalled
    // percentile may read up to 1/R off it (10 ms at 100/s; the stall check's 1,000/s makes this
    // 1 ms, within its tolerance).
    let step_ns = match config.shape.rate_per_s() {
        Some(r) if r > 0.0 => 1e9 / r,
        _ => 0.0,
    };
    for r in rows.iter_mut().filter(|r| !r.body && r.label != "mean") {
        r.tolerance_ns += step_ns;
    }
    let table: String = render_truth(&rows, true)
        .lines()
        .map(|l| format!("  {l}\n"))
        .collect();
    let accounting = accounting(requests);
    let pass = ttft.count > 0 && rows.iter().all(|r| r.pass()) && accounting.0;
    LlmJudgement {
        table,
        accounting,
        pass,
    }
}

pub(crate) fn pass_word(pass: bool) -> &'static str {
    if pass {
        "pass"
    } else {
        "FAIL"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibrate::checks::base_config;
    use candor_core::new_histogram;

    const MS: u64 = 1_000_000;
    const S: u64 = 1_000_000_000;
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
    fn an_llm_ttft_that_follows_the_truth_passes_and_one_that_hides_the_stall_fails() {
        // T = 20 ms, a 200 ms stall every second over 10 s: 20% of first tokens wait.
        let truth = StallTruth::periodic(0, S, 200 * MS, 0, 10 * S, 20 * MS);
        let mut true_h = new_histogram();
        for i in 0..10_000 {
            true_h.record(truth.percentile(i as f64 / 100.0)).unwrap();
        }
        let c = base_config("http://127.0.0.1:9/", 100.0, 64, 1, 10 * S).unwrap();
        let counts = all_completed(1_000);
        let honest = judge_llm(&truth, &Summary::of(&true_h), &counts, &c, 26e6);
        assert!(honest.pass, "{}", honest.table);
        // Timed from the actual send over too few connections: the stalled tail is thinner.
        let mut hidden = new_histogram();
        for i in 0..10_000 {
            let p = i as f64 / 100.0;
            let v = if p < 95.0 {
                20 * MS
            } else {
                truth.percentile(p)
            };
            hidden.record(v).unwrap();
        }
        let j = judge_llm(&truth, &Summary::of(&hidden), &counts, &c, 26e6);
        assert!(!j.pass, "{}", j.table);
        // No first token at all is no pass.
        let none = judge_llm(&truth, &Summary::of(&new_histogram()), &counts, &c, 26e6);
        assert!(!none.pass);
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
        config.shape = candor_load::LoadShape::ClosedLoop;
        assert!(!judge_stall(&truth, &m, &config).pass);
    }
}
