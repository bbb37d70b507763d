//! A shared prefix against a known-truth prefix cache: `candor serve --llm --prefill-per-token
//! --prefix-cache` makes the first token wait for the prompt tokens its cache did not hold, and
//! says the cached ones in its usage; `candor run --llm openai --prefix-tokens` must read the
//! TTFT and the cached tokens the truth predicts (docs/truth.md, "A shared prefix").

mod common;
use common::*;

const MS: f64 = 1e6;

/// A run of 12 requests at 5/s on one connection (each lookup after the previous insertion)
/// against a server with a cache of `blocks` blocks; the prompts are `prompt` flags.
fn run(blocks: &str, prompt: &[&str]) -> serde_json::Value {
    let server = Server::start(&[
        "--llm",
        "--ttft",
        "20ms",
        "--itl",
        "1ms",
        "--output-tokens",
        "4",
        "--prefill-per-token",
        "500us",
        "--prefix-cache",
        blocks,
    ]);
    let mut args = vec![
        "--llm", "openai", "-n", "12", "-R", "5", "-c", "1", "-t", "1",
    ];
    args.extend_from_slice(prompt);
    args.push(&server.url);
    let (v, _) = run_json(&args);
    assert_balanced(&v);
    assert_eq!(req(&v, "completed"), 12, "{}", v["requests"]);
    v
}

/// The TTFT median from the actual send, checked in [truth, truth + 40 ms).
fn assert_ttft_median(v: &serde_json::Value, truth_ms: f64) {
    let p50 = pct(v, "ttft_service", 50.0);
    assert!(
        p50 >= truth_ms * MS && p50 < (truth_ms + 40.0) * MS,
        "ttft (sent) p50 {:.1} ms, truth {truth_ms} ms",
        p50 / MS
    );
}

#[test]
fn a_shared_prefix_is_served_from_the_cache_after_the_first_request() {
    let _g = serial();
    // Truth: 256-token prompts whose first 192 tokens (12 blocks) are shared; the first
    // request computes 256 tokens (148 ms), the 11 others 64 (52 ms); 11 x 192 cached.
    let dir = std::env::temp_dir().join(format!("candor-e2e-prefix-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let records = dir.join("prefix.jsonl");
    let records_flag = records.to_str().unwrap().to_string();
    let v = run(
        "1000",
        &[
            "--prefix-tokens",
            "192",
            "--prompt-tokens",
            "64",
            "--records",
            &records_flag,
        ],
    );
    let llm = &v["stream"]["llm"];
    assert_eq!(llm["input_tokens"], 12 * 256, "{llm}");
    assert_eq!(
        (llm["cached_tokens"].clone(), llm["cached_counted"].clone()),
        ((11 * 192).into(), 12.into()),
        "{llm}"
    );
    assert_ttft_median(&v, 52.0);
    // The slowest is the first request's, which found nothing.
    let max = v["ttft_service"]["max_ns"].as_f64().unwrap();
    assert!(max >= 148.0 * MS, "max {:.1} ms", max / MS);
    // Each record carries its response's cached tokens, the intervals theirs: both sum to
    // the run's.
    let lines = std::fs::read_to_string(&records).unwrap();
    let per_line: Vec<u64> = lines
        .lines()
        .map(|l| {
            let l: serde_json::Value = serde_json::from_str(l).unwrap();
            l["cached_tokens"].as_u64().unwrap()
        })
        .collect();
    assert_eq!(per_line.len(), 12);
    assert_eq!(per_line.iter().sum::<u64>(), 11 * 192, "{per_line:?}");
    let intervals: u64 = v["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["stream"]["cached_tokens"].as_u64())
        .sum();
    assert_eq!(intervals, 11 * 192);
    // The text report says them beside the input tokens, and so does the records file's.
    let path = dir.join("prefix.json");
    std::fs::write(&path, v.to_string()).unwrap();
    let report = candor().arg("report").arg(&path).output().unwrap();
    let from_records = candor().arg("report").arg(&records).output().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    for r in [&report, &from_records] {
        let shown = text(r);
        assert!(r.status.success(), "{shown}");
        assert!(
            shown.contains("3,072 input tokens") && shown.contains("of them 2,112 cached"),
            "{shown}"
        );
    }
    assert!(
        text(&report).contains("cached % of input tokens over time"),
        "{}",
        text(&report)
    );
}

#[test]
fn a_cache_smaller_than_a_prompt_keeps_its_leading_blocks() {
    let _g = serial();
    // Truth: a cache of 8 blocks keeps each prompt's first 8 (inserted last block first):
    // 128 cached tokens a request after the first, TTFT 20 + 64 = 84 ms; 11 x 128 cached.
    let v = run("8", &["--prefix-tokens", "192", "--prompt-tokens", "64"]);
    let llm = &v["stream"]["llm"];
    assert_eq!(llm["cached_tokens"], 11 * 128, "{llm}");
    assert_ttft_median(&v, 84.0);
}

#[test]
fn without_a_shared_prefix_every_prompt_is_computed_whole() {
    let _g = serial();
    // Truth: 256-token prompts that differ from their first word: nothing cached, 148 ms.
    let v = run("1000", &["--prompt-tokens", "256"]);
    let llm = &v["stream"]["llm"];
    assert_eq!(
        (llm["input_tokens"].clone(), llm["cached_tokens"].clone()),
        ((12 * 256).into(), 0.into()),
        "{llm}"
    );
    assert_ttft_median(&v, 148.0);
}

#[test]
fn requests_that_overlap_read_the_blocks_of_a_prefill_that_has_ended() {
    let _g = serial();
    // Truth (docs/truth.md, "A shared prefix", overlapping requests): due 250 ms apart, each
    // answer streaming 570 ms after its first token, every request arrives while the previous
    // one streams but after its prefill ended (margin 102 ms, then 198 ms): all 11 after the
    // first read the 12 prefix blocks. Stored at the answer's end they would not: 9 x 192.
    let server = Server::start(&[
        "--llm",
        "--ttft",
        "20ms",
        "--itl",
        "30ms",
        "--output-tokens",
        "20",
        "--prefill-per-token",
        "500us",
        "--prefix-cache",
        "1000",
    ]);
    let (v, _) = run_json(&[
        "--llm",
        "openai",
        "-n",
        "12",
        "-R",
        "4",
        "-c",
        "4",
        "-t",
        "1",
        "--prefix-tokens",
        "192",
        "--prompt-tokens",
        "64",
        &server.url,
    ]);
    assert_balanced(&v);
    assert_eq!(req(&v, "completed"), 12, "{}", v["requests"]);
    let llm = &v["stream"]["llm"];
    assert_eq!(
        (llm["cached_tokens"].clone(), llm["cached_counted"].clone()),
        ((11 * 192).into(), 12.into()),
        "{llm}"
    );
    assert_ttft_median(&v, 52.0);
    let max = v["ttft_service"]["max_ns"].as_f64().unwrap();
    assert!(max >= 148.0 * MS, "max {:.1} ms", max / MS);
}
