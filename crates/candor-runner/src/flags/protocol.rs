//! The flags of the protocols beneath the requests: HTTP/1.1 pipelining, HTTP/2 and its streams,
//! WebSocket matching, TLS, raw TCP's payload and framing, and the statuses HTTP accepts.

use super::args::LoadArgs;
use super::error::{read, FlagError, Result};
use candor_core::bounded::MAX_BODY_FILE_BYTES;
use candor_load::{LoadConfig, ProtocolFlags};

/// `--pipeline`, `--h2`, `--h3`, `--streams`, `--ws-match`, `--ws-binary`, `--insecure` and `--ca`.
pub(super) fn connection_flags(
    a: &LoadArgs,
    c: &mut LoadConfig,
    protocol: &mut ProtocolFlags,
) -> Result<()> {
    protocol.h2 = a.h2;
    protocol.h3 = a.h3;
    protocol.streams = a.streams;
    protocol.pipeline = a.pipeline;
    protocol.check_status = a.check_status.is_some();
    if let Some(m) = &a.ws_match {
        protocol.ws_match = m.parse().map_err(FlagError::Invalid)?;
    }
    protocol.ws_binary = a.ws_binary;
    c.tls = candor_load::TlsOptions {
        insecure: a.insecure,
        ca_file: a.ca.clone(),
    };
    Ok(())
}

/// Raw TCP: `--payload`/`--payload-file` and how a response ends (`--expect-bytes`,
/// `--expect-delimiter`, `--length-prefix`).
pub(super) fn tcp_flags(a: &LoadArgs, protocol: &mut ProtocolFlags) -> Result<()> {
    protocol.payload = match (&a.payload, &a.payload_file) {
        (Some(p), _) => candor_load::protocol::tcp::parse_payload(p)
            .map_err(|e| FlagError::Invalid(format!("--payload: {e}")))?,
        (None, Some(path)) => read(path, "--payload-file", MAX_BODY_FILE_BYTES, None)?,
        (None, None) => Vec::new(),
    };
    protocol.framing = if let Some(n) = a.expect_bytes {
        Some(candor_load::Framing::ExpectBytes(n))
    } else if let Some(d) = &a.expect_delimiter {
        Some(candor_load::Framing::Delimiter(
            candor_load::protocol::tcp::unescape(d),
        ))
    } else if let Some(kind) = &a.length_prefix {
        let width = match kind.as_str() {
            "u8" => 1,
            "u16be" | "u16" => 2,
            "u32be" | "u32" => 4,
            "u64be" | "u64" => 8,
            other => {
                return Err(FlagError::Invalid(format!(
                    "invalid --length-prefix '{other}': expected u8, u16be, u32be or u64be"
                )))
            }
        };
        Some(candor_load::Framing::LengthPrefix { width })
    } else {
        None
    };
    Ok(())
}

/// `--check-status` of an HTTP run (a gRPC run's statuses are `grpc_flags'`); where responses
/// have no status, the registry refuses the flag (`ProtocolFlags::check_status`).
pub(super) fn check_status(a: &LoadArgs, c: &mut LoadConfig) -> Result<()> {
    let Some(list) = a.check_status.as_ref().filter(|_| c.grpc.is_none()) else {
        return Ok(());
    };
    c.accept_status = candor_load::StatusSet::parse(list)
        .map_err(|e| FlagError::Invalid(format!("invalid --check-status '{list}': {e}")))?;
    Ok(())
}
