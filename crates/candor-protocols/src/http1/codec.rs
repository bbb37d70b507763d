//! HTTP/1.1 on the wire: the request is built once before the run, responses are parsed
//! incrementally from a connection's buffer without allocating (`httparse` for the head, a small
//! state machine for the body framing: Content-Length, chunked, or until close).

use candor_engine::examples::ContentCheck;
use candor_engine::seam::observe::ResponseObserver;
use candor_engine::seam::progress::{ParseError, Progress};
use candor_wire::status::StatusSet;
use candor_workload::check::ResponseChecks;
use std::mem::MaybeUninit;
use std::sync::Arc;

#[derive(Debug, Clone, Copy, PartialEq)]
enum State {
    Head,
    Body { remaining: u64 },
    ChunkSize,
    ChunkData { remaining: u64 },
    ChunkDataEnd,
    Trailer,
    UntilClose,
}

/// Incremental parser of one response at a time.
#[derive(Debug, Clone)]
pub struct ResponseParser {
    state: State,
    status: u16,
    close: bool,
    /// HEAD responses carry no body whatever their headers say.
    head_request: bool,
    /// Who watches the responses: their checks and the excerpts of failing bodies.
    observer: ResponseObserver,
}

const MAX_HEADERS: usize = 64;

impl ResponseParser {
    pub fn new(head_request: bool) -> Self {
        ResponseParser {
            state: State::Head,
            status: 0,
            close: false,
            head_request,
            observer: ResponseObserver::default(),
        }
    }

    /// Keeps the first bytes of failing bodies (see [`ResponseObserver::keep_excerpts`]).
    pub fn keep_excerpts(&mut self, accept: Arc<[StatusSet]>) {
        self.observer.keep_excerpts(accept);
    }

    /// The first bytes of the last completed response's body, when kept.
    #[inline]
    pub fn excerpt(&self) -> Option<&[u8]> {
        self.observer.excerpt()
    }

    /// Checks responses against `table` (see [`ResponseObserver::set_checks`]).
    pub fn set_checks(&mut self, table: Arc<[ResponseChecks]>) {
        self.observer.set_checks(table);
    }

    /// The response about to be parsed answers request `request`: its checks apply.
    #[inline]
    pub fn select_checks(&mut self, request: usize) {
        self.observer.begin(request);
    }

    /// Whether the last completed response passed its checks (true without checks).
    #[inline]
    pub fn checks_passed(&self) -> bool {
        self.observer.failed_check().is_none()
    }

    /// The check the last completed response failed besides its status, if any.
    #[inline]
    pub fn failed_check(&self) -> Option<ContentCheck> {
        self.observer.failed_check()
    }

    /// The observer of this connection's responses.
    pub fn observer(&mut self) -> &mut ResponseObserver {
        &mut self.observer
    }

    /// Whether the response being parsed answers a HEAD request (no body).
    pub fn set_head_request(&mut self, head: bool) {
        self.head_request = head;
    }

    /// Prepares for the next response on the same connection.
    pub fn reset(&mut self) {
        self.state = State::Head;
        self.status = 0;
        self.close = false;
        self.observer.forget();
    }

    /// True while no byte of the current response has been consumed.
    pub fn at_start(&self) -> bool {
        self.state == State::Head
    }

    /// Consumes as much of `input` as belongs to the current response. `buffer_full` says that
    /// `input` fills the whole read buffer (an incomplete head then can never complete).
    pub fn feed(&mut self, input: &[u8], buffer_full: bool) -> Result<Progress, ParseError> {
        let mut pos = 0;
        loop {
            let rest = &input[pos..];
            match self.state {
                State::Head => {
                    // Left uninitialised: httparse fills only what the head holds, and zeroing
                    // 64 headers (2 KiB) for every response was most of this parser's time.
                    let mut headers =
                        [const { MaybeUninit::<httparse::Header>::uninit() }; MAX_HEADERS];
                    let mut resp = httparse::Response::new(&mut []);
                    match httparse::ParserConfig::default().parse_response_with_uninit_headers(
                        &mut resp,
                        rest,
                        &mut headers,
                    ) {
                        Ok(httparse::Status::Complete(n)) => {
                            pos += n;
                            let status = resp.code.unwrap_or(0);
                            if (100..200).contains(&status) && status != 101 {
                                // Interim response (100 Continue): the real one follows.
                                continue;
                            }
                            self.begin_response(status, &resp)?;
                        }
                        Ok(httparse::Status::Partial) => {
                            if buffer_full && pos == 0 {
                                return Err(ParseError::HeadTooLarge);
                            }
                            return Ok(Progress::NeedMore { consumed: pos });
                        }
                        Err(e) => return Err(ParseError::Head(head_error_text(e))),
                    }
                }
                State::Body { remaining } => {
                    let take = (rest.len() as u64).min(remaining);
                    self.observer.body(&rest[..take as usize]);
                    pos += take as usize;
                    let left = remaining - take;
                    if left == 0 {
                        return Ok(self.done(pos));
                    }
                    self.state = State::Body { remaining: left };
                    return Ok(Progress::NeedMore { consumed: pos });
                }
                State::ChunkSize => match httparse::parse_chunk_size(rest) {
                    Ok(httparse::Status::Complete((n, size))) => {
                        pos += n;
                        self.state = if size == 0 {
                            State::Trailer
                        } else {
                            State::ChunkData { remaining: size }
                        };
                    }
                    Ok(httparse::Status::Partial) => {
                        if rest.len() > 1024 {
                            return Err(ParseError::Chunk);
                        }
                        return Ok(Progress::NeedMore { consumed: pos });
                    }
                    Err(_) => return Err(ParseError::Chunk),
                },
                State::ChunkData { remaining } => {
                    let take = (rest.len() as u64).min(remaining);
                    self.observer.body(&rest[..take as usize]);
                    pos += take as usize;
                    if take == remaining {
                        self.observer.chunk_end();
                        self.state = State::ChunkDataEnd;
                    } else {
                        self.state = State::ChunkData {
                            remaining: remaining - take,
                        };
                        return Ok(Progress::NeedMore { consumed: pos });
                    }
                }
                State::ChunkDataEnd => {
                    if rest.len() < 2 {
                        return Ok(Progress::NeedMore { consumed: pos });
                    }
                    if &rest[..2] != b"\r\n" {
                        return Err(ParseError::Chunk);
                    }
                    pos += 2;
                    self.state = State::ChunkSize;
                }
                State::Trailer => {
                    // Trailer fields until an empty line; we only need to skip them.
                    match rest.windows(2).position(|w| w == b"\r\n") {
                        Some(0) => return Ok(self.done(pos + 2)),
                        Some(i) => pos += i + 2,
                        None => {
                            if rest.len() > 8192 {
                                return Err(ParseError::Chunk);
                            }
                            return Ok(Progress::NeedMore { consumed: pos });
                        }
                    }
                }
                State::UntilClose => {
                    self.observer.body(rest);
                    return Ok(Progress::NeedMore {
                        consumed: input.len(),
                    });
                }
            }
        }
    }

    /// The head of a final response was read: its status, whether the connection closes, what
    /// the observer sees of it, and how its body is delimited.
    fn begin_response(
        &mut self,
        status: u16,
        resp: &httparse::Response<'_, '_>,
    ) -> Result<(), ParseError> {
        self.status = status;
        self.close = resp.version == Some(0);
        self.observer
            .head(status, |c| c.headers.iter().all(|h| h.passes(resp.headers)));
        if self.observer.wants_script_headers() {
            self.observer.script_head_start();
            for h in resp.headers.iter() {
                self.observer.script_header(h.name.as_bytes(), h.value);
            }
        }
        let mut length: Option<u64> = None;
        let mut chunked = false;
        if self.observer.streams() {
            let content_type = resp
                .headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case("content-type"))
                .map(|h| h.value);
            self.observer.content_type(content_type);
        }
        for h in resp.headers.iter() {
            if h.name.eq_ignore_ascii_case("content-length") {
                length = Some(content_length(h.value, length)?);
            } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                chunked = ends_with_chunked(h.value);
            } else if h.name.eq_ignore_ascii_case("connection") {
                if contains_token(h.value, b"close") {
                    self.close = true;
                } else if contains_token(h.value, b"keep-alive") {
                    self.close = false;
                }
            }
        }
        let no_body = self.head_request || status == 204 || status == 304;
        self.state = if no_body {
            State::Body { remaining: 0 }
        } else if chunked {
            State::ChunkSize
        } else if let Some(len) = length {
            State::Body { remaining: len }
        } else {
            self.close = true;
            State::UntilClose
        };
        Ok(())
    }

    /// The peer closed the connection: a body delimited by the close is now complete.
    pub fn finish_at_eof(&mut self) -> Option<u16> {
        if self.state == State::UntilClose {
            let status = self.status;
            self.observer.end();
            self.reset();
            Some(status)
        } else {
            None
        }
    }

    fn done(&mut self, consumed: usize) -> Progress {
        let p = Progress::Done {
            consumed,
            status: self.status,
            close: self.close,
        };
        self.observer.end();
        self.reset();
        p
    }
}

fn head_error_text(e: httparse::Error) -> &'static str {
    match e {
        httparse::Error::HeaderName => "invalid header name",
        httparse::Error::HeaderValue => "invalid header value",
        httparse::Error::NewLine => "invalid line ending",
        httparse::Error::Status => "invalid status",
        httparse::Error::Token => "invalid token",
        httparse::Error::TooManyHeaders => "too many headers",
        httparse::Error::Version => "not HTTP/1.x",
    }
}

/// One Content-Length field value (possibly a list, `5, 5`) merged with what earlier fields
/// said. RFC 9112 section 6.3: differing values make the framing unknowable, an unrecoverable
/// error; repeats of one value are the same length.
fn content_length(value: &[u8], earlier: Option<u64>) -> Result<u64, ParseError> {
    let mut length = earlier;
    for item in value.split(|&b| b == b',') {
        let n = parse_decimal(item).ok_or(ParseError::ContentLength)?;
        match length {
            Some(l) if l != n => return Err(ParseError::ContentLengthConflict),
            _ => length = Some(n),
        }
    }
    length.ok_or(ParseError::ContentLength)
}

fn parse_decimal(v: &[u8]) -> Option<u64> {
    let v = v.trim_ascii();
    if v.is_empty() || v.len() > 19 || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(v.iter().fold(0u64, |acc, d| acc * 10 + (d - b'0') as u64))
}

fn ends_with_chunked(v: &[u8]) -> bool {
    v.rsplit(|&b| b == b',')
        .next()
        .is_some_and(|last| last.trim_ascii().eq_ignore_ascii_case(b"chunked"))
}

fn contains_token(v: &[u8], token: &[u8]) -> bool {
    v.split(|&b| b == b',')
        .any(|t| t.trim_ascii().eq_ignore_ascii_case(token))
}

#[cfg(test)]
mod tests {
    use super::*;
    use candor_wire::request_form::{build_request, has_header};

    fn feed_all(
        p: &mut ResponseParser,
        bytes: &[u8],
        step: usize,
    ) -> Result<Vec<(u16, bool)>, ParseError> {
        // Feed in small pieces through a buffer, as a socket would deliver them.
        let mut buf: Vec<u8> = Vec::new();
        let mut done = Vec::new();
        for piece in bytes.chunks(step) {
            buf.extend_from_slice(piece);
            loop {
                match p.feed(&buf, false)? {
                    Progress::NeedMore { consumed } => {
                        buf.drain(..consumed);
                        break;
                    }
                    Progress::Done {
                        consumed,
                        status,
                        close,
                    } => {
                        buf.drain(..consumed);
                        done.push((status, close));
                        if buf.is_empty() {
                            break;
                        }
                    }
                }
            }
        }
        Ok(done)
    }

    #[test]
    fn builds_requests() {
        let r = build_request("GET", "h:1", "/x", &["Accept: */*".into()], b"");
        let ua = format!("User-Agent: candor/{}\r\n", env!("CARGO_PKG_VERSION"));
        assert_eq!(
            r,
            format!("GET /x HTTP/1.1\r\nHost: h:1\r\n{ua}Accept: */*\r\n\r\n").as_bytes()
        );
        // The user's own User-Agent (any case) replaces candor's, as a Host header does.
        let r = build_request(
            "POST",
            "h",
            "/",
            &["host: other".into(), "user-agent: me/1".into()],
            b"abc",
        );
        assert_eq!(
            r,
            b"POST / HTTP/1.1\r\nhost: other\r\nuser-agent: me/1\r\nContent-Length: 3\r\n\r\nabc"
        );
    }

    #[test]
    fn content_length_responses_any_split() {
        let two = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
        for step in [1, 3, 7, 1000] {
            let mut p = ResponseParser::new(false);
            assert_eq!(
                feed_all(&mut p, two, step).unwrap(),
                vec![(200, false), (404, false)],
                "step {step}"
            );
        }
    }

    #[test]
    fn chunked_with_trailers_any_split() {
        let r = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-T: 1\r\n\r\n";
        for step in [1, 2, 5, 1000] {
            let mut p = ResponseParser::new(false);
            assert_eq!(
                feed_all(&mut p, r, step).unwrap(),
                vec![(200, false)],
                "step {step}"
            );
        }
    }

    #[test]
    fn connection_close_and_http10() {
        let mut p = ResponseParser::new(false);
        let r = b"HTTP/1.1 503 Busy\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
        assert_eq!(feed_all(&mut p, r, 100).unwrap(), vec![(503, true)]);
        let r = b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n";
        assert_eq!(feed_all(&mut p, r, 100).unwrap(), vec![(200, true)]);
    }

    #[test]
    fn body_until_close() {
        let mut p = ResponseParser::new(false);
        let r = b"HTTP/1.1 200 OK\r\n\r\nsome body";
        assert!(feed_all(&mut p, r, 4).unwrap().is_empty());
        assert_eq!(p.finish_at_eof(), Some(200));
    }

    #[test]
    fn interim_and_head_and_204() {
        let mut p = ResponseParser::new(false);
        let r = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n";
        assert_eq!(feed_all(&mut p, r, 100).unwrap(), vec![(204, false)]);
        let mut p = ResponseParser::new(true);
        let r = b"HTTP/1.1 200 OK\r\nContent-Length: 999\r\n\r\n";
        assert_eq!(feed_all(&mut p, r, 100).unwrap(), vec![(200, false)]);
    }

    #[test]
    fn differing_content_lengths_are_a_parse_error() {
        for r in [
            &b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 7\r\n\r\nhelloxx"[..],
            b"HTTP/1.1 200 OK\r\nContent-Length: 5, 7\r\n\r\nhelloxx",
            b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\nX: y\r\ncontent-length: 5,5\r\n\r\nhelloxx",
        ] {
            let mut p = ResponseParser::new(false);
            assert_eq!(
                p.feed(r, false),
                Err(ParseError::ContentLengthConflict),
                "{}",
                String::from_utf8_lossy(r)
            );
        }
        // The same value repeated is one length (RFC 9112 section 6.3 allows accepting it).
        for r in [
            &b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello"[..],
            b"HTTP/1.1 200 OK\r\nContent-Length: 5 , 5\r\n\r\nhello",
        ] {
            let mut p = ResponseParser::new(false);
            assert_eq!(feed_all(&mut p, r, 3).unwrap(), vec![(200, false)]);
        }
        let mut p = ResponseParser::new(false);
        assert_eq!(
            p.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 5,\r\n\r\nhello", false),
            Err(ParseError::ContentLength)
        );
    }

    #[test]
    fn authorization_counts_as_a_header_given() {
        let headers = vec![
            "X-A: 1".to_string(),
            " authorization : Bearer t".to_string(),
        ];
        assert!(has_header(&headers, "Authorization"));
        assert!(!has_header(&headers, "Host"));
    }

    #[test]
    fn garbage_is_a_parse_error() {
        let mut p = ResponseParser::new(false);
        assert!(p.feed(b"\x00\x01garbage garbage\r\n\r\n", false).is_err());
        let mut p = ResponseParser::new(false);
        assert_eq!(
            p.feed(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", false),
            Err(ParseError::ContentLength)
        );
        let mut p = ResponseParser::new(false);
        assert_eq!(
            p.feed(b"HTTP/1.1 200 OK\r\nX: y", true),
            Err(ParseError::HeadTooLarge)
        );
    }

    #[test]
    fn checks_see_headers_and_a_body_split_across_reads() {
        use candor_workload::check::{BodyNeedle, HeaderCheck};
        let table: Arc<[ResponseChecks]> = vec![
            ResponseChecks {
                body: Some(BodyNeedle::new(b"\"ok\":true").unwrap()),
                headers: vec![HeaderCheck::parse("X-App: a").unwrap()],
            },
            ResponseChecks::default(),
        ]
        .into();
        let run = |response: &[u8], step: usize, request: usize| -> Vec<bool> {
            let mut p = ResponseParser::new(false);
            p.set_checks(table.clone());
            p.select_checks(request);
            let mut buf: Vec<u8> = Vec::new();
            let mut verdicts = Vec::new();
            for piece in response.chunks(step) {
                buf.extend_from_slice(piece);
                loop {
                    match p.feed(&buf, false).unwrap() {
                        Progress::NeedMore { consumed } => {
                            buf.drain(..consumed);
                            break;
                        }
                        Progress::Done { consumed, .. } => {
                            buf.drain(..consumed);
                            verdicts.push(p.checks_passed());
                        }
                    }
                }
            }
            if let Some(_status) = p.finish_at_eof() {
                verdicts.push(p.checks_passed());
            }
            verdicts
        };
        let good =
            b"HTTP/1.1 200 OK\r\nX-App: a\r\nContent-Length: 20\r\n\r\n{\"id\":1,\"ok\":true}xx";
        let chunked = b"HTTP/1.1 200 OK\r\nx-app:  a \r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"ok\"\r\n6\r\n:true}\r\n0\r\n\r\n";
        let no_header = b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n{\"ok\":true}";
        let wrong_body = b"HTTP/1.1 200 OK\r\nX-App: a\r\nContent-Length: 12\r\n\r\n{\"ok\":false}";
        for step in [1, 3, 7, 1000] {
            assert_eq!(run(good, step, 0), vec![true], "step {step}");
            // The text straddles two chunks (and, for small steps, many reads).
            assert_eq!(run(chunked, step, 0), vec![true], "step {step}");
            assert_eq!(run(no_header, step, 0), vec![false]);
            assert_eq!(run(wrong_body, step, 0), vec![false]);
            // Request 1 has no checks.
            assert_eq!(run(wrong_body, step, 1), vec![true]);
        }
        // A body delimited by the close, and two responses in a row: the state resets between.
        let close = b"HTTP/1.0 200 OK\r\nX-App: a\r\n\r\nsay \"ok\":true";
        assert_eq!(run(close, 4, 0), vec![true]);
        let mut two = no_header.to_vec();
        two.extend_from_slice(good);
        assert_eq!(run(&two, 5, 0), vec![false, true]);
    }

    /// Feeds `response` in pieces of `step` bytes and returns, per completed response, its
    /// status, the check it failed and its excerpt.
    fn excerpts(
        p: &mut ResponseParser,
        response: &[u8],
        step: usize,
    ) -> Vec<(u16, Option<ContentCheck>, Option<Vec<u8>>)> {
        let mut buf: Vec<u8> = Vec::new();
        let mut out = Vec::new();
        let seen = |p: &ResponseParser, status| {
            (status, p.failed_check(), p.excerpt().map(<[u8]>::to_vec))
        };
        for piece in response.chunks(step) {
            buf.extend_from_slice(piece);
            loop {
                match p.feed(&buf, false).unwrap() {
                    Progress::NeedMore { consumed } => {
                        buf.drain(..consumed);
                        break;
                    }
                    Progress::Done {
                        consumed, status, ..
                    } => {
                        buf.drain(..consumed);
                        out.push(seen(p, status));
                    }
                }
            }
        }
        if let Some(status) = p.finish_at_eof() {
            out.push(seen(p, status));
        }
        out
    }

    #[test]
    fn failing_bodies_are_excerpted_across_reads_and_passing_ones_are_not_copied() {
        use candor_engine::examples::EXCERPT_KEPT;
        use candor_workload::check::BodyNeedle;
        let accept: Arc<[StatusSet]> = vec![
            StatusSet::parse("2xx").unwrap(),
            StatusSet::parse("2xx").unwrap(),
        ]
        .into();
        let checks: Arc<[ResponseChecks]> = vec![
            ResponseChecks::default(),
            ResponseChecks {
                body: Some(BodyNeedle::new(b"\"ok\":true").unwrap()),
                headers: Vec::new(),
            },
        ]
        .into();
        let parser = |request| {
            let mut p = ResponseParser::new(false);
            p.keep_excerpts(accept.clone());
            p.set_checks(checks.clone());
            p.select_checks(request);
            p
        };
        let busy = b"HTTP/1.1 503 Busy\r\nContent-Length: 21\r\n\r\nover capacity, retry\n";
        let fine = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        let wrong = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\n{\"ok\":\r\n7\r\nfalse}\n\r\n0\r\n\r\n";
        for step in [1, 5, 1000] {
            // Request 0: only the status decides; a passing body is never copied.
            let mut p = parser(0);
            let mut two = busy.to_vec();
            two.extend_from_slice(fine);
            assert_eq!(
                excerpts(&mut p, &two, step),
                vec![
                    (503, None, Some(b"over capacity, retry\n".to_vec())),
                    (200, None, Some(Vec::new())),
                ],
                "step {step}"
            );
            // Request 1 has a body check: its chunked body is excerpted across chunks and reads.
            let mut p = parser(1);
            assert_eq!(
                excerpts(&mut p, wrong, step),
                vec![(
                    200,
                    Some(ContentCheck::Body),
                    Some(b"{\"ok\":false}\n".to_vec())
                )],
                "step {step}"
            );
        }
        // A long body keeps one byte more than is shown, so that it is known to be longer; a
        // body delimited by the close is excerpted too.
        let mut long = b"HTTP/1.0 500 Oops\r\n\r\n".to_vec();
        long.extend(std::iter::repeat_n(b'z', 4000));
        let mut p = parser(0);
        let got = excerpts(&mut p, &long, 700);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].2.as_ref().map(Vec::len), Some(EXCERPT_KEPT));
        // Without excerpts asked for, nothing is kept.
        let mut p = ResponseParser::new(false);
        assert_eq!(excerpts(&mut p, busy, 3), vec![(503, None, None)]);
    }
}
