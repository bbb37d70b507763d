//! `--records` beyond one run: the gaps between a stream's events in each line, from which
//! `candor report FILE.jsonl` rebuilds ITL and event gap exactly as the run booked them, and
//! `candor sweep --records` writing one file per step that reads back as that step's run.

mod common;
mod support {
    pub mod process;
}

use common::{candor, pct, req, serial, text, Server};
use std::path::Path;
use support::process::*;

fn lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn from_records(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap();
    let name = path.file_name().unwrap().to_string_lossy();
    let back = candor_report::input::load(&text, &name, &Default::default()).unwrap();
    serde_json::to_value(&back).unwrap()
}

/// `candor serve --llm` (TTFT 20 ms, a token every 5 ms, 10 tokens) stalls 150 ms of every
/// second, so some streams have a gap of up to 150 ms among their 5 ms ones: ITL's p99 and
/// max come from the stalls. Every gap the run booked is in the lines, and the histograms
/// rebuilt from them have the run's own counts and percentiles exactly.
#[test]
fn itl_and_event_gaps_rebuilt_from_records_are_the_runs_own() {
    let _g = serial();
    let server = Server::start(&[
        "--llm",
        "--ttft",
        "20ms",
        "--itl",
        "5ms",
        "--output-tokens",
        "10",
        "--stall-every",
        "1s",
        "--stall-for",
        "150ms",
    ]);
    let dir = tmp("records-itl");
    let (records, json) = (dir.join("r.jsonl"), dir.join("r.json"));
    let out = candor()
        .args(["run", "-q", "-R", "40", "-d", "2s", "-T", "5s"])
        .args([
            "--llm",
            "openai",
            "--prompt-tokens",
            "16",
            "--output-tokens",
            "10",
        ])
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
    assert_eq!(all.len() as u64, req(&v, "intended"));
    // A completed stream of 10 tokens: 9 inter-token latencies, and gaps between its events
    // (the content chunks, usage and [DONE]).
    let done = all.iter().find(|l| l["outcome"] == "completed").unwrap();
    assert_eq!(done["itl_ns"].as_array().unwrap().len(), 9, "{done}");
    assert!(
        done["event_gaps_ns"].as_array().unwrap().len() >= 9,
        "{done}"
    );
    let back = from_records(&records);
    for m in ["itl", "event_gap"] {
        assert_eq!(back[m]["count"], v[m]["count"], "{m} count");
        assert_eq!(back[m]["max_ns"], v[m]["max_ns"], "{m} max");
        for p in [50.0, 90.0, 99.0] {
            assert_eq!(pct(&back, m, p), pct(&v, m, p), "{m} p{p}");
        }
    }
    // The stall shows: ITL's max is about the stall (not the 5 ms between tokens).
    let max = v["itl"]["max_ns"].as_f64().unwrap();
    assert!(max > 50e6, "ITL max {max} ns: no stall seen");
    let report = candor().arg("report").arg(&records).output().unwrap();
    assert!(report.status.success(), "{}", text(&report));
    let t = text(&report);
    // The stream table has ITL and event gap columns, with the run's sample counts.
    let header = t
        .lines()
        .position(|l| l.contains(" itl ") && l.contains("event gap"))
        .unwrap_or_else(|| panic!("{t}"));
    let samples = t
        .lines()
        .skip(header)
        .find(|l| l.trim_start().starts_with("samples"))
        .unwrap_or_else(|| panic!("{t}"));
    for m in ["itl", "event_gap"] {
        let n = v[m]["count"].to_string();
        assert!(
            samples.split_whitespace().any(|w| w.replace(',', "") == n),
            "{m} {n}: {samples}"
        );
    }
    // The HTML page draws the spectra (TTFT, ITL, event gap...) from the rebuilt histograms.
    let html = dir.join("r.html");
    let out = candor()
        .arg("report")
        .arg(&records)
        .arg("-o")
        .arg(&html)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("id=\"stream-spectrum-0\""),
        "no stream spectra"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `candor sweep --records r.jsonl` writes `r-step1-r20.jsonl` and `r-step2-r40.jsonl`, each a
/// line per request of its step (warm-up included) that reads back as that step's results.
#[test]
fn a_sweep_writes_one_records_file_per_step_that_reads_back_as_the_step() {
    let _g = serial();
    let server = Server::start(&[]);
    let dir = tmp("records-sweep");
    let (records, json) = (dir.join("r.jsonl"), dir.join("sweep.json"));
    let out = candor()
        .args(["sweep", "--rates", "20,40", "--pause", "0s", "-d", "1s"])
        .args(["--warmup", "500ms", "--quiet", "--records"])
        .arg(&records)
        .arg("--json")
        .arg(&json)
        .arg(&server.url)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let v = read_json(&json);
    assert!(!records.exists(), "the base name itself is not written");
    for (i, rate) in [(0, 20), (1, 40)] {
        let step = &v["steps"][i]["results"];
        let path = dir.join(format!("r-step{}-r{rate}.jsonl", i + 1));
        let all = lines(&path);
        let warm = step["warmup"]["requests"]["intended"].as_u64().unwrap_or(0);
        assert_eq!(all.len() as u64, req(step, "intended") + warm, "{rate}/s");
        let back = from_records(&path);
        assert_eq!(req(&back, "intended"), req(step, "intended"), "{rate}/s");
        for p in [50.0, 99.0] {
            assert_eq!(
                pct(&back, "response_time", p),
                pct(step, "response_time", p),
                "{rate}/s p{p}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A records path in a missing folder stops a sweep before its first step.
#[test]
fn a_bad_records_path_stops_a_sweep_before_any_load() {
    let out = candor()
        .args(["sweep", "--rates", "10", "-d", "1s", "--records"])
        .arg("/nonexistent-dir/r.jsonl")
        .arg("http://127.0.0.1:9/")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let t = text(&out);
    assert!(
        t.contains("candor: error: --records /nonexistent-dir/r-step1-r10.jsonl:"),
        "{t}"
    );
    assert!(!t.contains("step 1"), "{t}");
}
