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

/// The body of every answer to `GET /busy`: a tab and a CRLF, to be shown escaped.
const BUSY_BODY: &str = "over capacity\tretry in 5s\r\n";

/// `GET /busy` gets a 503 with [`BUSY_BODY`], `GET /wrong` a 200 whose body says `"ok":false`,
/// anything else `200 ok`.
fn answer_to(request_line: &str) -> &'static [u8] {
    if request_line.starts_with("GET /busy ") {
        b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 27\r\n\r\nover capacity\tretry in 5s\r\n"
    } else if request_line.starts_with("GET /wrong ") {
        b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n{\"ok\":false}"
    } else {
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    }
}

/// Reads requests (bodies by Content-Length) off one connection and answers each.
fn serve(mut stream: TcpStream, log: &Mutex<Vec<(Instant, String)>>) {
    let _ = stream.set_nodelay(true);
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    loop {
        while let Some(head) = take_request_head(&mut buf) {
            let line = head.lines().next().unwrap_or("").to_string();
            let answer = answer_to(&line);
            log.lock().unwrap().push((Instant::now(), line));
            if stream.write_all(answer).is_err() {
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
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("check 200"), "{text}");
    // Answered but failed is not unanswered: the achieved rate counts the responses, and the
    // warning names the check, not the target's capacity.
    let achieved = v["rate"]["achieved_per_s"].as_f64().unwrap();
    assert!((achieved - 200.0).abs() < 1e-6, "achieved {achieved}/s");
    assert!(!text.contains("could not keep up"), "{text}");
    assert!(!text.contains("minority that was answered"), "{text}");
    assert!(
        text.contains("200 of 200 responses failed --check-body (class check)"),
        "{text}"
    );
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

/// Responses that fail their status (503) or the body check (a 200 without the text) are
/// counted, and the first five by intended time are shown once, as they came back: name,
/// status, class and check, and the body made printable; the JSON holds the same.
#[test]
fn the_first_failed_responses_are_shown_with_status_and_body() {
    let _g = serial();
    let server = Recorder::start();
    assert_eq!(BUSY_BODY.len(), 27, "the Content-Length of the answer");
    let reqs = temp_file(
        "failing.jsonl",
        "{\"name\": \"busy\", \"path\": \"/busy\"}\n{\"name\": \"wrong\", \"path\": \"/wrong\"}\n",
    );
    let (v, out) = run_json_any(&[
        "-R",
        "100",
        "-d",
        "1s",
        "-c",
        "2",
        "--requests",
        reqs.to_str().unwrap(),
        "--check-body",
        "\"ok\":true",
        &server.url,
    ]);
    assert_balanced(&v);
    let e = &v["requests"]["errors"];
    assert_eq!(
        (e["status"].as_u64(), e["check"].as_u64()),
        (Some(50), Some(50))
    );
    let examples = v["failure_examples"].as_array().expect("failure_examples");
    // Every request failed: the five earliest by intended time are the schedule's first five.
    let seqs: Vec<u64> = examples
        .iter()
        .map(|x| x["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, vec![0, 1, 2, 3, 4]);
    for x in examples {
        match x["request"].as_str().unwrap() {
            "busy" => {
                assert_eq!(x["status"].as_u64(), Some(503));
                assert_eq!(
                    (x["class"].as_str(), x["check"].as_str()),
                    (Some("status"), Some("status"))
                );
                assert_eq!(
                    x["excerpt"].as_str(),
                    Some("over capacity\\tretry in 5s\\r\\n")
                );
            }
            "wrong" => {
                assert_eq!(x["status"].as_u64(), Some(200));
                assert_eq!(
                    (x["class"].as_str(), x["check"].as_str()),
                    (Some("check"), Some("body"))
                );
                assert_eq!(x["excerpt"].as_str(), Some("{\"ok\":false}"));
            }
            other => panic!("unexpected request name {other}"),
        }
    }
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.matches("first failed responses:").count(), 1, "{text}");
    let line_of = |name: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(name) && l.contains("body \""))
            .unwrap_or_else(|| panic!("no line for {name} in\n{text}"))
            .to_string()
    };
    let busy = line_of("busy");
    assert!(
        busy.contains("status 503") && busy.contains("body \"over capacity\\tretry in 5s\\r\\n\""),
        "{busy}"
    );
    let wrong = line_of("wrong");
    assert!(
        wrong.contains("status 200")
            && wrong.contains("check (body)")
            && wrong.contains(r#"body "{\"ok\":false}""#),
        "{wrong}"
    );
    // A run whose responses all pass shows no such section and writes no such field.
    let (v, out) = run_json(&["-R", "100", "-d", "1s", "-c", "2", &server.url]);
    assert!(v.get("failure_examples").is_none());
    assert!(!String::from_utf8_lossy(&out.stdout).contains("first failed responses"));
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

fn load_json(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("results written")).expect("json")
}

/// A load profile with named requests, run as two shards with a common `--start-at`, reported as
/// HTML and merged: the merged stages are each the sum of the shards' (so each stage's integral,
/// at the whole profile's rates), the names add up, and the pages show stages and names; a file
/// of another profile is refused in one line.
#[test]
fn shards_of_a_profile_merge_stage_by_stage_and_report_as_html() {
    let _g = serial();
    let server = Recorder::start();
    let reqs = temp_file(
        "named.jsonl",
        "{\"name\": \"home\", \"path\": \"/\", \"weight\": 3}\n{\"name\": \"<b>search</b>\", \"path\": \"/s?q={{seq}}\", \"weight\": 1}\n",
    );
    let dir = reqs.parent().unwrap().join("profile-shards");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let unix_now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    // 3 s lead: two processes start and connect in tens of ms when idle; a late start would only
    // show in send lag, never in the counts checked here.
    let start_at = format!("{:.3}", unix_now + 3.0);
    let shards: Vec<_> = (0..2)
        .map(|i| {
            candor()
                .args(["run", "--shard", &format!("{i}/2"), "--start-at", &start_at])
                .args(["-R", "200:1s,200..600:1s", "--warmup", "500ms"])
                .args(["-c", "4", "-t", "1", "--quiet", "--requests"])
                .arg(&reqs)
                .arg("--json")
                .arg(dir.join(format!("shard-{i}.json")))
                .arg(&server.url)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("spawn a shard")
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|child| child.wait_with_output().expect("shard finished"))
        .collect();
    for (i, out) in shards.iter().enumerate() {
        assert!(
            out.status.success(),
            "shard {i}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let parts: Vec<serde_json::Value> = (0..2)
        .map(|i| load_json(&dir.join(format!("shard-{i}.json"))))
        .collect();

    // One shard's page: the stage table, the target line's data and the names, escaped.
    let page_path = dir.join("shard-0.html");
    let out = candor()
        .arg("report")
        .arg(dir.join("shard-0.json"))
        .arg("-o")
        .arg(&page_path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = std::fs::read_to_string(&page_path).unwrap();
    assert!(page.contains("<h2>Load profile stages</h2>"));
    assert!(
        page.contains("<td>100.0/s \u{2192} 300.0/s</td>"),
        "a shard's share of the ramp"
    );
    assert!(
        page.contains("\"profile\":[[0.0,100.0],[0.5,100.0]"),
        "the target line starts with the warm-up"
    );
    assert!(page.contains("<h2>By request name</h2>"));
    assert!(page.contains("&lt;b&gt;search&lt;/b&gt;</th>"));
    assert!(page.contains("id=\"names-0\""));

    let merged_path = dir.join("merged.json");
    let out = candor()
        .arg("merge")
        .arg(dir.join("shard-0.json"))
        .arg(dir.join("shard-1.json"))
        .arg("-o")
        .arg(&merged_path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let m = load_json(&merged_path);
    assert_balanced(&m);
    let stages = m["stages"].as_array().expect("merged stages");
    assert_eq!(stages.len(), 2);
    let count = |v: &serde_json::Value, k: &str| v["requests"][k].as_u64().unwrap();
    for (k, s) in stages.iter().enumerate() {
        for field in ["intended", "completed", "failed"] {
            let sum: u64 = parts.iter().map(|p| count(&p["stages"][k], field)).sum();
            assert_eq!(count(s, field), sum, "stage {k} {field}");
        }
        let samples: u64 = parts
            .iter()
            .map(|p| p["stages"][k]["response_time"]["count"].as_u64().unwrap())
            .sum();
        assert_eq!(s["response_time"]["count"].as_u64(), Some(samples));
        let max = parts
            .iter()
            .map(|p| p["stages"][k]["response_time"]["max_ns"].as_u64().unwrap())
            .max();
        assert_eq!(
            s["response_time"]["max_ns"].as_u64(),
            max,
            "histograms added, not averaged"
        );
    }
    // Each stage's integral, as one process would send it: 200 × 1 s, then (200 + 600) / 2 × 1 s.
    assert_eq!(count(&stages[0], "intended"), 200);
    assert_eq!(count(&stages[1], "intended"), 400);
    // The shards ran together, so the stage's rates are the whole profile's.
    let rate = |k: &str| stages[1][k].as_f64().unwrap();
    assert!(
        (rate("from_per_s") - 200.0).abs() < 1e-6,
        "{}",
        rate("from_per_s")
    );
    assert!(
        (rate("to_per_s") - 600.0).abs() < 1e-6,
        "{}",
        rate("to_per_s")
    );
    for name in ["home", "<b>search</b>"] {
        let sum: u64 = parts
            .iter()
            .map(|p| count(&p["by_request"][name], "intended"))
            .sum();
        assert_eq!(count(&m["by_request"][name], "intended"), sum, "{name}");
    }
    let named: u64 = ["home", "<b>search</b>"]
        .iter()
        .map(|n| count(&m["by_request"][n], "completed"))
        .sum();
    assert_eq!(
        named,
        req(&m, "completed"),
        "every completed request had a name"
    );

    // The merged page and text show the whole profile.
    let out = candor()
        .arg("report")
        .arg(&merged_path)
        .arg("-o")
        .arg(dir.join("merged.html"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = std::fs::read_to_string(dir.join("merged.html")).unwrap();
    assert!(page.contains("<td>200.0/s \u{2192} 600.0/s</td>"));
    let out = candor().arg("report").arg(&merged_path).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("1.0-2.0s 200.0/s..600.0/s"), "{text}");

    // Objectives are judged on each stage as well (recorded, shown); the exit code is the whole
    // run's. No response takes under 1 ns and every error share is at most 100%: exact verdicts.
    let out = candor()
        .arg("merge")
        .arg(dir.join("shard-0.json"))
        .arg(dir.join("shard-1.json"))
        .args(["-o", "-", "--slo", "p99<1ns,errors<=100%"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("objectives per stage"), "{err}");
    assert!(
        err.contains("  stage 2 (1.0-2.0s 200.0/s..600.0/s):\n    SLO p99<1ns"),
        "{err}"
    );
    let judged: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for s in judged["stages"].as_array().unwrap() {
        let slo = &s["analysis"]["slo"];
        assert_eq!(slo[0]["pass"], false, "{slo}");
        assert_eq!(slo[1]["pass"], true, "{slo}");
    }

    // A file of another profile does not merge stage by stage: one line, non-zero exit.
    let mut other = parts[1].clone();
    other["stages"][1]["to_per_s"] = serde_json::json!(500.0);
    let other_path = dir.join("other.json");
    std::fs::write(&other_path, other.to_string()).unwrap();
    let out = candor()
        .arg("merge")
        .arg(dir.join("shard-0.json"))
        .arg(&other_path)
        .args(["-o", "-"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("run 2 has other load-profile stages than run 1 (stage 2 is 100.0/s..500.0/s"),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "nothing written on refusal");
    let _ = std::fs::remove_dir_all(&dir);
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
