//! A request as HTTP/3 sends it: its HTTP/1.1 form (as the request builder and the template
//! fill write it) made a HEADERS frame whose field section is QPACK with the static table only
//! (`qpack.rs`), followed by the header of one DATA frame holding the body, when it has one.

use super::frames::{put_frame_header, DATA, HEADERS};
use super::qpack;

/// Why an HTTP/1.1 request cannot be sent over HTTP/3.
#[derive(Debug, PartialEq, Eq)]
pub struct NotARequest;

/// Headers that are about one HTTP/1.1 connection and must not appear in HTTP/3 (RFC 9114
/// §4.2), and `Host`, which becomes `:authority`.
fn dropped(name: &str, value: &[u8]) -> bool {
    let is = |n: &str| name.eq_ignore_ascii_case(n);
    is("host")
        || is("connection")
        || is("keep-alive")
        || is("proxy-connection")
        || is("transfer-encoding")
        || is("upgrade")
        || (is("te") && !value.trim_ascii().eq_ignore_ascii_case(b"trailers"))
}

/// Encodes the HTTP/1.1 request `h1` into `head` (cleared first): its HEADERS frame, then the
/// header of the DATA frame of its body when it has one. Returns where the body starts in
/// `h1`. Allocates nothing once `head` and `section` have grown to the largest request.
pub fn encode(h1: &[u8], head: &mut Vec<u8>, section: &mut Vec<u8>) -> Result<usize, NotARequest> {
    let mut headers = [httparse::EMPTY_HEADER; 128];
    let mut req = httparse::Request::new(&mut headers);
    let body_at = match req.parse(h1) {
        Ok(httparse::Status::Complete(n)) => n,
        _ => return Err(NotARequest),
    };
    let method = req.method.ok_or(NotARequest)?;
    let path = req.path.ok_or(NotARequest)?;
    let host = req
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("host"))
        .map(|h| h.value.trim_ascii())
        .ok_or(NotARequest)?;
    section.clear();
    qpack::put_prefix(section);
    qpack::put_request_head(section, method.as_bytes(), host, path.as_bytes());
    for h in req.headers.iter() {
        if !dropped(h.name, h.value) {
            qpack::put_field(section, h.name.as_bytes(), h.value.trim_ascii());
        }
    }
    head.clear();
    put_frame_header(head, HEADERS, section.len());
    head.extend_from_slice(section);
    let body = h1.len() - body_at;
    if body > 0 {
        put_frame_header(head, DATA, body);
    }
    Ok(body_at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http3::frames::{FrameReader, Piece};

    #[test]
    fn a_post_becomes_headers_then_the_header_of_its_body() {
        let h1 = b"POST /x HTTP/1.1\r\nHost: h:8443\r\nConnection: keep-alive\r\nContent-Length: 3\r\nUser-Agent: candor\r\n\r\nabc";
        let (mut head, mut section) = (Vec::new(), Vec::new());
        let body_at = encode(h1, &mut head, &mut section).unwrap();
        assert_eq!(&h1[body_at..], b"abc");
        let mut bytes = head.clone();
        bytes.extend_from_slice(&h1[body_at..]);
        let mut fields = Vec::new();
        let mut data = Vec::new();
        FrameReader::new(1024)
            .feed(
                &bytes,
                |k| k == HEADERS,
                |p| {
                    match p {
                        Piece::Whole { payload, .. } => {
                            let (mut n, mut v) = (Vec::new(), Vec::new());
                            qpack::decode(payload, &mut n, &mut v, |n, v| {
                                fields.push(format!(
                                    "{}={}",
                                    String::from_utf8_lossy(n),
                                    String::from_utf8_lossy(v)
                                ))
                            })
                            .unwrap();
                        }
                        Piece::Data(d, _) => data.extend_from_slice(d),
                    }
                    Ok::<(), crate::http3::frames::FrameError>(())
                },
            )
            .unwrap();
        assert_eq!(
            fields,
            [
                ":method=POST",
                ":scheme=https",
                ":authority=h:8443",
                ":path=/x",
                "content-length=3",
                "user-agent=candor"
            ]
        );
        assert_eq!(data, b"abc");
    }

    #[test]
    fn a_request_without_a_host_or_a_head_is_refused() {
        let (mut head, mut section) = (Vec::new(), Vec::new());
        assert_eq!(
            encode(b"GET / HTTP/1.1\r\n\r\n", &mut head, &mut section),
            Err(NotARequest)
        );
        assert_eq!(
            encode(b"GET / HTTP/1.1\r\nHost: h\r\n", &mut head, &mut section),
            Err(NotARequest)
        );
    }
}
