//! Goodput over time in the push outputs, end to end: an `--llm` run with `--goodput` against
//! `candor serve --llm` pushes `candor_good_requests_total` in remote write and OTLP, rising
//! push by push to the results' good count; a run without bounds pushes no such series.

mod common;
#[path = "support/push.rs"]
mod push;

use common::{assert_balanced, serial, text, Server};
use push::{run, sample, Receiver};

const GOOD: &str = "candor_good_requests_total";

/// An `--llm` run of 3 s at 40/s pushing to `out` every second, with `extra` flags.
fn llm_run(server: &Server, out: &str, extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "--llm",
        "openai",
        "--output-tokens",
        "4",
        "-R",
        "40",
        "-d",
        "3s",
        "--push-interval",
        "1s",
        "-c",
        "8",
        "--out",
        out,
    ];
    args.extend_from_slice(extra);
    args.push(&server.url);
    let (v, output, _) = run(&args);
    assert!(output.status.success(), "{}", text(&output));
    assert_balanced(&v);
    v
}

fn good_of(v: &serde_json::Value) -> f64 {
    v["stream"]["goodput"]["good"]
        .as_f64()
        .unwrap_or_else(|| panic!("a goodput run's results: {v}"))
}

#[test]
fn remote_write_pushes_good_requests_rising_to_the_results_good() {
    let _g = serial();
    let server = Server::start(&["--llm", "--ttft", "5ms", "--output-tokens", "4"]);
    let rx = Receiver::start(|_| 204, None);
    let out = format!("prometheus-rw={}", rx.url);
    let v = llm_run(&server, &out, &["--goodput", "ttft<5s"]);
    let good = good_of(&v);
    assert!(good > 0.0, "{v}");
    let pushed: Vec<f64> = rx
        .accepted()
        .iter()
        .filter_map(|w| sample(w, GOOD, "phase", "measured"))
        .collect();
    assert!(
        pushed.len() >= 2,
        "a push per interval and the last: {pushed:?}"
    );
    assert!(pushed.windows(2).all(|w| w[0] <= w[1]), "{pushed:?}");
    assert_eq!(*pushed.last().unwrap(), good);

    // Without bounds: the same run pushes no good counter (not a 0 read as "none good").
    let rx = Receiver::start(|_| 204, None);
    let out = format!("prometheus-rw={}", rx.url);
    llm_run(&server, &out, &[]);
    let writes = rx.accepted();
    assert!(!writes.is_empty());
    assert!(writes.iter().all(|w| sample(w, GOOD, "", "").is_none()
        && sample(w, "candor_output_tokens_total", "", "").is_some()));
}

#[test]
fn otlp_pushes_good_requests_as_a_sum_equal_to_the_results_good() {
    use candor_push::otlp::decode;
    use opentelemetry_proto::tonic::metrics::v1::metric::Data;
    use opentelemetry_proto::tonic::metrics::v1::number_data_point::Value;
    let _g = serial();
    let server = Server::start(&["--llm", "--ttft", "5ms", "--output-tokens", "4"]);
    let rx = Receiver::start(|_| 200, None);
    let out = format!("otlp={}", rx.url);
    let v = llm_run(&server, &out, &["--goodput", "ttft<5s"]);
    let last = decode(rx.bodies().last().expect("pushed")).unwrap();
    let metric = last.resource_metrics[0].scope_metrics[0]
        .metrics
        .iter()
        .find(|m| m.name == GOOD)
        .expect("the good counter");
    let Some(Data::Sum(sum)) = &metric.data else {
        panic!("a counter is a monotonic sum: {metric:?}");
    };
    assert!(sum.is_monotonic, "{sum:?}");
    let measured: Vec<f64> = sum
        .data_points
        .iter()
        .filter(|p| format!("{:?}", p.attributes).contains("\"measured\""))
        .filter_map(|p| match p.value {
            Some(Value::AsDouble(d)) => Some(d),
            Some(Value::AsInt(i)) => Some(i as f64),
            None => None,
        })
        .collect();
    assert_eq!(measured, vec![good_of(&v)]);
}
