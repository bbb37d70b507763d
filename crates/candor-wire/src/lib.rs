//! Requests as data and bytes, before any protocol: the target a run aims at (`target.rs`), the
//! request specs and `--requests` lines (`requests.rs`), the statuses that count as success
//! (`status.rs`), what may reach the wire (`wire.rs`), and the HTTP/1.1 form every request starts
//! from (`request_form.rs`).

pub mod request_form;
pub mod requests;
pub mod status;
pub mod target;
pub mod wire;
