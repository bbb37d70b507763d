//! The workload features over HTTP/2 end to end, against the h2 test server that records what it
//! received: templates, weights and the by-request books, response checks, and a replayed trace.

mod common;
use common::*;
#[path = "../../candor-load/tests/h2_support/mod.rs"]
mod h2_support;
mod support {
    pub mod workload;
}

use support::workload::*;

/// The server's record of the requests it received over HTTP/2.
fn h2_seen(server: &h2_support::H2Server) -> Vec<String> {
    server.stats.requests.lock().unwrap().clone()
}

/// Over `--h2`, templates are filled per request (`{{seq}}` unique as the server saw it, in the
/// path, a header and the body), weighted named requests are drawn by weight and broken down in
/// `by_request`, and every response passes `--check-body`.
#[test]
fn h2_templates_weights_and_by_request() {
    let _g = serial();
    let server = h2_support::start(h2_support::ServerOptions::default());
    let url = format!("http://{}", server.addr);
    let reqs = temp_file(
        "h2reqs.jsonl",
        "{\"name\": \"home\", \"path\": \"/home/{{seq}}\", \"weight\": 3}\n{\"name\": \"post\", \"method\": \"POST\", \"path\": \"/p/{{seq}}\", \"headers\": {\"X-Seq\": \"{{seq}}\"}, \"body\": \"n={{seq}}\", \"weight\": 1}\n",
    );
    let (v, _) = run_json(&[
        "--h2",
        "-R",
        "400",
        "-d",
        "1s",
        "-c",
        "2",
        "--streams",
        "4",
        "--requests",
        reqs.to_str().unwrap(),
        "--check-body",
        "ok",
        &url,
    ]);
    assert_balanced(&v);
    assert_eq!(req(&v, "completed"), 400);
    assert_eq!(v["requests"]["errors"]["check"].as_u64(), Some(0));
    let seen = h2_seen(&server);
    assert_eq!(seen.len(), 400);
    let mut seqs: Vec<u64> = Vec::new();
    let mut posts = 0;
    for line in &seen {
        let mut words = line.split(' ');
        let (method, path) = (words.next().unwrap(), words.next().unwrap());
        let seq: u64 = path.rsplit('/').next().unwrap().parse().unwrap();
        if method == "POST" {
            posts += 1;
            assert!(path.starts_with("/p/"), "{line}");
            let rest: Vec<&str> = words.collect();
            assert_eq!(
                rest,
                [format!("x-seq={seq}"), format!("body=n={seq}")],
                "{line}"
            );
        } else {
            assert!(path.starts_with("/home/"), "{line}");
        }
        seqs.push(seq);
    }
    seqs.sort_unstable();
    assert_eq!(seqs, (0..400).collect::<Vec<u64>>(), "each seq once");
    // Weight 1 of 4: 100 expected, binomial sd ≈ 8.7; 5 sd.
    assert!(
        (posts as i64 - 100).abs() < 44,
        "{posts} of 400 were 'post'"
    );
    let by = &v["by_request"];
    let (home, post) = (&by["home"]["requests"], &by["post"]["requests"]);
    assert_eq!(post["completed"].as_u64(), Some(posts));
    assert_eq!(home["completed"].as_u64(), Some(400 - posts));
    assert_eq!(by["post"]["response_time"]["count"].as_u64(), Some(posts));
}

/// Over `--h2`, a response that fails `--check-body` or `--check-header` is a `check` failure with
/// its latency recorded; per-line `check_status` and `check_body` apply to their line only.
#[test]
fn h2_response_checks() {
    let _g = serial();
    let server = h2_support::start(h2_support::ServerOptions::default());
    let url = format!("http://{}", server.addr);
    let run = |extra: &[&str]| {
        let mut args = vec!["--h2", "-R", "200", "-d", "1s", "-c", "2", "--streams", "4"];
        args.extend_from_slice(extra);
        args.push(&url);
        let (v, out) = run_json_any(&args);
        assert_balanced(&v);
        (v, out)
    };
    let (v, out) = run(&["--check-body", "nope"]);
    assert_eq!(v["requests"]["errors"]["check"].as_u64(), Some(200));
    // The first failures are kept with their body's first bytes, as over HTTP/1.1.
    let examples = v["failure_examples"].as_array().expect("failure_examples");
    assert!(!examples.is_empty(), "{v}");
    for x in examples {
        assert_eq!(x["status"].as_u64(), Some(200), "{x}");
        assert_eq!(x["check"].as_str(), Some("body"), "{x}");
        assert!(!x["excerpt"].as_str().unwrap_or("").is_empty(), "{x}");
    }
    assert_eq!(
        v["response_time"]["count"].as_u64(),
        Some(200),
        "latencies are recorded"
    );
    assert!(!out.status.success());
    let (v, _) = run(&["--check-header", "content-type: text/html"]);
    assert_eq!(v["requests"]["errors"]["check"].as_u64(), Some(200));
    let (v, out) = run(&[
        "--check-header",
        "Content-Type: text/plain",
        "--check-body",
        "ok",
    ]);
    assert_eq!(v["requests"]["errors"]["check"].as_u64(), Some(0));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reqs = temp_file(
        "h2checks.jsonl",
        "{\"name\": \"a\", \"path\": \"/a\"}\n{\"name\": \"b\", \"path\": \"/b\", \"check_body\": \"nope\"}\n{\"name\": \"c\", \"path\": \"/c\", \"check_status\": \"404\"}\n",
    );
    let (v, _) = run(&["--requests", reqs.to_str().unwrap()]);
    let by = &v["by_request"];
    assert_eq!(by["a"]["requests"]["failed"].as_u64(), Some(0));
    let b = by["b"]["requests"]["completed"].as_u64().unwrap()
        + by["b"]["requests"]["failed"].as_u64().unwrap();
    assert!(b > 0);
    assert_eq!(v["requests"]["errors"]["check"].as_u64(), Some(b));
    assert_eq!(
        v["requests"]["errors"]["status"].as_u64(),
        by["c"]["requests"]["intended"].as_u64()
    );
}

/// `--replay` over `--h2`: every record is sent with its own method, path and body.
#[test]
fn h2_replay_sends_the_traces_requests() {
    let _g = serial();
    let server = h2_support::start(h2_support::ServerOptions::default());
    let url = format!("http://{}", server.addr);
    let mut trace = String::new();
    for i in 0..100 {
        trace.push_str(&format!(
            "{{\"at\": {}, \"path\": \"/r/{i}\"}}\n",
            i as f64 / 200.0
        ));
    }
    trace.push_str("{\"at\": 0.5, \"method\": \"POST\", \"path\": \"/last\", \"body\": \"hi\"}\n");
    let path = temp_file("h2trace.jsonl", &trace);
    let (v, _) = run_json(&["--h2", "--replay", path.to_str().unwrap(), "-c", "2", &url]);
    assert_balanced(&v);
    assert_eq!(req(&v, "intended"), 101);
    assert_eq!(req(&v, "completed"), 101);
    let mut seen = h2_seen(&server);
    seen.sort();
    let mut expected: Vec<String> = (0..100).map(|i| format!("GET /r/{i}")).collect();
    expected.push("POST /last body=hi".into());
    expected.sort();
    assert_eq!(seen, expected);
}
