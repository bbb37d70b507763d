//! `run --records FILE.jsonl` end to end: a line per intended request (completed, failed and
//! unfinished alike), whole after SIGINT, refused before any load on a bad path, and read back
//! by `candor report` with the run's own percentiles, on a server whose stalls are known truth.

mod common;
mod support {
    pub mod process;
}

use common::{candor, pct, req, serial, text, Server};
use std::net::TcpListener;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use support::process::*;

/// Every line of a records file, parsed (a line that is not whole JSON fails the test).
fn lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .expect("records written")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// Intended requests of both phases.
fn intended(v: &serde_json::Value) -> u64 {
    req(v, "intended") + v["warmup"]["requests"]["intended"].as_u64().unwrap_or(0)
}

/// Records the queue had no room for, as the results' warning says.
fn dropped(v: &serde_json::Value) -> u64 {
    v["warnings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|w| w.as_str()?.strip_prefix("--records: "))
        .filter_map(|w| w.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// A server that accepts connections and never answers.
fn black_hole() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in listener.incoming().flatten() {
            held.push(s);
        }
    });
    url
}

/// `candor serve` stalls for the last 200 ms of every second: at 200/s a fifth of the requests
/// wait for the stall's end, so the response time's p99 is ~190 ms (the 1% waiting longest
/// came in its first 10 ms). The records hold a line per request, and the report rebuilt from
/// them has the run's percentiles exactly (the same values into the same histograms).
#[test]
fn records_are_one_line_per_request_and_report_the_runs_percentiles() {
    let _g = serial();
    let server = Server::start(&["--stall-every", "1s", "--stall-for", "200ms"]);
    let dir = tmp("records-stall");
    let (records, json) = (dir.join("r.jsonl"), dir.join("r.json"));
    let out = candor()
        .args(["run", "-q", "-R", "200", "-d", "3s", "--warmup", "500ms"])
        .arg("--records")
        .arg(&records)
        .arg("--json")
        .arg(&json)
        .arg(&server.url)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let v = read_json(&json);
    let all = lines(&records);
    assert_eq!(all.len() as u64 + dropped(&v), intended(&v));
    assert_eq!(dropped(&v), 0, "200/s cannot outrun the writer");
    let measured = all.iter().filter(|l| l["phase"] == "measured").count() as u64;
    assert_eq!(measured, req(&v, "intended"));
    for l in &all {
        assert!(l["intended_ns"].as_u64().unwrap() <= l["end_ns"].as_u64().unwrap());
    }
    let p99 = pct(&v, "response_time", 99.0);
    assert!(
        (150e6..400e6).contains(&p99),
        "p99 {p99} ns: not the stall's"
    );

    let text_of = std::fs::read_to_string(&records).unwrap();
    let back = candor_report::input::load(&text_of, "r.jsonl", &Default::default()).unwrap();
    let back = serde_json::to_value(&back).unwrap();
    for m in ["response_time", "service_time", "send_lag", "first_byte"] {
        for p in [50.0, 99.0] {
            assert_eq!(pct(&back, m, p), pct(&v, m, p), "{m} p{p}");
        }
    }
    assert_eq!(req(&back, "completed"), req(&v, "completed"));
    let report = candor().arg("report").arg(&records).output().unwrap();
    assert!(report.status.success(), "{}", text(&report));
    let t = text(&report);
    assert!(
        t.contains(&format!("{} intended", req(&v, "intended"))),
        "{t}"
    );
}

/// Requests still outstanding at the end (sent and never answered, or never sent at all) have
/// their lines too, and SIGINT leaves the file whole.
#[test]
fn unfinished_requests_are_written_and_sigint_leaves_the_file_whole() {
    let _g = serial();
    let url = black_hole();
    let dir = tmp("records-sigint");
    let (records, json) = (dir.join("r.jsonl"), dir.join("r.json"));
    let child = candor()
        .args([
            "run", "-q", "-R", "2000", "-c", "4", "-d", "60s", "-T", "60s",
        ])
        .arg("--records")
        .arg(&records)
        .arg("--json")
        .arg(&json)
        .arg(&url)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_handlers(&child);
    std::thread::sleep(Duration::from_secs(2));
    signal(&child, libc::SIGINT);
    let (out, _) = exit_within(child, Duration::from_secs(20));
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    let v = read_json(&json);
    let all = lines(&records);
    assert_eq!(all.len() as u64 + dropped(&v), intended(&v));
    assert!(all.iter().all(|l| l["outcome"] == "unfinished"));
    // Four were written (one per connection); the rest never left the schedule.
    let sent = all.iter().filter(|l| l.get("sent_ns").is_some()).count();
    assert_eq!(sent as u64, req(&v, "sent_unanswered"));
    assert!(all.len() > sent);
}

#[test]
fn a_bad_records_path_is_one_line_before_any_load() {
    let out = candor()
        .args([
            "run",
            "-R",
            "10",
            "-d",
            "1s",
            "--records",
            "/nonexistent/dir/r.jsonl",
        ])
        .arg(refused_url())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("candor: error: --records /nonexistent/dir/r.jsonl:"),
        "{err}"
    );
}

/// `--repeat`: one file, each line naming its run, a line per intended request of every run.
#[test]
fn repeats_write_one_file_whose_lines_name_their_run() {
    let _g = serial();
    let server = Server::start(&[]);
    let dir = tmp("records-repeat");
    let (records, json) = (dir.join("r.jsonl"), dir.join("r.json"));
    let out = candor()
        .args(["run", "-q", "--repeat", "2", "--repeat-pause", "100ms"])
        .args(["-R", "50", "-d", "1s", "--records"])
        .arg(&records)
        .arg("--json")
        .arg(&json)
        .arg(&server.url)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let v = read_json(&json);
    let all = lines(&records);
    assert_eq!(all.len() as u64 + dropped(&v), intended(&v));
    for run in [1, 2] {
        let n = all.iter().filter(|l| l["run"] == run).count();
        assert_eq!(n, 50, "run {run}");
    }
}
