//! How a receiver answered one delivery, whatever the transport (HTTP or gRPC).

/// How the receiver answered one push.
pub(crate) enum Answer {
    Accepted,
    /// Worth another try: down, overloaded (429, RESOURCE_EXHAUSTED) or failing (5xx,
    /// UNAVAILABLE).
    Retry(String),
    /// Refused for good (other 4xx, other gRPC codes): the batch is dropped.
    Refused(String),
}
