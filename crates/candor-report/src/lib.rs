//! Exporters from results to bytes (one module per format) and readers of other tools' files.

pub mod text;

pub mod capacity_report;
pub mod codec;
pub mod compare_gate;
pub mod comparison;
pub mod correction_text;
pub mod escape;
pub mod exact_merge;
pub mod export;
pub mod hgrm;
pub mod hlog;
pub mod html;
mod html_stop;
mod html_stream;
mod html_workload;
pub mod input;
pub mod javafmt;
pub mod json;
pub mod merged;
pub mod noise;
pub mod objectives;
pub mod repeats;
pub mod report_outputs;
pub mod shards;
pub mod stream_text;
pub mod sweep_html;
pub mod sweep_text;
pub mod synthetic;
pub mod validate;
pub mod workload_text;
