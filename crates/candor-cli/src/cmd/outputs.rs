//! The files `candor run` (and its repeats) writes, opened before the load starts so that a bad
//! path costs a second, not the run, and what it prints when one could not be written.

use anyhow::Result;
use candor_core::results::RunResults;
use candor_report::export::{ExportError, ExportManager};
use candor_report::hgrm::HgrmExporter;
use candor_report::hlog::HlogExporter;
use candor_report::json::JsonExporter;
use candor_runner::flags::{LoadArgs, RunArgs};

/// The `--json` (`-` for stdout), `--hlog` and `--hgrm` outputs asked for, opened now.
pub fn run_exports(args: &RunArgs) -> Result<ExportManager<'static, RunResults>> {
    let mut exports = ExportManager::default();
    exports
        .add("--json", args.json.as_deref(), JsonExporter)?
        .add("--hlog", args.hlog.as_deref(), HlogExporter)?
        .add("--hgrm", args.hgrm.as_deref(), HgrmExporter)?;
    exports.refuse_inputs(&load_inputs(&args.load))?;
    Ok(exports)
}

/// `--records`: its file created and its writer started now, the load threads' end of its
/// queue put in `config`.
pub fn open_records(
    args: &RunArgs,
    config: &mut candor_load::plan::RunPlan,
) -> Result<Option<candor_load::records::RecordWriter>> {
    let Some(path) = &args.records else {
        return Ok(None);
    };
    if load_inputs(&args.load).contains(&path.as_path()) {
        anyhow::bail!("--records {}: that is an input of the run", path.display());
    }
    let names = config
        .workload
        .lines
        .iter()
        .map(|l| l.name.clone())
        .collect();
    let (sink, writer) = candor_load::records::open(path, names)?;
    config.records = Some(sink);
    Ok(Some(writer))
}

/// Ends `--records`' writer once the load is over; records the queue had no room for are a
/// warning of the results.
pub fn finish_records(
    writer: Option<candor_load::records::RecordWriter>,
    results: &mut RunResults,
) -> Result<()> {
    let Some(w) = writer else { return Ok(()) };
    results.warnings.extend(w.finish()?.warnings("--records"));
    Ok(())
}

/// The files the load flags read (`--requests`, `--replay`, `--data`, `--body-file`,
/// `--payload-file`, `--ca`): no output may replace one of them.
pub fn load_inputs(load: &LoadArgs) -> Vec<&std::path::Path> {
    [
        &load.requests,
        &load.replay,
        &load.data,
        &load.body_file,
        &load.payload_file,
        &load.ca,
    ]
    .into_iter()
    .filter_map(|p| p.as_deref())
    .collect()
}

/// Prints each failed export as one line; true when there were none.
pub fn report_failures(failures: Vec<ExportError>) -> bool {
    for e in &failures {
        eprintln!("candor: error: {e} (the other outputs were written)");
    }
    failures.is_empty()
}
