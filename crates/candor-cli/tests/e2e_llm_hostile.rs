//! `candor run --llm` (and `--stream sse`) against hostile servers written here: events that
//! are not JSON or not OpenAI's shape, absurd usage counts, a 429 with an event-stream body,
//! tokens after `[DONE]`, a byte order mark, a JSON answer instead of a stream, and a stream
//! that stalls into `--timeout`. Each is failed (or counted) by name, with the books balanced.

mod common;
use common::*;
#[path = "support/canned.rs"]
mod canned;
use canned::{Answer, Canned};
#[path = "support/process.rs"]
mod process;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn response(status: &str, content_type: &str, body: &[u8]) -> Vec<u8> {
    let mut v = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    v.extend_from_slice(body);
    v
}

fn sse_answer(body: &[u8]) -> Answer {
    Answer::Whole(response("200 OK", "text/event-stream", body))
}

const TOKEN: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n";
const DONE: &str = "data: [DONE]\n\n";

fn usage(n: &str) -> String {
    format!("data: {{\"choices\":[],\"usage\":{{\"completion_tokens\":{n}}}}}\n\n")
}

/// 20 requests (20/s for 1 s) over 4 connections; answers take microseconds, so none waits.
fn run_llm(url: &str) -> (serde_json::Value, std::process::Output) {
    let (v, out) = run_json_any(&[
        "--llm", "openai", "-R", "20", "-c", "4", "-t", "1", "-d", "1s", "-T", "2s", url,
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_balanced(&v);
    assert_eq!(req(&v, "intended"), 20);
    (v, out)
}

#[test]
fn events_that_are_no_completion_chunk_fail_every_request_by_name_with_no_tokens() {
    let _g = serial();
    let not_json = format!("data: hello\n\n{DONE}");
    let not_openai = format!("data: {{\"message\":\"hi\"}}\n\n{DONE}");
    let huge_usage = format!("{TOKEN}{}{DONE}", usage("1e300"));
    let negative_usage = format!("{TOKEN}{}{DONE}", usage("-4"));
    for (body, name) in [
        (not_json, "not_json"),
        (not_openai, "not_openai"),
        (huge_usage, "bad_usage"),
        (negative_usage, "bad_usage"),
    ] {
        let server = Canned::always(sse_answer(body.as_bytes()));
        let (v, out) = run_llm(&server.url);
        // Before: "20 of 20 completed", 0 tokens (or 20 read from "1e300"), exit 0.
        assert_eq!(req(&v, "failed"), 20, "{name}");
        assert_eq!(v["requests"]["errors"]["stream"], 20, "{name}");
        assert_eq!(v["stream"]["failures"][name], 20, "{name}");
        assert_eq!(v["stream"]["llm"]["output_tokens"], 0, "{name}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(&format!("{name}: ")), "{name}: {text}");
    }
}

#[test]
fn a_json_answer_is_named_as_not_an_event_stream() {
    let _g = serial();
    let body = br#"{"choices":[{"message":{"content":"hi"}}],"usage":{"completion_tokens":1}}"#;
    let server = Canned::always(Answer::Whole(response("200 OK", "application/json", body)));
    let (v, out) = run_llm(&server.url);
    assert_eq!(v["requests"]["errors"]["stream"], 20);
    assert_eq!(v["stream"]["failures"]["not_event_stream"], 20);
    assert!(v["stream"]["failures"].get("no_done").is_none(), "{v}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("not_event_stream: the answer was not an event stream: its Content-Type was not text/event-stream"), "{text}");
    assert!(!text.contains("stopped mid-way"), "{text}");
}

#[test]
fn a_429_with_an_event_stream_body_adds_no_tokens() {
    let _g = serial();
    let body = format!("{TOKEN}{}{DONE}", usage("5"));
    let server = Canned::always(Answer::Whole(response(
        "429 Too Many Requests",
        "text/event-stream",
        body.as_bytes(),
    )));
    let (v, _) = run_llm(&server.url);
    assert_eq!(v["requests"]["errors"]["status"], 20);
    assert_eq!(v["stream"]["failures"]["rate_limited"], 20);
    // Before: 100 tokens (5 per refused request) counted as output.
    assert_eq!(v["stream"]["llm"]["output_tokens"], 0);
    assert_eq!(v["stream"]["llm"]["output_tokens_per_s"], 0.0);
}

#[test]
fn tokens_after_done_do_not_count_and_a_byte_order_mark_loses_no_event() {
    let _g = serial();
    let after_done = format!("{TOKEN}{}{DONE}{TOKEN}{}", usage("1"), usage("50"));
    let server = Canned::always(sse_answer(after_done.as_bytes()));
    let (v, _) = run_llm(&server.url);
    assert_eq!(req(&v, "completed"), 20);
    // Before: 50 per request (the usage after [DONE] won).
    assert_eq!(v["stream"]["llm"]["output_tokens"], 20);
    assert_eq!(v["itl"]["count"].as_u64().unwrap_or(0), 0, "one token each");
    drop(server);

    let mut bom = b"\xEF\xBB\xBF".to_vec();
    bom.extend_from_slice(format!("{TOKEN}{TOKEN}{}{DONE}", usage("2")).as_bytes());
    let server = Canned::always(sse_answer(&bom));
    let (v, _) = run_llm(&server.url);
    assert_eq!(req(&v, "completed"), 20);
    // Before: the first token was lost to the mark: 3 events each, one gap fewer.
    assert_eq!(v["stream"]["events"], 80);
    assert_eq!(v["ttft"]["count"], 20);
    assert_eq!(v["itl"]["count"], 20);
    assert_eq!(v["stream"]["llm"]["output_tokens"], 40);
}

#[test]
fn a_stream_that_runs_into_the_timeout_keeps_its_first_token_and_events() {
    let _g = serial();
    // The head and one token, then silence until the client gives up.
    let mut hang =
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
            .to_vec();
    hang.extend_from_slice(format!("{:x}\r\n{TOKEN}\r\n", TOKEN.len()).as_bytes());
    let server = Canned::always(Answer::Hang(hang));
    // 10 requests, one per connection, each failed by --stream-timeout 300 ms (its first
    // token came, so -T no longer bounds it): all end within -d + 300 ms + the 10 ms scan,
    // far inside the 20 s watchdog.
    let mut cmd = candor();
    let dir = std::env::temp_dir().join(format!("candor-e2e-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("out.json");
    cmd.args([
        "run",
        "--llm",
        "openai",
        "-R",
        "10",
        "-c",
        "10",
        "-t",
        "1",
        "-d",
        "1s",
        "-T",
        "300ms",
        "--stream-timeout",
        "300ms",
        "--quiet",
        "--json",
    ])
    .arg(&json)
    .arg(&server.url);
    let w = run_watched(cmd, Duration::from_secs(20));
    assert!(!w.killed, "the run outlived 20 s: {}", w.stderr);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert_balanced(&v);
    assert_eq!(req(&v, "intended"), 10);
    assert_eq!(v["requests"]["errors"]["timeout"], 10);
    // Before: ttft and first_event absent, "0 responses delivered 0 events".
    assert_eq!(v["ttft"]["count"], 10);
    assert_eq!(v["first_event"]["count"], 10);
    assert_eq!(
        (
            v["stream"]["responses"].clone(),
            v["stream"]["events"].clone()
        ),
        (10.into(), 10.into())
    );
    assert_eq!(v["stream"]["failures"]["timeout"], 10);
    let text = &w.stdout;
    assert!(text.contains("10 responses delivered 10 events"), "{text}");
    assert!(text.contains("whatever ended it"), "{text}");
}

#[test]
fn an_sse_run_has_no_ttft_legend_and_llm_on_grpc_names_the_conflict() {
    let _g = serial();
    let server = Canned::always(sse_answer(b"data: a\n\ndata: b\n\n"));
    let (v, out) = run_json_any(&[
        "--stream",
        "sse",
        "-R",
        "20",
        "-c",
        "4",
        "-t",
        "1",
        "-d",
        "1s",
        &server.url,
    ]);
    assert_balanced(&v);
    assert_eq!(v["stream"]["events"], 40);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("  first event: from the intended send\n"),
        "{text}"
    );
    assert!(!text.contains("ttft"), "{text}");

    let out = candor()
        .args(["run", "--llm", "openai", "-d", "1s", "grpc://127.0.0.1:9"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0));
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("--llm needs an http:// or https:// target")
            && stderr.contains("not grpc://"),
        "{stderr}"
    );
}

#[test]
fn a_stream_the_run_ends_keeps_its_first_token_and_stays_unfinished() {
    let _g = serial();
    let mut hang =
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
            .to_vec();
    hang.extend_from_slice(format!("{:x}\r\n{TOKEN}\r\n", TOKEN.len()).as_bytes());
    let server = Canned::always(Answer::Hang(hang));
    // -T 30 s never runs out; --drain 300ms ends the run about 1.3 s in with all 10 streams
    // still coming: unfinished, not failed, each with its first token measured.
    let (v, out) = run_json_any(&[
        "--llm",
        "openai",
        "-R",
        "10",
        "-c",
        "10",
        "-t",
        "1",
        "-d",
        "1s",
        "-T",
        "30s",
        "--drain",
        "300ms",
        &server.url,
    ]);
    assert_balanced(&v);
    assert_eq!(req(&v, "intended"), 10);
    assert_eq!(req(&v, "failed"), 0);
    assert_eq!(v["requests"]["in_flight_at_end"], 10, "{v}");
    // Before: no ttft, no first_event, "0 responses delivered 0 events".
    assert_eq!(v["ttft"]["count"], 10);
    assert_eq!(v["stream"]["events"], 10);
    assert_eq!(v["stream"]["llm"]["output_tokens"], 0);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("10 responses delivered 10 events"), "{text}");
}

#[test]
fn a_signal_during_the_backend_probe_ends_the_run_at_once_with_its_results() {
    let _g = serial();
    // The server takes `GET /v1/models` and never answers it; it notes when it read it.
    let probed: Arc<Mutex<Option<Instant>>> = Arc::default();
    let seen = probed.clone();
    let server = Canned::start(move |head| {
        if head.starts_with("get /v1/models") {
            seen.lock().unwrap().get_or_insert_with(Instant::now);
            Answer::Hang(Vec::new())
        } else {
            sse_answer(DONE.as_bytes())
        }
    });
    let dir = process::tmp("backend-probe-stop");
    for (sig, code) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
        *probed.lock().unwrap() = None;
        let json = dir.join(format!("probe-{sig}.json"));
        let child = candor()
            .args([
                "run", "-q", "--llm", "openai", "-R", "10", "-c", "2", "-t", "1",
            ])
            .args(["-d", "5s", "--json"])
            .arg(&json)
            .arg(&server.url)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        process::wait_for_handlers(&child);
        let t0 = Instant::now();
        let asked = loop {
            if let Some(at) = *probed.lock().unwrap() {
                break at;
            }
            assert!(t0.elapsed() < Duration::from_secs(30), "no probe came");
            std::thread::sleep(Duration::from_millis(5));
        };
        // Well inside the probe's 2 s: it is still waiting for its answer.
        std::thread::sleep(Duration::from_millis(300).saturating_sub(asked.elapsed()));
        process::signal(&child, sig);
        let (out, _) = process::exit_within(child, Duration::from_secs(15));
        let took = asked.elapsed();
        // The stop is seen within 10 ms (the probe's poll) and the empty run ends at once: from
        // the probe's start, 300 ms and a few tens of ms. Before, the probe held the run to its
        // 2 s timeout whatever the signal; 1.8 s tells the two apart with 1.4 s left for a busy
        // machine.
        assert!(
            took < Duration::from_millis(1800),
            "exited {took:?} after the probe began"
        );
        assert_eq!(out.status.code(), Some(code), "{}", text(&out));
        let v = process::read_json(&json);
        assert_eq!(v["stop_reason"], "interrupt", "{v}");
        assert_balanced(&v);
        assert_eq!(req(&v, "intended"), 0, "stopped before the first send");
        assert_eq!(
            v["config"]["llm"]["backend"]["unknown"], "GET /v1/models: no answer before the stop",
            "{}",
            v["config"]["llm"]
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}
