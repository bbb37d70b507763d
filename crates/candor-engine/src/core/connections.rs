//! The core's books of its connections: connects begun and done, a connection lost and the
//! back-off before it connects again, and the streams each multiplexed connection has open.

use super::{Core, TimeoutScope};
use crate::backoff::Fault;

impl Core {
    /// A connect attempt for `conn` started at `now`; requests waiting on it are timed from here.
    pub fn connecting(&mut self, conn: usize, now: u64) {
        self.conns[conn].connect_started = now;
        self.conns[conn].backoff.connecting();
    }

    /// A connection was established (TCP connected) at `now`.
    pub fn connected(&mut self, now: u64) {
        self.ledger.connection_opened(now);
    }

    pub fn tls_handshake(&mut self, ns: u64, now: u64) {
        self.ledger.tls_handshake(ns, now);
    }

    /// Connection `conn` ended at `now`, for `fault` if it failed (`None`: closed by the server
    /// with nothing outstanding, say an idle keep-alive close). A fault is booked by cause, and
    /// the back-off decides when the connection may be connected again (at once if it had
    /// answered an exchange or closed without a fault; see `engine::backoff`). Not called for
    /// timeouts, which `--timeout` already bounds.
    pub fn connection_down(&mut self, conn: usize, fault: Option<Fault>, now: u64) {
        match fault {
            Some(f) => {
                self.ledger.connection_fault(f, now);
                self.conns[conn].backoff.ended(now);
            }
            None => self.conns[conn].backoff.closed(now),
        }
    }

    /// Whether connection `conn` answered an exchange since it was last connected.
    pub fn has_answered(&self, conn: usize) -> bool {
        self.conns[conn].backoff.has_answered()
    }

    /// Whether connection `conn`, down, may be connected at `now`. If its back-off still runs,
    /// the requests it carries wait (their wait is send lag) and [`Core::deferred_connect`]
    /// hands it back when the back-off has run out.
    pub fn may_connect(&mut self, conn: usize, now: u64) -> bool {
        let c = &mut self.conns[conn];
        if now >= c.backoff.retry_at() {
            c.deferred = false;
            return true;
        }
        c.deferred = true;
        self.any_deferred = true;
        false
    }

    /// A deferred connection whose back-off ran out by `now` and that still carries requests:
    /// the driver connects it.
    pub fn deferred_connect(&mut self, now: u64) -> Option<usize> {
        if !self.any_deferred {
            return None;
        }
        let mut left = false;
        for (i, c) in self.conns.iter_mut().enumerate() {
            if !c.deferred {
                continue;
            }
            if c.carried.is_empty() {
                // Its requests failed or timed out meanwhile: the next one connects it.
                c.deferred = false;
            } else if now >= c.backoff.retry_at() {
                c.deferred = false;
                return Some(i);
            } else {
                left = true;
            }
        }
        self.any_deferred = left;
        None
    }

    /// The earliest instant a deferred connection may be connected (`u64::MAX`: none).
    pub(super) fn next_retry(&self) -> u64 {
        if !self.any_deferred {
            return u64::MAX;
        }
        self.conns
            .iter()
            .filter(|c| c.deferred && !c.carried.is_empty())
            .map(|c| c.backoff.retry_at())
            .min()
            .unwrap_or(u64::MAX)
    }

    /// HTTP/2: a new connection `conn` is up; the streams of the old one are gone.
    pub fn new_stream_connection(&mut self, conn: usize) {
        let c = &mut self.conns[conn];
        c.stream_epoch += 1;
        c.open_streams = 0;
    }

    /// HTTP/2: slot `slot` asks for a stream on its connection, whose server allows `limit` at
    /// once (SETTINGS_MAX_CONCURRENT_STREAMS). False means it waits (the wait is send lag, as it
    /// is for a real client); the driver asks again when a stream of that connection closes.
    pub fn open_stream(&mut self, slot: usize, limit: usize) -> bool {
        let conn = self.slots[slot].conn;
        let c = &mut self.conns[conn];
        if self.slots[slot].stream == Some(c.stream_epoch) {
            return true;
        }
        if c.open_streams >= limit {
            return false;
        }
        c.open_streams += 1;
        self.slots[slot].stream = Some(c.stream_epoch);
        true
    }

    /// HTTP/2: slot `slot`'s stream is closed (also done by every completion and failure).
    pub fn close_stream(&mut self, slot: usize) {
        let s = &mut self.slots[slot];
        if let Some(epoch) = s.stream.take() {
            let c = &mut self.conns[s.conn];
            if c.stream_epoch == epoch {
                c.open_streams -= 1;
            }
        }
    }

    /// HTTP/2: streams open on connection `conn` now.
    pub fn open_streams(&self, conn: usize) -> usize {
        self.conns[conn].open_streams
    }

    pub fn timeout_scope(&self) -> TimeoutScope {
        self.cfg.timeout_scope
    }
}
