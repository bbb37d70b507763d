//! What `candor run --llm` sends from its datasets: a prompts line's extra body fields and
//! `--llm-body` reach the server unchanged (seen by a capturing server written here), and the
//! budget spellings are honoured by `candor serve --llm`, whose answers' lengths are known.

mod common;
use common::*;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A server on a loopback port it chose that keeps every request body it reads and answers
/// each with a two-token stream; its threads end when the client closes or after 5 s of
/// silence, and the accepting thread after `count` connections (candor's preflight opens
/// some of its own).
struct Capture {
    url: String,
    bodies: Arc<Mutex<Vec<serde_json::Value>>>,
}

const ANSWER: &[u8] = b"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n\ndata: [DONE]\n\n";

impl Capture {
    fn start(count: usize) -> Capture {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let kept = bodies.clone();
        std::thread::spawn(move || {
            for s in listener.incoming().take(count).flatten() {
                let kept = kept.clone();
                std::thread::spawn(move || serve(s, &kept));
            }
        });
        Capture { url, bodies }
    }
}

fn serve(mut s: TcpStream, kept: &Mutex<Vec<serde_json::Value>>) {
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let mut buf = Vec::new();
    let mut read = [0u8; 4096];
    loop {
        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
            match s.read(&mut read) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&read[..n]),
            }
            continue;
        };
        let head = String::from_utf8_lossy(&buf[..end]).to_string();
        buf.drain(..end + 4);
        let length: usize = head
            .lines()
            .find_map(|l| {
                let (n, v) = l.split_once(':')?;
                n.eq_ignore_ascii_case("content-length")
                    .then(|| v.trim().parse().ok())?
            })
            .unwrap_or(0);
        while buf.len() < length {
            match s.read(&mut read) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&read[..n]),
            }
        }
        let body: Vec<u8> = buf.drain(..length).collect();
        // Only the requests of the load: the backend probe's GET /v1/models is no body sent.
        if head.starts_with("POST ") {
            kept.lock()
                .unwrap()
                .push(serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null));
        }
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: {}\r\n\r\n",
            ANSWER.len()
        );
        if s.write_all(head.as_bytes()).is_err() || s.write_all(ANSWER).is_err() {
            return;
        }
    }
}

fn write_file(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("candor-e2e-datasets-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_prompts_lines_extra_fields_and_llm_body_reach_the_server_unchanged() {
    let _g = serial();
    let server = Capture::start(16);
    let prompts = write_file(
        "extra.jsonl",
        "{\"prompt\": \"one\", \"max_tokens\": 4, \"ignore_eos\": true, \"temperature\": 0}\n\
         {\"prompt\": \"two\", \"top_p\": 0.5, \"seed\": 3}\n",
    );
    let (v, _) = run_json(&[
        "--llm",
        "openai-completions",
        "--prompts",
        prompts.to_str().unwrap(),
        "--llm-body",
        "{\"temperature\": 0.7, \"min_tokens\": 2}",
        "--max-tokens-field",
        "max_completion_tokens",
        "-n",
        "4",
        "-R",
        "20",
        "-c",
        "2",
        "-t",
        "1",
        &server.url,
    ]);
    assert_balanced(&v);
    assert_eq!(req(&v, "completed"), 4, "{v}");
    let bodies = server.bodies.lock().unwrap().clone();
    assert_eq!(bodies.len(), 4);
    let one = bodies.iter().find(|b| b["prompt"] == "one").unwrap();
    // Before: ignore_eos and temperature were dropped.
    assert_eq!(one["ignore_eos"], true);
    assert_eq!(one["temperature"], 0, "the line's own value wins: {one}");
    assert_eq!(one["max_tokens"], 4, "the line's spelling is kept: {one}");
    assert_eq!(one["min_tokens"], 2);
    let two = bodies.iter().find(|b| b["prompt"] == "two").unwrap();
    assert_eq!(
        (two["top_p"].clone(), two["seed"].clone()),
        (0.5.into(), 3.into())
    );
    assert_eq!(two["temperature"], 0.7, "--llm-body's: {two}");
    assert!(two.get("max_tokens").is_none() && two.get("max_completion_tokens").is_none());
    assert_eq!(two["stream"], true);
}

#[test]
fn both_budget_spellings_bound_the_answer_of_a_known_truth_server() {
    let _g = serial();
    // Truth: candor serve answers min(its 8 tokens, the budget asked) tokens, reading
    // max_tokens or else max_completion_tokens. 3 and 5 tokens asked, each line sent 5 times.
    let server = Server::start(&[
        "--llm",
        "--ttft",
        "5ms",
        "--itl",
        "1ms",
        "--output-tokens",
        "8",
    ]);
    let prompts = write_file(
        "budgets.jsonl",
        "{\"prompt\": \"a b\", \"max_completion_tokens\": 3}\n{\"prompt\": \"c d\", \"max_tokens\": 5}\n",
    );
    let (v, _) = run_json(&[
        "--llm",
        "openai",
        "--prompts",
        prompts.to_str().unwrap(),
        "-n",
        "10",
        "-R",
        "50",
        "-c",
        "4",
        "-t",
        "1",
        &server.url,
    ]);
    assert_balanced(&v);
    assert_eq!(req(&v, "completed"), 10);
    assert_eq!(v["stream"]["llm"]["output_tokens"], 5 * 3 + 5 * 5);
}

/// The prompts and budgets of the bodies `server` received.
fn sent(server: &Capture) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = server
        .bodies
        .lock()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["prompt"].as_str().unwrap().to_string(),
                b["max_tokens"].as_u64().unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn synthetic_prompts_share_their_prefix_and_draw_their_lengths_by_seed() {
    let _g = serial();
    // Truth: a 40-token prefix is 30 words every prompt starts with; each prompt's own part
    // is 8..=16 tokens (6..=12 words, its number first) and asks for 10..=30 tokens; the same
    // --seed sends the same prompts, another seed others.
    let run = |seed: &str| {
        let server = Capture::start(16);
        let (v, _) = run_json(&[
            "--llm",
            "openai-completions",
            "--prefix-tokens",
            "40",
            "--prompt-tokens",
            "uniform:8..16",
            "--output-tokens",
            "normal:20,5,10..30",
            "--seed",
            seed,
            "-n",
            "30",
            "-R",
            "100",
            "-c",
            "2",
            "-t",
            "1",
            &server.url,
        ]);
        assert_balanced(&v);
        assert_eq!(req(&v, "completed"), 30);
        sent(&server)
    };
    let first = run("5");
    assert_eq!(first.len(), 30);
    let prefix: Vec<&str> = first[0].0.split_whitespace().take(30).collect();
    assert_eq!(prefix[0], "shared");
    for (prompt, budget) in &first {
        let words: Vec<&str> = prompt.split_whitespace().collect();
        assert_eq!(words[..30], prefix[..], "{prompt}");
        assert!(words[30].parse::<u32>().is_ok(), "{prompt}");
        assert!((6..=12).contains(&(words.len() - 30)), "{prompt}");
        assert!((10..=30).contains(budget), "{budget}");
    }
    assert!(first
        .iter()
        .any(|(p, _)| p.split_whitespace().count() != first[0].0.split_whitespace().count()));
    assert_eq!(run("5"), first);
    assert_ne!(run("6"), first);
}

#[test]
fn a_sharegpt_file_sends_its_first_user_turns_with_their_answers_lengths() {
    let _g = serial();
    // Truth: answers of 3, 6 and 9 words are budgets of 4, 8 and 12 tokens (a token is 3/4
    // of a word); candor serve answers min(100, budget) tokens; 9 requests take each prompt 3
    // times: 3 x (4 + 8 + 12) = 72 output tokens. The conversation that opens with the
    // model's turn is skipped.
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
        {"id": "1", "conversations": [turn("human", 5), turn("gpt", 3)]},
        {"id": "x", "conversations": [turn("gpt", 5), turn("human", 3)]},
        {"id": "2", "conversations": [turn("human", 2), turn("gpt", 6), turn("human", 1)]},
        {"id": "3", "conversations": [turn("human", 9), turn("gpt", 9)]},
    ]);
    let path = write_file("sharegpt.json", &file.to_string());
    let (v, _) = run_json(&[
        "--llm",
        "openai",
        "--sharegpt",
        path.to_str().unwrap(),
        "--sharegpt-keep-all",
        "-n",
        "9",
        "-R",
        "50",
        "-c",
        "4",
        "-t",
        "1",
        &server.url,
    ]);
    assert_balanced(&v);
    assert_eq!(req(&v, "completed"), 9);
    assert_eq!(v["stream"]["llm"]["output_tokens"], 72);
    // Input tokens from the server's usage.prompt_tokens: prompts of 5, 2 and 9 words are 7,
    // 3 and 12 tokens by its rule, each sent 3 times: 66; the total 66 + 72 = 138.
    let llm = &v["stream"]["llm"];
    assert_eq!(
        (llm["input_tokens"].clone(), llm["input_counted"].clone()),
        (66.into(), 9.into())
    );
    assert_eq!(llm["total_tokens"], 138);
    // Per second as the output tokens are: over the same window.
    let per_s = |k: &str| llm[k].as_f64().unwrap();
    let window = 72.0 / per_s("output_tokens_per_s");
    assert!(
        (per_s("total_tokens_per_s") * window - 138.0).abs() < 1e-6,
        "{llm}"
    );
    assert!(
        (per_s("input_tokens_per_s") * window - 66.0).abs() < 1e-6,
        "{llm}"
    );
    // By default vLLM's rules prune the 2-word prompt (3 tokens, under 4): 2 prompts kept,
    // sampled at random, each sent 4 times of 8: 4 x (4 + 12) = 64 output tokens; the
    // settings record 4 conversations read, 1 unusable, 3 examined, 1 pruned, 2 kept.
    let (v, _) = run_json(&[
        "--llm",
        "openai",
        "--sharegpt",
        path.to_str().unwrap(),
        "-n",
        "8",
        "-R",
        "50",
        "-c",
        "4",
        "-t",
        "1",
        &server.url,
    ]);
    assert_eq!(v["stream"]["llm"]["output_tokens"], 64);
    let sample = &v["config"]["llm"]["sample"];
    assert_eq!(
        [
            &sample["conversations"],
            &sample["unusable"],
            &sample["examined"],
            &sample["pruned"],
            &sample["kept"]
        ],
        [4, 1, 3, 1, 2].map(serde_json::Value::from).each_ref(),
        "{sample}"
    );
    assert_eq!(
        (sample["random"].clone(), sample["pruning"].clone()),
        (true.into(), true.into())
    );
    // Not ShareGPT: one line naming the file, before any load.
    let bad = write_file("bad.json", "{\"conversations\": []}");
    let out = candor()
        .args([
            "run",
            "--llm",
            "openai",
            "--sharegpt",
            bad.to_str().unwrap(),
            &server.url,
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("candor: error: --sharegpt ")
            && err.contains("not ShareGPT JSON")
            && err.lines().count() == 1,
        "{err}"
    );
}

#[test]
fn with_a_tokenizer_synthetic_prompts_are_exactly_their_tokens() {
    let _g = serial();
    // Truth: --tokenizer cl100k_base --prefix-tokens 32 --prompt-tokens 100: every prompt is
    // exactly 132 tokens by cl100k_base (counted here with the same embedded encoding, itself
    // checked against tiktoken's published vectors), its first 32 the same.
    let server = Capture::start(16);
    let (v, _) = run_json(&[
        "--llm",
        "openai-completions",
        "--tokenizer",
        "cl100k_base",
        "--prefix-tokens",
        "32",
        "--prompt-tokens",
        "100",
        "-n",
        "10",
        "-R",
        "100",
        "-c",
        "2",
        "-t",
        "1",
        &server.url,
    ]);
    assert_balanced(&v);
    assert_eq!(req(&v, "completed"), 10);
    let t = candor_load::workload::tokenizer::Tokenizer::load("cl100k_base").unwrap();
    let sent = sent(&server);
    assert_eq!(sent.len(), 10);
    let prefix = |p: &str| t.encode(p)[..32].to_vec();
    for (prompt, _) in &sent {
        assert_eq!(t.count(prompt), 132, "{prompt}");
        assert_eq!(prefix(prompt), prefix(&sent[0].0));
    }
    let out = candor()
        .args([
            "run",
            "--llm",
            "openai",
            "--tokenizer",
            "gpt9_base",
            &server.url,
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("--tokenizer gpt9_base: not a tiktoken encoding"),
        "{err}"
    );
}
