//! Output tokens counted by `--tokenizer` against `candor serve --llm`, whose answers are
//! known: each token is a chunk whose text is one of its words and a space. With `--no-usage`
//! the tokenizer's count is the output; with usage, the server's count wins and the two are
//! compared (a warning past 5%). Input, output and total tokens per interval; the settings in
//! `config.llm`; without a tokenizer, the report says a chunk count is an estimate.

mod common;
use common::*;

/// The words `candor serve --llm` answers with, in order (crates/candor-serve/src/llm/answer.rs).
const WORDS: [&str; 8] = [
    "candor", "measures", "from", "the", "intended", "send", "not", "after",
];

/// cl100k_base's count of one answer of `tokens` chunks, each chunk's text counted on its own
/// as candor counts it (the prediction is made here with the tokenizer, independently of the
/// stream reader that decodes the chunks' JSON).
fn predicted(tokens: usize) -> u64 {
    let t = candor_load::workload::tokenizer::Tokenizer::load("cl100k_base").unwrap();
    (0..tokens)
        .map(|k| t.count(&format!("{} ", WORDS[k % WORDS.len()])))
        .sum()
}

fn serve(no_usage: bool) -> Server {
    let mut args = vec![
        "--llm",
        "--ttft",
        "2ms",
        "--itl",
        "1ms",
        "--output-tokens",
        "10",
    ];
    if no_usage {
        args.push("--no-usage");
    }
    Server::start(&args)
}

fn run(url: &str, extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "--llm", "openai", "-n", "6", "-R", "50", "-c", "2", "-t", "1",
    ];
    args.extend_from_slice(extra);
    args.push(url);
    let (v, _) = run_json(&args);
    assert_balanced(&v);
    assert_eq!(req(&v, "completed"), 6, "{v}");
    v
}

/// The sum of `key` over the intervals' streams.
fn interval_sum(v: &serde_json::Value, key: &str) -> u64 {
    v["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["stream"][key].as_u64())
        .sum()
}

#[test]
fn without_usage_the_tokenizer_counts_the_output_and_intervals_carry_every_token_count() {
    let _g = serial();
    let server = serve(true);
    let per_answer = predicted(10);
    let v = run(&server.url, &["--tokenizer", "cl100k_base"]);
    let llm = &v["stream"]["llm"];
    assert_eq!(llm["output_tokens"], 6 * per_answer, "{llm}");
    assert_eq!(
        (
            llm["counted_by_tokenizer"].clone(),
            llm["counted_from_usage"].clone()
        ),
        (6.into(), 0.into())
    );
    assert!(llm.get("tokenizer_check").is_none(), "{llm}");
    // No usage: no input tokens; per interval the tokens add up to the run's (all six
    // answers end inside the measured intervals), total = input + output in each.
    assert_eq!(llm["input_tokens"], 0);
    assert_eq!(interval_sum(&v, "output_tokens"), 6 * per_answer);
    assert_eq!(interval_sum(&v, "total_tokens"), 6 * per_answer);
    assert_eq!(interval_sum(&v, "input_tokens"), 0);
    // The settings in effect are recorded, defaults included.
    let c = &v["config"]["llm"];
    assert_eq!(
        (
            c["tokenizer"].clone(),
            c["dataset"].clone(),
            c["output_tokens"].clone()
        ),
        ("cl100k_base".into(), "synthetic".into(), "128".into())
    );
    assert_eq!(c["stream_timeout_s"], 60.0);
}

#[test]
fn with_usage_the_servers_count_wins_and_a_disagreeing_tokenizer_is_warned_of() {
    let _g = serial();
    let server = serve(false);
    let per_answer = predicted(10);
    let v = run(&server.url, &["--tokenizer", "cl100k_base"]);
    let llm = &v["stream"]["llm"];
    assert_eq!(llm["output_tokens"], 60, "{llm}");
    // With usage the tokenizer checks a sample (`CROSS_CHECK_EVERY`): each connection's
    // first answer, so 1 or 2 of the 6 on `-c 2`.
    let check = &llm["tokenizer_check"];
    let checked = check["responses"].as_u64().unwrap();
    assert!((1..=2).contains(&checked), "{check}");
    assert_eq!(check["usage_tokens"], 10 * checked);
    assert_eq!(check["tokenizer_tokens"], checked * per_answer);
    // The server's usage counts its words; cl100k_base counts "word " as more than one
    // token for these words, so every answer is more than 5% apart.
    let apart = per_answer.abs_diff(10) as f64 > 0.5;
    assert_eq!(check["disagreeing"], if apart { checked } else { 0 });
    let warned = v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w.as_str().unwrap().starts_with("the tokenizer counted"));
    assert_eq!(warned, apart, "{}", v["warnings"]);
    // Input tokens from the usage: per interval they and the totals add up to the run's.
    let input = llm["input_tokens"].as_u64().unwrap();
    assert!(input > 0);
    assert_eq!(interval_sum(&v, "input_tokens"), input);
    assert_eq!(interval_sum(&v, "total_tokens"), input + 60);
}

#[test]
fn without_a_tokenizer_a_count_of_chunks_is_reported_as_an_estimate() {
    let _g = serial();
    let server = serve(true);
    let dir = std::env::temp_dir().join(format!("candor-e2e-tokens-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("r.json");
    let out = candor()
        .args([
            "run", "--llm", "openai", "-n", "4", "-R", "50", "-c", "2", "--quiet",
        ])
        .args(["--json", path.to_str().unwrap(), &server.url])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let report = candor().arg("report").arg(&path).output().unwrap();
    let shown = text(&report);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        shown.contains("40 output tokens")
            && shown.contains("a count of content chunks is an estimate (a chunk taken as one token): give --tokenizer"),
        "{shown}"
    );
    let settings = shown
        .lines()
        .find(|l| l.trim_start().starts_with("settings:"));
    assert!(
        settings.is_some_and(|l| l
            .contains("tokenizer none: counts not from the server's usage are estimates")
            && l.contains("dataset synthetic")),
        "{shown}"
    );
}

#[test]
fn whole_answers_are_timed_to_their_end_and_counted_from_their_usage() {
    let _g = serial();
    // Truth: a whole answer of 10 tokens is written at its last token's instant, TTFT 20 ms +
    // 9 x ITL 5 ms = 65 ms after the request was read; at 10/s over 4 connections nothing
    // queues, so each response time is 65 ms plus the loopback's and the scheduler's delays.
    let server = Server::start(&[
        "--llm",
        "--ttft",
        "20ms",
        "--itl",
        "5ms",
        "--output-tokens",
        "10",
    ]);
    for api in ["openai", "openai-completions"] {
        let (v, _) = run_json(&[
            "--llm",
            api,
            "--no-stream",
            "-n",
            "6",
            "-R",
            "10",
            "-c",
            "4",
            "-t",
            "1",
            &server.url,
        ]);
        assert_balanced(&v);
        assert_eq!(req(&v, "completed"), 6, "{v}");
        let llm = &v["stream"]["llm"];
        assert_eq!(
            (
                llm["output_tokens"].clone(),
                llm["counted_from_usage"].clone()
            ),
            (60.into(), 6.into()),
            "{llm}"
        );
        assert!(llm["input_tokens"].as_u64().unwrap() > 0);
        assert!(v.get("ttft").is_none_or(|t| t.is_null()), "no TTFT: {v}");
        let p50 = pct(&v, "response_time", 50.0);
        assert!(
            (65e6..115e6).contains(&p50),
            "{api}: response time p50 {p50} ns against 65 ms"
        );
        assert_eq!(v["config"]["llm"]["whole_answers"], true);
    }
}
