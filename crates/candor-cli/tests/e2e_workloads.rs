//! End-to-end tests of the workload features against a local server that records when each
//! request arrived, so that the shape of the load is checked as the server saw it. Over HTTP/2
//! in e2e_workloads_h2.rs; split across shards in e2e_workloads_shards.rs.

mod common;
use common::*;
#[path = "../../candor-load/tests/h2_support/mod.rs"]
mod h2_support;
mod support {
    pub mod workload;
}

use support::workload::*;

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
