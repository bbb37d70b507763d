//! `candor sweep --llm` and `candor capacity --llm` against `candor serve --llm`, whose truth is
//! known (docs/truth.md, "LLM sweeps and capacity"): 4 requests in flight (`--max-concurrency 4`
//! in the sweep, `-c 4` in the capacity search), each one stream of
//! 50 ms + 7 x 10 ms = 120 ms at a time, so the server delivers at most 4 / 0.12 = 33.3
//! requests/s and 267 output tokens/s. Below that TTFT is the server's 50 ms from either send;
//! above it the requests wait in the client, which TTFT from the intended send shows and TTFT
//! from the actual send does not.

mod common;
use common::*;

const MS: f64 = 1e6;

fn server() -> Server {
    Server::start(&[
        "--llm",
        "--ttft",
        "50ms",
        "--itl",
        "10ms",
        "--output-tokens",
        "8",
    ])
}

const LLM: [&str; 10] = [
    "--llm",
    "openai",
    "--prompt-tokens",
    "16",
    "--output-tokens",
    "8",
    "-c",
    "4",
    "-t",
    "1",
];

/// A directory of this test's own, emptied first.
fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("candor-e2e-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn step(v: &serde_json::Value, i: usize) -> &serde_json::Value {
    &v["steps"][i]["results"]
}

#[test]
fn a_sweep_reports_ttft_from_both_sends_tpot_goodput_and_tokens_per_step() {
    let _g = serial();
    let server = server();
    let dir = scratch("llm-sweep");
    let json = dir.join("sweep.json");
    let out = candor()
        .args(["sweep", "--rates", "10,60", "--pause", "0s", "-d", "2s"])
        // vLLM's spelling of the cap: 4 requests in flight, as -c 4 over HTTP/1.1.
        .args(
            LLM.iter()
                .map(|a| if *a == "-c" { "--max-concurrency" } else { a }),
        )
        .args(["--goodput", "ttft<500ms", "--quiet", "--json"])
        .arg(&json)
        .arg(&server.url)
        .output()
        .unwrap();
    let text = text(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("LLM measures against offered load:"),
        "{text}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    // 10/s: under capacity, TTFT = 50 ms from either send (a busy machine adds, never takes).
    let low = step(&v, 0);
    for m in ["ttft", "ttft_service"] {
        let p99 = pct(low, m, 99.0);
        assert!((50.0 * MS..250.0 * MS).contains(&p99), "{m} p99 {p99}");
    }
    let tpot = pct(low, "tpot", 50.0);
    assert!((10.0 * MS..30.0 * MS).contains(&tpot), "tpot p50 {tpot}");
    let good = low["stream"]["goodput"]["fraction"].as_f64().unwrap();
    assert!(good > 0.9, "goodput share at 10/s {good}");
    // The bounds it was judged by are in the step's recorded settings.
    assert_eq!(low["config"]["llm"]["goodput"], "ttft<500ms");
    // Goodput over time: every interval says how many good responses completed in it; at
    // 10/s (all good) they add up to the completions of the intervals.
    let ivs = low["intervals"].as_array().unwrap();
    let sum = |k: &str| -> u64 {
        ivs.iter()
            .map(|i| i["stream"][k].as_u64().or(i[k].as_u64()).unwrap())
            .sum()
    };
    assert!(
        ivs.iter().all(|i| i["stream"]["good_per_s"].is_f64()),
        "{ivs:?}"
    );
    let (good, done) = (sum("good"), sum("completed"));
    assert!(good > 0 && good <= done, "{good} good of {done} completed");
    assert!(
        good as f64 >= 0.9 * done as f64,
        "{good} good of {done} completed"
    );
    // 60/s: past 33.3/s the backlog grows by at least 26.7 requests a second from the start,
    // so by the measured window (after the 1 s warm-up) every wait is over 0.8 s.
    let high = step(&v, 1);
    let ttft = pct(high, "ttft", 50.0);
    assert!(ttft > 800.0 * MS, "ttft p50 from the intended send {ttft}");
    let sent = pct(high, "ttft_service", 50.0);
    assert!(sent < 400.0 * MS, "ttft p50 from the actual send {sent}");
    // The wait in the client is the send lag: the same backlog.
    let lag = pct(high, "send_lag", 50.0);
    assert!(lag > 800.0 * MS, "send lag p50 {lag}");
    let good = high["stream"]["goodput"]["fraction"].as_f64().unwrap();
    assert!(good < 0.1, "goodput share at 60/s {good}");
    assert_balanced(high);
    // The HTML page charts the LLM measures against offered load.
    let html = dir.join("sweep.html");
    let out = candor()
        .arg("report")
        .arg(&json)
        .arg("-o")
        .arg(&html)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", common::text(&out));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("id=\"llm-latency\"") && page.contains("id=\"llm-tokens\""));
    assert!(page.contains("<h2>LLM measures against offered load</h2>"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn capacity_with_llm_objectives_never_passes_above_what_the_server_can_deliver() {
    let _g = serial();
    let server = server();
    let dir = scratch("llm-capacity");
    let json = dir.join("capacity.json");
    let out = candor()
        .args(["capacity", "--min", "10", "--max", "80", "--max-steps", "5"])
        .args(["--pause", "0s", "-d", "2s"])
        .args(LLM)
        .args(["--slo", "ttft.p99<500ms,tpot.p99<50ms", "--quiet", "--json"])
        .arg(&json)
        .arg(&server.url)
        .output()
        .unwrap();
    let text = text(&out);
    assert!(!text.contains("panicked"), "{text}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let probes = v["probes"].as_array().unwrap();
    assert!(probes.len() >= 3, "{text}");
    for p in probes {
        let rate = p["rate"].as_f64().unwrap();
        let note = p["note"].as_str().unwrap();
        assert!(
            note.contains("TTFT p99") && note.contains("tokens/s"),
            "{note}"
        );
        // The truth's bound: no step above 33.3/s can meet TTFT p99 < 500 ms for 2 s and more.
        if rate >= 40.0 {
            assert_eq!(p["pass"], false, "{rate}: {note}");
        }
    }
    assert_eq!(probes[0]["rate"].as_f64(), Some(10.0));
    assert_eq!(probes[0]["pass"], true, "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--slo 'goodput>=90%'` with `--goodput 'ttft<500ms'` (docs/truth.md, "LLM sweeps and
/// capacity"): at 10/s every TTFT is 50 ms, all good; from 40/s the client's backlog puts most
/// of the window's TTFTs past 500 ms (62.5% good at 40/s, none at 80/s), so those steps miss the
/// goodput objective. With `--records`, each measurement writes its own file.
#[test]
fn capacity_finds_the_highest_rate_whose_goodput_share_meets_the_objective() {
    let _g = serial();
    let server = server();
    let dir = scratch("llm-goodput");
    let json = dir.join("capacity.json");
    let out = candor()
        .args(["capacity", "--min", "10", "--max", "80", "--max-steps", "5"])
        .args(["--pause", "0s", "-d", "2s"])
        .args(LLM)
        .args([
            "--goodput",
            "ttft<500ms",
            "--slo",
            "goodput>=90%",
            "--quiet",
        ])
        .arg("--records")
        .arg(dir.join("c.jsonl"))
        .arg("--json")
        .arg(&json)
        .arg(&server.url)
        .output()
        .unwrap();
    let text = text(&out);
    assert!(!text.contains("panicked"), "{text}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let probes = v["probes"].as_array().unwrap();
    assert!(probes.len() >= 3, "{text}");
    for p in probes {
        let rate = p["rate"].as_f64().unwrap();
        let note = p["note"].as_str().unwrap();
        if rate >= 40.0 {
            assert_eq!(p["pass"], false, "{rate}: {note}");
            assert!(note.contains("goodput>=90% missed"), "{rate}: {note}");
        }
    }
    assert_eq!(probes[0]["rate"].as_f64(), Some(10.0));
    assert_eq!(probes[0]["pass"], true, "{text}");
    // One records file per measurement, the first at the search's first rate.
    let files = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| {
            let n = e.as_ref().unwrap().file_name();
            let n = n.to_string_lossy();
            n.starts_with("c-step") && n.ends_with(".jsonl")
        })
        .count();
    assert_eq!(files, probes.len(), "{text}");
    assert!(dir.join("c-step1-r10.jsonl").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A stream takes at least 50 ms + 7 x 10 ms = 120 ms from its send, so no request meets
/// `e2el<100ms` at any rate: goodput is 0% and even --min misses `goodput>=50%` (exit 3).
#[test]
fn capacity_with_a_goodput_no_request_can_meet_exits_3_at_the_lowest_rate() {
    let _g = serial();
    let server = server();
    let dir = scratch("llm-goodput-none");
    let json = dir.join("capacity.json");
    let out = candor()
        .args(["capacity", "--min", "10", "--max", "20", "--max-steps", "3"])
        .args(["--pause", "0s", "-d", "1s"])
        .args(LLM)
        .args([
            "--goodput",
            "e2el<100ms",
            "--slo",
            "goodput>=50%",
            "--quiet",
        ])
        .arg("--json")
        .arg(&json)
        .arg(&server.url)
        .output()
        .unwrap();
    let text = text(&out);
    assert_eq!(out.status.code(), Some(3), "{text}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let first = &v["probes"][0];
    assert_eq!(first["rate"].as_f64(), Some(10.0));
    assert_eq!(first["pass"], false);
    assert!(
        first["note"]
            .as_str()
            .unwrap()
            .contains("goodput>=50% missed"),
        "{first}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A goodput objective needs per-request bounds: without --goodput or a ttft, tpot or
/// response-time objective it is refused before any load.
#[test]
fn a_goodput_objective_without_bounds_is_refused_before_any_load() {
    let out = candor()
        .args(["capacity", "--min", "10", "--max", "20"])
        .args(LLM)
        .args(["--slo", "goodput>=90%", "http://127.0.0.1:9/"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let t = text(&out);
    assert!(
        t.contains("--slo goodput>=90%: no per-request bounds to judge goodput by"),
        "{t}"
    );
}
