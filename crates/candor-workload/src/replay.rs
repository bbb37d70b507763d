//! Trace replay (`--replay FILE`): the schedule taken from recorded traffic. Two formats,
//! detected from the content: JSON lines (`{"at": seconds, "method", "path", "headers", "body"}`)
//! and the NCSA Common/Combined Log Format of nginx and Apache, whose one-second timestamps are
//! spread evenly over their second in file order.
//!
//! The file is read twice, each time streamed in bounded memory: once before the run
//! ([`ReplayPlan::scan`]: format, record count, malformed lines, the first timestamp), and once
//! during it by a reader thread ([`ReplayPlan::stream`]) that encodes each record's HTTP/1.1
//! request ahead of the load threads into recycled batches, so the load threads only copy bytes.

use candor_core::bounded::{self, MAX_LINE_BYTES, MAX_REPLAY_FILE_BYTES};
use crossbeam_channel::{Receiver, Sender};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use thiserror::Error;

#[derive(Debug, Error, PartialEq)]
pub enum ReplayError {
    #[error("cannot read --replay {path}: {reason}")]
    Read { path: String, reason: String },
    #[error("--replay {0}: the trace has no records")]
    Empty(String),
    #[error("--replay {path}: line {line}: timestamp {at} goes backwards (the previous record is at {previous}); a trace must be in time order")]
    Backwards {
        path: String,
        line: u64,
        at: f64,
        previous: f64,
    },
    #[error("--replay {path}: {malformed} of {lines} lines are malformed (more than 1%), the first at line {first_line}: {first_reason}; fix the trace or pass --lenient to skip them")]
    TooMalformed {
        path: String,
        malformed: u64,
        lines: u64,
        first_line: u64,
        first_reason: String,
    },
    #[error("--speed must be a positive number, got {0}")]
    Speed(f64),
    /// Lines, but not one record among them: the first bad line says why.
    #[error(
        "--replay {path}: none of the {lines} lines is a record; line {first_line}: {first_reason}"
    )]
    NoRecords {
        path: String,
        lines: u64,
        first_line: u64,
        first_reason: String,
    },
    /// Every record at one instant: no time to spread them over, so no rate to send them at.
    #[error("--replay {path}: {what}: a replay needs records spread over time (two or more, at different times)")]
    NoSpan { path: String, what: String },
    /// The trace, at its speed, lasts longer than a schedule can count in nanoseconds.
    #[error("--replay {path}: line {line}: the record is {offset_s:e} s after the first (at --speed {speed}), beyond the longest replay ({MAX_REPLAY_S:e} s, about 30 years)")]
    TooLong {
        path: String,
        line: u64,
        offset_s: f64,
        speed: f64,
    },
}

/// The largest `"at"` a JSON-lines record may carry, in seconds: a Unix time up to the year 2286
/// or an offset of 317 years. Larger is not a recorded moment (often milliseconds taken for
/// seconds), and would overflow the schedule's nanoseconds.
pub const MAX_AT_S: f64 = 1e10;

/// The longest replay, in seconds after `--speed`: the schedule counts nanoseconds in 64 bits
/// (584 years); 1e9 s keeps a wide margin below that.
pub const MAX_REPLAY_S: f64 = 1e9;

/// The trace format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceFormat {
    JsonLines,
    /// NCSA Common or Combined Log Format.
    Ncsa,
}

/// One record as read from a line: its timestamp in seconds and its request.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceRecord {
    pub at_s: f64,
    pub method: String,
    pub path: String,
    /// "Name: value" lines.
    pub headers: Vec<String>,
    pub body: Vec<u8>,
}

/// Detects the format from the first line that is not blank.
pub fn detect(first_line: &str) -> TraceFormat {
    if first_line.trim_start().starts_with('{') {
        TraceFormat::JsonLines
    } else {
        TraceFormat::Ncsa
    }
}

/// Why one line of a trace is not a record.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum TraceLineError {
    #[error("not JSON: {0}")]
    NotJson(String),
    #[error("expected a JSON object")]
    NotObject,
    #[error("missing \"{0}\"")]
    Missing(&'static str),
    /// The `at` value as it was written.
    #[error("\"at\" must be a number of seconds from 0 to 1e10, got {0}")]
    At(String),
    #[error("\"{0}\" must be a string")]
    NotString(&'static str),
    #[error("header \"{}\" must be a string", .0.escape_debug())]
    HeaderNotString(String),
    #[error("\"headers\" must be an object")]
    HeadersNotObject,
    #[error(transparent)]
    HeaderName(#[from] candor_wire::wire::HeaderNameError),
    #[error(transparent)]
    Request(#[from] candor_wire::wire::RequestError),
    #[error("no [timestamp]")]
    NoTimestamp,
    #[error("no closing ] after the timestamp")]
    UnclosedTimestamp,
    #[error("timestamp is not dd/Mon/yyyy:hh:mm:ss +zzzz")]
    BadTimestamp,
    #[error("no quoted request line")]
    NoRequestLine,
    #[error("unterminated request line")]
    UnterminatedRequestLine,
    #[error("request line is not 'METHOD path PROTOCOL'")]
    RequestLineShape,
}

/// Parses one JSON-lines record.
pub fn parse_json_line(line: &str) -> Result<TraceRecord, TraceLineError> {
    let v: Value =
        serde_json::from_str(line).map_err(|e| TraceLineError::NotJson(e.to_string()))?;
    let obj = v.as_object().ok_or(TraceLineError::NotObject)?;
    let at = obj.get("at").ok_or(TraceLineError::Missing("at"))?;
    let at_s = at
        .as_f64()
        .filter(|a| a.is_finite() && (0.0..=MAX_AT_S).contains(a))
        .ok_or_else(|| TraceLineError::At(at.to_string()))?;
    let text = |k: &'static str| -> Result<Option<String>, TraceLineError> {
        match obj.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(TraceLineError::NotString(k)),
        }
    };
    let path = text("path")?.ok_or(TraceLineError::Missing("path"))?;
    let method = text("method")?
        .unwrap_or_else(|| "GET".into())
        .to_ascii_uppercase();
    let headers = match obj.get("headers") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => {
                    candor_wire::wire::check_header_name(k)?;
                    Ok(format!("{k}: {s}"))
                }
                _ => Err(TraceLineError::HeaderNotString(k.clone())),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(TraceLineError::HeadersNotObject),
    };
    let body = text("body")?.unwrap_or_default().into_bytes();
    record(at_s, method, &path, headers, body)
}

/// A record whose request passed the checks of everything that reaches the wire (a line break in
/// a header or the path makes the line malformed), its path percent-encoded where a
/// request-target needs it.
fn record(
    at_s: f64,
    method: String,
    path: &str,
    headers: Vec<String>,
    body: Vec<u8>,
) -> Result<TraceRecord, TraceLineError> {
    candor_wire::wire::check_request(&method, path, &headers, &body, false)?;
    Ok(TraceRecord {
        at_s,
        method,
        path: candor_wire::wire::encode_target(path, false),
        headers,
        body,
    })
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// Days from 1970-01-01 to a civil date (proleptic Gregorian), after Howard Hinnant's
/// `days_from_civil`; here rather than a date crate because it is the only calendar arithmetic
/// the log format needs.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Parses an NCSA timestamp `10/Oct/2000:13:55:36 -0700` into Unix seconds.
fn parse_ncsa_time(t: &str) -> Option<i64> {
    let (stamp, zone) = t.split_once(' ')?;
    let mut parts = stamp.splitn(3, '/');
    let day: i64 = parts.next()?.parse().ok()?;
    let month_name = parts.next()?;
    let month = MONTHS.iter().position(|m| *m == month_name)? as i64 + 1;
    let rest = parts.next()?;
    let mut hms = rest.split(':');
    let year: i64 = hms.next()?.parse().ok()?;
    let h: i64 = hms.next()?.parse().ok()?;
    let mi: i64 = hms.next()?.parse().ok()?;
    let s: i64 = hms.next()?.parse().ok()?;
    if !(1..=31).contains(&day) || h > 23 || mi > 59 || s > 60 || zone.len() != 5 {
        return None;
    }
    let sign = match &zone[..1] {
        "+" => 1,
        "-" => -1,
        _ => return None,
    };
    let zh: i64 = zone[1..3].parse().ok()?;
    let zm: i64 = zone[3..5].parse().ok()?;
    let local = days_from_civil(year, month, day) * 86_400 + h * 3600 + mi * 60 + s;
    Some(local - sign * (zh * 3600 + zm * 60))
}

/// Parses one NCSA Common/Combined line: `host ident user [time] "METHOD path PROTO" status
/// bytes ...`; only the time, method and path are kept.
pub fn parse_ncsa_line(line: &str) -> Result<TraceRecord, TraceLineError> {
    let open = line.find('[').ok_or(TraceLineError::NoTimestamp)?;
    let close = open
        + line[open..]
            .find(']')
            .ok_or(TraceLineError::UnclosedTimestamp)?;
    let at = parse_ncsa_time(&line[open + 1..close]).ok_or(TraceLineError::BadTimestamp)?;
    let rest = &line[close + 1..];
    let q = rest.find('"').ok_or(TraceLineError::NoRequestLine)?;
    let request = &rest[q + 1..];
    let end = request
        .find('"')
        .ok_or(TraceLineError::UnterminatedRequestLine)?;
    let mut words = request[..end].split(' ');
    let (Some(method), Some(path)) = (words.next(), words.next()) else {
        return Err(TraceLineError::RequestLineShape);
    };
    record(at as f64, method.to_string(), path, Vec::new(), Vec::new())
}

/// A malformed line, by number (1-based) and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Malformed {
    pub line: u64,
    pub reason: String,
}

/// What comes out of a trace in order: a record with its offset in seconds from the first
/// record (before `--speed`), or a malformed line.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    Record {
        line: u64,
        offset_s: f64,
        record: TraceRecord,
    },
    Malformed(Malformed),
}

/// Reads a trace line by line, in bounded memory: at most one second of NCSA records is held,
/// to spread them over their second.
pub struct TraceReader<R: BufRead> {
    input: R,
    path: String,
    format: Option<TraceFormat>,
    line: u64,
    line_buf: Vec<u8>,
    /// Bytes read so far (the trace is refused past [`MAX_REPLAY_FILE_BYTES`]).
    bytes: u64,
    first_at: Option<f64>,
    previous_at: f64,
    /// NCSA: the records of the current second, waiting for the second to end.
    second: Vec<(u64, TraceRecord)>,
    ready: std::collections::VecDeque<Item>,
    done: bool,
}

impl<R: BufRead> TraceReader<R> {
    pub fn new(input: R, path: &str) -> Self {
        TraceReader {
            input,
            path: path.into(),
            format: None,
            line: 0,
            line_buf: Vec::new(),
            bytes: 0,
            first_at: None,
            previous_at: f64::NEG_INFINITY,
            second: Vec::new(),
            ready: Default::default(),
            done: false,
        }
    }

    pub fn format(&self) -> Option<TraceFormat> {
        self.format
    }

    /// Lines read so far.
    pub fn lines(&self) -> u64 {
        self.line
    }

    fn offset(&mut self, at: f64) -> f64 {
        let first = *self.first_at.get_or_insert(at);
        at - first
    }

    /// Moves the held second's records out, spread evenly over their second in file order.
    fn release_second(&mut self) {
        let n = self.second.len() as f64;
        for (i, (line, record)) in std::mem::take(&mut self.second).into_iter().enumerate() {
            let at = record.at_s + i as f64 / n;
            let offset_s = self.offset(at);
            self.ready.push_back(Item::Record {
                line,
                offset_s,
                record,
            });
        }
    }

    /// The next item, or `None` at the end; an error for a trace that goes backwards or that
    /// cannot be read.
    pub fn next_item(&mut self) -> Result<Option<Item>, ReplayError> {
        loop {
            if let Some(item) = self.ready.pop_front() {
                return Ok(Some(item));
            }
            if self.done {
                return Ok(None);
            }
            let read = bounded::read_line(
                &mut self.input,
                &mut self.line_buf,
                MAX_LINE_BYTES,
                self.line + 1,
            )
            .map_err(|e| ReplayError::Read {
                path: self.path.clone(),
                reason: e.to_string(),
            })?;
            if read == bounded::Line::End {
                self.done = true;
                self.release_second();
                continue;
            }
            self.line += 1;
            self.bytes += self.line_buf.len() as u64;
            if self.bytes > MAX_REPLAY_FILE_BYTES {
                return Err(ReplayError::Read {
                    path: self.path.clone(),
                    reason: bounded::BoundedReadError::TooLarge {
                        limit: MAX_REPLAY_FILE_BYTES,
                    }
                    .to_string(),
                });
            }
            let line = if self.line == 1 {
                bounded::strip_bom(&self.line_buf)
            } else {
                &self.line_buf
            };
            let text = match std::str::from_utf8(line) {
                Ok(t) => t.trim(),
                Err(_) => {
                    return Ok(Some(Item::Malformed(Malformed {
                        line: self.line,
                        reason: "not UTF-8 text".into(),
                    })))
                }
            };
            if text.is_empty() {
                continue;
            }
            let format = *self.format.get_or_insert_with(|| detect(text));
            let parsed = match format {
                TraceFormat::JsonLines => parse_json_line(text),
                TraceFormat::Ncsa => parse_ncsa_line(text),
            };
            let record = match parsed {
                Ok(r) => r,
                Err(reason) => {
                    return Ok(Some(Item::Malformed(Malformed {
                        line: self.line,
                        reason: reason.to_string(),
                    })))
                }
            };
            match format {
                TraceFormat::JsonLines => {
                    if record.at_s < self.previous_at {
                        return Err(ReplayError::Backwards {
                            path: self.path.clone(),
                            line: self.line,
                            at: record.at_s,
                            previous: self.previous_at,
                        });
                    }
                    self.previous_at = record.at_s;
                    let offset_s = self.offset(record.at_s);
                    return Ok(Some(Item::Record {
                        line: self.line,
                        offset_s,
                        record,
                    }));
                }
                TraceFormat::Ncsa => {
                    // Servers log at completion, so a line may carry an earlier second than the
                    // one before it; it joins the current second rather than going back in time.
                    let mut record = record;
                    record.at_s = record.at_s.max(self.previous_at);
                    if record.at_s > self.previous_at {
                        self.release_second();
                        self.previous_at = record.at_s;
                    }
                    self.second.push((self.line, record));
                }
            }
        }
    }
}

/// The trace's facts, from a scan before the run.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayPlan {
    pub path: PathBuf,
    pub format: TraceFormat,
    pub records: u64,
    pub malformed: Vec<Malformed>,
    /// How many malformed lines there were (only the first few are kept in `malformed`).
    pub malformed_count: u64,
    /// Offset of the last record from the first, in seconds, before `--speed`.
    pub span_s: f64,
    /// The longest record's request encoded with an empty Host value (add the host's length).
    pub max_request_bytes: usize,
    pub speed: f64,
}

/// Malformed lines kept for the report; the rest are only counted.
const MALFORMED_KEPT: usize = 5;

impl ReplayPlan {
    /// Scans the whole trace before the run: refuses an unreadable, empty or backwards trace, and
    /// one with more than 1% malformed lines unless `lenient`.
    pub fn scan(path: &Path, speed: f64, lenient: bool) -> Result<ReplayPlan, ReplayError> {
        if !(speed > 0.0 && speed.is_finite()) {
            return Err(ReplayError::Speed(speed));
        }
        let shown = path.display().to_string();
        let file = std::fs::File::open(path).map_err(|e| ReplayError::Read {
            path: shown.clone(),
            reason: e.to_string(),
        })?;
        // The trace is read twice (scanned now, streamed during the run): a pipe or a FIFO would
        // be empty the second time and the run would silently send nothing.
        // A device such as /dev/zero is scanned first, so that it meets the size limits.
        let not_regular = || {
            ReplayError::Read {
            path: shown.clone(),
            reason: "not a regular file (a pipe or a device): a trace is read twice, once to check it and once to replay it; save it to a file first".into(),
        }
        };
        let kind = file
            .metadata()
            .map(|m| m.file_type())
            .map_err(|e| ReplayError::Read {
                path: shown.clone(),
                reason: e.to_string(),
            })?;
        {
            use std::os::unix::fs::FileTypeExt;
            if kind.is_fifo() || kind.is_socket() {
                return Err(not_regular());
            }
        }
        let plan = Self::scan_reader(BufReader::new(file), path, speed, lenient)?;
        if !kind.is_file() {
            return Err(not_regular());
        }
        Ok(plan)
    }

    pub fn scan_reader<R: BufRead>(
        input: R,
        path: &Path,
        speed: f64,
        lenient: bool,
    ) -> Result<ReplayPlan, ReplayError> {
        if !(speed > 0.0 && speed.is_finite()) {
            return Err(ReplayError::Speed(speed));
        }
        let shown = path.display().to_string();
        let mut reader = TraceReader::new(input, &shown);
        let (mut records, mut malformed, mut malformed_count, mut span_s) = (0, Vec::new(), 0, 0.0);
        let mut max_request_bytes = 0;
        let (mut first_line, mut last_line) = (0, 0);
        while let Some(item) = reader.next_item()? {
            match item {
                Item::Record {
                    line,
                    offset_s,
                    record,
                } => {
                    if records == 0 {
                        first_line = line;
                    }
                    last_line = line;
                    records += 1;
                    span_s = offset_s;
                    // Both are finite here: "at" is at most 1e10, the speed positive.
                    if offset_s / speed > MAX_REPLAY_S {
                        return Err(ReplayError::TooLong {
                            path: shown,
                            line,
                            offset_s,
                            speed,
                        });
                    }
                    let bytes = candor_wire::request_form::build_request(
                        &record.method,
                        "",
                        &record.path,
                        &record.headers,
                        &record.body,
                    );
                    max_request_bytes = max_request_bytes.max(bytes.len());
                }
                Item::Malformed(m) => {
                    malformed_count += 1;
                    if malformed.len() < MALFORMED_KEPT {
                        malformed.push(m);
                    }
                }
            }
        }
        let lines = records + malformed_count;
        if let (0, Some(first)) = (records, malformed.first()) {
            return Err(ReplayError::NoRecords {
                path: shown,
                lines,
                first_line: first.line,
                first_reason: first.reason.clone(),
            });
        }
        if records == 0 {
            return Err(ReplayError::Empty(shown));
        }
        // Too many malformed lines first: they are the cause when too few records remain.
        if !lenient && malformed_count * 100 > lines {
            let first = &malformed[0];
            return Err(ReplayError::TooMalformed {
                path: shown,
                malformed: malformed_count,
                lines,
                first_line: first.line,
                first_reason: first.reason.clone(),
            });
        }
        if span_s <= 0.0 {
            let what = if records == 1 {
                format!("line {first_line} is the trace's only record")
            } else {
                format!("all {records} records (lines {first_line} to {last_line}) are at the same time")
            };
            return Err(ReplayError::NoSpan { path: shown, what });
        }
        Ok(ReplayPlan {
            path: path.to_path_buf(),
            format: reader.format().unwrap_or(TraceFormat::JsonLines),
            records,
            malformed,
            malformed_count,
            span_s,
            max_request_bytes,
            speed,
        })
    }

    /// How many records fall within the first `window_ns` of the replay (at its speed): one
    /// more streamed pass over the trace, for the target rate of a replay that `-d` cuts short.
    pub fn records_within(&self, window_ns: u64) -> Result<u64, ReplayError> {
        let file = std::fs::File::open(&self.path).map_err(|e| ReplayError::Read {
            path: self.path.display().to_string(),
            reason: e.to_string(),
        })?;
        let mut reader = TraceReader::new(BufReader::new(file), &self.path.display().to_string());
        let mut n = 0;
        while let Some(item) = reader.next_item()? {
            if let Item::Record { offset_s, .. } = item {
                if (offset_s / self.speed * 1e9).round() as u64 >= window_ns {
                    break;
                }
                n += 1;
            }
        }
        Ok(n)
    }

    /// The replay's length in nanoseconds: the last record's offset divided by the speed, plus
    /// one nanosecond so that the last record falls inside the window.
    pub fn duration_ns(&self) -> u64 {
        (self.span_s / self.speed * 1e9).round() as u64 + 1
    }

    /// Starts a reader thread that encodes the records of stream `lane` of `stride` (records
    /// whose index is `lane` modulo `stride`) as HTTP/1.1 requests for `host`, in batches.
    pub fn stream(&self, host: &str, lane: u64, stride: u64) -> std::io::Result<ReplayStream> {
        let (full_tx, full_rx) = crossbeam_channel::bounded::<Box<Batch>>(BATCHES);
        let (empty_tx, empty_rx) = crossbeam_channel::bounded::<Box<Batch>>(BATCHES + 1);
        for _ in 0..BATCHES {
            let _ = empty_tx.send(Box::new(Batch::with_capacity()));
        }
        let path = self.path.clone();
        let speed = self.speed;
        let host = host.to_string();
        let handle = std::thread::Builder::new()
            .name("candor-replay".into())
            .spawn(move || read_batches(&path, speed, &host, lane, stride, full_tx, empty_rx))?;
        Ok(ReplayStream {
            full: full_rx,
            empty: empty_tx,
            current: None,
            next: 0,
            reader: Some(handle),
        })
    }
}

/// Records per batch, and batches in flight per stream: the memory a replay holds is about
/// `BATCHES × BATCH` encoded requests whatever the trace's length.
const BATCH: usize = 1024;
const BATCHES: usize = 4;

/// One prepared record: its global index in the trace, its intended offset from the run's
/// start, and where its request bytes lie in the batch.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Entry {
    pub seq: u64,
    pub offset_ns: u64,
    start: usize,
    end: usize,
    pub head_only: bool,
}

/// A batch of encoded requests, recycled between the reader thread and a load thread.
#[derive(Debug)]
pub struct Batch {
    entries: Vec<Entry>,
    bytes: Vec<u8>,
}

impl Batch {
    fn with_capacity() -> Self {
        Batch {
            entries: Vec::with_capacity(BATCH),
            bytes: Vec::with_capacity(BATCH * 256),
        }
    }
}

fn read_batches(
    path: &Path,
    speed: f64,
    host: &str,
    lane: u64,
    stride: u64,
    full: Sender<Box<Batch>>,
    empty: Receiver<Box<Batch>>,
) -> Result<(), ReplayError> {
    let file = std::fs::File::open(path).map_err(|e| ReplayError::Read {
        path: path.display().to_string(),
        reason: e.to_string(),
    })?;
    let mut reader = TraceReader::new(BufReader::new(file), &path.display().to_string());
    let mut index = 0u64;
    let Ok(mut batch) = empty.recv() else {
        return Ok(());
    };
    while let Some(item) = reader.next_item()? {
        let Item::Record {
            offset_s, record, ..
        } = item
        else {
            continue;
        };
        let seq = index;
        index += 1;
        if seq % stride != lane {
            continue;
        }
        let start = batch.bytes.len();
        batch
            .bytes
            .extend_from_slice(&candor_wire::request_form::build_request(
                &record.method,
                host,
                &record.path,
                &record.headers,
                &record.body,
            ));
        batch.entries.push(Entry {
            seq,
            offset_ns: (offset_s / speed * 1e9).round() as u64,
            start,
            end: batch.bytes.len(),
            head_only: record.method == "HEAD",
        });
        if batch.entries.len() == BATCH {
            if full.send(batch).is_err() {
                return Ok(()); // the load thread is gone: the run ended
            }
            batch = match empty.recv() {
                Ok(b) => b,
                Err(_) => return Ok(()),
            };
        }
    }
    if !batch.entries.is_empty() {
        let _ = full.send(batch);
    }
    Ok(())
}

/// A load thread's cursor into a replayed trace: `peek`/`advance` like a schedule, with the
/// encoded request of the current record.
#[derive(Debug)]
pub struct ReplayStream {
    full: Receiver<Box<Batch>>,
    empty: Sender<Box<Batch>>,
    current: Option<Box<Batch>>,
    next: usize,
    reader: Option<std::thread::JoinHandle<Result<(), ReplayError>>>,
}

impl ReplayStream {
    /// The current record, waiting for the reader if its batch is not ready; `None` at the end.
    pub fn peek(&mut self) -> Option<(Entry, &[u8])> {
        loop {
            if let Some(b) = &self.current {
                if self.next < b.entries.len() {
                    break;
                }
                let mut spent = self.current.take().expect("checked");
                spent.entries.clear();
                spent.bytes.clear();
                let _ = self.empty.try_send(spent);
                self.next = 0;
            }
            // Polled rather than a blocking `recv`: crossbeam's first block on a thread sets up
            // its parking context with an allocation, which must not land on a load thread
            // mid-run. The reader is normally batches ahead; when it is not, the wait is short.
            match self.full.try_recv() {
                Ok(b) => self.current = Some(b),
                Err(crossbeam_channel::TryRecvError::Empty) => {
                    std::thread::sleep(std::time::Duration::from_micros(50))
                }
                Err(crossbeam_channel::TryRecvError::Disconnected) => return None,
            }
        }
        let b = self.current.as_ref().expect("filled above");
        let e = b.entries[self.next];
        Some((e, &b.bytes[e.start..e.end]))
    }

    /// Moves past the current record.
    pub fn advance(&mut self) {
        self.next += 1;
    }

    /// The reader thread's verdict (after the end): an error if the file changed under it.
    pub fn finish(mut self) -> Result<(), ReplayError> {
        drop(std::mem::replace(
            &mut self.full,
            crossbeam_channel::never(),
        ));
        match self.reader.take().map(|h| h.join()) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(ReplayError::Read {
                path: String::new(),
                reason: "the replay reader thread panicked".into(),
            }),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
#[path = "replay_tests.rs"]
mod tests;
