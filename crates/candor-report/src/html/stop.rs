//! The HTML report's section on how each run's measured window ended: the stop reason
//! (`precision`, `duration`, `abort`, `interrupt`) and the `--precision` intervals reached, as
//! the text report gives them ([`crate::text::render_stop`]).

use super::format::{esc, format_ns};
use candor_analysis::confidence::samples_needed;
use candor_analysis::omission::trim_pct;
use candor_core::results::{PrecisionRow, RunResults, StopReason};
use candor_core::units::format_count;

/// The section, empty when no run has a `stop` (runs without `--precision` or
/// `--abort-on-fail`, like the text report). `colors[i]` is run i's colour.
pub(crate) fn stop_section(runs: &[(String, RunResults)], colors: &[&str]) -> String {
    if runs.iter().all(|(_, r)| r.stop.is_none()) {
        return String::new();
    }
    let mut s = String::from(
        "<section class=\"stop\"><h2>How the measured window ended</h2><p class=\"note\">Why each \
         run stopped, and for <code>--precision</code> the 95% order-statistic interval of each \
         named percentile over the whole measured window against its goal.</p>",
    );
    for (i, (label, r)) in runs.iter().enumerate() {
        let Some(stop) = &r.stop else { continue };
        let reason = r.stop_reason.unwrap_or(StopReason::Duration);
        let color = colors[i % colors.len()];
        let when = format!(
            "at {:.1} s, after {} measured {}",
            stop.at_s,
            format_count(stop.intervals),
            if stop.intervals == 1 {
                "interval"
            } else {
                "intervals"
            }
        );
        let line = if reason == StopReason::Abort {
            format!(
                "<b>ABORTED</b> {when}: {}{}",
                esc(&stop.detail),
                stop.objective.as_ref().map_or(String::new(), |o| format!(
                    " (objective <code>{}</code>)",
                    esc(o)
                ))
            )
        } else {
            format!(
                "stop reason: <b>{}</b> ({when}): {}",
                reason.name(),
                esc(&stop.detail)
            )
        };
        // Inline, so the shared stylesheet (and every page's snapshot) stays as it is.
        let style = if reason == StopReason::Abort {
            " style=\"color:var(--fail)\""
        } else {
            ""
        };
        s.push_str(&format!(
            "<p class=\"stop-reason {}\" data-stop-reason=\"{}\"{style}><span class=\"swatch\" \
             style=\"background:{color}\"></span><b>{}</b>: {line}</p>",
            reason.name(),
            reason.name(),
            esc(label)
        ));
        if stop.precision.is_empty() {
            continue;
        }
        s.push_str(
            "<table class=\"grid num precision\"><thead><tr><th>Goal</th><th>estimate</th>\
             <th>95% CI</th><th>half-width reached</th><th>samples</th><th>result</th></tr>\
             </thead><tbody>",
        );
        for row in &stop.precision {
            s.push_str(&precision_row(row));
        }
        s.push_str("</tbody></table>");
    }
    s.push_str("</section>");
    s
}

/// One `--precision` goal: the interval reached and whether it met the goal.
fn precision_row(row: &PrecisionRow) -> String {
    let ci = match (row.ci_low_ns, row.ci_high_ns) {
        (Some(lo), Some(hi)) => format!("{} .. {}", format_ns(lo as f64), format_ns(hi as f64)),
        _ => "not bounded by the samples".to_string(),
    };
    let width = row
        .half_width
        .map_or("—".to_string(), |w| format!("±{:.2}%", w * 100.0));
    let need = samples_needed(row.percentile / 100.0);
    let (class, result) = if row.reached {
        ("pass", "✓ reached".to_string())
    } else if row.samples < need {
        (
            "fail",
            format!(
                "✗ not reached: {} of the ~{} samples p{} needs",
                format_count(row.samples),
                format_count(need),
                trim_pct(row.percentile)
            ),
        )
    } else {
        ("fail", "✗ not reached".to_string())
    };
    format!(
        "<tr><th>p{}=±{}%</th><td>{}</td><td>{ci}</td><td>{width}</td><td>{}</td>\
         <td class=\"{class}\">{result}</td></tr>",
        trim_pct(row.percentile),
        trim_pct(row.target * 100.0),
        format_ns(row.estimate_ns as f64),
        format_count(row.samples)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::html::{write_html, HtmlOptions};
    use candor_core::results::StopDetail;

    fn run() -> RunResults {
        crate::synthetic::synthetic_run(3, 12, 500, 1_000_000, 0)
    }

    fn precision_row(reached: bool, samples: u64) -> PrecisionRow {
        PrecisionRow {
            percentile: 99.0,
            target: 0.05,
            samples,
            estimate_ns: 1_000_000,
            ci_low_ns: Some(980_000),
            ci_high_ns: Some(1_030_000),
            half_width: Some(0.03),
            reached,
        }
    }

    #[test]
    fn the_page_shows_the_stop_reason_and_the_precision_reached() {
        let mut precise = run();
        precise.stop_reason = Some(StopReason::Precision);
        precise.stop = Some(StopDetail {
            at_s: 12.0,
            intervals: 10,
            precision: vec![precision_row(true, 12_000), {
                let mut r = precision_row(false, 900);
                r.percentile = 99.9;
                r.target = 0.1;
                r
            }],
            objective: None,
            detail: "every --precision target was reached".into(),
        });
        let mut aborted = run();
        aborted.stop_reason = Some(StopReason::Abort);
        aborted.stop = Some(StopDetail {
            at_s: 4.0,
            intervals: 3,
            precision: vec![],
            objective: Some("errors<1%".into()),
            detail: "objective errors<1% can no longer pass".into(),
        });
        let runs = vec![
            ("precise".to_string(), precise),
            ("plain".to_string(), run()),
            ("aborted".to_string(), aborted),
        ];
        let page = write_html(&runs, &HtmlOptions::default()).unwrap();
        assert!(page.contains("<h2>How the measured window ended</h2>"));
        assert!(page.contains(
            "data-stop-reason=\"precision\"><span class=\"swatch\" style=\"background:#1f6fb2\"></span>\
             <b>precise</b>: stop reason: <b>precision</b> (at 12.0 s, after 10 measured \
             intervals): every --precision target was reached</p>"
        ));
        assert!(page.contains(
            "<tr><th>p99=±5%</th><td>1.000ms</td><td>980.0\u{b5}s .. 1.030ms</td><td>±3.00%</td>\
             <td>12,000</td><td class=\"pass\">✓ reached</td></tr>"
        ), "{page}");
        assert!(page.contains("<th>p99.9=±10%</th>"));
        assert!(page.contains(
            "<td class=\"fail\">✗ not reached: 900 of the ~100,000 samples p99.9 needs</td>"
        ));
        // The run without a stop has no line; the abort names its objective.
        assert!(!page.contains("<b>plain</b>: stop reason"));
        assert!(page.contains("data-stop-reason=\"abort\" style=\"color:var(--fail)\">"));
        assert!(page.contains(
            "<b>aborted</b>: <b>ABORTED</b> at 4.0 s, after 3 measured intervals: objective \
             errors&lt;1% can no longer pass (objective <code>errors&lt;1%</code>)</p>"
        ));
        assert_eq!(page.matches("class=\"stop-reason ").count(), 2);
    }

    #[test]
    fn runs_without_a_stop_get_no_section() {
        let runs = vec![("plain".to_string(), run())];
        assert_eq!(stop_section(&runs, &["#000"]), "");
        let page = write_html(&runs, &HtmlOptions::default()).unwrap();
        assert!(!page.contains("How the measured window ended"));
    }
}
