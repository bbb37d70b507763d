//! HTTP/2 framing for the lean client (RFC 9113): frame headers, the frames a client writes
//! (preface, SETTINGS, WINDOW_UPDATE, PING and SETTINGS acks, RST_STREAM, GOAWAY, HEADERS with
//! CONTINUATION, DATA) and the HEADERS block of a request as HPACK literals without indexing.
//!
//! Requests are encoded by hand, not through an HPACK crate: a literal without indexing needs no
//! encoder state, so a request's block is written straight into a buffer prepared before the
//! run (once for a fixed request, per request for a templated one) with no allocation, while
//! the maintained encoders keep a dynamic table and allocate per header. Responses are decoded
//! by `hpack.rs`.

/// The client connection preface.
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
pub const HEADER_LEN: usize = 9;
/// The largest frame payload a peer may send before SETTINGS_MAX_FRAME_SIZE says otherwise, and
/// the largest this client accepts (it never raises it).
pub const DEFAULT_MAX_FRAME: usize = 16_384;
/// A stream's and the connection's window before SETTINGS and WINDOW_UPDATEs change them.
pub const DEFAULT_WINDOW: i64 = 65_535;

pub const DATA: u8 = 0x0;
pub const HEADERS: u8 = 0x1;
pub const RST_STREAM: u8 = 0x3;
pub const SETTINGS: u8 = 0x4;
pub const PUSH_PROMISE: u8 = 0x5;
pub const PING: u8 = 0x6;
pub const GOAWAY: u8 = 0x7;
pub const WINDOW_UPDATE: u8 = 0x8;
pub const CONTINUATION: u8 = 0x9;

pub const END_STREAM: u8 = 0x1;
pub const ACK: u8 = 0x1;
pub const END_HEADERS: u8 = 0x4;
pub const PADDED: u8 = 0x8;
pub const PRIORITY_FLAG: u8 = 0x20;

pub const SETTINGS_ENABLE_PUSH: u16 = 0x2;
pub const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 0x3;
pub const SETTINGS_INITIAL_WINDOW_SIZE: u16 = 0x4;
pub const SETTINGS_MAX_FRAME_SIZE: u16 = 0x5;

/// RST_STREAM and GOAWAY error codes this client sends (RFC 9113 §7).
pub const NO_ERROR: u32 = 0x0;
pub const PROTOCOL_ERROR: u32 = 0x1;
pub const FLOW_CONTROL_ERROR: u32 = 0x3;
pub const FRAME_SIZE_ERROR: u32 = 0x6;
pub const COMPRESSION_ERROR: u32 = 0x9;
pub const CANCEL: u32 = 0x8;
pub const ENHANCE_YOUR_CALM: u32 = 0xb;

/// A frame's 9-byte header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameHeader {
    pub len: usize,
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
}

impl FrameHeader {
    /// Reads the header at the start of `b` (at least [`HEADER_LEN`] bytes).
    #[inline]
    pub fn parse(b: &[u8]) -> FrameHeader {
        FrameHeader {
            len: (b[0] as usize) << 16 | (b[1] as usize) << 8 | b[2] as usize,
            kind: b[3],
            flags: b[4],
            stream: u32::from_be_bytes([b[5], b[6], b[7], b[8]]) & 0x7fff_ffff,
        }
    }
}

/// Appends a frame header.
#[inline]
pub fn put_header(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    out.extend_from_slice(&[(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags]);
    out.extend_from_slice(&(stream & 0x7fff_ffff).to_be_bytes());
}

/// Appends the client preface, this client's SETTINGS (no push, `stream_window` per stream)
/// and a WINDOW_UPDATE raising the connection's receive window to `connection_window`.
pub fn put_preface(out: &mut Vec<u8>, stream_window: u32, connection_window: u32) {
    out.extend_from_slice(PREFACE);
    put_header(out, 12, SETTINGS, 0, 0);
    for (id, value) in [
        (SETTINGS_ENABLE_PUSH, 0u32),
        (SETTINGS_INITIAL_WINDOW_SIZE, stream_window),
    ] {
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&value.to_be_bytes());
    }
    put_window_update(out, 0, connection_window - DEFAULT_WINDOW as u32);
}

#[inline]
pub fn put_window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    put_header(out, 4, WINDOW_UPDATE, 0, stream);
    out.extend_from_slice(&(increment & 0x7fff_ffff).to_be_bytes());
}

#[inline]
pub fn put_rst_stream(out: &mut Vec<u8>, stream: u32, code: u32) {
    put_header(out, 4, RST_STREAM, 0, stream);
    out.extend_from_slice(&code.to_be_bytes());
}

pub fn put_goaway(out: &mut Vec<u8>, code: u32) {
    put_header(out, 8, GOAWAY, 0, 0);
    out.extend_from_slice(&0u32.to_be_bytes());
    out.extend_from_slice(&code.to_be_bytes());
}

/// Appends a header block as one HEADERS frame and as many CONTINUATIONs as `max_frame` needs.
pub fn put_headers(
    out: &mut Vec<u8>,
    stream: u32,
    block: &[u8],
    end_stream: bool,
    max_frame: usize,
) {
    let mut chunks = block.chunks(max_frame.max(1));
    let first = chunks.next().unwrap_or(&[]);
    let last = first.len() == block.len();
    let flags = if end_stream { END_STREAM } else { 0 } | if last { END_HEADERS } else { 0 };
    put_header(out, first.len(), HEADERS, flags, stream);
    out.extend_from_slice(first);
    let mut sent = first.len();
    for chunk in chunks {
        sent += chunk.len();
        let flags = if sent == block.len() { END_HEADERS } else { 0 };
        put_header(out, chunk.len(), CONTINUATION, flags, stream);
        out.extend_from_slice(chunk);
    }
}

/// HPACK integer with an `n`-bit prefix (RFC 7541 §5.1), `first` holding the pattern bits.
#[inline]
fn put_int(out: &mut Vec<u8>, first: u8, n: u32, mut value: usize) {
    let max = (1usize << n) - 1;
    if value < max {
        out.push(first | value as u8);
        return;
    }
    out.push(first | max as u8);
    value -= max;
    while value >= 128 {
        out.push((value % 128 + 128) as u8);
        value /= 128;
    }
    out.push(value as u8);
}

/// HPACK string literal, not Huffman-coded; `lower` lowercases it (header names).
#[inline]
fn put_str(out: &mut Vec<u8>, s: &[u8], lower: bool) {
    put_int(out, 0, 7, s.len());
    if lower {
        out.extend(s.iter().map(u8::to_ascii_lowercase));
    } else {
        out.extend_from_slice(s);
    }
}

/// Literal without indexing, the name indexed in the static table (`index`).
#[inline]
fn put_indexed_name(out: &mut Vec<u8>, index: usize, value: &[u8]) {
    put_int(out, 0x00, 4, index);
    put_str(out, value, false);
}

/// Headers that HTTP/2 forbids (connection-specific, RFC 9113 §8.2.2).
fn connection_specific(name: &[u8], value: &[u8]) -> bool {
    let is = |n: &str| name.eq_ignore_ascii_case(n.as_bytes());
    is("connection")
        || is("keep-alive")
        || is("proxy-connection")
        || is("transfer-encoding")
        || is("upgrade")
        || (is("te") && !value.trim_ascii().eq_ignore_ascii_case(b"trailers"))
}

/// Why an HTTP/1.1 request cannot be sent over HTTP/2.
#[derive(Debug, PartialEq, Eq)]
pub struct NotARequest;

/// Encodes the HTTP/1.1 request `h1` (as the request builder and the template fill write it) as
/// an HTTP/2 HEADERS block into `block` (cleared first): the method, `scheme`, the path, `Host`
/// as `:authority`, the other headers lowercased, connection-specific ones dropped. Returns where
/// the body starts in `h1`. Allocates nothing once `block` has grown to the largest request.
pub fn encode_request(h1: &[u8], https: bool, block: &mut Vec<u8>) -> Result<usize, NotARequest> {
    encode_request_as(h1, https, block, false)
}

/// [`encode_request`] for a body that is sent re-encoded (a gRPC message filled as JSON, then
/// encoded as protobuf): the request's `Content-Length`, the JSON's, is left out.
pub fn encode_request_reencoded(
    h1: &[u8],
    https: bool,
    block: &mut Vec<u8>,
) -> Result<usize, NotARequest> {
    encode_request_as(h1, https, block, true)
}

fn encode_request_as(
    h1: &[u8],
    https: bool,
    block: &mut Vec<u8>,
    drop_length: bool,
) -> Result<usize, NotARequest> {
    let mut headers = [httparse::EMPTY_HEADER; 128];
    let mut req = httparse::Request::new(&mut headers);
    let body_at = match req.parse(h1) {
        Ok(httparse::Status::Complete(n)) => n,
        _ => return Err(NotARequest),
    };
    block.clear();
    // A dynamic table size update to 0 opens every block: this encoder never indexes, and it
    // keeps any server that lowered SETTINGS_HEADER_TABLE_SIZE in step (RFC 7541 §4.2, §6.3).
    block.push(0x20);
    match req.method.ok_or(NotARequest)? {
        "GET" => block.push(0x80 | 2),
        "POST" => block.push(0x80 | 3),
        m => put_indexed_name(block, 2, m.as_bytes()),
    }
    block.push(0x80 | if https { 7 } else { 6 });
    match req.path.ok_or(NotARequest)? {
        "/" => block.push(0x80 | 4),
        p => put_indexed_name(block, 4, p.as_bytes()),
    }
    for h in req.headers.iter() {
        if h.name.eq_ignore_ascii_case("host") {
            put_indexed_name(block, 1, h.value.trim_ascii());
        }
    }
    for h in req.headers.iter() {
        let name = h.name.as_bytes();
        if h.name.eq_ignore_ascii_case("host")
            || connection_specific(name, h.value)
            || (drop_length && h.name.eq_ignore_ascii_case("content-length"))
        {
            continue;
        }
        block.push(0x00);
        put_str(block, name, true);
        put_str(block, h.value.trim_ascii(), false);
    }
    Ok(body_at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use candor_workload::check::{BodyMatch, BodyNeedle};

    fn decode(block: &[u8]) -> Vec<(String, String)> {
        let mut out = Vec::new();
        loona_hpack::Decoder::new()
            .decode_with_cb(block, |n, v| {
                out.push((
                    String::from_utf8_lossy(&n).into_owned(),
                    String::from_utf8_lossy(&v).into_owned(),
                ))
            })
            .expect("valid HPACK");
        out
    }

    #[test]
    fn requests_encode_as_literals_an_hpack_decoder_reads() {
        let h1 = b"PUT /a?b=1 HTTP/1.1\r\nHost: example.com:8080\r\nX-Long: v\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nhi";
        let mut block = Vec::new();
        let body_at = encode_request(h1, true, &mut block).unwrap();
        assert_eq!(&h1[body_at..], b"hi");
        let pairs = decode(&block);
        let pairs: Vec<(&str, &str)> = pairs
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            pairs,
            [
                (":method", "PUT"),
                (":scheme", "https"),
                (":path", "/a?b=1"),
                (":authority", "example.com:8080"),
                ("x-long", "v"),
                ("content-length", "2"),
            ]
        );
        encode_request(b"GET / HTTP/1.1\r\nHost: h\r\n\r\n", false, &mut block).unwrap();
        assert_eq!(
            block[..4],
            [0x20, 0x82, 0x86, 0x84],
            "a table size update to 0, then all three from the static table"
        );
        assert_eq!(
            encode_request(b"GET / HTTP/1.1\r\n", false, &mut block),
            Err(NotARequest)
        );
        // A long value takes a multi-byte length.
        let long = format!(
            "GET / HTTP/1.1\r\nHost: h\r\nX-A: {}\r\n\r\n",
            "v".repeat(300)
        );
        encode_request(long.as_bytes(), false, &mut block).unwrap();
        assert_eq!(decode(&block)[4].1.len(), 300);
        // The request builder's default User-Agent goes out as a `user-agent` field, and a
        // consistent user Content-Length as itself.
        let built = candor_wire::request_form::build_request(
            "POST",
            "h",
            "/",
            &["Content-Length: 2".into()],
            b"hi",
        );
        let body_at = encode_request(&built, false, &mut block).unwrap();
        assert_eq!(&built[body_at..], b"hi");
        let pairs = decode(&block);
        let ua = format!("candor/{}", env!("CARGO_PKG_VERSION"));
        assert_eq!(
            pairs[4..],
            [
                ("user-agent".to_string(), ua),
                ("content-length".to_string(), "2".to_string())
            ]
        );
    }

    /// A HEADERS block longer than the peer's frame size is split into HEADERS and CONTINUATION
    /// frames; joined again, the fragments are the block.
    #[test]
    fn a_headers_block_is_split_by_continuation_and_rejoins() {
        let block: Vec<u8> = (0..40u8).collect();
        let mut out = Vec::new();
        put_headers(&mut out, 3, &block, true, 16);
        let mut frames = Vec::new();
        let mut at = 0;
        while at < out.len() {
            let h = FrameHeader::parse(&out[at..]);
            frames.push((h, out[at + HEADER_LEN..at + HEADER_LEN + h.len].to_vec()));
            at += HEADER_LEN + h.len;
        }
        let kinds: Vec<(u8, u8, usize)> = frames
            .iter()
            .map(|(h, _)| (h.kind, h.flags, h.len))
            .collect();
        assert_eq!(
            kinds,
            [
                (HEADERS, END_STREAM, 16),
                (CONTINUATION, 0, 16),
                (CONTINUATION, END_HEADERS, 8)
            ]
        );
        assert!(frames.iter().all(|(h, _)| h.stream == 3));
        let joined: Vec<u8> = frames.into_iter().flat_map(|(_, p)| p).collect();
        assert_eq!(joined, block);
        out.clear();
        put_headers(&mut out, 5, &block, false, 16_384);
        assert_eq!(FrameHeader::parse(&out).flags, END_HEADERS);
    }

    /// A body check sees the DATA frames' payloads one by one, as the client reads them.
    #[test]
    fn a_body_check_matches_across_data_frames() {
        let needle = BodyNeedle::new(b"\"ok\":true").unwrap();
        let mut frames = Vec::new();
        for part in [&b"{\"id\":1,\"o"[..], b"k\":tr", b"ue}"] {
            put_header(&mut frames, part.len(), DATA, 0, 1);
            frames.extend_from_slice(part);
        }
        let mut m = BodyMatch::default();
        let mut at = 0;
        while at < frames.len() {
            let h = FrameHeader::parse(&frames[at..]);
            m.feed(&needle, &frames[at + HEADER_LEN..at + HEADER_LEN + h.len]);
            at += HEADER_LEN + h.len;
        }
        assert!(m.found());
    }

    #[test]
    fn integers_take_their_prefix_then_continuation_bytes() {
        let mut out = Vec::new();
        put_int(&mut out, 0, 5, 1337);
        assert_eq!(out, [31, 154, 10], "RFC 7541 C.1.2");
        out.clear();
        put_int(&mut out, 0x80, 7, 10);
        assert_eq!(out, [0x8a]);
    }
}
