//! The `grpc-timeout` request header of `-T`: at most 8 digits and a unit, the finest unit
//! that holds the timeout, rounded up so that the server's deadline is never shorter than the
//! client's.

/// Largest value the header may carry: "TimeoutValue → {positive integer as ASCII string of at
/// most 8 digits}" (gRPC over HTTP/2).
const MAX_VALUE: u64 = 99_999_999;

/// The header's units, finest first, with their length in nanoseconds.
const UNITS: [(u8, u64); 6] = [
    (b'n', 1),
    (b'u', 1_000),
    (b'm', 1_000_000),
    (b'S', 1_000_000_000),
    (b'M', 60_000_000_000),
    (b'H', 3_600_000_000_000),
];

/// An encoded `grpc-timeout` value, kept inline (no allocation): digits then the unit.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct GrpcTimeout {
    bytes: [u8; 9],
    len: u8,
}

impl GrpcTimeout {
    /// The header value for a timeout of `ns` nanoseconds. Timeouts beyond 99,999,999 hours
    /// (11,000 years) are sent as that.
    pub fn from_ns(ns: u64) -> GrpcTimeout {
        let (unit, value) = UNITS
            .iter()
            .find_map(|&(unit, unit_ns)| {
                let value = ns.div_ceil(unit_ns);
                (value <= MAX_VALUE).then_some((unit, value))
            })
            .unwrap_or((b'H', MAX_VALUE));
        let mut digits = [0u8; 8];
        let mut rest = value;
        let mut count = 0;
        loop {
            digits[count] = b'0' + (rest % 10) as u8;
            count += 1;
            rest /= 10;
            if rest == 0 {
                break;
            }
        }
        let mut bytes = [0u8; 9];
        for i in 0..count {
            bytes[i] = digits[count - 1 - i];
        }
        bytes[count] = unit;
        GrpcTimeout {
            bytes,
            len: count as u8 + 1,
        }
    }

    /// The header value's bytes, such as `250m`.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    pub fn as_str(&self) -> &str {
        std::str::from_utf8(self.as_bytes()).expect("digits and an ASCII unit")
    }
}

impl std::fmt::Debug for GrpcTimeout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GrpcTimeout({})", self.as_str())
    }
}

impl std::fmt::Display for GrpcTimeout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(ns: u64) -> String {
        GrpcTimeout::from_ns(ns).to_string()
    }

    #[test]
    fn the_finest_unit_that_fits_in_eight_digits_is_chosen() {
        assert_eq!(enc(0), "0n");
        assert_eq!(enc(1), "1n");
        assert_eq!(enc(99_999_999), "99999999n");
        assert_eq!(enc(100_000_000), "100000u");
        assert_eq!(enc(2_000_000_000), "2000000u");
        assert_eq!(enc(30_000_000_000), "30000000u");
        assert_eq!(enc(100_000_000_000), "100000m");
        assert_eq!(enc(99_999_999_000_000), "99999999m");
        assert_eq!(enc(100_000_000_000_000), "100000S");
        assert_eq!(enc(99_999_999 * 60_000_000_000 + 1), "1666667H");
        assert_eq!(enc(u64::MAX), "5124096H");
    }

    #[test]
    fn values_are_rounded_up_never_shortening_the_deadline() {
        // 100 ms and 1 ns: 100000.001 µs, sent as 100001u.
        assert_eq!(enc(100_000_001), "100001u");
        for ns in [
            1u64,
            123_456_789,
            987_654_321_012,
            5_000_000_000_001,
            u64::MAX / 3,
        ] {
            let t = GrpcTimeout::from_ns(ns);
            let text = t.as_str();
            let (digits, unit) = text.split_at(text.len() - 1);
            assert!(digits.len() <= 8, "{text}");
            let unit_ns = UNITS.iter().find(|u| u.0 == unit.as_bytes()[0]).unwrap().1;
            let value: u64 = digits.parse().unwrap();
            assert!(
                u128::from(value) * u128::from(unit_ns) >= u128::from(ns),
                "{text} < {ns}"
            );
            assert!(
                u128::from(value - 1) * u128::from(unit_ns) < u128::from(ns),
                "{text} rounds up by more than one unit"
            );
        }
    }
}
