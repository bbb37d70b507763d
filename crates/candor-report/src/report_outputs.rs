//! The files `candor report` writes, all opened before any is written and checked against each
//! other and the inputs: `--hgrm f --hlog f`, or `--hlog a.json` for input `a.json`, is refused,
//! not lost. With several inputs each gets its own numbered `--hgrm`/`--hlog` file.

use crate::export::{Destination, ExportError};
use crate::input::numbered;
use std::path::{Path, PathBuf};

/// The opened outputs, and where each kind sits among them.
pub struct ReportOutputs {
    pub outputs: Vec<Destination>,
    /// Each input's `--hgrm` file, by input.
    pub hgrm_at: Vec<usize>,
    /// Each input's `--hlog` file, by input.
    pub hlog_at: Vec<usize>,
    /// The HTML report (`-o`).
    pub html_at: Option<usize>,
}

/// Opens the outputs of a report of `runs` inputs read from `inputs`. Stdout stays stdout (two
/// inputs there are refused as two outputs in one place).
pub fn open_report_outputs(
    inputs: &[PathBuf],
    runs: usize,
    hgrm: Option<&Path>,
    hlog: Option<&Path>,
    html: Option<&Path>,
) -> Result<ReportOutputs, ExportError> {
    let per_input = |path: &Path, i: usize| {
        if runs == 1 || path.as_os_str() == "-" {
            path.to_path_buf()
        } else {
            numbered(path, i + 1)
        }
    };
    let mut outputs: Vec<Destination> = Vec::new();
    let mut open = |flag: &'static str, path: PathBuf| -> Result<usize, ExportError> {
        let dest = Destination::open(flag, path)?;
        dest.refuse_same_place(&outputs)?;
        dest.refuse_inputs(inputs)?;
        outputs.push(dest);
        Ok(outputs.len() - 1)
    };
    let mut hgrm_at = Vec::new();
    let mut hlog_at = Vec::new();
    for i in 0..runs {
        if let Some(path) = hgrm {
            hgrm_at.push(open("--hgrm", per_input(path, i))?);
        }
        if let Some(path) = hlog {
            hlog_at.push(open("--hlog", per_input(path, i))?);
        }
    }
    let html_at = html.map(|p| open("-o", p.to_path_buf())).transpose()?;
    Ok(ReportOutputs {
        outputs,
        hgrm_at,
        hlog_at,
        html_at,
    })
}
