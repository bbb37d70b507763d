//! candor's protocol-neutral load engine. Per load thread, a sans-IO core makes every decision
//! and keeps the books (`core.rs`, `ledger.rs`, `books.rs`, with the first failed responses in
//! `examples.rs` and the back-off and fault causes of connections that keep failing in
//! `backoff.rs`), and the one driver loop does the I/O and the pacing for every protocol
//! (`driver.rs`, over any [`seam::Protocol`], in order or framed), with the kernel's receive
//! timestamps of its reads (`rxstamp.rs`) and its socket steps (`socket_steps.rs`). Around them:
//! the open-loop schedule of intended sends (`schedule.rs`) and the load's shape (`shape.rs`), a
//! run's validated settings (`config/`), connection pools (`pool.rs`), the byte stream, plain or
//! TLS (`transport/`), and what the load threads share with the run (`shared.rs`,
//! `interval_store.rs`, `phase_outcome.rs`), and `--records`' queue and writer (`records.rs`). The protocols live in the crate above this one and
//! plug in through `seam/`; `sim.rs` drives the core on simulated time in tests.

pub mod backoff;
pub mod books;
pub mod config;
pub mod core;
pub mod driver;
pub mod examples;
pub mod interval_store;
pub mod ledger;
pub mod phase_outcome;
pub mod pool;
pub mod priority;
pub mod records;
pub mod request_plan;
mod rxstamp;
pub mod schedule;
pub mod seam;
pub mod shape;
pub mod shared;
#[cfg(test)]
mod sim;
pub mod socket_steps;
pub mod transport;
mod validate;
