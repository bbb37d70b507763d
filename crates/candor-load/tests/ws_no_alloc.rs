//! Proves that WebSocket load threads allocate nothing per message in steady state, in order and
//! with `--ws-match json:FIELD` (numbers written into each message, replies matched by them),
//! against the testkit's echo server (which pings, so pongs are on the path too): the marked
//! allocation count must not move between two interval reports of a run of thousands of
//! messages.

mod steady_state;

use candor_load::protocol::ws::matching::WsMatch;
use candor_load::Target;
use candor_testkit::ws_server::{self, WsServerConfig};
use std::time::Duration;

/// The marked-allocation count is one for the whole process: the tests take turns.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[global_allocator]
static ALLOCATOR: candor_testkit::CountingAllocator = candor_testkit::CountingAllocator;

fn ws_run(matching: &str, rate: Option<f64>) -> (u64, u64) {
    let server = ws_server::start(WsServerConfig {
        ping_every: Some(Duration::from_millis(100)),
        ..Default::default()
    })
    .unwrap();
    let mut config = candor_load::RunPlan::new(
        Target::parse(&format!("ws://{}/", server.addr())).unwrap(),
        Default::default(),
    )
    .unwrap();
    config.shape = rate.map_or(
        candor_load::LoadShape::ClosedLoop,
        candor_load::LoadShape::constant,
    );
    config.connections = 8;
    config.threads = 2;
    config.body = br#"{"op":"echo","text":"a message of a few dozen bytes"}"#.to_vec();
    config.protocol = std::sync::Arc::new(candor_load::protocol::ws::unit::WebSocket {
        streams: candor_load::config::DEFAULT_STREAMS,
        matching: matching.parse::<WsMatch>().unwrap(),
        binary: false,
    });
    config.validate().unwrap();
    let (allocations, outcome) = steady_state::steady_state_allocations(config);
    (allocations, outcome.main.counts.completed)
}

#[test]
fn websocket_load_threads_do_not_allocate_per_message() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    for (matching, rate) in [
        ("order", Some(4000.0)),
        ("json:id", Some(4000.0)),
        ("order", None),
    ] {
        let (allocs, done) = ws_run(matching, rate);
        assert!(done >= 10_000, "{matching} {rate:?}: completed only {done}");
        assert_eq!(
            allocs, 0,
            "{matching} {rate:?}: WebSocket workers allocated {allocs} times in steady state"
        );
    }
}
