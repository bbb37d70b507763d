//! `/v1/embeddings` and `/v1/models` of `candor serve --llm`: an embeddings answer of known
//! timing (read + `--embed-latency` + `--embed-per-token` x its input tokens, held by stalls
//! like every write) holding one vector of `--embed-dim` values per input, with usage; and the
//! model list a client's backend probe reads (`owned_by: "candor"`).
//!
//! The answer's length is computed before it is written (every vector is the same text, only
//! the indices differ), so it goes out with a `Content-Length`, piece by piece through a small
//! buffer: 2,048 inputs of 4,096 values (tens of MB) never sit in memory whole.

use super::config::{LlmConfig, SERVER};
use candor_core::exact_sleep::sleep_until_absolute;
use std::io::{self, BufWriter, Write};
use std::net::TcpStream;

/// The instant an embeddings answer of `tokens` input tokens leaves, for a request read at
/// `read_ns` by a server started at `started_ns` (a stall holds it to the window's end).
pub fn embed_time(config: &LlmConfig, started_ns: u64, read_ns: u64, tokens: u64) -> u64 {
    let due = read_ns
        .saturating_add(config.embed_latency_ns)
        .saturating_add(tokens.saturating_mul(config.embed_per_token_ns));
    match &config.stall {
        Some(s) => s.window_end_at(started_ns, due).unwrap_or(due),
        None => due,
    }
}

/// The text of every vector: `dim` values cycling through eighths (exact in binary, so any
/// client parses them back to the same floats).
fn vector(dim: u32) -> String {
    const VALUES: [&str; 8] = [
        "0.0", "0.125", "0.25", "0.375", "0.5", "0.625", "0.75", "0.875",
    ];
    let mut v = String::with_capacity(dim as usize * 6 + 2);
    v.push('[');
    for k in 0..dim as usize {
        if k > 0 {
            v.push(',');
        }
        v.push_str(VALUES[k % VALUES.len()]);
    }
    v.push(']');
    v
}

/// Decimal digits of `n`.
fn digits(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |d| d as usize + 1)
}

/// Writes the answer to an embeddings request of `inputs` inputs and `tokens` input tokens;
/// whether the connection stays open.
pub(super) fn write_embeddings(
    out: &mut TcpStream,
    config: &LlmConfig,
    inputs: u64,
    tokens: u64,
    keep: bool,
) -> io::Result<bool> {
    const ITEM_OPEN: &str = "{\"object\":\"embedding\",\"index\":";
    const ITEM_MID: &str = ",\"embedding\":";
    let vector = vector(config.embed_dim);
    let open = "{\"object\":\"list\",\"data\":[";
    let close = format!(
        "],\"model\":\"{}\",\"usage\":{{\"prompt_tokens\":{tokens},\"total_tokens\":{tokens}}}}}",
        config.model
    );
    let index_digits: usize = (0..inputs).map(digits).sum();
    let per_item = ITEM_OPEN.len() + ITEM_MID.len() + vector.len() + 1;
    let commas = inputs.saturating_sub(1) as usize;
    let length = open.len() + close.len() + per_item * inputs as usize + index_digits + commas;
    let mut w = BufWriter::with_capacity(64 * 1024, out);
    write!(
        w,
        "HTTP/1.1 200 OK\r\n{SERVER}Content-Type: application/json\r\nContent-Length: {length}\r\n{}\r\n",
        if keep { "" } else { "Connection: close\r\n" }
    )?;
    w.write_all(open.as_bytes())?;
    for i in 0..inputs {
        if i > 0 {
            w.write_all(b",")?;
        }
        write!(w, "{ITEM_OPEN}{i}{ITEM_MID}{vector}}}")?;
    }
    w.write_all(close.as_bytes())?;
    w.flush()?;
    Ok(keep)
}

/// The model list of `GET /v1/models`: the server's one model, owned by candor.
pub(super) fn models_body(config: &LlmConfig) -> String {
    format!(
        "{{\"object\":\"list\",\"data\":[{{\"id\":\"{}\",\"object\":\"model\",\"created\":0,\"owned_by\":\"candor\"}}]}}",
        config.model
    )
}

/// Sleeps until `at`, then writes the answer (see [`write_embeddings`]).
pub(super) fn answer_at(
    out: &mut TcpStream,
    config: &LlmConfig,
    at: u64,
    inputs: u64,
    tokens: u64,
    keep: bool,
) -> io::Result<bool> {
    sleep_until_absolute(at);
    write_embeddings(out, config, inputs, tokens, keep)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::TcpListener;

    #[test]
    fn the_answer_is_json_of_its_length_with_one_vector_per_input() {
        let mut config = LlmConfig::new("127.0.0.1:0".parse().unwrap());
        config.embed_dim = 5;
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let writer = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            write_embeddings(&mut s, &config, 12, 30, false).unwrap();
        });
        let mut client = TcpStream::connect(addr).unwrap();
        let mut all = Vec::new();
        client.read_to_end(&mut all).unwrap();
        writer.join().unwrap();
        let text = String::from_utf8(all).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.contains("\r\nServer: candor\r\n"), "{head}");
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("Content-Length: "))
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(length, body.len());
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        let data = v["data"].as_array().unwrap();
        assert_eq!(data.len(), 12);
        assert_eq!(data[11]["index"], 11);
        assert_eq!(
            data[0]["embedding"],
            serde_json::json!([0.0, 0.125, 0.25, 0.375, 0.5])
        );
        assert_eq!(v["usage"]["prompt_tokens"], 30);
        assert_eq!(v["model"], "candor-truth");
    }

    #[test]
    fn the_answer_leaves_after_its_latency_and_its_tokens_unless_a_stall_holds_it() {
        let mut config = LlmConfig::new("127.0.0.1:0".parse().unwrap());
        config.embed_latency_ns = 20;
        config.embed_per_token_ns = 3;
        assert_eq!(embed_time(&config, 0, 100, 10), 150);
        config.stall = Some(crate::Stall {
            every_ns: 1_000,
            for_ns: 200,
        });
        // Due at 900, inside the window 800..1,000 of each 1,000: it leaves at 1,000.
        assert_eq!(embed_time(&config, 0, 850, 10), 1_000);
        assert_eq!(embed_time(&config, 0, 1_000, 10), 1_050);
    }
}
