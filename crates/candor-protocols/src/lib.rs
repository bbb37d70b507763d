//! The protocols candor speaks, one folder each: `http1/` (HTTP/1.1, plain or TLS), `tcp/` (raw
//! TCP with `--framing`), `http2/` (HTTP/2 with its streams, plain or TLS with ALPN `h2`, and gRPC
//! over it), `http3/` (HTTP/3 over QUIC on UDP, ALPN `h3`), `ws/` (WebSocket, `ws://` or `wss://`). Each is one
//! `candor_engine::seam::Protocol` implementation, one value per connection, that the engine's one
//! driver runs. Each folder's `sim.rs` runs its protocol on the real driver on simulated time.

pub mod http1;
pub mod http2;
pub mod http3;
pub mod tcp;
pub mod ws;
