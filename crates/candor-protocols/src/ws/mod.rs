//! WebSocket (RFC 6455): the opening handshake (`handshake.rs`), frames both ways
//! (`frames.rs`) and how a reply is matched to the message it answers (`matching.rs`), each
//! sans-IO and tested exactly; and `carrier.rs`, the framed `Protocol` the one driver runs.
//!
//! How it plugs into the driver: a WebSocket connection is a byte
//! stream (plain for `ws://`, TLS for `wss://`) whose protocol first writes the upgrade request
//! and reads the `101` (the upgrade counts as the connect), then puts each request the core
//! carries on the wire as one masked frame (a fresh mask per frame), and turns the server's
//! frames into completions: `InOrder` completes the connection's oldest request, `JsonField`
//! the request whose number the reply carries. Pings are answered with pongs (a bounded number
//! owed at once: past it, a flood); a close frame fails what the connection had on the wire
//! (class `read`); a frame error, a text reply that is not UTF-8 or a ping flood fails it as
//! `parse`, a reply that matches nothing as `protocol`; a refused upgrade fails what waited as
//! `connect`; and the core's back-off reopens the connection.

mod carrier;
pub mod faults;
pub mod frames;
pub mod handshake;
pub mod matching;
pub mod unit;

#[cfg(test)]
mod sim;
