//! A load thread's books: what every exchange came to, by phase and by interval, and the
//! hand-off of finished intervals to the collector. The core (`engine::core`) books through it,
//! so the accounting rules (phase by intended time, timeouts record their age, the never-sent
//! backlog counted entry by entry) are written once for every protocol.

use crate::books::{book_intended, book_response, book_unfinished, StreamAcc, WorkloadBooks};
use crate::examples::{ContentCheck, FailureSamples};
use crate::records::{Outcome, Record};
use crate::schedule::Schedule;
use crate::shared::{FailureClass, IntervalData, IntervalMsg, PhaseAcc, WorkerSetup};
use candor_core::hist::record_clamped;
use candor_core::results::RequestCounts;
use candor_core::workload_results::FailedCheck;
use crossbeam_channel::{Receiver, Sender};

/// One request as the books see it: which entry of the schedule it is, what it sent, and when.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Exchange {
    /// The entry's index in the whole schedule, across threads and shards.
    pub seq: u64,
    /// The index of the prepared request it sent.
    pub request: u32,
    pub intended: u64,
    /// When its first byte was handed to the connection (0 until then).
    pub sent: u64,
    /// When the first byte of its response arrived (0 until then): the instant of the read
    /// that brought it, so that timing it costs no clock read of its own.
    pub first_byte: u64,
}

/// The outcome of one exchange as booked, so that it can be re-booked as a protocol error if
/// bytes nobody asked for follow it on its connection.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Booked {
    pub intended: u64,
    /// Completed (true) or failed for its status, its checks or its gRPC status (false).
    pub ok: bool,
    /// Failed its response checks (its status was accepted).
    pub check_failed: bool,
    /// The class it failed in, if it failed.
    failed: Option<FailureClass>,
    /// The prepared request it sent (for the per-name books).
    request: u32,
    seq: u64,
    interval: u64,
    /// `--goodput`: it met every per-request objective (from the intended send, from the
    /// actual send).
    good: (bool, bool),
}

/// A load thread's books: the two phases' recorders and counts, the current interval, and the
/// hand-off of finished intervals to the collector. Every engine records through it, so the
/// accounting rules (phase by intended time, timeouts record their age, the never-sent backlog
/// counted entry by entry) are written once.
pub struct Ledger {
    pub phases: [PhaseAcc; 2],
    interval: Box<IntervalData>,
    interval_index: u64,
    /// The next interval boundary (absolute ns); engines wake for it.
    pub next_boundary_ns: u64,
    interval_ns: u64,
    pub warmup_end_ns: u64,
    has_warmup: bool,
    to_collector: Sender<IntervalMsg>,
    pool: Receiver<Box<IntervalData>>,
    accept_status: candor_wire::status::StatusSet,
    /// Per request, when request lines carry their own `"check_status"`.
    accept_by_request: Option<std::sync::Arc<[candor_wire::status::StatusSet]>>,
    /// The phase counts as of the previous flush (the base of the next interval's growth).
    flushed_counts: [RequestCounts; 2],
    /// Per-stage and per-name books, when the run has a load profile or a named request set.
    books: Option<Box<WorkloadBooks>>,
    /// The earliest failed responses of the measured phase (fixed storage, no allocation).
    examples: FailureSamples,
    /// `--goodput`'s per-request objectives, and what the stream of the response being booked
    /// came to (its TTFT from the intended and from the actual send, its TPOT), handed over by
    /// [`Ledger::stream_outcome`] just before the response itself.
    goodput: Option<candor_stream::goodput::GoodputSlo>,
    pending: Option<PendingStream>,
    /// `--records`: the queue to the writer, the run's start its times count from, this
    /// thread's lane, and the stream outcome of the response being booked.
    records: Option<crate::records::RecordSink>,
    run_start_ns: u64,
    lane: u32,
    stream_seen: Option<(u64, candor_stream::tap::StreamOutcome)>,
    /// `--records`: gaps between events not yet sent to the writer (sent when full, and
    /// before each record, so that a request's gaps reach the writer before its record).
    gaps: crate::records::GapChunk,
}

/// A streamed response's values that `--goodput` judges, between its stream's outcome and its
/// completion.
#[derive(Clone, Copy)]
struct PendingStream {
    seq: u64,
    ttft: Option<u64>,
    ttft_service: Option<u64>,
    tpot: Option<u64>,
}

/// `now - before`, field by field: what a worker's counts grew by between two flushes.
pub fn counts_growth(now: &RequestCounts, before: &RequestCounts) -> RequestCounts {
    let d = |a: u64, b: u64| a.saturating_sub(b);
    let (e, f) = (&now.errors, &before.errors);
    let (s, t) = (&now.status, &before.status);
    RequestCounts {
        intended: d(now.intended, before.intended),
        completed: d(now.completed, before.completed),
        failed: d(now.failed, before.failed),
        in_flight_at_end: d(now.in_flight_at_end, before.in_flight_at_end),
        sent_unanswered: d(now.sent_unanswered, before.sent_unanswered),
        queued_unsent: d(now.queued_unsent, before.queued_unsent),
        errors: candor_core::results::ErrorCounts {
            connect: d(e.connect, f.connect),
            read: d(e.read, f.read),
            write: d(e.write, f.write),
            timeout: d(e.timeout, f.timeout),
            parse: d(e.parse, f.parse),
            status: d(e.status, f.status),
            check: d(e.check, f.check),
            template: d(e.template, f.template),
            stream: d(e.stream, f.stream),
            grpc: d(e.grpc, f.grpc),
            protocol: d(e.protocol, f.protocol),
        },
        status: candor_core::results::StatusCounts {
            s1xx: d(s.s1xx, t.s1xx),
            s2xx: d(s.s2xx, t.s2xx),
            s3xx: d(s.s3xx, t.s3xx),
            s4xx: d(s.s4xx, t.s4xx),
            s5xx: d(s.s5xx, t.s5xx),
        },
        bytes_written: d(now.bytes_written, before.bytes_written),
        bytes_read: d(now.bytes_read, before.bytes_read),
        clamped_values: d(now.clamped_values, before.clamped_values),
        generator_late: d(now.generator_late, before.generator_late),
        connections_opened: d(now.connections_opened, before.connections_opened),
    }
}

/// A send this much after its intended time, on a slot that had been free since before that
/// time, is the generator's own lateness (a spin-paced loop is normally within microseconds).
pub const GENERATOR_LATE_NS: u64 = 1_000_000;

/// After a stop request, the never-sent backlog is counted for at most this long (see
/// [`Ledger::finish`]): a person pressing Ctrl-C expects the run to end within a second or so.
pub const STOP_COUNT_BUDGET_NS: u64 = 1_000_000_000;

/// The per-stage and per-name books of a run, allocated before it: stages for a load profile
/// (the measured stages; the warm-up is its own phase), names for a request set.
fn workload_books(setup: &WorkerSetup) -> Option<Box<WorkloadBooks>> {
    let cfg = &setup.config;
    let stage_ns: Vec<u64> = cfg
        .shape
        .profile()
        .map(|p| p.stages.iter().map(|s| s.duration_ns).collect())
        .unwrap_or_default();
    let (name_of, names) = if let Some(script) = &cfg.workload.script {
        // A script's names are known only as it gives them: rows are kept for the most it may.
        let n = script.name_rows();
        ((0..n).collect(), n)
    } else if cfg.requests.is_empty() {
        (Vec::new(), 0)
    } else {
        match &setup.compiled {
            Some(c) => (c.name_of.clone(), c.names.len()),
            None => (Vec::new(), 0),
        }
    };
    if stage_ns.is_empty() && names == 0 {
        return None;
    }
    Some(Box::new(WorkloadBooks::new(
        setup.start_ns + cfg.warmup_ns,
        &stage_ns,
        &name_of,
        names,
    )))
}

/// How a reply that carries a code beside its status ended (gRPC's `grpc-status`), as its
/// protocol judged it: the code, whether the run accepts it (`--check-status`), and what its
/// failure example says when more than the code's name (gRPC's `grpc-message`).
#[derive(Clone, Copy, Debug)]
pub struct CodedEnd<'a> {
    pub code: candor_core::reply_codes::ReplyCode,
    pub accepted: bool,
    pub said: Option<&'a [u8]>,
}

impl Ledger {
    pub fn new(setup: &WorkerSetup) -> Ledger {
        let cfg = &setup.config;
        Ledger {
            phases: [PhaseAcc::new(), PhaseAcc::new()],
            interval: setup
                .pool
                .try_recv()
                .unwrap_or_else(|_| Box::new(IntervalData::new())),
            interval_index: 0,
            next_boundary_ns: setup.start_ns + cfg.interval_ns,
            interval_ns: cfg.interval_ns,
            warmup_end_ns: setup.start_ns + cfg.warmup_ns,
            has_warmup: cfg.warmup_ns > 0,
            to_collector: setup.to_collector.clone(),
            pool: setup.pool.clone(),
            accept_status: cfg.accept_status,
            accept_by_request: crate::request_plan::accept_by_request(cfg),
            flushed_counts: [RequestCounts::default(); 2],
            books: workload_books(setup),
            examples: FailureSamples::default(),
            goodput: cfg.goodput,
            pending: None,
            records: cfg.records.clone(),
            run_start_ns: setup.start_ns,
            lane: setup.seq_lane as u32,
            stream_seen: None,
            gaps: Default::default(),
        }
        .with_streams(cfg.stream.kind.is_some() || cfg.stream.llm)
    }

    /// Keeps the books of streamed responses when the run reads responses as streams.
    fn with_streams(mut self, on: bool) -> Ledger {
        if on {
            for p in &mut self.phases {
                p.stream = Some(Box::default());
            }
            // Boxes from the run's pool come with them; one made here must too.
            if self.interval.stream.is_none() {
                self.interval.stream = Some(Box::default());
            }
        }
        self
    }

    /// Sets the first intended send, once the connection pool is open (see [`Core::begin_at`]).
    ///
    /// [`Core::begin_at`]: crate::core::Core::begin_at
    pub fn begin_at(&mut self, start_ns: u64, warmup_ns: u64) {
        self.next_boundary_ns = start_ns + self.interval_ns;
        self.warmup_end_ns = start_ns + warmup_ns;
        self.run_start_ns = start_ns;
        if let Some(b) = &mut self.books {
            b.begin_at(self.warmup_end_ns);
        }
    }

    /// 0 = warm-up, 1 = measured, decided by the request's intended time.
    #[inline]
    pub fn phase_of(&self, intended: u64) -> usize {
        (intended >= self.warmup_end_ns) as usize
    }

    /// A request left the schedule at `now` on a slot free since `free_since`.
    #[inline]
    pub fn intend(&mut self, intended: u64, now: u64, free_since: u64) {
        let phase = self.phase_of(intended);
        let late = now > intended + GENERATOR_LATE_NS && free_since <= intended;
        book_intended(&mut self.phases[phase].counts, late);
        if let Some(b) = &mut self.books {
            if let Some(stage) = b.stage_of(intended) {
                book_intended(&mut b.stages[stage].counts, late);
            }
        }
    }

    /// The request left the schedule as request `request` (after [`Ledger::intend`]): its
    /// name's books count it.
    #[inline]
    pub fn intend_named(&mut self, intended: u64, request: u32) {
        let measured = self.phase_of(intended) == 1;
        if let Some(b) = &mut self.books {
            // The stage was counted by `intend`; only the name is left.
            if measured {
                b.each_name(request, |acc| book_intended(&mut acc.counts, false));
            }
        }
    }

    /// A full response arrived at `now`; `status` 0 means the protocol has none (raw TCP).
    /// A status outside the accepted set makes the request fail (class `status`); its latency
    /// is recorded all the same, since the server did answer.
    #[inline]
    pub fn complete(&mut self, e: &Exchange, now: u64, status: u16) -> Booked {
        self.complete_response(e, now, status, None, None)
    }

    /// The one booking of a full response, for every protocol: exchange `e` (its request index
    /// `e.request` decides the accepted statuses and the name) was answered at `now` with
    /// `status` (0: the protocol has none), `failed_check` the first response check it failed
    /// besides its status (`None`: it passed them, or none apply), and `body` the first bytes of
    /// its body as far as the protocol kept them ([`EXCERPT_KEPT`] suffice, more is ignored;
    /// `None`: not captured). A status outside the accepted set fails in class `status`, an
    /// accepted one with a failed check in class `check`; either way the latency is recorded,
    /// and a failure of the measured phase is offered to the thread's earliest
    /// [`FAILURE_EXAMPLES`] failed responses (fixed storage: nothing is allocated). A protocol
    /// that can tell which check failed and keep the body's first bytes (an [`ExcerptBuf`] per
    /// connection or stream, filled only while the response is failing or a check applies)
    /// calls this, through [`Core::complete_response`]; one that cannot calls
    /// [`Ledger::complete`].
    ///
    /// [`EXCERPT_KEPT`]: crate::examples::EXCERPT_KEPT
    /// [`FAILURE_EXAMPLES`]: candor_core::workload_results::FAILURE_EXAMPLES
    /// [`ExcerptBuf`]: crate::examples::ExcerptBuf
    /// [`Core::complete_response`]: crate::core::Core::complete_response
    #[inline]
    pub fn complete_response(
        &mut self,
        e: &Exchange,
        now: u64,
        status: u16,
        failed_check: Option<ContentCheck>,
        body: Option<&[u8]>,
    ) -> Booked {
        let accept = self.accept_status_of(e.request);
        let verdict = match failed_check {
            _ if !accept.accepts(status) => Some((FailureClass::Status, FailedCheck::Status)),
            Some(ContentCheck::Stream) => Some((FailureClass::Stream, FailedCheck::Stream)),
            Some(c) => Some((FailureClass::Check, c.into())),
            None => None,
        };
        self.book_answer(e, now, status, verdict, body)
    }

    /// A reply answered at `now` with `status` and a code of its protocol's (`end`), its
    /// response checks as for [`Ledger::complete_response`]: a code its protocol did not accept
    /// fails in the class its table names with its latency recorded (the server answered);
    /// every code is counted, by its table.
    #[inline]
    pub fn complete_coded(
        &mut self,
        e: &Exchange,
        now: u64,
        status: u16,
        end: CodedEnd<'_>,
        failed_check: Option<ContentCheck>,
        body: Option<&[u8]>,
    ) -> Booked {
        let CodedEnd {
            code,
            accepted,
            said,
        } = end;
        let phase = self.phase_of(e.intended);
        self.phases[phase].reply_codes.record(code);
        self.interval.reply_codes[phase].record(code);
        if let Some(b) = &mut self.books {
            // Each stage and each request's row counts its calls by status too.
            b.each(e.intended, Some(e.request), phase == 1, |acc| {
                acc.reply_codes.record(code)
            });
        }
        if !accepted {
            let table = code.table;
            let verdict = Some((table.failure, table.check));
            // A failed reply's body is usually empty (gRPC's trailers-only): its example shows
            // the code's name instead, or what the protocol said of it (`said`).
            return match said {
                Some(said) => self.book_answer(e, now, status, verdict, Some(said)),
                None => {
                    let name = table.name(code.code);
                    self.book_answer(e, now, status, verdict, Some(name.as_bytes()))
                }
            };
        }
        self.complete_response(e, now, status, failed_check, body)
    }

    /// Books a full response to `e` at `now` with `status`: completed (`verdict` `None`) or
    /// failed in a class, with the check an example names.
    #[inline]
    fn book_answer(
        &mut self,
        e: &Exchange,
        now: u64,
        status: u16,
        verdict: Option<(FailureClass, FailedCheck)>,
        body: Option<&[u8]>,
    ) -> Booked {
        let (intended, sent) = (e.intended, e.sent);
        let response = now.saturating_sub(intended);
        let service = now.saturating_sub(sent);
        let lag = sent.saturating_sub(intended);
        // A response the protocol completed without marking its first byte (a close that
        // ends it) had its first byte no later than its last.
        let first_byte = if e.first_byte == 0 { now } else { e.first_byte };
        let first_byte = first_byte.saturating_sub(intended);
        let phase = self.phase_of(intended);
        let failed = verdict.map(|v| v.0);
        let ok = failed.is_none();
        let pending = self.pending.take().filter(|s| s.seq == e.seq);
        let good = match (&self.goodput, ok) {
            (Some(slo), true) => {
                let (ttft, ttft_service, tpot) =
                    pending.map_or((None, None, None), |s| (s.ttft, s.ttft_service, s.tpot));
                (
                    slo.meets(ttft, tpot, response),
                    sent != 0 && slo.meets(ttft_service, tpot, service),
                )
            }
            _ => (false, false),
        };
        // In its phase (by its intended send) and in the interval it completed in.
        for s in [&mut self.phases[phase].stream, &mut self.interval.stream]
            .into_iter()
            .flatten()
        {
            s.good += u64::from(good.0);
            s.good_service += u64::from(good.1);
        }
        let p = &mut self.phases[phase];
        p.rec.record(response, service, lag);
        p.rec.record_first_byte(first_byte);
        if status != 0 {
            p.counts.status.count(status);
            p.codes.count(status);
            self.interval.codes[phase].count(status);
        }
        self.interval.rec.record(response, service, lag);
        self.interval.rec.record_first_byte(first_byte);
        match failed {
            None => {
                p.counts.completed += 1;
                self.interval.completed += 1;
            }
            Some(class) => {
                p.counts.failed += 1;
                *p.counts.errors.get_mut(class) += 1;
                self.interval.failed += 1;
            }
        }
        if let (Some((_, check)), 1) = (verdict, phase) {
            self.examples
                .record(e.seq, intended, e.request, status, check, body);
        }
        if let Some(b) = &mut self.books {
            b.each(intended, Some(e.request), phase == 1, |acc| {
                book_response(acc, (response, service, lag), status, failed)
            });
        }
        let outcome = match failed {
            None => Outcome::Completed,
            Some(_) => Outcome::Failed,
        };
        self.offer_record(e, outcome, (failed, true), status, now);
        Booked {
            intended,
            ok,
            check_failed: failed == Some(FailureClass::Check),
            failed,
            request: e.request,
            seq: e.seq,
            interval: self.interval_index,
            good,
        }
    }

    /// `--records`: offers `e`'s record (`u32::MAX` as its request: never taken from the
    /// schedule), with what its stream came to if [`Ledger::stream_outcome`] just booked it.
    #[inline]
    fn offer_record(
        &mut self,
        e: &Exchange,
        outcome: Outcome,
        (class, answered): (Option<FailureClass>, bool),
        status: u16,
        now: u64,
    ) {
        let Some(sink) = &self.records else { return };
        if !self.gaps.is_empty() {
            sink.offer_gaps(&mut self.gaps);
        }
        let stream = self
            .stream_seen
            .take()
            .filter(|s| s.0 == e.seq)
            .map(|s| s.1);
        let start = self.run_start_ns;
        let at = |t: u64| (t != 0).then(|| t.saturating_sub(start));
        let st = |f: fn(&candor_stream::tap::StreamOutcome) -> Option<u64>| {
            stream.as_ref().and_then(f).map(|t| t.saturating_sub(start))
        };
        // A response booked without its first byte marked (a close that ends it) had it no
        // later than its end, as the books count it.
        let first_byte = match e.first_byte {
            0 => answered.then_some(now),
            t => Some(t),
        };
        sink.offer(Record {
            run: 0,
            seq: e.seq,
            request: (e.request != u32::MAX).then_some(e.request),
            lane: self.lane,
            measured: self.phase_of(e.intended) == 1,
            outcome,
            class,
            answered: outcome != Outcome::Unfinished && (class.is_none() || answered),
            status,
            intended: e.intended.saturating_sub(start),
            sent: at(e.sent),
            first_byte: first_byte.map(|t| t.saturating_sub(start)),
            events: stream.map(|o| o.events),
            first_event: st(|o| o.first_event),
            first_token: st(|o| o.first_token),
            last_event: st(|o| o.last_event),
            last_token: st(|o| o.last_token),
            end: now.saturating_sub(start),
            input_tokens: stream.and_then(|o| o.input_tokens),
            output_tokens: stream
                .filter(|o| o.tokens_from.is_some())
                .map(|o| o.output_tokens),
            cached_tokens: stream.and_then(|o| o.cached_tokens),
        });
    }

    /// An exchange booked by [`Ledger::complete`] turned out to be a protocol error: its
    /// connection then carried bytes no request had asked for, so which bytes answered it is
    /// unknown. It becomes a `parse` failure; its latency stays recorded (a response did come).
    pub fn rebook_as_parse(&mut self, b: Booked) {
        let phase = self.phase_of(b.intended);
        if !b.ok {
            self.examples.forget(b.seq);
        }
        if let Some(s) = &mut self.phases[phase].stream {
            s.good -= u64::from(b.good.0);
            s.good_service -= u64::from(b.good.1);
        }
        let c = &mut self.phases[phase].counts;
        if b.ok {
            c.completed -= 1;
            c.failed += 1;
            // An interval already handed to the collector keeps its count; only the current
            // one can still be corrected.
            if b.interval == self.interval_index && self.interval.completed > 0 {
                self.interval.completed -= 1;
                self.interval.failed += 1;
            }
        } else if let Some(class) = b.failed {
            *c.errors.get_mut(class) -= 1;
        }
        c.errors.parse += 1;
        if let Some(books) = &mut self.books {
            books.each(b.intended, Some(b.request), phase == 1, |acc| {
                let c = &mut acc.counts;
                if b.ok {
                    c.completed -= 1;
                    c.failed += 1;
                } else if let Some(class) = b.failed {
                    *c.errors.get_mut(class) -= 1;
                }
                c.errors.parse += 1;
            });
        }
    }

    /// The statuses request `request` accepts.
    fn accept_status_of(&self, request: u32) -> candor_wire::status::StatusSet {
        match &self.accept_by_request {
            Some(table) => table
                .get(request as usize)
                .copied()
                .unwrap_or(self.accept_status),
            None => self.accept_status,
        }
    }

    /// A gap between two events of a streamed response to a request intended at `intended`:
    /// booked in its phase and in the current interval.
    #[inline]
    pub fn stream_gap(&mut self, seq: u64, intended: u64, gap: candor_stream::tap::Gap) {
        if let Some(sink) = &self.records {
            if self.gaps.push(seq, gap.ns, gap.token) {
                sink.offer_gaps(&mut self.gaps);
            }
        }
        let phase = self.phase_of(intended);
        if let Some(s) = &mut self.phases[phase].stream {
            book_stream_gap(s, gap);
        }
        if let Some(s) = &mut self.interval.stream {
            book_stream_gap(s, gap);
        }
    }

    /// What exchange `e`'s streamed response came to (booked before the response itself), in
    /// its phase and in the current interval.
    pub fn stream_outcome(&mut self, e: &Exchange, o: &candor_stream::tap::StreamOutcome) {
        let phase = self.phase_of(e.intended);
        if self.records.is_some() {
            self.stream_seen = Some((e.seq, *o));
        }
        if self.goodput.is_some() {
            self.pending = Some(PendingStream {
                seq: e.seq,
                ttft: o.first_token.map(|at| at.saturating_sub(e.intended)),
                ttft_service: o
                    .first_token
                    .filter(|_| e.sent != 0)
                    .map(|at| at.saturating_sub(e.sent)),
                tpot: o.tpot_ns,
            });
        }
        if let Some(s) = &mut self.phases[phase].stream {
            book_stream_outcome(s, e, o);
        }
        if let Some(s) = &mut self.interval.stream {
            book_stream_outcome(s, e, o);
        }
    }

    /// A connection was established at `now` (initial or reconnect); phases as for
    /// [`Ledger::tls_handshake`].
    pub fn connection_opened(&mut self, now: u64) {
        let phase = usize::from(now >= self.warmup_end_ns || !self.has_warmup);
        self.phases[phase].counts.connections_opened += 1;
    }

    /// A connection failed at `now` for `fault`; phases as for [`Ledger::connection_opened`].
    pub fn connection_fault(&mut self, fault: crate::backoff::Fault, now: u64) {
        let phase = usize::from(now >= self.warmup_end_ns || !self.has_warmup);
        self.phases[phase].faults.count(fault);
    }

    /// `n` more of what a protocol counts of its own transport, `name`, at `now`; phases as
    /// for [`Ledger::connection_opened`].
    pub fn protocol_count(&mut self, name: &'static str, n: u64, now: u64) {
        let phase = usize::from(now >= self.warmup_end_ns || !self.has_warmup);
        *self.phases[phase].protocol_counts.entry(name).or_default() += n;
    }

    /// Keeps `e`'s failure (booked by [`Ledger::fail`]) as an example that came with `status`
    /// and `check`, though it had no response of its own: what the report shows for requests a
    /// server's announced close cut off.
    pub fn keep_example(&mut self, e: &Exchange, status: u16, check: FailedCheck) {
        if self.phase_of(e.intended) == 1 {
            self.examples
                .record(e.seq, e.intended, e.request, status, check, None);
        }
    }

    /// A request failed at `now`. Timeouts also record their latency so far: a request that
    /// never came back is at least that slow, and must not look fast by its absence.
    pub fn fail(&mut self, kind: FailureClass, e: &Exchange, now: u64) {
        let (intended, request, e_first_byte) = (e.intended, e.request, e.first_byte);
        let sent = (e.sent != 0).then_some(e.sent);
        let phase = self.phase_of(intended);
        self.offer_record(e, Outcome::Failed, (Some(kind), false), 0, now);
        let p = &mut self.phases[phase];
        p.counts.failed += 1;
        *p.counts.errors.get_mut(kind) += 1;
        if let Some(b) = &mut self.books {
            b.each(intended, Some(request), phase == 1, |acc| {
                acc.counts.failed += 1;
                *acc.counts.errors.get_mut(kind) += 1;
                if kind == FailureClass::Timeout {
                    record_clamped(&mut acc.rec.response, now.saturating_sub(intended));
                    if let Some(sent) = sent {
                        record_clamped(&mut acc.rec.service, now.saturating_sub(sent));
                    }
                }
            });
        }
        let p = &mut self.phases[phase];
        if e_first_byte != 0 {
            // The response began and then failed (cut off, timed out mid-way): its first byte
            // did arrive.
            let first_byte = e_first_byte.saturating_sub(intended);
            p.rec.record_first_byte(first_byte);
            self.interval.rec.record_first_byte(first_byte);
        }
        if kind == FailureClass::Timeout {
            let response = now.saturating_sub(intended);
            p.counts.clamped_values += record_clamped(&mut p.rec.response, response) as u64;
            record_clamped(&mut self.interval.rec.response, response);
            if let Some(sent) = sent {
                let service = now.saturating_sub(sent);
                p.counts.clamped_values += record_clamped(&mut p.rec.service, service) as u64;
                record_clamped(&mut self.interval.rec.service, service);
            }
        }
        self.interval.failed += 1;
    }

    /// A gRPC stream's first whole message of the call intended at `intended` arrived at `now`:
    /// its time to first message, from the intended send as the response time is.
    #[inline]
    pub fn first_message(&mut self, intended: u64, now: u64) {
        let phase = self.phase_of(intended);
        record_clamped(
            &mut self.phases[phase].first_message,
            now.saturating_sub(intended),
        );
    }

    /// A TLS handshake took `ns` and ended at `now`: handshakes before the end of the warm-up
    /// belong to it if there is one; otherwise (pre-connects included) to the measured phase,
    /// never to a phase that is not reported.
    pub fn tls_handshake(&mut self, ns: u64, now: u64) {
        let phase = usize::from(now >= self.warmup_end_ns || !self.has_warmup);
        record_clamped(&mut self.phases[phase].tls_handshake, ns);
    }

    /// Hands every interval that ended by `now` to the collector.
    pub fn flush_due(&mut self, now: u64) {
        while now >= self.next_boundary_ns {
            self.flush(None);
        }
    }

    fn flush(&mut self, final_end_ns: Option<u64>) {
        // A recycled box from the collector; a new one only if the collector fell behind.
        let fresh = self.pool.try_recv().unwrap_or_else(|_| {
            Box::new(IntervalData::for_streams(self.interval.stream.is_some()))
        });
        let mut data = std::mem::replace(&mut self.interval, fresh);
        for (i, p) in self.phases.iter().enumerate() {
            data.counts[i] = counts_growth(&p.counts, &self.flushed_counts[i]);
            self.flushed_counts[i] = p.counts;
        }
        // The collector drains continuously; a blocking send only waits if it is seconds behind.
        let _ = self.to_collector.send(IntervalMsg {
            index: self.interval_index,
            final_end_ns,
            data,
        });
        self.interval_index += 1;
        self.next_boundary_ns += self.interval_ns;
    }

    /// A request still outstanding when the run ended: written (`sent`) or still queued.
    pub fn unfinished(&mut self, e: &Exchange, now: u64) {
        self.offer_record(e, Outcome::Unfinished, (None, false), 0, now);
        self.unfinished_at(e.intended, Some(e.request), e.sent != 0, now);
    }

    fn unfinished_at(&mut self, intended: u64, request: Option<u32>, sent: bool, now: u64) {
        let measured = self.phase_of(intended) == 1;
        if let Some(b) = &mut self.books {
            b.each(intended, request, measured, |acc| {
                book_unfinished(acc, now.saturating_sub(intended), sent)
            });
        }
        let phase = self.phase_of(intended);
        let p = &mut self.phases[phase];
        p.counts.in_flight_at_end += 1;
        if sent {
            p.counts.sent_unanswered += 1;
        } else {
            p.counts.queued_unsent += 1;
        }
        record_clamped(&mut p.unfinished, now.saturating_sub(intended));
    }

    /// An entry intended at `intended` (entry `seq`, request `request` when it was chosen) that
    /// was never sent when the run ended: intended and unfinished (queued, never sent).
    pub fn never_sent(&mut self, intended: u64, seq: u64, request: Option<u32>, now: u64) {
        self.phases[self.phase_of(intended)].counts.intended += 1;
        if let Some(b) = &mut self.books {
            if let Some(stage) = b.stage_of(intended) {
                b.stages[stage].counts.intended += 1;
            }
        }
        if let Some(r) = request {
            self.intend_named(intended, r);
        }
        self.unfinished_at(intended, request, false, now);
        if self.records.is_some() {
            let e = Exchange {
                seq,
                request: request.unwrap_or(u32::MAX),
                intended,
                sent: 0,
                first_byte: 0,
            };
            self.offer_record(&e, Outcome::Unfinished, (None, false), 0, now);
        }
    }

    /// Multi-turn runs: books what `f` says of a conversation, in the phase of the turn
    /// intended at `intended` that decided it, and in the current interval (the one it was
    /// decided in: intervals already handed to the collector are not reopened).
    #[inline]
    pub fn conversation(
        &mut self,
        intended: u64,
        f: impl Fn(&mut candor_core::results::Conversations),
    ) {
        let phase = self.phase_of(intended);
        if let Some(s) = &mut self.phases[phase].stream {
            f(&mut s.conversations);
        }
        if let Some(s) = &mut self.interval.stream {
            f(&mut s.conversations);
        }
    }

    /// Closes the books: the due but never sent rest of the schedule (counted entry by entry, no
    /// formula, so the count is exactly what the schedule generated), the clamped counts, and the
    /// final partial interval. Returns the two phases.
    ///
    /// The backlog can be long (a stalled target at a high rate leaves rate x stall entries, and
    /// counting one costs a histogram record), so once a stop is requested the count goes on
    /// for at most [`STOP_COUNT_BUDGET_NS`] and then ends the schedule at the entry reached.
    /// The books still balance: every entry counted as intended is also counted as unfinished.
    pub fn finish(
        &mut self,
        schedule: Option<&mut Schedule>,
        schedule_end_ns: u64,
        now: u64,
        clock: &dyn Fn() -> u64,
        stopping: &dyn Fn() -> bool,
    ) -> [PhaseAcc; 2] {
        if let Some(s) = schedule {
            let mut counted = 0u64;
            let mut deadline = u64::MAX;
            while s.peek() < schedule_end_ns {
                // A relaxed load per 4096 entries costs nothing next to the histogram records.
                if counted.is_multiple_of(4096) && stopping() {
                    let t = clock();
                    if deadline == u64::MAX {
                        deadline = t + STOP_COUNT_BUDGET_NS;
                    } else if t >= deadline {
                        break;
                    }
                }
                // Never sent, so never given a request: in the totals and its stage, no name.
                self.never_sent(s.peek(), s.seq(), None, now);
                s.advance();
                counted += 1;
            }
        }
        for p in &mut self.phases {
            p.counts.clamped_values += p.rec.clamped;
            if let Some(s) = &p.stream {
                p.counts.clamped_values += s.clamped;
            }
        }
        self.flush(Some(now));
        let mut phases = std::mem::take(&mut self.phases);
        phases[1].failures = std::mem::take(&mut self.examples);
        if let Some(mut b) = self.books.take() {
            for acc in b.stages.iter_mut().chain(b.names.iter_mut()) {
                acc.counts.clamped_values += acc.rec.clamped;
            }
            phases[1].workload = Some(b);
        }
        phases
    }
}

#[cfg(test)]
mod tests;

/// Books one gap between events (a token's, or any event's) into `s`.
#[inline]
fn book_stream_gap(s: &mut StreamAcc, gap: candor_stream::tap::Gap) {
    let h = if gap.token {
        &mut s.itl
    } else {
        &mut s.event_gap
    };
    s.clamped += record_clamped(h, gap.ns) as u64;
}

/// Books what exchange `e`'s streamed response came to into `s`.
fn book_stream_outcome(s: &mut StreamAcc, e: &Exchange, o: &candor_stream::tap::StreamOutcome) {
    let mut c = 0;
    if o.events > 0 {
        s.responses += 1;
        s.events += o.events;
    }
    if let Some(at) = o.first_event {
        c += record_clamped(&mut s.first_event, at.saturating_sub(e.intended)) as u64;
    }
    if let Some(at) = o.first_token {
        c += record_clamped(&mut s.ttft, at.saturating_sub(e.intended)) as u64;
        if e.sent != 0 {
            c += record_clamped(&mut s.ttft_service, at.saturating_sub(e.sent)) as u64;
        }
    }
    if let Some(tpot) = o.tpot_ns {
        c += record_clamped(&mut s.tpot, tpot) as u64;
    }
    s.book_tokens(o);
    if let Some(f) = o.failure {
        s.failures[f.index()] += 1;
    }
    s.clamped += c;
}
