//! Templated requests: `{{seq}}`, `{{random:LO:HI}}`, `{{uuid}}` and `{{data:COLUMN}}` in the
//! path, header values and body, compiled once before the run and filled per request into
//! buffers sized before the run, so that filling allocates nothing.
//!
//! Every random value of a request comes from a generator seeded by `--seed` and the request's
//! `seq` (its index in the whole schedule), so a request's values do not depend on which thread
//! or shard sends it: a run is reproducible whatever its threads and shards.

use super::data::{DataOrder, DataTable};
use rand_xoshiro::rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::io::Write as _;
use thiserror::Error;

#[derive(Debug, Error, PartialEq)]
pub enum TemplateError {
    #[error("{what}: unknown placeholder '{{{{{name}}}}}' (known: seq, random:LO:HI, uuid, data:COLUMN)")]
    Unknown { what: String, name: String },
    #[error("{what}: '{{{{' without a closing '}}}}'")]
    Unclosed { what: String },
    #[error("{what}: invalid '{{{{{text}}}}}': expected random:LO:HI with integers LO <= HI")]
    Random { what: String, text: String },
    #[error("{what}: '{{{{data:{column}}}}}' but no --data file is given")]
    NoData { what: String, column: String },
    #[error(
        "{what}: '{{{{data:{column}}}}}' names no column of the --data file (columns: {columns})"
    )]
    MissingColumn {
        what: String,
        column: String,
        columns: String,
    },
    #[error("{what}: a templated body gets its Content-Length from candor; remove the Content-Length header")]
    ContentLength { what: String },
}

/// Where in a request a template's text stands, which decides what a value filled into it must be
/// or becomes on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The body, and the fixed text of a head: values go in as they are.
    Raw,
    /// The path and query: a value is percent-encoded as one path segment.
    Path,
    /// A header name: a value must be a token.
    HeaderName,
    /// A header value: a value must hold no line break or NUL.
    HeaderValue,
    /// JSON text (a gRPC message's): a value filled inside one of its strings is JSON-escaped,
    /// so a quote or a backslash in a data cell stays in its string; outside strings values go
    /// in as they are (a number, or a cell holding JSON).
    Json,
    /// Inside a JSON string (what [`Part::Json`] compiles a placeholder in a string to).
    JsonString,
}

/// A filled value could not be sent: a data value with a line break or NUL in a header value, or
/// one that is not a token in a header name. The request fails in class `template`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unsendable;

#[derive(Debug, Clone, PartialEq)]
enum Piece {
    /// A range of the template's literal bytes.
    Literal(usize, usize),
    Seq,
    Random {
        lo: i64,
        hi: i64,
    },
    Uuid,
    Data(usize, Part),
}

/// A compiled template: literal bytes and the placeholders between them.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    literal: Box<[u8]>,
    pieces: Box<[Piece]>,
    /// The longest text a fill can produce.
    max_len: usize,
}

/// What one request's placeholders are filled from.
pub struct Fill<'a> {
    /// The request's index in the whole schedule (0-based, unique across threads and shards).
    pub seq: u64,
    /// The data row of this request.
    pub row: usize,
    pub rng: &'a mut Xoshiro256PlusPlus,
    pub data: Option<&'a DataTable>,
}

/// The generator of request `seq`'s random values.
#[inline]
pub fn request_rng(seed: u64, seq: u64) -> Xoshiro256PlusPlus {
    // seed_from_u64 runs SplitMix64 over its input, so neighbouring seqs get unrelated streams.
    Xoshiro256PlusPlus::seed_from_u64(seed ^ seq.wrapping_mul(0xD1B5_4A32_D192_ED03))
}

/// The data row request `seq` takes.
#[inline]
pub fn data_row(order: DataOrder, rows: usize, seq: u64, rng: &mut Xoshiro256PlusPlus) -> usize {
    match order {
        DataOrder::Sequential => (seq % rows as u64) as usize,
        DataOrder::Random => uniform_below(rng, rows as u64) as usize,
    }
}

/// A uniform integer in `0..n` (n > 0), unbiased: Lemire's multiply-and-reject. Written here
/// because `rand_core` (all the workspace has) offers no ranges, and this is the whole of it.
#[inline]
pub fn uniform_below(rng: &mut Xoshiro256PlusPlus, n: u64) -> u64 {
    let threshold = n.wrapping_neg() % n;
    loop {
        let m = (rng.next_u64() as u128) * (n as u128);
        if (m as u64) >= threshold {
            return (m >> 64) as u64;
        }
    }
}

impl Template {
    /// Compiles `text` whose values go in as they are (a body); `what` names where it came from
    /// in errors (e.g. "-H value", "line 3 path").
    pub fn compile(
        text: &str,
        data: Option<&DataTable>,
        what: &str,
    ) -> Result<Template, TemplateError> {
        Self::compile_parts(&[(text, Part::Raw)], data, what)
    }

    /// Compiles JSON `text` (see [`Part::Json`]).
    pub fn compile_json(
        text: &str,
        data: Option<&DataTable>,
        what: &str,
    ) -> Result<Template, TemplateError> {
        Self::compile_parts(&[(text, Part::Json)], data, what)
    }

    /// Bytes sent as they are, whatever they hold (a gRPC request's protobuf message: its bytes
    /// may contain `{{` without meaning a placeholder).
    pub fn literal(bytes: &[u8]) -> Template {
        Template {
            literal: bytes.into(),
            pieces: if bytes.is_empty() {
                Box::new([])
            } else {
                Box::new([Piece::Literal(0, bytes.len())])
            },
            max_len: bytes.len(),
        }
    }

    /// Compiles the concatenation of `parts`, each in its own [`Part`] of a request.
    pub fn compile_parts(
        parts: &[(&str, Part)],
        data: Option<&DataTable>,
        what: &str,
    ) -> Result<Template, TemplateError> {
        let mut literal = Vec::new();
        let mut pieces = Vec::new();
        let mut max_len = 0;
        for &(text, part) in parts {
            Self::compile_part(
                text,
                part,
                data,
                what,
                &mut literal,
                &mut pieces,
                &mut max_len,
            )?;
        }
        max_len += literal.len();
        Ok(Template {
            literal: literal.into(),
            pieces: pieces.into(),
            max_len,
        })
    }

    fn compile_part(
        text: &str,
        part: Part,
        data: Option<&DataTable>,
        what: &str,
        literal: &mut Vec<u8>,
        pieces: &mut Vec<Piece>,
        max_len: &mut usize,
    ) -> Result<(), TemplateError> {
        let mut rest = text;
        // JSON: whether the text so far left a string open (placeholders do not change it).
        let mut json = JsonScan::default();
        let push_literal =
            |json: &mut JsonScan, literal: &mut Vec<u8>, pieces: &mut Vec<Piece>, s: &str| {
                json.scan(s.as_bytes());
                if !s.is_empty() {
                    let start = literal.len();
                    literal.extend_from_slice(s.as_bytes());
                    pieces.push(Piece::Literal(start, literal.len()));
                }
            };
        while let Some(open) = rest.find("{{") {
            push_literal(&mut json, literal, pieces, &rest[..open]);
            let after = &rest[open + 2..];
            let close = after
                .find("}}")
                .ok_or_else(|| TemplateError::Unclosed { what: what.into() })?;
            let inner = after[..close].trim();
            let (name, args) = inner.split_once(':').unwrap_or((inner, ""));
            let piece = match (name.trim(), args) {
                ("seq", "") => Piece::Seq,
                ("uuid", "") => Piece::Uuid,
                ("random", args) => {
                    let bad = || TemplateError::Random {
                        what: what.into(),
                        text: inner.into(),
                    };
                    let (lo, hi) = args.split_once(':').ok_or_else(bad)?;
                    let lo: i64 = lo.trim().parse().map_err(|_| bad())?;
                    let hi: i64 = hi.trim().parse().map_err(|_| bad())?;
                    if lo > hi {
                        return Err(bad());
                    }
                    Piece::Random { lo, hi }
                }
                ("data", column) if !column.is_empty() => {
                    let column = column.trim();
                    let table = data.ok_or_else(|| TemplateError::NoData {
                        what: what.into(),
                        column: column.into(),
                    })?;
                    let index =
                        table
                            .column(column)
                            .ok_or_else(|| TemplateError::MissingColumn {
                                what: what.into(),
                                column: column.into(),
                                columns: table.columns().join(", "),
                            })?;
                    let part = match part {
                        Part::Json if json.in_string => Part::JsonString,
                        Part::Json => Part::Raw,
                        other => other,
                    };
                    Piece::Data(index, part)
                }
                _ => {
                    return Err(TemplateError::Unknown {
                        what: what.into(),
                        name: inner.into(),
                    })
                }
            };
            *max_len += match &piece {
                Piece::Seq => 20,
                Piece::Random { .. } => 20,
                Piece::Uuid => 36,
                // Percent-encoding triples a byte at most.
                Piece::Data(c, Part::Path) => 3 * data.map_or(0, |t| t.widest(*c)),
                // `\u00XX` is the longest escape of a byte.
                Piece::Data(c, Part::JsonString) => 6 * data.map_or(0, |t| t.widest(*c)),
                Piece::Data(c, _) => data.map_or(0, |t| t.widest(*c)),
                Piece::Literal(..) => 0,
            };
            pieces.push(piece);
            rest = &after[close + 2..];
        }
        push_literal(&mut json, literal, pieces, rest);
        Ok(())
    }

    /// Whether the text has no placeholder (it fills to itself).
    pub fn is_constant(&self) -> bool {
        self.pieces.iter().all(|p| matches!(p, Piece::Literal(..)))
    }

    /// Whether it takes values from the data file.
    pub fn uses_data(&self) -> bool {
        self.pieces.iter().any(|p| matches!(p, Piece::Data(..)))
    }

    /// The longest text a fill can produce.
    pub fn max_len(&self) -> usize {
        self.max_len
    }

    /// Appends this template filled for one request to `out` (which must have `max_len` spare
    /// capacity for the fill to allocate nothing). A value that cannot stand where it goes (see
    /// [`Unsendable`]) stops the fill: what `out` holds then is not to be sent.
    pub fn fill_into(&self, fill: &mut Fill<'_>, out: &mut Vec<u8>) -> Result<(), Unsendable> {
        for piece in self.pieces.iter() {
            match piece {
                Piece::Literal(a, b) => out.extend_from_slice(&self.literal[*a..*b]),
                // Integers are formatted by core::fmt into the Vec's spare capacity: no allocation.
                Piece::Seq => {
                    let _ = write!(out, "{}", fill.seq);
                }
                Piece::Random { lo, hi } => {
                    let span = (*hi as i128 - *lo as i128) as u128 + 1;
                    let v = if span > u64::MAX as u128 {
                        fill.rng.next_u64() as i64
                    } else {
                        (*lo as i128 + uniform_below(fill.rng, span as u64) as i128) as i64
                    };
                    let _ = write!(out, "{v}");
                }
                Piece::Uuid => {
                    let mut bytes = [0u8; 16];
                    bytes[..8].copy_from_slice(&fill.rng.next_u64().to_le_bytes());
                    bytes[8..].copy_from_slice(&fill.rng.next_u64().to_le_bytes());
                    let id = uuid::Builder::from_random_bytes(bytes).into_uuid();
                    let mut text = [0u8; uuid::fmt::Hyphenated::LENGTH];
                    out.extend_from_slice(id.hyphenated().encode_lower(&mut text).as_bytes());
                }
                Piece::Data(c, part) => {
                    let Some(t) = fill.data else { continue };
                    let value = t.cell(fill.row, *c);
                    match part {
                        Part::Raw | Part::Json => out.extend_from_slice(value),
                        Part::JsonString => json_escape_into(value, out),
                        Part::Path => candor_wire::wire::encode_segment_into(value, out),
                        Part::HeaderValue
                            if value
                                .iter()
                                .any(|&b| candor_wire::wire::forbidden_in_value(b)) =>
                        {
                            return Err(Unsendable)
                        }
                        Part::HeaderName if !candor_wire::wire::is_token_bytes(value) => {
                            return Err(Unsendable)
                        }
                        Part::HeaderValue | Part::HeaderName => out.extend_from_slice(value),
                    }
                }
            }
        }
        Ok(())
    }
}

/// Where a scan of JSON text stands: inside a string, and just after its backslash.
#[derive(Default)]
struct JsonScan {
    in_string: bool,
    escaped: bool,
}

impl JsonScan {
    fn scan(&mut self, text: &[u8]) {
        for &b in text {
            if self.escaped {
                self.escaped = false;
            } else if self.in_string && b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = !self.in_string;
            }
        }
    }
}

/// Appends `value` as the inside of a JSON string: `"` and `\` escaped, control characters as
/// their short escapes or `\u00XX`; other bytes (UTF-8 included) as they are.
fn json_escape_into(value: &[u8], out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for &b in value {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0..=0x1f | 0x7f => {
                out.extend_from_slice(b"\\u00");
                out.push(HEX[(b >> 4) as usize]);
                out.push(HEX[(b & 15) as usize]);
            }
            _ => out.push(b),
        }
    }
}

/// One HTTP/1.1 request with placeholders, compiled: the head up to the Content-Length line,
/// and the body. Filling lays out exactly what `http1::build_request` writes for the same text.
#[derive(Debug, Clone)]
pub struct RequestTemplate {
    head: Template,
    body: Template,
    /// Write a Content-Length line (computed at fill time from the filled body).
    content_length: bool,
    pub head_only: bool,
}

/// Buffers of one load thread for filling requests, sized before the run.
#[derive(Debug, Default)]
pub struct FillBuffers {
    pub request: Vec<u8>,
    body: Vec<u8>,
}

impl FillBuffers {
    /// Buffers large enough for any fill of any of `templates`.
    pub fn for_templates(templates: &[RequestTemplate]) -> FillBuffers {
        let body = templates.iter().map(|t| t.body.max_len).max().unwrap_or(0);
        let request = templates
            .iter()
            .map(|t| t.head.max_len + t.body.max_len + CONTENT_LENGTH_LINE)
            .max()
            .unwrap_or(0);
        FillBuffers {
            request: Vec::with_capacity(request),
            body: Vec::with_capacity(body),
        }
    }
}

/// "Content-Length: " + 20 digits + CRLF, then the blank line.
const CONTENT_LENGTH_LINE: usize = 16 + 20 + 2 + 2;

impl RequestTemplate {
    /// Compiles one request; `what` names it in errors (e.g. "--requests line 3").
    pub fn compile(
        method: &str,
        host: &str,
        path: &str,
        headers: &[String],
        body: &[u8],
        data: Option<&DataTable>,
        what: &str,
    ) -> Result<RequestTemplate, TemplateError> {
        let body_text = String::from_utf8_lossy(body);
        let body = Template::compile(&body_text, data, &format!("{what} body"))?;
        Self::compile_with_body(method, host, path, headers, body, data, what)
    }

    /// [`RequestTemplate::compile`] with the body compiled already (or [`Template::literal`]).
    pub fn compile_with_body(
        method: &str,
        host: &str,
        path: &str,
        headers: &[String],
        body: Template,
        data: Option<&DataTable>,
        what: &str,
    ) -> Result<RequestTemplate, TemplateError> {
        let has = |name: &str| candor_wire::request_form::has_header(headers, name);
        // The head as `http1::build_request` lays it out, each text in its part of the request.
        let start = format!("{method} ");
        let mut fixed = String::from(" HTTP/1.1\r\n");
        if !has("host") {
            fixed.push_str(&format!("Host: {host}\r\n"));
        }
        if !has("user-agent") {
            fixed.push_str(candor_wire::request_form::USER_AGENT_LINE);
        }
        let mut parts = vec![
            (start.as_str(), Part::Raw),
            (path, Part::Path),
            (fixed.as_str(), Part::Raw),
        ];
        for h in headers {
            let (name, value) = h.split_once(':').unwrap_or((h, ""));
            parts.extend([
                (name.trim(), Part::HeaderName),
                (": ", Part::Raw),
                (value.trim(), Part::HeaderValue),
                ("\r\n", Part::Raw),
            ]);
        }
        if !body.is_constant() && has("content-length") {
            return Err(TemplateError::ContentLength { what: what.into() });
        }
        let content_length = (!body.is_constant()
            || !body.literal.is_empty()
            || method == "POST"
            || method == "PUT")
            && !has("content-length");
        Ok(RequestTemplate {
            head: Template::compile_parts(&parts, data, what)?,
            body,
            content_length,
            head_only: method.eq_ignore_ascii_case("HEAD"),
        })
    }

    /// Whether any part has a placeholder.
    pub fn is_constant(&self) -> bool {
        self.head.is_constant() && self.body.is_constant()
    }

    pub fn uses_data(&self) -> bool {
        self.head.uses_data() || self.body.uses_data()
    }

    /// Fills the request into `buffers.request` (cleared first) and returns it, or refuses a
    /// value that cannot be sent where it goes.
    pub fn fill<'b>(
        &self,
        fill: &mut Fill<'_>,
        buffers: &'b mut FillBuffers,
    ) -> Result<&'b [u8], Unsendable> {
        let FillBuffers { request, body } = buffers;
        body.clear();
        request.clear();
        // The body first, for its length; the head's placeholders then draw after the body's,
        // in one fixed order, so a seed gives the same request every time.
        self.body.fill_into(fill, body)?;
        self.head.fill_into(fill, request)?;
        if self.content_length {
            let _ = write!(request, "Content-Length: {}\r\n", body.len());
        }
        request.extend_from_slice(b"\r\n");
        request.extend_from_slice(body);
        Ok(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fill_text(t: &Template, seq: u64, data: Option<&DataTable>) -> String {
        let mut rng = request_rng(1, seq);
        let mut out = Vec::new();
        t.fill_into(
            &mut Fill {
                seq,
                row: data.map_or(0, |d| (seq % d.rows() as u64) as usize),
                rng: &mut rng,
                data,
            },
            &mut out,
        )
        .unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn json_values_are_escaped_inside_strings_and_raw_outside() {
        // A quote, a backslash, a tab and a line break in cells; a cell of JSON for a raw spot.
        let csv = b"name,obj\n\"say \"\"hi\"\"\\ \tthen\nbye\",{\"a\":1}\n";
        let data = DataTable::parse(csv, "d.csv").unwrap();
        let t = Template::compile_json(
            r#"{"name":"<{{data:name}}>","esc":"\"{{data:name}}","n":{{seq}},"o":{{data:obj}},"k":"{{seq}}"}"#,
            Some(&data),
            "body",
        )
        .unwrap();
        let text = fill_text(&t, 4, Some(&data));
        let v: serde_json::Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(v["name"], "<say \"hi\"\\ \tthen\nbye>");
        // An escaped quote in the literal does not end its string.
        assert_eq!(v["esc"], "\"say \"hi\"\\ \tthen\nbye");
        assert_eq!(v["n"], 4);
        assert_eq!(v["o"]["a"], 1);
        assert_eq!(v["k"], "4");
        // The fill's room holds the longest escape of every byte.
        let control = DataTable::parse(b"v\n\"\x01\x02\"\n", "c.csv").unwrap();
        let t = Template::compile_json(r#"["{{data:v}}"]"#, Some(&control), "body").unwrap();
        let text = fill_text(&t, 0, Some(&control));
        assert_eq!(text, "[\"\\u0001\\u0002\"]");
        assert!(text.len() <= t.max_len());
        // Raw text (an HTTP body) is left as it was.
        let raw = Template::compile(r#"{"n":"{{data:v}}"}"#, Some(&control), "body").unwrap();
        assert_eq!(
            fill_text(&raw, 0, Some(&control)).as_bytes(),
            b"{\"n\":\"\x01\x02\"}"
        );
    }

    #[test]
    fn placeholders_fill_and_literals_stay() {
        let data = DataTable::parse(b"user,id\nalice,1\nbob,2\n", "u.csv").unwrap();
        let t = Template::compile(
            "/u/{{data:user}}/{{ seq }}?r={{random:5:5}}&n={{random:-3:-3}}",
            Some(&data),
            "path",
        )
        .unwrap();
        assert_eq!(fill_text(&t, 0, Some(&data)), "/u/alice/0?r=5&n=-3");
        assert_eq!(fill_text(&t, 3, Some(&data)), "/u/bob/3?r=5&n=-3");
        assert!(!t.is_constant() && t.uses_data());
        let plain = Template::compile("/just/{text}", None, "path").unwrap();
        assert!(plain.is_constant());
        assert_eq!(fill_text(&plain, 9, None), "/just/{text}");
        // The bound covers the longest fill: 3+5(alice)+1+20+3+20+3+20 literal and values.
        assert!(t.max_len() >= "/u/alice/18446744073709551615?r=5&n=-3".len());
    }

    #[test]
    fn random_values_are_uniform_inclusive_and_seeded() {
        let t = Template::compile("{{random:1:6}}", None, "body").unwrap();
        let mut counts = [0u32; 7];
        for seq in 0..60_000 {
            let v: usize = fill_text(&t, seq, None).parse().unwrap();
            counts[v] += 1;
        }
        assert_eq!(counts[0], 0);
        // 10,000 expected per face, sd ≈ 91; 5 sd is a bound a fair generator does not cross.
        for c in &counts[1..] {
            assert!((*c as i64 - 10_000).abs() < 456, "{counts:?}");
        }
        // Same seed and seq, same value; a uuid is a v4 uuid.
        let u = Template::compile("{{uuid}}", None, "body").unwrap();
        let a = fill_text(&u, 42, None);
        assert_eq!(a, fill_text(&u, 42, None));
        assert_ne!(a, fill_text(&u, 43, None));
        let parsed = uuid::Uuid::parse_str(&a).unwrap();
        assert_eq!(parsed.get_version_num(), 4);
        assert_eq!(a.len(), 36);
    }

    #[test]
    fn bad_templates_are_one_line_errors() {
        let data = DataTable::parse(b"user\nalice\n", "u.csv").unwrap();
        for (text, expect) in [
            ("/{{nope}}", "path: unknown placeholder '{{nope}}'"),
            ("/{{seq", "path: '{{' without a closing '}}'"),
            ("/{{random:9:1}}", "invalid '{{random:9:1}}'"),
            ("/{{random:a:1}}", "invalid '{{random:a:1}}'"),
            ("/{{seq:1}}", "unknown placeholder '{{seq:1}}'"),
            (
                "/{{data:email}}",
                "'{{data:email}}' names no column of the --data file (columns: user)",
            ),
        ] {
            let e = Template::compile(text, Some(&data), "path")
                .unwrap_err()
                .to_string();
            assert!(e.contains(expect), "{text}: {e}");
        }
        assert_eq!(
            Template::compile("{{data:user}}", None, "-H value")
                .unwrap_err()
                .to_string(),
            "-H value: '{{data:user}}' but no --data file is given"
        );
    }

    #[test]
    fn a_request_without_placeholders_is_what_build_request_writes() {
        for (method, headers, body) in [
            ("GET", vec![], &b""[..]),
            ("POST", vec!["X-A: 1".to_string()], &b"{\"a\":1}"[..]),
            ("PUT", vec!["Host: other".to_string()], &b""[..]),
            ("POST", vec!["Content-Length: 3".to_string()], &b"abc"[..]),
        ] {
            let t =
                RequestTemplate::compile(method, "h:1", "/p?q", &headers, body, None, "r").unwrap();
            let mut buffers = FillBuffers::for_templates(std::slice::from_ref(&t));
            let mut rng = request_rng(1, 0);
            let mut fill = Fill {
                seq: 0,
                row: 0,
                rng: &mut rng,
                data: None,
            };
            assert_eq!(
                t.fill(&mut fill, &mut buffers).unwrap(),
                &candor_wire::request_form::build_request(method, "h:1", "/p?q", &headers, body)[..]
            );
        }
    }

    #[test]
    fn a_templated_body_gets_its_own_content_length() {
        let data = DataTable::parse(b"name\nal\nbarbara\n", "u.csv").unwrap();
        let t = RequestTemplate::compile(
            "POST",
            "h",
            "/users/{{seq}}",
            &["X-Request-Id: {{seq}}".into()],
            b"{\"name\":\"{{data:name}}\"}",
            Some(&data),
            "r",
        )
        .unwrap();
        let mut buffers = FillBuffers::for_templates(std::slice::from_ref(&t));
        let mut rng = request_rng(1, 1);
        let mut fill = Fill {
            seq: 1,
            row: 1,
            rng: &mut rng,
            data: Some(&data),
        };
        assert_eq!(
            t.fill(&mut fill, &mut buffers).unwrap(),
            format!(
                "POST /users/1 HTTP/1.1\r\nHost: h\r\n{}X-Request-Id: 1\r\nContent-Length: 18\r\n\r\n{{\"name\":\"barbara\"}}",
                candor_wire::request_form::USER_AGENT_LINE
            )
            .as_bytes()
        );
        assert!(matches!(
            RequestTemplate::compile(
                "POST",
                "h",
                "/",
                &["Content-Length: 3".into()],
                b"{{seq}}",
                None,
                "--body"
            ),
            Err(TemplateError::ContentLength { .. })
        ));
    }

    #[test]
    fn a_value_with_any_control_character_but_tab_is_refused_in_a_header() {
        let data = DataTable::parse(b"id\n\"esc\x1b[31m\"\n\"a\tb\"\ndel\x7f\n", "u.csv").unwrap();
        let t = RequestTemplate::compile(
            "GET",
            "h",
            "/u/{{data:id}}",
            &["X-Id: {{data:id}}".into()],
            b"",
            Some(&data),
            "r",
        )
        .unwrap();
        let mut buffers = FillBuffers::for_templates(std::slice::from_ref(&t));
        let mut fill_row = |row: usize| {
            let mut rng = request_rng(1, row as u64);
            let mut fill = Fill {
                seq: row as u64,
                row,
                rng: &mut rng,
                data: Some(&data),
            };
            t.fill(&mut fill, &mut buffers)
                .map(|b| String::from_utf8_lossy(b).into_owned())
        };
        assert_eq!(fill_row(0), Err(Unsendable));
        let sent = fill_row(1).unwrap();
        assert!(sent.contains("\r\nX-Id: a\tb\r\n"), "{sent}");
        assert_eq!(fill_row(2), Err(Unsendable));
    }

    #[test]
    fn a_value_is_encoded_in_the_path_and_refused_with_a_line_break_in_a_header() {
        let data = DataTable::parse(
            b"id\n\"bob, jr\"\n\"a\r\nX-Inj: 1\"\nx/y?z#%\n\"nul\x00\"\n",
            "u.csv",
        )
        .unwrap();
        let t = RequestTemplate::compile(
            "POST",
            "h",
            "/u/{{data:id}}?q={{data:id}}",
            &["X-Id: {{data:id}}".into()],
            b"{{data:id}}",
            Some(&data),
            "r",
        )
        .unwrap();
        let mut buffers = FillBuffers::for_templates(std::slice::from_ref(&t));
        let capacity = buffers.request.capacity();
        let mut fill_row = |row: usize| {
            let mut rng = request_rng(1, row as u64);
            let mut fill = Fill {
                seq: row as u64,
                row,
                rng: &mut rng,
                data: Some(&data),
            };
            t.fill(&mut fill, &mut buffers)
                .map(|b| String::from_utf8_lossy(b).into_owned())
        };
        let sent = fill_row(0).unwrap();
        assert!(
            sent.starts_with("POST /u/bob%2C%20jr?q=bob%2C%20jr HTTP/1.1\r\n"),
            "{sent}"
        );
        assert!(sent.contains("\r\nX-Id: bob, jr\r\n") && sent.ends_with("\r\n\r\nbob, jr"));
        // In the path a line break is only bytes to encode; in a header it would be a new header.
        assert_eq!(fill_row(1), Err(Unsendable));
        let sent = fill_row(2).unwrap();
        assert!(sent.starts_with("POST /u/x%2Fy%3Fz%23%25?q="), "{sent}");
        assert_eq!(fill_row(3), Err(Unsendable));
        // The encoded path fits the buffer sized before the run.
        assert_eq!(buffers.request.capacity(), capacity);
        // Without a header use, the same values are only encoded.
        let path_only =
            RequestTemplate::compile("GET", "h", "/u/{{data:id}}", &[], b"", Some(&data), "r")
                .unwrap();
        let mut b = FillBuffers::for_templates(std::slice::from_ref(&path_only));
        let mut rng = request_rng(1, 1);
        let mut fill = Fill {
            seq: 1,
            row: 1,
            rng: &mut rng,
            data: Some(&data),
        };
        assert!(path_only
            .fill(&mut fill, &mut b)
            .unwrap()
            .starts_with(b"GET /u/a%0D%0AX-Inj%3A%201 HTTP/1.1\r\n"));
    }

    #[test]
    fn random_data_rows_cover_the_table() {
        let mut seen = [false; 5];
        for seq in 0..200 {
            let mut rng = request_rng(7, seq);
            seen[data_row(DataOrder::Random, 5, seq, &mut rng)] = true;
        }
        assert_eq!(seen, [true; 5]);
        let mut rng = request_rng(7, 0);
        assert_eq!(data_row(DataOrder::Sequential, 5, 12, &mut rng), 2);
    }
}
