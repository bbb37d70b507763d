//! The connection pool opens before the first intended send: by the run's start instant every
//! connection is established (so the measured window starts with a ready pool), and the pool is
//! reported on its own; an open loop also reports what its pacing cost.

use candor_core::results::PacingMargin;
use candor_load::load_run::RunOptions;
use candor_load::{RunPlan, Target};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Established TCP sockets in this network namespace whose remote port is `port`: the client
/// sides of connections to a local server on it (from /proc/net/tcp and tcp6).
fn established_to(port: u16) -> usize {
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .flat_map(|text| {
            text.lines()
                .skip(1)
                .filter(|line| {
                    let f: Vec<&str> = line.split_whitespace().collect();
                    // f[2] is the remote address "ADDR:PORT" in hex, f[3] the state (01 = ESTABLISHED).
                    f.len() > 3
                        && f[3] == "01"
                        && f[2]
                            .rsplit(':')
                            .next()
                            .and_then(|h| u16::from_str_radix(h, 16).ok())
                            == Some(port)
                })
                .map(|_| ())
                .collect::<Vec<_>>()
        })
        .count()
}

fn config_for(server: &candor_serve::ServerHandle, connections: usize) -> RunPlan {
    let mut config = candor_load::RunPlan::new(
        Target::parse(&format!("http://{}/", server.local_addr())).unwrap(),
        Default::default(),
    )
    .unwrap();
    config.shape = candor_load::LoadShape::constant(200.0);
    config.connections = connections;
    config.threads = 2;
    config.duration_ns = 500_000_000;
    config.validate().unwrap();
    config
}

#[test]
fn every_connection_is_established_before_the_first_send_and_reported_apart() {
    let server = candor_serve::start(candor_serve::ServeConfig::new(
        "127.0.0.1:0".parse().unwrap(),
    ))
    .unwrap();
    let port = server.local_addr().port();
    // More than a thread opens at once (128), so the pool opens in waves.
    let connections = 300;
    let config = config_for(&server, connections);
    let at_start = Arc::new(AtomicUsize::new(usize::MAX));
    let seen = at_start.clone();
    let options = RunOptions {
        // Called once the start is set, before any send: the pools must be open by then.
        on_start: Some(Arc::new(move |_| {
            seen.store(established_to(port), Ordering::SeqCst)
        })),
        ..RunOptions::default()
    };
    let outcome = candor_load::run(&config, options, &mut |_| {}).unwrap();
    server.shutdown();
    // Other tests' connections to other ports do not count; ours are all up.
    assert_eq!(at_start.load(Ordering::SeqCst), connections);
    let pool = outcome.pool.expect("an HTTP/1.1 run reports its pool");
    assert_eq!(
        (pool.connections, pool.ready, pool.not_ready),
        (connections as u64, connections as u64, 0)
    );
    assert_eq!(pool.connect_time.count, connections as u64);
    assert!(pool.open_s > 0.0);
    // No connection was opened again during the run.
    assert_eq!(outcome.main.counts.connections_opened, connections as u64);
    let pacing = outcome.pacing.expect("an open loop reports its pacing");
    assert_eq!(pacing.margin, PacingMargin::Adaptive);
    assert!((0.0..=1.0).contains(&pacing.spin_share));
}

#[test]
fn a_fixed_spin_is_reported_as_such_and_a_closed_loop_reports_no_pacing() {
    let server = candor_serve::start(candor_serve::ServeConfig::new(
        "127.0.0.1:0".parse().unwrap(),
    ))
    .unwrap();
    let mut config = config_for(&server, 4);
    config.spin_ns = Some(0);
    let outcome = candor_load::run(&config, RunOptions::default(), &mut |_| {}).unwrap();
    let pacing = outcome.pacing.unwrap();
    assert_eq!(pacing.margin, PacingMargin::Fixed);
    assert_eq!(pacing.margin_us, 0.0);
    // --spin 0 never spins: every wait is a sleep on the timer.
    assert_eq!(pacing.spin_s, 0.0);
    config.shape = candor_load::LoadShape::ClosedLoop;
    config.duration_ns = 200_000_000;
    let closed = candor_load::run(&config, RunOptions::default(), &mut |_| {}).unwrap();
    server.shutdown();
    assert!(closed.pacing.is_none());
    assert_eq!(closed.pool.unwrap().ready, 4);
}
