//! `--records FILE.jsonl`: one line per request, for every protocol. The ledger builds a
//! fixed-size `Copy` [`Record`] where it books an outcome and offers it to a bounded queue
//! allocated before the run ([`RecordSink::offer`]: a full queue counts the record as dropped,
//! it never blocks a load thread); one writer thread formats the lines into a `BufWriter`.

use candor_core::phase_results::FailureClass;
use crossbeam_channel::{Receiver, Sender};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Records the queue holds before the writer must catch up: at ~170 bytes a line the writer
/// formats far more than a load thread books, so only a stalled disk fills it.
pub const QUEUE_RECORDS: usize = 1 << 16;

/// How a request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Completed,
    Failed,
    /// Still outstanding (sent or not) when the run ended.
    Unfinished,
}

impl Outcome {
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Completed => "completed",
            Outcome::Failed => "failed",
            Outcome::Unfinished => "unfinished",
        }
    }
}

/// One request as `--records` writes it. Times are ns from the run's start (its first
/// intended send); `None`: it did not happen (never sent, no byte came, not a stream).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    /// `run --repeat`: the run (from 1) it belongs to; 0: a single run.
    pub run: u32,
    /// The entry's index in the whole schedule.
    pub seq: u64,
    /// The prepared request it sent (`None`: never taken from the schedule).
    pub request: Option<u32>,
    /// The load thread's lane among all threads of all shards.
    pub lane: u32,
    pub measured: bool,
    pub outcome: Outcome,
    pub class: Option<FailureClass>,
    /// A failure that came with a response (its status or check failed): its response and
    /// service times are booked as a completed one's are.
    pub answered: bool,
    /// The HTTP status or the protocol's reply code (0: none).
    pub status: u16,
    pub intended: u64,
    pub sent: Option<u64>,
    pub first_byte: Option<u64>,
    /// Events its stream delivered (`None`: not read as a stream).
    pub events: Option<u64>,
    pub first_event: Option<u64>,
    pub first_token: Option<u64>,
    pub last_event: Option<u64>,
    pub last_token: Option<u64>,
    /// When it completed, failed, or was given up as unfinished.
    pub end: u64,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
}

/// A load thread's end of the queue.
#[derive(Clone, Debug)]
pub struct RecordSink {
    tx: Sender<Record>,
    dropped: Arc<AtomicU64>,
    /// `run --repeat`: the run (from 1) whose records these are; 0: a single run.
    pub run: u32,
}

impl RecordSink {
    /// Queues `r`, or counts it as dropped when the queue is full: never waits.
    #[inline]
    pub fn offer(&self, mut r: Record) {
        r.run = self.run;
        if self.tx.try_send(r).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// A sink and the queue's other end, for tests that read the records as booked.
#[cfg(test)]
pub(crate) fn test_sink(capacity: usize) -> (RecordSink, Receiver<Record>) {
    let (tx, rx) = crossbeam_channel::bounded(capacity);
    let dropped = Arc::new(AtomicU64::new(0));
    (
        RecordSink {
            tx,
            dropped,
            run: 0,
        },
        rx,
    )
}

#[derive(Debug, thiserror::Error)]
pub enum RecordsError {
    // The cause is part of the one line, not a chained source printed twice.
    #[error("--records {path}: {cause}")]
    Open {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("--records {path}: writing: {cause}")]
    Write {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("--records: the writer thread failed")]
    Thread,
}

/// What the file came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordsSummary {
    pub written: u64,
    pub dropped: u64,
}

/// The writer thread and its file.
pub struct RecordWriter {
    path: PathBuf,
    closing: Arc<AtomicBool>,
    dropped: Arc<AtomicU64>,
    handle: std::thread::JoinHandle<std::io::Result<u64>>,
}

/// Creates `path` (truncating it) and starts its writer; `names` are the request names by
/// prepared request index (empty: the run has none). Fails before any load on a bad path.
pub fn open(path: &Path, names: Vec<String>) -> Result<(RecordSink, RecordWriter), RecordsError> {
    let file = std::fs::File::create(path).map_err(|cause| RecordsError::Open {
        path: path.to_path_buf(),
        cause,
    })?;
    let (tx, rx) = crossbeam_channel::bounded(QUEUE_RECORDS);
    let closing = Arc::new(AtomicBool::new(false));
    let dropped = Arc::new(AtomicU64::new(0));
    let c = closing.clone();
    let handle = std::thread::Builder::new()
        .name("candor-records".into())
        .spawn(move || write_all(std::io::BufWriter::new(file), &rx, &c, &names))
        .map_err(|cause| RecordsError::Open {
            path: path.to_path_buf(),
            cause,
        })?;
    Ok((
        RecordSink {
            tx,
            dropped: dropped.clone(),
            run: 0,
        },
        RecordWriter {
            path: path.to_path_buf(),
            closing,
            dropped,
            handle,
        },
    ))
}

impl RecordWriter {
    /// Call once every load thread has ended: writes what is queued, flushes, and says how
    /// many lines were written and dropped.
    pub fn finish(self) -> Result<RecordsSummary, RecordsError> {
        self.closing.store(true, Ordering::Release);
        let written = self
            .handle
            .join()
            .map_err(|_| RecordsError::Thread)?
            .map_err(|cause| RecordsError::Write {
                path: self.path.clone(),
                cause,
            })?;
        Ok(RecordsSummary {
            written,
            dropped: self.dropped.load(Ordering::Relaxed),
        })
    }
}

fn write_all(
    mut out: impl Write,
    rx: &Receiver<Record>,
    closing: &AtomicBool,
    names: &[String],
) -> std::io::Result<u64> {
    let mut n = 0u64;
    loop {
        match rx.recv_timeout(Duration::from_millis(20)) {
            Ok(r) => {
                write_line(&mut out, &r, names)?;
                n += 1;
            }
            Err(_) if closing.load(Ordering::Acquire) => break,
            Err(_) => {}
        }
    }
    // Closing: every load thread has ended, so what is queued is all there will be.
    while let Ok(r) = rx.try_recv() {
        write_line(&mut out, &r, names)?;
        n += 1;
    }
    out.flush()?;
    Ok(n)
}

/// Formats one record as a JSON line (fields in docs/formats.md).
pub fn write_line(out: &mut impl Write, r: &Record, names: &[String]) -> std::io::Result<()> {
    if r.run != 0 {
        write!(out, "{{\"run\":{},", r.run)?;
    } else {
        out.write_all(b"{")?;
    }
    write!(
        out,
        "\"seq\":{},\"phase\":\"{}\",\"outcome\":\"{}\"",
        r.seq,
        if r.measured { "measured" } else { "warmup" },
        r.outcome.name()
    )?;
    if let Some(c) = r.class {
        write!(
            out,
            ",\"class\":\"{}\",\"answered\":{}",
            c.name(),
            r.answered
        )?;
    }
    if r.status != 0 {
        write!(out, ",\"status\":{}", r.status)?;
    }
    if let Some(i) = r.request {
        write!(out, ",\"request\":{i}")?;
        if let Some(name) = names.get(i as usize) {
            out.write_all(b",\"name\":")?;
            serde_json::to_writer(&mut *out, name)?;
        }
    }
    write!(out, ",\"thread\":{},\"intended_ns\":{}", r.lane, r.intended)?;
    let opt = [
        ("sent_ns", r.sent),
        ("first_byte_ns", r.first_byte),
        ("first_event_ns", r.first_event),
        ("first_token_ns", r.first_token),
        ("last_event_ns", r.last_event),
        ("last_token_ns", r.last_token),
    ];
    for (k, v) in opt {
        if let Some(v) = v {
            write!(out, ",\"{k}\":{v}")?;
        }
    }
    write!(out, ",\"end_ns\":{}", r.end)?;
    if let Some(v) = r.events {
        write!(out, ",\"events\":{v}")?;
    }
    if let Some(v) = r.input_tokens {
        write!(out, ",\"input_tokens\":{v}")?;
    }
    if let Some(v) = r.output_tokens {
        write!(out, ",\"output_tokens\":{v}")?;
    }
    out.write_all(b"}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> Record {
        Record {
            run: 0,
            seq: 7,
            request: Some(1),
            lane: 2,
            measured: true,
            outcome: Outcome::Failed,
            class: Some(FailureClass::Timeout),
            answered: false,
            status: 0,
            intended: 1_000,
            sent: Some(1_500),
            first_byte: None,
            events: None,
            first_event: None,
            first_token: None,
            last_event: None,
            last_token: None,
            end: 9_000,
            input_tokens: None,
            output_tokens: None,
        }
    }

    #[test]
    fn a_line_names_only_what_happened() {
        let mut out = Vec::new();
        write_line(&mut out, &record(), &["a".into(), "b\"q".into()]).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"seq\":7,\"phase\":\"measured\",\"outcome\":\"failed\",\"class\":\"timeout\",\"answered\":false,\
             \"request\":1,\"name\":\"b\\\"q\",\"thread\":2,\"intended_ns\":1000,\
             \"sent_ns\":1500,\"end_ns\":9000}\n"
        );
    }

    #[test]
    fn a_full_queue_drops_and_counts_and_the_writer_writes_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.jsonl");
        let (sink, writer) = open(&path, Vec::new()).unwrap();
        for _ in 0..3 {
            sink.offer(record());
        }
        let s = writer.finish().unwrap();
        assert_eq!((s.written, s.dropped), (3, 0));
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 3);

        let (tx, _rx) = crossbeam_channel::bounded(1);
        let dropped = Arc::new(AtomicU64::new(0));
        let full = RecordSink {
            tx,
            dropped: dropped.clone(),
            run: 0,
        };
        full.offer(record());
        full.offer(record());
        assert_eq!(dropped.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn a_bad_path_fails_at_open() {
        let Err(e) = open(Path::new("/nonexistent-dir/x.jsonl"), Vec::new()) else {
            panic!("opened a path in a missing folder")
        };
        assert!(e
            .to_string()
            .starts_with("--records /nonexistent-dir/x.jsonl:"));
    }
}
