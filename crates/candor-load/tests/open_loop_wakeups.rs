//! An open loop on plain HTTP/1.1 wakes once per request (its send's timer), not twice: the
//! responses that arrived since are read at the next send wake-up, each timed by the kernel's
//! receive timestamp (the exactness of those stamps is tested in `engine::rxstamp`).

use candor_load::run::RunOptions;
use candor_load::{LoadConfig, Target};

#[test]
fn responses_do_not_wake_an_open_loop_thread() {
    let server = candor_serve::start(candor_serve::ServeConfig::new(
        "127.0.0.1:0".parse().unwrap(),
    ))
    .unwrap();
    let mut config =
        LoadConfig::new(Target::parse(&format!("http://{}/", server.local_addr())).unwrap());
    config.rate = Some(400.0);
    config.connections = 8;
    config.threads = 1;
    config.duration_ns = 1_000_000_000;
    config.validate().unwrap();
    let outcome = candor_load::run(&config, RunOptions::default(), &mut |_| {}).unwrap();
    server.shutdown();
    let counts = &outcome.main.counts;
    assert_eq!(counts.completed, 400);
    let pacing = outcome.pacing.expect("an open loop reports its pacing");
    // A socket may still end a wait before the kernel's first stamp has been seen (the first
    // responses), and in the drain, where a response is all there is to wait for (at most one
    // per connection): at most 8 + 8, doubled for slack. A thread woken by every response
    // would count about one per request (400 here).
    assert!(
        pacing.socket_wakeups <= 32,
        "{} waits of 400 requests were ended by a socket",
        pacing.socket_wakeups
    );
}
