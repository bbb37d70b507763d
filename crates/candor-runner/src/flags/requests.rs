//! What each request sends, from the flags: the method, headers and body, a `--requests` file of
//! request lines (or WebSocket messages), and the workload around them (`--data` rows, the
//! response checks, the order requests are chosen in, the seed).

use super::args::{DataOrderArg, LoadArgs, RequestOrderArg};
use super::error::{read, FlagError, Result};
use candor_core::bounded::{
    strip_bom, MAX_BODY_FILE_BYTES, MAX_LINE_BYTES, MAX_REQUESTS_FILE_BYTES,
};
use candor_load::workload::check::{BodyNeedle, HeaderCheck};
use candor_load::workload::data::{DataOrder, DataTable};
use candor_load::LoadConfig;

/// `-X`, `-H` and `--body`/`--body-file`: the one request sent when there is no request set.
pub(super) fn message(a: &LoadArgs, c: &mut LoadConfig) -> Result<()> {
    c.method = a.method.to_ascii_uppercase();
    c.headers = a.headers.clone();
    c.body = match (&a.body, &a.body_file) {
        (Some(b), _) => b.clone().into_bytes(),
        (None, Some(path)) => read(path, "--body-file", MAX_BODY_FILE_BYTES, None)?,
        (None, None) => Vec::new(),
    };
    Ok(())
}

/// `--requests`: the request set, one request (or WebSocket message) per line, the run's
/// headers added to each and the URLs of other targets resolved.
pub(super) fn request_file(a: &LoadArgs, c: &mut LoadConfig) -> Result<()> {
    let Some(path) = &a.requests else {
        return Ok(());
    };
    let bytes = read(
        path,
        "--requests",
        MAX_REQUESTS_FILE_BYTES,
        Some(MAX_LINE_BYTES),
    )?;
    let text = std::str::from_utf8(strip_bom(&bytes)).map_err(|e| {
        FlagError::Invalid(format!(
            "--requests {}: not UTF-8 text (invalid byte at offset {})",
            path.display(),
            e.valid_up_to()
        ))
    })?;
    let lines = if c.target.scheme.is_websocket() {
        candor_load::requests::parse_message_lines(text)
    } else {
        candor_load::requests::parse_request_lines(text)
    }
    .map_err(|e| FlagError::Invalid(format!("{}: {e}", path.display())))?;
    c.requests = lines.iter().map(|l| l.spec.clone()).collect();
    c.workload.lines = lines;
    c.apply_headers_to_request_set();
    c.resolve_request_targets()?;
    Ok(())
}

/// `--seed`, `--data` and `--data-order`, `--check-body`, `--check-header` and
/// `--request-order`.
pub(super) fn workload_flags(a: &LoadArgs, c: &mut LoadConfig) -> Result<()> {
    c.workload.seed = a.seed;
    if let Some(path) = &a.data {
        c.workload.data = Some(std::sync::Arc::new(DataTable::load(path)?));
    }
    c.workload.data_order = match a.data_order {
        DataOrderArg::Sequential => DataOrder::Sequential,
        DataOrderArg::Random => DataOrder::Random,
    };
    if let Some(text) = &a.check_body {
        c.workload.checks.body = Some(BodyNeedle::new(text.as_bytes())?);
    }
    for h in &a.check_header {
        c.workload.checks.headers.push(HeaderCheck::parse(h)?);
    }
    c.request_order = match a.request_order {
        RequestOrderArg::RoundRobin => candor_load::RequestOrder::RoundRobin,
        RequestOrderArg::Random => candor_load::RequestOrder::Random { seed: a.seed },
    };
    Ok(())
}
