//! Request messages: JSON text (`--body`, `--body-file`, or a template's filled JSON) encoded
//! as protobuf with prost-reflect into gRPC's framing, in a buffer the caller owns and reuses.
//!
//! A static body is encoded once (`StaticMessage`); the HTTP/2 protocol then sends the same
//! bytes every time. A templated body goes through `RequestEncoder::encode_framed` per request:
//! the engine's template fill writes the JSON into its own buffer, and the encoder appends the
//! framed message to another. That parse allocates (prost-reflect builds a `DynamicMessage`
//! per call; docs/grpc.md states the measured cost, `benches/encode.rs`).

use prost::Message as _;
use prost_reflect::{DynamicMessage, MessageDescriptor};
use thiserror::Error;

use crate::length_prefix::{append_framed, FramedError};

/// Why JSON does not fit the request's message type.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum MessageError {
    /// At a field: its path (`inner.n`, `tags[2]`) and why, in serde's words.
    #[error("JSON for {message}: field `{field}`: {why}")]
    Field {
        message: String,
        field: String,
        why: String,
    },
    /// Not about one field: not JSON, not an object, trailing text.
    #[error("JSON for {message}: {why}")]
    Document { message: String, why: String },
    #[error("message for {message} is {len} bytes, longer than gRPC's 4-byte length allows")]
    TooLong { message: String, len: usize },
}

/// Encodes JSON to framed protobuf messages of one type.
#[derive(Debug, Clone)]
pub struct RequestEncoder {
    descriptor: MessageDescriptor,
}

impl RequestEncoder {
    pub fn new(descriptor: MessageDescriptor) -> RequestEncoder {
        RequestEncoder { descriptor }
    }

    pub fn descriptor(&self) -> &MessageDescriptor {
        &self.descriptor
    }

    /// The message `json` describes, in protobuf's JSON mapping (field names or their
    /// lowerCamelCase JSON names, enums by name or number, 64-bit integers as numbers or
    /// strings, bytes as base64); unknown fields are refused.
    pub fn parse(&self, json: &[u8]) -> Result<DynamicMessage, MessageError> {
        // The path of the failing field is tracked only to explain a failure: the per-request
        // path of a templated body parses untracked (a third of the time and half the allocations
        // saved, benches/encode.rs).
        let mut deserializer = serde_json::Deserializer::from_slice(json);
        if let Ok(message) = DynamicMessage::deserialize(self.descriptor.clone(), &mut deserializer)
        {
            if deserializer.end().is_ok() {
                return Ok(message);
            }
        }
        Err(self.explain(json))
    }

    /// Why `json` does not fit: parsed again with the path of each field tracked.
    fn explain(&self, json: &[u8]) -> MessageError {
        let mut deserializer = serde_json::Deserializer::from_slice(json);
        let mut track = serde_path_to_error::Track::new();
        let parsed = DynamicMessage::deserialize(
            self.descriptor.clone(),
            serde_path_to_error::Deserializer::new(&mut deserializer, &mut track),
        );
        if let Err(error) = parsed {
            let path = track.path().to_string();
            let why = error.to_string().replace('\n', " ");
            return if matches!(path.as_str(), "" | "." | "?") {
                MessageError::Document {
                    message: self.descriptor.full_name().to_string(),
                    why,
                }
            } else {
                MessageError::Field {
                    message: self.descriptor.full_name().to_string(),
                    field: path,
                    why,
                }
            };
        }
        MessageError::Document {
            message: self.descriptor.full_name().to_string(),
            why: match deserializer.end() {
                Err(error) => error.to_string(),
                Ok(()) => "does not parse the same way twice".to_string(),
            },
        }
    }

    /// Appends `json`'s message to `out`, framed (flag 0, length, protobuf). `out` is left as it
    /// was when the JSON does not fit.
    pub fn encode_framed(&self, json: &[u8], out: &mut Vec<u8>) -> Result<(), MessageError> {
        let message = self.parse(json)?;
        append_framed(out, |buffer| {
            message
                .encode(buffer)
                .map_err(|_| unreachable!("a Vec grows as needed"))
        })
        .map_err(|error: FramedError<()>| match error {
            FramedError::TooLong(len) => MessageError::TooLong {
                message: self.descriptor.full_name().to_string(),
                len,
            },
            FramedError::Encode(()) => unreachable!("a Vec grows as needed"),
        })
    }
}

/// A request body that never changes: encoded and framed once, before the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaticMessage {
    framed: Vec<u8>,
}

impl StaticMessage {
    pub fn from_json(
        descriptor: MessageDescriptor,
        json: &[u8],
    ) -> Result<StaticMessage, MessageError> {
        let mut framed = Vec::new();
        RequestEncoder::new(descriptor).encode_framed(json, &mut framed)?;
        Ok(StaticMessage { framed })
    }

    /// The DATA frame's payload: prefix and message.
    pub fn framed(&self) -> &[u8] {
        &self.framed
    }
}

/// A request body with placeholders: per request, the engine's template fill writes the JSON
/// into this message's scratch buffer (reused, so the text itself allocates nothing once grown),
/// then the JSON is encoded and framed onto the caller's buffer. The encoding allocates: a
/// `DynamicMessage` is built per call (docs/grpc.md, `benches/encode.rs`).
#[derive(Debug, Clone)]
pub struct TemplatedMessage {
    encoder: RequestEncoder,
    json: Vec<u8>,
}

/// Why one templated request could not be made.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TemplatedError<E> {
    /// The template fill failed (its own error).
    #[error("{0}")]
    Fill(E),
    /// The filled JSON does not fit the message type (a data value that breaks the JSON, say).
    #[error("{0}")]
    Message(MessageError),
}

impl TemplatedMessage {
    pub fn new(descriptor: MessageDescriptor) -> TemplatedMessage {
        TemplatedMessage {
            encoder: RequestEncoder::new(descriptor),
            json: Vec::new(),
        }
    }

    /// Appends one request's framed message to `out`: `fill` writes the JSON (into an empty
    /// buffer), which is then encoded. `out` is left as it was on an error.
    pub fn encode<E>(
        &mut self,
        fill: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
        out: &mut Vec<u8>,
    ) -> Result<(), TemplatedError<E>> {
        self.json.clear();
        fill(&mut self.json).map_err(TemplatedError::Fill)?;
        self.encoder
            .encode_framed(&self.json, out)
            .map_err(TemplatedError::Message)
    }

    /// The JSON of the last `encode`, for an error's excerpt.
    pub fn last_json(&self) -> &[u8] {
        &self.json
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost_reflect::Value;

    fn encoder() -> RequestEncoder {
        let pool = crate::bench_descriptor_pool();
        RequestEncoder::new(
            pool.get_message_by_name("candor.bench.EchoRequest")
                .unwrap(),
        )
    }

    #[test]
    fn json_encodes_to_framed_protobuf_that_decodes_back() {
        let json = br#"{"name":"x","seq":"42","payload":"AAEC","kind":"KIND_SLOW","tags":["a","b"],"inner":{"n":-3}}"#;
        let mut out = b"earlier".to_vec();
        encoder().encode_framed(json, &mut out).unwrap();
        let framed = &out[7..];
        assert_eq!(framed[0], 0);
        let len = u32::from_be_bytes(framed[1..5].try_into().unwrap()) as usize;
        assert_eq!(len, framed.len() - 5);
        let back = DynamicMessage::decode(encoder().descriptor().clone(), &framed[5..]).unwrap();
        assert_eq!(back.get_field_by_name("name").unwrap().as_str(), Some("x"));
        assert_eq!(back.get_field_by_name("seq").unwrap().as_i64(), Some(42));
        assert_eq!(
            back.get_field_by_name("payload")
                .unwrap()
                .as_bytes()
                .unwrap()
                .as_ref(),
            [0, 1, 2]
        );
        assert_eq!(
            back.get_field_by_name("kind").unwrap().as_enum_number(),
            Some(2)
        );
        assert_eq!(
            back.get_field_by_name("tags").unwrap().as_list().unwrap(),
            [Value::String("a".into()), Value::String("b".into())]
        );
        let inner = back.get_field_by_name("inner").unwrap();
        assert_eq!(
            inner
                .as_message()
                .unwrap()
                .get_field_by_name("n")
                .unwrap()
                .as_i32(),
            Some(-3)
        );
    }

    #[test]
    fn the_encoding_is_protobufs_own() {
        // field 1 (name), length-delimited "hi"; field 2 (seq) varint 5.
        let message =
            StaticMessage::from_json(encoder().descriptor().clone(), br#"{"name":"hi","seq":5}"#)
                .unwrap();
        assert_eq!(
            message.framed(),
            [0, 0, 0, 0, 6, 0x0a, 2, b'h', b'i', 0x10, 5]
        );
        let empty = StaticMessage::from_json(encoder().descriptor().clone(), b"{}").unwrap();
        assert_eq!(empty.framed(), [0, 0, 0, 0, 0]);
    }

    #[test]
    fn templated_messages_encode_what_the_fill_wrote_each_time() {
        use std::io::Write as _;
        let descriptor = encoder().descriptor().clone();
        let mut templated = TemplatedMessage::new(descriptor.clone());
        let mut out = Vec::new();
        for seq in [1u64, 22, 333] {
            out.clear();
            templated
                .encode(
                    |json| write!(json, r#"{{"name":"user-{seq}","seq":{seq}}}"#),
                    &mut out,
                )
                .unwrap();
            let back = DynamicMessage::decode(descriptor.clone(), &out[5..]).unwrap();
            assert_eq!(
                back.get_field_by_name("seq").unwrap().as_i64(),
                Some(seq as i64)
            );
            let name = format!("user-{seq}");
            assert_eq!(
                back.get_field_by_name("name").unwrap().as_str(),
                Some(name.as_str())
            );
        }
        // A filled value that breaks the JSON fails that request only; the buffer is kept.
        let before = out.clone();
        let error = templated
            .encode(|json| write!(json, r#"{{"name":"a"b"}}"#), &mut out)
            .unwrap_err();
        assert!(
            matches!(
                error,
                TemplatedError::Message(MessageError::Document { .. })
            ),
            "{error}"
        );
        assert_eq!(templated.last_json(), br#"{"name":"a"b"}"#);
        assert_eq!(out, before);
        let error = templated
            .encode(|_| Err("no such row"), &mut out)
            .unwrap_err();
        assert_eq!(error, TemplatedError::Fill("no such row"));
    }

    #[test]
    fn json_that_does_not_fit_names_the_field_and_why() {
        let cases: [(&[u8], &str); 6] = [
            (
                br#"{"name": 5}"#,
                "field `name`: invalid type: integer `5`, expected a string",
            ),
            (br#"{"inner": {"n": "x"}}"#, "field `inner.n`"),
            (br#"{"nmae": "x"}"#, "unrecognized field name 'nmae'"),
            (br#"{"kind": "KIND_NOPE"}"#, "field `kind`"),
            (br#"{"tags": ["a", 1]}"#, "field `tags[1]`"),
            (br#"{"seq": 1.5}"#, "field `seq`"),
        ];
        for (json, expected) in cases {
            let error = encoder().parse(json).unwrap_err().to_string();
            assert!(
                error.contains(expected),
                "{}: {error}",
                String::from_utf8_lossy(json)
            );
            assert!(
                error.starts_with("JSON for candor.bench.EchoRequest: "),
                "{error}"
            );
            assert!(!error.contains('\n'));
        }
        for (json, expected) in [
            (&b"[1]"[..], "expected"),
            (b"{", "EOF"),
            (b"{} x", "trailing"),
            (b"", "EOF"),
        ] {
            let error = encoder().parse(json).unwrap_err();
            assert!(matches!(error, MessageError::Document { .. }), "{error}");
            assert!(error.to_string().contains(expected), "{error}");
        }
        let mut out = b"kept".to_vec();
        assert!(encoder().encode_framed(br#"{"name":1}"#, &mut out).is_err());
        assert_eq!(out, b"kept");
    }
}
