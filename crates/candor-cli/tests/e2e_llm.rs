//! `candor run --llm openai` against `candor serve --llm`, whose truth is known: time to first
//! token under a periodic stall against the prediction of docs/truth.md ("LLM time to first
//! token"), tokens and events exact, and each way a stream can fail counted under its name with
//! the books balanced.

mod common;
use common::*;

const MS: f64 = 1e6;

#[test]
fn ttft_under_a_stall_matches_the_analytic_truth_and_tokens_are_exact() {
    let _g = serial();
    let server = Server::start(&[
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
    ]);
    // 100/s for 8 s (four whole stall periods): 800 requests, constant arrival, so that the
    // stalled waits lie 10 ms apart. A stream takes 120 ms, plus up to 500 ms held by a stall:
    // at most 100 x 0.62 = 62 streams at once, so 128 connections never make a request wait.
    let (v, out) = run_json(&[
        "--llm",
        "openai",
        "--prompt-tokens",
        "16",
        "--output-tokens",
        "8",
        "-R",
        "100",
        "-c",
        "128",
        "-t",
        "1",
        "-d",
        "8s",
        "-T",
        "3s",
        &server.url,
    ]);
    assert_balanced(&v);
    assert_eq!((req(&v, "intended"), req(&v, "completed")), (800, 800));
    // docs/truth.md: TTFT = T + W, T = 50 ms, W the periodic stall's wait at t + T (f = 0.25,
    // uniform on (0, 500 ms]): p50 = T, p90 = T + 300, p99 = T + 480, max = T + 500 ms.
    let tol = 40.0 * MS;
    for (p, truth) in [(90.0, 350.0 * MS), (99.0, 530.0 * MS), (100.0, 550.0 * MS)] {
        let got = pct(&v, "ttft", p);
        eprintln!(
            "ttft p{p:<5} truth {:>6.1} ms  measured {:>6.1} ms",
            truth / MS,
            got / MS
        );
        assert!(
            (got - truth).abs() <= tol,
            "ttft p{p}: measured {:.1} ms, truth {:.1} ms",
            got / MS,
            truth / MS
        );
    }
    let p50 = pct(&v, "ttft", 50.0);
    assert!(
        (50.0 * MS..=65.0 * MS).contains(&p50),
        "ttft p50 {:.1} ms",
        p50 / MS
    );
    // Deterministic: 8 tokens (usage says so), 7 gaps between them, and 10 events (8 tokens,
    // the usage chunk, [DONE]) per response.
    let s = &v["stream"];
    assert_eq!(s["llm"]["output_tokens"], 6400);
    assert_eq!(s["llm"]["counted_from_usage"], 800);
    assert_eq!(s["events"], 8000);
    assert_eq!(v["itl"]["count"], 5600);
    assert_eq!(v["ttft_service"]["count"], 800);
    // Outside the stalls the gaps are the server's 10 ms.
    let itl50 = pct(&v, "itl", 50.0);
    assert!(
        (9.9 * MS..=15.0 * MS).contains(&itl50),
        "itl p50 {:.2} ms",
        itl50 / MS
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("ttft (sent)"), "{text}");
    assert!(text.contains("6,400 output tokens"), "{text}");
}

#[test]
fn each_way_a_stream_fails_is_counted_under_its_name_and_the_books_balance() {
    let _g = serial();
    for (fault, class, name) in [
        ("error-mid-stream", "stream", "stream_error"),
        ("no-done", "stream", "no_done"),
        ("close-mid-stream", "stream", "stream_cut"),
        ("rate-limit", "status", "rate_limited"),
    ] {
        let server = Server::start(&[
            "--llm",
            "--ttft",
            "5ms",
            "--itl",
            "2ms",
            "--output-tokens",
            "4",
            "--llm-fault",
            fault,
            "--fault-every",
            "2",
        ]);
        let (v, _) = run_json_any(&[
            "--llm",
            "openai",
            "-R",
            "40",
            "-c",
            "8",
            "-t",
            "1",
            "-d",
            "1s",
            &server.url,
        ]);
        assert_balanced(&v);
        assert_eq!(req(&v, "intended"), 40, "{fault}");
        let failed = v["requests"]["errors"][class].as_u64().unwrap();
        // Every second request the server answers gets the fault.
        assert!((15..=25).contains(&failed), "{fault}: {failed} in {class}");
        assert_eq!(req(&v, "failed"), failed, "{fault}: only the faults fail");
        assert_eq!(v["stream"]["failures"][name], failed, "{fault}");
    }
}

#[test]
fn default_timeouts_let_an_ordinary_stream_finish_and_an_impossible_bound_is_warned_of() {
    let _g = serial();
    // Truth: each answer is 128 tokens (--llm's default budget), the first at 50 ms and one
    // every 20 ms after: 50 + 127 x 20 = 2.59 s, past the default -T 2s. -T bounds only the
    // wait for the first token and --stream-timeout (60 s by default) the whole answer, so
    // all 20 complete; before, every one failed as a timeout.
    let server = Server::start(&[
        "--llm",
        "--ttft",
        "50ms",
        "--itl",
        "20ms",
        "--output-tokens",
        "128",
    ]);
    // No --model: the requests name the first model the server lists (as vLLM's bench serve
    // takes it), so nothing warns that the model is not served.
    let args = [
        "--llm", "openai", "-R", "10", "-c", "32", "-t", "1", "-d", "2s",
    ];
    let (v, out) = run_json(&[&args[..], &[server.url.as_str()]].concat());
    assert_balanced(&v);
    assert_eq!((req(&v, "intended"), req(&v, "completed")), (20, 20), "{v}");
    assert_eq!(v["stream"]["llm"]["output_tokens"], 20 * 128);
    assert!(!text(&out).contains("warning"), "{}", text(&out));
    let llm = &v["config"]["llm"];
    assert_eq!(
        (llm["model"].as_str(), llm["model_from"].as_str()),
        (Some("candor-truth"), Some("server")),
        "{llm}"
    );
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("--model not given: the requests name candor-truth"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // --stream-timeout 500ms: 128 tokens take 640 ms even at 5 ms a token, so the run is
    // warned of before it starts, and each stream fails as a timeout with its TTFT kept.
    let (v, out) = run_json_any(
        &[
            &args[..],
            &["--stream-timeout", "500ms", server.url.as_str()],
        ]
        .concat(),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("warning: answers of 128 tokens take 640")
            && err.contains("--stream-timeout 500"),
        "{err}"
    );
    assert_balanced(&v);
    assert_eq!(v["requests"]["errors"]["timeout"], 20, "{v}");
    assert_eq!(v["ttft"]["count"], 20);
}
