//! The ledger's bookings checked exactly: every class, phase and re-booking balances.

use super::*;
use crate::config::{LoadConfig, Target};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

fn ex(intended: u64, sent: u64) -> Exchange {
    Exchange {
        seq: 0,
        request: 0,
        intended,
        sent,
        first_byte: 0,
    }
}

fn ledger(accept: &str, warmup_ns: u64) -> Ledger {
    let mut config = LoadConfig::new(Target::parse("http://127.0.0.1:1/").unwrap());
    config.accept_status = candor_wire::status::StatusSet::parse(accept).unwrap();
    config.warmup_ns = warmup_ns;
    let (to_collector, _rx) = crossbeam_channel::unbounded();
    let (_tx, pool) = crossbeam_channel::unbounded();
    Ledger::new(&WorkerSetup {
        config: Arc::new(config),
        requests: Vec::new().into(),
        compiled: None,
        requests_are: crate::seam::carrying::RequestKind::Http,
        slots: crate::seam::carrying::Slots {
            per_connection: 1,
            timeout: crate::seam::carrying::TimeoutScope::Connection,
        },
        connections: 1,
        start_ns: 1_000,
        schedule: None,
        to_collector,
        pool,
        stop: Arc::new(AtomicBool::new(false)),
        end: Arc::default(),
        on_start: None,
        seq_lane: 0,
        seq_stride: 1,
    })
}

#[test]
fn failed_checks_are_their_own_class_and_lines_accept_their_own_statuses() {
    let mut config = LoadConfig::new(Target::parse("http://127.0.0.1:1/").unwrap());
    let lines = candor_wire::requests::parse_request_lines(
        "{\"path\": \"/a\"}\n{\"path\": \"/b\", \"check_status\": \"404\"}",
    )
    .unwrap();
    config.requests = lines.iter().map(|l| l.spec.clone()).collect();
    config.workload.lines = lines;
    let mut l = ledger("2xx", 0);
    l.accept_by_request = crate::request_plan::accept_by_request(&config);
    let on = |request, t| Exchange {
        seq: 0,
        request,
        intended: t,
        sent: t + 1,
        first_byte: 0,
    };
    // (request, status, checks passed): an accepted status that fails its checks is `check`;
    // an unaccepted one is `status` whatever the checks say.
    for (i, (request, status, ok)) in [
        (0, 200, true),
        (0, 200, false),
        (0, 404, false),
        (1, 404, true),
        (1, 200, true),
    ]
    .into_iter()
    .enumerate()
    {
        let t = 1010 + 10 * i as u64;
        l.intend(t, t, 0);
        let failed = (!ok).then_some(ContentCheck::Body);
        let booked = l.complete_response(&on(request, t), t + 5, status, failed, None);
        if (request, status, ok) == (0, 200, false) {
            // Re-booked as a protocol error, the check count moves to parse.
            l.rebook_as_parse(booked);
        }
    }
    let c = &l.phases[1].counts;
    assert_eq!((c.completed, c.failed), (2, 3));
    assert_eq!((c.errors.check, c.errors.status, c.errors.parse), (0, 2, 1));
    assert!(c.balanced());
    assert_eq!(l.phases[1].rec.response.len(), 5);
    let mut l = ledger("2xx", 0);
    l.intend(1010, 1010, 0);
    l.complete_response(&ex(1010, 1011), 1020, 200, Some(ContentCheck::Body), None);
    assert_eq!(l.phases[1].counts.errors.check, 1);
    assert_eq!(l.phases[1].rec.response.len(), 1);
}

/// A protocol's reply codes as a test declares them (gRPC's first five).
static CODES: candor_core::reply_codes::ReplyCodeTable = candor_core::reply_codes::ReplyCodeTable {
    field: "grpc_status",
    series: "candor_grpc_calls_total",
    names: &[
        "OK",
        "CANCELLED",
        "UNKNOWN",
        "INVALID_ARGUMENT",
        "UNAVAILABLE",
    ],
    failure: FailureClass::Grpc,
    check: FailedCheck::Grpc,
};

fn coded(code: u32, accepted: bool) -> CodedEnd<'static> {
    CodedEnd {
        code: candor_core::reply_codes::ReplyCode {
            table: &CODES,
            code,
        },
        accepted,
        said: None,
    }
}

#[test]
fn reply_codes_are_judged_by_their_protocol_and_counted_by_its_table() {
    let mut l = ledger("200", 0);
    // (HTTP status, code, accepted): 0 and 3 accepted, 4 refused twice (a failure in the
    // table's class, with its latency), a 503 without a code a `status` failure as over HTTP.
    let calls = [
        (200, Some((0, true))),
        (200, Some((3, true))),
        (200, Some((4, false))),
        (200, Some((4, false))),
        (503, None),
    ];
    for (i, (status, code)) in calls.into_iter().enumerate() {
        let t = 1010 + 10 * i as u64;
        l.intend(t, t, 0);
        let booked = match code {
            Some((code, accepted)) => l.complete_coded(
                &ex(t, t + 1),
                t + 5,
                status,
                coded(code, accepted),
                None,
                None,
            ),
            None => l.complete_response(&ex(t, t + 1), t + 5, status, None, None),
        };
        assert_eq!(booked.ok, i < 2, "call {i}");
    }
    let c = &l.phases[1].counts;
    assert_eq!((c.completed, c.failed), (2, 3));
    assert_eq!((c.errors.grpc, c.errors.status), (2, 1));
    assert_eq!(c.responses(), 5, "every call was answered");
    assert!(c.balanced());
    assert_eq!(l.phases[1].rec.response.len(), 5);
    let g = &l.phases[1].reply_codes;
    assert_eq!((g.get(0), g.get(3), g.get(4)), (1, 1, 2));
    assert_eq!(g.field(), Some("grpc_status"));
    assert_eq!(l.interval.reply_codes[1].total(), 4);
    // A refused reply re-booked as a protocol error moves from its class to `parse`.
    l.intend(1100, 1100, 0);
    let booked = l.complete_coded(&ex(1100, 1101), 1105, 200, coded(2, false), None, None);
    l.rebook_as_parse(booked);
    let c = &l.phases[1].counts;
    assert_eq!((c.errors.grpc, c.errors.parse), (2, 1));
    assert!(c.balanced());
}

#[test]
fn unaccepted_statuses_fail_with_their_latency_recorded() {
    let mut l = ledger("2xx", 0);
    // Intended times from the start (1_000) on: the measured phase.
    for (status, t) in [
        (200, 1010),
        (503, 1020),
        (404, 1030),
        (0, 1040),
        (302, 1050),
    ] {
        l.intend(t, t, 0);
        l.complete(&ex(t, t + 1), t + 5, status);
    }
    let c = &l.phases[1].counts;
    assert_eq!((c.intended, c.completed, c.failed), (5, 2, 3));
    assert_eq!(c.errors.status, 3);
    assert!(c.balanced());
    assert_eq!(
        (c.status.s2xx, c.status.s3xx, c.status.s4xx, c.status.s5xx),
        (1, 1, 1, 1)
    );
    // Every response is in the histograms, failed or not.
    assert_eq!(l.phases[1].rec.response.len(), 5);
    assert_eq!((l.interval.completed, l.interval.failed), (2, 3));
}

#[test]
fn rebooking_moves_an_exchange_to_parse_and_keeps_the_books() {
    let mut l = ledger("2xx", 0);
    l.intend(1010, 1010, 0);
    let ok = l.complete(&ex(1010, 1011), 1015, 200);
    l.intend(1020, 1020, 0);
    let failed = l.complete(&ex(1020, 1021), 1025, 500);
    l.rebook_as_parse(ok);
    l.rebook_as_parse(failed);
    let c = &l.phases[1].counts;
    assert_eq!((c.completed, c.failed), (0, 2));
    assert_eq!((c.errors.parse, c.errors.status), (2, 0));
    assert!(c.balanced());
    assert_eq!((l.interval.completed, l.interval.failed), (0, 2));
}

#[test]
fn connections_opened_go_to_the_phase_of_their_time() {
    // Warm-up ends at start (1_000) + 500.
    let mut l = ledger("2xx", 500);
    l.connection_opened(900); // pre-connect: belongs to the warm-up
    l.connection_opened(1_499);
    l.connection_opened(1_500);
    assert_eq!(l.phases[0].counts.connections_opened, 2);
    assert_eq!(l.phases[1].counts.connections_opened, 1);
    // Without a warm-up, pre-connects belong to the measured phase.
    let mut l = ledger("2xx", 0);
    l.connection_opened(900);
    assert_eq!(l.phases[1].counts.connections_opened, 1);
}

#[test]
fn failed_responses_of_the_measured_phase_are_kept_with_their_check_and_body() {
    // Warm-up ends at start (1_000) + 500.
    let mut l = ledger("2xx", 500);
    let on = |seq, t| Exchange {
        seq,
        request: 0,
        intended: t,
        sent: t + 1,
        first_byte: 0,
    };
    // A warm-up failure is not an example; completed responses are not either.
    l.intend(1_100, 1_100, 0);
    l.complete_response(&on(0, 1_100), 1_110, 503, None, Some(b"warm"));
    l.intend(1_600, 1_600, 0);
    l.complete_response(&on(1, 1_600), 1_610, 200, None, Some(b""));
    // An unaccepted status is `status` whatever the checks say.
    l.intend(1_700, 1_700, 0);
    l.complete_response(
        &on(2, 1_700),
        1_710,
        503,
        Some(ContentCheck::Body),
        Some(b"busy"),
    );
    l.intend(1_800, 1_800, 0);
    l.complete_response(
        &on(3, 1_800),
        1_810,
        200,
        Some(ContentCheck::Header),
        Some(b"{}"),
    );
    // A protocol that keeps no body books through `complete`.
    l.intend(1_900, 1_900, 0);
    l.complete(&on(4, 1_900), 1_910, 404);
    // A failure re-booked as a protocol error is no longer an example of its class.
    l.intend(2_000, 2_000, 0);
    let rebooked = l.complete_response(
        &on(5, 2_000),
        2_010,
        200,
        Some(ContentCheck::Body),
        Some(b"x"),
    );
    l.rebook_as_parse(rebooked);
    let kept = l.examples.sorted();
    let seen: Vec<(u64, u16, FailedCheck, Option<&[u8]>)> = kept
        .iter()
        .map(|k| (k.seq, k.status, k.check, k.body()))
        .collect();
    assert_eq!(
        seen,
        vec![
            (2, 503, FailedCheck::Status, Some(&b"busy"[..])),
            (3, 200, FailedCheck::Header, Some(&b"{}"[..])),
            (4, 404, FailedCheck::Status, None),
        ]
    );
}

/// `--records`: each booking offers one record, times from the run's start (1 us here), with
/// what the stream booked just before its response.
#[test]
fn each_booking_offers_its_record() {
    use crate::records::{Outcome, Record};
    let mut l = ledger("2xx", 0);
    let (sink, rx) = crate::records::test_sink(8);
    l.records = Some(sink);
    let at = |seq, intended, sent| Exchange {
        seq,
        ..ex(intended, sent)
    };
    l.complete(&at(1, 2_000, 2_100), 5_000, 200);
    l.complete(&at(2, 3_000, 3_000), 6_000, 503);
    l.fail(FailureClass::Timeout, &at(3, 4_000, 0), 9_000);
    let o = candor_stream::tap::StreamOutcome {
        events: 3,
        first_event: Some(7_000),
        first_token: Some(7_500),
        last_event: Some(8_000),
        last_token: Some(8_000),
        output_tokens: 2,
        tokens_from: Some(candor_stream::openai::TokenSource::Usage),
        input_tokens: Some(5),
        cached_tokens: Some(3),
        counted_tokens: None,
        tpot_ns: Some(500),
        inputs: 0,
        failure: None,
    };
    let e = Exchange {
        first_byte: 6_500,
        ..at(4, 5_000, 5_100)
    };
    // Its gaps reach the writer before its record, in one chunk (not yet full).
    let gap = |ns, token| candor_stream::tap::Gap { ns, token };
    l.stream_gap(4, 5_000, gap(500, true));
    l.stream_gap(4, 5_000, gap(0, false));
    l.stream_outcome(&e, &o);
    l.complete(&e, 8_100, 200);
    l.unfinished(&at(5, 6_000, 6_100), 10_000);
    let entries: Vec<crate::records::Entry> = rx.try_iter().collect();
    type Gaps = Vec<(u64, u64, bool)>;
    let chunks: Vec<(usize, Gaps)> = entries
        .iter()
        .enumerate()
        .filter_map(|(i, e)| match e {
            crate::records::Entry::Gaps(c) => Some((i, c.iter().collect())),
            _ => None,
        })
        .collect();
    assert_eq!(chunks, vec![(3, vec![(4, 500, true), (4, 0, false)])]);
    let got: Vec<Record> = entries
        .into_iter()
        .filter_map(|e| match e {
            crate::records::Entry::Record(r) => Some(r),
            _ => None,
        })
        .collect();
    let base = Record {
        run: 0,
        seq: 1,
        request: Some(0),
        lane: 0,
        measured: true,
        outcome: Outcome::Completed,
        class: None,
        answered: true,
        status: 200,
        intended: 1_000,
        sent: Some(1_100),
        // Completed without a marked first byte: its end.
        first_byte: Some(4_000),
        events: None,
        first_event: None,
        first_token: None,
        last_event: None,
        last_token: None,
        end: 4_000,
        input_tokens: None,
        output_tokens: None,
        cached_tokens: None,
    };
    let want = [
        base,
        Record {
            seq: 2,
            outcome: Outcome::Failed,
            class: Some(FailureClass::Status),
            status: 503,
            intended: 2_000,
            sent: Some(2_000),
            first_byte: Some(5_000),
            end: 5_000,
            ..base
        },
        Record {
            seq: 3,
            outcome: Outcome::Failed,
            class: Some(FailureClass::Timeout),
            answered: false,
            status: 0,
            intended: 3_000,
            sent: None,
            first_byte: None,
            end: 8_000,
            ..base
        },
        Record {
            seq: 4,
            intended: 4_000,
            sent: Some(4_100),
            first_byte: Some(5_500),
            events: Some(3),
            first_event: Some(6_000),
            first_token: Some(6_500),
            last_event: Some(7_000),
            last_token: Some(7_000),
            end: 7_100,
            input_tokens: Some(5),
            output_tokens: Some(2),
            cached_tokens: Some(3),
            ..base
        },
        Record {
            seq: 5,
            outcome: Outcome::Unfinished,
            answered: false,
            status: 0,
            intended: 5_000,
            sent: Some(5_100),
            first_byte: None,
            end: 9_000,
            ..base
        },
    ];
    assert_eq!(got, want);
}
