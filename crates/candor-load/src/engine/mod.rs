//! The engine of a load thread: a sans-IO core that makes every decision and keeps the books
//! (`core.rs`, `ledger.rs`, with the first failed responses in `examples.rs` and the back-off and
//! fault causes of connections that keep failing in `backoff.rs`), the transports beneath it (`transport.rs` with one framing file per
//! byte-stream protocol: `http1.rs`, `tcp.rs`; `http2/` a lean HTTP/2 client with its own mio loop), and
//! the driver loop that does the I/O and the pacing for the byte-stream protocols
//! (`mio_driver.rs`), with the kernel's receive timestamps of its reads (`rxstamp.rs`). TLS is
//! `tls_session.rs` (rustls's handshake, then records in the session's own buffers) and
//! `tls_record.rs` (the records' protection).
//! `sim.rs` drives the core on simulated time in tests.

pub mod backoff;
pub mod books;
pub mod core;
pub mod examples;
mod http1;
pub(crate) mod http2;
pub mod ledger;
pub(crate) mod mio_driver;
mod rxstamp;
#[cfg(test)]
mod sim;
mod tcp;
mod tls_record;
mod tls_session;
pub mod transport;
