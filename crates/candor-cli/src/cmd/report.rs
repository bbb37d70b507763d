//! `candor report`: turns candor JSON results and HdrHistogram interval logs (any tool's, any
//! encoding) into a text summary, an HTML report and `.hgrm` percentile files.

use anyhow::{bail, Context};
use candor_core::results::RunResults;
use candor_report::html::{write_html, HtmlOptions, Slo};
use candor_report::input::{load, Selection};
use clap::Args;
use std::path::{Path, PathBuf};

#[derive(Args, Debug, Clone)]
pub struct ReportArgs {
    /// Results to report: candor JSON files and/or HdrHistogram interval logs (.hlog), detected by
    /// content. Several files give overlaid curves, one per file.
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    /// Write a self-contained HTML report here (no network needed to view it).
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Write response time as an .hgrm percentile distribution (values in ms); with several inputs
    /// one file per input, numbered.
    #[arg(long, value_name = "FILE")]
    pub hgrm: Option<PathBuf>,
    /// Also write each input as an HdrHistogram interval log (format 1.3; untagged = response time,
    /// Tag=service_time, Tag=send_lag); with several inputs one file per input, numbered.
    #[arg(long, value_name = "FILE")]
    pub hlog: Option<PathBuf>,
    /// For interval logs: the stream to report (default: untagged lines; candor's logs also have
    /// service_time and send_lag).
    #[arg(long, value_name = "TAG")]
    pub tag: Option<String>,
    /// Only intervals starting at or after this many seconds from the start (Java semantics).
    #[arg(long, value_name = "SECONDS")]
    pub start: Option<f64>,
    /// Stop at the first interval starting after this many seconds from the start.
    #[arg(long, value_name = "SECONDS")]
    pub end: Option<f64>,
    /// Service-level objectives on response time, like 'p99<10ms,p99.9<50ms,max<1s,errors<0.1%'
    /// (repeatable): a PASS/FAIL line per objective and input, drawn on the HTML spectrum; exit
    /// code 3 if any fails.
    #[arg(long, value_name = "SLO")]
    pub slo: Vec<String>,
    /// Labels for the inputs, in order (default: file names).
    #[arg(long, value_name = "LABEL")]
    pub label: Vec<String>,
    /// Title of the HTML report.
    #[arg(long, value_name = "TEXT")]
    pub title: Option<String>,
}

/// Reads every input with the selection applied, labelled for display; errors name the file.
pub fn load_inputs(
    files: &[PathBuf],
    labels: &[String],
    sel: &Selection,
) -> anyhow::Result<Vec<(String, RunResults)>> {
    if labels.len() > files.len() {
        bail!("{} labels given for {} files", labels.len(), files.len());
    }
    let mut out = Vec::with_capacity(files.len());
    for (i, f) in files.iter().enumerate() {
        let text =
            std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?;
        let name = f.file_name().map_or_else(
            || f.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let results = load(&text, &name, sel).with_context(|| format!("{}", f.display()))?;
        out.push((labels.get(i).cloned().unwrap_or(name), results));
    }
    Ok(out)
}

fn numbered(path: &Path, n: usize) -> PathBuf {
    let stem = path.file_stem().map_or_else(
        || "distribution".into(),
        |s| s.to_string_lossy().into_owned(),
    );
    let ext = path
        .extension()
        .map_or_else(|| "out".into(), |s| s.to_string_lossy().into_owned());
    path.with_file_name(format!("{stem}.{n}.{ext}"))
}

pub fn main(args: ReportArgs) -> anyhow::Result<i32> {
    if let Some(code) = crate::cmd::sweep::report_sweep(&args)? {
        return Ok(code);
    }
    let slo_set = candor_truth::SloSet::parse_all(&args.slo)?;
    let slos: Vec<Slo> = crate::cmd::sweep::drawable_slos(&slo_set);
    let mut slo_failed = false;
    let sel = Selection {
        tag: args.tag.clone(),
        start_s: args.start,
        end_s: args.end,
    };
    let runs = load_inputs(&args.files, &args.label, &sel)?;

    if let Some(path) = &args.hgrm {
        for (i, (label, r)) in runs.iter().enumerate() {
            let rec = r
                .main
                .histograms
                .decode()
                .with_context(|| format!("{label}: histogram"))?;
            let target = if runs.len() == 1 {
                path.clone()
            } else {
                numbered(path, i + 1)
            };
            std::fs::write(
                &target,
                candor_report::hgrm::write_hgrm(&rec.response, 5, 1e6),
            )
            .with_context(|| format!("writing {}", target.display()))?;
            eprintln!("wrote {} ({label}, response time, ms)", target.display());
        }
    }

    if let Some(path) = &args.hlog {
        for (i, (label, r)) in runs.iter().enumerate() {
            let target = if runs.len() == 1 {
                path.clone()
            } else {
                numbered(path, i + 1)
            };
            std::fs::write(&target, candor_report::hlog::write_hlog(r))
                .with_context(|| format!("writing {}", target.display()))?;
            eprintln!(
                "wrote {} ({label}, {} intervals)",
                target.display(),
                r.intervals.iter().filter(|i| !i.warmup).count()
            );
        }
    }

    match &args.output {
        Some(path) => {
            let page = write_html(
                &runs,
                &HtmlOptions {
                    title: args.title.clone(),
                    slos,
                },
            )?;
            std::fs::write(path, page).with_context(|| format!("writing {}", path.display()))?;
            for (label, r) in &runs {
                if !slo_set.is_empty() {
                    let verdicts = slo_set.evaluate(r);
                    slo_failed |= !candor_truth::slo::all_pass(&verdicts);
                    eprint!("{label}:\n{}", candor_truth::slo::render(&verdicts));
                }
            }
            eprintln!(
                "wrote {} ({} run{})",
                path.display(),
                runs.len(),
                if runs.len() == 1 { "" } else { "s" }
            );
        }
        None => {
            for (i, (label, r)) in runs.iter().enumerate() {
                if i > 0 {
                    println!();
                }
                println!("== {label}");
                print!("{}", candor_report::text::render(r));
                if !slo_set.is_empty() {
                    let verdicts = slo_set.evaluate(r);
                    slo_failed |= !candor_truth::slo::all_pass(&verdicts);
                    print!("{}", candor_truth::slo::render(&verdicts));
                }
            }
        }
    }
    Ok(if slo_failed {
        crate::cmd::pause::EXIT_VERDICT_FAILED
    } else {
        0
    })
}
