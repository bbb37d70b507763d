//! How a protocol carries requests on a connection, as the engine's core and driver need it:
//! how many at once, what a timeout ends, and whether requests are HTTP's or raw bytes.

/// What a timeout ends.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum TimeoutScope {
    /// The whole connection (HTTP/1.1, raw TCP): responses come in order, so one that never
    /// comes blocks everything behind it; the connection is closed and its requests fail.
    Connection,
    /// One stream (HTTP/2): it is reset and the connection carries on.
    Stream,
}

/// The requests a connection carries at once, and what a timeout ends.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Slots {
    pub per_connection: usize,
    pub timeout: TimeoutScope,
}

/// What a run's requests are before they go out.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum RequestKind {
    /// HTTP requests (the request set, or the URL's one request): compiled with their checks,
    /// names and templates.
    Http,
    /// The same bytes for every request (raw TCP's payload): nothing to compile.
    Payload,
}

/// What carries a connection's bytes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Transport {
    /// A byte stream: TCP, and TLS over it when the target says so.
    Stream,
    /// Datagrams on a UDP socket connected to the target (`transport/datagram.rs`), for a
    /// framed protocol that brings its own reliability and security: each read hands
    /// `Protocol::receive` one datagram, and what it puts in `link.out` is whole datagrams
    /// (`transport::datagram::begin`/`end`). No TLS is put under it; a read or write error
    /// before its greeting is answered (an ICMP refusal) fails the connect.
    Datagram,
}
