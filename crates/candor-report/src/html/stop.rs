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
