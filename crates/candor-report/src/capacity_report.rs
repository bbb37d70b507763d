//! The text report of `candor capacity`: every step's verdict and evidence, then the answer.

use candor_analysis::capacity_search::{Outcome, Purpose, Search, SearchSettings, Trial};
use candor_analysis::SloSet;
use candor_core::units::{format_ns, format_rate};
use std::fmt::Write as _;

/// The report of a finished search of `target`, and the exit code its answer calls for: 0 when a
/// rate in the range met the objectives, 3 when even the lowest missed them or the search did
/// not settle.
pub fn render(target: &str, settings: &SearchSettings, found: &Search) -> (String, i32) {
    let mut out = String::new();
    let _ = writeln!(out, "candor capacity of {target}\n");
    let _ = writeln!(
        out,
        "  {:>3}  {:<8} {:>10}  result  evidence",
        "#", "step", "offered"
    );
    for (i, p) in found.probes.iter().enumerate() {
        let _ = writeln!(
            out,
            "  {:>3}  {:<8} {:>10}  {:<6}  {}",
            i + 1,
            p.purpose.name(),
            format_rate(p.rate),
            if p.pass { "pass" } else { "FAIL" },
            p.note
        );
    }
    out.push('\n');
    let (line, code) = match &found.outcome {
        Outcome::Found {
            capacity,
            failed_at,
        } => (
            format!(
                "CAPACITY: {} (passed {} runs; {} failed, so the limit lies between them, {:.1}% apart)",
                format_rate(*capacity),
                1 + settings.confirmations,
                format_rate(*failed_at),
                100.0 * (failed_at / capacity - 1.0)
            ),
            0,
        ),
        Outcome::AtLeastMax { max } => (
            format!(
                "CAPACITY: at least {} (the --max passed every run; raise --max to look further)",
                format_rate(*max)
            ),
            0,
        ),
        Outcome::BelowMin { min } => (
            format!(
                "CAPACITY: below {} (even --min failed the objectives; lower --min)",
                format_rate(*min)
            ),
            3,
        ),
        Outcome::StepLimit {
            best,
            failed_at,
            unconfirmed,
        } => (
            format!(
                "CAPACITY: not settled within {} steps; {}",
                settings.max_steps,
                unsettled(settings, found, *best, *unconfirmed, *failed_at)
            ),
            3,
        ),
        Outcome::Interrupted {
            best,
            failed_at,
            unconfirmed,
        } => (
            format!(
                "CAPACITY: not settled, interrupted after {} judged; {}",
                candor_analysis::late::count_noun(found.probes.len() as u64, "step", "steps"),
                unsettled(settings, found, *best, *unconfirmed, *failed_at)
            ),
            3,
        ),
    };
    out.push_str(&line);
    out.push('\n');
    (out, code)
}

/// What an unsettled search found: its highest confirmed pass, the highest pass above it (how
/// many of the runs a confirmation needs it had), and its lowest failure.
fn unsettled(
    settings: &SearchSettings,
    found: &Search,
    best: Option<f64>,
    unconfirmed: Option<f64>,
    failed_at: Option<f64>,
) -> String {
    let mut text = format!(
        "highest confirmed pass {}",
        best.map_or("none".into(), format_rate)
    );
    if let Some(u) = unconfirmed {
        let runs = found.probes.iter().filter(|p| p.rate == u).count();
        let _ = write!(
            text,
            ", highest pass {} (unconfirmed: {runs} of the {} passing runs a confirmed pass needs)",
            format_rate(u),
            1 + settings.confirmations
        );
    }
    let _ = write!(
        text,
        ", lowest failure {}",
        failed_at.map_or("none".into(), format_rate)
    );
    text
}

/// The plan, said before the first step: the target, the range, a step's length and the
/// objectives.
pub fn plan_line(
    target: &str,
    settings: &SearchSettings,
    warmup_ns: u64,
    duration_ns: u64,
    slo: &SloSet,
) -> String {
    format!(
        "candor capacity: {} from {} to {}, steps of {} warm-up + {}, objectives {}{}",
        target,
        format_rate(settings.min),
        format_rate(settings.max),
        format_ns(warmup_ns as f64),
        format_ns(duration_ns as f64),
        slo.objectives
            .iter()
            .map(|o| o.text.as_str())
            .collect::<Vec<_>>()
            .join(","),
        // An errors budget or a goodput share says how many may go unserved.
        if slo.limits_errors() {
            ""
        } else {
            " and every request served"
        }
    )
}

/// The line of a step just judged.
pub fn step_line(rate: f64, purpose: Purpose, trial: &Trial) -> String {
    format!(
        "  {:<8} {:>9}  {}  {}",
        purpose.name(),
        format_rate(rate),
        if trial.pass { "pass" } else { "FAIL" },
        trial.note
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use candor_analysis::capacity_search::{search, Purpose, Trial};

    fn settings() -> SearchSettings {
        SearchSettings {
            min: 100.0,
            max: 1600.0,
            tolerance: 0.05,
            confirmations: 1,
            max_steps: 30,
            growth: 2.0,
        }
    }

    #[test]
    fn a_found_capacity_lists_the_steps_and_exits_zero() {
        // A simulated service that meets its objectives up to 700/s.
        let mut measure = |rate: f64, _: Purpose| -> Result<Trial, std::convert::Infallible> {
            Ok(Trial {
                pass: rate <= 700.0,
                note: format!("at {rate}"),
            })
        };
        let found = search(settings(), &mut measure).unwrap();
        let (text, code) = render("http://x/", &settings(), &found);
        assert_eq!(code, 0);
        assert!(text.starts_with("candor capacity of http://x/\n"));
        assert_eq!(
            text.lines().filter(|l| l.contains("at ")).count(),
            found.probes.len()
        );
        assert!(text
            .trim_end()
            .lines()
            .last()
            .unwrap()
            .starts_with("CAPACITY: "));
    }

    #[test]
    fn an_unsettled_search_names_its_highest_pass_as_unconfirmed() {
        let mut few = settings();
        few.max_steps = 3;
        let mut measure = |_: f64, _: Purpose| -> Result<Trial, std::convert::Infallible> {
            Ok(Trial {
                pass: true,
                note: String::new(),
            })
        };
        let found = search(few, &mut measure).unwrap();
        let (text, code) = render("http://x/", &few, &found);
        assert_eq!(code, 3);
        assert!(
            text.contains(
                "CAPACITY: not settled within 3 steps; highest confirmed pass none, highest pass 400.0/s \
                 (unconfirmed: 1 of the 2 passing runs a confirmed pass needs), lowest failure none"
            ),
            "{text}"
        );
    }

    #[test]
    fn failing_even_the_minimum_exits_three() {
        let mut measure = |_: f64, _: Purpose| -> Result<Trial, std::convert::Infallible> {
            Ok(Trial {
                pass: false,
                note: String::new(),
            })
        };
        let found = search(settings(), &mut measure).unwrap();
        let (text, code) = render("http://x/", &settings(), &found);
        assert_eq!(code, 3);
        assert!(text.contains("CAPACITY: below 100"), "{text}");
    }

    #[test]
    fn the_plan_demands_every_request_served_unless_an_objective_budgets_them() {
        let plan = |slo: &str| {
            plan_line(
                "http://x/",
                &settings(),
                1_000_000_000,
                2_000_000_000,
                &SloSet::parse(slo).unwrap(),
            )
        };
        assert!(plan("p99<10ms").ends_with("objectives p99<10ms and every request served"));
        assert!(plan("p99<10ms,errors<1%").ends_with("objectives p99<10ms,errors<1%"));
        assert!(plan("goodput>=90%").ends_with("objectives goodput>=90%"));
    }
}
