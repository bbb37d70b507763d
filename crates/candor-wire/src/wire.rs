//! What may reach the wire: the checks every request from the user's input passes before the run
//! (method, path, header names and values, a body's framing), and the percent-encoding of paths
//! from files and of values substituted into a path, so that nothing a file holds can split a
//! request line, add a header or desynchronise a connection.

/// Whether `b` may stand unencoded in a request-target (RFC 3986 `pchar`, `/` and `?`), given
/// that `%` is judged separately.
fn target_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/?".contains(&b)
}

/// A line break or NUL: the bytes that end or cut a line of an HTTP/1.1 head.
#[inline]
pub fn breaks_line(b: u8) -> bool {
    b == b'\r' || b == b'\n' || b == 0
}

/// A byte HTTP forbids in a header value (RFC 9110 §5.5): a control character other than tab,
/// the line breaks and NUL included.
#[inline]
pub fn forbidden_in_value(b: u8) -> bool {
    (b < 0x20 && b != b'\t') || b == 0x7f
}

/// Whether `name` is an HTTP token (RFC 9110 §5.6.2), as a header name must be.
pub fn is_token(name: &str) -> bool {
    is_token_bytes(name.as_bytes())
}

/// [`is_token`] of bytes.
#[inline]
pub fn is_token_bytes(name: &[u8]) -> bool {
    !name.is_empty()
        && name
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(b))
}

fn push_encoded(out: &mut Vec<u8>, b: u8) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    out.extend_from_slice(&[b'%', HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
}

/// The path of a request from a file (`--requests`, `--replay`) as a valid request-target: every
/// byte a request-target may not hold is percent-encoded (a space becomes `%20`), a `%XX` already
/// there is kept, a `%` that starts no `%XX` becomes `%25`. With `placeholders`, each `{{...}}`
/// is kept as it is for the template compiler (the values it stands for are encoded when they are
/// filled in).
pub fn encode_target(path: &str, placeholders: bool) -> String {
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if placeholders && bytes[i..].starts_with(b"{{") {
            // An unclosed `{{` is left for the template compiler to report.
            let end = path[i + 2..]
                .find("}}")
                .map_or(bytes.len(), |close| i + 2 + close + 2);
            out.extend_from_slice(&bytes[i..end]);
            i = end;
            continue;
        }
        let b = bytes[i];
        let escape = b == b'%'
            && bytes.len() > i + 2
            && bytes[i + 1].is_ascii_hexdigit()
            && bytes[i + 2].is_ascii_hexdigit();
        if target_byte(b) || escape {
            out.push(b);
        } else {
            push_encoded(&mut out, b);
        }
        i += 1;
    }
    String::from_utf8(out).expect("ASCII and the input's own UTF-8 placeholders")
}

/// Appends `value` percent-encoded as one path segment (everything but RFC 3986's unreserved
/// characters: `bob, jr` becomes `bob%2C%20jr`, a `/` becomes `%2F`). `out` needs three times
/// `value`'s length spare for this to allocate nothing.
#[inline]
pub fn encode_segment_into(value: &[u8], out: &mut Vec<u8>) {
    for &b in value {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b);
        } else {
            push_encoded(out, b);
        }
    }
}

/// Printable text of a value for an error message (a line break shows as `\r`, `\n`).
fn shown(text: &str) -> String {
    text.escape_debug().to_string()
}

/// Why a request of the user's input cannot be sent as written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    #[error("invalid HTTP method '{}'", shown(.0))]
    Method(String),
    #[error("path '{}' must start with '/'", shown(.0))]
    PathNotAbsolute(String),
    #[error(
        "path '{}' holds a line break or NUL, which would cut the request line",
        shown(.0)
    )]
    PathBreaksLine(String),
    #[error(transparent)]
    Header(#[from] HeaderError),
    #[error(
        "header '{}': candor sends a body with its Content-Length and does not chunk it (HTTP/2 forbids Transfer-Encoding); remove the header",
        shown(.0)
    )]
    TransferEncoding(String),
    #[error(
        "header '{}' contradicts the body, which has {body_len} bytes; remove it (candor sends the body's own Content-Length)",
        shown(.header)
    )]
    ContentLength { header: String, body_len: usize },
}

/// Why a "Name: value" header line cannot be sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    #[error("invalid header '{}': expected 'Name: value'", shown(.0))]
    NoColon(String),
    #[error("invalid header '{}': {name}", shown(.header))]
    Name {
        header: String,
        name: HeaderNameError,
    },
    #[error(
        "invalid header '{}': its value holds a line break or NUL, which would start another header",
        shown(.0)
    )]
    ValueBreaksLine(String),
    #[error(
        "invalid header '{}': its value holds the control character 0x{byte:02x}, which HTTP forbids in a header value",
        shown(.header)
    )]
    ValueControl { header: String, byte: u8 },
}

/// A header name that is not an HTTP token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the header name '{}' is not a token (letters, digits and !#$%&'*+-.^_`|~, no spaces, line breaks or colons)",
    shown(.0)
)]
pub struct HeaderNameError(pub String);

/// Checks one request of the user's input before the run: a method of letters, a path that
/// starts with `/` and holds no line break or NUL, headers "Name: value" with a token name and a
/// value without line break or NUL, and no Content-Length or Transfer-Encoding that contradicts how
/// candor frames the body (it sends the body with its own Content-Length; a user's must equal the
/// body's length, and Transfer-Encoding is refused: HTTP/2 forbids it and candor does not chunk).
/// `templated_body`: the body has placeholders, its length is only known when filled (the template
/// compiler refuses a Content-Length then).
pub fn check_request(
    method: &str,
    path: &str,
    headers: &[String],
    body: &[u8],
    templated_body: bool,
) -> Result<(), RequestError> {
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_alphabetic()) {
        return Err(RequestError::Method(method.into()));
    }
    if !path.starts_with('/') {
        return Err(RequestError::PathNotAbsolute(path.into()));
    }
    if path.bytes().any(breaks_line) {
        return Err(RequestError::PathBreaksLine(path.into()));
    }
    for h in headers {
        check_header(h)?;
        let (name, value) = h.split_once(':').unwrap_or((h, ""));
        let (name, value) = (name.trim(), value.trim());
        if name.eq_ignore_ascii_case("transfer-encoding") {
            return Err(RequestError::TransferEncoding(h.clone()));
        }
        if name.eq_ignore_ascii_case("content-length") && !templated_body {
            let consistent = value.bytes().all(|b| b.is_ascii_digit())
                && value.parse::<u64>().ok() == Some(body.len() as u64);
            if !consistent {
                return Err(RequestError::ContentLength {
                    header: h.clone(),
                    body_len: body.len(),
                });
            }
        }
    }
    Ok(())
}

/// Checks one "Name: value" header line: a token name, a value without line break or NUL.
pub fn check_header(h: &str) -> Result<(), HeaderError> {
    let Some((name, value)) = h.split_once(':') else {
        return Err(HeaderError::NoColon(h.into()));
    };
    check_header_name(name.trim()).map_err(|name| HeaderError::Name {
        header: h.into(),
        name,
    })?;
    if value.bytes().any(breaks_line) {
        return Err(HeaderError::ValueBreaksLine(h.into()));
    }
    // RFC 9110 §5.5: a field value is visible characters, spaces and tabs; any other control
    // byte is refused by HTTP/2 peers and by strict HTTP/1.1 servers (a 400 per request).
    if let Some(b) = value.bytes().find(|&b| forbidden_in_value(b)) {
        return Err(HeaderError::ValueControl {
            header: h.into(),
            byte: b,
        });
    }
    Ok(())
}

/// Checks a header name on its own (a JSON object's key, before it is joined to its value).
pub fn check_header_name(name: &str) -> Result<(), HeaderNameError> {
    if is_token(name) {
        Ok(())
    } else {
        Err(HeaderNameError(name.into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_values_may_hold_tabs_but_no_other_control_character() {
        assert!(check_header("X: a\tb").is_ok());
        assert!(check_header("X: caf\u{e9}").is_ok());
        for (h, byte) in [
            ("X: a\u{1}b", "0x01"),
            ("X: a\u{7f}", "0x7f"),
            ("X: \u{1b}[31m", "0x1b"),
        ] {
            let e = check_header(h).unwrap_err().to_string();
            assert!(e.contains(&format!("control character {byte}")), "{e}");
            assert!(!e.chars().any(|c| c.is_control()), "{e:?}");
        }
    }

    #[test]
    fn paths_from_files_become_valid_request_targets() {
        for (path, sent) in [
            ("/a b", "/a%20b"),
            ("/u/bob, jr?q=a b&x=1", "/u/bob,%20jr?q=a%20b&x=1"),
            ("/already%20encoded%2f", "/already%20encoded%2f"),
            ("/100%", "/100%25"),
            ("/%zz", "/%25zz"),
            ("/caf\u{e9}", "/caf%C3%A9"),
            (
                "/tab\there\"<>`^|\\#",
                "/tab%09here%22%3C%3E%60%5E%7C%5C%23",
            ),
            ("/{x}", "/%7Bx%7D"),
            ("/ok-._~!$&'()*+,;=:@/?", "/ok-._~!$&'()*+,;=:@/?"),
        ] {
            assert_eq!(encode_target(path, false), sent, "{path}");
        }
        // Placeholders stay for the template compiler, the rest around them is encoded.
        assert_eq!(
            encode_target("/u a/{{data:name}}/{{seq}} x", true),
            "/u%20a/{{data:name}}/{{seq}}%20x"
        );
        assert_eq!(encode_target("/a b/{{seq", true), "/a%20b/{{seq");
        assert_eq!(encode_target("/{{seq}}", false), "/%7B%7Bseq%7D%7D");
    }

    #[test]
    fn substituted_values_are_encoded_as_one_segment() {
        let mut out = Vec::new();
        encode_segment_into(b"bob, jr", &mut out);
        assert_eq!(out, b"bob%2C%20jr");
        out.clear();
        encode_segment_into(b"a/b?c#d%\r\nX: y\0", &mut out);
        assert_eq!(out, b"a%2Fb%3Fc%23d%25%0D%0AX%3A%20y%00");
    }

    #[test]
    fn line_breaks_and_nul_are_refused_wherever_they_are() {
        let ok = |h: &[&str], body: &[u8]| {
            let h: Vec<String> = h.iter().map(|s| s.to_string()).collect();
            check_request("GET", "/", &h, body, false)
        };
        assert!(ok(&["X-A: 1", "Accept: */*"], b"").is_ok());
        for bad in [
            "X: a\r\nY: b",
            "X: a\nY: b",
            "X: a\rb",
            "X: a\0b",
            "X\r\nY: b",
            "X Y: b",
            ": b",
            "NoColon",
        ] {
            let e = ok(&[bad], b"").unwrap_err().to_string();
            assert!(e.starts_with("invalid header '"), "{bad}: {e}");
            assert!(!e.contains('\n') && !e.contains('\r'), "{e}");
        }
        assert!(check_request("GET", "/a\r\nX: y", &[], b"", false)
            .unwrap_err()
            .to_string()
            .contains("line break or NUL"));
        assert!(check_request("GET", "/a\0", &[], b"", false).is_err());
        assert!(check_request("GET", "a", &[], b"", false).is_err());
        let e = check_request("GE\r\nT", "/", &[], b"", false)
            .unwrap_err()
            .to_string();
        assert_eq!(e, "invalid HTTP method 'GE\\r\\nT'");
        assert!(check_header_name("X-Ok").is_ok());
        assert!(check_header_name("X:Y").is_err() && check_header_name("X\nY").is_err());
    }

    #[test]
    fn a_user_content_length_must_match_the_body_and_transfer_encoding_is_refused() {
        let check = |h: &str, body: &[u8]| check_request("POST", "/", &[h.into()], body, false);
        assert!(check("Content-Length: 5", b"hello").is_ok());
        assert!(check("content-length:0", b"").is_ok());
        let e = check("Content-Length: 5", b"").unwrap_err().to_string();
        assert_eq!(e, "header 'Content-Length: 5' contradicts the body, which has 0 bytes; remove it (candor sends the body's own Content-Length)");
        assert!(check("Content-Length: 4", b"hello").is_err());
        assert!(check("Content-Length: +5", b"hello").is_err());
        assert!(check("Content-Length: 5, 5", b"hello").is_err());
        assert!(check("Transfer-Encoding: chunked", b"hello")
            .unwrap_err()
            .to_string()
            .contains("does not chunk"));
        assert!(check("transfer-encoding: identity", b"").is_err());
        // A templated body's length is the template compiler's business.
        assert!(
            check_request("POST", "/", &["Content-Length: 3".into()], b"{{seq}}", true).is_ok()
        );
    }

    #[test]
    fn a_refused_request_says_which_rule_it_broke() {
        assert_eq!(
            check_header("X-No-Colon"),
            Err(HeaderError::NoColon("X-No-Colon".into()))
        );
        assert_eq!(
            check_request("GET", "/", &["X: a\u{7}".into()], b"", false),
            Err(RequestError::Header(HeaderError::ValueControl {
                header: "X: a\u{7}".into(),
                byte: 7
            }))
        );
        assert_eq!(
            check_request("POST", "/", &["Content-Length: 9".into()], b"ab", false),
            Err(RequestError::ContentLength {
                header: "Content-Length: 9".into(),
                body_len: 2
            })
        );
        assert!(matches!(
            check_header("Bad Name: v"),
            Err(HeaderError::Name { name: HeaderNameError(n), .. }) if n == "Bad Name"
        ));
    }
}
