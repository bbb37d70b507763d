//! Decoding of serialized HdrHistograms in every encoding real logs contain (V0, V1, V2, plain
//! and zlib-compressed), with the exact semantics of Java's `AbstractHistogram.decodeFrom*`.
//!
//! Why our own decoder: the `hdrhistogram` crate (7.x) reads V2 only and answers `InvalidCookie`
//! for the V0/V1 encodings that jHiccup, YCSB and cassandra-stress logs are full of. Rather than
//! have two decoders with two sets of semantics and error messages, every encoding goes through
//! this one; V2 output from the crate's serializer is cross-checked against it in the tests.
//! Encoding stays with the crate (`candor_core::hist::to_base64_v2_compressed`).

use base64::Engine as _;
use candor_core::Histo;
use hdrhistogram::Histogram;
use std::io::Read;

/// Why a serialized histogram could not be decoded.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CodecError {
    #[error("invalid base64 in histogram: {0}")]
    Base64(String),
    #[error("histogram data is truncated: needed {needed} bytes, found {found}")]
    Truncated { needed: usize, found: usize },
    #[error("not an HdrHistogram encoding (cookie 0x{0:08x})")]
    Cookie(u32),
    #[error("compressed histogram is corrupt or truncated: {0}")]
    Inflate(String),
    #[error("invalid histogram header: {0}")]
    Header(String),
    #[error("invalid histogram counts: {0}")]
    Payload(String),
}

const V0_PLAIN: u32 = 0x1c84_9308;
const V0_COMPRESSED: u32 = 0x1c84_9309;
const V1_PLAIN: u32 = 0x1c84_9301;
const V1_COMPRESSED: u32 = 0x1c84_9302;
const V2_PLAIN: u32 = 0x1c84_9303;
const V2_COMPRESSED: u32 = 0x1c84_9304;
const V2_WORD: usize = 9;
/// Inflated histograms larger than this are refused: a real one with 5 significant digits over
/// the whole u64 range stays well under it, and a hostile stream cannot exhaust memory.
const MAX_INFLATED: u64 = 64 << 20;
/// Totals above this are refused (and accumulations stop growing there): real histograms are
/// nowhere near, and sums of counts beyond it could overflow 64 bits in percentile scans.
pub const MAX_TOTAL_COUNT: u64 = 1 << 62;

fn cookie_base(cookie: u32) -> u32 {
    cookie & !0xf0
}

fn word_size(cookie: u32) -> usize {
    let base = cookie_base(cookie);
    if base == V2_PLAIN || base == V2_COMPRESSED {
        V2_WORD
    } else {
        (((cookie & 0xf0) >> 4) & 0xe) as usize
    }
}

/// Decodes standard padded base64 of any histogram encoding.
pub fn decode_base64(text: &str) -> Result<Histo, CodecError> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|e| CodecError::Base64(e.to_string()))?;
    decode_bytes(&bytes)
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], CodecError> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len());
        match end {
            Some(end) => {
                let s = &self.buf[self.pos..end];
                self.pos = end;
                Ok(s)
            }
            None => Err(CodecError::Truncated {
                needed: self.pos.saturating_add(n),
                found: self.buf.len(),
            }),
        }
    }
    fn u32(&mut self) -> Result<u32, CodecError> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn i32(&mut self) -> Result<i32, CodecError> {
        Ok(self.u32()? as i32)
    }
    fn i64(&mut self) -> Result<i64, CodecError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(i64::from_be_bytes(a))
    }
}

/// Decodes one histogram from its binary encoding (any version, plain or compressed).
pub fn decode_bytes(bytes: &[u8]) -> Result<Histo, CodecError> {
    let mut r = Reader { buf: bytes, pos: 0 };
    let cookie = r.u32()?;
    match cookie_base(cookie) {
        V0_COMPRESSED | V1_COMPRESSED | V2_COMPRESSED => {
            let len = r.i32()?;
            if len < 0 {
                return Err(CodecError::Header(format!(
                    "negative compressed length {len}"
                )));
            }
            let compressed = r.take(len as usize)?;
            let mut inflated = Vec::new();
            flate2::read::ZlibDecoder::new(compressed)
                .take(MAX_INFLATED + 1)
                .read_to_end(&mut inflated)
                .map_err(|e| CodecError::Inflate(e.to_string()))?;
            if inflated.len() as u64 > MAX_INFLATED {
                return Err(CodecError::Inflate("inflates to more than 64 MiB".into()));
            }
            let inner = inflated
                .get(..4)
                .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
                .ok_or(CodecError::Truncated {
                    needed: 4,
                    found: inflated.len(),
                })?;
            // Java accepts a V0 body in a V0 stream, and a V1 or V2 body in a V1 or V2 stream.
            let ok = if cookie_base(cookie) == V0_COMPRESSED {
                cookie_base(inner) == V0_PLAIN
            } else {
                matches!(cookie_base(inner), V1_PLAIN | V2_PLAIN)
            };
            if !ok {
                return Err(CodecError::Cookie(inner));
            }
            decode_plain(&inflated)
        }
        V0_PLAIN | V1_PLAIN | V2_PLAIN => decode_plain(bytes),
        _ => Err(CodecError::Cookie(cookie)),
    }
}

/// The counts-array geometry of a histogram, as Java computes it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Layout {
    unit_magnitude: u32,
    sub_bucket_half_count_magnitude: u32,
    sub_bucket_count: u64,
}

impl Layout {
    pub(crate) fn new(lowest: u64, sig_digits: u32) -> Layout {
        let largest_single_unit = 2 * 10u64.pow(sig_digits);
        // ceil(log2(x)) in integers; Java uses doubles but the result is the same for these sizes.
        let sub_bucket_count_magnitude = 64 - (largest_single_unit - 1).leading_zeros();
        let sub_bucket_half_count_magnitude = sub_bucket_count_magnitude.max(1) - 1;
        Layout {
            unit_magnitude: 63 - lowest.max(1).leading_zeros(),
            sub_bucket_half_count_magnitude,
            sub_bucket_count: 1u64 << (sub_bucket_half_count_magnitude + 1),
        }
    }

    /// Lowest value of the bucket at `index`, or None when it does not fit in 64 bits.
    pub(crate) fn value_from_index(&self, index: u64) -> Option<u64> {
        let half = self.sub_bucket_count / 2;
        let mut bucket = (index >> self.sub_bucket_half_count_magnitude) as i64 - 1;
        let mut sub = (index & (half - 1)) + half;
        if bucket < 0 {
            sub -= half;
            bucket = 0;
        }
        let shift = bucket as u64 + self.unit_magnitude as u64;
        let bits = 64 - sub.leading_zeros() as u64;
        if shift + bits > 64 {
            return None;
        }
        Some(sub << shift)
    }

    /// Java's `countsArrayLength` for a histogram tracking up to `highest`.
    pub(crate) fn counts_len(&self, highest: u64) -> u64 {
        // u128: with a large unit magnitude the first shift already leaves 64 bits (the fuzzer
        // found the infinite loop that wrapping to zero caused).
        let mut smallest_untrackable = (self.sub_bucket_count as u128) << self.unit_magnitude;
        let mut buckets = 1u64;
        while smallest_untrackable <= highest as u128 {
            if smallest_untrackable > (i64::MAX / 2) as u128 {
                buckets += 1;
                break;
            }
            smallest_untrackable <<= 1;
            buckets += 1;
        }
        (buckets + 1) * (self.sub_bucket_count / 2)
    }
}

fn decode_plain(bytes: &[u8]) -> Result<Histo, CodecError> {
    let mut r = Reader { buf: bytes, pos: 0 };
    let cookie = r.u32()?;
    let base = cookie_base(cookie);
    let word = word_size(cookie);
    let (payload_len, sig, lowest, highest) = match base {
        V1_PLAIN | V2_PLAIN => {
            if base == V2_PLAIN && word != V2_WORD {
                return Err(CodecError::Cookie(cookie));
            }
            let payload = r.i32()?;
            let _normalizing_offset = r.i32()?;
            let sig = r.i32()?;
            let lowest = r.i64()?;
            let highest = r.i64()?;
            let _ratio = r.i64()?;
            if payload < 0 {
                return Err(CodecError::Header(format!(
                    "negative payload length {payload}"
                )));
            }
            (Some(payload as usize), sig, lowest, highest)
        }
        V0_PLAIN => {
            let sig = r.i32()?;
            let lowest = r.i64()?;
            let highest = r.i64()?;
            let _total = r.i64()?;
            (None, sig, lowest, highest)
        }
        _ => return Err(CodecError::Cookie(cookie)),
    };
    if !(0..=5).contains(&sig) {
        return Err(CodecError::Header(format!(
            "significant digits {sig} not in 0..=5"
        )));
    }
    if lowest < 1 {
        return Err(CodecError::Header(format!(
            "lowest discernible value {lowest} < 1"
        )));
    }
    if word != 2 && word != 4 && word != 8 && word != V2_WORD {
        return Err(CodecError::Header(format!(
            "word size {word} not 2, 4 or 8"
        )));
    }
    let lowest = lowest as u64;
    // Java raises the bound to at least twice the lowest value rather than refusing the data.
    let highest = (highest.max(0) as u64).max(lowest.saturating_mul(2));
    let layout = Layout::new(lowest, sig as u32);
    let rest = &bytes[r.pos..];
    let payload: &[u8] = match payload_len {
        Some(n) => {
            if n > rest.len() {
                return Err(CodecError::Truncated {
                    needed: r.pos + n,
                    found: bytes.len(),
                });
            }
            &rest[..n]
        }
        // V0 has no payload length: Java reads at most countsArrayLength words.
        None => {
            let max = layout.counts_len(highest).saturating_mul(word as u64);
            &rest[..rest.len().min(usize::try_from(max).unwrap_or(usize::MAX))]
        }
    };

    let mut h: Histo = Histogram::new_with_bounds(lowest, highest, sig as u8)
        .map_err(|e| CodecError::Header(format!("{e:?}")))?;
    h.auto(true);
    let mut put = |index: u64, count: u64| -> Result<(), CodecError> {
        if count == 0 {
            return Ok(());
        }
        let value = layout.value_from_index(index).ok_or_else(|| {
            CodecError::Payload(format!("count at index {index} is beyond 64-bit values"))
        })?;
        h.record_n(value, count)
            .map_err(|e| CodecError::Payload(format!("cannot record value {value}: {e:?}")))
    };
    let mut index: u64 = 0;
    let mut total: u64 = 0;
    let mut put = |index: u64, count: u64| -> Result<(), CodecError> {
        total = total.saturating_add(count);
        if total > MAX_TOTAL_COUNT {
            return Err(CodecError::Payload(format!(
                "total count exceeds 2^62 at index {index}"
            )));
        }
        put(index, count)
    };
    if word == V2_WORD {
        let mut p = 0usize;
        while p < payload.len() {
            let (raw, used) = leb128_9(&payload[p..])?;
            p += used;
            let value = ((raw >> 1) as i64) ^ -((raw & 1) as i64);
            if value < 0 {
                let zeros = value.unsigned_abs();
                if zeros > i32::MAX as u64 {
                    return Err(CodecError::Payload(format!(
                        "zero run of {zeros} is too long"
                    )));
                }
                index += zeros;
            } else {
                put(index, value as u64)?;
                index += 1;
            }
        }
    } else {
        for chunk in payload.chunks_exact(word) {
            let count: i64 = match word {
                2 => i16::from_be_bytes([chunk[0], chunk[1]]) as i64,
                4 => i32::from_be_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]) as i64,
                _ => {
                    let mut a = [0u8; 8];
                    a.copy_from_slice(chunk);
                    i64::from_be_bytes(a)
                }
            };
            if count < 0 {
                return Err(CodecError::Payload(format!(
                    "negative count {count} at index {index}"
                )));
            }
            put(index, count as u64)?;
            index += 1;
        }
    }
    Ok(h)
}

/// Reads one LEB128 word of at most 9 bytes, the 9th carrying 8 full bits (Java `ZigZagEncoding`).
fn leb128_9(b: &[u8]) -> Result<(u64, usize), CodecError> {
    let mut value: u64 = 0;
    for i in 0..9 {
        let byte = *b
            .get(i)
            .ok_or_else(|| CodecError::Payload("counts end inside a LEB128 word".into()))?;
        if i == 8 {
            value |= (byte as u64) << 56;
            return Ok((value, 9));
        }
        value |= ((byte & 0x7f) as u64) << (7 * i);
        if byte & 0x80 == 0 {
            return Ok((value, i + 1));
        }
    }
    unreachable!("the loop returns by its ninth byte")
}

/// Adds `from` into `into` the way Java's `Histogram.add` does across layouts: each bucket's
/// count is recorded at the bucket's lowest value (the crate records at the highest, which lands
/// in a different bucket when the target is finer).
pub fn add_exact(into: &mut Histo, from: &Histo) {
    for v in from.iter_recorded() {
        let value = from.lowest_equivalent(v.value_iterated_to());
        let count = v
            .count_at_value()
            .min(MAX_TOTAL_COUNT.saturating_sub(into.len()));
        if count == 0 {
            continue;
        }
        // record_n grows an auto-resizing target; saturating only when it cannot grow.
        if into.record_n(value, count).is_err() {
            into.saturating_record_n(value, count);
        }
    }
}

/// A fresh auto-resizing histogram like Java's `new Histogram(3)`, the accumulator Java's log
/// tools use.
pub fn java_accumulator() -> Histo {
    let mut h = Histogram::new(3).expect("3 significant digits is valid");
    h.auto(true);
    h
}

/// Java's `getValueAtPercentile`: one ulp below the requested percentile, count rounded up,
/// highest equivalent value of the bucket reached.
pub fn java_value_at_percentile(h: &Histo, percentile: f64) -> u64 {
    if h.is_empty() {
        return 0;
    }
    let requested = next_down(percentile).clamp(0.0, 100.0);
    let fractional = requested * h.len() as f64 / 100.0;
    let target = (fractional.ceil() as u64).max(1);
    let mut total = 0u64;
    for v in h.iter_recorded() {
        total = total.saturating_add(v.count_at_value());
        if total >= target {
            let lowest = h.lowest_equivalent(v.value_iterated_to());
            return if percentile == 0.0 {
                lowest
            } else {
                h.highest_equivalent(lowest)
            };
        }
    }
    0
}

fn next_down(x: f64) -> f64 {
    if x.is_nan() || x == f64::NEG_INFINITY {
        return x;
    }
    if x == 0.0 {
        return -f64::from_bits(1);
    }
    let bits = x.to_bits();
    f64::from_bits(if x > 0.0 { bits - 1 } else { bits + 1 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use candor_core::hist::{new_histogram, to_base64_v2_compressed};

    #[test]
    fn crate_v2_output_decodes_to_the_same_histogram() {
        let mut h = new_histogram();
        for v in [1u64, 2, 3, 1000, 1001, 65_535, 1 << 40, 3_000_000_000_000] {
            h.record_n(v, v % 5 + 1).unwrap();
        }
        let back = decode_base64(&to_base64_v2_compressed(&h)).unwrap();
        assert_eq!(back.len(), h.len());
        let a: Vec<_> = h
            .iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
            .collect();
        let b: Vec<_> = back
            .iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
            .collect();
        assert_eq!(a, b);
    }

    #[test]
    fn layout_matches_the_crate() {
        let h: Histo = Histogram::new_with_bounds(1000, 3_600_000_000_000, 3).unwrap();
        let l = Layout::new(1000, 3);
        for i in [0u64, 1, 1023, 1024, 2047, 2048, 5000, 20_000] {
            let v = l.value_from_index(i).unwrap();
            assert_eq!(h.lowest_equivalent(v), v, "index {i} value {v}");
        }
    }

    #[test]
    fn absurd_totals_are_refused_not_overflowed() {
        // Found by the fuzzer: counts whose sum passes 2^64 made percentile scans overflow.
        let mut h = new_histogram();
        for v in [10u64, 20, 30] {
            h.record_n(v, 1 << 61).unwrap();
        }
        let err = decode_base64(&to_base64_v2_compressed(&h)).unwrap_err();
        assert!(
            matches!(err, CodecError::Payload(ref m) if m.contains("2^62")),
            "{err}"
        );
        // Accumulation stops growing at the same bound instead of overflowing.
        let mut one = new_histogram();
        one.record_n(10, 1 << 61).unwrap();
        let mut acc = java_accumulator();
        for _ in 0..5 {
            add_exact(&mut acc, &one);
        }
        assert_eq!(acc.len(), MAX_TOTAL_COUNT);
        assert_eq!(
            java_value_at_percentile(&acc, 99.9),
            acc.highest_equivalent(10)
        );
    }

    #[test]
    fn counts_len_terminates_for_every_unit_magnitude() {
        for lowest in [1u64, 1 << 40, 1 << 62, u64::MAX / 2] {
            for sig in 0..=5 {
                let l = Layout::new(lowest, sig);
                assert!(l.counts_len(u64::MAX) > 0);
                assert!(l.counts_len(0) > 0);
            }
        }
        // Java: 32 buckets for 1 ns .. 1 h at 3 digits (the .hgrm footer agrees), (32 + 1) * 1024.
        assert_eq!(Layout::new(1, 3).counts_len(3_600_000_000_000), 33 * 1024);
    }

    #[test]
    fn garbage_is_an_error() {
        assert!(matches!(
            decode_bytes(&[]),
            Err(CodecError::Truncated { .. })
        ));
        assert!(matches!(
            decode_bytes(&[1, 2, 3, 4, 5]),
            Err(CodecError::Cookie(_))
        ));
        assert!(matches!(
            decode_bytes(&[0x1c, 0x84, 0x93, 0x14, 0, 0, 0, 9, 1]),
            Err(CodecError::Truncated { .. })
        ));
        assert!(matches!(decode_base64("***"), Err(CodecError::Base64(_))));
    }
}
