//! Exporters from results to bytes (one module per format) and readers of other tools' files.

pub mod text;

pub mod books;
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
/// The sweep page, at the path it has always had.
pub use html::sweep as sweep_html;
pub mod input;
pub mod javafmt;
pub mod json;
pub mod llm_headline;
pub mod merged;
pub mod noise;
pub mod objectives;
pub mod pod_log;
pub mod records;
pub mod repeats;
pub mod report_outputs;
pub mod shards;
pub mod stream_text;
pub mod sweep_llm;
pub mod sweep_text;
pub mod synthetic;
pub mod validate;
pub mod workload_text;
