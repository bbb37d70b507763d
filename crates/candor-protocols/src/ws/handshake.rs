//! The opening handshake of RFC 6455: the client's upgrade request (a fresh
//! `Sec-WebSocket-Key` per connection, the user's `-H` headers) and the check of the server's
//! `101 Switching Protocols` (its `Sec-WebSocket-Accept` must be the key's digest). The bytes
//! after the server's head are the first frames, and are left to the frame decoder.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use thiserror::Error;

/// The GUID RFC 6455 appends to the key before hashing it.
const GUID: &[u8] = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// Why an upgrade failed; each is a connect failure of the run, counted by cause.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum UpgradeError {
    #[error("the server answered the upgrade with status {0}, not 101")]
    Status(u16),
    #[error("the server's 101 lacks `Upgrade: websocket`")]
    NoUpgrade,
    #[error("the server's 101 lacks `Connection: Upgrade`")]
    NoConnectionUpgrade,
    #[error("the server's Sec-WebSocket-Accept does not match the key sent")]
    BadAccept,
    #[error("the server's answer to the upgrade is not HTTP")]
    Malformed,
    #[error("the server's answer to the upgrade has a head over {0} bytes")]
    TooLarge(usize),
}

/// The longest head of a 101 the client reads.
pub const MAX_HEAD: usize = 16 * 1024;

/// The base64 key of one connection's upgrade, from 16 bytes the caller drew at random.
pub fn key_from(random: [u8; 16]) -> [u8; 24] {
    let mut key = [0u8; 24];
    let n = STANDARD
        .encode_slice(random, &mut key)
        .expect("16 bytes are 24 in base64");
    debug_assert_eq!(n, 24);
    key
}

/// What the server must answer to `key`.
pub fn accept_for(key: &[u8]) -> [u8; 28] {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY);
    ctx.update(key);
    ctx.update(GUID);
    let digest = ctx.finish();
    let mut accept = [0u8; 28];
    STANDARD
        .encode_slice(digest.as_ref(), &mut accept)
        .expect("20 bytes are 28 in base64");
    accept
}

/// Writes the upgrade request for `path` on `host` into `out` (cleared first), with the
/// user's `headers` (already checked for what may reach the wire).
pub fn write_request(
    out: &mut Vec<u8>,
    host: &str,
    path: &str,
    key: &[u8; 24],
    headers: &[(String, String)],
) {
    out.clear();
    out.extend_from_slice(b"GET ");
    out.extend_from_slice(path.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\nHost: ");
    out.extend_from_slice(host.as_bytes());
    out.extend_from_slice(
        b"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ",
    );
    out.extend_from_slice(key);
    out.extend_from_slice(b"\r\n");
    for (name, value) in headers {
        if name.eq_ignore_ascii_case("host") {
            continue; // the one above names the target; a user's Host replaces it below
        }
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    if let Some((_, host)) = headers.iter().find(|(n, _)| n.eq_ignore_ascii_case("host")) {
        // A user's Host wins, as for HTTP requests: rewrite the line written above.
        let at = out
            .windows(8)
            .position(|w| w == b"\r\nHost: ")
            .expect("written above")
            + 8;
        let end = at
            + out[at..]
                .windows(2)
                .position(|w| w == b"\r\n")
                .expect("line end");
        out.splice(at..end, host.bytes());
    }
}

/// Reads the server's answer from `input`: `Ok(None)` while its head is incomplete, else the
/// bytes the head took (what follows is frames).
pub fn read_response(input: &[u8], key: &[u8; 24]) -> Result<Option<usize>, UpgradeError> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut response = httparse::Response::new(&mut headers);
    let consumed = match response.parse(input) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) if input.len() >= MAX_HEAD => {
            return Err(UpgradeError::TooLarge(MAX_HEAD))
        }
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(_) => return Err(UpgradeError::Malformed),
    };
    let status = response.code.unwrap_or(0);
    if status != 101 {
        return Err(UpgradeError::Status(status));
    }
    let headers = &*response.headers;
    let header = |name: &'static str| {
        headers
            .iter()
            .filter(move |h| h.name.eq_ignore_ascii_case(name))
            .map(|h| h.value)
    };
    if !header("upgrade").any(|v| v.trim_ascii().eq_ignore_ascii_case(b"websocket")) {
        return Err(UpgradeError::NoUpgrade);
    }
    let has_upgrade_token = |v: &[u8]| {
        v.split(|&b| b == b',')
            .any(|t| t.trim_ascii().eq_ignore_ascii_case(b"upgrade"))
    };
    if !header("connection").any(has_upgrade_token) {
        return Err(UpgradeError::NoConnectionUpgrade);
    }
    let expected = accept_for(key);
    if !header("sec-websocket-accept").any(|v| v.trim_ascii() == expected) {
        return Err(UpgradeError::BadAccept);
    }
    Ok(Some(consumed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_accept_of_the_rfc_example_key() {
        // RFC 6455 section 1.3.
        assert_eq!(
            &accept_for(b"dGhlIHNhbXBsZSBub25jZQ=="),
            b"s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
        assert_eq!(&key_from(*b"the sample nonce"), b"dGhlIHNhbXBsZSBub25jZQ==");
    }

    fn answer(key: &[u8; 24], extra: &str) -> Vec<u8> {
        let accept = accept_for(key);
        format!(
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: WebSocket\r\nConnection: keep-alive, Upgrade\r\nSec-WebSocket-Accept: {}\r\n\r\n{extra}",
            std::str::from_utf8(&accept).unwrap()
        )
        .into_bytes()
    }

    #[test]
    fn a_right_answer_is_accepted_and_the_frames_after_it_are_left() {
        let key = key_from([7; 16]);
        let bytes = answer(&key, "\u{81}\u{2}hi");
        let head = read_response(&bytes, &key).unwrap().unwrap();
        assert_eq!(&bytes[head..], "\u{81}\u{2}hi".as_bytes());
        // Cut anywhere before its end, the head is incomplete.
        for cut in 0..head {
            assert_eq!(read_response(&bytes[..cut], &key), Ok(None), "cut at {cut}");
        }
    }

    #[test]
    fn each_wrong_answer_has_its_error() {
        let key = key_from([1; 16]);
        let other = key_from([2; 16]);
        assert_eq!(
            read_response(&answer(&other, ""), &key),
            Err(UpgradeError::BadAccept)
        );
        assert_eq!(
            read_response(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", &key),
            Err(UpgradeError::Status(200))
        );
        let no_upgrade = String::from_utf8(answer(&key, ""))
            .unwrap()
            .replace("Upgrade: WebSocket\r\n", "");
        assert_eq!(
            read_response(no_upgrade.as_bytes(), &key),
            Err(UpgradeError::NoUpgrade)
        );
        let no_connection = String::from_utf8(answer(&key, ""))
            .unwrap()
            .replace("keep-alive, Upgrade", "keep-alive");
        assert_eq!(
            read_response(no_connection.as_bytes(), &key),
            Err(UpgradeError::NoConnectionUpgrade)
        );
        assert_eq!(
            read_response(b"\x00\x01garbage\r\n\r\n", &key),
            Err(UpgradeError::Malformed)
        );
        let endless = [b'a'; MAX_HEAD];
        let mut long = b"HTTP/1.1 101 OK\r\nX: ".to_vec();
        long.extend_from_slice(&endless);
        assert_eq!(
            read_response(&long, &key),
            Err(UpgradeError::TooLarge(MAX_HEAD))
        );
    }

    #[test]
    fn the_request_carries_the_upgrade_the_key_and_the_users_headers_with_their_host() {
        let key = key_from([3; 16]);
        let mut out = Vec::new();
        let headers = vec![
            ("Authorization".to_string(), "Bearer t".to_string()),
            ("Host".to_string(), "example.test".to_string()),
        ];
        write_request(&mut out, "127.0.0.1:9", "/chat?room=1", &key, &headers);
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.starts_with("GET /chat?room=1 HTTP/1.1\r\nHost: example.test\r\n"),
            "{text}"
        );
        assert!(text.contains("\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"));
        assert!(text.contains("Sec-WebSocket-Version: 13\r\n"));
        assert!(text.contains(&format!(
            "Sec-WebSocket-Key: {}\r\n",
            std::str::from_utf8(&key).unwrap()
        )));
        assert!(text.contains("Authorization: Bearer t\r\n"));
        assert_eq!(text.matches("Host:").count(), 1);
        assert!(text.ends_with("\r\n\r\n"));
    }
}
