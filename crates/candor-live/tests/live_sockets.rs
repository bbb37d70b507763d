//! The live server over real sockets: routes, the event stream's shape, the client limit, bad
//! clients, and bind errors. No run is needed: the tests publish interval reports themselves.

use candor_core::results::{IntervalStats, RequestCounts};
use candor_core::{new_histogram, Recorder};
use candor_live::{LiveError, LiveServer, RunInfo};
use candor_load::load_run::{PhaseOutcome, RunOutcome};
use candor_load::IntervalReport;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

/// Bounds every socket read so that a broken server fails the test instead of hanging it.
const READ_BOUND: Duration = Duration::from_secs(30);

fn info() -> RunInfo {
    RunInfo {
        target: "http://127.0.0.1:9/".into(),
        target_per_s: Some(100.0),
        total_s: 2.0,
        warmup_s: 0.0,
        shard: Some(1),
        label: "test".into(),
    }
}

fn counts(intended: u64, completed: u64) -> RequestCounts {
    RequestCounts {
        intended,
        completed,
        ..Default::default()
    }
}

fn report(index: u64, completed: u64, cumulative: u64) -> IntervalReport<'static> {
    let mut rec = Recorder::new();
    for i in 0..completed {
        rec.record(1_000_000 + i * 1_000, 900_000, 500);
    }
    // Leaked: a few small test histograms that live as long as the test process.
    let rec: &'static Recorder = Box::leak(Box::new(rec));
    IntervalReport {
        index,
        elapsed_s: index as f64 + 1.0,
        total_s: 2.0,
        length_s: 1.0,
        warmup: false,
        completed,
        failed: 0,
        response_time: IntervalStats::of(&rec.response),
        service_time: IntervalStats::of(&rec.service),
        send_lag: IntervalStats::of(&rec.send_lag),
        totals: [
            RequestCounts::default(),
            counts(100 * (index + 1), cumulative),
        ],
        histograms: rec,
        codes: Box::leak(Box::default()),
        reply_codes: Box::leak(Box::default()),
        stream: None,
        goodput: false,
    }
}

fn outcome(completed: u64) -> RunOutcome {
    let mut recorder = Recorder::new();
    for _ in 0..completed {
        recorder.record(1_000_000, 900_000, 500);
    }
    RunOutcome {
        start_ns: 0,
        start_wall_ns: 0,
        late_start_ns: 0,
        main: PhaseOutcome {
            recorder,
            unfinished: new_histogram(),
            counts: counts(completed, completed),
            tls_handshake: new_histogram(),
            first_message: new_histogram(),
            duration_ns: 2_000_000_000,
            warnings: Vec::new(),
            workload: None,
            failures: Default::default(),
            faults: Default::default(),
            codes: Default::default(),
            stream: None,
            reply_codes: Default::default(),
            protocol_counts: Default::default(),
        },
        warmup: None,
        llm_backend: None,
        llm_model_from_server: None,
        intervals: Vec::new(),
        interrupted_after_ns: None,
        ended_early: None,
        pool: None,
        pacing: None,
        requests: None,
    }
}

fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(READ_BOUND)).unwrap();
    s
}

/// One request; the whole response (the server closes every connection).
fn get(addr: SocketAddr, raw: &[u8]) -> String {
    let mut s = connect(addr);
    s.write_all(raw).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).expect("read response");
    out
}

fn get_path(addr: SocketAddr, path: &str) -> String {
    get(
        addr,
        format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes(),
    )
}

#[test]
fn routes_answer_and_bad_requests_are_refused() {
    let live = LiveServer::bind("127.0.0.1:0").unwrap();
    let a = live.addr();
    let page = get_path(a, "/");
    assert!(page.starts_with("HTTP/1.1 200 OK\r\n"), "{}", &page[..80]);
    assert!(page.contains("Content-Type: text/html"));
    assert!(page.contains("uPlot"));
    let m = get_path(a, "/metrics");
    assert!(m.contains("Content-Type: text/plain; version=0.0.4"));
    assert!(get_path(a, "/nothing").starts_with("HTTP/1.1 404"));
    assert!(get(a, b"DELETE /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 405"));
    assert!(get(a, b"\x16\x03\x01garbage\r\n\r\n").starts_with("HTTP/1.1 400"));
    // A client that connects and says nothing does not hold up the others.
    let _silent = connect(a);
    assert!(get_path(a, "/metrics").starts_with("HTTP/1.1 200"));
}

#[test]
fn metrics_follow_the_published_intervals_and_the_final_numbers() {
    let live = LiveServer::bind("127.0.0.1:0").unwrap();
    let a = live.addr();
    live.begin(info());
    live.interval(&report(0, 90, 90));
    let m = get_path(a, "/metrics");
    assert!(
        m.contains("candor_requests_completed_total{shard=\"1\"} 90\n"),
        "{m}"
    );
    assert!(
        m.contains("candor_requests_in_flight{shard=\"1\"} 10\n"),
        "{m}"
    );
    assert!(
        m.contains("candor_response_time_seconds_count{shard=\"1\"} 90\n"),
        "{m}"
    );
    assert!(m.contains("candor_run_finished{shard=\"1\"} 0\n"));
    live.interval(&report(1, 100, 190));
    live.finish(&outcome(200), false, true);
    let m = get_path(a, "/metrics");
    assert!(
        m.contains("candor_requests_completed_total{shard=\"1\"} 200\n"),
        "{m}"
    );
    assert!(
        m.contains("candor_response_time_seconds_count{shard=\"1\"} 190\n"),
        "{m}"
    );
    assert!(m.contains("candor_run_finished{shard=\"1\"} 1\n"));
}

/// Reads `data:` lines of an event stream until the closing event or the end of the stream.
fn read_events(s: TcpStream) -> (String, Vec<serde_json::Value>) {
    let mut r = BufReader::new(s);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap() == 0 || line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    let mut events = Vec::new();
    let mut line = String::new();
    while r.read_line(&mut line).unwrap_or(0) > 0 {
        if let Some(json) = line.strip_prefix("data: ") {
            let v: serde_json::Value = serde_json::from_str(json.trim_end()).expect("event JSON");
            let done = v["done"] == true;
            events.push(v);
            if done {
                break;
            }
        }
        line.clear();
    }
    (head, events)
}

#[test]
fn event_stream_sends_kept_and_new_intervals_then_the_closing_event() {
    let live = LiveServer::bind("127.0.0.1:0").unwrap();
    let a = live.addr();
    live.begin(info());
    live.interval(&report(0, 95, 95));
    let mut s = connect(a);
    s.write_all(b"GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let reader = std::thread::spawn(move || read_events(s));
    live.interval(&report(1, 100, 195));
    live.finish(&outcome(195), false, true);
    let (head, events) = reader.join().unwrap();
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"));
    assert!(head.contains("Content-Type: text/event-stream\r\n"));
    assert_eq!(events.len(), 3, "{events:?}");
    for (i, e) in events[..2].iter().enumerate() {
        assert_eq!(e["index"], i as u64);
        assert_eq!(e["done"], false);
        assert_eq!(e["target_per_s"], 100.0);
        for m in ["response_time", "service_time", "send_lag"] {
            for k in ["p50_ns", "p90_ns", "p99_ns", "p999_ns", "max_ns", "count"] {
                assert!(e[m][k].is_u64(), "{m}.{k}");
            }
        }
        for k in ["intended", "completed", "failed", "in_flight"] {
            assert!(e["requests"][k].is_u64(), "requests.{k}");
        }
    }
    assert_eq!(events[1]["requests"]["completed"], 195);
    assert_eq!(events[1]["achieved_per_s"], 100.0);
    let last = &events[2];
    assert_eq!(last["done"], true);
    assert_eq!(last["requests"]["completed"], 195);
    assert_eq!(last["summary"]["response_time"]["count"], 195);
}

#[test]
fn event_streams_beyond_the_limit_are_refused_politely_and_metrics_still_served() {
    let live = LiveServer::bind("127.0.0.1:0").unwrap();
    let a = live.addr();
    // Event streams stay open while nothing is published: each holds a thread.
    let mut streams = Vec::new();
    for _ in 0..candor_live::MAX_CLIENTS {
        let mut s = connect(a);
        s.write_all(b"GET /events HTTP/1.1\r\n\r\n").unwrap();
        let mut r = BufReader::new(s.try_clone().unwrap());
        let mut status = String::new();
        r.read_line(&mut status).unwrap();
        assert!(status.starts_with("HTTP/1.1 200"), "{status}");
        streams.push((s, r));
    }
    let refused = get_path(a, "/events");
    assert!(
        refused.starts_with("HTTP/1.1 503 Service Unavailable\r\n"),
        "{refused}"
    );
    // The streams take no slot of the page or the metrics.
    assert!(get_path(a, "/metrics").starts_with("HTTP/1.1 200"));
    // A client that goes away frees its slot.
    drop(streams.pop());
    // The keep-alive comes every 10 s; 60 s leaves a busy machine plenty of room.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        // The server notices the departure at its next write (the keep-alive comment) at the
        // latest; until then it may still refuse.
        let mut s = connect(a);
        s.write_all(b"GET /events HTTP/1.1\r\n\r\n").unwrap();
        let mut status = String::new();
        BufReader::new(s).read_line(&mut status).unwrap();
        if status.starts_with("HTTP/1.1 200") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "slot never freed");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Hundreds of clients that connect and say nothing, or send half a request and stall, cannot
/// shut a scraper out: the scrape is answered while they wait, long before any of them times
/// out (5 s), and past the connection limit the oldest idle ones are dropped.
#[test]
fn idle_and_slow_clients_cannot_shut_out_a_scrape() {
    let live = LiveServer::bind("127.0.0.1:0").unwrap();
    let a = live.addr();
    live.begin(info());
    let idle: Vec<TcpStream> = (0..600).map(|_| connect(a)).collect();
    let slow: Vec<TcpStream> = (0..100)
        .map(|_| {
            let mut s = connect(a);
            s.write_all(b"GET /metr").unwrap();
            s
        })
        .collect();
    let started = std::time::Instant::now();
    let m = get_path(a, "/metrics");
    let took = started.elapsed();
    assert!(m.starts_with("HTTP/1.1 200 OK\r\n"), "{m}");
    assert!(m.contains("candor_requests_intended_total"), "{m}");
    // Served at once, not after the idle clients' 5 s: the bound is that timeout.
    assert!(took < Duration::from_secs(5), "the scrape took {took:?}");
    // 700 connections against a limit of 512: the oldest idle ones were closed to make room.
    let mut first = idle[0].try_clone().unwrap();
    let mut byte = [0u8; 1];
    assert_eq!(first.read(&mut byte).expect("closed, not timed out"), 0);
    drop((idle, slow));
}

#[test]
fn bad_and_busy_addresses_are_errors() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    match LiveServer::bind(&addr) {
        Err(e @ LiveError::Bind { .. }) => {
            let text = e.to_string();
            assert!(text.contains(&addr) && text.contains("--live"), "{text}");
            assert!(!text.contains('\n'));
        }
        Err(e) => panic!("wrong error {e}"),
        Ok(_) => panic!("bound a busy address"),
    }
    for bad in ["nonsense", "127.0.0.1", "127.0.0.1:99999", ""] {
        assert!(
            matches!(LiveServer::bind(bad), Err(LiveError::Address(_))),
            "{bad:?} accepted"
        );
    }
}
