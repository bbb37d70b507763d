//! `--records FILE.jsonl`: one line per request, for every protocol. The ledger builds a
//! fixed-size `Copy` [`Record`] where it books an outcome and offers it to a bounded queue
//! allocated before the run ([`RecordSink::offer`]: a full queue counts the record as dropped,
//! it never blocks a load thread); one writer thread formats the lines into a `BufWriter`.
//! A streamed response's gaps between events go the same way, a few at a time
//! ([`GapChunk`]: each load thread fills one fixed chunk and sends it when full or before its
//! next record), and the writer writes them in their request's line.

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

/// Gaps a [`GapChunk`] carries: a chunk is no larger than a [`Record`], so the queue's storage
/// stays what records alone need.
pub const GAP_CHUNK: usize = 8;

/// Gaps the writer keeps for one request's line; more are counted (`gaps_cut`), with the
/// longest, but not written: a stream with no end cannot fill memory.
pub const LINE_GAPS: usize = 4096;

/// Gaps the writer holds for all requests whose lines are still to come (a dropped record's
/// stay until the end): past this, a request's further gaps are cut as past [`LINE_GAPS`].
pub const PENDING_GAPS: usize = 1 << 22;

/// The top bit of a gap in a [`GapChunk`]: the gap is an inter-token latency (both events
/// carried content), not only an event gap. No gap is 2^63 ns long.
const TOKEN_BIT: u64 = 1 << 63;

/// Up to [`GAP_CHUNK`] gaps between events of streamed responses, each with its request's
/// schedule index, in the order they were found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct GapChunk {
    pub run: u32,
    len: u8,
    seq: [u64; GAP_CHUNK],
    /// The gap's length in ns, [`TOKEN_BIT`] set for an inter-token latency.
    gap: [u64; GAP_CHUNK],
}

impl GapChunk {
    /// Adds a gap of request `seq`; true when the chunk is then full.
    #[inline]
    pub fn push(&mut self, seq: u64, ns: u64, token: bool) -> bool {
        let i = usize::from(self.len);
        self.seq[i] = seq;
        self.gap[i] = ns.min(TOKEN_BIT - 1) | if token { TOKEN_BIT } else { 0 };
        self.len += 1;
        usize::from(self.len) == GAP_CHUNK
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The gaps: request, length in ns, and whether it is an inter-token latency.
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64, bool)> + '_ {
        (0..usize::from(self.len)).map(|i| {
            (
                self.seq[i],
                self.gap[i] & !TOKEN_BIT,
                self.gap[i] & TOKEN_BIT != 0,
            )
        })
    }
}

/// What the queue carries: a request's record, or gaps of requests whose records follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entry {
    Record(Record),
    Gaps(GapChunk),
}

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
    /// Of the input tokens, those the server's prefix cache served, when its usage said them.
    pub cached_tokens: Option<u64>,
}

/// A load thread's end of the queue.
#[derive(Clone, Debug)]
pub struct RecordSink {
    tx: Sender<Entry>,
    dropped: Arc<AtomicU64>,
    /// Gaps of chunks the queue had no room for.
    gaps_dropped: Arc<AtomicU64>,
    /// `run --repeat`: the run (from 1) whose records these are; 0: a single run.
    pub run: u32,
}

impl RecordSink {
    /// Queues `r`, or counts it as dropped when the queue is full: never waits.
    #[inline]
    pub fn offer(&self, mut r: Record) {
        r.run = self.run;
        if self.tx.try_send(Entry::Record(r)).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Queues `chunk`'s gaps and empties it, or counts them as dropped: never waits.
    #[inline]
    pub fn offer_gaps(&self, chunk: &mut GapChunk) {
        chunk.run = self.run;
        if self.tx.try_send(Entry::Gaps(*chunk)).is_err() {
            self.gaps_dropped
                .fetch_add(u64::from(chunk.len), Ordering::Relaxed);
        }
        chunk.len = 0;
    }
}

/// A sink and the queue's other end, for tests that read the records as booked.
#[cfg(test)]
pub(crate) fn test_sink(capacity: usize) -> (RecordSink, Receiver<Entry>) {
    let (tx, rx) = crossbeam_channel::bounded(capacity);
    let dropped = Arc::new(AtomicU64::new(0));
    (
        RecordSink {
            tx,
            dropped,
            gaps_dropped: Default::default(),
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
    /// Gaps between events not in the file: their chunk found the queue full, or their line
    /// had [`LINE_GAPS`] already (each line says how many of its own were cut).
    pub gaps_dropped: u64,
    pub gaps_cut: u64,
}

impl RecordsSummary {
    /// What the results should warn of, each line opening with `label` (`--records`).
    pub fn warnings(&self, label: &str) -> Vec<String> {
        let mut out = Vec::new();
        if self.dropped > 0 {
            out.push(format!(
                "{label}: {} records dropped (the writer fell behind; {} written)",
                self.dropped, self.written
            ));
        }
        if self.gaps_dropped > 0 {
            out.push(format!(
                "{label}: {} gaps between events dropped (the writer fell behind): the lines' \
                 itl_ns and event_gaps_ns miss them",
                self.gaps_dropped
            ));
        }
        out
    }
}

/// The writer thread and its file.
pub struct RecordWriter {
    path: PathBuf,
    closing: Arc<AtomicBool>,
    dropped: Arc<AtomicU64>,
    gaps_dropped: Arc<AtomicU64>,
    handle: std::thread::JoinHandle<std::io::Result<(u64, u64)>>,
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
    let gaps_dropped = Arc::new(AtomicU64::new(0));
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
            gaps_dropped: gaps_dropped.clone(),
            run: 0,
        },
        RecordWriter {
            path: path.to_path_buf(),
            closing,
            dropped,
            gaps_dropped,
            handle,
        },
    ))
}

impl RecordWriter {
    /// Call once every load thread has ended: writes what is queued, flushes, and says how
    /// many lines were written and dropped.
    pub fn finish(self) -> Result<RecordsSummary, RecordsError> {
        self.closing.store(true, Ordering::Release);
        let (written, gaps_cut) = self
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
            gaps_dropped: self.gaps_dropped.load(Ordering::Relaxed),
            gaps_cut,
        })
    }
}

/// One request's gaps, kept by the writer until its record comes.
#[derive(Default)]
pub struct LineGaps {
    /// Inter-token latencies (gaps between content chunks), and the gaps between any two
    /// consecutive events, each in arrival order (the engine's `itl` and `event_gap`).
    pub itl: Vec<u64>,
    pub events: Vec<u64>,
    /// Gaps past [`LINE_GAPS`] (or [`PENDING_GAPS`]): counted, the longest kept.
    pub cut: u64,
    pub cut_max: u64,
}

/// The writer's gaps of requests whose records are still to come. Allocation here is the
/// writer thread's, never a load thread's.
#[derive(Default)]
struct Pending {
    by_request: std::collections::HashMap<(u32, u64), LineGaps>,
    held: usize,
    cut: u64,
}

impl Pending {
    fn add(&mut self, c: &GapChunk) {
        for (seq, ns, token) in c.iter() {
            let g = self.by_request.entry((c.run, seq)).or_default();
            if g.itl.len() + g.events.len() >= LINE_GAPS || self.held >= PENDING_GAPS {
                g.cut += 1;
                g.cut_max = g.cut_max.max(ns);
                self.cut += 1;
                continue;
            }
            self.held += 1;
            if token {
                g.itl.push(ns);
            } else {
                g.events.push(ns);
            }
        }
    }

    fn take(&mut self, r: &Record) -> Option<LineGaps> {
        let g = self.by_request.remove(&(r.run, r.seq))?;
        self.held -= g.itl.len() + g.events.len();
        Some(g)
    }
}

/// Writes every entry until `closing`; the lines written and the gaps cut.
fn write_all(
    mut out: impl Write,
    rx: &Receiver<Entry>,
    closing: &AtomicBool,
    names: &[String],
) -> std::io::Result<(u64, u64)> {
    let mut n = 0u64;
    let mut pending = Pending::default();
    let mut one = |e: Entry, out: &mut dyn Write| -> std::io::Result<()> {
        match e {
            Entry::Gaps(c) => pending.add(&c),
            Entry::Record(r) => {
                let gaps = pending.take(&r);
                write_line(out, &r, names, gaps.as_ref())?;
                n += 1;
            }
        }
        Ok(())
    };
    loop {
        match rx.recv_timeout(Duration::from_millis(20)) {
            Ok(e) => one(e, &mut out)?,
            Err(_) if closing.load(Ordering::Acquire) => break,
            Err(_) => {}
        }
    }
    // Closing: every load thread has ended, so what is queued is all there will be.
    while let Ok(e) = rx.try_recv() {
        one(e, &mut out)?;
    }
    out.flush()?;
    Ok((n, pending.cut))
}

/// Formats one record as a JSON line (fields in docs/formats.md).
pub fn write_line(
    out: &mut dyn Write,
    r: &Record,
    names: &[String],
    gaps: Option<&LineGaps>,
) -> std::io::Result<()> {
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
    if let Some(v) = r.cached_tokens {
        write!(out, ",\"cached_tokens\":{v}")?;
    }
    if let Some(g) = gaps {
        for (key, v) in [("itl_ns", &g.itl), ("event_gaps_ns", &g.events)] {
            if v.is_empty() {
                continue;
            }
            write!(out, ",\"{key}\":[")?;
            for (i, ns) in v.iter().enumerate() {
                let sep = if i == 0 { "" } else { "," };
                write!(out, "{sep}{ns}")?;
            }
            out.write_all(b"]")?;
        }
        if g.cut > 0 {
            write!(
                out,
                ",\"gaps_cut\":{},\"gaps_cut_max_ns\":{}",
                g.cut, g.cut_max
            )?;
        }
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
            cached_tokens: None,
        }
    }

    #[test]
    fn a_line_names_only_what_happened() {
        let mut out = Vec::new();
        write_line(&mut out, &record(), &["a".into(), "b\"q".into()], None).unwrap();
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

        let (full, _rx) = test_sink(1);
        let dropped = full.dropped.clone();
        full.offer(record());
        full.offer(record());
        assert_eq!(dropped.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn gaps_are_written_in_their_requests_line_and_a_long_streams_are_cut_and_counted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.jsonl");
        let (sink, writer) = open(&path, Vec::new()).unwrap();
        let mut c = GapChunk::default();
        // Request 7: two inter-token latencies around an event gap; request 8: one gap. The
        // first chunk is full at 8 gaps: request 9's first LINE_GAPS + 3 gaps fill many.
        assert!(!c.push(7, 10, true));
        c.push(8, 99, false);
        c.push(7, 20, false);
        c.push(7, 30, true);
        for k in 0..(LINE_GAPS as u64 + 3) {
            if c.push(9, 1_000 + k, true) {
                sink.offer_gaps(&mut c);
            }
        }
        sink.offer_gaps(&mut c);
        assert!(c.is_empty());
        for seq in [7, 8, 9, 10] {
            sink.offer(Record { seq, ..record() });
        }
        let s = writer.finish().unwrap();
        assert_eq!(
            (s.written, s.dropped, s.gaps_dropped, s.gaps_cut),
            (4, 0, 0, 3)
        );
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].ends_with(",\"end_ns\":9000,\"itl_ns\":[10,30],\"event_gaps_ns\":[20]}"),
            "{}",
            lines[0]
        );
        assert!(
            lines[1].ends_with(",\"end_ns\":9000,\"event_gaps_ns\":[99]}"),
            "{}",
            lines[1]
        );
        let last = 1_000 + LINE_GAPS as u64 + 2;
        assert!(
            lines[2].ends_with(&format!(",\"gaps_cut\":3,\"gaps_cut_max_ns\":{last}}}")),
            "{}",
            &lines[2][lines[2].len() - 60..]
        );
        let v: serde_json::Value = serde_json::from_str(lines[2]).unwrap();
        assert_eq!(v["itl_ns"].as_array().unwrap().len(), LINE_GAPS);
        assert!(lines[3].ends_with(",\"end_ns\":9000}"), "{}", lines[3]);
        // A chunk the queue has no room for counts its gaps as dropped.
        let (full, _rx) = test_sink(1);
        full.offer(record());
        c.push(1, 5, true);
        c.push(1, 6, true);
        full.offer_gaps(&mut c);
        assert_eq!(full.gaps_dropped.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn a_gap_chunk_takes_no_more_room_in_the_queue_than_a_record() {
        use std::mem::size_of;
        assert!(size_of::<GapChunk>() <= size_of::<Record>());
        // So the queue holds what records alone would: the tag costs at most a word.
        assert!(size_of::<Entry>() <= size_of::<Record>() + 8);
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
