//! gRPC status codes: the typed `Code`, its canonical names, and the accepted set of
//! `--check-status OK,NOT_FOUND`.

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

/// A `grpc-status` code (the seventeen of the gRPC specification, `doc/statuscodes.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Code {
    Ok = 0,
    Cancelled = 1,
    Unknown = 2,
    InvalidArgument = 3,
    DeadlineExceeded = 4,
    NotFound = 5,
    AlreadyExists = 6,
    PermissionDenied = 7,
    ResourceExhausted = 8,
    FailedPrecondition = 9,
    Aborted = 10,
    OutOfRange = 11,
    Unimplemented = 12,
    Internal = 13,
    Unavailable = 14,
    DataLoss = 15,
    Unauthenticated = 16,
}

impl Code {
    /// Every code, in numeric order (the index is the code).
    pub const ALL: [Code; 17] = [
        Code::Ok,
        Code::Cancelled,
        Code::Unknown,
        Code::InvalidArgument,
        Code::DeadlineExceeded,
        Code::NotFound,
        Code::AlreadyExists,
        Code::PermissionDenied,
        Code::ResourceExhausted,
        Code::FailedPrecondition,
        Code::Aborted,
        Code::OutOfRange,
        Code::Unimplemented,
        Code::Internal,
        Code::Unavailable,
        Code::DataLoss,
        Code::Unauthenticated,
    ];

    /// Each code's name, at its number (as the specification spells them).
    pub const NAMES: [&'static str; 17] = [
        "OK",
        "CANCELLED",
        "UNKNOWN",
        "INVALID_ARGUMENT",
        "DEADLINE_EXCEEDED",
        "NOT_FOUND",
        "ALREADY_EXISTS",
        "PERMISSION_DENIED",
        "RESOURCE_EXHAUSTED",
        "FAILED_PRECONDITION",
        "ABORTED",
        "OUT_OF_RANGE",
        "UNIMPLEMENTED",
        "INTERNAL",
        "UNAVAILABLE",
        "DATA_LOSS",
        "UNAUTHENTICATED",
    ];

    /// The code of a number, `None` beyond 16.
    pub fn from_u32(value: u32) -> Option<Code> {
        Code::ALL.get(value as usize).copied()
    }

    /// The code's number, as sent in `grpc-status`.
    pub fn as_u32(self) -> u32 {
        self as u32
    }

    /// The canonical name: `OK`, `NOT_FOUND`, `UNAUTHENTICATED`, ...
    pub fn name(self) -> &'static str {
        Code::NAMES[self as usize]
    }

    /// The code of a `grpc-status` header value: ASCII digits only, as the specification sends
    /// them; no allocation (the HTTP/2 receive path calls this per response).
    pub fn from_header_value(value: &[u8]) -> Option<Code> {
        if value.is_empty() || value.len() > 2 {
            return None;
        }
        let mut number = 0u32;
        for &byte in value {
            if !byte.is_ascii_digit() {
                return None;
            }
            number = number * 10 + u32::from(byte - b'0');
        }
        Code::from_u32(number)
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A word that names no gRPC status code.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error(
    "unknown gRPC status `{word}`: expected a name ({}) or a number 0-16",
    names()
)]
pub struct UnknownCode {
    pub word: String,
}

fn names() -> String {
    Code::ALL
        .iter()
        .map(|c| c.name())
        .collect::<Vec<_>>()
        .join(", ")
}

impl FromStr for Code {
    type Err = UnknownCode;

    /// A canonical name in any case (`NOT_FOUND`, `not_found`) or its number (`5`).
    fn from_str(word: &str) -> Result<Code, UnknownCode> {
        let trimmed = word.trim();
        let unknown = || UnknownCode {
            word: word.to_string(),
        };
        if !trimmed.is_empty() && trimmed.bytes().all(|b| b.is_ascii_digit()) {
            return trimmed
                .parse::<u32>()
                .ok()
                .and_then(Code::from_u32)
                .ok_or_else(unknown);
        }
        Code::ALL
            .iter()
            .copied()
            .find(|code| code.name().eq_ignore_ascii_case(trimmed))
            .ok_or_else(unknown)
    }
}

/// A set of status codes, such as the accepted ones of `--check-status`; a bit per code, so
/// that a membership test on the receive path is one AND.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CodeSet(u32);

impl CodeSet {
    /// The set a run accepts when `--check-status` is not given: `OK` only.
    pub const OK_ONLY: CodeSet = CodeSet(1);

    pub fn empty() -> CodeSet {
        CodeSet(0)
    }

    pub fn insert(&mut self, code: Code) {
        self.0 |= 1 << code.as_u32();
    }

    pub fn contains(self, code: Code) -> bool {
        self.0 & (1 << code.as_u32()) != 0
    }

    /// The codes in numeric order.
    pub fn iter(self) -> impl Iterator<Item = Code> {
        Code::ALL
            .into_iter()
            .filter(move |code| self.contains(*code))
    }
}

impl fmt::Display for CodeSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, code) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            f.write_str(code.name())?;
        }
        Ok(())
    }
}

/// What is wrong with a `--check-status` list of gRPC codes.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CodeSetError {
    #[error(
        "--check-status: empty list: name at least one gRPC status (for example OK,NOT_FOUND)"
    )]
    Empty,
    #[error("--check-status: {0}")]
    Unknown(UnknownCode),
}

impl FromStr for CodeSet {
    type Err = CodeSetError;

    /// `OK,NOT_FOUND` (names in any case, or numbers; spaces around commas allowed).
    fn from_str(list: &str) -> Result<CodeSet, CodeSetError> {
        let mut set = CodeSet::empty();
        for word in list.split(',') {
            if word.trim().is_empty() {
                continue;
            }
            set.insert(word.parse().map_err(CodeSetError::Unknown)?);
        }
        if set == CodeSet::empty() {
            return Err(CodeSetError::Empty);
        }
        Ok(set)
    }
}

/// Appends the text of a `grpc-message` header value to `out`: the specification percent-encodes
/// it (`%20` for a space); a `%` not followed by two hex digits is kept as it is. Allocates nothing
/// once `out` holds the longest message (failure examples keep the first bytes of it).
pub fn decode_grpc_message(value: &[u8], out: &mut Vec<u8>) {
    out.extend(percent_encoding::percent_decode(value));
}

/// Calls counted by the status they ended with: the per-name counts the reports will show
/// (`UNAVAILABLE 12, DEADLINE_EXCEEDED 3`). Fixed-size, so a load thread records into it
/// without allocating, and threads' counts merge by addition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GrpcCodeCounts([u64; 17]);

impl GrpcCodeCounts {
    pub fn record(&mut self, code: Code) {
        self.0[code as usize] += 1;
    }

    pub fn get(&self, code: Code) -> u64 {
        self.0[code as usize]
    }

    pub fn merge(&mut self, other: &GrpcCodeCounts) {
        for (mine, theirs) in self.0.iter_mut().zip(other.0) {
            *mine += theirs;
        }
    }

    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// The codes seen, in numeric order, with their counts.
    pub fn iter(&self) -> impl Iterator<Item = (Code, u64)> + '_ {
        Code::ALL
            .into_iter()
            .map(|code| (code, self.get(code)))
            .filter(|(_, count)| *count > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_round_trips_through_its_name_and_number() {
        for (number, code) in Code::ALL.iter().enumerate() {
            assert_eq!(code.as_u32(), number as u32);
            assert_eq!(Code::from_u32(number as u32), Some(*code));
            assert_eq!(code.name().parse::<Code>(), Ok(*code));
            assert_eq!(code.name().to_lowercase().parse::<Code>(), Ok(*code));
            assert_eq!(number.to_string().parse::<Code>(), Ok(*code));
            assert_eq!(
                Code::from_header_value(number.to_string().as_bytes()),
                Some(*code)
            );
        }
        assert_eq!(Code::from_u32(17), None);
        assert_eq!(Code::Unauthenticated.to_string(), "UNAUTHENTICATED");
        assert_eq!(Code::DeadlineExceeded.name(), "DEADLINE_EXCEEDED");
    }

    #[test]
    fn header_values_other_than_small_decimal_numbers_are_not_codes() {
        for bad in [&b""[..], b"17", b"-1", b"1a", b" 1", b"001", b"99"] {
            assert_eq!(Code::from_header_value(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn check_status_lists_parse_to_sets() {
        let set: CodeSet = "OK,NOT_FOUND".parse().unwrap();
        assert!(set.contains(Code::Ok) && set.contains(Code::NotFound));
        assert!(!set.contains(Code::Unavailable));
        assert_eq!(set.iter().count(), 2);
        assert_eq!(set.to_string(), "OK,NOT_FOUND");
        let mixed: CodeSet = " unavailable , 4,OK".parse().unwrap();
        assert_eq!(mixed.to_string(), "OK,DEADLINE_EXCEEDED,UNAVAILABLE");
        assert_eq!(CodeSet::OK_ONLY.to_string(), "OK");
    }

    #[test]
    fn grpc_messages_are_percent_decoded() {
        let mut out = b"> ".to_vec();
        decode_grpc_message(b"symbol%20'x'%20not%20found%E2%9C%93 100%", &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "> symbol 'x' not found\u{2713} 100%"
        );
    }

    #[test]
    fn counts_by_status_record_merge_and_list_only_what_was_seen() {
        let mut one = GrpcCodeCounts::default();
        one.record(Code::Unavailable);
        one.record(Code::Unavailable);
        one.record(Code::Ok);
        let mut two = GrpcCodeCounts::default();
        two.record(Code::DeadlineExceeded);
        two.record(Code::Unavailable);
        one.merge(&two);
        assert_eq!(
            one.iter().collect::<Vec<_>>(),
            [
                (Code::Ok, 1),
                (Code::DeadlineExceeded, 1),
                (Code::Unavailable, 3)
            ]
        );
        assert_eq!((one.total(), one.get(Code::NotFound)), (5, 0));
        assert_eq!(GrpcCodeCounts::default().iter().count(), 0);
    }

    #[test]
    fn bad_check_status_lists_say_why_in_one_line() {
        assert_eq!(",".parse::<CodeSet>(), Err(CodeSetError::Empty));
        let error = "OK,NOPE".parse::<CodeSet>().unwrap_err().to_string();
        assert!(
            error.contains("`NOPE`") && error.contains("UNAUTHENTICATED"),
            "{error}"
        );
        assert!(!error.contains('\n'));
        assert!("17".parse::<Code>().is_err());
    }
}
