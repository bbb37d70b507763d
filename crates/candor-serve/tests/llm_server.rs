//! The LLM streaming server (`candor serve --llm`) driven over real sockets by a plain client:
//! what each stream says (events, tokens, usage, `[DONE]`), each fault, and that no token leaves
//! before it is due (the upper side of timing is the truth tests' business, with tolerances).

use candor_serve::llm::{self, LlmConfig, LlmFault, LlmFaultKind};
use candor_serve::Stall;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

const MS: u64 = 1_000_000;

fn config(tokens: u32) -> LlmConfig {
    let mut c = LlmConfig::new("127.0.0.1:0".parse().unwrap());
    c.ttft_ns = 30 * MS;
    c.itl_ns = 5 * MS;
    c.output_tokens = tokens;
    c
}

/// What came back for one request: status, headers (lower-case names), the body's events (for
/// a stream: each `data:` payload with when it was read), and whether the chunked body ended.
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    events: Vec<(String, Duration)>,
    body: String,
    ended: bool,
}

fn send(stream: &mut TcpStream, path: &str, json: &str) -> Instant {
    let req = format!(
        "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{json}",
        json.len()
    );
    let t = Instant::now();
    stream.write_all(req.as_bytes()).unwrap();
    t
}

fn read_reply(reader: &mut BufReader<TcpStream>, sent: Instant) -> Reply {
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let status: u16 = line.split(' ').nth(1).unwrap().parse().unwrap();
    let mut headers = Vec::new();
    loop {
        line.clear();
        reader.read_line(&mut line).unwrap();
        if line == "\r\n" {
            break;
        }
        let (n, v) = line.split_once(':').unwrap();
        headers.push((n.to_ascii_lowercase(), v.trim().to_string()));
    }
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    let mut reply = Reply {
        status,
        headers: headers.clone(),
        events: Vec::new(),
        body: String::new(),
        ended: false,
    };
    if let Some(len) = header("content-length") {
        let mut body = vec![0; len.parse().unwrap()];
        reader.read_exact(&mut body).unwrap();
        reply.body = String::from_utf8(body).unwrap();
        reply.ended = true;
        return reply;
    }
    // Chunked: one SSE event per chunk, as the server writes them.
    loop {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return reply; // closed mid-stream
        }
        let size = usize::from_str_radix(line.trim(), 16).unwrap();
        if size == 0 {
            line.clear();
            reader.read_line(&mut line).unwrap();
            reply.ended = true;
            return reply;
        }
        let mut chunk = vec![0; size + 2];
        reader.read_exact(&mut chunk).unwrap();
        let text = String::from_utf8(chunk[..size].to_vec()).unwrap();
        let data = text
            .strip_prefix("data: ")
            .and_then(|t| t.strip_suffix("\n\n"))
            .unwrap_or_else(|| panic!("not one SSE data event: {text:?}"));
        reply.events.push((data.to_string(), sent.elapsed()));
    }
}

fn connect(server: &llm::LlmServer) -> (TcpStream, BufReader<TcpStream>) {
    let s = TcpStream::connect(server.local_addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let r = BufReader::new(s.try_clone().unwrap());
    (s, r)
}

#[test]
fn a_chat_stream_carries_each_token_then_usage_then_done_and_no_token_is_early() {
    let server = llm::start(config(6)).unwrap();
    let (mut s, mut r) = connect(&server);
    let body = r#"{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"one two three"}]}"#;
    // Two requests on one connection: keep-alive holds between streams.
    for _ in 0..2 {
        let sent = send(&mut s, "/v1/chat/completions", body);
        let reply = read_reply(&mut r, sent);
        assert_eq!(reply.status, 200);
        assert!(reply
            .headers
            .contains(&("content-type".into(), "text/event-stream".into())));
        assert!(reply.ended);
        let n = reply.events.len();
        assert_eq!(n, 6 + 2, "6 tokens, usage, [DONE]");
        assert_eq!(reply.events[n - 1].0, "[DONE]");
        let usage: serde_json::Value = serde_json::from_str(&reply.events[n - 2].0).unwrap();
        assert_eq!(usage["usage"]["completion_tokens"], 6);
        // 3 words -> ceil(3 * 4 / 3) = 4 prompt tokens.
        assert_eq!(usage["usage"]["prompt_tokens"], 4);
        assert_eq!(usage["choices"].as_array().unwrap().len(), 0);
        for (k, (data, at)) in reply.events[..6].iter().enumerate() {
            let v: serde_json::Value = serde_json::from_str(data).unwrap();
            assert!(v["choices"][0]["delta"]["content"]
                .as_str()
                .unwrap()
                .ends_with(' '));
            let due = Duration::from_nanos(30 * MS + k as u64 * 5 * MS);
            assert!(
                *at >= due,
                "token {k} read after {at:?}, due no earlier than {due:?}"
            );
        }
        let last: serde_json::Value = serde_json::from_str(&reply.events[5].0).unwrap();
        assert_eq!(last["choices"][0]["finish_reason"], "length");
    }
    server.shutdown();
}

#[test]
fn completions_without_usage_and_a_smaller_max_tokens() {
    let server = llm::start(config(6)).unwrap();
    let (mut s, mut r) = connect(&server);
    let sent = send(
        &mut s,
        "/v1/completions",
        r#"{"model":"m","prompt":"hi","max_tokens":3,"stream":true}"#,
    );
    let reply = read_reply(&mut r, sent);
    assert_eq!(reply.events.len(), 3 + 1, "3 tokens then [DONE], no usage");
    let first: serde_json::Value = serde_json::from_str(&reply.events[0].0).unwrap();
    assert_eq!(first["object"], "text_completion");
    assert!(first["choices"][0]["text"].is_string());
}

#[test]
fn without_stream_the_whole_answer_comes_at_the_last_token() {
    let server = llm::start(config(4)).unwrap();
    let (mut s, mut r) = connect(&server);
    let sent = send(
        &mut s,
        "/v1/chat/completions",
        r#"{"model":"m","messages":[{"role":"user","content":"x"}]}"#,
    );
    let reply = read_reply(&mut r, sent);
    assert!(sent.elapsed() >= Duration::from_nanos(30 * MS + 3 * 5 * MS));
    let v: serde_json::Value = serde_json::from_str(&reply.body).unwrap();
    assert_eq!(v["usage"]["completion_tokens"], 4);
    assert_eq!(
        v["choices"][0]["message"]["content"]
            .as_str()
            .unwrap()
            .split_whitespace()
            .count(),
        4
    );
}

fn faulty(kind: LlmFaultKind, every: u64) -> llm::LlmServer {
    let mut c = config(6);
    c.fault = Some(LlmFault { kind, every });
    llm::start(c).unwrap()
}

const STREAM: &str = r#"{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}"#;

#[test]
fn rate_limit_answers_429_on_every_nth_request_only() {
    let server = faulty(LlmFaultKind::RateLimit, 2);
    let (mut s, mut r) = connect(&server);
    let statuses: Vec<u16> = (0..4)
        .map(|_| {
            let sent = send(&mut s, "/v1/chat/completions", STREAM);
            read_reply(&mut r, sent).status
        })
        .collect();
    assert_eq!(statuses, vec![200, 429, 200, 429]);
    assert_eq!(server.requests_served(), 2);
}

#[test]
fn error_mid_stream_sends_half_the_tokens_then_an_error_event() {
    let server = faulty(LlmFaultKind::ErrorMidStream, 1);
    let (mut s, mut r) = connect(&server);
    let sent = send(&mut s, "/v1/chat/completions", STREAM);
    let reply = read_reply(&mut r, sent);
    assert_eq!(reply.status, 200);
    assert_eq!(reply.events.len(), 3 + 1);
    assert!(reply.events[3].0.contains("\"error\""));
    assert!(reply.ended, "the stream ends properly, without [DONE]");
}

#[test]
fn no_done_ends_the_stream_after_every_token_without_done() {
    let server = faulty(LlmFaultKind::NoDone, 1);
    let (mut s, mut r) = connect(&server);
    let sent = send(&mut s, "/v1/chat/completions", STREAM);
    let reply = read_reply(&mut r, sent);
    assert_eq!(reply.events.len(), 6);
    assert!(reply.events.iter().all(|(d, _)| d != "[DONE]"));
    assert!(reply.ended);
}

#[test]
fn close_mid_stream_cuts_the_connection_after_half_the_tokens() {
    let server = faulty(LlmFaultKind::CloseMidStream, 1);
    let (mut s, mut r) = connect(&server);
    let sent = send(&mut s, "/v1/chat/completions", STREAM);
    let reply = read_reply(&mut r, sent);
    assert_eq!(reply.events.len(), 3);
    assert!(!reply.ended);
}

#[test]
fn unknown_paths_and_bodies_that_are_not_json_are_refused_and_the_connection_kept() {
    let server = llm::start(config(2)).unwrap();
    let (mut s, mut r) = connect(&server);
    let sent = send(&mut s, "/v1/rerank", "{}");
    assert_eq!(read_reply(&mut r, sent).status, 404);
    // An embeddings request without inputs.
    let sent = send(&mut s, "/v1/embeddings", "{}");
    assert_eq!(read_reply(&mut r, sent).status, 400);
    let sent = send(&mut s, "/v1/chat/completions", "not json");
    assert_eq!(read_reply(&mut r, sent).status, 400);
    let sent = send(&mut s, "/v1/chat/completions", STREAM);
    assert_eq!(read_reply(&mut r, sent).events.len(), 2 + 1);
}

#[test]
fn a_stalled_server_holds_the_first_token_to_the_window_end() {
    let mut c = config(2);
    c.ttft_ns = MS;
    c.itl_ns = MS;
    // Stalled for the last 400 ms of every 500 ms: most requests wait for a window end.
    c.stall = Some(Stall {
        every_ns: 500 * MS,
        for_ns: 400 * MS,
    });
    let server = llm::start(c.clone()).unwrap();
    let started = server.started_at_ns();
    let (mut s, mut r) = connect(&server);
    let sent_ns = candor_core::now_ns();
    let sent = send(&mut s, "/v1/chat/completions", STREAM);
    let reply = read_reply(&mut r, sent);
    // The server read the request no earlier than `sent_ns`: its first token is due at least
    // 1 ms later, held to the end of the window that instant falls in, if any.
    let due = sent_ns + MS;
    let earliest = c.stall.unwrap().window_end_at(started, due).unwrap_or(due);
    let first = sent_ns + reply.events[0].1.as_nanos() as u64;
    assert!(
        first >= earliest,
        "first token at {first}, not before {earliest}"
    );
    server.shutdown();
}

#[test]
fn shutdown_closes_open_streams_promptly() {
    let mut c = config(1000);
    c.itl_ns = 10 * MS; // a 10 s stream
    let server = llm::start(c).unwrap();
    let (mut s, mut r) = connect(&server);
    let sent = send(&mut s, "/v1/chat/completions", STREAM);
    let mut line = String::new();
    r.read_line(&mut line).unwrap(); // the head has begun
    let t = Instant::now();
    server.shutdown();
    let _ = read_reply_rest(&mut r);
    // Bounded by the stream's own length (10 s): shutdown must not wait for it.
    assert!(
        t.elapsed() < Duration::from_secs(10),
        "{:?}",
        sent.elapsed()
    );
}

fn read_reply_rest(r: &mut BufReader<TcpStream>) -> usize {
    let mut rest = Vec::new();
    r.read_to_end(&mut rest).unwrap_or(0)
}

#[test]
fn a_head_that_never_ends_a_line_is_refused_at_its_limit() {
    let server = llm::start(config(2)).unwrap();
    let (mut s, mut r) = connect(&server);
    // 1 MiB of a request line with no line end: refused once past the 64 KiB head limit.
    let junk = vec![b'a'; 1 << 20];
    let _ = s.write_all(&junk); // the server may close before it has all of it
                                // The server answers 400 and closes; with bytes of ours still unread there, the close may
                                // arrive as a reset first. Either way it gave up: only a wait for the read timeout (the
                                // server still buffering) fails.
    let mut line = String::new();
    match r.read_line(&mut line) {
        Ok(_) => assert!(
            line.is_empty() || line.starts_with("HTTP/1.1 400"),
            "{line:?}"
        ),
        Err(e) => assert!(
            !matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ),
            "the server kept reading: {e}"
        ),
    }
}

/// Settings small enough that a test of the timeouts takes a fraction of a second; the clients'
/// own read timeouts are 10 s, over 30 times the server's, so only a server that never times a
/// connection out makes them fail.
fn timed(max_connections: usize, idle_ms: u64, head_ms: u64) -> LlmConfig {
    let mut c = config(2);
    c.max_connections = max_connections;
    c.idle_timeout_ns = idle_ms * MS;
    c.head_timeout_ns = head_ms * MS;
    c
}

/// Whether the server closed `s` (end of stream or a reset) before the client's 10 s timeout.
fn closed_by_server(s: &mut TcpStream) -> bool {
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {} // an answer before the close (a 408)
            Err(e) => {
                return !matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                )
            }
        }
    }
}

#[test]
fn idle_connections_are_closed_after_the_idle_timeout_and_free_their_places() {
    // Four places, all taken by connections that never send a byte.
    let server = llm::start(timed(4, 300, 300)).unwrap();
    let mut idle: Vec<TcpStream> = (0..4)
        .map(|_| TcpStream::connect(server.local_addr()).unwrap())
        .collect();
    for s in &mut idle {
        assert!(closed_by_server(s), "an idle connection was kept open");
    }
    // Their places are free again: a bystander is served.
    let (mut s, mut r) = connect(&server);
    let sent = send(&mut s, "/v1/chat/completions", STREAM);
    let reply = read_reply(&mut r, sent);
    assert_eq!(reply.status, 200);
    assert_eq!(reply.events.len(), 2 + 1);
}

#[test]
fn a_head_that_trickles_in_is_cut_at_the_head_timeout_with_a_408() {
    // The idle timeout (30 s) is never reached between two bytes; only the head's own limit
    // (300 ms from its first byte to its end) ends this connection.
    let server = llm::start(timed(4, 30_000, 300)).unwrap();
    let s = TcpStream::connect(server.local_addr()).unwrap();
    let writer = {
        let mut s = s.try_clone().unwrap();
        std::thread::spawn(move || {
            let t = Instant::now();
            // At most 20 s of one byte every 20 ms; stops at the first failed write.
            while t.elapsed() < Duration::from_secs(20) {
                if s.write_all(b"X").is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    let mut r = BufReader::new(s.try_clone().unwrap());
    r.get_ref()
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut line = String::new();
    let got = r.read_line(&mut line);
    let _ = s.shutdown(std::net::Shutdown::Both);
    let _ = writer.join();
    assert!(
        got.is_ok() && line.starts_with("HTTP/1.1 408"),
        "{got:?} {line:?}"
    );
}

#[test]
fn a_malformed_head_gets_an_openai_error_body_in_json() {
    let server = llm::start(config(2)).unwrap();
    let (mut s, mut r) = connect(&server);
    s.write_all(b"POST /v1/chat/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n")
        .unwrap();
    let reply = read_reply(&mut r, Instant::now());
    assert_eq!(reply.status, 400);
    assert!(reply
        .headers
        .contains(&("content-type".into(), "application/json".into())));
    let v: serde_json::Value = serde_json::from_str(&reply.body)
        .unwrap_or_else(|e| panic!("the 400's body is not JSON ({e}): {:?}", reply.body));
    assert!(v["error"]["message"].is_string(), "{v}");
    assert_eq!(v["error"]["type"], "invalid_request_error");
}

#[test]
fn unknown_fields_and_loose_types_are_ignored_as_before() {
    let server = llm::start(config(4)).unwrap();
    let (mut s, mut r) = connect(&server);
    // Content given as parts, a huge unknown array, a stream flag of the wrong type on the
    // first request: the first is answered whole with defaults, the second streamed.
    let body = r#"{"pad":[0,[1,{"a":"b"}],"x\"y"],"stream":"yes","max_tokens":"2","messages":[0,{"content":[{"type":"text","text":"a b"}]},{"role":"user","content":"one two three"}]}"#;
    let sent = send(&mut s, "/v1/chat/completions", body);
    let reply = read_reply(&mut r, sent);
    assert_eq!(reply.status, 200, "{}", reply.body);
    let v: serde_json::Value = serde_json::from_str(&reply.body).unwrap();
    assert_eq!(v["usage"]["completion_tokens"], 4);
    assert_eq!(v["usage"]["prompt_tokens"], 4);
    let body = r#"{"stream":true,"stream_options":{"include_usage":true,"x":[1]},"prompt":"a\nb c","max_tokens":1}"#;
    let sent = send(&mut s, "/v1/completions", body);
    let reply = read_reply(&mut r, sent);
    let n = reply.events.len();
    assert_eq!(n, 1 + 2, "one token, usage, [DONE]");
    let usage: serde_json::Value = serde_json::from_str(&reply.events[n - 2].0).unwrap();
    assert_eq!(usage["usage"]["prompt_tokens"], 4);
}

#[test]
fn a_body_that_stops_arriving_is_cut_at_the_idle_timeout_with_a_408() {
    // The head is whole; of its 100-byte body 10 bytes come, then nothing for longer than the
    // 300 ms idle timeout between two reads of a body.
    let server = llm::start(timed(4, 300, 30_000)).unwrap();
    let (mut s, mut r) = connect(&server);
    s.write_all(b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 100\r\n\r\n{\"stream\":")
        .unwrap();
    r.get_ref()
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut line = String::new();
    let got = r.read_line(&mut line);
    assert!(
        got.is_ok() && line.starts_with("HTTP/1.1 408"),
        "{got:?} {line:?}"
    );
}

#[test]
fn a_body_that_trickles_in_below_the_minimum_rate_is_cut_at_its_total_deadline_with_a_408() {
    // A byte every 20 ms never reaches the idle timeout (30 s) between two reads; only the
    // body's total deadline -- the head timeout (300 ms) plus 1,000 bytes at the minimum rate
    // (64 KiB/s: 15 ms) -- ends it. Without that deadline the body would take 20 s to arrive,
    // twice the client's 10 s wait for an answer.
    let server = llm::start(timed(4, 30_000, 300)).unwrap();
    let mut s = TcpStream::connect(server.local_addr()).unwrap();
    s.write_all(b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 1000\r\n\r\n")
        .unwrap();
    let writer = {
        let mut s = s.try_clone().unwrap();
        std::thread::spawn(move || {
            let t = Instant::now();
            // JSON whitespace, so the parse goes on reading; at most 1,000 bytes and 20 s, and
            // stops at the first failed write.
            for _ in 0..1000 {
                if t.elapsed() > Duration::from_secs(20) || s.write_all(b" ").is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    let mut r = BufReader::new(s.try_clone().unwrap());
    r.get_ref()
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut line = String::new();
    let got = r.read_line(&mut line);
    let _ = s.shutdown(std::net::Shutdown::Both);
    let _ = writer.join();
    assert!(
        got.is_ok() && line.starts_with("HTTP/1.1 408"),
        "{got:?} {line:?}"
    );
}
