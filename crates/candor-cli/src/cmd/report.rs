//! `candor report`: turns candor JSON results and HdrHistogram interval logs (any tool's, any
//! encoding) into a text summary, an HTML report and `.hgrm` percentile files.

use anyhow::Context;
use candor_report::hgrm::HgrmExporter;
use candor_report::hlog::HlogExporter;
use candor_report::html::{HtmlExporter, HtmlOptions, Slo};
use candor_report::input::{load_labelled, Selection};
use candor_report::objectives::{drawable_slos, verdict_text};
use candor_report::report_outputs::{open_report_outputs, ReportOutputs};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug, Clone)]
pub struct ReportArgs {
    /// Results to report: candor JSON files, `run --records` files and/or HdrHistogram interval
    /// logs (.hlog), detected by content. Several files give overlaid curves, one per file.
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
    /// Labels for the inputs, one per input in order, comma-separated (`--label before,after`)
    /// or repeated (default: file names).
    #[arg(long, value_name = "LABEL,...", value_delimiter = ',')]
    pub label: Vec<String>,
    /// Title of the HTML report.
    #[arg(long, value_name = "TEXT")]
    pub title: Option<String>,
}

pub fn main(args: ReportArgs) -> anyhow::Result<i32> {
    if let Some(code) = crate::cmd::report_sweep::report_sweep(
        &args.files,
        &args.slo,
        args.output.as_deref(),
        args.title.as_deref(),
    )? {
        return Ok(code);
    }
    let slo_set = candor_analysis::SloSet::parse_all(&args.slo)?;
    let slos: Vec<Slo> = drawable_slos(&slo_set);
    let mut slo_failed = false;
    let sel = Selection {
        tag: args.tag.clone(),
        start_s: args.start,
        end_s: args.end,
    };
    let runs = load_labelled(&args.files, &args.label, &sel)?;

    // Every output is opened, and checked against the others and the inputs, before any is
    // written.
    let ReportOutputs {
        mut outputs,
        hgrm_at,
        hlog_at,
        html_at,
    } = open_report_outputs(
        &args.files,
        runs.len(),
        args.hgrm.as_deref(),
        args.hlog.as_deref(),
        args.output.as_deref(),
    )?;
    for out in &outputs {
        crate::stdio::give_stdout_to(Some(out));
    }

    for (&at, (label, r)) in hgrm_at.iter().zip(&runs) {
        let dest = &mut outputs[at];
        dest.export(&HgrmExporter, r)
            .with_context(|| format!("{label}: histogram"))?;
        eprintln!("wrote {} ({label}, response time, ms)", dest.name());
    }

    for (&at, (label, r)) in hlog_at.iter().zip(&runs) {
        let dest = &mut outputs[at];
        dest.export(&HlogExporter, r)?;
        eprintln!(
            "wrote {} ({label}, {} intervals)",
            dest.name(),
            r.intervals.iter().filter(|i| !i.warmup).count()
        );
    }

    match (&args.output, html_at) {
        (Some(_), Some(at)) => {
            let html = HtmlExporter(HtmlOptions {
                title: args.title.clone(),
                slos,
            });
            outputs[at].export(&html, runs.as_slice())?;
            for (label, r) in &runs {
                if !slo_set.is_empty() {
                    let (text, failed) = verdict_text(&slo_set, r);
                    slo_failed |= failed;
                    eprint!("{label}:\n{text}");
                }
            }
            eprintln!(
                "wrote {} ({} run{})",
                outputs[at].name(),
                runs.len(),
                if runs.len() == 1 { "" } else { "s" }
            );
        }
        _ => {
            for (i, (label, r)) in runs.iter().enumerate() {
                if i > 0 {
                    println!();
                }
                println!("== {label}");
                print!("{}", candor_report::text::render(r));
                if !slo_set.is_empty() {
                    let (text, failed) = verdict_text(&slo_set, r);
                    slo_failed |= failed;
                    print!("{text}");
                }
            }
        }
    }
    Ok(if slo_failed {
        crate::cmd::EXIT_VERDICT_FAILED
    } else {
        0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_comma_list_is_split_into_labels() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            report: ReportArgs,
        }
        let cli =
            Cli::try_parse_from(["candor", "a.json", "b.json", "--label", "one,two"]).unwrap();
        assert_eq!(cli.report.label, ["one", "two"]);
        let cli = Cli::try_parse_from([
            "candor", "a.json", "b.json", "--label", "one", "--label", "two",
        ])
        .unwrap();
        assert_eq!(cli.report.label, ["one", "two"]);
    }
}
