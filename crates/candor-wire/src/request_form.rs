//! The HTTP/1.1 form of a request, which every request starts from: HTTP/1.1 sends it as it is,
//! HTTP/2 and gRPC read their HEADERS from it, templates and replay fill it.

/// Whether one of the "Name: value" lines is a `name` header (case-insensitive).
pub fn has_header(headers: &[String], name: &str) -> bool {
    headers.iter().any(|h| {
        h.split(':')
            .next()
            .is_some_and(|n| n.trim().eq_ignore_ascii_case(name))
    })
}

/// The `User-Agent` line of every HTTP request that has none of its own, so that a server's logs
/// name the client (HTTP/2 sends it as a `user-agent` field).
pub const USER_AGENT_LINE: &str = concat!("User-Agent: candor/", env!("CARGO_PKG_VERSION"), "\r\n");

/// Builds the exact bytes of the request sent on every exchange.
pub fn build_request(
    method: &str,
    host: &str,
    path: &str,
    headers: &[String],
    body: &[u8],
) -> Vec<u8> {
    let mut out = Vec::with_capacity(128 + body.len());
    let has = |name: &str| has_header(headers, name);
    out.extend_from_slice(format!("{method} {path} HTTP/1.1\r\n").as_bytes());
    if !has("host") {
        out.extend_from_slice(format!("Host: {host}\r\n").as_bytes());
    }
    if !has("user-agent") {
        out.extend_from_slice(USER_AGENT_LINE.as_bytes());
    }
    for h in headers {
        let (name, value) = h.split_once(':').unwrap_or((h, ""));
        out.extend_from_slice(format!("{}: {}\r\n", name.trim(), value.trim()).as_bytes());
    }
    if (!body.is_empty() || method == "POST" || method == "PUT") && !has("content-length") {
        out.extend_from_slice(format!("Content-Length: {}\r\n", body.len()).as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body);
    out
}
