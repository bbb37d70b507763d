//! The request headers of a gRPC call, as name/value data for the HTTP/2 protocol's HPACK
//! encoder: the pseudo-headers, `content-type: application/grpc`, `te: trailers`, the
//! `grpc-timeout` of `-T`, and the metadata of `-H`, each checked once before any load.

use base64::Engine as _;
use thiserror::Error;

use crate::timeout::GrpcTimeout;

/// One header field of a call, in the order it is sent (pseudo-headers first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderField {
    pub name: String,
    pub value: Vec<u8>,
}

impl HeaderField {
    fn new(name: &str, value: &[u8]) -> HeaderField {
        HeaderField {
            name: name.to_string(),
            value: value.to_vec(),
        }
    }
}

/// One `-H 'key: value'` metadata entry, checked against gRPC's rules for custom metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Metadata {
    name: String,
    value: String,
}

/// Why a `-H` line is not gRPC metadata.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum MetadataError {
    #[error("-H `{}`: expected `key: value`", shown(.0))]
    NoColon(String),
    #[error("-H `{}`: metadata key `{}` may hold only 0-9 a-z _ - . (keys are lowercased)", shown(.line), shown(.key))]
    BadKey { line: String, key: String },
    #[error("-H `{}`: `{key}` is set by candor for every gRPC call and cannot be given", shown(.line))]
    Reserved { line: String, key: String },
    #[error(
        "-H `{}`: value must be printable ASCII (binary metadata goes in a `-bin` key, base64)", shown(.line)
    )]
    BadValue { line: String },
    #[error("-H `{}`: a `-bin` key's value must be base64", shown(.line))]
    NotBase64 { line: String },
}

/// The user's text as an error quotes it: a line break shows as `\r` or `\n`, so the error stays
/// one line and names the byte that is wrong instead of acting on it.
pub(crate) fn shown(text: &str) -> String {
    text.escape_debug().to_string()
}

/// Keys candor sends itself, or that HTTP/2 forbids: giving them would corrupt the call.
fn reserved(key: &str) -> bool {
    matches!(
        key,
        "content-type"
            | "te"
            | "host"
            | "connection"
            | "keep-alive"
            | "proxy-connection"
            | "transfer-encoding"
            | "upgrade"
    ) || key.starts_with("grpc-")
}

impl Metadata {
    /// Parses `key: value`; the key is lowercased (HTTP/2 sends lowercase names).
    pub fn parse(line: &str) -> Result<Metadata, MetadataError> {
        let (key, value) = line
            .split_once(':')
            .ok_or_else(|| MetadataError::NoColon(line.to_string()))?;
        let key = key.trim().to_ascii_lowercase();
        let value = value.trim().to_string();
        if key.is_empty()
            || !key
                .bytes()
                .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase() || b"_-.".contains(&b))
        {
            return Err(MetadataError::BadKey {
                line: line.to_string(),
                key,
            });
        }
        if reserved(&key) {
            return Err(MetadataError::Reserved {
                line: line.to_string(),
                key,
            });
        }
        if key.ends_with("-bin") {
            let padded = base64::engine::general_purpose::STANDARD_NO_PAD
                .decode(value.trim_end_matches('='));
            if padded.is_err() {
                return Err(MetadataError::NotBase64 {
                    line: line.to_string(),
                });
            }
        } else if !value.bytes().all(|b| (0x20..=0x7e).contains(&b)) {
            return Err(MetadataError::BadValue {
                line: line.to_string(),
            });
        }
        Ok(Metadata { name: key, value })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn value(&self) -> &str {
        &self.value
    }
}

/// Whether the call goes over TLS (`grpcs://`): its `:scheme`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallScheme {
    Http,
    Https,
}

/// The header fields of a call to `path` (`/package.Service/Method`) on `authority`
/// (`host:port`), with the metadata in the order given and `grpc-timeout` when `-T` is set.
/// Built once per method before the run; the HTTP/2 protocol encodes them into its HEADERS.
pub fn request_headers(
    scheme: CallScheme,
    authority: &str,
    path: &str,
    timeout: Option<GrpcTimeout>,
    metadata: &[Metadata],
) -> Vec<HeaderField> {
    let mut fields = vec![
        HeaderField::new(":method", b"POST"),
        HeaderField::new(
            ":scheme",
            match scheme {
                CallScheme::Http => b"http",
                CallScheme::Https => b"https",
            },
        ),
        HeaderField::new(":path", path.as_bytes()),
        HeaderField::new(":authority", authority.as_bytes()),
        HeaderField::new("content-type", b"application/grpc"),
        HeaderField::new("te", b"trailers"),
    ];
    if let Some(timeout) = timeout {
        fields.push(HeaderField::new("grpc-timeout", timeout.as_bytes()));
    }
    for entry in metadata {
        fields.push(HeaderField::new(&entry.name, entry.value.as_bytes()));
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_break_in_a_metadata_line_is_quoted_not_echoed() {
        for (line, want) in [
            (
                "x-a: b\r\nx-evil: 1",
                "-H `x-a: b\\r\\nx-evil: 1`: value must be printable ASCII",
            ),
            (
                "x\ny: 1",
                "-H `x\\ny: 1`: metadata key `x\\ny` may hold only",
            ),
            ("no colon\r\n", "-H `no colon\\r\\n`: expected `key: value`"),
            (
                "k-bin: \n!",
                "-H `k-bin: \\n!`: a `-bin` key's value must be base64",
            ),
        ] {
            let e = Metadata::parse(line).unwrap_err().to_string();
            assert!(e.starts_with(want), "{e}");
            assert!(!e.contains('\n') && !e.contains('\r'), "{e}");
        }
    }

    #[test]
    fn a_call_carries_the_grpc_headers_then_timeout_then_metadata() {
        let metadata = [
            Metadata::parse("Authorization: Bearer abc").unwrap(),
            Metadata::parse("trace-bin: AAEC").unwrap(),
        ];
        let fields = request_headers(
            CallScheme::Https,
            "api.example:443",
            "/candor.bench.Bench/Echo",
            Some(GrpcTimeout::from_ns(2_000_000_000)),
            &metadata,
        );
        let pairs: Vec<(&str, &str)> = fields
            .iter()
            .map(|f| (f.name.as_str(), std::str::from_utf8(&f.value).unwrap()))
            .collect();
        assert_eq!(
            pairs,
            [
                (":method", "POST"),
                (":scheme", "https"),
                (":path", "/candor.bench.Bench/Echo"),
                (":authority", "api.example:443"),
                ("content-type", "application/grpc"),
                ("te", "trailers"),
                ("grpc-timeout", "2000000u"),
                ("authorization", "Bearer abc"),
                ("trace-bin", "AAEC"),
            ]
        );
        let plain = request_headers(CallScheme::Http, "h:1", "/p.S/M", None, &[]);
        assert_eq!(plain[1].value, b"http");
        assert!(plain.iter().all(|f| f.name != "grpc-timeout"));
    }

    #[test]
    fn bad_metadata_is_refused_with_the_reason() {
        let cases = [
            ("novalue", "expected `key: value`"),
            ("bad key: v", "may hold only"),
            ("Ünï: v", "may hold only"),
            (": v", "may hold only"),
            ("content-type: application/json", "set by candor"),
            ("TE: gzip", "set by candor"),
            ("grpc-timeout: 1S", "set by candor"),
            ("x: caf\u{e9}", "printable ASCII"),
            ("x-bin: not base64!", "base64"),
        ];
        for (line, why) in cases {
            let error = Metadata::parse(line).unwrap_err().to_string();
            assert!(error.contains(why), "{line}: {error}");
            assert!(!error.contains('\n'));
        }
        assert_eq!(Metadata::parse("x-bin: AAE=").unwrap().value(), "AAE=");
        assert_eq!(Metadata::parse("X-Id:  42 ").unwrap().name(), "x-id");
    }
}
