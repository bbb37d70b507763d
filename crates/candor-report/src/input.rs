//! Loading any results file a report accepts: candor JSON, a `--records` file or an HdrHistogram
//! interval log (detected by content), with the `--tag` and `--start/--end` selections applied.

use crate::hlog::{self, HlogError, TimeRange};
use crate::validate::{self, Impossible};
use candor_core::hist::HistCodecError;
use candor_core::results::{
    EncodedHistograms, PhaseResults, RequestCounts, ResultsError, RunResults,
};
use candor_core::{new_histogram, Recorder};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error(transparent)]
    Hlog(#[from] HlogError),
    /// The JSON reader's message, kept as text: its error type repeats its cause in `source()`,
    /// which would print the cause twice in a one-line error chain.
    #[error("{0}")]
    Json(String),
    #[error("interval histogram is not valid: {0}")]
    Histogram(HistCodecError),
    #[error("--tag selects a stream of an HdrHistogram log; this file is candor JSON")]
    TagOnJson,
    #[error("--start {start} is after --end {end}")]
    Range { start: f64, end: f64 },
    /// Not `#[from]`: a source would repeat the reason in the one-line error chain.
    #[error("impossible results: {0}")]
    Impossible(Impossible),
    #[error("the file is empty: neither candor JSON nor an HdrHistogram interval log")]
    Empty,
    #[error("{0}")]
    Io(String),
    #[error("--records file: {0}")]
    Records(crate::records::RecordsReadError),
    #[error("--tag, --start and --end select parts of results or logs, not of a --records file")]
    SelectionOnRecords,
    #[error(
        "the file is larger than {} MiB, the most candor reads: not a candor result or interval log \
         (a day of per-second intervals is under 20 MiB)",
        MAX_INPUT_BYTES >> 20
    )]
    TooLarge,
}

/// The largest input `report` and `merge` read. A day of one-second intervals of three streams is
/// about 20 MiB as a log and less as JSON, so 256 MiB leaves room for week-long logs while a
/// runaway or hostile file is refused before it is read into memory.
pub const MAX_INPUT_BYTES: u64 = 256 << 20;

/// Reads a results file of at most [`MAX_INPUT_BYTES`]: a larger regular file is refused from its
/// size, before reading; anything else (a pipe, a device) is read through a bounded buffer and
/// refused as soon as it passes the limit.
pub fn read_input(path: &Path) -> Result<String, InputError> {
    use candor_core::bounded::{read_file, BoundedReadError};
    let bytes = read_file(path, MAX_INPUT_BYTES, None).map_err(|e| match e {
        BoundedReadError::Io(reason) => InputError::Io(reason),
        BoundedReadError::TooLarge { .. } | BoundedReadError::LineTooLong { .. } => {
            InputError::TooLarge
        }
    })?;
    String::from_utf8(bytes).map_err(|e| {
        InputError::Io(format!(
            "not text (invalid UTF-8 at byte {}): not candor JSON or an interval log",
            e.utf8_error().valid_up_to()
        ))
    })
}

pub use crate::books::Books;

/// Key in `config` marking results cut by [`time_slice`] (the slice's bounds in seconds).
pub use candor_core::recorded::TIME_SLICE_KEY;

/// Which part of a file to read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Selection {
    /// Stream of a log (`None` = untagged lines, response time for candor's logs).
    pub tag: Option<String>,
    /// Seconds relative to the start (StartTime for logs, the run's start for JSON).
    pub start_s: Option<f64>,
    pub end_s: Option<f64>,
}

/// True when the file is an interval log rather than JSON.
pub fn is_hlog(text: &str) -> bool {
    hlog::looks_like_hlog(text)
}

/// Parses `text` (from `source`, used as the label of log-derived results) with `sel` applied.
pub fn load(text: &str, source: &str, sel: &Selection) -> Result<RunResults, InputError> {
    if let (Some(s), Some(e)) = (sel.start_s, sel.end_s) {
        if s > e {
            return Err(InputError::Range { start: s, end: e });
        }
    }
    if text.trim().is_empty() {
        return Err(InputError::Empty);
    }
    if crate::records::looks_like_records(text) {
        if *sel != Selection::default() {
            return Err(InputError::SelectionOnRecords);
        }
        return crate::records::results_from_records(text, source).map_err(InputError::Records);
    }
    if is_hlog(text) {
        let range = if sel.start_s.is_some() || sel.end_s.is_some() {
            TimeRange::relative(sel.start_s, sel.end_s)
        } else {
            TimeRange::default()
        };
        let log = hlog::read_hlog(text, &range)?;
        return Ok(hlog::results_from_hlog(&log, sel.tag.as_deref(), source));
    }
    if sel.tag.is_some() {
        return Err(InputError::TagOnJson);
    }
    let r =
        RunResults::from_json(text).map_err(|e: ResultsError| InputError::Json(e.to_string()))?;
    validate::check(&r).map_err(InputError::Impossible)?;
    if sel.start_s.is_none() && sel.end_s.is_none() {
        return Ok(r);
    }
    time_slice(&r, sel.start_s, sel.end_s).map_err(InputError::Histogram)
}

/// The part of a run whose intervals start within [start, end] seconds of the run's start, with
/// the semantics of Java's `nextIntervalHistogram(start, end)`: earlier intervals are skipped and
/// the first later one ends the selection. Histograms are the intervals' own, added exactly;
/// request accounting beyond completed/failed is not kept per interval, so it is left at zero.
pub fn time_slice(
    r: &RunResults,
    start: Option<f64>,
    end: Option<f64>,
) -> Result<RunResults, HistCodecError> {
    let (s, e) = (start.unwrap_or(0.0), end.unwrap_or(f64::MAX));
    let mut picked = Vec::new();
    for iv in &r.intervals {
        if iv.start_s < s {
            continue;
        }
        if iv.start_s > e {
            break;
        }
        picked.push(iv.clone());
    }
    let mut rec = Recorder::new();
    let mut requests = RequestCounts::default();
    let mut duration = 0.0;
    for iv in &picked {
        rec.add(&iv.histograms.decode()?);
        requests.completed += iv.completed;
        requests.failed += iv.failed;
        duration += iv.length_s;
    }
    requests.intended = requests.completed + requests.failed;
    let mut out = r.clone();
    out.main = PhaseResults::from_recorder(
        &rec,
        &new_histogram(),
        requests,
        duration,
        r.main.rate.target_per_s,
    );
    out.main.histograms = EncodedHistograms::of(&rec);
    out.warmup = None;
    out.intervals = picked;
    out.config = r.config.sliced(s, (e != f64::MAX).then_some(e));
    out.warnings.push(format!(
        "time slice {s}..{} s of the run: failures by class, status classes, bytes and unfinished requests are \
         not kept per interval and are unknown",
        if e == f64::MAX { "end".to_string() } else { e.to_string() }
    ));
    Ok(out)
}

/// A file among a command's inputs that could not be used; `{:#}` (with its sources) gives the
/// whole reason in one line.
#[derive(Debug, thiserror::Error)]
pub enum InputsError {
    #[error("reading {path}")]
    Read {
        path: String,
        #[source]
        cause: InputError,
    },
    #[error("{path}")]
    Load {
        path: String,
        #[source]
        cause: InputError,
    },
    #[error("{path} (results in a pod log)")]
    PodLog {
        path: String,
        #[source]
        cause: InputError,
    },
    #[error("reading directory {path}")]
    Directory {
        path: String,
        #[source]
        cause: std::io::Error,
    },
    #[error("directory {0} has no *.json results to merge")]
    EmptyDirectory(String),
    #[error(
        "--label gives {given} label{} for {inputs} input{}: give one per input, in order, \
         comma-separated (--label before,after)",
        if *given == 1 { "" } else { "s" },
        if *inputs == 1 { "" } else { "s" }
    )]
    LabelCount { given: usize, inputs: usize },
    #[error("--label: label {0} is empty")]
    EmptyLabel(usize),
}

/// The file name of `f` (the whole path when it has none), the default label of an input.
pub fn file_name(f: &Path) -> String {
    f.file_name().map_or_else(
        || f.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// The display label of each input: `labels` when given (it must name every input, once), else
/// the file names.
pub fn labels_for(files: &[PathBuf], labels: &[String]) -> Result<Vec<String>, InputsError> {
    if labels.is_empty() {
        return Ok(files.iter().map(|f| file_name(f)).collect());
    }
    if labels.len() != files.len() {
        return Err(InputsError::LabelCount {
            given: labels.len(),
            inputs: files.len(),
        });
    }
    if let Some(empty) = labels.iter().position(|l| l.trim().is_empty()) {
        return Err(InputsError::EmptyLabel(empty + 1));
    }
    Ok(labels.iter().map(|l| l.trim().to_string()).collect())
}

/// [`read_input`] with errors that name the file.
pub fn read_named(f: &Path) -> Result<String, InputsError> {
    read_input(f).map_err(|cause| InputsError::Read {
        path: f.display().to_string(),
        cause,
    })
}

/// Reads every input with the selection applied, labelled for display.
pub fn load_labelled(
    files: &[PathBuf],
    labels: &[String],
    sel: &Selection,
) -> Result<Vec<(String, RunResults)>, InputsError> {
    let labels = labels_for(files, labels)?;
    let mut out = Vec::with_capacity(files.len());
    for (f, label) in files.iter().zip(labels) {
        let text = read_named(f)?;
        let results = load(&text, &file_name(f), sel).map_err(|cause| InputsError::Load {
            path: f.display().to_string(),
            cause,
        })?;
        out.push((label, results));
    }
    Ok(out)
}

/// The inputs of a merge, each directory replaced by its *.json files in name order.
pub fn expand_directories(paths: &[PathBuf]) -> Result<Vec<PathBuf>, InputsError> {
    let mut out = Vec::new();
    for p in paths {
        if !p.is_dir() {
            out.push(p.clone());
            continue;
        }
        let mut found: Vec<PathBuf> = std::fs::read_dir(p)
            .map_err(|cause| InputsError::Directory {
                path: p.display().to_string(),
                cause,
            })?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|f| f.is_file() && f.extension().is_some_and(|x| x == "json"))
            .collect();
        if found.is_empty() {
            return Err(InputsError::EmptyDirectory(p.display().to_string()));
        }
        found.sort();
        out.extend(found);
    }
    Ok(out)
}

/// Reads every input of a merge, labelled by file name; a `kubectl logs` capture (from
/// `candor k8s`) contributes the JSON between its markers.
pub fn load_for_merge(files: &[PathBuf]) -> Result<Vec<(String, RunResults)>, InputsError> {
    let mut out = Vec::with_capacity(files.len());
    for f in files {
        let text = read_named(f)?;
        match crate::pod_log::json_from_log(&text) {
            Some(json) => {
                let name = file_name(f);
                let r = load(json, &name, &Selection::default()).map_err(|cause| {
                    InputsError::PodLog {
                        path: f.display().to_string(),
                        cause,
                    }
                })?;
                out.push((name, r));
            }
            None => out.extend(load_labelled(
                std::slice::from_ref(f),
                &[],
                &Selection::default(),
            )?),
        }
    }
    Ok(out)
}

/// `path` with `.n` before its extension (`dist.2.hgrm`), for one output per input.
pub fn numbered(path: &Path, n: usize) -> PathBuf {
    let stem = path.file_stem().map_or_else(
        || "distribution".into(),
        |s| s.to_string_lossy().into_owned(),
    );
    let ext = path
        .extension()
        .map_or_else(|| "out".into(), |s| s.to_string_lossy().into_owned());
    path.with_file_name(format!("{stem}.{n}.{ext}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_one_per_input() {
        let files = [PathBuf::from("a/one.json"), PathBuf::from("two.hlog")];
        assert_eq!(labels_for(&files, &[]).unwrap(), ["one.json", "two.hlog"]);
        let two = ["before".to_string(), " after".to_string()];
        assert_eq!(labels_for(&files, &two).unwrap(), ["before", "after"]);
        let err = labels_for(&files, &["a,b".to_string()]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--label gives 1 label for 2 inputs: give one per input, in order, comma-separated (--label before,after)"
        );
        let three: Vec<String> = ["x", "y", "z"].iter().map(|s| s.to_string()).collect();
        assert!(labels_for(&files, &three).is_err());
        assert!(labels_for(&files, &["x".into(), " ".into()]).is_err());
        assert_eq!(
            numbered(Path::new("out/dist.hgrm"), 2),
            PathBuf::from("out/dist.2.hgrm")
        );
    }
    use crate::synthetic::synthetic_run;

    #[test]
    fn json_and_hlog_are_detected_and_sliced() {
        let r = synthetic_run(5, 6, 200, 1_000_000, 0);
        let json = r.to_json_pretty();
        let all = load(&json, "r.json", &Selection::default()).unwrap();
        assert_eq!(all.main.response_time, r.main.response_time);
        let sel = Selection {
            tag: None,
            start_s: Some(2.0),
            end_s: Some(4.0),
        };
        let part = load(&json, "r.json", &sel).unwrap();
        assert_eq!(Books::of(&all), Books::Full);
        assert_eq!(Books::of(&part), Books::Slice);
        assert!(Books::requests(&part).is_none());
        assert_eq!(part.intervals.len(), 3);
        assert_eq!(part.main.response_time.count, 600);
        let log = crate::hlog::write_hlog(&r);
        let from_log = load(&log, "r.hlog", &sel).unwrap();
        assert_eq!(Books::of(&from_log), Books::LatencyOnly);
        assert_eq!(from_log.main.response_time, part.main.response_time);
        let svc = load(
            &log,
            "r.hlog",
            &Selection {
                tag: Some("service_time".into()),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(svc.main.response_time, r.main.service_time);
        assert!(matches!(
            load(
                &json,
                "r.json",
                &Selection {
                    tag: Some("x".into()),
                    ..Default::default()
                }
            ),
            Err(InputError::TagOnJson)
        ));
        let bad = Selection {
            tag: None,
            start_s: Some(5.0),
            end_s: Some(1.0),
        };
        assert!(matches!(
            load(&json, "r.json", &bad),
            Err(InputError::Range { .. })
        ));
    }

    #[test]
    fn bad_files_give_line_numbers() {
        let mut v: serde_json::Value =
            serde_json::from_str(&synthetic_run(5, 2, 10, 1000, 0).to_json_pretty()).unwrap();
        v["schema_version"] = serde_json::json!(999);
        let err = load(&v.to_string(), "f", &Selection::default()).unwrap_err();
        assert!(err.to_string().contains("newer candor"), "{err}");
        let err = load(
            "{\n  \"schema_version\": 1,\n  oops\n}",
            "f",
            &Selection::default(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("line 3"), "{err}");
        // Wrong cookie: a valid base64 payload that is not a histogram.
        let log = "#[StartTime: 1700000000.000 (seconds since epoch), x]\n0.000,1.000,1.000,AAAAAAAAAAAAAAAA\n";
        let err = load(log, "f", &Selection::default()).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("line 2: not an HdrHistogram encoding (cookie 0x00000000)"),
            "{err}"
        );
        // Bad base64.
        let log =
            "#[StartTime: 1700000000.000 (seconds since epoch), x]\n0.000,1.000,1.000,HIST$$$\n";
        let err = load(log, "f", &Selection::default()).unwrap_err();
        assert!(
            err.to_string().starts_with("line 2: invalid base64"),
            "{err}"
        );
        // Truncated: the last line of a real log cut in half.
        let full = crate::hlog::write_hlog(&synthetic_run(6, 3, 100, 1_000_000, 0));
        let cut = &full[..full.len() - 60];
        let lines = cut.lines().count();
        let err = load(cut, "f", &Selection::default()).unwrap_err();
        assert!(
            err.to_string().starts_with(&format!(
                "line {lines} (the file ends mid-line: truncated?): "
            )),
            "{err}"
        );
    }
}
