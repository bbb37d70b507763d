//! Request sets: many different HTTP requests in a JSON-lines file, parsed once before the run.
//!
//! One JSON object per line: `{"method": "POST", "path": "/items?id=7", "headers":
//! {"Content-Type": "application/json"}, "body": "{\"x\":1}"}`. Every field but `path` is
//! optional (method GET, no headers, empty body); `headers` may also be a list of "Name: value"
//! strings. Blank lines and lines starting with `#` are ignored.
//!
//! A line may also carry `"name"` (its name in the per-request breakdown; default method and
//! path), `"weight"` (a positive number: requests are drawn in proportion to it), and its own
//! checks `"check_status"` (as `--check-status`) and `"check_body"` (as `--check-body`).
//! Instead of `"path"`, `"url"` (an absolute `http://` or `https://` URL) sends the line to a
//! target of its own (see `LoadConfig::resolve_request_targets`).
//!
//! For a gRPC target a line names its method with `"call"` (`package.Service/Method`; default
//! `--call`) and its request message with `"message"` (a JSON object, or a string holding the
//! JSON text, which may then carry placeholders where a JSON value goes: `"{\"seq\":{{seq}}}"`;
//! default `--body`), instead of `"path"` and `"body"`; its `"headers"` are metadata.

use crate::status::StatusSet;
use serde_json::Value;

/// One request of a request set (HTTP).
#[derive(Debug, Clone, PartialEq)]
pub struct RequestSpec {
    pub method: String,
    pub path: String,
    /// "Name: value" lines.
    pub headers: Vec<String>,
    pub body: Vec<u8>,
}

/// How the next request of a set is chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RequestOrder {
    RoundRobin,
    Random { seed: u64 },
}

/// The URL path with its placeholders restored: the URL parser percent-encodes `{` and `}`.
pub fn url_path_template(path: &str) -> String {
    path.replace("%7B%7B", "{{")
        .replace("%7D%7D", "}}")
        .replace("%7b%7b", "{{")
        .replace("%7d%7d", "}}")
}

/// One line of a request set: the request and what the workload features add to it.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestLine {
    pub spec: RequestSpec,
    /// The name in the breakdown: `"name"`, or the method and path template.
    pub name: String,
    pub weight: Option<f64>,
    pub check_status: Option<StatusSet>,
    pub check_body: Option<String>,
    /// `"url"`: the absolute URL of another target this line is sent to (`None`: the command
    /// line's target).
    pub url: Option<String>,
    /// Its line number in the file (1-based), for errors found after parsing.
    pub line: usize,
    /// gRPC: `"call"`, the method this line calls (`None`: `--call`).
    pub call: Option<String>,
    /// gRPC: `"message"`, the JSON text of the request message (`None`: `--body`).
    pub message: Option<String>,
}

/// Parses a request-set file; errors name the line.
pub fn parse_request_set(text: &str) -> Result<Vec<RequestSpec>, String> {
    Ok(parse_request_lines(text)?
        .into_iter()
        .map(|l| l.spec)
        .collect())
}

/// What the lines of a request set describe, by the target's protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LineKind {
    /// An HTTP request: method, path or url, headers, body, checks.
    Http,
    /// A WebSocket message (`ws://`, `wss://`): its body alone, with a name and a weight; the
    /// upgrade's path and headers are the command line's.
    Message,
}

/// The fields of a line that an HTTP request or a gRPC call has and a WebSocket message has
/// not.
const NOT_IN_A_MESSAGE: [&str; 8] = [
    "method",
    "path",
    "url",
    "headers",
    "check_status",
    "check_body",
    "call",
    "message",
];

/// Parses a request-set file with names, weights and per-line checks; errors name the line.
pub fn parse_request_lines(text: &str) -> Result<Vec<RequestLine>, String> {
    parse_lines(text, LineKind::Http)
}

/// Parses a request-set file for a `ws://` or `wss://` target: each line is one message, its
/// `"body"` (required) with an optional `"name"` (the breakdown's, `line N` by default) and
/// `"weight"`. A line's HTTP fields (method, path, url, headers, checks) are refused, naming
/// the line: the upgrade request is the command line's (its URL path and `-H`), and a message
/// has no status to check.
pub fn parse_message_lines(text: &str) -> Result<Vec<RequestLine>, String> {
    parse_lines(text, LineKind::Message)
}

fn parse_lines(text: &str, kind: LineKind) -> Result<Vec<RequestLine>, String> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = |m: String| format!("line {}: {m}", n + 1);
        let v: Value = serde_json::from_str(line).map_err(|e| at(format!("not JSON: {e}")))?;
        let obj = v
            .as_object()
            .ok_or_else(|| at("expected a JSON object".into()))?;
        if kind == LineKind::Message {
            if let Some(http) = NOT_IN_A_MESSAGE.iter().find(|k| obj.contains_key(**k)) {
                return Err(at(format!(
                    "\"{http}\" does not apply to ws:// and wss:// targets: a line is one message, its \"body\" (with \"name\" and \"weight\"); the upgrade takes the URL's path and -H"
                )));
            }
            if !matches!(obj.get("body"), Some(Value::String(_))) {
                return Err(at(
                    "a ws:// or wss:// line needs \"body\", a string: the message it sends".into(),
                ));
            }
        }
        let text_field = |k: &str| -> Result<Option<String>, String> {
            match obj.get(k) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(at(format!("\"{k}\" must be a string"))),
            }
        };
        // An absolute "url" sends this line to its own target (scheme, host and port), with
        // connections of its own; "path" alone goes to the URL on the command line.
        let call = text_field("call")?;
        let message = match obj.get("message") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(v @ Value::Object(_)) => Some(v.to_string()),
            Some(_) => {
                return Err(at(
                    "\"message\" must be a JSON object or a string of JSON text".into(),
                ))
            }
        };
        let grpc = call.is_some() || message.is_some();
        let (url, path) = line_target(text_field("url")?, text_field("path")?, grpc, kind, &at)?;
        let method = text_field("method")?
            .unwrap_or_else(|| "GET".into())
            .to_ascii_uppercase();
        let body = text_field("body")?.unwrap_or_default().into_bytes();
        let headers = line_headers(obj, &at)?;
        const FIELDS: [&str; 11] = [
            "method",
            "path",
            "url",
            "headers",
            "body",
            "name",
            "weight",
            "check_status",
            "check_body",
            "call",
            "message",
        ];
        if let Some(unknown) = obj.keys().find(|k| !FIELDS.contains(&k.as_str())) {
            return Err(at(format!("unknown field \"{unknown}\"")));
        }
        let name = text_field("name")?.unwrap_or_else(|| match (&url, &call, kind) {
            (_, _, LineKind::Message) => format!("line {}", n + 1),
            (_, Some(c), LineKind::Http) => c.clone(),
            (Some(u), None, LineKind::Http) => format!("{method} {u}"),
            (None, None, LineKind::Http) => format!("{method} {path}"),
        });
        let weight = match obj.get("weight") {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                v.as_f64()
                    .filter(|w| *w > 0.0 && w.is_finite())
                    .ok_or_else(|| at(format!("\"weight\" must be a positive number, got {v}")))?,
            ),
        };
        let check_status = text_field("check_status")?
            .map(|t| {
                StatusSet::parse(&t).map_err(|e| at(format!("invalid \"check_status\" '{t}': {e}")))
            })
            .transpose()?;
        let check_body = text_field("check_body")?;
        if check_body.as_deref() == Some("") {
            return Err(at("\"check_body\" must not be empty".into()));
        }
        // Nothing of the line reaches the wire unchecked: a line break in a header or the path
        // is refused here, naming the line; other bytes a request-target may not hold are
        // percent-encoded (placeholders are encoded when they are filled).
        let templated_body = body.windows(2).any(|w| w == b"{{");
        crate::wire::check_request(&method, &path, &headers, &body, templated_body)
            .map_err(|e| at(e.to_string()))?;
        let wire_path = crate::wire::encode_target(&path, true);
        out.push(RequestLine {
            spec: RequestSpec {
                method,
                path: wire_path,
                headers,
                body,
            },
            name,
            weight,
            check_status,
            check_body,
            url,
            line: n + 1,
            call,
            message,
        });
    }
    if out.is_empty() {
        return Err("the request set is empty".into());
    }
    Ok(out)
}

/// A line's `"headers"`: an object of names and values, or a list of `"Name: value"` strings.
fn line_headers(
    obj: &serde_json::Map<String, Value>,
    at: &dyn Fn(String) -> String,
) -> Result<Vec<String>, String> {
    Ok(match obj.get("headers") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| {
                // The name is checked alone: a colon in it would move the split.
                crate::wire::check_header_name(k).map_err(|e| at(e.to_string()))?;
                Ok(match v {
                    Value::String(s) => format!("{k}: {s}"),
                    other => format!("{k}: {other}"),
                })
            })
            .collect::<Result<Vec<_>, String>>()?,
        Some(Value::Array(items)) => items
            .iter()
            .map(|h| {
                h.as_str()
                    .filter(|s| s.contains(':'))
                    .map(str::to_string)
                    .ok_or_else(|| at("headers must be \"Name: value\" strings".into()))
            })
            .collect::<Result<Vec<_>, String>>()?,
        Some(_) => return Err(at("\"headers\" must be an object or a list".into())),
    })
}

/// Where a line's request goes: its own target (`"url"`) or the command line's (`"path"`); a
/// gRPC line's path is its method's, a message's is the upgrade's.
fn line_target(
    url: Option<String>,
    path: Option<String>,
    grpc: bool,
    kind: LineKind,
    at: &dyn Fn(String) -> String,
) -> Result<(Option<String>, String), String> {
    Ok(match (url, path) {
        // A gRPC line's path is its method's, set with its call.
        (None, None) if grpc => (None, "/".to_string()),
        (Some(_), _) | (_, Some(_)) if grpc => {
            return Err(at(
                "a gRPC line names its method with \"call\", not \"path\" or \"url\"".into(),
            ))
        }
        (Some(_), Some(_)) => return Err(at("give \"url\" or \"path\", not both".into())),
        (Some(u), None) => {
            let t = crate::target::TargetUrl::parse(&u).map_err(|e| at(e.to_string()))?;
            if !matches!(
                t.scheme,
                crate::target::Scheme::Http | crate::target::Scheme::Https
            ) {
                return Err(at(format!("\"url\" '{u}' must be http:// or https://")));
            }
            if t.credentials.is_some() {
                return Err(at(format!(
                    "\"url\" '{}' carries user:password@; give an Authorization header instead",
                    t.url
                )));
            }
            (Some(t.url.clone()), url_path_template(&t.path))
        }
        (None, Some(p)) => (None, p),
        // A message goes on the upgraded connection: the path is only the prepared
        // request's (never sent).
        (None, None) if kind == LineKind::Message => (None, "/".to_string()),
        (None, None) => return Err(at("missing \"path\" (or \"url\")".into())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lines_and_defaults() {
        let text = "# a comment\n{\"path\": \"/a\"}\n\n{\"method\": \"post\", \"path\": \"/b\", \"headers\": {\"X\": \"1\"}, \"body\": \"hi\"}\n{\"path\": \"/c\", \"headers\": [\"Y: 2\"]}\n";
        let set = parse_request_set(text).unwrap();
        assert_eq!(set.len(), 3);
        assert_eq!(set[0].method, "GET");
        assert_eq!(set[1].method, "POST");
        assert_eq!(set[1].headers, vec!["X: 1"]);
        assert_eq!(set[1].body, b"hi");
        assert_eq!(set[2].headers, vec!["Y: 2"]);
    }

    #[test]
    fn errors_name_the_line() {
        assert!(parse_request_set("{\"path\": \"/a\"}\nnot json")
            .unwrap_err()
            .starts_with("line 2"));
        assert!(parse_request_set("{\"method\": \"GET\"}")
            .unwrap_err()
            .contains("missing \"path\""));
        assert!(parse_request_set("{\"path\": \"/\", \"bogus\": 1}")
            .unwrap_err()
            .contains("unknown field"));
        assert!(parse_request_set("# only a comment").is_err());
        let lines =
            parse_request_lines("{\"path\": \"/\"}\n{\"url\": \"http://127.0.0.1:9/x y?q=1\"}")
                .unwrap();
        assert_eq!(lines[1].url.as_deref(), Some("http://127.0.0.1:9/x y?q=1"));
        assert_eq!(lines[1].spec.path, "/x%20y?q=1");
        assert_eq!(lines[1].name, "GET http://127.0.0.1:9/x y?q=1");
        for (line, e) in [
            (
                "{\"url\": \"http://h/\", \"path\": \"/\"}",
                "line 1: give \"url\" or \"path\", not both",
            ),
            ("{\"url\": \"/x\"}", "line 1: invalid URL '/x'"),
            (
                "{\"url\": \"tcp://h:1\"}",
                "line 1: \"url\" 'tcp://h:1' must be http:// or https://",
            ),
            (
                "{\"url\": \"http://u:p@h/\"}",
                "line 1: \"url\" 'http://u:***@h/' carries user:password@",
            ),
        ] {
            let got = parse_request_set(line).unwrap_err();
            assert!(got.starts_with(e), "{line}: {got}");
        }
        assert!(parse_request_set("{\"path\": \"/\", \"weight\": 0}")
            .unwrap_err()
            .starts_with("line 1: \"weight\" must be a positive number, got 0"));
        assert!(
            parse_request_set("{\"path\": \"/\", \"check_status\": \"abc\"}")
                .unwrap_err()
                .starts_with("line 1: invalid \"check_status\" 'abc'")
        );
    }

    #[test]
    fn a_websocket_line_is_a_message_with_a_name_and_a_weight() {
        let lines = parse_message_lines(
            "{\"body\":\"ping\",\"name\":\"p\",\"weight\":3}\n# note\n{\"body\":\"{\\\"op\\\":1}\"}\n",
        )
        .unwrap();
        assert_eq!(lines.len(), 2);
        assert_eq!(
            (lines[0].name.as_str(), lines[0].spec.body.as_slice()),
            ("p", b"ping".as_slice())
        );
        assert_eq!(lines[0].weight, Some(3.0));
        assert_eq!(
            (lines[1].name.as_str(), lines[1].spec.body.as_slice()),
            ("line 3", br#"{"op":1}"#.as_slice())
        );
        for (line, says) in [
            (
                r#"{"body":"m","path":"/x"}"#,
                r#"line 1: "path" does not apply to ws://"#,
            ),
            (
                r#"{"body":"m","method":"POST"}"#,
                r#"line 1: "method" does not apply"#,
            ),
            (
                r#"{"body":"m","headers":{"a":"b"}}"#,
                r#""headers" does not apply"#,
            ),
            (
                r#"{"body":"m","check_status":"200"}"#,
                r#""check_status" does not apply"#,
            ),
            (r#"{"body":"m","call":"a.B/C"}"#, r#""call" does not apply"#),
            (
                r#"{"name":"m"}"#,
                r#"line 1: a ws:// or wss:// line needs "body""#,
            ),
            (r#"{"body":5}"#, r#"needs "body", a string"#),
        ] {
            let e = parse_message_lines(line).unwrap_err();
            assert!(e.starts_with("line 1: ") && e.contains(says), "{line}: {e}");
        }
        // The same file for an HTTP target still needs its path.
        assert!(parse_request_lines(r#"{"body":"m"}"#)
            .unwrap_err()
            .contains("missing \"path\""));
    }

    #[test]
    fn grpc_lines_carry_a_call_and_a_message_as_object_or_text() {
        let lines = parse_request_lines(
            "{\"call\": \"a.B/C\", \"message\": {\"x\": 1}}\n\n{\"message\": \"{\\\"n\\\":{{seq}}}\", \"name\": \"t\"}",
        )
        .unwrap();
        assert_eq!(lines[0].call.as_deref(), Some("a.B/C"));
        assert_eq!(lines[0].message.as_deref(), Some(r#"{"x":1}"#));
        assert_eq!(lines[0].name, "a.B/C", "a call line is named by its call");
        assert_eq!((lines[0].line, lines[1].line), (1, 3));
        assert_eq!(lines[1].call, None);
        assert_eq!(lines[1].message.as_deref(), Some(r#"{"n":{{seq}}}"#));
        for (text, want) in [
            (
                r#"{"call": "a.B/C", "path": "/x"}"#,
                "line 1: a gRPC line names its method with \"call\"",
            ),
            (
                r#"{"message": 7}"#,
                "\"message\" must be a JSON object or a string",
            ),
            (r#"{"call": 7}"#, "\"call\" must be a string"),
        ] {
            let err = parse_request_lines(text).unwrap_err();
            assert!(err.contains(want), "{text}: {err}");
        }
    }

    #[test]
    fn names_weights_and_checks() {
        let lines = parse_request_lines(
            "{\"path\": \"/a\", \"name\": \"home\", \"weight\": 3, \"check_status\": \"200\", \"check_body\": \"ok\"}\n{\"method\": \"post\", \"path\": \"/u/{{seq}}\"}",
        )
        .unwrap();
        assert_eq!(lines[0].name, "home");
        assert_eq!(lines[0].weight, Some(3.0));
        assert!(lines[0].check_status.as_ref().unwrap().accepts(200));
        assert!(!lines[0].check_status.as_ref().unwrap().accepts(201));
        assert_eq!(lines[0].check_body.as_deref(), Some("ok"));
        assert_eq!(lines[1].name, "POST /u/{{seq}}");
        assert_eq!(lines[1].weight, None);
    }

    #[test]
    fn nothing_of_a_line_reaches_the_wire_unchecked() {
        // A line break or NUL in a header (name or value) or the path is refused, naming the line.
        for (line, expect) in [
            (r#"{"path": "/a", "headers": {"X": "a\r\nY: b"}}"#, "line 2: invalid header 'X: a\\r\\nY: b': its value holds a line break or NUL"),
            (r#"{"path": "/a", "headers": {"X": "a\nY: b"}}"#, "line 2: invalid header"),
            (r#"{"path": "/a", "headers": {"X": "a\u0000"}}"#, "line 2: invalid header"),
            (r#"{"path": "/a", "headers": ["X: a\rb"]}"#, "line 2: invalid header"),
            (r#"{"path": "/a", "headers": {"X\r\nY": "b"}}"#, "line 2: the header name 'X\\r\\nY' is not a token"),
            (r#"{"path": "/a", "headers": {"X: Y": "b"}}"#, "line 2: the header name 'X: Y' is not a token"),
            (r#"{"path": "/a b\r\nX: y"}"#, "line 2: path '/a b\\r\\nX: y' holds a line break or NUL"),
            (r#"{"method": "GET /x HTTP/1.1\r\n", "path": "/"}"#, "line 2: invalid HTTP method"),
            (r#"{"path": "/", "headers": {"Content-Length": "5"}}"#, "line 2: header 'Content-Length: 5' contradicts the body, which has 0 bytes"),
            (r#"{"path": "/", "body": "abc", "headers": {"Transfer-Encoding": "chunked"}}"#, "line 2: header 'Transfer-Encoding: chunked': candor sends a body with its Content-Length"),
        ] {
            let text = format!("{{\"path\": \"/ok\"}}\n{line}\n");
            let e = parse_request_set(&text).unwrap_err();
            assert!(e.starts_with(expect), "{line}: {e}");
            assert!(!e.contains(['\r', '\n', '\0']), "{e}");
        }
        // A consistent Content-Length is kept (and not duplicated by the builder).
        let set = parse_request_set(r#"{"method": "POST", "path": "/", "body": "hello", "headers": {"Content-Length": "5"}}"#).unwrap();
        assert_eq!(set[0].headers, vec!["Content-Length: 5"]);
    }

    #[test]
    fn paths_are_percent_encoded_and_placeholders_kept() {
        let lines = parse_request_lines(
            "{\"path\": \"/u/bob, jr?q=a b\"}\n{\"path\": \"/x%20y/{{data:name}} z\"}",
        )
        .unwrap();
        assert_eq!(lines[0].spec.path, "/u/bob,%20jr?q=a%20b");
        assert_eq!(lines[1].spec.path, "/x%20y/{{data:name}}%20z");
        // The name stays as the user wrote it.
        assert_eq!(lines[0].name, "GET /u/bob, jr?q=a b");
    }
}
