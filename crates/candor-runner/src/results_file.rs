//! The results file of one run: the engine's numbers ([`RunOutcome`]) with the settings, the
//! command line, the verdicts and the warnings a reader needs, in the versioned results contract.

use crate::verdicts::{interrupted_warning, verdicts};
use candor_core::results::{Environment, Kind, Mode, NamedHistogram, RecordedConfig, RunResults};
use candor_core::units::format_ns;
use candor_load::{RunOutcome, RunPlan};

/// The results of one run, as `--json` writes them.
pub fn run_results(
    outcome: &RunOutcome,
    config: &RunPlan,
    command_line: Vec<String>,
    recorded: impl Into<RecordedConfig>,
) -> RunResults {
    let mut recorded = recorded.into();
    let main = outcome.main_results(config);
    // Measured, not a setting, but kept beside start_at_unix_s so that `candor merge` can say
    // how late each shard really was (a late shard's schedule, and so start_time_unix_s,
    // starts when it was ready).
    if let (RecordedConfig::Run(r), Some(_)) = (&mut recorded, config.start_at_wall_ns) {
        r.late_start_s = Some(outcome.late_start_ns as f64 / 1e9);
    }
    if let (RecordedConfig::Run(r), Some(b)) = (&mut recorded, &outcome.llm_backend) {
        if let Some(llm) = &mut r.llm {
            llm.backend = Some(b.clone());
            if let Some(model) = &outcome.llm_model_from_server {
                llm.model = model.clone();
                llm.model_from = candor_core::results::ModelSource::Server;
            }
        }
    }
    let mut warnings = verdicts(config, &main);
    warnings.extend(outcome.main.warnings.iter().cloned());
    let check = main.stream.as_ref().and_then(|s| s.llm?.tokenizer_check);
    warnings.extend(check.and_then(|c| c.warning()));
    if let Some(after) = outcome.interrupted_after_ns {
        if let RecordedConfig::Run(r) = &mut recorded {
            r.interrupted_after_s = Some(after as f64 / 1e9);
        }
        warnings.insert(0, interrupted_warning(after, config));
    }
    if outcome.late_start_ns > 1_000_000 {
        warnings.insert(
            0,
            format!(
                "this process was ready {} after the agreed --start-at {}: its schedule started then, \
                 its shape kept (nothing owed meanwhile was sent in a burst){}",
                format_lateness(outcome.late_start_ns),
                candor_core::dates::rfc3339_millis(
                    config.start_at_wall_ns.unwrap_or(0) as f64 / 1e9
                ),
                if config.shard_count > 1 {
                    ", so it overlaps the other shards' windows only in part"
                } else {
                    ""
                }
            ),
        );
    }
    RunResults {
        command_line,
        start_time_unix_s: outcome.start_wall_ns as f64 / 1e9,
        environment: Environment::current(),
        warmup: outcome.warmup_results(config),
        intervals: outcome.intervals.clone(),
        extra: {
            let mut extra = Vec::new();
            for (name, h) in [
                ("tls_handshake", &outcome.main.tls_handshake),
                ("grpc_first_message", &outcome.main.first_message),
            ] {
                if !h.is_empty() {
                    extra.push(NamedHistogram::of(name, h));
                }
            }
            // The streams' measures in full, so that merges and comparisons can use them.
            if let Some(s) = &outcome.main.stream {
                for (name, h) in s.measures() {
                    if !h.is_empty() {
                        extra.push(NamedHistogram::of(name, h));
                    }
                }
            }
            extra
        },
        warnings,
        stop_reason: Some(outcome.stop_reason()),
        workload: outcome.workload_results(config),
        ..RunResults::new(
            Kind::Run,
            if config.is_open_loop() {
                Mode::OpenLoop
            } else {
                Mode::ClosedLoop
            },
            config.target.url.clone(),
            recorded,
            main,
        )
    }
}

/// A lateness in the unit a reader expects: days past two of them (a start instant of last year),
/// the usual units below.
fn format_lateness(ns: u64) -> String {
    const DAY_NS: f64 = 86_400e9;
    if ns as f64 >= 2.0 * DAY_NS {
        format!("{:.1} days", ns as f64 / DAY_NS)
    } else {
        format_ns(ns as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lateness_of_days_is_told_in_days_and_a_short_one_in_its_own_unit() {
        assert_eq!(format_lateness(3 * 86_400 * 1_000_000_000), "3.0 days");
        assert_eq!(format_lateness(1_500_000_000), format_ns(1.5e9));
    }
}
