//! `candor run --llm openai-embeddings` against `candor serve --llm`, whose embeddings answers
//! leave at a known instant (docs/truth.md, "Embeddings"), and against hostile servers written
//! here (a wrong number of vectors, a body that is not JSON, a huge body, an `error` object, no
//! `/v1/models`): latency, inputs/s and input tokens as predicted, failures by name, the books
//! balanced, and the backend named by the probe before the load.

mod common;
use common::*;
#[path = "support/canned.rs"]
mod canned;
use canned::{Answer, Canned};

const MS: f64 = 1e6;

/// The server's count of a synthetic input of `tokens` tokens: candor writes `ceil(3 t / 4)`
/// words, the server counts `ceil(4 w / 3)` tokens of them.
fn server_tokens(tokens: u64) -> u64 {
    let words = (3 * tokens).div_ceil(4);
    (4 * words).div_ceil(3)
}

#[test]
fn embeddings_take_their_known_latency_at_rate_times_batch_inputs_per_second() {
    let _g = serial();
    let server = Server::start(&[
        "--llm",
        "--embed-latency",
        "30ms",
        "--embed-per-token",
        "1ms",
    ]);
    let per_request = 4 * server_tokens(12);
    assert_eq!(per_request, 48);
    let truth_ns = (30 + per_request) as f64 * MS;
    let (v, out) = run_json(&[
        "--llm",
        "openai-embeddings",
        "--model",
        "candor-truth",
        "--prompt-tokens",
        "12",
        "--embedding-batch",
        "4",
        "-R",
        "20",
        "-c",
        "8",
        "-t",
        "1",
        "-d",
        "3s",
        &server.url,
    ]);
    assert_balanced(&v);
    assert_eq!(
        (req(&v, "intended"), req(&v, "completed")),
        (60, 60),
        "{}",
        v["requests"]
    );
    let min = v["response_time"]["min_ns"].as_f64().unwrap();
    let p50 = pct(&v, "response_time", 50.0);
    assert!(
        min >= truth_ns,
        "faster than the server answers: {min} < {truth_ns}"
    );
    assert!(p50 <= truth_ns + 50.0 * MS, "p50 {p50} past the allowance");
    let llm = &v["stream"]["llm"];
    assert_eq!(llm["inputs"], 240, "{llm}");
    assert!(
        (llm["inputs_per_s"].as_f64().unwrap() - 80.0).abs() < 1e-9,
        "{llm}"
    );
    // Inputs over time: every interval says its inputs (zero included), and they add up to the
    // run's, each answer in the interval it ended in.
    let intervals = v["intervals"].as_array().unwrap();
    let by_interval: Vec<u64> = intervals
        .iter()
        .map(|i| {
            i["stream"]["inputs"]
                .as_u64()
                .expect("inputs in every interval")
        })
        .collect();
    assert_eq!(by_interval.iter().sum::<u64>(), 240, "{by_interval:?}");
    assert_eq!(llm["input_tokens"], 60 * per_request, "{llm}");
    assert_eq!(llm["input_counted"], 60, "{llm}");
    assert_eq!(llm["output_tokens"], 0, "{llm}");
    assert!(
        v.get("ttft").is_none_or(|t| t.is_null()),
        "no TTFT: {}",
        v["ttft"]
    );
    assert!(v["stream"]["failures"]
        .as_object()
        .is_none_or(|f| f.is_empty()));
    // The backend, probed before the load.
    let llm_config = &v["config"]["llm"];
    assert_eq!(llm_config["api"], "openai-embeddings");
    assert_eq!(llm_config["embedding_batch"], 4);
    let backend = &llm_config["backend"];
    assert_eq!(backend["models"][0]["id"], "candor-truth", "{backend}");
    assert_eq!(backend["models"][0]["owned_by"], "candor", "{backend}");
    assert_eq!(backend["server"], "candor", "{backend}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("inputs/s 80.0"), "{text}");
    assert!(text.contains("inputs/s over time: lowest"), "{text}");
    assert!(
        text.contains("backend candor (models: candor-truth)"),
        "{text}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("is not among the models"), "{stderr}");
}

#[test]
fn a_model_the_server_does_not_list_is_warned_of_and_flags_without_meaning_are_refused() {
    let _g = serial();
    let server = Server::start(&["--llm", "--embed-latency", "1ms"]);
    let (v, out) = run_json(&[
        "--llm",
        "openai-embeddings",
        "--model",
        "nope",
        "-n",
        "2",
        "-R",
        "20",
        "-c",
        "1",
        &server.url,
    ]);
    assert_eq!(req(&v, "completed"), 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "warning: --model nope is not among the models the server lists (candor-truth)"
        ),
        "{stderr}"
    );
    for (flag, value) in [
        ("--no-stream", None),
        ("--event-timeout", Some("1s")),
        ("--goodput", Some("ttft<1s")),
        ("--slo", Some("ttft.p99<1s")),
    ] {
        let mut args = vec!["run", "--llm", "openai-embeddings", "-n", "1", flag];
        args.extend(value);
        args.push(&server.url);
        let out = candor().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{flag}");
        assert!(
            err.contains("cannot be given with --llm openai-embeddings")
                || err.contains("this run records no ttft"),
            "{flag}: {err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
    let out = candor()
        .args([
            "run",
            "--llm",
            "openai",
            "--embedding-batch",
            "2",
            "-n",
            "1",
            &server.url,
        ])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("it needs --llm openai-embeddings"));
}

/// A server that answers `GET /v1/models` 404 and every other request with `answer`.
fn hostile(answer: Vec<u8>) -> Canned {
    Canned::start(move |head| {
        if head.starts_with("get /v1/models") {
            Answer::Whole(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".to_vec())
        } else {
            Answer::Whole(answer.clone())
        }
    })
}

fn json_response(body: &[u8]) -> Vec<u8> {
    let mut v = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    v.extend_from_slice(body);
    v
}

#[test]
fn a_hostile_embeddings_server_fails_every_request_by_name_with_the_books_whole() {
    let _g = serial();
    let one = br#"{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5]}],"usage":{"prompt_tokens":3,"total_tokens":3}}"#.to_vec();
    let vector = format!("[{}0.5]", "0.25,".repeat(140_000));
    let huge = format!(
        r#"{{"data":[{{"embedding":{vector}}},{{"embedding":{vector}}},{{"embedding":{vector}}}],"usage":{{"prompt_tokens":6}}}}"#
    );
    assert!(huge.len() > 2_000_000);
    let error = br#"{"error":{"message":"model overloaded","type":"server_error"}}"#.to_vec();
    for (body, name) in [
        (one, "embedding_count"),
        (b"<html>oops</html>".to_vec(), "not_json"),
        (huge.into_bytes(), "embedding_count"),
        (error, "stream_error"),
    ] {
        let server = hostile(json_response(&body));
        let (v, out) = run_json_any(&[
            "--llm",
            "openai-embeddings",
            "--embedding-batch",
            "2",
            "-R",
            "20",
            "-c",
            "2",
            "-t",
            "1",
            "-d",
            "1s",
            &server.url,
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert_balanced(&v);
        assert_eq!(req(&v, "intended"), 20, "{name}");
        assert_eq!(req(&v, "failed"), 20, "{name}: {}", v["requests"]);
        assert_eq!(v["requests"]["errors"]["stream"], 20, "{name}");
        assert_eq!(v["stream"]["failures"][name], 20, "{name}: {}", v["stream"]);
        assert!(
            v["stream"]["llm"]["inputs"].as_u64().unwrap_or(0) == 0,
            "{name}: {}",
            v["stream"]
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(&format!("{name}: ")), "{name}: {text}");
        // No /v1/models: the run went on, the backend unknown and why.
        assert_eq!(
            v["config"]["llm"]["backend"]["unknown"], "GET /v1/models: HTTP 404",
            "{}",
            v["config"]["llm"]
        );
    }
}
