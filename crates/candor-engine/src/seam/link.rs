//! What a protocol that frames its own requests ([`super::Carriage::Framed`]) is handed by the
//! driver for one connection: the core's books of that connection (the requests it carries,
//! what to book when one is sent, answered or failed), the connection's out buffer, and `now`.
//! The driver flushes the out buffer; the protocol never touches a socket.

use crate::core::Core;
use crate::examples::ContentCheck;
use crate::pool::PoolReport;
use crate::shared::{FailureClass, Prepared};

/// One connection of a load thread, as a framed protocol sees it during one call.
pub struct Link<'a> {
    pub core: &'a mut Core,
    pub requests: &'a [Prepared],
    /// What the connection owes the server: the protocol appends frames, the driver writes.
    pub out: &'a mut Vec<u8>,
    pub conn: usize,
    pub now: u64,
    /// Connections of the thread: slot `s` belongs to connection `s % connections`.
    pub connections: usize,
    pub pool: &'a mut Option<PoolReport>,
    pub connect_called: u64,
    /// Set by [`Link::opened`]: the driver marks the connection open.
    pub opened: bool,
}

/// A request a slot carries, as the protocol puts it on the wire.
pub struct Outgoing<'a> {
    /// Its HTTP/1.1 bytes (head and body), filled by the request source or prepared.
    pub bytes: &'a [u8],
    /// Its prepared request's index (the checks to apply, the encoded block to reuse).
    pub index: usize,
    /// Whether it was filled for this send (a template, a replayed entry): its bytes are not
    /// those of prepared request `index`.
    pub filled: bool,
}

impl Link<'_> {
    /// When this call happens (the driver's clock, simulated in tests).
    #[inline]
    pub fn now(&self) -> u64 {
        self.now
    }

    /// Which of its connection's slots `slot` is (0 to slots per connection - 1): where a
    /// protocol keeps per-request state that lives as long as its connection.
    #[inline]
    pub fn lane(&self, slot: usize) -> usize {
        slot / self.connections
    }

    /// The `k`-th oldest request this connection carries, sent or waiting.
    #[inline]
    pub fn carried_at(&self, k: usize) -> Option<usize> {
        self.core.carried_at(self.conn, k)
    }

    /// The request slot `slot` carries.
    #[inline]
    pub fn request(&self, slot: usize) -> Outgoing<'_> {
        outgoing(self.core, self.requests, slot)
    }

    /// Slot `slot`'s request takes a place among the `limit` the server allows at once (a
    /// stream); false: it waits until one closes (its wait is send lag).
    #[inline]
    pub fn may_open(&mut self, slot: usize, limit: usize) -> bool {
        self.core.open_stream(slot, limit)
    }

    /// Slot `slot`'s request left now (its first byte is in the out buffer).
    #[inline]
    pub fn sent(&mut self, slot: usize) {
        self.core.sent(slot, self.now);
    }

    /// `bytes` more of slot `slot`'s request were put on the wire.
    #[inline]
    pub fn written(&mut self, slot: usize, bytes: usize) {
        self.core.written(slot, bytes);
    }

    /// Slot `slot`'s response ended now with `status`, `failed` the check it failed besides its
    /// status, `body` its first bytes when kept.
    #[inline]
    pub fn complete(
        &mut self,
        slot: usize,
        status: u16,
        failed: Option<ContentCheck>,
        body: Option<&[u8]>,
    ) {
        self.core
            .complete_response(slot, status, failed, body, self.now);
    }

    /// Slot `slot`'s reply ended now with `status` and a code of its protocol's, as the
    /// protocol judged it (`end`); `failed` and `body` as for [`Link::complete`].
    #[inline]
    pub fn complete_coded(
        &mut self,
        slot: usize,
        status: u16,
        end: crate::ledger::CodedEnd<'_>,
        failed: Option<ContentCheck>,
        body: Option<&[u8]>,
    ) {
        self.core
            .complete_coded(slot, status, end, failed, body, self.now);
    }

    /// The first message of slot `slot`'s reply made of messages (a streamed gRPC response)
    /// arrived now.
    pub fn first_message(&mut self, slot: usize) {
        self.core.first_message(slot, self.now);
    }

    /// The first byte of slot `slot`'s response arrived now (kept if an earlier one did).
    pub fn first_byte(&mut self, slot: usize) {
        self.core.first_byte(slot, self.now);
    }

    /// What the stream reader `tap` found in slot `slot`'s response since it was last asked:
    /// the gaps between its events, and its latest event (from which `--event-timeout` runs).
    pub fn stream_progress(&mut self, slot: usize, tap: &mut candor_stream::tap::StreamTap) {
        tap.drain_gaps(|g| self.core.stream_gap(slot, g));
        if let Some(at) = tap.latest_event() {
            self.core.stream_event(slot, at);
        }
    }

    /// What slot `slot`'s streamed response came to (before it is completed or failed).
    pub fn stream_outcome(&mut self, slot: usize, o: &candor_stream::tap::StreamOutcome) {
        self.core.stream_outcome(slot, o);
    }

    /// Slot `slot`'s request failed now, as `kind`; the connection carries on.
    #[inline]
    pub fn fail(&mut self, slot: usize, kind: FailureClass) {
        self.core.fail(slot, kind, self.now);
    }

    /// `n` more of what the protocol counts of its own transport, `name` (QUIC's packets sent
    /// and lost): summed over connections and threads, in the results' `protocol_counts`.
    pub fn count(&mut self, name: &'static str, n: u64) {
        let now = self.now;
        self.core.ledger_mut().protocol_count(name, n, now);
    }

    /// Whether this connection answered a request since it was connected.
    pub fn has_answered(&self) -> bool {
        self.core.has_answered(self.conn)
    }

    /// The protocol's greeting is done (the server's first word arrived): the connection is
    /// open, and its pool reports it ready.
    pub fn opened(&mut self) {
        self.core.new_stream_connection(self.conn);
        if let Some(p) = self.pool.as_mut() {
            p.ready(self.now - self.connect_called);
        }
        self.opened = true;
    }
}

/// The request slot `slot` carries (as [`Link::request`], for a protocol that writes into
/// `Link::out` while it reads the request: the two are separate fields of the link).
#[inline]
pub fn outgoing<'a>(core: &'a Core, requests: &'a [Prepared], slot: usize) -> Outgoing<'a> {
    let index = core.exchange(slot).request as usize;
    match core.slot_request(slot) {
        Some((bytes, _)) => Outgoing {
            bytes,
            index,
            filled: true,
        },
        None => Outgoing {
            bytes: &requests[index].bytes,
            index,
            filled: false,
        },
    }
}
