//! gRPC over the HTTP/2 engine against the tonic test server (`candor_grpc::test_server`, in
//! this process on a port it opened): a static message is encoded once before the run, so in
//! steady state the load thread allocates nothing per call, as for plain HTTP/2 (one method, or
//! several mixed by request lines); and the calls
//! the server fails are booked in class `grpc` by status name.

use candor_grpc::test_server::{InjectedFailure, TestServer, TestServerOptions};
use candor_load::load_run::RunOptions;
use candor_load::{RunPlan, Target};
use candor_runner::grpc_flags::{apply, GrpcFlags};
use std::sync::Arc;
use std::time::Duration;

#[global_allocator]
static ALLOCATOR: candor_testkit::CountingAllocator = candor_testkit::CountingAllocator;

const MS: u64 = 1_000_000;

fn proto() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../candor-grpc/tests/proto/bench.proto")
}

fn config(addr: std::net::SocketAddr) -> RunPlan {
    let mut c = candor_load::RunPlan::new(
        Target::parse(&format!("grpc://{addr}")).unwrap(),
        Default::default(),
    )
    .unwrap();
    c.threads = 1;
    c.connections = 2;
    c.body = br#"{"name":"alloc","seq":7,"tags":["a","b"],"inner":{"n":3}}"#.to_vec();
    let flags = GrpcFlags {
        call: Some("candor.bench.Bench/Echo".into()),
        proto: vec![proto()],
        headers: vec!["x-user: 7".into()],
        ..Default::default()
    };
    let grpc = apply(&flags, &mut c).expect("the call is prepared");
    c.protocol = std::sync::Arc::new(candor_load::protocol::http2::unit::Http2 {
        streams: 8,
        grpc: grpc.map(std::sync::Arc::new),
    });
    c.validate().expect("valid");
    c
}

/// Allocations per call on the load thread between 1.5 s and 3 s of a 3.5 s run at 4000/s
/// (connections and buffers are set up well before 1.5 s; the window holds rate × 1.5 s calls).
#[test]
fn no_allocations_per_call_with_a_static_message() {
    no_allocations_per_call(false);
}

/// The same with several static messages mixed by `--requests` lines (their own metadata and
/// weights, one of them server-streaming): each encoded once before the run.
#[test]
fn no_allocations_per_call_with_static_messages_of_several_lines() {
    no_allocations_per_call(true);
}

fn no_allocations_per_call(lines: bool) {
    // The count is of every marked thread: one measurement at a time.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (addr, _server) = TestServer::start(TestServerOptions {
        threads: 1,
        ..Default::default()
    })
    .unwrap();
    let mut c = if lines {
        let mut c = candor_load::RunPlan::new(
            Target::parse(&format!("grpc://{addr}")).unwrap(),
            Default::default(),
        )
        .unwrap();
        c.threads = 1;
        c.connections = 2;
        c.workload.lines = candor_load::requests::parse_request_lines(
            r#"{"call":"candor.bench.Bench/Echo","message":{"name":"a","seq":1},"weight":3}
{"name":"b","call":"candor.bench.Bench/Echo","message":{"name":"b","tags":["x"]},"headers":{"x-user":"8"}}
{"call":"candor.bench.Bench/Stream","message":{"name":"s","count":2}}"#,
        )
        .unwrap();
        c.requests = c.workload.lines.iter().map(|l| l.spec.clone()).collect();
        let flags = GrpcFlags {
            proto: vec![proto()],
            ..Default::default()
        };
        let grpc = apply(&flags, &mut c).expect("the calls are prepared");
        c.protocol = std::sync::Arc::new(candor_load::protocol::http2::unit::Http2 {
            streams: 8,
            grpc: grpc.map(std::sync::Arc::new),
        });
        c.validate().expect("valid");
        c
    } else {
        config(addr)
    };
    let rate = 4000.0;
    c.shape = candor_load::LoadShape::constant(rate);
    c.duration_ns = 3_500 * MS;
    let options = RunOptions {
        worker_start_hook: Some(Arc::new(candor_testkit::mark_this_thread)),
        ..Default::default()
    };
    let runner = std::thread::spawn(move || candor_load::run(&c, options, &mut |_| {}).unwrap());
    std::thread::sleep(Duration::from_millis(1500));
    let before = candor_testkit::marked_allocations();
    std::thread::sleep(Duration::from_millis(1500));
    let after = candor_testkit::marked_allocations();
    let out = runner.join().unwrap();
    let m = &out.main.counts;
    assert_eq!(m.failed, 0, "{m:?}");
    assert_eq!(m.completed, m.intended, "{m:?}");
    assert_eq!(
        out.main.reply_codes.get(candor_grpc::Code::Ok.as_u32()),
        m.completed,
        "each call counted by its grpc-status"
    );
    let per_call = (after - before) as f64 / (rate * 1.5);
    assert_eq!(per_call, 0.0, "{per_call} allocations per call");
}

#[test]
fn failed_statuses_are_the_grpc_class_with_their_latency() {
    let (addr, _server) = TestServer::start(TestServerOptions {
        failure: Some(InjectedFailure {
            code: candor_grpc::Code::ResourceExhausted,
            every: 2,
        }),
        ..Default::default()
    })
    .unwrap();
    let mut c = config(addr);
    c.shape = candor_load::LoadShape::constant(200.0);
    c.duration_ns = 1_000 * MS;
    let out = candor_load::run(&c, RunOptions::default(), &mut |_| {}).unwrap();
    let m = &out.main.counts;
    assert_eq!(m.intended, 200, "{m:?}");
    assert_eq!(
        (m.completed, m.errors.grpc, m.failed),
        (100, 100, 100),
        "{m:?}"
    );
    assert_eq!(
        out.main.recorder.response.len(),
        200,
        "failed calls keep their latency"
    );
    let codes = &out.main.reply_codes;
    assert_eq!(
        (
            codes.get(candor_grpc::Code::Ok.as_u32()),
            codes.get(candor_grpc::Code::ResourceExhausted.as_u32())
        ),
        (100, 100)
    );
    assert!(m.balanced(), "{m:?}");
}
