//! The text report's lines checked exactly on results made in the test.

use super::*;
use candor_core::results::*;
use candor_core::{new_histogram, Recorder};

fn results(mode: &str) -> RunResults {
    let mut r = Recorder::new();
    for i in 1..=1000u64 {
        r.record(i * 1_000, 500, i * 500);
    }
    let requests = RequestCounts {
        intended: 1001,
        completed: 1000,
        in_flight_at_end: 1,
        sent_unanswered: 1,
        ..Default::default()
    };
    RunResults {
        candor_version: "0.0.0".into(),
        warnings: vec!["something to know".into()],
        ..RunResults::new(
            candor_core::results::Kind::Run,
            mode.parse().unwrap(),
            "http://127.0.0.1:9/",
            candor_core::results::RunConfig {
                threads: 2,
                connections: 8,
                ..Default::default()
            },
            PhaseResults::from_recorder(&r, &new_histogram(), requests, 1.0, Some(1000.0)),
        )
    }
}

#[test]
fn pool_and_pacing_have_a_line_each_when_present() {
    let mut res = results("open-loop");
    assert!(!render(&res).contains("pool:"));
    assert!(!render(&res).contains("pacing:"));
    let mut h = new_histogram();
    for us in 1..=100u64 {
        h.record(us * 1_000).unwrap();
    }
    res.main.pool = Some(PoolResults {
        connections: 100,
        ready: 98,
        not_ready: 2,
        open_s: 0.25,
        connect_time: Summary::of(&h),
    });
    res.main.pacing = Some(PacingResults {
        margin: PacingMargin::Adaptive,
        spin_s: 0.012,
        spin_share: 0.0125,
        margin_us: 0.0,
        wakeups: 9,
        socket_wakeups: 0,
    });
    let text = render(&res);
    assert!(
        text.contains(
            "  pool:     98 of 100 connections ready in 250.0ms before the first send; \
             connect p50 50.02us p99 99.01us max 100.0us; 2 not ready"
        ),
        "{text}"
    );
    assert!(
        text.contains("  pacing:   12.00ms spinning before sends (1.2% of the threads' time); spin margin 0ns (adaptive"),
        "{text}"
    );
}

#[test]
fn the_first_line_names_the_protocol_where_it_is_recorded() {
    let mut res = results("open-loop");
    let first = |r: &RunResults| render(r).lines().next().unwrap().to_string();
    // Not recorded (a log, an older file): nothing is guessed.
    assert_eq!(first(&res), "candor 0.0.0 open-loop @ http://127.0.0.1:9/");
    for (protocol, want) in [
        (named("Http1"), "(HTTP/1.1)"),
        (named("Http1Tls"), "(HTTP/1.1 over TLS)"),
        (named("H2c"), "(HTTP/2, h2c)"),
        (named("H2Tls"), "(HTTP/2 over TLS, h2)"),
        (named("Tcp"), "(raw TCP)"),
    ] {
        res.config = RunConfig {
            threads: 2,
            connections: 8,
            protocol: Some(protocol),
            ..Default::default()
        }
        .into();
        assert_eq!(
            first(&res),
            format!("candor 0.0.0 open-loop @ http://127.0.0.1:9/ {want}")
        );
    }
}

#[test]
fn open_loop_report_has_all_rows_and_accounting() {
    let text = render(&results("open-loop"));
    for needle in [
        "response time",
        "service time",
        "send lag",
        "p99.999",
        "max",
        "stdev",
        "1,001 intended = 1,000 completed + 0 failed + 1 unfinished",
        "target 1.00k/s",
        "WARNING: something to know",
        "2 threads, 8 connections",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }
    // Max of the response column is 1 ms (the largest recorded value).
    let max_line = text
        .lines()
        .find(|l| l.trim_start().starts_with("max"))
        .unwrap();
    assert!(max_line.contains("1.000ms"), "{max_line}");
}

#[test]
fn the_stop_reason_and_precision_reached_are_reported() {
    let mut r = results("open-loop");
    assert_eq!(
        render_stop(&r),
        "",
        "nothing without --precision or --abort-on-fail"
    );
    r.stop_reason = Some(StopReason::Precision);
    r.stop = Some(StopDetail {
        at_s: 4.0,
        intervals: 3,
        precision: vec![PrecisionRow {
            percentile: 99.0,
            target: 0.05,
            samples: 12_000,
            estimate_ns: 1_000_000,
            ci_low_ns: Some(980_000),
            ci_high_ns: Some(1_030_000),
            half_width: Some(0.03),
            reached: true,
        }],
        objective: None,
        detail: "every --precision target was reached".into(),
    });
    let text = render(&r);
    assert!(text.contains("p99=±5%"), "{text}");
    assert!(text.contains("(±3.00%), 12,000 samples: reached"), "{text}");
    assert!(text.contains("stop reason: precision: every --precision target was reached"));
    assert!(!text.contains("ABORTED"));
    r.stop_reason = Some(StopReason::Abort);
    r.stop.as_mut().unwrap().precision.clear();
    r.stop.as_mut().unwrap().detail = "objective errors<1% can no longer pass".into();
    let text = render(&r);
    assert!(
        text.contains("ABORTED at 4.0 s: objective errors<1% can no longer pass"),
        "{text}"
    );
    assert!(text.contains("stop reason: abort"));
}

fn all_503(n: u64) -> RequestCounts {
    RequestCounts {
        intended: n,
        failed: n,
        errors: ErrorCounts {
            status: n,
            ..Default::default()
        },
        status: StatusCounts {
            s5xx: n,
            ..Default::default()
        },
        connections_opened: 2,
        ..Default::default()
    }
}

#[test]
fn status_classes_are_named_only_when_they_are_the_failures() {
    // 60 answered 503 (status failures), 40 answered 200 but failed --check-body: the 2xx
    // are not status failures, so the line must not say "2xx/5xx".
    let r = RequestCounts {
        intended: 100,
        failed: 100,
        errors: ErrorCounts {
            status: 60,
            check: 40,
            ..Default::default()
        },
        status: StatusCounts {
            s2xx: 40,
            s5xx: 60,
            ..Default::default()
        },
        ..Default::default()
    };
    assert_eq!(
        no_success(&r).unwrap(),
        "no request succeeded: 60 of 100 failed with an unaccepted HTTP status (status), 40 failed otherwise"
    );
}

#[test]
fn no_success_names_the_dominant_class() {
    assert_eq!(
        no_success(&all_503(1000)).unwrap(),
        "no request succeeded: 1,000 of 1,000 failed with HTTP status 5xx (status)"
    );
    let mixed = RequestCounts {
        intended: 10,
        failed: 8,
        in_flight_at_end: 2,
        sent_unanswered: 2,
        errors: ErrorCounts {
            connect: 5,
            timeout: 3,
            ..Default::default()
        },
        ..Default::default()
    };
    assert_eq!(
        no_success(&mixed).unwrap(),
        "no request succeeded: 5 of 10 failed to connect (connect), 3 failed otherwise, 2 unfinished"
    );
    let silent = RequestCounts {
        intended: 4,
        in_flight_at_end: 4,
        sent_unanswered: 4,
        ..Default::default()
    };
    assert!(no_success(&silent).unwrap().contains("none of 4 requests"));
    let one_ok = RequestCounts {
        completed: 1,
        intended: 1001,
        ..all_503(1000)
    };
    assert_eq!(no_success(&one_ok), None);
    assert_eq!(no_success(&RequestCounts::default()), None);
}

#[test]
fn the_report_warns_loudly_when_failures_dominate() {
    let mut res = results("open-loop");
    res.main.requests = all_503(1000);
    let text = render(&res);
    assert!(
        text.contains("!!! FAILURES DOMINATE: 100.0% of requests failed (1,000 of 1,000); 1,000 failed with HTTP status 5xx (status)"),
        "{text}"
    );
    assert!(text.contains("parse 0  status 1,000"), "{text}");
    assert!(text.contains("connections: 2 opened"), "{text}");
    // Half failed is not "dominate"; the ordinary warning list covers it.
    let half = RequestCounts {
        completed: 500,
        intended: 1000,
        failed: 500,
        errors: ErrorCounts {
            status: 500,
            ..Default::default()
        },
        ..Default::default()
    };
    assert_eq!(failures_dominate(&half), None);
    // Not counted (older files): no connections line rather than "0 opened".
    assert!(!render(&results("open-loop")).contains("connections:"));
}

#[test]
fn failed_checks_are_answered_responses_not_unanswered_ones() {
    // Every request answered with 200 and failed --check-body.
    let checked = RequestCounts {
        intended: 1000,
        failed: 1000,
        errors: ErrorCounts {
            check: 1000,
            ..Default::default()
        },
        status: candor_core::results::StatusCounts {
            s2xx: 1000,
            ..Default::default()
        },
        ..Default::default()
    };
    let loud = failures_dominate(&checked).unwrap();
    assert!(loud.contains("failed its checks (--check-body"), "{loud}");
    assert!(loud.contains("mostly of failures"), "{loud}");
    assert!(!loud.contains("minority that was answered"), "{loud}");
}

#[test]
fn unsent_and_judged_failures_name_a_scripts_functions_too() {
    // A script run's request() that failed, or response() that rejected: the results do not
    // say a script made them, so the words must not blame --data or the flags alone.
    let failing = |errors: ErrorCounts| RequestCounts {
        intended: 10,
        failed: 10,
        errors,
        ..Default::default()
    };
    let unsent = failures_dominate(&failing(ErrorCounts {
        template: 10,
        ..Default::default()
    }))
    .unwrap();
    assert!(
        unsent.contains("could not be made") && unsent.contains("a script's request()"),
        "{unsent}"
    );
    let judged = failures_dominate(&failing(ErrorCounts {
        check: 10,
        ..Default::default()
    }))
    .unwrap();
    assert!(judged.contains("a script's response()"), "{judged}");
}

#[test]
fn protocol_failures_join_the_errors_line_only_when_there_are_some() {
    let mut res = results("open-loop");
    let plain = render(&res);
    assert!(!plain.contains("protocol"), "{plain}");
    res.main.requests.intended += 7;
    res.main.requests.failed += 7;
    res.main.requests.errors.protocol = 7;
    let text = render(&res);
    let errors = text
        .lines()
        .find(|l| l.trim_start().starts_with("errors:"))
        .unwrap();
    assert!(errors.ends_with("  status 0  protocol 7"), "{errors}");
}

#[test]
fn a_grpc_run_names_its_call_and_its_statuses() {
    let mut res = results("open-loop");
    let plain = render(&res);
    assert!(!plain.contains("grpc"), "{plain}");
    res.main.grpc_status = [("OK", 9000), ("UNAVAILABLE", 12), ("NOT_FOUND", 12)]
        .into_iter()
        .map(|(k, n)| (k.to_string(), n))
        .collect();
    res.main.requests.errors.grpc = 24;
    res.config = RunConfig {
        protocol: Some(named("GrpcTls")),
        grpc_call: Some("candor.bench.Bench/Echo".into()),
        ..Default::default()
    }
    .into();
    let text = render(&res);
    assert!(
        text.starts_with(
            "candor 0.0.0 open-loop @ http://127.0.0.1:9/ candor.bench.Bench/Echo (gRPC over HTTP/2 over TLS, h2)\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("  grpc:     OK ×9,000  NOT_FOUND ×12  UNAVAILABLE ×12\n"),
        "{text}"
    );
    assert!(text.contains("  grpc 24\n"), "{text}");
}

#[test]
fn status_codes_and_connection_faults_have_a_line_each_when_present() {
    let mut res = results("open-loop");
    assert!(!render(&res).contains("codes:"));
    assert!(!render(&res).contains("connection faults:"));
    res.main.status_codes = [("404", 12), ("200", 9000), ("other", 1), ("503", 3)]
        .into_iter()
        .map(|(k, n)| (k.to_string(), n))
        .collect();
    res.main.connection_faults = [
        ("connect refused or failed".to_string(), 2),
        (
            "server sent GOAWAY PROTOCOL_ERROR before any response".to_string(),
            8019,
        ),
    ]
    .into_iter()
    .collect();
    let text = render(&res);
    assert!(
        text.contains("  codes:    200 ×9,000  404 ×12  503 ×3  other ×1\n"),
        "{text}"
    );
    assert!(
        text.contains("  connection faults: server sent GOAWAY PROTOCOL_ERROR before any response ×8,019; connect refused or failed ×2\n"),
        "{text}"
    );
}

#[test]
fn a_log_reports_only_what_it_holds_and_no_data_as_such() {
    let log = crate::hlog::write_hlog(&crate::synthetic::synthetic_run(1, 3, 10, 1_000_000, 0));
    let r = crate::input::load(&log, "x.hlog", &Default::default()).unwrap();
    let text = render(&r);
    assert!(
        text.contains("requests: 30 latencies recorded; intended, failed"),
        "{text}"
    );
    for invented in ["intended =", "status:", "errors:", "bytes:", "target "] {
        assert!(!text.contains(invented), "{invented:?} in\n{text}");
    }
    let header: String = log
        .lines()
        .filter(|l| l.starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect();
    let empty = crate::input::load(&header, "e.hlog", &Default::default()).unwrap();
    let text = render(&empty);
    assert!(
        text.contains("latency: no data") && text.contains("no intervals in the log"),
        "{text}"
    );
    assert!(!text.contains("0ns"), "{text}");
    // A run whose every request failed has no latency either.
    let mut none = results("open-loop");
    none.main.response_time.count = 0;
    none.main.service_time.count = 0;
    none.main.send_lag.count = 0;
    assert!(phase_table(&none.main, false).contains("no data"));
}

#[test]
fn closed_loop_labels_the_latency_honestly() {
    let text = render(&results("closed-loop"));
    assert!(text.contains("latency (CO-affected)"));
}

/// Issue 36, item 22: a WebSocket run's replies have no HTTP status and arrive whole, so its
/// text report has no status line and no first-byte column (they repeated zeros and the
/// response time); other protocols keep both, and the JSON keeps its fields for every one.
#[test]
fn a_websocket_run_has_no_status_line_and_no_first_byte_column() {
    let mut res = results("open-loop");
    res.main.first_byte = Some(res.main.response_time.clone());
    for (protocol, shown) in [
        (named("Http1"), true),
        (named("Ws"), false),
        (named("WsTls"), false),
    ] {
        res.config = RunConfig {
            threads: 2,
            connections: 8,
            protocol: Some(protocol),
            ..Default::default()
        }
        .into();
        let text = render(&res);
        assert_eq!(text.contains("  status:   1xx 0  2xx 0"), shown, "{text}");
        assert_eq!(text.contains("first byte"), shown, "{text}");
        // The rest of the books stay.
        assert!(text.contains("1,001 intended = 1,000 completed"), "{text}");
        assert!(text.contains("response time"), "{text}");
        assert!(text.contains("  errors:   connect 0"), "{text}");
        let json = crate::export::Exporter::export(&crate::json::JsonExporter, &res).unwrap();
        let json = String::from_utf8(json).unwrap();
        assert!(json.contains("\"first_byte\""), "{json}");
        assert!(json.contains("\"1xx\""), "{json}");
    }
}

/// A protocol's name as its folder declares it (this crate links no protocol: the words are
/// the ones the protocols declare, copied here).
fn named(which: &str) -> ProtocolName {
    use candor_core::protocol_name::ProtocolNaming;
    macro_rules! naming {
        ($id:literal, $words:literal, $messages:literal) => {{
            static N: ProtocolNaming = ProtocolNaming {
                id: $id,
                words: $words,
                replies_are_messages: $messages,
            };
            ProtocolName::new(&N)
        }};
    }
    match which {
        "Http1" => naming!("http/1.1", "HTTP/1.1", false),
        "Http1Tls" => naming!("http/1.1 (TLS)", "HTTP/1.1 over TLS", false),
        "H2c" => naming!("h2c", "HTTP/2, h2c", false),
        "H2Tls" => naming!("h2 (TLS)", "HTTP/2 over TLS, h2", false),
        "Tcp" => naming!("tcp", "raw TCP", false),
        "GrpcTls" => naming!("grpc (TLS)", "gRPC over HTTP/2 over TLS, h2", false),
        "Ws" => naming!("ws", "WebSocket", true),
        "WsTls" => naming!("ws (TLS)", "WebSocket over TLS", true),
        other => panic!("no protocol {other} in these tests"),
    }
}
