//! Truth tables: a measured distribution set against the prediction for known stall windows,
//! row by row, with the tolerance policy that decides pass or fail (see docs/truth-tools.md).

use crate::stall::{StallTruth, Statistic, TRUTH_ROWS};
use candor_core::units::format_ns;
use candor_core::Summary;

/// One row of predicted versus measured.
#[derive(Debug, Clone)]
pub struct TruthRow {
    pub label: &'static str,
    pub predicted_ns: f64,
    pub measured_ns: f64,
    /// Allowed |measured − predicted|; for rows in the unstalled body only an upper bound.
    pub tolerance_ns: f64,
    /// The prediction is the plain service time (the row is below 1 − f).
    pub body: bool,
    /// Extra allowance above the prediction for the drain after a stall (see [`Drain`]); the
    /// stall-only prediction leaves it out, and it only ever makes a measurement read higher.
    pub drain_ns: f64,
}

/// How the backlog of a stall leaves once the stall ends. Requests intended during a stall of
/// length `S` queue up (`rate · S` of them) and go out `connections` at a time, one round trip
/// (`round_ns`, the run's own service time) apart. The request whose stall-only prediction is `w`
/// was intended `S − w` before the end, so `rate · (S − w)` requests leave ahead of it and it waits
/// `⌈rate · (S − w) / connections⌉` extra rounds. On an idle machine a round is ~0.1 ms and this is
/// noise; on a busy 2-core machine a round can take a millisecond and the p90 of a 1 s stall at
/// 1,000/s on 16 connections sits 31 rounds deep, so ignoring it would fail an honest measurement.
#[derive(Debug, Clone, Copy)]
pub struct Drain {
    pub rate_per_s: f64,
    pub connections: usize,
    pub round_ns: f64,
}

impl Drain {
    /// No drain allowance (unit tests of the stall-only prediction).
    pub const NONE: Drain = Drain {
        rate_per_s: 0.0,
        connections: 1,
        round_ns: 0.0,
    };

    /// Extra wait of a request whose stall-only wait is `predicted_ns` in a stall of `stall_ns`.
    pub fn allowance_ns(&self, stall_ns: f64, predicted_ns: f64) -> f64 {
        let ahead = self.rate_per_s * (stall_ns - predicted_ns).max(0.0) / 1e9;
        (ahead / self.connections.max(1) as f64).ceil() * self.round_ns
    }
}

impl TruthRow {
    pub fn error_ns(&self) -> f64 {
        self.measured_ns - self.predicted_ns
    }

    pub fn pass(&self) -> bool {
        if self.body {
            self.measured_ns <= self.predicted_ns + self.tolerance_ns
        } else {
            let err = self.error_ns();
            -self.tolerance_ns <= err && err <= self.tolerance_ns + self.drain_ns
        }
    }
}

/// Tolerance of a stall prediction: 5 ms plus 2% of the predicted value (see docs/truth-tools.md).
pub fn stall_tolerance_ns(predicted_ns: f64) -> f64 {
    5e6 + 0.02 * predicted_ns
}

/// Predicted versus measured response time for every row of [`TRUTH_ROWS`], each stalled row
/// allowed the `drain` it implies.
pub fn truth_rows(truth: &StallTruth, measured: &Summary, drain: &Drain) -> Vec<TruthRow> {
    let f = truth.stalled_fraction();
    let stall_ns = truth.max() as f64;
    TRUTH_ROWS
        .iter()
        .map(|&(label, statistic)| {
            let predicted = truth.predicted(statistic);
            // Rows within a point of 1 − f sit on the edge of the stalled tail, where the smallest
            // stalled waits (plus the drain after each stall) meet the service time: judged as
            // stall rows, not as service time.
            let body = matches!(statistic, Statistic::Percentile(p) if 1.0 - p / 100.0 > f + 0.01);
            let tolerance = match statistic {
                Statistic::Mean => 3e6 + 0.05 * predicted,
                _ => stall_tolerance_ns(predicted),
            };
            // The mean carries the average drain of the stalled fraction: f · (rounds at S/2).
            let drain_ns = match statistic {
                _ if body => 0.0,
                Statistic::Mean => f * drain.allowance_ns(stall_ns, stall_ns / 2.0),
                _ => drain.allowance_ns(stall_ns, predicted),
            };
            TruthRow {
                label,
                predicted_ns: predicted,
                measured_ns: statistic.of(measured),
                tolerance_ns: tolerance,
                body,
                drain_ns,
            }
        })
        .collect()
}

/// The table, with a pass/fail column when `judge` is set.
pub fn render_truth(rows: &[TruthRow], judge: bool) -> String {
    let mut out = format!(
        "  {:<8} {:>12} {:>12} {:>11} {:>12}{}\n",
        "",
        "predicted",
        "measured",
        "error",
        "tolerance",
        if judge { "  result" } else { "" }
    );
    for r in rows {
        let err = r.error_ns();
        let tol = if r.body {
            format!("<= +{}", format_ns(r.tolerance_ns))
        } else if r.drain_ns > 0.0 {
            format!(
                "-{}..+{}",
                format_ns(r.tolerance_ns),
                format_ns(r.tolerance_ns + r.drain_ns)
            )
        } else {
            format!("±{}", format_ns(r.tolerance_ns))
        };
        let sign = if err < 0.0 { "-" } else { "+" };
        let result = match (judge, r.pass()) {
            (false, _) => "",
            (true, true) => "  pass",
            (true, false) => "  FAIL",
        };
        out.push_str(&format!(
            "  {:<8} {:>12} {:>12} {:>11} {:>12}{}\n",
            r.label,
            format_ns(r.predicted_ns),
            format_ns(r.measured_ns),
            format!("{sign}{}", format_ns(err.abs())),
            tol,
            result
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use candor_core::new_histogram;

    const MS: u64 = 1_000_000;

    /// Response times an honest measurement records at 1 kHz against the truth's windows, each
    /// plus `extra(wait)`.
    fn sampled_with(truth: &StallTruth, extra: impl Fn(u64) -> u64) -> Summary {
        let mut h = new_histogram();
        let mut t = truth.from_ns;
        while t < truth.to_ns {
            let wait = truth
                .stalls
                .iter()
                .find(|&&(s, e)| t >= s && t < e)
                .map_or(0, |&(_, e)| e - t);
            h.record(truth.base_ns + wait + extra(wait)).unwrap();
            t += MS;
        }
        Summary::of(&h)
    }

    fn sampled(truth: &StallTruth, extra_ns: u64) -> Summary {
        sampled_with(truth, |_| extra_ns)
    }

    #[test]
    fn an_honest_measurement_passes_every_row_and_a_blind_one_fails() {
        let truth = StallTruth::periodic(0, 1_000 * MS, 200 * MS, 0, 6_000 * MS, 30_000);
        let rows = truth_rows(&truth, &sampled(&truth, 0), &Drain::NONE);
        assert_eq!(rows.len(), TRUTH_ROWS.len());
        assert!(
            rows.iter().all(TruthRow::pass),
            "{}",
            render_truth(&rows, true)
        );
        assert!(
            rows[0].body && rows[1].body && !rows[2].body,
            "p50/p75 body, p90 stalled"
        );
        // Adding the drain-sized 2 ms everywhere still passes; 20 ms does not.
        assert!(truth_rows(&truth, &sampled(&truth, 2 * MS), &Drain::NONE)
            .iter()
            .all(TruthRow::pass));
        assert!(!truth_rows(&truth, &sampled(&truth, 20 * MS), &Drain::NONE)
            .iter()
            .all(TruthRow::pass));
        // A closed loop sees only the base: p90 and above fail.
        let mut blind = new_histogram();
        blind.record_n(30_000, 6_000).unwrap();
        let rows = truth_rows(&truth, &Summary::of(&blind), &Drain::NONE);
        assert!(!rows[2].pass() && !rows[3].pass());
        assert!(render_truth(&rows, true).contains("FAIL"));
    }

    #[test]
    fn the_drain_allowance_counts_the_rounds_ahead_and_only_widens_upwards() {
        // 1,000/s on 16 connections, 1 ms rounds, a 1 s stall: the request predicted at 500 ms
        // has 500 requests ahead of it, ⌈500/16⌉ = 32 rounds.
        let drain = Drain {
            rate_per_s: 1000.0,
            connections: 16,
            round_ns: MS as f64,
        };
        assert_eq!(drain.allowance_ns(1e9, 5e8), 32.0 * MS as f64);
        assert_eq!(drain.allowance_ns(1e9, 1e9), 0.0, "the first in the queue");
        let truth = StallTruth::periodic(0, 1_000 * MS, 200 * MS, 0, 6_000 * MS, 30_000);
        // Drained measurements (every stalled request late by its rounds) pass with the model...
        let drained = sampled_with(&truth, |wait| {
            if wait > 0 {
                drain.allowance_ns(200.0 * MS as f64, wait as f64) as u64
            } else {
                0
            }
        });
        assert!(!truth_rows(&truth, &drained, &Drain::NONE)
            .iter()
            .all(TruthRow::pass));
        let rows = truth_rows(&truth, &drained, &drain);
        assert!(
            rows.iter().all(TruthRow::pass),
            "{}",
            render_truth(&rows, true)
        );
        // ...and a blind (closed-loop) measurement still fails: the allowance is only upwards.
        let mut blind = new_histogram();
        blind.record_n(30_000, 6_000).unwrap();
        let rows = truth_rows(&truth, &Summary::of(&blind), &drain);
        assert!(!rows[2].pass() && !rows[3].pass());
    }
}
