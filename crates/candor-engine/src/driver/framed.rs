//! The driver's steps for protocols that frame their own requests
//! ([`crate::seam::Carriage::Framed`]: HTTP/2, WebSocket): the protocol writes into each
//! connection's out buffer (`Link::out`), the driver flushes it (once per pass for the requests of that
//! pass), hands the protocol what was read, and books what the connection's loss or a
//! request's timeout means.

use super::{close, ConnState, Driver, CONNECT_SCAN_NS, READS_PER_PASS};
use crate::backoff::Fault;
use crate::seam::{Broken, Greeting, Link, Protocol, Received, Transport};
use crate::shared::FailureClass;
use crate::socket_steps;
use crate::transport::Sock;
use candor_core::now_ns;
use std::io;

impl<P: Protocol> Driver<P> {
    /// The protocol of connection `i` and what it may touch, at `now`.
    fn link(&mut self, i: usize, now: u64) -> (&mut P, Link<'_>) {
        let connections = self.conns.len();
        let c = &mut self.conns[i];
        let link = Link {
            core: &mut self.core,
            requests: &self.requests,
            out: &mut c.out,
            conn: i,
            now,
            connections,
            pool: &mut self.pool,
            connect_called: c.connect_called,
            opened: false,
        };
        (&mut c.protocol, link)
    }

    /// Connection `i`'s byte stream is up: the protocol greets the server (or is open at once).
    pub(super) fn greet(&mut self, i: usize, now: u64) {
        let (protocol, mut link) = self.link(i, now);
        let greeting = protocol.greet(&mut link);
        if greeting == Greeting::Open {
            link.opened();
            protocol.send(&mut link);
        }
        self.conns[i].state = match greeting {
            Greeting::Open => ConnState::Open,
            Greeting::AwaitPeer => ConnState::Greeting,
        };
        self.flush(i, now);
    }

    /// The core gave connection `i` (open) a request: the protocol puts on the wire what it
    /// can; the out buffer is written at the end of the pass.
    pub(super) fn send_framed(&mut self, i: usize, now: u64) {
        let (protocol, mut link) = self.link(i, now);
        protocol.send(&mut link);
        self.mark_dirty(i);
    }

    /// Writes every connection whose out buffer grew in this pass.
    pub(super) fn flush_dirty(&mut self, now: u64) {
        while let Some(i) = self.dirty.pop() {
            self.conns[i].dirty = false;
            self.flush(i, now);
        }
    }

    fn mark_dirty(&mut self, i: usize) {
        if !self.conns[i].dirty {
            self.conns[i].dirty = true;
            self.dirty.push(i);
        }
    }

    /// Writes what is buffered for connection `i`, as far as the socket takes it.
    pub fn flush(&mut self, i: usize, now: u64) {
        let c = &mut self.conns[i];
        let Some(sock) = c.sock.as_mut() else {
            return;
        };
        while c.out_off < c.out.len() {
            match sock.write(&c.out[c.out_off..]) {
                Ok(0) => return self.connection_lost(i, FailureClass::Write, now),
                Ok(n) => c.out_off += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if P::TRANSPORT == Transport::Datagram => {
                    return self.io_failed(i, FailureClass::Write, &e, now)
                }
                Err(_) => return self.connection_lost(i, FailureClass::Write, now),
            }
        }
        if c.out_off == c.out.len() {
            c.out.clear();
            c.out_off = 0;
        }
        match sock.flush() {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(_) => self.connection_lost(i, FailureClass::Write, now),
        }
    }

    /// Reads what connection `i` has received and hands it to the protocol (see
    /// `read_responses` on `until_blocked`), at most [`READS_PER_PASS`] times.
    pub fn read_framed(&mut self, i: usize, until_blocked: bool) {
        let mut reads = 0;
        loop {
            if reads == READS_PER_PASS {
                self.read_cut_short(i);
                break;
            }
            reads += 1;
            let c = &mut self.conns[i];
            if !matches!(c.state, ConnState::Greeting | ConnState::Open) {
                // Closed (and perhaps connecting again) while what it read was handled.
                return;
            }
            let Some(sock) = c.sock.as_mut() else {
                return;
            };
            let len = c.buf_len;
            match sock.read(&mut c.buf[len..]) {
                Ok(0) => return self.end_of_stream(i, now_ns()),
                Ok(n) => {
                    let now = now_ns();
                    let drained =
                        !until_blocked && len + n < c.buf.len() && matches!(sock, Sock::Plain(_));
                    if !self.received(i, n, now) || drained {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let kind = socket_steps::read_failure(&e);
                    return self.io_failed(i, kind, &e, now_ns());
                }
            }
        }
        // What the protocol answered (acks, window updates, requests it could now send): out
        // in one write.
        if self.conns[i].sock.is_some() {
            self.flush(i, now_ns());
        }
    }

    /// The server closed connection `i` (its end of stream was read at `now`): before the
    /// protocol's greeting was answered the connect failed; after, the requests it carried on
    /// the wire are cut off.
    pub(super) fn end_of_stream_framed(&mut self, i: usize, now: u64) {
        if self.conns[i].state == ConnState::Greeting {
            return self.framed_connect_failed(i, FailureClass::Connect, now);
        }
        self.connection_lost(i, FailureClass::Read, now);
    }

    /// `n` more bytes were read into connection `i`'s buffer at `now`: the core counts them and
    /// the protocol handles them. False when the connection closed.
    pub(super) fn received_framed(&mut self, i: usize, n: usize, now: u64) -> bool {
        self.conns[i].buf_len += n;
        self.core.read(i, n);
        let connections = self.conns.len();
        let c = &mut self.conns[i];
        let mut link = Link {
            core: &mut self.core,
            requests: &self.requests,
            out: &mut c.out,
            conn: i,
            now,
            connections,
            pool: &mut self.pool,
            connect_called: c.connect_called,
            opened: false,
        };
        let got = c.protocol.receive(&mut link, &c.buf[..c.buf_len]);
        let opened = link.opened;
        self.settle(i, got, opened, now)
    }

    /// What connection `i`'s protocol made of its input or of its wake-up at `now` (`opened`:
    /// its greeting was answered): consumed input dropped, freed places used, or the
    /// connection given up as `Broken` says. False when the connection closed.
    fn settle(&mut self, i: usize, got: Result<Received, Broken>, opened: bool, now: u64) -> bool {
        let c = &mut self.conns[i];
        if opened {
            c.state = ConnState::Open;
        }
        match got {
            Ok(Received { consumed, freed }) => {
                c.buf.copy_within(consumed..c.buf_len, 0);
                c.buf_len -= consumed;
                if freed {
                    self.after_freed(i, now);
                }
                matches!(self.conns[i].state, ConnState::Greeting | ConnState::Open)
            }
            Err(Broken::Protocol(fault)) => {
                // The server is told why (the protocol's goodbye), as far as the socket takes it
                // now.
                write_last(c);
                // Before the greeting was answered or after, the server broke the protocol: a
                // `parse` failure of what the connection carried, booked with `fault`.
                if c.state == ConnState::Greeting {
                    self.connect_failed_for(i, FailureClass::Parse, fault, now);
                } else {
                    self.connection_lost_for(i, FailureClass::Parse, Some(fault), now);
                }
                false
            }
            Err(Broken::Unmatched(fault)) => {
                write_last(c);
                self.connection_lost_for(i, FailureClass::Protocol, Some(fault), now);
                false
            }
            Err(Broken::Refused(fault, kind)) => {
                self.connect_failed_for(i, kind, fault, now);
                false
            }
            Err(Broken::Closed(fault)) => {
                // What the protocol answered (its close) goes out as far as the socket takes it.
                write_last(c);
                if c.state == ConnState::Greeting {
                    self.connect_failed_for(i, FailureClass::Connect, fault, now);
                } else {
                    self.connection_lost_for(i, FailureClass::Read, Some(fault), now);
                }
                false
            }
        }
    }

    /// The earliest time a connection's protocol asked to be woken ([`Protocol::wake_at`]).
    pub(super) fn protocol_wake(&self) -> u64 {
        self.conns
            .iter()
            .filter(|c| matches!(c.state, ConnState::Greeting | ConnState::Open))
            .map(|c| c.protocol.wake_at())
            .min()
            .unwrap_or(u64::MAX)
    }

    /// Wakes every connection whose protocol's timer is due at `now` ([`Protocol::woken`]),
    /// books what it made of it, and writes what it said.
    pub(super) fn wake_protocols(&mut self, now: u64) {
        for i in 0..self.conns.len() {
            let c = &self.conns[i];
            let live = matches!(c.state, ConnState::Greeting | ConnState::Open);
            if !live || c.sock.is_none() || c.protocol.wake_at() > now {
                continue;
            }
            let (protocol, mut link) = self.link(i, now);
            let got = protocol.woken(&mut link);
            let opened = link.opened;
            if self.settle(i, got, opened, now) {
                self.mark_dirty(i);
            }
        }
        self.flush_dirty(now);
    }

    /// A read or write of connection `i` failed with `e` at `now`: over datagrams, before its
    /// greeting was answered, that is the connect refused (an ICMP refusal comes back this
    /// way); otherwise the connection is lost as `kind`.
    fn io_failed(&mut self, i: usize, kind: FailureClass, e: &io::Error, now: u64) {
        if P::TRANSPORT == Transport::Datagram && self.conns[i].state == ConnState::Greeting {
            let fault = match e.kind() {
                io::ErrorKind::ConnectionRefused => Fault::Refused,
                _ => Fault::Closed,
            };
            return self.connect_failed_for(i, FailureClass::Connect, fault, now);
        }
        self.connection_lost_because(i, kind, socket_steps::read_fault(e), now)
    }

    /// Requests of connection `i` may go now (a place freed, the connection opened): a spent
    /// connection (it takes nothing more and carries nothing) closes, and requests waiting on it
    /// connect again; otherwise the protocol sends what waits.
    fn after_freed(&mut self, i: usize, now: u64) {
        if self.conns[i].protocol.spent() {
            close(&mut self.conns[i], &self.poll);
            self.core.connection_down(i, None, now);
            if self.core.carried_at(i, 0).is_some() && self.core.may_connect(i, now) {
                self.start_connect(i, now);
            }
        } else {
            let (protocol, mut link) = self.link(i, now);
            protocol.send(&mut link);
            self.mark_dirty(i);
        }
    }

    /// A connection failed before it was open: every request waiting on it fails with `kind`.
    pub(super) fn framed_connect_failed(&mut self, i: usize, kind: FailureClass, now: u64) {
        let fault = match (kind, self.conns[i].state) {
            (FailureClass::Timeout, _) => Fault::ConnectTimeout,
            (_, ConnState::Handshaking) => Fault::Tls,
            (_, ConnState::Greeting) => Fault::Closed,
            _ => Fault::Refused,
        };
        self.connect_failed_for(i, kind, fault, now);
    }

    /// [`Driver::framed_connect_failed`] for a known `fault`; the connection's back-off starts.
    fn connect_failed_for(&mut self, i: usize, kind: FailureClass, fault: Fault, now: u64) {
        close(&mut self.conns[i], &self.poll);
        self.core.fail_connection(i, kind, now);
        self.core.connection_down(i, Some(fault), now);
    }

    /// An open connection broke: the requests on the wire fail with `kind`; those still
    /// waiting for a place connect again (they were never sent), after its back-off.
    pub(super) fn connection_lost(&mut self, i: usize, kind: FailureClass, now: u64) {
        self.connection_lost_because(i, kind, None, now)
    }

    /// [`Self::connection_lost`], the fault booked as `cause` when the error named one (a TLS
    /// session's alert, say) rather than as its failure class's.
    pub(super) fn connection_lost_because(
        &mut self,
        i: usize,
        kind: FailureClass,
        cause: Option<Fault>,
        now: u64,
    ) {
        let fault = cause.unwrap_or(match kind {
            FailureClass::Write => Fault::Reset,
            FailureClass::Parse => Fault::Malformed,
            _ => Fault::Closed,
        });
        // With nothing outstanding, a close is no fault (an idle connection closed by the
        // server); bytes that break the protocol always are.
        let outstanding = self.core.carried_at(i, 0).is_some();
        let fault = (outstanding || kind == FailureClass::Parse).then_some(fault);
        self.connection_lost_for(i, kind, fault, now);
    }

    fn connection_lost_for(
        &mut self,
        i: usize,
        kind: FailureClass,
        fault: Option<Fault>,
        now: u64,
    ) {
        // Streamed responses cut off after events had come fail as streams of their own, their
        // events counted (asked before the close forgets them).
        let lanes = self.conns.len();
        let mut k = 0;
        while let Some(slot) = self.core.carried_at(i, k) {
            k += 1;
            let Some(outcome) = self.conns[i].protocol.cut_stream(slot / lanes) else {
                continue;
            };
            self.core.stream_outcome(slot, &outcome);
            if outcome.failure.is_some() && kind == FailureClass::Read {
                self.core.fail(slot, FailureClass::Stream, now);
                k -= 1;
            }
        }
        close(&mut self.conns[i], &self.poll);
        let mut k = 0;
        while let Some(slot) = self.core.carried_at(i, k) {
            if self.core.exchange(slot).sent != 0 {
                self.core.fail(slot, kind, now);
            } else {
                k += 1;
            }
        }
        self.core.connection_down(i, fault, now);
        if k > 0 && !self.core.stopping() && self.core.may_connect(i, now) {
            self.start_connect(i, now);
        }
    }

    /// Slot `slot`'s streamed response waited past `--event-timeout` at `now`: the protocol
    /// fails it and resets its stream; the connection carries on with what waits for it.
    pub(super) fn event_timeout_framed(&mut self, slot: usize, now: u64) {
        let c = self.core.conn_of(slot);
        let (protocol, mut link) = self.link(c, now);
        protocol.stalled(&mut link, slot);
        if self.conns[c].state == ConnState::Open {
            self.mark_dirty(c);
            self.after_freed(c, now);
        }
        self.flush_dirty(now);
    }

    /// The core's per-request timeout scan (it books the failures); the protocol tells the
    /// server of each expired request. Also bounds connects (and greetings) by the same
    /// timeout, which the scan does not.
    pub(super) fn scan_request_timeouts(&mut self, now: u64) {
        let expired = &mut self.expired;
        let conns = &mut self.conns;
        let lanes = conns.len();
        self.core.scan_timeouts(now, |x| {
            expired.push(x.slot);
            conns[x.conn].protocol.timed_out_stream(x.slot / lanes)
        });
        let mut touched = false;
        while let Some(slot) = self.expired.pop() {
            let c = self.core.conn_of(slot);
            let (protocol, mut link) = self.link(c, now);
            protocol.expired(&mut link, slot);
            touched = true;
        }
        if touched {
            for c in 0..self.conns.len() {
                if self.conns[c].state == ConnState::Open {
                    self.mark_dirty(c);
                    self.after_freed(c, now);
                }
            }
            self.flush_dirty(now);
        }
        if now >= self.next_connect_scan {
            self.next_connect_scan = now + CONNECT_SCAN_NS;
            for c in 0..self.conns.len() {
                let conn = &self.conns[c];
                let opening = matches!(
                    conn.state,
                    ConnState::Connecting | ConnState::Handshaking | ConnState::Greeting
                );
                if opening && now.saturating_sub(conn.connect_called) >= self.config.timeout_ns {
                    self.framed_connect_failed(c, FailureClass::Timeout, now);
                }
            }
        }
    }
}

/// Writes what connection `c`'s protocol said last (its goodbye or close) as far as the socket
/// takes it at once: the connection is being given up, so nothing waits for the rest.
fn write_last<P>(c: &mut super::Conn<P>) {
    if let Some(sock) = c.sock.as_mut() {
        sock.write_now(&c.out[c.out_off..]);
    }
}
