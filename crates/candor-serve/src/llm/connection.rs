//! One connection's requests in turn: read, refused when malformed or too slow, answered on
//! its endpoint with its faults, until the client or the server ends it.

use super::answer::{respond_plain, Answer, Endpoint};
use super::config::{LlmConfig, LlmFaultKind};
use super::prefix::{BlockHashes, PrefixCache};
use super::request::*;
use super::state::LlmState;
use super::timing::{cached_tokens, emission_times, prefill_end, prefill_ns, prompt_tokens};
use candor_core::now_ns;
use std::io::{self, BufReader, Read};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::Ordering;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// How long a connection that is closed after an error answer goes on reading what the client
/// still sends: closing with unread input makes the kernel reset the connection, which can
/// destroy the answer before the client has read it.
pub(super) const CLOSE_DRAIN_NS: u64 = 1_000_000_000;

/// Answers an error and closes: the answer first, then what the client still sends is read
/// for a while (see [`CLOSE_DRAIN_NS`]).
pub(super) fn refuse(
    out: &mut TcpStream,
    reader: &mut BufReader<Timed>,
    started_ns: u64,
    config: &LlmConfig,
    status: u16,
    body: &str,
) -> io::Result<()> {
    respond_plain(out, started_ns, config, status, body, false)?;
    let _ = out.shutdown(Shutdown::Write);
    reader
        .get_mut()
        .until(now_ns().saturating_add(CLOSE_DRAIN_NS));
    let mut sink = [0u8; 4096];
    while matches!(reader.read(&mut sink), Ok(n) if n > 0) {}
    Ok(())
}

pub(super) const MALFORMED: &str = "{\"error\":{\"message\":\"malformed request: candor serve --llm reads HTTP/1.1 with a head of at most 64 KiB and a Content-Length body of at most 16 MiB (no chunked bodies)\",\"type\":\"invalid_request_error\",\"code\":400}}";
pub(super) const TOO_SLOW: &str = "{\"error\":{\"message\":\"the request did not arrive within the server's timeout\",\"type\":\"invalid_request_error\",\"code\":408}}";

pub(super) fn serve_connection(
    stream: TcpStream,
    config: &LlmConfig,
    shared: &LlmState,
    started_ns: u64,
) -> io::Result<()> {
    let mut out = stream.try_clone()?;
    // A client that stops reading blocks a write: the idle timeout ends that too.
    out.set_write_timeout(Some(Duration::from_nanos(
        config.idle_timeout_ns.max(1_000),
    )))?;
    let mut reader = BufReader::new(Timed {
        stream,
        deadline_ns: now_ns().saturating_add(config.idle_timeout_ns),
        per_read_ns: None,
    });
    let mut times = Vec::new();
    let mut blocks = shared
        .cache
        .as_ref()
        .map(|_| BlockHashes::new(config.prefix_cache_blocks));
    loop {
        if shared.stop.load(Ordering::SeqCst) {
            return Ok(());
        }
        let head = match read_head(&mut reader, config) {
            Ok(Some(h)) => h,
            Ok(None) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                return refuse(&mut out, &mut reader, started_ns, config, 400, MALFORMED);
            }
            Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                return refuse(&mut out, &mut reader, started_ns, config, 408, TOO_SLOW);
            }
            Err(e) => return Err(e),
        };
        let keep = head.keep_alive;
        let path = head.path.split('?').next().unwrap_or("");
        let endpoint = match path {
            "/v1/chat/completions" => Some(Endpoint::Chat),
            "/v1/completions" => Some(Endpoint::Completions),
            "/v1/embeddings" => Some(Endpoint::Embeddings),
            _ => None,
        };
        if let Some(b) = blocks.as_mut() {
            b.clear();
        }
        let parse = endpoint.is_some();
        let body = match read_body(&mut reader, config, head.length, parse, blocks.as_mut()) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                return refuse(&mut out, &mut reader, started_ns, config, 408, TOO_SLOW);
            }
            Err(e) => return Err(e),
        };
        let read_ns = now_ns();
        let (endpoint, request) = match (endpoint, body) {
            (Some(endpoint), Body::Parsed(request)) => (endpoint, request),
            (None, _) if path == "/v1/models" => {
                let body = super::embed::models_body(config);
                respond_plain(&mut out, started_ns, config, 200, &body, keep)?;
                if keep {
                    continue;
                }
                return Ok(());
            }
            (None, _) => {
                let body = "{\"error\":{\"message\":\"unknown endpoint: use /v1/chat/completions, /v1/completions, /v1/embeddings or /v1/models\",\"type\":\"invalid_request_error\",\"code\":404}}";
                respond_plain(&mut out, started_ns, config, 404, body, keep)?;
                if keep {
                    continue;
                }
                return Ok(());
            }
            (Some(_), _) => {
                let body = "{\"error\":{\"message\":\"the body is not JSON\",\"type\":\"invalid_request_error\",\"code\":400}}";
                respond_plain(&mut out, started_ns, config, 400, body, keep)?;
                if keep {
                    continue;
                }
                return Ok(());
            }
        };
        let fault = config.fault.and_then(|f| {
            let n = shared.fault_count.fetch_add(1, Ordering::Relaxed) + 1;
            (n % f.every == 0).then_some(f.kind)
        });
        if endpoint == Endpoint::Embeddings {
            if !embeddings(
                &mut out, config, shared, started_ns, read_ns, &request, fault, keep,
            )? {
                return Ok(());
            }
            continue;
        }
        let id = shared.id.fetch_add(1, Ordering::Relaxed);
        let tokens = output_tokens(config, request.max_tokens);
        let prompt = prompt_tokens(request.prompt_words);
        let cached = match (&shared.cache, &blocks) {
            (Some(cache), Some(b)) => {
                let hit = lock(cache).hit(b.hashes(), read_ns);
                Some(cached_tokens(request.prompt_words, hit))
            }
            _ => None,
        };
        let prefill = prefill_ns(config, prompt, cached.unwrap_or(0));
        emission_times(config, started_ns, read_ns, prefill, tokens, &mut times);
        // The prompt is computed when its first token leaves (a 429 computes nothing): from then
        // its blocks serve any request, one that overlaps this answer included, as vLLM's do.
        if let (Some(cache), Some(b)) = (&shared.cache, &blocks) {
            if fault != Some(LlmFaultKind::RateLimit) {
                lock(cache).insert(b.hashes(), prefill_end(&times, read_ns));
            }
        }
        let answer = Answer {
            endpoint,
            id,
            model: &config.model,
            prompt_tokens: prompt,
            cached_tokens: cached,
            tokens,
            include_usage: request.include_usage && !config.no_usage,
        };
        let open = match (fault, request.stream) {
            (Some(LlmFaultKind::RateLimit), _) => {
                let body = "{\"error\":{\"message\":\"rate limited by candor serve --llm\",\"type\":\"rate_limit_error\",\"code\":429}}";
                respond_plain(&mut out, started_ns, config, 429, body, keep)?;
                keep
            }
            (_, true) => answer.stream(&mut out, &times, fault, keep)?,
            (_, false) => answer.whole(&mut out, &times, fault, keep)?,
        };
        if fault.is_none() {
            shared.served.fetch_add(1, Ordering::Relaxed);
        }
        if !open {
            return Ok(());
        }
    }
}

/// Answers an embeddings request: refused when it has no inputs or more than
/// [`MAX_EMBED_INPUTS`](super::config::MAX_EMBED_INPUTS); a 429 for the rate-limit fault, a
/// 500 for the mid-stream ones (an embedding has no middle), else its vectors at their instant.
/// Whether the connection stays open.
#[allow(clippy::too_many_arguments)]
fn embeddings(
    out: &mut TcpStream,
    config: &LlmConfig,
    shared: &LlmState,
    started_ns: u64,
    read_ns: u64,
    request: &super::body::RequestBody,
    fault: Option<LlmFaultKind>,
    keep: bool,
) -> io::Result<bool> {
    use super::config::MAX_EMBED_INPUTS;
    use super::embed::{answer_at, embed_time};
    if request.inputs == 0 || request.inputs > MAX_EMBED_INPUTS {
        let body = "{\"error\":{\"message\":\"input must be a string or an array of 1 to 2048 strings or token arrays\",\"type\":\"invalid_request_error\",\"code\":400}}";
        respond_plain(out, started_ns, config, 400, body, keep)?;
        return Ok(keep);
    }
    let at = embed_time(config, started_ns, read_ns, request.input_tokens);
    let open = match fault {
        Some(LlmFaultKind::RateLimit) => {
            let body = "{\"error\":{\"message\":\"rate limited by candor serve --llm\",\"type\":\"rate_limit_error\",\"code\":429}}";
            respond_plain(out, started_ns, config, 429, body, keep)?;
            keep
        }
        Some(LlmFaultKind::ErrorMidStream | LlmFaultKind::CloseMidStream) => {
            candor_core::exact_sleep::sleep_until_absolute(at);
            let body = "{\"error\":{\"message\":\"embedding failed (candor serve --llm fault)\",\"type\":\"server_error\",\"code\":500}}";
            respond_plain(out, started_ns, config, 500, body, keep)?;
            keep
        }
        _ => answer_at(out, config, at, request.inputs, request.input_tokens, keep)?,
    };
    if fault.is_none() {
        shared.served.fetch_add(1, Ordering::Relaxed);
    }
    Ok(open)
}

/// The cache, even if a thread panicked holding it (its maps stay consistent: no step of
/// `PrefixCache` can panic between its two updates).
fn lock(cache: &Mutex<PrefixCache>) -> MutexGuard<'_, PrefixCache> {
    cache.lock().unwrap_or_else(|e| e.into_inner())
}

/// The request's output length: the server's, or a smaller `max_tokens`.
pub(super) fn output_tokens(config: &LlmConfig, asked: Option<u64>) -> u32 {
    match asked {
        Some(n) if n >= 1 => config.output_tokens.min(n.min(u64::from(u32::MAX)) as u32),
        _ => config.output_tokens,
    }
}
