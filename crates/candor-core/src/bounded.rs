//! Bounded reads of the files a user names (`--requests`, `--data`, `--body-file`, `--replay`,
//! results files): a file, a pipe or a device such as `/dev/zero` is read in chunks and refused
//! as soon as it passes its limit, or as soon as one of its lines passes the line limit, so that a
//! wrong or hostile path ends in a one-line error instead of exhausting memory.

use std::io::{BufRead, Read};
use std::path::Path;
use thiserror::Error;

/// The longest line candor reads from a line-oriented input (a request line, a trace record, a CSV
/// row): a request with a body of a few MiB fits, a runaway line is refused before it is parsed.
pub const MAX_LINE_BYTES: usize = 4 << 20;

/// The largest `--requests` file: parsed whole before the run, so its size is memory; a quarter of
/// a GiB is about a million requests with bodies of a few hundred bytes.
pub const MAX_REQUESTS_FILE_BYTES: u64 = 256 << 20;
/// The largest `--data` CSV file (read whole before the run, like a request set).
pub const MAX_DATA_FILE_BYTES: u64 = 256 << 20;
/// The largest `--body-file` or `--payload-file`: one request body, kept in memory and copied per
/// request.
pub const MAX_BODY_FILE_BYTES: u64 = 64 << 20;
/// The largest `--ca` PEM file: a system's whole bundle is a few hundred KiB.
pub const MAX_CA_FILE_BYTES: u64 = 16 << 20;
/// The largest `--replay` trace. A trace is streamed, never held whole, so this only bounds how
/// long the scan before the run may read (an access log of a busy day fits); an endless source
/// such as a pipe that never closes is refused instead of scanned forever.
pub const MAX_REPLAY_FILE_BYTES: u64 = 16 << 30;

/// Why a bounded read failed; the caller names the file and the flag.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum BoundedReadError {
    #[error("{0}")]
    Io(String),
    #[error("larger than {}, the most candor reads for it", format_limit(*limit))]
    TooLarge { limit: u64 },
    #[error("line {line} is longer than {}, the longest line candor reads", format_limit(*limit as u64))]
    LineTooLong { line: u64, limit: usize },
}

/// A byte limit in words: `16 GiB`, `256 MiB`, `4 MiB`, `512 KiB`, `100 bytes`.
pub fn format_limit(bytes: u64) -> String {
    if bytes >= 1 << 30 && bytes.is_multiple_of(1 << 30) {
        format!("{} GiB", bytes >> 30)
    } else if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1 << 10 && bytes.is_multiple_of(1 << 10) {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes} bytes")
    }
}

/// Reads the whole file at `path` if it has at most `max_bytes` bytes and, with `max_line`, no
/// line longer than that (newline excluded). A regular file that is too large is refused from its
/// size before it is read; anything else is refused as soon as it passes a limit.
pub fn read_file(
    path: &Path,
    max_bytes: u64,
    max_line: Option<usize>,
) -> Result<Vec<u8>, BoundedReadError> {
    let io = |e: std::io::Error| BoundedReadError::Io(e.to_string());
    let file = std::fs::File::open(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if meta.is_dir() {
        return Err(BoundedReadError::Io("is a directory".into()));
    }
    if meta.is_file() && meta.len() > max_bytes {
        return Err(BoundedReadError::TooLarge { limit: max_bytes });
    }
    read_all(file, meta.len().min(max_bytes), max_bytes, max_line)
}

/// [`read_file`] on any reader (`capacity_hint`: the bytes expected, for one allocation).
pub fn read_all<R: Read>(
    mut input: R,
    capacity_hint: u64,
    max_bytes: u64,
    max_line: Option<usize>,
) -> Result<Vec<u8>, BoundedReadError> {
    let mut out = Vec::with_capacity(capacity_hint as usize);
    let mut chunk = vec![0u8; 64 << 10];
    let (mut line, mut line_len) = (1u64, 0usize);
    loop {
        let n = match input.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(BoundedReadError::Io(e.to_string())),
        };
        if out.len() as u64 + n as u64 > max_bytes {
            return Err(BoundedReadError::TooLarge { limit: max_bytes });
        }
        if let Some(limit) = max_line {
            for &b in &chunk[..n] {
                if b == b'\n' {
                    line += 1;
                    line_len = 0;
                } else {
                    line_len += 1;
                    if line_len > limit {
                        return Err(BoundedReadError::LineTooLong { line, limit });
                    }
                }
            }
        }
        out.extend_from_slice(&chunk[..n]);
    }
    Ok(out)
}

/// What [`read_line`] read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Line {
    /// A line (with its newline, if it had one) was appended to the buffer.
    Read,
    /// The input has ended.
    End,
}

/// Appends the next line of `input` (newline included) to `buf` (cleared first), refusing one
/// longer than `max_line` bytes before its newline after reading at most `max_line + 1` bytes of
/// it; `line` is its 1-based number, for the error.
pub fn read_line<R: BufRead>(
    input: &mut R,
    buf: &mut Vec<u8>,
    max_line: usize,
    line: u64,
) -> Result<Line, BoundedReadError> {
    buf.clear();
    let n = input
        .by_ref()
        .take(max_line as u64 + 1)
        .read_until(b'\n', buf)
        .map_err(|e| BoundedReadError::Io(e.to_string()))?;
    if n == 0 {
        return Ok(Line::End);
    }
    let content = buf.len() - usize::from(buf.last() == Some(&b'\n'));
    if content > max_line {
        return Err(BoundedReadError::LineTooLong {
            line,
            limit: max_line,
        });
    }
    Ok(Line::Read)
}

/// The text without a leading UTF-8 byte order mark (which editors on Windows write and which is
/// not part of the first line's content).
pub fn strip_bom(bytes: &[u8]) -> &[u8] {
    bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_enforced_while_reading_not_after() {
        // An endless source (like /dev/zero) ends at the limit, not at memory's end.
        let endless = std::io::repeat(b'x');
        assert_eq!(
            read_all(endless, 0, 1 << 20, None).unwrap_err(),
            BoundedReadError::TooLarge { limit: 1 << 20 }
        );
        let endless_line = std::io::repeat(b'x');
        assert_eq!(
            read_all(endless_line, 0, 1 << 30, Some(1000)).unwrap_err(),
            BoundedReadError::LineTooLong {
                line: 1,
                limit: 1000
            }
        );
        // Exactly at the limits passes; one byte over a line names that line.
        let ok = "a\n".repeat(10) + &"b".repeat(8);
        assert_eq!(
            read_all(ok.as_bytes(), 0, 28, Some(8)).unwrap(),
            ok.as_bytes()
        );
        let long = "a\n".repeat(10) + &"b".repeat(9);
        assert_eq!(
            read_all(long.as_bytes(), 0, 1000, Some(8)).unwrap_err(),
            BoundedReadError::LineTooLong { line: 11, limit: 8 }
        );
        assert!(read_all(ok.as_bytes(), 0, 27, None).is_err());
    }

    #[test]
    fn files_are_refused_by_size_and_devices_while_read() {
        let dir = tempfile_dir();
        let p = dir.join("big");
        std::fs::write(&p, vec![b'\n'; 2000]).unwrap();
        assert_eq!(
            read_file(&p, 1999, None).unwrap_err().to_string(),
            "larger than 1999 bytes, the most candor reads for it"
        );
        assert_eq!(read_file(&p, 2000, Some(1)).unwrap().len(), 2000);
        assert_eq!(
            read_file(Path::new("/dev/zero"), 8 << 20, Some(MAX_LINE_BYTES))
                .unwrap_err()
                .to_string(),
            "line 1 is longer than 4 MiB, the longest line candor reads"
        );
        assert_eq!(
            read_file(Path::new("/dev/zero"), 1 << 20, None).unwrap_err(),
            BoundedReadError::TooLarge { limit: 1 << 20 }
        );
        assert_eq!(
            read_file(&dir, 10, None).unwrap_err().to_string(),
            "is a directory"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    fn tempfile_dir() -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("candor-bounded-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn lines_are_read_one_by_one_within_the_limit() {
        let mut input = std::io::BufReader::new(&b"abc\ndefgh\nij"[..]);
        let mut buf = Vec::new();
        assert_eq!(read_line(&mut input, &mut buf, 4, 1), Ok(Line::Read));
        assert_eq!(buf, b"abc\n");
        assert_eq!(
            read_line(&mut input, &mut buf, 4, 2),
            Err(BoundedReadError::LineTooLong { line: 2, limit: 4 })
        );
        let mut input = std::io::BufReader::new(&b"abcd\nij"[..]);
        assert_eq!(read_line(&mut input, &mut buf, 4, 1), Ok(Line::Read));
        assert_eq!(read_line(&mut input, &mut buf, 4, 2), Ok(Line::Read));
        assert_eq!(buf, b"ij");
        assert_eq!(read_line(&mut input, &mut buf, 4, 3), Ok(Line::End));
        let mut zero = std::io::BufReader::new(std::io::repeat(0));
        assert!(read_line(&mut zero, &mut buf, MAX_LINE_BYTES, 1).is_err());
        assert!(buf.len() <= MAX_LINE_BYTES + 1);
    }

    #[test]
    fn a_byte_order_mark_is_dropped() {
        assert_eq!(strip_bom(b"\xEF\xBB\xBF{\"a\":1}"), b"{\"a\":1}");
        assert_eq!(strip_bom(b"{}"), b"{}");
        assert_eq!(format_limit(256 << 20), "256 MiB");
        assert_eq!(format_limit(512 << 10), "512 KiB");
        assert_eq!(format_limit(MAX_REPLAY_FILE_BYTES), "16 GiB");
    }
}
