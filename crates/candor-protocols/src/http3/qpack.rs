//! QPACK (RFC 9204) as this client speaks it: it advertises a dynamic table of capacity 0 and no
//! blocked streams (SETTINGS), so every field section it sends or accepts uses the static table
//! and literals only, and no encoder or decoder stream instruction is ever needed. Requests are
//! encoded with static references where the table has them and literals otherwise (never
//! Huffman: encoding costs more CPU than the bytes it saves on a loopback or LAN); responses are
//! decoded with Huffman strings handed to `httlib-huffman` (the same code as HPACK's, the crate
//! HTTP/2's decoder uses). A section that names the dynamic table breaks the settings and is a
//! QPACK_DECOMPRESSION_FAILED connection error.
//!
//! Why by hand: the maintained QPACK encoders (the `h3` crate's, ls-qpack) come inside an async
//! HTTP/3 stack or a C library; the static-only subset is a few dozen lines.

/// The static table (RFC 9204 Appendix A).
pub static STATIC: [(&[u8], &[u8]); 99] = [
    (b":authority", b""),
    (b":path", b"/"),
    (b"age", b"0"),
    (b"content-disposition", b""),
    (b"content-length", b"0"),
    (b"cookie", b""),
    (b"date", b""),
    (b"etag", b""),
    (b"if-modified-since", b""),
    (b"if-none-match", b""),
    (b"last-modified", b""),
    (b"link", b""),
    (b"location", b""),
    (b"referer", b""),
    (b"set-cookie", b""),
    (b":method", b"CONNECT"),
    (b":method", b"DELETE"),
    (b":method", b"GET"),
    (b":method", b"HEAD"),
    (b":method", b"OPTIONS"),
    (b":method", b"POST"),
    (b":method", b"PUT"),
    (b":scheme", b"http"),
    (b":scheme", b"https"),
    (b":status", b"103"),
    (b":status", b"200"),
    (b":status", b"304"),
    (b":status", b"404"),
    (b":status", b"503"),
    (b"accept", b"*/*"),
    (b"accept", b"application/dns-message"),
    (b"accept-encoding", b"gzip, deflate, br"),
    (b"accept-ranges", b"bytes"),
    (b"access-control-allow-headers", b"cache-control"),
    (b"access-control-allow-headers", b"content-type"),
    (b"access-control-allow-origin", b"*"),
    (b"cache-control", b"max-age=0"),
    (b"cache-control", b"max-age=2592000"),
    (b"cache-control", b"max-age=604800"),
    (b"cache-control", b"no-cache"),
    (b"cache-control", b"no-store"),
    (b"cache-control", b"public, max-age=31536000"),
    (b"content-encoding", b"br"),
    (b"content-encoding", b"gzip"),
    (b"content-type", b"application/dns-message"),
    (b"content-type", b"application/javascript"),
    (b"content-type", b"application/json"),
    (b"content-type", b"application/x-www-form-urlencoded"),
    (b"content-type", b"image/gif"),
    (b"content-type", b"image/jpeg"),
    (b"content-type", b"image/png"),
    (b"content-type", b"text/css"),
    (b"content-type", b"text/html; charset=utf-8"),
    (b"content-type", b"text/plain"),
    (b"content-type", b"text/plain;charset=utf-8"),
    (b"range", b"bytes=0-"),
    (b"strict-transport-security", b"max-age=31536000"),
    (
        b"strict-transport-security",
        b"max-age=31536000; includesubdomains",
    ),
    (
        b"strict-transport-security",
        b"max-age=31536000; includesubdomains; preload",
    ),
    (b"vary", b"accept-encoding"),
    (b"vary", b"origin"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-xss-protection", b"1; mode=block"),
    (b":status", b"100"),
    (b":status", b"204"),
    (b":status", b"206"),
    (b":status", b"302"),
    (b":status", b"400"),
    (b":status", b"403"),
    (b":status", b"421"),
    (b":status", b"425"),
    (b":status", b"500"),
    (b"accept-language", b""),
    (b"access-control-allow-credentials", b"FALSE"),
    (b"access-control-allow-credentials", b"TRUE"),
    (b"access-control-allow-headers", b"*"),
    (b"access-control-allow-methods", b"get"),
    (b"access-control-allow-methods", b"get, post, options"),
    (b"access-control-allow-methods", b"options"),
    (b"access-control-expose-headers", b"content-length"),
    (b"access-control-request-headers", b"content-type"),
    (b"access-control-request-method", b"get"),
    (b"access-control-request-method", b"post"),
    (b"alt-svc", b"clear"),
    (b"authorization", b""),
    (
        b"content-security-policy",
        b"script-src 'none'; object-src 'none'; base-uri 'none'",
    ),
    (b"early-data", b"1"),
    (b"expect-ct", b""),
    (b"forwarded", b""),
    (b"if-range", b""),
    (b"origin", b""),
    (b"purpose", b"prefetch"),
    (b"server", b""),
    (b"timing-allow-origin", b"*"),
    (b"upgrade-insecure-requests", b"1"),
    (b"user-agent", b""),
    (b"x-forwarded-for", b""),
    (b"x-frame-options", b"deny"),
    (b"x-frame-options", b"sameorigin"),
];

/// Static indices this encoder uses.
const AUTHORITY: usize = 0;
const PATH: usize = 1;
const PATH_ROOT: usize = 1;
const METHOD: usize = 15;
const SCHEME_HTTPS: usize = 23;

/// Why a field section could not be decoded (QPACK_DECOMPRESSION_FAILED).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QpackError {
    /// It ended inside a field line or an integer.
    Truncated,
    /// It refers to the dynamic table, which this client set to capacity 0.
    DynamicTable,
    /// A static index past the table.
    BadIndex,
    /// An integer too large to be meant.
    Overflow,
    /// A Huffman string that does not decode.
    Huffman,
}

/// Appends `value` as a QPACK/HPACK integer with an `n`-bit prefix, `flags` in the bits above it.
pub fn put_int(out: &mut Vec<u8>, n: u32, flags: u8, value: usize) {
    let max = (1usize << n) - 1;
    if value < max {
        out.push(flags | value as u8);
        return;
    }
    out.push(flags | max as u8);
    let mut rest = value - max;
    while rest >= 128 {
        out.push((rest % 128) as u8 | 0x80);
        rest /= 128;
    }
    out.push(rest as u8);
}

/// Reads an integer with an `n`-bit prefix from `b[*at..]`, moving `at` past it.
pub fn get_int(b: &[u8], at: &mut usize, n: u32) -> Result<usize, QpackError> {
    let max = (1usize << n) - 1;
    let first = *b.get(*at).ok_or(QpackError::Truncated)? as usize & max;
    *at += 1;
    if first < max {
        return Ok(first);
    }
    let mut value = max;
    let mut shift = 0;
    loop {
        let byte = *b.get(*at).ok_or(QpackError::Truncated)?;
        *at += 1;
        if shift > 28 {
            return Err(QpackError::Overflow);
        }
        value += ((byte & 0x7f) as usize) << shift;
        shift += 7;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
}

/// Appends a string literal without Huffman, its length behind an `n`-bit prefix.
fn put_str(out: &mut Vec<u8>, n: u32, flags: u8, s: &[u8]) {
    put_int(out, n, flags, s.len());
    out.extend_from_slice(s);
}

/// The encoded field section's prefix: Required Insert Count 0, Delta Base 0.
pub fn put_prefix(out: &mut Vec<u8>) {
    out.extend_from_slice(&[0, 0]);
}

/// An indexed field line of the static table.
fn put_indexed(out: &mut Vec<u8>, index: usize) {
    put_int(out, 6, 0xc0, index);
}

/// A literal field line whose name is static entry `index`'s.
fn put_name_ref(out: &mut Vec<u8>, index: usize, value: &[u8]) {
    put_int(out, 4, 0x50, index);
    put_str(out, 7, 0, value);
}

/// A literal field line with a literal name (lowercased by the caller).
fn put_literal(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    put_int(out, 3, 0x20, name.len());
    for &c in name {
        out.push(c.to_ascii_lowercase());
    }
    put_str(out, 7, 0, value);
}

/// The request's pseudo-header fields: method, `https`, authority, path.
pub fn put_request_head(out: &mut Vec<u8>, method: &[u8], authority: &[u8], path: &[u8]) {
    match STATIC[15..=21].iter().position(|(_, v)| *v == method) {
        Some(k) => put_indexed(out, METHOD + k),
        None => put_name_ref(out, METHOD, method),
    }
    put_indexed(out, SCHEME_HTTPS);
    put_name_ref(out, AUTHORITY, authority);
    match path {
        b"/" => put_indexed(out, PATH_ROOT),
        p => put_name_ref(out, PATH, p),
    }
}

/// A request's other field: by its static name where the table has it.
pub fn put_field(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    let known = STATIC
        .iter()
        .position(|(n, _)| !n.starts_with(b":") && n.eq_ignore_ascii_case(name));
    match known {
        Some(index) => put_name_ref(out, index, value),
        None => put_literal(out, name, value),
    }
}

/// A string of a field line at `b[*at..]` whose first byte holds its Huffman flag at `h_bit`
/// and its length in the `n` bits below: the bytes, decoded into `scratch` when Huffman-coded.
fn get_str<'a>(
    b: &'a [u8],
    at: &mut usize,
    n: u32,
    h_bit: u8,
    scratch: &'a mut Vec<u8>,
) -> Result<&'a [u8], QpackError> {
    let huffman = *b.get(*at).ok_or(QpackError::Truncated)? & h_bit != 0;
    let len = get_int(b, at, n)?;
    let raw = b.get(*at..*at + len).ok_or(QpackError::Truncated)?;
    *at += len;
    if !huffman {
        return Ok(raw);
    }
    scratch.clear();
    httlib_huffman::decode(raw, scratch, httlib_huffman::DecoderSpeed::FourBits)
        .map_err(|_| QpackError::Huffman)?;
    Ok(&scratch[..])
}

/// Decodes the field section `b`, handing each field to `field` (name, value). Huffman strings
/// are decoded into `names` and `values` (kept by the caller, so that they stop allocating once
/// grown to the largest).
pub fn decode(
    b: &[u8],
    names: &mut Vec<u8>,
    values: &mut Vec<u8>,
    mut field: impl FnMut(&[u8], &[u8]),
) -> Result<(), QpackError> {
    let mut at = 0;
    let required_insert_count = get_int(b, &mut at, 8)?;
    let _delta_base = get_int(b, &mut at, 7)?;
    if required_insert_count != 0 {
        return Err(QpackError::DynamicTable);
    }
    while at < b.len() {
        let first = b[at];
        if first & 0x80 != 0 {
            // Indexed field line; T (0x40) must say static.
            if first & 0x40 == 0 {
                return Err(QpackError::DynamicTable);
            }
            let index = get_int(b, &mut at, 6)?;
            let (n, v) = STATIC.get(index).ok_or(QpackError::BadIndex)?;
            field(n, v);
        } else if first & 0x40 != 0 {
            // Literal with name reference; T (0x10) must say static.
            if first & 0x10 == 0 {
                return Err(QpackError::DynamicTable);
            }
            let index = get_int(b, &mut at, 4)?;
            let (n, _) = STATIC.get(index).ok_or(QpackError::BadIndex)?;
            let v = get_str(b, &mut at, 7, 0x80, values)?;
            field(n, v);
        } else if first & 0x20 != 0 {
            // Literal with literal name: H at 0x08, length in 3 bits.
            let n = get_str(b, &mut at, 3, 0x08, names)?;
            let v = get_str(b, &mut at, 7, 0x80, values)?;
            field(n, v);
        } else {
            // Post-base indexed or post-base name reference: the dynamic table.
            return Err(QpackError::DynamicTable);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(b: &[u8]) -> Result<Vec<(String, String)>, QpackError> {
        let (mut n, mut v) = (Vec::new(), Vec::new());
        let mut got = Vec::new();
        decode(b, &mut n, &mut v, |n, v| {
            got.push((
                String::from_utf8_lossy(n).into_owned(),
                String::from_utf8_lossy(v).into_owned(),
            ))
        })?;
        Ok(got)
    }

    #[test]
    fn a_request_encoded_here_decodes_to_what_it_said() {
        let mut out = Vec::new();
        put_prefix(&mut out);
        put_request_head(&mut out, b"GET", b"example.com:443", b"/a?b=c");
        put_field(&mut out, b"User-Agent", b"candor");
        put_field(&mut out, b"X-Thing", b"1");
        put_request_head(&mut out, b"PATCH", b"h", b"/");
        let got = fields(&out).unwrap();
        let want = [
            (":method", "GET"),
            (":scheme", "https"),
            (":authority", "example.com:443"),
            (":path", "/a?b=c"),
            ("user-agent", "candor"),
            ("x-thing", "1"),
            (":method", "PATCH"),
            (":scheme", "https"),
            (":authority", "h"),
            (":path", "/"),
        ];
        let want: Vec<_> = want
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn integers_cross_their_prefix_as_rfc_7541_c_1_says() {
        let mut out = Vec::new();
        put_int(&mut out, 5, 0, 1337);
        assert_eq!(out, [31, 154, 10]);
        let mut at = 0;
        assert_eq!(get_int(&out, &mut at, 5), Ok(1337));
        assert_eq!(at, 3);
        let mut at = 0;
        assert_eq!(get_int(&[31, 0xff], &mut at, 5), Err(QpackError::Truncated));
        let endless = [31u8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1];
        let mut at = 0;
        assert_eq!(get_int(&endless, &mut at, 5), Err(QpackError::Overflow));
    }

    #[test]
    fn a_response_with_huffman_literals_decodes_and_the_dynamic_table_is_refused() {
        // :status 200 (static 25), then content-type by name reference with a Huffman value
        // ("text/html" coded, RFC 7541's code), then a literal name.
        let mut b = vec![0, 0, 0xc0 | 25];
        let mut coded = Vec::new();
        httlib_huffman::encode(b"text/html", &mut coded).unwrap();
        put_int(&mut b, 4, 0x50, 44);
        put_int(&mut b, 7, 0x80, coded.len());
        b.extend_from_slice(&coded);
        put_literal(&mut b, b"x-a", b"b");
        let got = fields(&b).unwrap();
        assert_eq!(got[0], (":status".into(), "200".into()));
        assert_eq!(got[1], ("content-type".into(), "text/html".into()));
        assert_eq!(got[2], ("x-a".into(), "b".into()));
        // A Required Insert Count, a dynamic index, a post-base line: all refused.
        assert_eq!(fields(&[1, 0]), Err(QpackError::DynamicTable));
        assert_eq!(fields(&[0, 0, 0x80 | 3]), Err(QpackError::DynamicTable));
        assert_eq!(fields(&[0, 0, 0x10]), Err(QpackError::DynamicTable));
        assert_eq!(fields(&[0, 0, 0xc0 | 63, 100]), Err(QpackError::BadIndex));
        assert_eq!(
            fields(&[0, 0, 0x50 | 4, 5, b'a']),
            Err(QpackError::Truncated)
        );
    }
}
