//! How each request a slot carries ends in the core's books: sent, its first byte, its stream's
//! events, completed or failed (alone, behind a close, with its connection), or timed out.

use super::{Core, Expiry, TimeoutScope, TIMEOUT_SCAN_NS};
use crate::ledger::{Booked, Exchange};
use crate::shared::FailureClass;

impl Core {
    /// The first byte of slot `slot`'s request was handed to the connection at `now`.
    #[inline]
    pub fn sent(&mut self, slot: usize, now: u64) {
        let e = &mut self.slots[slot].exchange;
        if e.sent == 0 {
            e.sent = now;
        }
    }

    /// The first byte of slot `slot`'s response arrived at `now` (the instant of the read that
    /// brought it; later calls for the same response keep the first).
    #[inline]
    pub fn first_byte(&mut self, slot: usize, now: u64) {
        let e = &mut self.slots[slot].exchange;
        if e.first_byte == 0 {
            e.first_byte = now;
        }
    }

    /// A gap between two events of slot `slot`'s streamed response.
    #[inline]
    pub fn stream_gap(&mut self, slot: usize, gap: candor_stream::tap::Gap) {
        let e = &self.slots[slot].exchange;
        self.ledger.stream_gap(e.seq, e.intended, gap);
    }

    /// An event of slot `slot`'s streamed response arrived at `at`: the wait for the next one
    /// (bounded by `--event-timeout`) runs from here.
    #[inline]
    pub fn stream_event(&mut self, slot: usize, at: u64) {
        let s = &mut self.slots[slot];
        if s.busy {
            s.last_event = s.last_event.max(at);
        }
    }

    /// A slot whose streamed response waited longer than `--event-timeout` for its next event,
    /// found by [`Core::scan_timeouts`]: the driver ends its stream (class `stream`, named
    /// `event_timeout`, its events counted) and closes or resets what carried it.
    pub fn take_stalled(&mut self) -> Option<usize> {
        // A slot released since it was found (its response came meanwhile) is no longer stalled.
        while let Some(k) = self.stalled.pop() {
            if self.slots[k].stalled {
                return Some(k);
            }
        }
        None
    }

    /// What slot `slot`'s streamed response came to (before it is completed or failed).
    pub fn stream_outcome(&mut self, slot: usize, o: &candor_stream::tap::StreamOutcome) {
        let e = self.slots[slot].exchange;
        self.ledger.stream_outcome(&e, o);
    }

    /// `bytes` more of slot `slot`'s request went out (counted per write, so a request cut off
    /// part way is counted as far as it went).
    #[inline]
    pub fn written(&mut self, slot: usize, bytes: usize) {
        let phase = self.ledger.phase_of(self.slots[slot].exchange.intended);
        self.ledger.phases[phase].counts.bytes_written += bytes as u64;
    }

    /// `bytes` arrived on connection `conn` (booked to the phase of its oldest request).
    #[inline]
    pub fn read(&mut self, conn: usize, bytes: usize) {
        let phase = self.conns[conn].carried.front().map_or(1, |&s| {
            self.ledger.phase_of(self.slots[s].exchange.intended)
        });
        self.ledger.phases[phase].counts.bytes_read += bytes as u64;
    }

    /// A TLS handshake that took `ns` ended at `now`.
    /// Slot `slot`'s response (a gRPC stream) completed its first message at `now`.
    #[inline]
    pub fn first_message(&mut self, slot: usize, now: u64) {
        if self.slots[slot].busy {
            let intended = self.exchange(slot).intended;
            self.ledger.first_message(intended, now);
        }
    }

    pub(super) fn release(&mut self, slot: usize, now: u64) -> Exchange {
        self.close_stream(slot);
        // Closed loop: the source may hold the slot (a script's delay()) before its next send.
        let hold = if self.schedule.is_none() {
            self.source.hold_ns()
        } else {
            0
        };
        let s = &mut self.slots[slot];
        s.hold_until = now.saturating_add(hold);
        debug_assert!(s.busy, "slot {slot} is not busy");
        s.busy = false;
        s.free_since = now;
        s.last_event = 0;
        s.stalled = false;
        let conn = s.conn;
        let exchange = s.exchange;
        self.busy -= 1;
        let carried = &mut self.conns[conn].carried;
        if carried.front() == Some(&slot) {
            carried.pop_front();
        } else if let Some(i) = carried.iter().position(|&k| k == slot) {
            // HTTP/2 streams finish in any order; a connection carries a handful.
            carried.remove(i);
        }
        if self.schedule.is_some() {
            self.free.push_back(slot);
        } else {
            // Closed loop: think time (a script's delay()) is each connection's own, as in
            // wrk: the free slots wait in the order they may send again, so a long hold keeps
            // back only its own slot, never one freed after it with a shorter one (or none).
            // Without holds that order is the order they came free: the slot goes last.
            let until = self.slots[slot].hold_until;
            let slots = &self.slots;
            let at = self
                .free
                .iter()
                .rposition(|&k| slots[k].hold_until <= until)
                .map_or(0, |i| i + 1);
            self.free.insert(at, slot);
        }
        exchange
    }

    /// Slot `slot`'s response completed at `now` with `status` (0: the protocol has none).
    #[inline]
    pub fn complete(&mut self, slot: usize, status: u16, now: u64) -> Booked {
        self.complete_response(slot, status, None, None, now)
    }

    /// [`Core::complete`] with what the protocol saw of the response: the check it failed
    /// besides its status and its body's first bytes (see [`crate::ledger::Ledger::complete_response`]).
    #[inline]
    pub fn complete_response(
        &mut self,
        slot: usize,
        status: u16,
        failed_check: Option<crate::examples::ContentCheck>,
        body: Option<&[u8]>,
        now: u64,
    ) -> Booked {
        let e = self.answered(slot, now);
        let b = self
            .ledger
            .complete_response(&e, now, status, failed_check, body);
        self.turn_answered(&e, b.ok, now);
        b
    }

    /// Slot `slot`'s request was answered at `now`: its exchange, released for booking.
    #[inline]
    fn answered(&mut self, slot: usize, now: u64) -> Exchange {
        let conn = self.slots[slot].conn;
        // A response came: the connection works, whatever the status or the checks say.
        self.conns[conn].backoff.answered();
        self.release(slot, now)
    }

    /// [`Core::complete_response`] of a reply that carries a code of its protocol's (see
    /// [`crate::ledger::Ledger::complete_coded`]).
    #[inline]
    pub fn complete_coded(
        &mut self,
        slot: usize,
        status: u16,
        end: crate::ledger::CodedEnd<'_>,
        failed_check: Option<crate::examples::ContentCheck>,
        body: Option<&[u8]>,
        now: u64,
    ) -> Booked {
        let e = self.answered(slot, now);
        let b = self
            .ledger
            .complete_coded(&e, now, status, end, failed_check, body);
        self.turn_answered(&e, b.ok, now);
        b
    }

    /// Slot `slot`'s request failed at `now`.
    pub fn fail(&mut self, slot: usize, kind: FailureClass, now: u64) {
        if !self.slots[slot].busy {
            return;
        }
        let e = self.release(slot, now);
        self.ledger.fail(kind, &e, now);
        self.turn_cut(&e);
    }

    /// Connection `conn`'s last response (`status`) said `Connection: close` with requests
    /// pipelined behind it: each fails with `read`, kept as an example naming the cause.
    pub fn fail_behind_close(&mut self, conn: usize, status: u16, now: u64) {
        // Carried slots are busy: releasing each takes it off the connection.
        while let Some(&slot) = self.conns[conn].carried.front() {
            let e = self.release(slot, now);
            self.ledger.fail(FailureClass::Read, &e, now);
            self.turn_cut(&e);
            self.ledger.keep_example(
                &e,
                status,
                candor_core::workload_results::FailedCheck::PipelinedClose,
            );
        }
    }

    /// Connection `conn` is gone at `now`: every request it carried fails with `kind`.
    pub fn fail_connection(&mut self, conn: usize, kind: FailureClass, now: u64) {
        while let Some(&slot) = self.conns[conn].carried.front() {
            self.fail(slot, kind, now);
        }
    }

    /// Every [`TIMEOUT_SCAN_NS`]: fails what waited longer than the timeout and tells the
    /// driver what to close or reset ([`Expiry`]). `expired` is called before the request is
    /// failed and returns what its streamed response came to, if it was read as one: a stream
    /// the timeout ends keeps its first token, first event and events, as one cut off does.
    /// A request is timed
    /// from its first byte out, or while it waits for its connection from the later of the
    /// connect start and its intended time; a request waiting behind others is not (it has not
    /// been asked yet).
    pub fn scan_timeouts(
        &mut self,
        now: u64,
        mut expired: impl FnMut(Expiry) -> Option<candor_stream::tap::StreamOutcome>,
    ) {
        if now < self.next_timeout_scan {
            return;
        }
        self.next_timeout_scan = now + TIMEOUT_SCAN_NS;
        match self.cfg.timeout_scope {
            TimeoutScope::Connection => {
                for conn in 0..self.conns.len() {
                    let Some(&front) = self.conns[conn].carried.front() else {
                        continue;
                    };
                    let s = &self.slots[front];
                    let e = &s.exchange;
                    let since = if e.sent != 0 {
                        e.sent
                    } else {
                        self.conns[conn].connect_started.max(e.intended)
                    };
                    if now.saturating_sub(since) >= self.cfg.bound_for(s.last_event) {
                        if let Some(o) = expired(Expiry { conn, slot: front }) {
                            self.stream_outcome(front, &o);
                        }
                        self.fail_connection(conn, FailureClass::Timeout, now);
                    }
                }
            }
            TimeoutScope::Stream => {
                for slot in 0..self.slots.len() {
                    let s = &self.slots[slot];
                    // Only requests on the wire: one waiting for its connection fails with
                    // the connect attempt, which the transport bounds by the same timeout.
                    if s.busy
                        && s.exchange.sent != 0
                        && now.saturating_sub(s.exchange.sent) >= self.cfg.bound_for(s.last_event)
                    {
                        let conn = self.conn_of(slot);
                        if let Some(o) = expired(Expiry { conn, slot }) {
                            self.stream_outcome(slot, &o);
                        }
                        self.fail(slot, FailureClass::Timeout, now);
                    }
                }
            }
        }
        self.scan_event_timeouts(now);
    }

    /// `--event-timeout`: a streamed response whose latest event is that long ago is stalled
    /// (before its first event only `--timeout` bounds the wait: a long prefill is no stall).
    fn scan_event_timeouts(&mut self, now: u64) {
        let limit = self.cfg.event_timeout_ns;
        if limit == 0 {
            return;
        }
        for (k, s) in self.slots.iter_mut().enumerate() {
            if s.busy
                && !s.stalled
                && s.last_event != 0
                && now.saturating_sub(s.last_event) >= limit
            {
                s.stalled = true;
                self.stalled.push(k);
            }
        }
    }
}
