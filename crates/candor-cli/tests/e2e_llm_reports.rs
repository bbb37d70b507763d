//! What reads an LLM run's results: two shards of a real `--llm` run against `candor serve --llm`
//! carry TTFT, ITL, TPOT and output tokens per interval (JSON, `.hlog` tags), merge into one
//! result whose stream measures and tokens are the shards' added, compare on `--measure ttft`
//! and `itl` (and refuse a run that has none), and show their spectra and tokens/s over time in
//! the HTML page and the text report, while a plain run's page shows none of it.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Stdio;

fn unix_now_s() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

fn load(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("results written"))
        .expect("valid json")
}

fn count(v: &serde_json::Value, m: &str) -> u64 {
    v[m]["count"].as_u64().unwrap_or(0)
}

/// Sums `f` over the intervals of `v`.
fn over_intervals(v: &serde_json::Value, f: impl Fn(&serde_json::Value) -> u64) -> u64 {
    v["intervals"].as_array().unwrap().iter().map(f).sum()
}

fn candor_ok(args: &[&str]) -> std::process::Output {
    let out = candor().args(args).output().expect("run candor");
    assert!(
        out.status.success(),
        "candor {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn shards_of_an_llm_run_merge_compare_and_report_their_stream_measures() {
    let _g = serial();
    // Deterministic tokens: 8 per response (usage says so), 7 ITL gaps, 10 events.
    let server = Server::start(&[
        "--llm",
        "--ttft",
        "20ms",
        "--itl",
        "5ms",
        "--output-tokens",
        "8",
    ]);
    let dir: PathBuf =
        std::env::temp_dir().join(format!("candor-e2e-llm-rep-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let p = |name: &str| dir.join(name).to_string_lossy().into_owned();

    let (tokens, ttfts) = run_two_llm_shards(&server, &dir);
    // The log's TTFT stream reads back as the run's TTFT.
    let out = candor_ok(&["report", &p("shard-0.hlog"), "--tag", "ttft"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("60 latencies"), "{text}");

    let merged = merge_the_llm_shards(&dir, tokens, ttfts);

    assert_the_shards_compare_on_stream_measures(&dir);

    assert_a_plain_run_has_no_ttft_to_compare(&dir);

    assert_the_html_pages(&dir, &merged);

    // The text report: the measures' percentiles and tokens/s over time.
    let out = candor_ok(&["report", &merged]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("ttft (sent)"), "{text}");
    assert!(text.contains("tokens/s over time: lowest"), "{text}");
    assert!(text.contains("960 output tokens"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs two shards of the LLM run and checks each one's books, intervals and log; the output
/// tokens and TTFT samples of both.
fn run_two_llm_shards(server: &Server, dir: &std::path::Path) -> (u64, u64) {
    let p = |name: &str| dir.join(name).to_string_lossy().into_owned();
    // Two shards of 40/s for 3 s with a common start: 60 requests each.
    let start_at = format!("{:.3}", unix_now_s() + 3.0);
    let shards: Vec<_> = (0..2)
        .map(|i| {
            candor()
                .args(["run", "--shard", &format!("{i}/2"), "--start-at", &start_at])
                .args([
                    "--llm",
                    "openai",
                    "--prompt-tokens",
                    "16",
                    "--output-tokens",
                    "8",
                    // A bound every request meets (the server's TTFT is 20 ms) and one that
                    // splits them: merged goodput is the shards' sum.
                    "--goodput",
                    "ttft<10s,tpot<10s",
                    "-R",
                    "40",
                    "-c",
                    "16",
                    "-t",
                    "1",
                    "-d",
                    "3s",
                    "--quiet",
                    "--json",
                    &p(&format!("shard-{i}.json")),
                    "--hlog",
                    &p(&format!("shard-{i}.hlog")),
                    &server.url,
                ])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn a shard")
        })
        .collect();
    let mut tokens = 0;
    let mut ttfts = 0;
    for (i, child) in shards.into_iter().enumerate() {
        let out = child.wait_with_output().expect("shard finished");
        assert!(
            out.status.success(),
            "shard {i} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let s = load(&dir.join(format!("shard-{i}.json")));
        assert_balanced(&s);
        assert_eq!((req(&s, "intended"), req(&s, "completed")), (60, 60));
        assert_eq!(s["stream"]["llm"]["output_tokens"], 480);
        // Per interval (by completion time, no warm-up): the intervals add up to the run.
        let ivs = |f: &dyn Fn(&serde_json::Value) -> u64| over_intervals(&s, f);
        assert_eq!(
            ivs(&|iv| iv["stream"]["output_tokens"].as_u64().unwrap()),
            480
        );
        assert_eq!(
            ivs(&|iv| iv["stream"]["ttft"]["count"].as_u64().unwrap_or(0)),
            60
        );
        assert_eq!(
            ivs(&|iv| iv["stream"]["itl"]["count"].as_u64().unwrap_or(0)),
            420
        );
        assert_eq!(
            ivs(&|iv| iv["stream"]["tpot"]["count"].as_u64().unwrap_or(0)),
            60
        );
        assert_eq!(ivs(&|iv| iv["stream"]["events"].as_u64().unwrap()), 600);
        let full = s["intervals"]
            .as_array()
            .unwrap()
            .iter()
            .find(|iv| iv["stream"]["output_tokens"].as_u64().unwrap() > 0)
            .expect("an interval with tokens");
        let rate = full["stream"]["output_tokens_per_s"].as_f64().unwrap();
        let length = full["length_s"].as_f64().unwrap();
        let n = full["stream"]["output_tokens"].as_f64().unwrap();
        assert!((rate - n / length).abs() < 1e-6, "{rate} tokens/s");
        // The log has a tag per stream measure, one line per interval each.
        let hlog = std::fs::read_to_string(dir.join(format!("shard-{i}.hlog"))).unwrap();
        let lines = |tag: &str| hlog.lines().filter(|l| l.starts_with(tag)).count();
        let intervals = s["intervals"].as_array().unwrap().len();
        for tag in [
            "Tag=ttft,",
            "Tag=ttft_service,",
            "Tag=itl,",
            "Tag=tpot,",
            "Tag=first_event,",
        ] {
            assert_eq!(lines(tag), intervals, "{tag} in {hlog}");
        }
        tokens += 480;
        ttfts += count(&s, "ttft");
    }
    (tokens, ttfts)
}

/// Merges the two shards and checks the merged measures; the merged file.
fn merge_the_llm_shards(dir: &std::path::Path, tokens: u64, ttfts: u64) -> String {
    let p = |name: &str| dir.join(name).to_string_lossy().into_owned();
    // Merged: histograms added, tokens summed, where their counts came from kept.
    let merged = p("merged.json");
    candor_ok(&[
        "merge",
        &p("shard-0.json"),
        &p("shard-1.json"),
        "-o",
        &merged,
    ]);
    let m = load(Path::new(&merged));
    assert_balanced(&m);
    assert_eq!(count(&m, "ttft"), ttfts);
    assert_eq!(count(&m, "ttft_service"), 120);
    assert_eq!(count(&m, "itl"), 840);
    assert_eq!(count(&m, "tpot"), 120);
    assert_eq!(m["stream"]["llm"]["output_tokens"], tokens);
    assert_eq!(m["stream"]["llm"]["counted_from_usage"], 120);
    assert_eq!(m["stream"]["events"], 1200);
    let good = |r: &serde_json::Value, k: &str| r["stream"]["goodput"][k].as_u64().unwrap();
    let (s0, s1) = (
        load(&dir.join("shard-0.json")),
        load(&dir.join("shard-1.json")),
    );
    assert_eq!(good(&m, "good"), good(&s0, "good") + good(&s1, "good"));
    assert_eq!(good(&m, "good"), 120, "every request meets bounds of 10 s");
    assert_eq!(
        good(&m, "good_service"),
        good(&s0, "good_service") + good(&s1, "good_service")
    );
    assert_eq!(
        m["stream"]["goodput"]["slo"],
        s0["stream"]["goodput"]["slo"]
    );
    assert_eq!(
        over_intervals(&m, |iv| iv["stream"]["output_tokens"].as_u64().unwrap_or(0)),
        tokens
    );
    assert_eq!(
        over_intervals(&m, |iv| iv["stream"]["ttft"]["count"].as_u64().unwrap_or(0)),
        120
    );
    // The merged TTFT is the server's 20 ms plus what the client and loopback add; within the
    // spread of the shards' own.
    let lo = pct(&load(&dir.join("shard-0.json")), "ttft", 50.0).min(pct(
        &load(&dir.join("shard-1.json")),
        "ttft",
        50.0,
    ));
    let hi = pct(&load(&dir.join("shard-0.json")), "ttft", 50.0).max(pct(
        &load(&dir.join("shard-1.json")),
        "ttft",
        50.0,
    ));
    let mid = pct(&m, "ttft", 50.0);
    assert!(
        lo <= mid && mid <= hi,
        "merged p50 {mid} outside [{lo}, {hi}]"
    );
    merged
}

fn assert_the_shards_compare_on_stream_measures(dir: &std::path::Path) {
    let p = |name: &str| dir.join(name).to_string_lossy().into_owned();
    // Compare on the stream measures: same statistics as response time.
    for measure in [
        "ttft",
        "itl",
        "tpot",
        "ttft-sent",
        "first-event",
        "event-gap",
    ] {
        let out = candor_ok(&[
            "compare",
            &p("shard-0.json"),
            &p("shard-1.json"),
            "--measure",
            measure,
            "--json",
            &p("compare.json"),
        ]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("Comparison of "), "{text}");
        let c = load(&dir.join("compare.json"));
        assert!(c.to_string().contains("verdict"), "{c}");
    }
    let out = candor_ok(&[
        "compare",
        &p("shard-0.json"),
        &p("shard-1.json"),
        "--measure",
        "ttft",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Comparison of TTFT"), "{text}");
    assert!(text.contains("60 samples"), "{text}");
}

/// A plain run has no TTFT to compare on; it stays in `dir` as `plain.json` for the HTML check.
fn assert_a_plain_run_has_no_ttft_to_compare(dir: &std::path::Path) {
    let p = |name: &str| dir.join(name).to_string_lossy().into_owned();
    // A plain run has no TTFT: compare says so in one line before anything else.
    let plain_server = Server::start(&[]);
    let (plain, _) = run_json(&[
        "-R",
        "50",
        "-d",
        "1s",
        "-c",
        "2",
        "-t",
        "1",
        &plain_server.url,
    ]);
    std::fs::write(dir.join("plain.json"), plain.to_string()).unwrap();
    let out = candor()
        .args([
            "compare",
            &p("shard-0.json"),
            &p("plain.json"),
            "--measure",
            "ttft",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("has no ttft histogram") && err.contains("--llm"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

fn assert_the_html_pages(dir: &std::path::Path, merged: &str) {
    let p = |name: &str| dir.join(name).to_string_lossy().into_owned();
    // The HTML page: spectra and tokens/s over time for the LLM run, nothing for the plain one.
    candor_ok(&["report", merged, "-o", &p("merged.html")]);
    let html = std::fs::read_to_string(dir.join("merged.html")).unwrap();
    assert!(
        html.contains("<h2>Streamed responses</h2>"),
        "stream section"
    );
    assert!(html.contains("id=\"stream-spectrum-0\""));
    assert!(html.contains("id=\"tokens-0\""));
    assert!(html.contains("\"name\":\"ttft\"") && html.contains("\"per_s\""));
    // One shard's own page leads with the LLM figures and carries its settings and goodput.
    candor_ok(&["report", &p("shard-0.json"), "-o", &p("shard-0.html")]);
    let html = std::fs::read_to_string(dir.join("shard-0.html")).unwrap();
    let at = |s: &str| html.find(s).unwrap_or_else(|| panic!("{s} on the page"));
    assert!(at(">TTFT p99<") < at(">end to end p50<"), "headline first");
    assert!(at(">goodput<") < at("<h2>Streamed responses</h2>"));
    assert!(html.contains("id=\"ttft-time-0\""), "TTFT over time");
    assert!(
        html.contains("id=\"goodput-time-0\"") && html.contains("\"good_per_s\""),
        "goodput over time, the run having bounds"
    );
    assert!(
        html.contains("<td>ttft&lt;10s,tpot&lt;10s</td>"),
        "goodput table"
    );
    assert!(
        html.contains("<td>output tokens (budget)</td><td>8</td>"),
        "settings"
    );
    let text = candor_ok(&["report", &p("shard-0.json")]);
    let text = String::from_utf8_lossy(&text.stdout);
    let headline = text.find("  headline: TTFT p50 ").expect("text headline");
    assert!(
        headline < text.find("response time").expect("the table"),
        "{text}"
    );
    assert!(
        text.contains(
            "settings: API openai · model candor-truth (the first the server lists: --model not given) · dataset synthetic · prompt tokens 16 · output tokens (budget) 8"
        ),
        "{text}"
    );
    candor_ok(&["report", &p("plain.json"), "-o", &p("plain.html")]);
    let html = std::fs::read_to_string(dir.join("plain.html")).unwrap();
    // (The page's script names them; the page's own markup and data do not.)
    assert!(
        !html.contains("<h2>Streamed responses</h2>") && !html.contains("id=\"stream-spectrum")
    );
    assert!(!html.contains("\"stream\":"));
}
