//! The backend an `--llm` run measures, asked before the load: one `GET /v1/models` over the
//! run's own transport (a connection as the reachability check opens, TLS by the run's client
//! configuration, its `-H` headers such as `Authorization`), with a short timeout and a
//! bounded answer. Never fatal: any failure leaves the backend unknown and says why.

use crate::plan::RunPlan;
use candor_core::llm_run::MAX_BACKEND_MODELS;
use candor_core::results::{BackendModel, LlmBackend};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// The most of the answer read: a model list is a few KB (vLLM's, with its permissions, under
/// 1 KB a model); a longer answer is cut and, unless its JSON ended inside, left unknown.
const MAX_ANSWER: usize = 256 * 1024;

/// The headers of the run not sent with the probe: those of its POSTs' bodies and of the
/// connection, which the probe sets itself.
const NOT_SENT: [&str; 5] = [
    "content-type",
    "content-length",
    "connection",
    "host",
    "transfer-encoding",
];

/// Asks the target's `/v1/models` (see the module documentation), within `timeout` in all.
pub fn probe(plan: &RunPlan, timeout: Duration) -> LlmBackend {
    match ask(plan, timeout) {
        Ok(answer) => read_models(&answer),
        Err(why) => LlmBackend {
            unknown: Some(format!("GET /v1/models: {why}")),
            ..Default::default()
        },
    }
}

/// The request the probe sends.
fn request(plan: &RunPlan) -> String {
    let t = &plan.config.target;
    let mut req = format!(
        "GET /v1/models HTTP/1.1\r\nHost: {}\r\nAccept: application/json\r\nConnection: close\r\n",
        t.host_header
    );
    for h in &plan.config.headers {
        let name = h
            .split(':')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        if !NOT_SENT.contains(&name.as_str()) {
            req.push_str(h);
            req.push_str("\r\n");
        }
    }
    if let Some(c) = &t.credentials {
        req.push_str(&c.basic_header());
        req.push_str("\r\n");
    }
    req.push_str("\r\n");
    req
}

/// Sends the request and reads the answer to its end (or to [`MAX_ANSWER`]).
fn ask(plan: &RunPlan, timeout: Duration) -> Result<Vec<u8>, String> {
    let t = &plan.config.target;
    let deadline = Instant::now() + timeout;
    let sock = TcpStream::connect_timeout(&t.addr, timeout).map_err(|e| e.to_string())?;
    let left = || {
        deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
            .ok_or_else(|| format!("no answer within {timeout:?}"))
    };
    sock.set_read_timeout(Some(left()?))
        .map_err(|e| e.to_string())?;
    sock.set_write_timeout(Some(left()?))
        .map_err(|e| e.to_string())?;
    let req = request(plan);
    let tls = candor_engine::transport::tls::shared_client_config(&plan.config, &[b"http/1.1"])
        .map_err(|e| e.to_string())?;
    let mut answer = Vec::new();
    match tls {
        None => exchange(sock, &req, &mut answer, left)?,
        Some(client) => {
            let stream = candor_engine::transport::tls::handshake(
                &client,
                &plan.config.tls,
                &t.host,
                t.addr,
                left()?,
            )
            .map_err(|e| e.to_string())?;
            exchange(stream, &req, &mut answer, left)?;
        }
    }
    Ok(answer)
}

/// Writes `req`, then reads into `answer` until the server closes, [`MAX_ANSWER`] is read or
/// the time is up.
fn exchange(
    mut s: impl Read + Write,
    req: &str,
    answer: &mut Vec<u8>,
    left: impl Fn() -> Result<Duration, String>,
) -> Result<(), String> {
    s.write_all(req.as_bytes()).map_err(|e| e.to_string())?;
    let mut buf = [0u8; 16 * 1024];
    while answer.len() < MAX_ANSWER {
        left()?;
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => answer.extend_from_slice(&buf[..n.min(MAX_ANSWER - answer.len())]),
            Err(e) if answer.is_empty() => return Err(e.to_string()),
            Err(_) => break,
        }
    }
    Ok(())
}

/// What an answer to `GET /v1/models` says: its `Server` header and, from a 200 with an
/// OpenAI model list (`{"data": [{"id": ..., "owned_by": ...}]}`), the models (the first
/// [`MAX_BACKEND_MODELS`]); otherwise why they are unknown.
pub fn read_models(answer: &[u8]) -> LlmBackend {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut resp = httparse::Response::new(&mut headers);
    let body_at = match resp.parse(answer) {
        Ok(httparse::Status::Complete(n)) => n,
        _ => {
            return LlmBackend {
                unknown: Some("GET /v1/models: the answer was not HTTP".into()),
                ..Default::default()
            }
        }
    };
    let server = resp
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("server"))
        .map(|h| String::from_utf8_lossy(&h.value[..h.value.len().min(200)]).into_owned());
    let status = resp.code.unwrap_or(0);
    let chunked = resp.headers.iter().any(|h| {
        h.name.eq_ignore_ascii_case("transfer-encoding")
            && String::from_utf8_lossy(h.value)
                .to_ascii_lowercase()
                .contains("chunked")
    });
    let unknown = |why: String| LlmBackend {
        server: server.clone(),
        unknown: Some(format!("GET /v1/models: {why}")),
        ..Default::default()
    };
    if status != 200 {
        return unknown(format!("HTTP {status}"));
    }
    let raw = &answer[body_at..];
    let body = if chunked { dechunk(raw) } else { raw.to_vec() };
    let value: serde_json::Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(_) => return unknown("the answer was not JSON".into()),
    };
    let Some(list) = value.get("data").and_then(|d| d.as_array()) else {
        return unknown("the answer had no \"data\" list of models".into());
    };
    let models: Vec<BackendModel> = list
        .iter()
        .filter_map(|m| {
            let text = |k: &str| {
                m.get(k)
                    .and_then(|v| v.as_str())
                    .map(|s| s.chars().take(200).collect::<String>())
            };
            Some(BackendModel {
                id: text("id")?,
                owned_by: text("owned_by"),
            })
        })
        .take(MAX_BACKEND_MODELS)
        .collect();
    if models.is_empty() {
        return unknown("the server listed no models".into());
    }
    LlmBackend {
        models,
        server,
        unknown: None,
    }
}

/// A chunked body's data (what of it arrived; chunk extensions and trailers skipped).
fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(line_end) = raw.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size = std::str::from_utf8(&raw[..line_end])
            .ok()
            .and_then(|l| usize::from_str_radix(l.split(';').next()?.trim(), 16).ok());
        let Some(size) = size.filter(|n| *n > 0) else {
            return out;
        };
        let data = &raw[line_end + 2..];
        let take = size.min(data.len());
        out.extend_from_slice(&data[..take]);
        raw = data.get(size + 2..).unwrap_or(&[]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_list_names_its_models_owner_and_server() {
        let answer = b"HTTP/1.1 200 OK\r\nServer: uvicorn\r\nContent-Type: application/json\r\n\r\n{\"object\":\"list\",\"data\":[{\"id\":\"meta-llama/Llama-3.1-8B\",\"object\":\"model\",\"owned_by\":\"vllm\",\"permission\":[{}]}]}";
        let b = read_models(answer);
        assert_eq!(b.describe(), "vllm (models: meta-llama/Llama-3.1-8B)");
        assert_eq!(b.server.as_deref(), Some("uvicorn"));
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n9\r\n{\"data\":[\r\n19\r\n{\"id\":\"m\",\"owned_by\":\"x\"}\r\n2\r\n]}\r\n0\r\n\r\n";
        let b = read_models(chunked);
        assert_eq!(
            (b.describe(), b.server),
            ("x (models: m)".to_string(), None)
        );
    }

    #[test]
    fn what_names_no_models_says_why() {
        let why = |a: &[u8]| read_models(a).unknown.unwrap();
        assert_eq!(
            why(b"HTTP/1.1 404 Not Found\r\nServer: candor\r\nContent-Length: 0\r\n\r\n"),
            "GET /v1/models: HTTP 404"
        );
        assert_eq!(
            read_models(b"HTTP/1.1 404 Not Found\r\nServer: candor\r\n\r\n")
                .server
                .as_deref(),
            Some("candor")
        );
        assert!(why(b"SSH-2.0-OpenSSH").contains("not HTTP"));
        assert!(why(b"HTTP/1.1 200 OK\r\n\r\n<html>").contains("not JSON"));
        assert!(why(b"HTTP/1.1 200 OK\r\n\r\n{\"models\":[]}").contains("no \"data\""));
        assert!(why(b"HTTP/1.1 200 OK\r\n\r\n{\"data\":[1,{\"x\":2}]}").contains("no models"));
        let many = format!(
            "HTTP/1.1 200 OK\r\n\r\n{{\"data\":[{}]}}",
            vec!["{\"id\":\"m\"}"; 100].join(",")
        );
        assert_eq!(
            read_models(many.as_bytes()).models.len(),
            MAX_BACKEND_MODELS
        );
    }
}
