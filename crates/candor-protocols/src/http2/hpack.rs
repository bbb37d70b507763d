//! HPACK decoding of response header blocks (RFC 7541) that allocates nothing per header in
//! steady state: each field is handed to a callback as two slices, borrowed from the block, the
//! static or dynamic table, or a Huffman scratch buffer kept between blocks. The dynamic table
//! keeps its entries' bytes in one buffer made before the run, so an insertion allocates
//! nothing either: a server whose `date` header changes every second (hyper, nginx) inserts it
//! every second.
//!
//! Written by hand because the maintained HPACK decoders allocate per header: `loona-hpack`,
//! `fluke-hpack` and `hpack` build a Huffman table in hash maps for every Huffman-coded string
//! (a server codes `content-length` that way on every response, as nghttp2 and `h2` do), and
//! `httlib-hpack` hands out owned vectors. The Huffman code itself comes from `httlib-huffman`,
//! which decodes into a buffer the caller owns. `loona-hpack` checks this decoder in the tests.

use std::collections::VecDeque;

/// The dynamic table size this client allows (SETTINGS_HEADER_TABLE_SIZE, the default).
pub const TABLE_SIZE: usize = 4096;

/// The header block is not valid HPACK: a connection error (COMPRESSION_ERROR).
#[derive(Debug, PartialEq, Eq)]
pub struct HpackError;

/// RFC 7541 Appendix A.
static STATIC_TABLE: [(&[u8], &[u8]); 61] = [
    (b":authority", b""),
    (b":method", b"GET"),
    (b":method", b"POST"),
    (b":path", b"/"),
    (b":path", b"/index.html"),
    (b":scheme", b"http"),
    (b":scheme", b"https"),
    (b":status", b"200"),
    (b":status", b"204"),
    (b":status", b"206"),
    (b":status", b"304"),
    (b":status", b"400"),
    (b":status", b"404"),
    (b":status", b"500"),
    (b"accept-charset", b""),
    (b"accept-encoding", b"gzip, deflate"),
    (b"accept-language", b""),
    (b"accept-ranges", b""),
    (b"accept", b""),
    (b"access-control-allow-origin", b""),
    (b"age", b""),
    (b"allow", b""),
    (b"authorization", b""),
    (b"cache-control", b""),
    (b"content-disposition", b""),
    (b"content-encoding", b""),
    (b"content-language", b""),
    (b"content-length", b""),
    (b"content-location", b""),
    (b"content-range", b""),
    (b"content-type", b""),
    (b"cookie", b""),
    (b"date", b""),
    (b"etag", b""),
    (b"expect", b""),
    (b"expires", b""),
    (b"from", b""),
    (b"host", b""),
    (b"if-match", b""),
    (b"if-modified-since", b""),
    (b"if-none-match", b""),
    (b"if-range", b""),
    (b"if-unmodified-since", b""),
    (b"last-modified", b""),
    (b"link", b""),
    (b"location", b""),
    (b"max-forwards", b""),
    (b"proxy-authenticate", b""),
    (b"proxy-authorization", b""),
    (b"range", b""),
    (b"referer", b""),
    (b"refresh", b""),
    (b"retry-after", b""),
    (b"server", b""),
    (b"set-cookie", b""),
    (b"strict-transport-security", b""),
    (b"transfer-encoding", b""),
    (b"user-agent", b""),
    (b"vary", b""),
    (b"via", b""),
    (b"www-authenticate", b""),
];

/// A dynamic table entry: where its name, then its value, lie in `Table::bytes`.
#[derive(Clone, Copy, Debug)]
struct Entry {
    at: usize,
    name: usize,
    value: usize,
}

/// The most entries a table of [`TABLE_SIZE`] holds (each counts 32 bytes besides its own).
const MAX_ENTRIES: usize = TABLE_SIZE / 32;

/// The dynamic table: entries newest first, their bytes in one buffer made once.
struct Table {
    entries: VecDeque<Entry>,
    /// The entries' names and values, oldest first from `start` to `end`: room for two full
    /// tables, so that an insertion at most moves the live bytes to the front.
    bytes: Box<[u8]>,
    start: usize,
    end: usize,
    size: usize,
    max_size: usize,
}

/// The decoding state of one connection's response blocks.
pub struct Decoder {
    table: Table,
    name_buf: Vec<u8>,
    value_buf: Vec<u8>,
    /// A name taken from the dynamic table for a new entry, copied out before the insertion
    /// may evict or move it.
    key_buf: Vec<u8>,
}

impl Default for Decoder {
    fn default() -> Decoder {
        Decoder {
            table: Table {
                entries: VecDeque::with_capacity(MAX_ENTRIES),
                bytes: vec![0; 2 * TABLE_SIZE].into_boxed_slice(),
                start: 0,
                end: 0,
                size: 0,
                max_size: TABLE_SIZE,
            },
            name_buf: Vec::with_capacity(4096),
            value_buf: Vec::with_capacity(8192),
            key_buf: Vec::with_capacity(4096),
        }
    }
}

/// An integer with an `n`-bit prefix at the start of `b`: its value and length.
fn integer(b: &[u8], n: u32) -> Result<(usize, usize), HpackError> {
    let max = (1usize << n) - 1;
    let first = *b.first().ok_or(HpackError)? as usize & max;
    if first < max {
        return Ok((first, 1));
    }
    let mut value = max;
    let mut shift = 0;
    for (k, &byte) in b[1..].iter().enumerate() {
        if shift > 28 {
            return Err(HpackError);
        }
        value += ((byte & 0x7f) as usize) << shift;
        shift += 7;
        if byte & 0x80 == 0 {
            return Ok((value, k + 2));
        }
    }
    Err(HpackError)
}

/// A string literal at the start of `b`, decoded into `scratch` if Huffman-coded: the string
/// and the bytes it took.
fn string<'a>(b: &'a [u8], scratch: &'a mut Vec<u8>) -> Result<(&'a [u8], usize), HpackError> {
    let huffman = b.first().ok_or(HpackError)? & 0x80 != 0;
    let (len, at) = integer(b, 7)?;
    let raw = b.get(at..at + len).ok_or(HpackError)?;
    if !huffman {
        return Ok((raw, at + len));
    }
    scratch.clear();
    httlib_huffman::decode(raw, scratch, httlib_huffman::DecoderSpeed::FourBits)
        .map_err(|_| HpackError)?;
    Ok((scratch, at + len))
}

impl Table {
    /// Entry `i` (0 = newest): its name and value.
    fn get(&self, i: usize) -> Option<(&[u8], &[u8])> {
        let e = self.entries.get(i)?;
        Some((
            &self.bytes[e.at..e.at + e.name],
            &self.bytes[e.at + e.name..e.at + e.name + e.value],
        ))
    }

    fn evict_to(&mut self, size: usize) {
        while self.size > size {
            let Some(e) = self.entries.pop_back() else {
                break;
            };
            self.size -= e.name + e.value + 32;
        }
        match self.entries.back() {
            Some(oldest) => self.start = oldest.at,
            None => (self.start, self.end) = (0, 0),
        }
    }

    /// Inserts `name: value` as the newest entry, evicting to make room (RFC 7541 §4.4).
    fn insert(&mut self, name: &[u8], value: &[u8]) {
        let size = name.len() + value.len() + 32;
        if size > self.max_size {
            self.evict_to(0);
            return;
        }
        self.evict_to(self.max_size - size);
        let len = name.len() + value.len();
        if self.end + len > self.bytes.len() {
            // The live bytes (at most a table's worth, less this entry) move to the front.
            let shift = self.start;
            self.bytes.copy_within(self.start..self.end, 0);
            self.end -= shift;
            self.start = 0;
            for e in self.entries.iter_mut() {
                e.at -= shift;
            }
        }
        let at = self.end;
        self.bytes[at..at + name.len()].copy_from_slice(name);
        self.bytes[at + name.len()..at + len].copy_from_slice(value);
        self.end += len;
        if self.entries.is_empty() {
            self.start = at;
        }
        self.entries.push_front(Entry {
            at,
            name: name.len(),
            value: value.len(),
        });
        self.size += size;
    }
}

impl Decoder {
    /// The field at `index` (1-based, static table first).
    fn get(&self, index: usize) -> Result<(&[u8], &[u8]), HpackError> {
        match index {
            0 => Err(HpackError),
            1..=61 => Ok(STATIC_TABLE[index - 1]),
            _ => self.table.get(index - 62).ok_or(HpackError),
        }
    }

    /// Decodes `block`, handing each field to `field` in order.
    pub fn decode(
        &mut self,
        mut block: &[u8],
        mut field: impl FnMut(&[u8], &[u8]),
    ) -> Result<(), HpackError> {
        while let Some(&first) = block.first() {
            if first & 0x80 != 0 {
                let (index, used) = integer(block, 7)?;
                let (n, v) = self.get(index)?;
                field(n, v);
                block = &block[used..];
            } else if first & 0xe0 == 0x20 {
                let (size, used) = integer(block, 5)?;
                if size > TABLE_SIZE {
                    return Err(HpackError);
                }
                self.table.max_size = size;
                self.table.evict_to(size);
                block = &block[used..];
            } else {
                let indexing = first & 0x40 != 0;
                let (index, mut used) = integer(block, if indexing { 6 } else { 4 })?;
                let Decoder {
                    table,
                    name_buf,
                    value_buf,
                    key_buf,
                } = self;
                let name: &[u8] = match index {
                    0 => {
                        let (n, len) = string(&block[used..], name_buf)?;
                        used += len;
                        n
                    }
                    1..=61 => STATIC_TABLE[index - 1].0,
                    _ => {
                        // Copied out: an insertion below may evict or move it.
                        let (n, _) = table.get(index - 62).ok_or(HpackError)?;
                        key_buf.clear();
                        key_buf.extend_from_slice(n);
                        key_buf
                    }
                };
                let (value, len) = string(&block[used..], value_buf)?;
                used += len;
                field(name, value);
                if indexing {
                    table.insert(name, value);
                }
                block = &block[used..];
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Fields = Vec<(Vec<u8>, Vec<u8>)>;

    fn mine(d: &mut Decoder, block: &[u8]) -> Result<Fields, HpackError> {
        let mut out = Vec::new();
        d.decode(block, |n, v| out.push((n.to_vec(), v.to_vec())))?;
        Ok(out)
    }

    fn loona(d: &mut loona_hpack::Decoder<'static>, block: &[u8]) -> Fields {
        let mut out = Vec::new();
        d.decode_with_cb(block, |n, v| out.push((n.to_vec(), v.to_vec())))
            .expect("valid");
        out
    }

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn the_static_table_agrees_with_loona_hpack() {
        for i in 1..=61u8 {
            let block = [0x80 | i];
            assert_eq!(
                mine(&mut Decoder::default(), &block).unwrap(),
                loona(&mut loona_hpack::Decoder::new(), &block),
                "index {i}"
            );
        }
        assert_eq!(mine(&mut Decoder::default(), &[0x80]), Err(HpackError));
        assert_eq!(mine(&mut Decoder::default(), &[0x80 | 62]), Err(HpackError));
    }

    /// RFC 7541 C.6: three responses with Huffman-coded literals, incremental indexing and
    /// evictions from a 256-byte table; decoded in sequence as loona-hpack decodes them.
    #[test]
    fn huffman_literals_indexing_and_eviction_agree_with_loona_hpack() {
        let blocks = [
            "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
            "4883 640e ff c1 c0 bf",
            "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab 77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed 4ee5 b106 3d50 07",
        ];
        let mut m = Decoder::default();
        let mut l = loona_hpack::Decoder::new();
        // C.6 uses a 256-byte table: a size update first, as a server would send after
        // lowering it.
        let mut first = vec![0x3f, 0xe1, 0x01];
        first.extend(hex(blocks[0]));
        let ours = mine(&mut m, &first).unwrap();
        assert_eq!(ours, loona(&mut l, &first));
        assert_eq!(ours[0], (b":status".to_vec(), b"302".to_vec()));
        assert_eq!(ours[3].1, b"https://www.example.com");
        for b in &blocks[1..] {
            let b = hex(b);
            assert_eq!(mine(&mut m, &b).unwrap(), loona(&mut l, &b));
        }
        assert!(
            m.table.size <= 256,
            "evicted to the table size: {}",
            m.table.size
        );
    }

    /// A server inserting a new `date` every second, and entries whose name is a dynamic entry's
    /// (RFC 7541 §4.4: the name survives its own eviction), for long enough that the table's
    /// buffer wraps many times: decoded as loona-hpack decodes them, in the buffer made once.
    #[test]
    fn insertions_without_end_reuse_the_tables_buffer() {
        let mut m = Decoder::default();
        let mut l = loona_hpack::Decoder::new();
        let buffer = m.table.bytes.as_ptr();
        for k in 0..2000u32 {
            let mut b = vec![0x88];
            // Literal with incremental indexing, name `date` from the static table (index 33).
            let date = format!(
                "Fri, 27 Nov 2026 01:{:02}:{:02} GMT {}",
                k / 60 % 60,
                k % 60,
                "x".repeat((k % 97) as usize)
            );
            b.push(0x40 | 33);
            b.push(date.len() as u8);
            b.extend_from_slice(date.as_bytes());
            // Literal with incremental indexing, name from the newest dynamic entry (index 62).
            b.push(0x40 | 62);
            b.push(3);
            b.extend_from_slice(b"abc");
            assert_eq!(mine(&mut m, &b).unwrap(), loona(&mut l, &b), "block {k}");
        }
        assert_eq!(m.table.bytes.as_ptr(), buffer, "the same buffer throughout");
        assert!(m.table.size <= TABLE_SIZE);
    }

    #[test]
    fn literals_without_indexing_and_bad_blocks() {
        // Literal without indexing, new name; never indexed, indexed name (content-length).
        let block = [
            0x00,
            0x01,
            b'x',
            0x01,
            b'y',
            0x10 | 0x0f,
            28 - 15,
            0x01,
            b'2',
        ];
        let mut d = Decoder::default();
        assert_eq!(
            mine(&mut d, &block).unwrap(),
            [
                (b"x".to_vec(), b"y".to_vec()),
                (b"content-length".to_vec(), b"2".to_vec())
            ]
        );
        assert!(d.table.entries.is_empty());
        for bad in [
            &[0x00, 0x05, b'x'][..],
            &[0x3f, 0xff, 0xff],
            &[0xff],
            &[0x40, 0x81],
        ] {
            assert_eq!(
                mine(&mut Decoder::default(), bad),
                Err(HpackError),
                "{bad:?}"
            );
        }
    }
}
