//! `candor correct`: HdrHistogram's after-the-fact coordinated-omission correction applied to
//! data recorded without a schedule (another tool's interval log, a closed-loop run), printed
//! beside the data as recorded. The corrected column is an estimate, never a measurement.

use anyhow::{Context, Result};
use candor_analysis::correction::copy_corrected;
use candor_core::units::DurationArg;
use candor_report::correction_text;
use candor_report::export::Destination;
use candor_report::hgrm::HgrmExporter;
use candor_report::input::{load, Selection};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct CorrectArgs {
    /// The intended interval between samples of one sender (e.g. 1/rate per connection): every
    /// value v larger than it also records v-i, v-2i, ... down to i.
    #[arg(long, value_name = "DUR", required = true)]
    pub expected_interval: DurationArg,
    /// candor JSON results or an HdrHistogram interval log (.hlog) of any tool.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// For interval logs: the stream to correct (default: untagged lines).
    #[arg(long, value_name = "TAG")]
    pub tag: Option<String>,
    /// Also write the corrected distribution as an .hgrm file (ms).
    #[arg(long, value_name = "FILE")]
    pub hgrm: Option<PathBuf>,
}

pub fn main(args: CorrectArgs) -> Result<i32> {
    let interval = args.expected_interval.ns();
    if interval == 0 {
        anyhow::bail!("--expected-interval must be longer than zero");
    }
    // Opened before anything is printed: a bad path, or the input itself, is refused at once.
    let hgrm = Destination::open_opt("--hgrm", args.hgrm.as_ref())?;
    if let Some(out) = &hgrm {
        out.refuse_inputs(std::slice::from_ref(&args.file))?;
    }
    crate::stdio::give_stdout_to(hgrm.as_ref());
    let text = candor_report::input::read_named(&args.file)?;
    let name = args.file.display().to_string();
    let sel = Selection {
        tag: args.tag.clone(),
        ..Default::default()
    };
    let results = load(&text, &name, &sel).with_context(|| name.clone())?;
    let rec = results
        .main
        .histograms
        .decode()
        .with_context(|| format!("{name}: histogram"))?;
    let raw = &rec.response;
    if raw.is_empty() {
        anyhow::bail!("{name}: no samples to correct");
    }
    let fixed = copy_corrected(raw, interval)?;
    let open_loop = results.mode == candor_core::results::Mode::OpenLoop;
    print!(
        "{}",
        correction_text::render(&name, open_loop, raw, &fixed, interval)
    );
    if let Some(mut out) = hgrm {
        out.export(&HgrmExporter, &fixed)?;
        eprintln!("wrote {} (corrected estimate, ms)", out.name());
    }
    Ok(0)
}
