//! The driver's steps for protocols that carry requests in order ([`crate::seam::Carriage::InOrder`]:
//! HTTP/1.1, raw TCP): each request's bytes are written as prepared, and what is read is fed to
//! the protocol, whose every response answers the connection's oldest request.

use super::{close, ConnState, Driver, READS_PER_PASS};
use crate::backoff::Fault;
use crate::rxstamp;
use crate::seam::progress::Progress;
use crate::seam::Protocol;
use crate::shared::FailureClass;
use crate::socket_steps;
use crate::transport::Sock;
use candor_core::now_ns;
use std::io;
use std::os::fd::AsRawFd;

impl<P: Protocol> Driver<P> {
    /// Writes every request the core gave connection `i`, as far as the socket takes them.
    pub fn write_requests(&mut self, i: usize, now: u64) {
        loop {
            let c = &mut self.conns[i];
            let Some(slot) = self.core.carried_at(i, c.written) else {
                break;
            };
            let Some(sock) = c.sock.as_mut() else {
                return;
            };
            let exchange = *self.core.exchange(slot);
            if c.write_off == 0 && exchange.sent == 0 {
                self.core.sent(slot, now);
                // From here on the server may answer; what it sends is no longer stray.
                c.answered = None;
            }
            let bytes: &[u8] = match self.core.slot_request(slot) {
                Some((filled, _)) => filled,
                None => &self.requests[exchange.request as usize].bytes,
            };
            let len = bytes.len();
            match sock.write(&bytes[c.write_off..]) {
                Ok(0) => return self.fail_connection(i, FailureClass::Write, now),
                Ok(n) => {
                    c.write_off += n;
                    // Counted as it goes out: a large body the server answers (or drops) part
                    // way through was still written that far.
                    self.core.written(slot, n);
                    let c = &mut self.conns[i];
                    if c.write_off == len {
                        c.written += 1;
                        c.write_off = 0;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.socket_owed = true;
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return self.fail_connection(i, FailureClass::Write, now),
            }
        }
        if let Some(sock) = self.conns[i].sock.as_mut() {
            match sock.flush() {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(_) => self.fail_connection(i, FailureClass::Write, now),
            }
        }
    }

    /// Reads and parses what connection `i` has received. A plain socket that returned less than
    /// asked for is drained as of that read, and whatever arrives later is a new edge-triggered
    /// event, so the read that would only say `WouldBlock` is skipped (one system call per
    /// response instead of two) unless the peer closed (`until_blocked`): its end of stream
    /// must be read now. At most [`READS_PER_PASS`] reads: the rest waits for the next pass.
    pub fn read_responses(&mut self, i: usize, until_blocked: bool) {
        let mut reads = 0;
        loop {
            if reads == READS_PER_PASS {
                self.read_cut_short(i);
                break;
            }
            reads += 1;
            let c = &mut self.conns[i];
            let Some(sock) = c.sock.as_mut() else {
                return;
            };
            let len = c.buf_len;
            let stamped = self.stamp_reads && matches!(sock, Sock::Plain(_));
            let got = if stamped {
                rxstamp::recv(sock.as_raw_fd(), &mut c.buf[len..])
            } else {
                sock.read(&mut c.buf[len..]).map(|n| (n, None))
            };
            match got {
                Ok((0, _)) => return self.end_of_stream(i, now_ns()),
                Ok((n, stamp)) => {
                    let now = self.arrival(i, stamped, stamp, now_ns());
                    let c = &mut self.conns[i];
                    let Some(sock) = c.sock.as_ref() else {
                        return;
                    };
                    let drained =
                        !until_blocked && len + n < c.buf.len() && matches!(sock, Sock::Plain(_));
                    if !self.received(i, n, now) || drained {
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let (kind, fault) =
                        (socket_steps::read_failure(&e), socket_steps::read_fault(&e));
                    return self.fail_connection_because(i, kind, fault, now_ns());
                }
            }
        }
        // TLS may owe the server bytes after reading (key updates, alerts).
        if let Some(sock) = self.conns[i].sock.as_mut() {
            let _ = sock.flush();
        }
    }

    /// The server closed connection `i` (its end of stream was read at `now`).
    pub(super) fn end_of_stream_in_order(&mut self, i: usize, now: u64) {
        let c = &mut self.conns[i];
        // A request still being written may be answered by a response the close ends.
        if c.written > 0 || c.write_off > 0 {
            if let Some(status) = c.protocol.finish_at_eof() {
                // A response that the server's close completes: the close has no receive
                // stamp, so it is timed when read. Responses stop waiting for the next send's
                // wake-up in this thread from here on, so that the reads of the next ones (and
                // so their times) are prompt.
                self.stamped = false;
                self.complete_oldest(i, status, now);
            }
        }
        // Whatever else was outstanding was cut off by the close.
        self.fail_connection(i, FailureClass::Read, now);
    }

    /// `n` more bytes were read into connection `i`'s buffer, arrived at `now`: the core counts
    /// them and the protocol parses them. False when the connection was closed.
    pub(super) fn received_in_order(&mut self, i: usize, n: usize, now: u64) -> bool {
        self.conns[i].buf_len += n;
        self.core.read(i, n);
        self.process_buffer(i, now)
    }

    /// The instant what a read returned at `now` on connection `i` arrived: the kernel's
    /// `stamp` when reads are stamped (mapped to this clock, and kept between the send of the
    /// request it answers and `now`, so that a step of the wall clock can never place it outside
    /// them), else `now`. Reads before the kernel's first stamp were not left waiting, so `now`
    /// is their arrival; a read without a stamp after it ends the waiting for this thread (it is
    /// timed by when it was read, and no later response waits for a wake-up), while the reads
    /// that do carry a stamp, such as those of responses that already waited, keep it.
    fn arrival(&mut self, i: usize, stamped: bool, stamp: Option<u64>, now: u64) -> u64 {
        if !stamped {
            return now;
        }
        let Some(real) = stamp else {
            if self.stamps_seen {
                self.stamped = false;
            }
            return now;
        };
        self.stamps_seen = true;
        let sent = self
            .core
            .oldest(i)
            .map_or(0, |s| self.core.exchange(s).sent);
        self.clock_offset.arrival(real, sent, now)
    }

    /// Parses what is buffered into as many responses as it holds. Returns false when the
    /// connection was closed.
    fn process_buffer(&mut self, i: usize, now: u64) -> bool {
        loop {
            let c = &mut self.conns[i];
            // A request still being written (its head or part of its body) may be answered
            // before it is all out: a server may refuse a body it has not read, say with 413
            // (RFC 9112 section 9.5, RFC 9110 section 15.5.14). Its response is the one the
            // oldest request awaits, so it is parsed as such.
            if c.written == 0 && c.write_off == 0 {
                // Bytes nobody asked for (HTTP/1.1 and the raw TCP framings answer each request
                // with one response, in order): the connection is out of step. A second
                // response to one request (or a second raw TCP frame) makes that exchange a
                // protocol error; bytes before any request was written are charged to the
                // requests given to this connection, or to the next one.
                match c.answered.take() {
                    Some(b) => self.core.ledger_mut().rebook_as_parse(b),
                    None if self.core.oldest(i).is_none() => c.stray = true,
                    None => {}
                }
                self.fail_connection(i, FailureClass::Parse, now);
                return false;
            }
            let Some(front) = self.core.oldest(i) else {
                return true;
            };
            // Buffered bytes are the front response's: its first byte came with this read at
            // the latest (the read's instant, no clock read of its own).
            self.core.first_byte(front, now);
            let request = self.core.exchange(front).request as usize;
            let prepared = match self.core.slot_request(front) {
                Some((_, head)) => &self.filled[usize::from(head)],
                None => &self.requests[request],
            };
            c.protocol.start(prepared, request);
            let full = c.buf_len == c.buf.len();
            if let Some(o) = c.protocol.observer() {
                o.at(now);
            }
            let progress = c.protocol.feed(&c.buf[..c.buf_len], full);
            // Gaps between the events this read completed belong to the front response.
            if let Some(tap) = c.protocol.observer().and_then(|o| o.tap()) {
                tap.drain_gaps(|g| self.core.stream_gap(front, g));
                if let Some(at) = tap.latest_event() {
                    self.core.stream_event(front, at);
                }
            }
            match progress {
                Ok(Progress::NeedMore { consumed }) => {
                    c.buf.copy_within(consumed..c.buf_len, 0);
                    c.buf_len -= consumed;
                    return true;
                }
                Ok(Progress::Done {
                    consumed,
                    status,
                    close,
                }) => {
                    c.buf.copy_within(consumed..c.buf_len, 0);
                    c.buf_len -= consumed;
                    let early = c.written == 0;
                    self.complete_oldest(i, status, now);
                    if close {
                        // Anything pipelined behind a closing response is cut off, by a close
                        // the server announced: named as such, with examples.
                        if self.core.oldest(i).is_some() {
                            super::close(&mut self.conns[i], &self.poll);
                            self.core.fail_behind_close(i, status, now);
                            self.core
                                .connection_down(i, Some(Fault::PipelinedClose), now);
                        } else {
                            self.fail_connection(i, FailureClass::Read, now);
                        }
                        return false;
                    }
                    if early {
                        // The request answered early is not all out, and the rest of its body
                        // cannot be skipped on this connection (the server would read it as
                        // the next request): candor stops sending and closes it. Requests
                        // given to it behind that one can no longer be written: they fail
                        // with it, as a write the connection could not take.
                        self.fail_connection(i, FailureClass::Write, now);
                        return false;
                    }
                    if self.conns[i].buf_len == 0 {
                        return true;
                    }
                }
                Err(_) => {
                    self.fail_connection(i, FailureClass::Parse, now);
                    return false;
                }
            }
        }
    }

    /// The response the protocol just completed answers connection `i`'s oldest request.
    fn complete_oldest(&mut self, i: usize, status: u16, now: u64) {
        let Some(slot) = self.core.oldest(i) else {
            return;
        };
        let c = &mut self.conns[i];
        if c.written > 0 {
            c.written -= 1;
        } else {
            // Answered before it was all written (see `process_buffer`): nothing more of it
            // goes out.
            c.write_off = 0;
        }
        let nothing_else_written = c.written == 0;
        if let Some(outcome) = c
            .protocol
            .observer()
            .and_then(|o| o.tap())
            .and_then(|t| t.take_outcome())
        {
            self.core.stream_outcome(slot, &outcome);
        }
        let (failed, body) = match c.protocol.observer() {
            Some(o) => (o.failed_check(), o.excerpt()),
            None => (None, None),
        };
        let booked = self.core.complete_response(slot, status, failed, body, now);
        self.conns[i].answered = nothing_else_written.then_some(booked);
    }

    /// Slot `slot`'s streamed response waited past `--event-timeout` for its next event at
    /// `now`: it fails in class `stream` with the events it had delivered counted, and its
    /// connection is closed as for any timeout (what was pipelined behind it times out with
    /// it); the connection is opened again for the next request given to it.
    pub(super) fn event_timeout_in_order(&mut self, slot: usize, now: u64) {
        let i = self.core.conn_of(slot);
        // Only the front response is read; a request behind it has had no event.
        if self.core.oldest(i) != Some(slot) {
            return;
        }
        if let Some(outcome) = self.conns[i].protocol.observer().and_then(|o| o.stalled()) {
            self.core.stream_outcome(slot, &outcome);
        }
        self.core.fail(slot, FailureClass::Stream, now);
        self.core.fail_connection(i, FailureClass::Timeout, now);
        close(&mut self.conns[i], &self.poll);
    }

    /// Closes connection `i`; the core fails every request it carried, books the fault and
    /// starts its back-off, unless the server only closed it (or it broke) with nothing
    /// outstanding: an idle keep-alive close is no fault.
    pub fn fail_connection(&mut self, i: usize, kind: FailureClass, now: u64) {
        self.fail_connection_because(i, kind, None, now)
    }

    /// [`Self::fail_connection`], the fault booked as `cause` when the error named one (a TLS
    /// session's alert, say) rather than as its failure class's.
    pub(super) fn fail_connection_because(
        &mut self,
        i: usize,
        kind: FailureClass,
        cause: Option<Fault>,
        now: u64,
    ) {
        let outstanding = self.core.carried_at(i, 0).is_some();
        let always = matches!(kind, FailureClass::Connect | FailureClass::Parse);
        let fault = (outstanding || always)
            .then(|| {
                cause.or(match kind {
                    FailureClass::Connect if self.conns[i].state == ConnState::Handshaking => {
                        Some(Fault::Tls)
                    }
                    FailureClass::Connect => Some(Fault::Refused),
                    FailureClass::Timeout => Some(Fault::ConnectTimeout),
                    FailureClass::Read | FailureClass::Stream => Some(Fault::Closed),
                    FailureClass::Write => Some(Fault::Reset),
                    FailureClass::Parse | FailureClass::Protocol => Some(Fault::Malformed),
                    // An answered request's classes: no connection fails for them.
                    FailureClass::Status | FailureClass::Check | FailureClass::Grpc => None,
                    // A request whose template could not be filled failed before any byte was
                    // written: the connection did nothing wrong.
                    FailureClass::Template => None,
                })
            })
            .flatten();
        // A streamed response cut off after events had come fails as a stream of its own.
        if let (Some(front), Some(outcome)) = (
            self.core.oldest(i),
            self.conns[i].protocol.observer().and_then(|o| o.cut()),
        ) {
            self.core.stream_outcome(front, &outcome);
            if outcome.failure.is_some() && kind == FailureClass::Read {
                self.core.fail(front, FailureClass::Stream, now);
            }
        }
        close(&mut self.conns[i], &self.poll);
        self.core.fail_connection(i, kind, now);
        self.core.connection_down(i, fault, now);
    }
}
