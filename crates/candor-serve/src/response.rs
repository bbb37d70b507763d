//! The response bytes, built once at start so that answering a request is a single copy.

/// Bytes a `garbage` fault sends instead of a response: not an HTTP status line.
pub(crate) const GARBAGE: &[u8] = b"\x00\x01\x02 this is not HTTP \xff\xfe\r\n\r\n";

const CLOSE: &str = "Connection: close\r\n";
/// HTTP/1.0 clients (ab -k) keep the connection only if the answer says so.
const KEEP_ALIVE: &str = "Connection: keep-alive\r\n";

/// Every answer the server can give.
pub(crate) struct Responses {
    pub(crate) get: Box<[u8]>,
    pub(crate) get_close: Box<[u8]>,
    pub(crate) get_keep_alive: Box<[u8]>,
    pub(crate) head: Box<[u8]>,
    pub(crate) head_close: Box<[u8]>,
    pub(crate) head_keep_alive: Box<[u8]>,
    pub(crate) bad_request: Box<[u8]>,
}

impl Responses {
    pub(crate) fn new(body_bytes: usize) -> Self {
        // "okokok..." cut to length: the default 2-byte body reads "ok".
        let body: Vec<u8> = b"ok".iter().copied().cycle().take(body_bytes).collect();
        // `connection` is the extra header line, if any.
        let build = |connection: &str, with_body: bool| -> Box<[u8]> {
            let mut r = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {body_bytes}\r\nContent-Type: text/plain\r\n{connection}\r\n"
            )
            .into_bytes();
            if with_body {
                r.extend_from_slice(&body);
            }
            r.into_boxed_slice()
        };
        let bad = b"bad request\n";
        let mut bad_request = format!(
            "HTTP/1.1 400 Bad Request\r\nContent-Length: {}\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n",
            bad.len()
        )
        .into_bytes();
        bad_request.extend_from_slice(bad);
        Responses {
            get: build("", true),
            get_close: build(CLOSE, true),
            get_keep_alive: build(KEEP_ALIVE, true),
            head: build("", false),
            head_close: build(CLOSE, false),
            head_keep_alive: build(KEEP_ALIVE, false),
            bad_request: bad_request.into_boxed_slice(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_are_well_formed() {
        let r = Responses::new(2);
        assert_eq!(
            &*r.get,
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok"
        );
        assert_eq!(&r.head[..], &r.get[..r.get.len() - 2]);
        assert!(r.get_close.ends_with(b"Connection: close\r\n\r\nok"));
        assert!(r
            .get_keep_alive
            .ends_with(b"Connection: keep-alive\r\n\r\nok"));
        assert!(r
            .head_keep_alive
            .ends_with(b"Connection: keep-alive\r\n\r\n"));
        let big = Responses::new(5);
        assert!(big.get.ends_with(b"\r\n\r\nokoko"));
        let empty = Responses::new(0);
        assert!(empty
            .get
            .ends_with(b"Content-Length: 0\r\nContent-Type: text/plain\r\n\r\n"));
        let mut headers = [httparse::EMPTY_HEADER; 8];
        let mut resp = httparse::Response::new(&mut headers);
        assert!(resp.parse(&r.bad_request).unwrap().is_complete());
        assert_eq!(resp.code, Some(400));
    }
}
