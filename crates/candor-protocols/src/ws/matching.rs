//! Which request a WebSocket reply answers (`--ws-match`): by default the oldest unanswered
//! message on its connection (echo servers and in-order request/response protocols); with
//! `json:FIELD`, candor writes a unique number into each message's top-level `FIELD` and reads
//! it back from the reply, so an out-of-order server is matched right, and a reply whose number
//! matches nothing in flight is a protocol error, never pinned on the wrong message.

use candor_stream::json_key::{leading_number, value_of};
use std::fmt;
use std::str::FromStr;

/// Why a message body cannot carry the number `--ws-match json:FIELD` writes; `origin` says
/// where the body came from (`--body`, a request file's line).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BodyError {
    #[error("{origin}: --ws-match json:{field} needs a JSON object message: {reason}")]
    NotJson {
        origin: String,
        field: String,
        reason: String,
    },
    #[error("{origin}: --ws-match json:{field} needs a JSON object message, not {kind}")]
    NotObject {
        origin: String,
        field: String,
        kind: &'static str,
    },
    #[error("{origin}: the message already has a field '{field}', which --ws-match json:{field} fills with a number of its own")]
    FieldTaken { origin: String, field: String },
}

/// How replies are matched to messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WsMatch {
    /// The next message received answers the oldest unanswered one.
    InOrder,
    /// By a number candor writes into this top-level JSON field of each message.
    JsonField(JsonField),
}

/// A JSON field name and its key as it appears in JSON text (`"id"`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonField {
    name: String,
    quoted: Vec<u8>,
}

impl JsonField {
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Checks a message body before the run: a JSON object that does not already have the
    /// field (candor writes it).
    pub fn check_body(&self, body: &[u8], origin: &str) -> Result<(), BodyError> {
        let (origin, field) = (origin.to_string(), self.name.clone());
        let value: serde_json::Value = match serde_json::from_slice(body) {
            Ok(value) => value,
            Err(e) => {
                let reason = e.to_string();
                return Err(BodyError::NotJson {
                    origin,
                    field,
                    reason,
                });
            }
        };
        let Some(object) = value.as_object() else {
            let kind = kind_of(&value);
            return Err(BodyError::NotObject {
                origin,
                field,
                kind,
            });
        };
        if object.contains_key(&self.name) {
            return Err(BodyError::FieldTaken { origin, field });
        }
        Ok(())
    }

    /// Writes `body` (a JSON object, checked by [`JsonField::check_body`]) into `out` with
    /// `"FIELD":seq` as its first member.
    pub fn write_with_number(&self, out: &mut Vec<u8>, body: &[u8], seq: u64) {
        let open = body.iter().position(|&b| b == b'{').unwrap_or(0);
        let rest = &body[open + 1..];
        let empty = rest.trim_ascii_start().first() == Some(&b'}');
        out.extend_from_slice(&body[..=open]);
        out.extend_from_slice(&self.quoted);
        out.push(b':');
        let mut digits = [0u8; 20];
        let mut n = seq;
        let mut at = digits.len();
        loop {
            at -= 1;
            digits[at] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        out.extend_from_slice(&digits[at..]);
        if !empty {
            out.push(b',');
        }
        out.extend_from_slice(rest);
    }

    /// The number a reply carries in the field (the reply's first bytes suffice when the
    /// field comes early, as servers that echo it do).
    pub fn number_in(&self, reply: &[u8]) -> Option<u64> {
        value_of(reply, &self.quoted).and_then(leading_number)
    }
}

fn kind_of(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

impl FromStr for WsMatch {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == "order" {
            return Ok(WsMatch::InOrder);
        }
        let Some(name) = s.strip_prefix("json:") else {
            return Err(format!(
                "invalid --ws-match '{s}': expected 'order' or 'json:FIELD' (e.g. json:id)"
            ));
        };
        let plain = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !plain {
            return Err(format!(
                "invalid --ws-match '{s}': the field name must be letters, digits, '_' or '-'"
            ));
        }
        Ok(WsMatch::JsonField(JsonField {
            name: name.to_string(),
            quoted: format!("\"{name}\"").into_bytes(),
        }))
    }
}

impl fmt::Display for WsMatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WsMatch::InOrder => f.write_str("order"),
            WsMatch::JsonField(j) => write!(f, "json:{}", j.name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(name: &str) -> JsonField {
        match format!("json:{name}").parse().unwrap() {
            WsMatch::JsonField(j) => j,
            WsMatch::InOrder => unreachable!(),
        }
    }

    #[test]
    fn the_flag_reads_order_or_a_plain_field_name() {
        assert_eq!("order".parse::<WsMatch>(), Ok(WsMatch::InOrder));
        assert_eq!(field("req_id").name(), "req_id");
        for bad in ["json:", "json:a b", "json:\"x\"", "xml:id", ""] {
            assert!(bad.parse::<WsMatch>().is_err(), "{bad}");
        }
        assert_eq!(WsMatch::JsonField(field("id")).to_string(), "json:id");
    }

    #[test]
    fn the_number_goes_first_and_comes_back_from_the_reply() {
        let id = field("id");
        let mut out = Vec::new();
        id.write_with_number(&mut out, br#" {"op": "get", "k": [1, 2]}"#, 42);
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["id"], 42);
        assert_eq!(v["op"], "get");
        out.clear();
        id.write_with_number(&mut out, b"{ }", 0);
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v, serde_json::json!({"id": 0}));
        assert_eq!(id.number_in(br#"{"ok":true,"id":42}"#), Some(42));
        assert_eq!(id.number_in(br#"{"ok":true,"msg":"\"id\":5"}"#), None);
        assert_eq!(id.number_in(br#"{"id":"42"}"#), None);
    }

    #[test]
    fn bodies_that_cannot_carry_the_number_are_refused_before_the_run() {
        let id = field("id");
        assert!(id.check_body(br#"{"a":1}"#, "--body").is_ok());
        assert_eq!(
            id.check_body(br#"{"id":1}"#, "--body"),
            Err(BodyError::FieldTaken {
                origin: "--body".into(),
                field: "id".into()
            })
        );
        let e = id
            .check_body(br#"{"id":1}"#, "--body")
            .unwrap_err()
            .to_string();
        assert!(e.contains("already has a field 'id'"), "{e}");
        let e = id
            .check_body(b"[1]", "requests.jsonl line 3")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("requests.jsonl line 3:") && e.contains("not an array"),
            "{e}"
        );
        assert!(id
            .check_body(b"{", "--body")
            .unwrap_err()
            .to_string()
            .contains("JSON object"));
    }
}
