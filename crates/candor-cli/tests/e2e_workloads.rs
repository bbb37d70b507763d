//! End-to-end tests of the workload features against a local server that records when each
//! request arrived, so that the shape of the load is checked as the server saw it.

mod common;
use common::*;
#[path = "../../candor-load/tests/h2_support/mod.rs"]
mod h2_support;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// A recording HTTP/1.1 server: answers every request `200 ok` on a thread per connection and
/// keeps the arrival instant and request line of each. Stops with the test process.
struct Recorder {
    url: String,
    arrivals: Arc<Mutex<Vec<(Instant, String)>>>,
}

impl Recorder {
    fn start() -> Recorder {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let arrivals = Arc::new(Mutex::new(Vec::new()));
        let log = arrivals.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let log = log.clone();
                std::thread::spawn(move || serve(stream, &log));
            }
        });
        Recorder { url, arrivals }
    }

    /// Arrival offsets in seconds from the first, in arrival order, and the request lines.
    fn seen(&self) -> Vec<(f64, String)> {
        let mut v = self.arrivals.lock().unwrap().clone();
        v.sort_by_key(|a| a.0);
        let Some(first) = v.first().map(|a| a.0) else {
            return Vec::new();
        };
        v.into_iter()
            .map(|(t, line)| ((t - first).as_secs_f64(), line))
            .collect()
    }
}

/// Reads requests (bodies by Content-Length) off one connection and answers each.
fn serve(mut stream: TcpStream, log: &Mutex<Vec<(Instant, String)>>) {
    let _ = stream.set_nodelay(true);
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    loop {
        while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_string();
            let body = head
                .lines()
                .find_map(|l| {
                    let (name, value) = l.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse::<usize>().ok())?
                })
                .unwrap_or(0);
            if buf.len() < end + 4 + body {
                break;
            }
            buf.drain(..end + 4 + body);
            let line = head.lines().next().unwrap_or("").to_string();
            log.lock().unwrap().push((Instant::now(), line));
            if stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                .is_err()
            {
                return;
            }
        }
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// A ramp 100..900/s over 4 s sends where its integral 100τ + 100τ² reaches each k: 200, 400,
/// 600 and 800 requests in its four seconds, 2000 in all, exactly, and the server sees that shape.
#[test]
fn a_ramp_arrives_as_a_ramp() {
    let _g = serial();
    let server = Recorder::start();
    let (v, _) = run_json(&[
        "-R",
        "100..900:4s",
        "-c",
        "8",
        "-t",
        "2",
        &format!("{}/ramp", server.url),
    ]);
    assert_balanced(&v);
    assert_eq!(req(&v, "intended"), 2000, "the ramp's integral is 2000");
    assert_eq!(req(&v, "completed"), 2000);
    assert_eq!(v["duration_s"].as_f64(), Some(4.0));
    let stages = v["stages"].as_array().expect("a stages array");
    assert_eq!(stages.len(), 1);
    let s = &stages[0];
    assert_eq!(
        (s["start_s"].as_f64(), s["duration_s"].as_f64()),
        (Some(0.0), Some(4.0))
    );
    assert_eq!(
        (s["from_per_s"].as_f64(), s["to_per_s"].as_f64()),
        (Some(100.0), Some(900.0))
    );
    assert_eq!(s["requests"]["intended"].as_u64(), Some(2000));
    assert_eq!(s["response_time"]["count"].as_u64(), Some(2000));
    assert!(s["send_lag"]["percentiles"].is_array() && s["service_time"]["count"].is_u64());
    let seen = server.seen();
    assert_eq!(seen.len(), 2000);
    // The intended offset of send k solves 100τ + 100τ² = k. Anchor the server's clock on the
    // median of (arrival − intended) over all requests, so a late first request or the loopback
    // delay does not shift the bins.
    let intended = |k: usize| (-100.0 + (100.0f64 * 100.0 + 400.0 * k as f64).sqrt()) / 200.0;
    let mut shift: Vec<f64> = seen
        .iter()
        .enumerate()
        .map(|(k, (t, _))| t - intended(k))
        .collect();
    shift.sort_by(f64::total_cmp);
    let anchor = shift[shift.len() / 2];
    let mut per_second = [0i64; 4];
    for (t, _) in &seen {
        per_second[((t - anchor).max(0.0) as usize).min(3)] += 1;
    }
    eprintln!(
        "per-second arrivals as the server saw them: {per_second:?} (exact: [200, 400, 600, 800])"
    );
    // Tolerance: a bin gains or loses only requests displaced across one of its boundaries. A
    // displacement of up to 150 ms (thousands of times candor's send lag, room for a shared
    // 2-core machine's scheduler) moves at most rate × 0.15 s across a boundary where the rate
    // is 300, 500 or 700/s: 45, 75 and 105 requests, on each side of a bin.
    let exact = [200i64, 400, 600, 800];
    let slack = [45i64, 45 + 75, 75 + 105, 105];
    for i in 0..4 {
        assert!(
            (per_second[i] - exact[i]).abs() <= slack[i],
            "second {i}: {} arrivals, intended {} (±{})",
            per_second[i],
            exact[i],
            slack[i]
        );
    }
    assert!(seen.iter().all(|(_, line)| line == "GET /ramp HTTP/1.1"));
}

#[test]
fn malformed_stages_and_disagreeing_durations_are_one_line_errors() {
    let server = Recorder::start();
    for (args, expect) in [
        (vec!["-R", "500:"], "invalid stage '500:'"),
        (vec!["-R", "..100:5s"], "invalid stage '..100:5s'"),
        (vec!["-R", "100:0s"], "a stage must last longer than zero"),
        (vec!["-R", "-5:1s"], "rate '-5'"),
        (
            vec!["-R", "100:1s", "-d", "2s"],
            "-d 2s disagrees with the -R stages",
        ),
        (
            vec!["-R", "100:1s", "-n", "5"],
            "-n does not combine with -R stages",
        ),
    ] {
        let out = candor()
            .arg("run")
            .args(&args)
            .arg(&server.url)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(expect), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
    assert!(server.seen().is_empty(), "nothing may be sent on bad input");
}

fn temp_file(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("candor-wl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// A trace with a burst of 300 requests in 100 ms, then one every 10 ms, replayed: the server
/// sees the burst as a burst (not smoothed) and every record at its own offset.
#[test]
fn a_replayed_burst_arrives_as_a_burst() {
    let _g = serial();
    let server = Recorder::start();
    let mut trace = String::new();
    for i in 0..300 {
        trace.push_str(&format!(
            "{{\"at\": {}, \"path\": \"/burst/{i}\"}}\n",
            1000.0 + i as f64 / 3000.0
        ));
    }
    for i in 0..100 {
        trace.push_str(&format!(
            "{{\"at\": {}, \"method\": \"POST\", \"path\": \"/tail/{i}\", \"body\": \"x\"}}\n",
            1000.1 + (i + 1) as f64 / 100.0
        ));
    }
    let path = temp_file("burst.jsonl", &trace);
    let (v, _) = run_json(&[
        "--replay",
        path.to_str().unwrap(),
        "-c",
        "8",
        "-t",
        "2",
        &server.url,
    ]);
    assert_balanced(&v);
    assert_eq!(req(&v, "intended"), 400);
    assert_eq!(req(&v, "completed"), 400);
    let seen = server.seen();
    assert_eq!(seen.len(), 400);
    // Each record's intended offset, by its path; the error of its arrival, against the median
    // error (which absorbs the fixed start-up and loopback delay).
    let intended = |line: &str| -> f64 {
        let path = line.split(' ').nth(1).unwrap();
        let (kind, i) = path[1..].split_once('/').unwrap();
        let i: f64 = i.parse().unwrap();
        if kind == "burst" {
            i / 3000.0
        } else {
            0.1 + (i + 1.0) / 100.0
        }
    };
    let mut errors: Vec<f64> = seen.iter().map(|(t, line)| t - intended(line)).collect();
    let mut sorted = errors.clone();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    for e in &mut errors {
        *e = (*e - median).abs();
    }
    errors.sort_by(f64::total_cmp);
    let p99 = errors[errors.len() * 99 / 100];
    let burst = seen.iter().filter(|(t, _)| *t - median < 0.1).count();
    eprintln!(
        "replayed burst: send-time error p99 {:.3} ms; {burst} arrivals in the burst's 100 ms (300 recorded)",
        p99 * 1e3
    );
    // Tolerances, from what a wrong replay would look like: one that smoothed the trace over its
    // 1.1 s would send burst record i at i × 1.1 s / 400 instead of i / 3000 s, so the last
    // burst records would be ~0.7 s off, only ~90 of the 300 would come within 250 ms of the
    // start, and the p99 error would exceed 0.5 s. Bounds of 250 ms leave that much room for a
    // shared machine (a thread per connection on the recording side, 2 cores for everything)
    // while still failing any smoothing or re-anchoring.
    let in_burst = seen.iter().filter(|(t, _)| *t - median < 0.25).count();
    assert!(
        in_burst >= 250,
        "{in_burst} of 300 burst requests arrived in the burst"
    );
    assert!(p99 < 0.25, "send-time error p99 {p99} s");
    assert!(seen.iter().any(|(_, l)| l.starts_with("POST /tail/99 ")));
}

/// `{{seq}}` is the request's index in the whole schedule: unique across threads and shards,
/// and together the shards send exactly 0..N.
/// Two stages, warm-up at the first stage's rate, and shards: each shard's stages carry half of
/// every stage's integral, and the warm-up is not in any stage.
#[test]
fn stages_split_across_shards_and_the_warm_up_holds_the_first_rate() {
    let _g = serial();
    let server = Recorder::start();
    let mut per_stage = [0u64; 2];
    for shard in ["0/2", "1/2"] {
        let (v, _) = run_json(&[
            "-R",
            "300:1s,300..900:1s",
            "--warmup",
            "500ms",
            "-c",
            "4",
            "--shard",
            shard,
            &server.url,
        ]);
        assert_balanced(&v);
        // Warm-up 300/s for 0.5 s is 150, half each.
        assert_eq!(v["warmup"]["requests"]["intended"].as_u64(), Some(75));
        let stages = v["stages"].as_array().unwrap();
        assert_eq!(
            stages[1]["from_per_s"].as_f64(),
            Some(150.0),
            "a shard's share"
        );
        for (i, s) in stages.iter().enumerate() {
            per_stage[i] += s["requests"]["intended"].as_u64().unwrap();
        }
        assert_eq!(req(&v, "intended"), 450, "300 + 600, half each");
    }
    assert_eq!(per_stage, [300, 600]);
    assert_eq!(server.seen().len(), 150 + 900);
}

#[test]
fn seq_is_unique_across_threads_and_shards() {
    let _g = serial();
    let server = Recorder::start();
    let url = format!("{}/item/{{{{seq}}}}?d={{{{random:1:6}}}}", server.url);
    for shard in ["0/2", "1/2"] {
        let (v, _) = run_json(&[
            "-R", "400", "-d", "1s", "-c", "4", "-t", "2", "--shard", shard, &url,
        ]);
        assert_balanced(&v);
        assert_eq!(req(&v, "completed"), 200, "each shard carries half");
    }
    let mut seqs: Vec<u64> = server
        .seen()
        .iter()
        .map(|(_, line)| {
            let path = line.split(' ').nth(1).unwrap();
            let (seq, dice) = path["/item/".len()..].split_once("?d=").unwrap();
            let dice: u64 = dice.parse().unwrap();
            assert!((1..=6).contains(&dice), "{line}");
            seq.parse().unwrap()
        })
        .collect();
    seqs.sort_unstable();
    assert_eq!(seqs, (0..400).collect::<Vec<u64>>());
}

/// Weighted named requests filled from a CSV, and body and header checks: a failed check is
/// counted in class `check`, its response time still recorded.
#[test]
fn templates_weights_and_checks_end_to_end() {
    let _g = serial();
    let server = Recorder::start();
    let data = temp_file("users.csv", "user,id\nalice,1\n\"bob, jr\",2\n");
    let reqs = temp_file(
        "reqs.jsonl",
        "{\"name\": \"home\", \"path\": \"/home\", \"weight\": 3}\n{\"name\": \"user\", \"path\": \"/u/{{data:id}}\", \"headers\": {\"X-User\": \"{{data:user}}\"}, \"weight\": 1}\n",
    );
    let (v, _) = run_json(&[
        "-R",
        "400",
        "-d",
        "1s",
        "-c",
        "4",
        "--requests",
        reqs.to_str().unwrap(),
        "--data",
        data.to_str().unwrap(),
        "--check-body",
        "ok",
        &server.url,
    ]);
    assert_balanced(&v);
    assert_eq!(req(&v, "completed"), 400);
    let seen = server.seen();
    let users = seen
        .iter()
        .filter(|(_, l)| l.starts_with("GET /u/"))
        .count();
    // Weight 1 of 4: 100 expected, binomial sd ≈ 8.7; 5 sd.
    assert!(
        (users as i64 - 100).abs() < 44,
        "{users} of 400 were 'user'"
    );
    assert!(seen.iter().any(|(_, l)| l == "GET /u/2 HTTP/1.1"));
    // The breakdown by name adds up to the totals.
    let by = &v["by_request"];
    let (home, user) = (&by["home"]["requests"], &by["user"]["requests"]);
    assert_eq!(
        home["intended"].as_u64().unwrap() + user["intended"].as_u64().unwrap(),
        400
    );
    assert_eq!(user["completed"].as_u64(), Some(users as u64));
    assert_eq!(
        by["user"]["response_time"]["count"].as_u64(),
        Some(users as u64)
    );

    let (v, out) = run_json_any(&[
        "-R",
        "200",
        "-d",
        "1s",
        "-c",
        "2",
        "--check-body",
        "nope",
        &server.url,
    ]);
    assert_balanced(&v);
    assert_eq!(v["requests"]["errors"]["check"].as_u64(), Some(200));
    assert_eq!(
        v["response_time"]["count"].as_u64(),
        Some(200),
        "latencies are recorded"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("check 200"));
    let (v, _) = run_json_any(&[
        "-R",
        "200",
        "-d",
        "1s",
        "-c",
        "2",
        "--check-header",
        "Content-Length: 3",
        &server.url,
    ]);
    assert_eq!(v["requests"]["errors"]["check"].as_u64(), Some(200));
    let (v, _) = run_json(&[
        "-R",
        "200",
        "-d",
        "1s",
        "-c",
        "2",
        "--check-header",
        "content-length: 2",
        &server.url,
    ]);
    assert_eq!(v["requests"]["errors"]["check"].as_u64(), Some(0));
}

#[test]
fn bad_workload_input_is_refused_before_any_load() {
    let server = Recorder::start();
    let bad_csv = temp_file("bad.csv", "user,id\nalice,1\nbob\n");
    let backwards = temp_file(
        "back.jsonl",
        "{\"at\": 1, \"path\": \"/a\"}\n{\"at\": 0.5, \"path\": \"/b\"}\n",
    );
    let url_with = |p: &str| format!("{}{p}", server.url);
    for (args, expect) in [
        (
            vec![url_with("/{{nope}}")],
            "unknown placeholder '{{nope}}'",
        ),
        (
            vec![
                "--data".into(),
                bad_csv.display().to_string(),
                url_with("/{{data:user}}"),
            ],
            "line 3: 1 fields, but the header has 2",
        ),
        (
            vec![url_with("/{{data:user}}")],
            "but no --data file is given",
        ),
        (
            vec![
                "--replay".into(),
                backwards.display().to_string(),
                server.url.clone(),
            ],
            "line 2: timestamp 0.5 goes backwards",
        ),
        (
            vec![
                "--replay".into(),
                "/nonexistent/trace".into(),
                server.url.clone(),
            ],
            "cannot read --replay /nonexistent/trace",
        ),
        (
            vec!["--check-header".into(), "bad".into(), server.url.clone()],
            "invalid --check-header 'bad'",
        ),
    ] {
        let out = candor()
            .arg("run")
            .arg("-d")
            .arg("1s")
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(expect), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
    assert!(server.seen().is_empty(), "nothing may be sent on bad input");
}

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
