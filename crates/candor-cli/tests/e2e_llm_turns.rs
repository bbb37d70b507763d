//! Multi-turn conversations (`--turns`, `--sharegpt --multi-turn`) against `candor serve --llm`,
//! whose answers and prompt-token counts are known: the truth is in docs/truth.md ("Multi-turn
//! conversations"), written before these tests.

mod common;
use common::*;
use serde_json::Value;
use std::collections::BTreeMap;

const MS: u64 = 1_000_000;

fn write_file(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("candor-turns-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// The records of a `--records` file, each a JSON object.
fn records(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn ns(r: &Value, k: &str) -> u64 {
    r[k].as_u64().unwrap_or_else(|| panic!("no {k} in {r}"))
}

fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v[v.len() / 2]
}

#[test]
fn synthetic_conversations_send_every_turn_at_its_previous_turns_completion() {
    let _g = serial();
    let server = Server::start(&[
        "--llm",
        "--ttft",
        "40ms",
        "--itl",
        "5ms",
        "--output-tokens",
        "100",
    ]);
    let path = write_file("turns.jsonl", "");
    let (v, _) = run_json(&[
        "--llm",
        "openai",
        "--turns",
        "4",
        "--prompt-tokens",
        "16",
        "--output-tokens",
        "8",
        "--think-time",
        "20ms",
        "-R",
        "10:2s,0:2s",
        "-c",
        "8",
        "--records",
        path.to_str().unwrap(),
        &server.url,
    ]);
    assert_balanced(&v);
    // Every turn completes: 80 requests = 20 conversations x 4 turns.
    assert_eq!((req(&v, "intended"), req(&v, "completed")), (80, 80));
    let c = &v["conversations"];
    assert_eq!(
        (&c["started"], &c["completed"], &c["cut"], &c["turns"]),
        (&20.into(), &20.into(), &0.into(), &80.into()),
        "{c}"
    );
    // Every interval says its conversations (zero included), and they sum to the run's.
    let intervals = v["intervals"].as_array().unwrap();
    for k in [
        "started",
        "completed",
        "cut",
        "unqueued",
        "past_end",
        "turns",
    ] {
        let sum: u64 = intervals
            .iter()
            .map(|i| i["stream"]["conversations"][k].as_u64().unwrap())
            .sum();
        assert_eq!(sum, c[k].as_u64().unwrap(), "{k}: {intervals:?}");
    }
    // The text report draws them over time.
    let json = write_file("turns.json", &v.to_string());
    let report = candor().arg("report").arg(&json).output().unwrap();
    assert!(
        text(&report).contains("conversations completed/s over time"),
        "{}",
        text(&report)
    );
    let llm = &v["stream"]["llm"];
    assert_eq!(
        (&llm["input_tokens"], &llm["output_tokens"]),
        (&4160.into(), &640.into())
    );
    let rows: Vec<(String, u64)> = v["by_request"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(name, r)| (name.clone(), r["requests"]["completed"].as_u64().unwrap()))
        .collect();
    let want: Vec<(String, u64)> = (1..=4).map(|k| (format!("turn {k}"), 20)).collect();
    assert_eq!(rows, want);

    // Per turn, from the records: the server's prompt tokens grow by each turn and answer.
    let recs = records(&path);
    assert_eq!(recs.len(), 80);
    let mut by_conversation: BTreeMap<u64, Vec<&Value>> = BTreeMap::new();
    for r in &recs {
        assert_eq!(r["outcome"], "completed", "{r}");
        by_conversation.entry(ns(r, "seq")).or_default().push(r);
    }
    assert_eq!(by_conversation.len(), 20);
    let (mut ttft, mut lag) = (Vec::new(), Vec::new());
    for turns in by_conversation.values_mut() {
        turns.sort_by_key(|r| ns(r, "intended_ns"));
        let names: Vec<&str> = turns.iter().map(|r| r["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["turn 1", "turn 2", "turn 3", "turn 4"]);
        let inputs: Vec<u64> = turns.iter().map(|r| ns(r, "input_tokens")).collect();
        assert_eq!(inputs, [16, 40, 64, 88]);
        for w in turns.windows(2) {
            // Exactly the previous turn's completion plus the think time.
            assert_eq!(ns(w[1], "intended_ns"), ns(w[0], "end_ns") + 20 * MS);
            lag.push(ns(w[1], "sent_ns") - ns(w[1], "intended_ns"));
        }
        for r in turns.iter() {
            let t = ns(r, "first_token_ns") - ns(r, "intended_ns");
            assert!(t >= 40 * MS, "a first token before the server's 40 ms: {r}");
            ttft.push(t);
        }
    }
    // Follow-ups leave at their instant, not with the next start (50 ms later on average).
    let (ttft, lag) = (median(ttft), median(lag));
    eprintln!("TTFT from the intended send p50 {ttft} ns; follow-ups' send lag p50 {lag} ns");
    assert!(ttft < 60 * MS, "TTFT p50 {ttft} ns");
    assert!(lag < 20 * MS, "send lag p50 {lag} ns");
}

#[test]
fn a_drawn_think_time_puts_each_follow_up_within_its_bounds_after_the_previous_turn() {
    let _g = serial();
    let server = Server::start(&["--llm", "--ttft", "5ms", "--itl", "1ms"]);
    let path = write_file("think.jsonl", "");
    let (v, _) = run_json(&[
        "--llm",
        "openai",
        "--turns",
        "3",
        "--prompt-tokens",
        "8",
        "--output-tokens",
        "4",
        "--think-time",
        "uniform:10ms..30ms",
        "--seed",
        "3",
        "-R",
        "10:1s,0:1s",
        "-c",
        "8",
        "--records",
        path.to_str().unwrap(),
        &server.url,
    ]);
    assert_balanced(&v);
    assert_eq!((req(&v, "intended"), req(&v, "completed")), (30, 30));
    let dataset = v["config"]["llm"]["dataset"].as_str().unwrap();
    assert!(
        dataset.ends_with("think time uniform:10.00ms..30.00ms"),
        "{dataset}"
    );
    let mut by_conversation: BTreeMap<u64, Vec<Value>> = BTreeMap::new();
    for r in records(&path) {
        by_conversation.entry(ns(&r, "seq")).or_default().push(r);
    }
    let mut thinks = Vec::new();
    for turns in by_conversation.values_mut() {
        turns.sort_by_key(|r| ns(r, "intended_ns"));
        for w in turns.windows(2) {
            // Exactly the previous turn's completion plus a draw within the bounds.
            let think = ns(&w[1], "intended_ns") - ns(&w[0], "end_ns");
            assert!((10 * MS..=30 * MS).contains(&think), "{think} ns");
            thinks.push(think);
        }
    }
    assert_eq!(thinks.len(), 20);
    thinks.sort_unstable();
    thinks.dedup();
    assert!(thinks.len() > 15, "drawn, not one constant: {thinks:?}");
}

#[test]
fn sharegpt_conversations_carry_their_recorded_answers_and_completions_are_refused() {
    let _g = serial();
    let server = Server::start(&[
        "--llm",
        "--ttft",
        "2ms",
        "--itl",
        "1ms",
        "--output-tokens",
        "100",
    ]);
    let turn = |from: &str, words: usize| serde_json::json!({"from": from, "value": vec!["w"; words].join(" ")});
    let file = serde_json::json!([
        {"conversations": [turn("human", 5), turn("gpt", 3), turn("human", 2), turn("gpt", 6), turn("human", 4)]},
    ]);
    let data = write_file("multi.json", &file.to_string());
    let run = |extra: &[&str]| {
        let path = write_file(&format!("sharegpt{}.jsonl", extra.len()), "");
        let mut args = vec![
            "--llm",
            "openai",
            "--sharegpt",
            data.to_str().unwrap(),
            "--multi-turn",
            "-R",
            "5:1s,0:1s",
            "-c",
            "2",
            "--records",
            path.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        args.push(&server.url);
        let (v, _) = run_json(&args);
        assert_balanced(&v);
        let mut turns: Vec<(u64, u64, u64)> = records(&path)
            .iter()
            .map(|r| (ns(r, "seq"), ns(r, "input_tokens"), ns(r, "output_tokens")))
            .collect();
        turns.sort_unstable();
        (v, turns)
    };
    // Five conversations of two turns: prompts of 7 and 14 tokens, answers of 4 and 8.
    let (v, turns) = run(&[]);
    assert_eq!((req(&v, "intended"), req(&v, "completed")), (10, 10));
    let want: Vec<(u64, u64, u64)> = (0..5).flat_map(|s| [(s, 7, 4), (s, 14, 8)]).collect();
    assert_eq!(turns, want);
    assert_eq!(v["conversations"]["completed"], 5);
    // vLLM's rules judged the conversation turn by turn (both whole prompts pass).
    let sample = &v["config"]["llm"]["sample"];
    assert_eq!(
        (
            &sample["examined"],
            &sample["pruned"],
            &sample["cut"],
            &sample["kept"]
        ),
        (&1.into(), &0.into(), &0.into(), &1.into()),
        "{sample}"
    );
    let (v, turns) = run(&["--max-turns", "1"]);
    assert_eq!(req(&v, "completed"), 5);
    assert!(turns.iter().all(|t| (t.1, t.2) == (7, 4)), "{turns:?}");

    // Completions and embeddings have no messages: refused in one line before any load.
    for api in ["openai-completions", "openai-embeddings"] {
        let out = candor()
            .args(["run", "--llm", api, "--turns", "3", &server.url])
            .output()
            .unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.starts_with("candor: error: --multi-turn and --turns")
                && err.trim_end().ends_with(api)
                && err.lines().count() == 1,
            "{err}"
        );
    }
}
