//! The engine of a load thread: a sans-IO core that makes every decision and keeps the books
//! (`core.rs`, `ledger.rs`, with the first failed responses in `examples.rs` and the back-off and
//! fault causes of connections that keep failing in `backoff.rs`), and the one driver loop that
//! does the I/O and the pacing for every protocol (`driver.rs`, over any
//! `crate::protocol::Protocol`, in order or framed), with the kernel's receive timestamps of its
//! reads (`rxstamp.rs`) and its socket steps (`socket_steps.rs`). The protocols are in
//! `crate::protocol`, the byte stream (plain or TLS) in `crate::transport`.
//! `sim.rs` drives the core on simulated time in tests.

pub mod backoff;
pub mod books;
pub mod core;
pub(crate) mod driver;
pub mod examples;
pub mod ledger;
mod rxstamp;
#[cfg(test)]
mod sim;
pub(crate) mod socket_steps;
