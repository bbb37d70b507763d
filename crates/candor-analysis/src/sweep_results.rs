//! Results of a throughput sweep: the same test at several offered rates, one full
//! [`RunResults`] per rate, and the table of response-time percentiles against offered load.

use crate::slo::SloVerdict;
use candor_core::results::{kind_of, read_versioned, Kind, ResultsError, RunResults};
use candor_core::table::{Column, TextTable};
use candor_core::units::{format_count, format_ns, format_rate};
use serde::{Deserialize, Serialize};

/// One rate of a sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepStep {
    pub offered_per_s: f64,
    pub results: RunResults,
    /// SLO verdicts of this step, when the sweep was given `--slo`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slo: Vec<SloVerdict>,
    /// Saturation verdict of this step, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saturation: Option<String>,
}

impl SweepStep {
    /// The step's verdict, one short phrase per finding (never empty): saturation or a missed
    /// rate, then the SLOs when the sweep had any; `ok` when nothing is wrong.
    pub fn verdict(&self) -> Vec<String> {
        let m = &self.results.main;
        let done = crate::saturation::throughput(&self.results).unwrap_or(m.rate.achieved_per_s);
        let mut verdict = Vec::new();
        if self.saturation.is_some() {
            verdict.push("SATURATED".to_string());
        } else if candor_core::thresholds::fell_behind(done, self.offered_per_s) {
            verdict.push("rate not reached".to_string());
        }
        if !self.slo.is_empty() {
            let failed: Vec<&str> = self
                .slo
                .iter()
                .filter(|v| !v.pass)
                .map(|v| v.objective.as_str())
                .collect();
            verdict.push(if failed.is_empty() {
                "SLO met".to_string()
            } else {
                format!("SLO missed: {}", failed.join(","))
            });
        }
        if verdict.is_empty() {
            verdict.push("ok".into());
        }
        verdict
    }
}

/// The JSON file `candor sweep --json` writes and `candor report` reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepResults {
    pub schema_version: u32,
    /// Always [`Kind::Sweep`]: how readers tell this from a single run.
    pub kind: Kind,
    pub candor_version: String,
    pub target: String,
    pub command_line: Vec<String>,
    pub steps: Vec<SweepStep>,
}

/// Percentiles in the table and the chart.
pub const SWEEP_PERCENTILES: [(&str, f64); 5] = [
    ("p50", 50.0),
    ("p90", 90.0),
    ("p99", 99.0),
    ("p99.9", 99.9),
    ("max", 100.0),
];

impl SweepResults {
    /// True when `text` is JSON of a sweep (rather than a single run or a log).
    pub fn detect(text: &str) -> bool {
        text.trim_start().starts_with('{') && kind_of(text) == Some(Kind::Sweep)
    }

    pub fn from_json(text: &str) -> Result<Self, ResultsError> {
        read_versioned(text)
    }

    pub fn to_json_pretty(&self) -> String {
        serde_json::to_string_pretty(self).expect("sweep results always serialize")
    }

    /// The table: offered and achieved rate, response-time percentiles, errors, verdict.
    pub fn table(&self) -> String {
        let mut columns = vec![Column::right(10); 2 + SWEEP_PERCENTILES.len()];
        columns.push(Column::right(9));
        let mut table = TextTable::new(columns);
        let mut head = vec!["offered", "throughput"];
        head.extend(SWEEP_PERCENTILES.iter().map(|(label, _)| *label));
        head.push("failed");
        table.row_with_tail(&head, "verdict");
        for s in &self.steps {
            let m = &s.results.main;
            let done = crate::saturation::throughput(&s.results).unwrap_or(m.rate.achieved_per_s);
            let mut cells = vec![format_rate(s.offered_per_s), format_rate(done)];
            for (_, p) in SWEEP_PERCENTILES {
                cells.push(format_ns(m.response_time.at(p).unwrap_or(0) as f64));
            }
            cells.push(format_count(
                m.requests.failed + m.requests.in_flight_at_end,
            ));
            table.row_with_tail(&cells, &s.verdict().join("; "));
        }
        let mut out = table.finish();
        out.push_str(
            "  (response time from each request's intended send time; throughput = completions per second\n   \
             during the measured window, below the offered rate when the target cannot keep up)\n",
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::run_of;

    #[test]
    fn round_trip_detect_and_table() {
        let steps = [1000.0, 2000.0]
            .iter()
            .map(|&r| SweepStep {
                offered_per_s: r,
                results: run_of(&[1_000, 2_000, 3_000], Some(r), "open-loop"),
                slo: vec![],
                saturation: None,
            })
            .collect();
        let s = SweepResults {
            schema_version: candor_core::results::SCHEMA_VERSION,
            kind: Kind::Sweep,
            candor_version: "t".into(),
            target: "http://x/".into(),
            command_line: vec![],
            steps,
        };
        let text = s.to_json_pretty();
        assert!(SweepResults::detect(&text));
        assert!(!SweepResults::detect(&s.steps[0].results.to_json_pretty()));
        assert!(!SweepResults::detect("#[StartTime: 1"));
        let back = SweepResults::from_json(&text).unwrap();
        assert_eq!(back.steps.len(), 2);
        assert_eq!(back.steps[1].offered_per_s, 2000.0);
        assert_eq!(back.steps[1].results.main.response_time.count, 3);
        let t = s.table();
        assert!(t.contains("offered") && t.contains("2.00k/s"), "{t}");
        assert_eq!(t.lines().count(), 5);
    }
}
