//! The accepted-status set is applied by the shared ledger, so every engine books an unaccepted
//! response the same way: a `status` failure with its latency recorded. Both test servers answer
//! 200; accepting only 3xx makes every one of their responses unacceptable.

mod h2_support;

use candor_load::{RunPlan, StatusSet, Target};

fn check(mut c: RunPlan) {
    c.shape = candor_load::LoadShape::constant(200.0);
    c.threads = 1;
    c.connections = 1;
    c.duration_ns = 500_000_000;
    c.accept_status = StatusSet::parse("3xx").unwrap();
    c.validate().unwrap();
    let out = candor_load::run(&c, Default::default(), &mut |_| {}).unwrap();
    let m = &out.main.counts;
    assert!(m.balanced(), "{m:?}");
    assert!(m.intended > 0);
    // By construction: every response is a 200, so every response is a status failure.
    assert_eq!(m.completed, 0, "{m:?}");
    assert_eq!(m.errors.status, m.status.s2xx, "{m:?}");
    assert_eq!(m.failed, m.errors.status, "{m:?}");
    assert_eq!(out.main.recorder.response.len(), m.errors.status);
    assert!(m.errors.status > 0);
}

#[test]
fn http1_books_unaccepted_statuses_as_status_failures() {
    let server = candor_serve::start(candor_serve::ServeConfig::new(
        "127.0.0.1:0".parse().unwrap(),
    ))
    .unwrap();
    check(
        candor_load::RunPlan::new(
            Target::parse(&format!("http://{}/", server.local_addr())).unwrap(),
            Default::default(),
        )
        .unwrap(),
    );
    server.shutdown();
}

#[test]
fn http2_books_unaccepted_statuses_as_status_failures() {
    let server = h2_support::start(h2_support::ServerOptions::default());
    let mut c = candor_load::RunPlan::new(
        Target::parse(&format!("http://{}/", server.addr)).unwrap(),
        Default::default(),
    )
    .unwrap();
    c.protocol = std::sync::Arc::new(candor_load::protocol::http2::unit::Http2 {
        streams: candor_load::config::DEFAULT_STREAMS,
        grpc: None,
    });
    check(c);
}
