//! Streams and scripts over HTTP/3 end to end, through Caddy (its `reverse_proxy` to `candor
//! serve --llm` over HTTP/1.1 is the stream source): LLM streams read at the server's known
//! timing, `--goodput` under a stall at docs/truth.md's prediction, `--stream sse`, an
//! `--event-timeout` resetting each stalled stream (the connection carries on), a stream reset
//! mid-stream (hostile: cut, counted by its code), and `-s` wrk scripts whose `request()` and
//! `response()` see every request and response.

#[path = "support/caddy.rs"]
mod caddy;
mod common;
mod support {
    pub mod script;
}

use caddy::Caddy;
use common::*;
use support::script::script;

const MS: f64 = 1e6;

/// Caddy in front of `candor serve` started with `serve`.
fn behind_caddy(name: &str, serve: &[&str]) -> (Server, Caddy) {
    let server = Server::start(serve);
    let upstream = server
        .url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    let caddy = Caddy::start(name, &format!("reverse_proxy {upstream}"));
    (server, caddy)
}

#[test]
#[ignore = "needs caddy: scripts/test.sh"]
fn llm_streams_over_h3_read_the_servers_tokens_and_timing() {
    let _g = serial();
    let (_s, caddy) = behind_caddy(
        "llm",
        &[
            "--llm",
            "--ttft",
            "20ms",
            "--itl",
            "10ms",
            "--output-tokens",
            "8",
        ],
    );
    let ca = caddy.ca();
    let url = caddy.url();
    let (v, out) = run_json(&[
        "--h3",
        "--ca",
        &ca,
        "--llm",
        "openai",
        "--output-tokens",
        "8",
        "-R",
        "50",
        "-c",
        "2",
        "--streams",
        "16",
        "-t",
        "1",
        "-d",
        "2s",
        "-T",
        "3s",
        &url,
    ]);
    assert_balanced(&v);
    let n = req(&v, "completed");
    assert_eq!((req(&v, "intended"), n), (100, 100), "{}", text(&out));
    // Exact, as over HTTP/1.1 (e2e_llm.rs): 8 tokens (usage says so), 7 gaps, 10 events (8
    // tokens, the usage chunk, [DONE]) per response.
    let s = &v["stream"];
    assert_eq!(s["llm"]["output_tokens"].as_u64(), Some(8 * n), "{s}");
    assert_eq!(s["llm"]["counted_from_usage"].as_u64(), Some(n), "{s}");
    assert_eq!(s["events"].as_u64(), Some(10 * n), "{s}");
    assert_eq!(v["itl"]["count"].as_u64(), Some(7 * n));
    // The server waits T = 20 ms before the first token: no TTFT is shorter. Above, Caddy's
    // proxying and this client's debug-built QUIC stack on a loaded 2-core machine, which the
    // stall test (e2e_h3.rs) saw add up to 55 ms to a burst: 60 ms.
    let ttft = pct(&v, "ttft", 50.0);
    eprintln!("ttft p50 over h3 {:.1} ms (T = 20 ms)", ttft / MS);
    assert!(
        (20.0 * MS..80.0 * MS).contains(&ttft),
        "ttft p50 {:.1} ms",
        ttft / MS
    );
}

/// docs/truth.md, "Goodput under a stall": 656 of 800 (640 to 675) answer their first token
/// within 200 ms, the same run as e2e_streams.rs's over HTTP/1.1, here over HTTP/3 through Caddy.
#[test]
#[ignore = "needs caddy: scripts/test.sh"]
fn goodput_under_a_stall_over_h3_reads_its_known_truth() {
    let _g = serial();
    let (_s, caddy) = behind_caddy(
        "goodput",
        &[
            "--llm",
            "--ttft",
            "50ms",
            "--itl",
            "10ms",
            "--output-tokens",
            "8",
            "--stall-every",
            "2s",
            "--stall-for",
            "500ms",
        ],
    );
    let ca = caddy.ca();
    let url = caddy.url();
    let (v, out) = run_json_any(&[
        "--h3",
        "--ca",
        &ca,
        "--llm",
        "openai",
        "--output-tokens",
        "8",
        "-R",
        "100",
        "-c",
        "4",
        "--streams",
        "64",
        "-t",
        "1",
        "-d",
        "8s",
        "-T",
        "3s",
        "--goodput",
        "ttft<200ms",
        &url,
    ]);
    assert_balanced(&v);
    assert_eq!(req(&v, "completed"), 800, "{}", text(&out));
    let g = &v["stream"]["goodput"];
    let good = g["good"].as_u64().unwrap();
    eprintln!("goodput over h3 {good} of 800 (truth 656)");
    // The truth's window (640 to 675), widened below for what Caddy and QUIC add to every TTFT:
    // the waits lie 10 ms apart, so each 10 ms added moves one wait per stall window past the
    // bound (4 of 800); allowing 20 ms added (measured: the TTFT test above reads p50 1.5 ms
    // over T in a debug build; this run read 639 and 651) gives 632.
    assert!((632..=675).contains(&good), "{g}");
    assert!(g["good_service"].as_u64().unwrap() >= good, "{g}");
}

/// `--stream sse` reads any SSE answer: a completion asked for by hand (POST with a body).
#[test]
#[ignore = "needs caddy: scripts/test.sh"]
fn sse_streams_over_h3_count_every_event() {
    let _g = serial();
    let (_s, caddy) = behind_caddy(
        "sse",
        &[
            "--llm",
            "--ttft",
            "5ms",
            "--itl",
            "2ms",
            "--output-tokens",
            "4",
        ],
    );
    let ca = caddy.ca();
    let url = format!("{}v1/completions", caddy.url());
    let (v, out) = run_json(&[
        "--h3",
        "--ca",
        &ca,
        "--stream",
        "sse",
        "-m",
        "POST",
        "-H",
        "content-type: application/json",
        "--body",
        r#"{"model":"m","prompt":"hi","max_tokens":4,"stream":true}"#,
        "-R",
        "40",
        "-c",
        "1",
        "--streams",
        "8",
        "-t",
        "1",
        "-d",
        "1s",
        &url,
    ]);
    assert_balanced(&v);
    let n = req(&v, "completed");
    assert_eq!((req(&v, "intended"), n), (40, 40), "{}", text(&out));
    // Four tokens and [DONE] (no usage was asked for) per answer.
    assert_eq!(
        v["stream"]["events"].as_u64(),
        Some(5 * n),
        "{}",
        v["stream"]
    );
}

/// A stream that waits past `--event-timeout` fails as `event_timeout` (class `stream`) with
/// the events it delivered counted, and its stream alone is reset (H3_REQUEST_CANCELLED): no
/// connection is lost.
#[test]
#[ignore = "needs caddy: scripts/test.sh"]
fn an_h3_event_timeout_resets_each_stalled_stream_with_its_events_counted() {
    let _g = serial();
    // The first token after 5 ms, the next 400 ms later: every stream waits past 100 ms.
    let (_s, caddy) = behind_caddy(
        "event-timeout",
        &[
            "--llm",
            "--ttft",
            "5ms",
            "--itl",
            "400ms",
            "--output-tokens",
            "3",
        ],
    );
    let ca = caddy.ca();
    let url = caddy.url();
    let (v, out) = run_json_any(&[
        "--h3",
        "--ca",
        &ca,
        "--llm",
        "openai",
        "--output-tokens",
        "3",
        "-R",
        "20",
        "-c",
        "1",
        "--streams",
        "32",
        "-t",
        "1",
        "-d",
        "1s",
        "--event-timeout",
        "100ms",
        &url,
    ]);
    assert_balanced(&v);
    assert_eq!(req(&v, "intended"), 20, "{}", text(&out));
    assert_eq!(v["requests"]["errors"]["stream"].as_u64(), Some(20), "{v}");
    let s = &v["stream"];
    assert_eq!(s["failures"]["event_timeout"].as_u64(), Some(20), "{s}");
    // One token each came before the wait.
    assert_eq!(s["events"].as_u64(), Some(20), "{s}");
    assert_eq!(
        v["connection_faults"].as_object().map_or(0, |m| m.len()),
        0,
        "{v}"
    );
}

/// `-s`: `request()` makes each request (its own path and header) and `response()` judges each
/// response by its status, a header and its body, all over HTTP/3.
#[test]
#[ignore = "needs caddy: scripts/test.sh"]
fn a_script_makes_and_judges_h3_requests() {
    let _g = serial();
    let caddy = Caddy::start(
        "script",
        "header X-Echo {http.request.header.X-N}\n\trespond \"{http.request.uri.path}\" 200",
    );
    let ca = caddy.ca();
    let url = caddy.url();
    let echo = script("h3_echo.lua");
    let (v, out) = run_json_any(&[
        "--h3",
        "--ca",
        &ca,
        "-R",
        "400",
        "-n",
        "200",
        "-c",
        "1",
        "--streams",
        "8",
        "-t",
        "1",
        "-s",
        &echo,
        &url,
    ]);
    assert_balanced(&v);
    assert_eq!(
        (req(&v, "intended"), req(&v, "completed")),
        (200, 200),
        "{}",
        text(&out)
    );
    // The same script fails every response when the header never comes back.
    let bare = Caddy::start("script-bare", "respond \"{http.request.uri.path}\" 200");
    let (ca, url) = (bare.ca(), bare.url());
    let (v, _) = run_json_any(&[
        "--h3",
        "--ca",
        &ca,
        "-R",
        "400",
        "-n",
        "50",
        "-c",
        "1",
        "--streams",
        "8",
        "-t",
        "1",
        "-s",
        &echo,
        &url,
    ]);
    assert_balanced(&v);
    assert_eq!(v["requests"]["errors"]["check"].as_u64(), Some(50), "{v}");
    // A response() that rejects every fourth response counts a `check` failure each time.
    let (ca, url) = (caddy.ca(), caddy.url());
    let (v, _) = run_json_any(&[
        "--h3",
        "--ca",
        &ca,
        "-R",
        "400",
        "-n",
        "200",
        "-c",
        "1",
        "--streams",
        "8",
        "-t",
        "1",
        "-s",
        &script("judge.lua"),
        &url,
    ]);
    assert_balanced(&v);
    assert_eq!(v["requests"]["errors"]["check"].as_u64(), Some(50), "{v}");
    assert_eq!(req(&v, "completed"), 150);
}

/// Hostile: the stream source closes every second answer mid-stream; Caddy resets that request
/// stream after its events had come. Each such stream fails as `stream_cut` (class `stream`),
/// the reset is counted with its code, and the connections carry on (none is lost or remade).
#[test]
#[ignore = "needs caddy: scripts/test.sh"]
fn a_stream_reset_mid_stream_over_h3_fails_as_cut_and_the_connection_carries_on() {
    let _g = serial();
    let (_s, caddy) = behind_caddy(
        "cut",
        &[
            "--llm",
            "--ttft",
            "5ms",
            "--itl",
            "2ms",
            "--output-tokens",
            "4",
            "--llm-fault",
            "close-mid-stream",
            "--fault-every",
            "2",
        ],
    );
    let (ca, url) = (caddy.ca(), caddy.url());
    let (v, out) = run_json_any(&[
        "--h3",
        "--ca",
        &ca,
        "--llm",
        "openai",
        "--output-tokens",
        "4",
        "-R",
        "40",
        "-c",
        "2",
        "--streams",
        "8",
        "-t",
        "1",
        "-d",
        "1s",
        &url,
    ]);
    assert_balanced(&v);
    assert_eq!(req(&v, "intended"), 40, "{}", text(&out));
    assert_eq!((req(&v, "completed"), req(&v, "failed")), (20, 20), "{v}");
    assert_eq!(v["requests"]["errors"]["stream"].as_u64(), Some(20), "{v}");
    assert_eq!(
        v["stream"]["failures"]["stream_cut"].as_u64(),
        Some(20),
        "{v}"
    );
    let faults = v["connection_faults"].as_object().unwrap();
    let resets: u64 = faults
        .iter()
        .filter(|(k, _)| k.starts_with("server reset a request stream: "))
        .map(|(_, n)| n.as_u64().unwrap())
        .sum();
    assert_eq!(resets, 20, "{faults:?}");
    assert_eq!(req(&v, "connections_opened"), 2, "{v}");
}
