//! HdrHistogram interval logs (`.hlog`): the writer produces log format 1.3 exactly as Java's
//! `HistogramLogWriter` does, the reader accepts every log version (1.01 to 1.3) and encoding
//! (V0, V1, V2) with the time-range semantics of Java's `HistogramLogReader`.
//!
//! candor writes one stream per measure: untagged lines are response time (so tools that show
//! only the default stream show the headline number), `Tag=service_time`, `Tag=send_lag` and,
//! when the run recorded them, `Tag=first_byte` the others; a run with streamed responses adds
//! one tag per stream measure it recorded (`Tag=ttft`, `Tag=itl`, `Tag=tpot`, `Tag=first_event`,
//! ...).

use crate::codec::{self, CodecError};
use crate::javafmt::fixed;
use candor_core::hist::to_base64_v2_compressed;
use candor_core::recorded::{HlogConfig, RecordedConfig};
use candor_core::results::{
    EncodedHistograms, Interval, IntervalStats, Kind, Mode, PhaseResults, RequestCounts, RunResults,
};
use candor_core::stream_measures::StreamMeasure;
use candor_core::{Histo, Recorder, Summary};

/// Tag of the service-time stream (untagged lines are response time).
pub const TAG_SERVICE_TIME: &str = "service_time";
/// Tag of the send-lag stream.
pub const TAG_SEND_LAG: &str = "send_lag";
/// Tag of the first-byte stream (written when the run recorded first bytes).
pub const TAG_FIRST_BYTE: &str = "first_byte";
/// Java's default unit ratio for the max column: nanoseconds written as milliseconds.
pub const MAX_COLUMN_RATIO: f64 = 1e6;

const LEGEND: &str =
    "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"";

/// A problem in a log, with the 1-based line it was found on.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("line {line}{}: {kind}", if *.truncated { " (the file ends mid-line: truncated?)" } else { "" })]
pub struct HlogError {
    pub line: usize,
    pub kind: HlogErrorKind,
    /// The bad line is the last one and has no line end: the file was most likely cut short.
    pub truncated: bool,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum HlogErrorKind {
    #[error("interval line has {0} fields; expected [Tag=NAME,]start,length,max,histogram")]
    Fields(usize),
    #[error("invalid {field} '{text}': expected a number of seconds")]
    Number { field: &'static str, text: String },
    #[error("{0}")]
    Histogram(#[from] CodecError),
    #[error("not an HdrHistogram interval log (no header and no interval line)")]
    NotALog,
    #[error("negative {field} {value}: an interval cannot last (or take) less than nothing")]
    Negative { field: &'static str, value: f64 },
}

/// Which intervals to read, as Java's `nextIntervalHistogram(start, end)` selects them: an interval
/// whose start is before `start_s` is skipped, and reading stops at the first interval whose start
/// is after `end_s` (later lines are not read at all, whatever their tag).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimeRange {
    pub start_s: f64,
    pub end_s: f64,
    /// Compare absolute times (seconds since the epoch) instead of seconds since StartTime.
    pub absolute: bool,
}

impl Default for TimeRange {
    /// Everything, as Java's argument-less `nextIntervalHistogram()` reads (absolute times from 0).
    fn default() -> Self {
        TimeRange {
            start_s: 0.0,
            end_s: f64::MAX,
            absolute: true,
        }
    }
}

impl TimeRange {
    /// Seconds relative to the log's StartTime, like `HistogramLogProcessor -start/-end`.
    pub fn relative(start_s: Option<f64>, end_s: Option<f64>) -> Self {
        TimeRange {
            start_s: start_s.unwrap_or(0.0),
            end_s: end_s.unwrap_or(f64::MAX),
            absolute: false,
        }
    }
}

/// One interval line.
#[derive(Debug, Clone)]
pub struct LogInterval {
    /// 1-based line number in the file.
    pub line: usize,
    pub tag: Option<String>,
    /// Seconds since the epoch (when the log's times are absolute or anchored by StartTime).
    pub absolute_start_s: f64,
    /// Seconds since the log's StartTime.
    pub offset_start_s: f64,
    pub length_s: f64,
    pub histogram: Histo,
}

/// A log as read: header facts and the selected intervals, every tag kept, in file order.
#[derive(Debug, Clone, Default)]
pub struct HistogramLog {
    pub format_version: Option<String>,
    /// From `#[StartTime:`, or the first interval's timestamp when there is none (as Java does).
    pub start_time_s: Option<f64>,
    pub base_time_s: f64,
    /// Other comment lines, without the leading '#'.
    pub comments: Vec<String>,
    pub intervals: Vec<LogInterval>,
}

impl HistogramLog {
    /// The distinct tags in order of first appearance (`None` = untagged).
    pub fn tags(&self) -> Vec<Option<String>> {
        let mut out: Vec<Option<String>> = Vec::new();
        for i in &self.intervals {
            if !out.contains(&i.tag) {
                out.push(i.tag.clone());
            }
        }
        out
    }

    /// The intervals of one stream (`None` = untagged lines).
    pub fn stream<'a>(
        &'a self,
        tag: Option<&'a str>,
    ) -> impl Iterator<Item = &'a LogInterval> + 'a {
        self.intervals
            .iter()
            .filter(move |i| i.tag.as_deref() == tag)
    }

    /// Every interval of one stream added into a `new Histogram(3)`, as Java's tools do.
    pub fn total(&self, tag: Option<&str>) -> Histo {
        let mut acc = codec::java_accumulator();
        for i in self.stream(tag) {
            codec::add_exact(&mut acc, &i.histogram);
        }
        acc
    }
}

/// True when `text` looks like an interval log rather than JSON.
pub fn looks_like_hlog(text: &str) -> bool {
    let t = text.trim_start();
    if t.starts_with('{') {
        return false;
    }
    t.lines().take(50).any(|l| {
        let l = l.trim();
        l.starts_with("#[")
            || l.starts_with("\"StartTimestamp\"")
            || l.starts_with("Tag=")
            || is_interval_like(l)
    })
}

fn is_interval_like(l: &str) -> bool {
    let f: Vec<&str> = l.split(',').collect();
    f.len() == 4 && f[..3].iter().all(|x| x.trim().parse::<f64>().is_ok())
}

fn number(field: &'static str, text: &str, line: usize) -> Result<f64, HlogError> {
    let t = text.trim();
    match t.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(HlogError {
            truncated: false,
            line,
            kind: HlogErrorKind::Number {
                field,
                text: t.chars().take(40).collect(),
            },
        }),
    }
}

fn header_number(rest: &str) -> Option<f64> {
    rest.trim_start()
        .split([' ', ','])
        .next()
        .and_then(|t| t.parse::<f64>().ok())
        .filter(|v| v.is_finite())
}

/// Reads a log with Java's semantics: StartTime and BaseTime from the header; without a BaseTime
/// line, timestamps more than a year before StartTime are taken as relative to it, others as
/// absolute; the range selects intervals as [`TimeRange`] says. Only selected intervals are
/// decoded (as in Java), so damage outside the range is not an error.
pub fn read_hlog(text: &str, range: &TimeRange) -> Result<HistogramLog, HlogError> {
    read_lines(text, range).map_err(|mut e| {
        let cut = !text.is_empty() && !text.ends_with('\n') && e.line == text.lines().count();
        e.truncated = cut && !matches!(e.kind, HlogErrorKind::NotALog);
        e
    })
}

fn read_lines(text: &str, range: &TimeRange) -> Result<HistogramLog, HlogError> {
    let mut log = HistogramLog::default();
    let mut start_time: Option<f64> = None;
    let mut base_time: Option<f64> = None;
    let mut saw_anything = false;
    for (idx, raw) in text.lines().enumerate() {
        let line_no = idx + 1;
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(comment) = line.strip_prefix('#') {
            saw_anything = true;
            if let Some(rest) = line.strip_prefix("#[StartTime:") {
                if let Some(v) = header_number(rest) {
                    start_time = Some(v);
                }
            } else if let Some(rest) = line.strip_prefix("#[BaseTime:") {
                if let Some(v) = header_number(rest) {
                    base_time = Some(v);
                }
            } else if let Some(rest) = line.strip_prefix("#[Histogram log format version ") {
                log.format_version = Some(rest.trim_end_matches(']').trim().to_string());
            } else {
                log.comments.push(comment.to_string());
            }
            continue;
        }
        if line.starts_with("\"StartTimestamp\"") {
            saw_anything = true;
            continue;
        }
        saw_anything = true;
        let mut fields: Vec<&str> = line.split(',').collect();
        let tag = match fields.first().and_then(|f| f.strip_prefix("Tag=")) {
            Some(t) => {
                let t = t.to_string();
                fields.remove(0);
                Some(t)
            }
            None => None,
        };
        if fields.len() != 4 {
            return Err(HlogError {
                truncated: false,
                line: line_no,
                kind: HlogErrorKind::Fields(fields.len()),
            });
        }
        let stamp = number("start timestamp", fields[0], line_no)?;
        let length = number("interval length", fields[1], line_no)?;
        let max = number("interval max", fields[2], line_no)?;
        for (field, value) in [("interval length", length), ("interval max", max)] {
            if value < 0.0 {
                return Err(HlogError {
                    truncated: false,
                    line: line_no,
                    kind: HlogErrorKind::Negative { field, value },
                });
            }
        }
        let start = *start_time.get_or_insert(stamp);
        let base = *base_time.get_or_insert(if stamp < start - 365.0 * 24.0 * 3600.0 {
            start
        } else {
            0.0
        });
        let absolute_start = stamp + base;
        let offset_start = absolute_start - start;
        let check = if range.absolute {
            absolute_start
        } else {
            offset_start
        };
        if check < range.start_s {
            continue;
        }
        if check > range.end_s {
            break;
        }
        let histogram = codec::decode_base64(fields[3]).map_err(|e| HlogError {
            truncated: false,
            line: line_no,
            kind: e.into(),
        })?;
        log.intervals.push(LogInterval {
            line: line_no,
            tag,
            absolute_start_s: absolute_start,
            offset_start_s: offset_start,
            length_s: length,
            histogram,
        });
    }
    if !saw_anything {
        return Err(HlogError {
            truncated: false,
            line: 1,
            kind: HlogErrorKind::NotALog,
        });
    }
    log.start_time_s = start_time;
    log.base_time_s = base_time.unwrap_or(0.0);
    Ok(log)
}

pub use candor_core::dates::java_date_utc;

/// One interval line as Java's `HistogramLogWriter.outputIntervalHistogram` prints it.
pub fn interval_line(tag: Option<&str>, start_s: f64, length_s: f64, h: &Histo) -> String {
    let max = if h.is_empty() { 0.0 } else { h.max() as f64 };
    let body = format!(
        "{},{},{},{}",
        fixed(start_s, 3),
        fixed(length_s, 3),
        fixed(max / MAX_COLUMN_RATIO, 3),
        to_base64_v2_compressed(h)
    );
    match tag {
        Some(t) => format!("Tag={t},{body}\n"),
        None => format!("{body}\n"),
    }
}

/// Writes the run's measured intervals as a format 1.3 log. Timestamps are relative to the run's
/// start (`BaseTime` = `StartTime`, as jHiccup writes them). Warm-up intervals are left out so
/// that the log's totals are the measured window's, the numbers the JSON reports.
pub fn write_hlog(results: &RunResults) -> String {
    let start_ms = (results.start_time_unix_s * 1000.0).round() as i64;
    let mut out = String::new();
    out.push_str(&format!(
        "#[Logged with candor version {}]\n",
        results.candor_version
    ));
    out.push_str("#[Histogram log format version 1.3]\n");
    out.push_str(&format!(
        "#[StartTime: {} (seconds since epoch), {}]\n",
        fixed(start_ms as f64 / 1000.0, 3),
        java_date_utc(start_ms)
    ));
    out.push_str(&format!(
        "#[BaseTime: {} (seconds since epoch)]\n",
        fixed(start_ms as f64 / 1000.0, 3)
    ));
    let measured = || results.intervals.iter().filter(|i| !i.warmup);
    let first_bytes = measured().any(|i| i.histograms.first_byte.is_some());
    out.push_str("#[Untagged lines: response time (from intended send). Tag=service_time: from actual send. Tag=send_lag: actual minus intended send. ");
    if first_bytes {
        out.push_str("Tag=first_byte: intended send to the response's first byte. ");
    }
    // Streamed responses' measures, each under its results name, when any interval has them.
    let streams: Vec<StreamMeasure> = StreamMeasure::ALL
        .into_iter()
        .filter(|m| measured().any(|i| i.stream.as_ref().is_some_and(|s| s.stats(*m).is_some())))
        .collect();
    for m in &streams {
        out.push_str(&format!("Tag={}: {}. ", m.name(), stream_tag_words(*m)));
    }
    out.push_str("Values in ns]\n");
    out.push_str(LEGEND);
    out.push('\n');
    for iv in measured() {
        let decoded = match iv.histograms.decode() {
            Ok(r) => r,
            // Results that passed JSON parsing but carry a corrupt interval: an empty interval
            // keeps the time series aligned rather than dropping the line.
            Err(_) => Recorder::new(),
        };
        out.push_str(&interval_line(
            None,
            iv.start_s,
            iv.length_s,
            &decoded.response,
        ));
        out.push_str(&interval_line(
            Some(TAG_SERVICE_TIME),
            iv.start_s,
            iv.length_s,
            &decoded.service,
        ));
        out.push_str(&interval_line(
            Some(TAG_SEND_LAG),
            iv.start_s,
            iv.length_s,
            &decoded.send_lag,
        ));
        if first_bytes {
            out.push_str(&interval_line(
                Some(TAG_FIRST_BYTE),
                iv.start_s,
                iv.length_s,
                &decoded.first_byte,
            ));
        }
        for m in &streams {
            // An interval without this measure writes an empty histogram: the series stays
            // aligned with the others.
            let h = iv
                .stream
                .as_ref()
                .and_then(|s| s.histograms.decode(*m).ok())
                .unwrap_or_else(candor_core::new_histogram);
            out.push_str(&interval_line(Some(m.name()), iv.start_s, iv.length_s, &h));
        }
    }
    out
}

/// What a stream measure's tag holds, for the log's legend.
fn stream_tag_words(m: StreamMeasure) -> &'static str {
    match m {
        StreamMeasure::Ttft => "intended send to the first token",
        StreamMeasure::TtftService => "actual send to the first token",
        StreamMeasure::Itl => "gaps between content chunks",
        StreamMeasure::Tpot => "time per output token",
        StreamMeasure::FirstEvent => "intended send to the first event",
        StreamMeasure::EventGap => "gaps between events",
    }
}

/// Turns a log into results so every report (text, HTML, compare) treats it like a run: untagged
/// lines become response time, `service_time`/`send_lag` tags the other measures, and with
/// `tag` set that stream becomes the response time instead. Intervals are matched by start time.
pub fn results_from_hlog(log: &HistogramLog, tag: Option<&str>, source: &str) -> RunResults {
    let empty = candor_core::new_histogram();
    let main_tag = tag;
    let first = log
        .intervals
        .first()
        .map(|i| i.absolute_start_s)
        .unwrap_or(0.0);
    let start_unix = log.start_time_s.unwrap_or(first);
    let mut intervals: Vec<Interval> = Vec::new();
    let mut total = Recorder::new();
    let mut span_end: f64 = 0.0;
    let mut span_start: Option<f64> = None;
    for li in &log.intervals {
        let which = if li.tag.as_deref() == main_tag {
            0
        } else if main_tag.is_none() && li.tag.as_deref() == Some(TAG_SERVICE_TIME) {
            1
        } else if main_tag.is_none() && li.tag.as_deref() == Some(TAG_SEND_LAG) {
            2
        } else if main_tag.is_none() && li.tag.as_deref() == Some(TAG_FIRST_BYTE) {
            3
        } else {
            continue;
        };
        let start_s = li.absolute_start_s - start_unix;
        let pos = intervals
            .iter()
            .position(|i| (i.start_s - start_s).abs() < 1e-6);
        let idx = match pos {
            Some(p) => p,
            None => {
                intervals.push(Interval {
                    start_s,
                    length_s: li.length_s,
                    warmup: false,
                    completed: 0,
                    failed: 0,
                    response_time: IntervalStats::default(),
                    service_time: IntervalStats::default(),
                    send_lag: IntervalStats::default(),
                    first_byte: None,
                    histograms: EncodedHistograms::of(&Recorder::new()),
                    stream: None,
                });
                intervals.len() - 1
            }
        };
        let iv = &mut intervals[idx];
        let mut h = candor_core::new_histogram();
        codec::add_exact(&mut h, &li.histogram);
        let stats = IntervalStats::of(&h);
        let enc = to_base64_v2_compressed(&h);
        match which {
            0 => {
                iv.completed = h.len();
                iv.response_time = stats;
                iv.histograms.response_time = enc;
                codec::add_exact(&mut total.response, &li.histogram);
                span_start = Some(span_start.map_or(start_s, |s: f64| s.min(start_s)));
                span_end = span_end.max(start_s + li.length_s);
            }
            1 => {
                iv.service_time = stats;
                iv.histograms.service_time = enc;
                codec::add_exact(&mut total.service, &li.histogram);
            }
            2 => {
                iv.send_lag = stats;
                iv.histograms.send_lag = enc;
                codec::add_exact(&mut total.send_lag, &li.histogram);
            }
            _ => {
                iv.first_byte = Some(stats);
                iv.histograms.first_byte = Some(enc);
                codec::add_exact(&mut total.first_byte, &li.histogram);
            }
        }
    }
    intervals.sort_by(|a, b| a.start_s.total_cmp(&b.start_s));
    let duration = (span_end - span_start.unwrap_or(0.0)).max(0.0);
    let count = total.response.len();
    let requests = RequestCounts {
        intended: count,
        completed: count,
        ..Default::default()
    };
    let mut main = PhaseResults::from_recorder(&total, &empty, requests, duration, None);
    main.unfinished_age = Summary::of(&empty);
    let tags: Vec<String> = log
        .tags()
        .into_iter()
        .map(|t| t.unwrap_or_else(|| "(untagged)".into()))
        .collect();
    let config = RecordedConfig::Hlog(HlogConfig {
        source: source.to_string(),
        logged_with: log.comments.iter().find_map(|c| {
            c.strip_prefix("[Logged with ")
                .map(|s| s.trim_end_matches(']').to_string())
        }),
        log_format_version: log.format_version.clone(),
        tags,
        selected_tag: tag.map(str::to_string),
    });
    RunResults {
        start_time_unix_s: start_unix,
        intervals,
        ..RunResults::new(Kind::Hlog, Mode::IntervalLog, source, config, main)
    }
}

/// The interval log of one run as an export (`--hlog`).
pub struct HlogExporter;

impl crate::export::Exporter<RunResults> for HlogExporter {
    fn export(&self, results: &RunResults) -> Result<Vec<u8>, crate::export::ExportError> {
        Ok(write_hlog(results).into_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_date_matches_known_instants() {
        // Java: new Date(1441812279474L) in UTC.
        assert_eq!(
            java_date_utc(1_441_812_279_474),
            "Wed Sep 09 15:24:39 UTC 2015"
        );
        assert_eq!(java_date_utc(0), "Thu Jan 01 00:00:00 UTC 1970");
        assert_eq!(
            java_date_utc(1_709_164_800_000),
            "Thu Feb 29 00:00:00 UTC 2024"
        );
    }

    #[test]
    fn errors_name_the_line() {
        let text = "#[Histogram log format version 1.3]\n#[StartTime: 1700000000.000 (seconds since epoch), x]\n\
                    0.000,1.000,1.000,HISTFAAAAB\n";
        let err = read_hlog(text, &TimeRange::default()).unwrap_err();
        assert_eq!(err.line, 3, "{err}");
        let err = read_hlog("#[StartTime: 1.0]\n0.0,1.0\n", &TimeRange::default()).unwrap_err();
        assert_eq!(err.line, 2);
        assert!(err.to_string().contains("fields"), "{err}");
        let err = read_hlog("0.0,abc,1.0,AAAA\n", &TimeRange::default()).unwrap_err();
        assert!(err.to_string().contains("interval length"), "{err}");
    }

    #[test]
    fn negative_lengths_are_refused_with_their_line() {
        let good = write_hlog(&crate::synthetic::synthetic_run(1, 3, 10, 1_000_000, 0));
        let mut lines: Vec<String> = good.lines().map(str::to_string).collect();
        let at = lines
            .iter()
            .position(|l| !l.starts_with('#') && !l.starts_with('"'))
            .unwrap();
        let fields: Vec<&str> = lines[at].split(',').collect();
        lines[at] = format!("{},-1.000,{},{}", fields[0], fields[2], fields[3]);
        let err = read_hlog(&(lines.join("\n") + "\n"), &TimeRange::default()).unwrap_err();
        assert_eq!(err.line, at + 1);
        assert_eq!(
            err.to_string(),
            format!("line {}: negative interval length -1: an interval cannot last (or take) less than nothing", at + 1)
        );
    }
}
