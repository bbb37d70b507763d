//! What the results of a run record of how it was asked for: its settings (`RunConfig`) and
//! its command line, credentials redacted from both.

use candor_core::results::{ArrivalName, RunConfig};
use candor_load::schedule::ArrivalKind;
use candor_load::{RunPlan, Scheme};

/// The settings of `c` as its results record them.
pub fn recorded_config(c: &RunPlan) -> RunConfig {
    let mut settings = RunConfig {
        arrival: Some(match c.shape.arrival() {
            ArrivalKind::Constant => ArrivalName::Constant,
            ArrivalKind::Poisson { .. } => ArrivalName::Poisson,
        }),
        body_bytes: c.body.len(),
        // The protocol records its own where it judges otherwise (gRPC's codes).
        check_status: matches!(c.target.scheme, Scheme::Http | Scheme::Https)
            .then(|| c.accept_status.to_string()),
        connections: c.connections,
        drain_s: c.drain_ns as f64 / 1e9,
        duration_s: c.duration_ns as f64 / 1e9,
        grpc_call: None,
        // Credentials stay out of results files, which are made to be shared.
        headers: c.headers.iter().map(|h| redact_header(h)).collect(),
        interrupted_after_s: None,
        interval_s: c.interval_ns as f64 / 1e9,
        late_start_s: None,
        // The goodput bounds as judged: --goodput's, or those --slo set.
        llm: c.llm_settings.clone().map(|mut s| {
            s.goodput = c.goodput.map(|g| g.to_string());
            s
        }),
        method: c.method.clone(),
        // The protocol records its own (below); these are the defaults of the others.
        pipeline: 1,
        profile: c.shape.profile().map(|p| p.describe()),
        protocol: Some(c.protocol_name()),
        rate_per_s: c.shape.rate_per_s(),
        request_set_size: (!c.requests.is_empty()).then_some(c.requests.len()),
        requests_total: c.shape.count(),
        seed: match c.shape.arrival() {
            ArrivalKind::Poisson { seed } => Some(seed),
            ArrivalKind::Constant => None,
        },
        shard_count: c.shard_count,
        shard_index: c.shard_index,
        spin_us: c.spin_ns.map(|n| n as f64 / 1e3),
        start_at_unix_s: c.start_at_wall_ns.map(|n| n as f64 / 1e9),
        streams: None,
        threads: c.threads,
        timeout_s: c.timeout_ns as f64 / 1e9,
        tls_insecure: c.tls.insecure,
        warmup_s: c.warmup_ns as f64 / 1e9,
        ws_binary: None,
        ws_match: None,
    };
    c.protocol.record(&mut settings);
    settings
}

/// `Authorization: (redacted)` for an Authorization header line, the line itself otherwise.
pub fn redact_header(line: &str) -> String {
    match line.split_once(':') {
        Some((name, _)) if name.trim().eq_ignore_ascii_case("authorization") => {
            format!("{}: (redacted)", name.trim())
        }
        _ => line.to_string(),
    }
}

/// `args` (a command line) for the results, with the URL's password hidden as in the target and
/// Authorization header values hidden as in the configuration.
pub fn redacted_command_line(
    args: impl IntoIterator<Item = String>,
    config: &RunPlan,
    url_given: &str,
) -> Vec<String> {
    let mut header_value_next = false;
    args.into_iter()
        .map(|arg| {
            let redact_value = std::mem::take(&mut header_value_next);
            header_value_next = arg == "-H" || arg == "--header";
            if arg == url_given {
                config.target.url.clone()
            } else if redact_value {
                redact_header(&arg)
            } else if let Some(h) = arg.strip_prefix("--header=") {
                format!("--header={}", redact_header(h))
            } else {
                arg
            }
        })
        .collect()
}

/// This process's command line for the results (see [`redacted_command_line`]).
pub fn command_line(config: &RunPlan, url_given: &str) -> Vec<String> {
    redacted_command_line(std::env::args(), config, url_given)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authorization_values_never_reach_the_results() {
        assert_eq!(
            redact_header("authorization: Bearer s3cret"),
            "authorization: (redacted)"
        );
        assert_eq!(redact_header("X-Trace: 1"), "X-Trace: 1");
    }
}
