//! An open loop on plain HTTP/1.1 wakes once per request (its send's timer), not twice: the
//! responses that arrived since are read at the next send wake-up, each timed by the kernel's
//! receive timestamp (the exactness of those stamps is tested in `engine::rxstamp`).

use candor_load::load_run::RunOptions;
use candor_load::Target;

#[test]
fn responses_do_not_wake_an_open_loop_thread() {
    let server = candor_serve::start(candor_serve::ServeConfig::new(
        "127.0.0.1:0".parse().unwrap(),
    ))
    .unwrap();
    let mut config = candor_load::RunPlan::new(
        Target::parse(&format!("http://{}/", server.local_addr())).unwrap(),
        Default::default(),
    )
    .unwrap();
    config.shape = candor_load::LoadShape::constant(400.0);
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

/// A server that closes a keep-alive connection idle for 30 ms (as servers with an idle timeout
/// do) while an open loop's four connections each wait 100 ms between requests: every close is
/// read and the connection reopened before a request is written to it, so no request is charged
/// a failure that was only an idle connection's close. (The driver reads what arrived during a
/// sleep before it sends; a close that races a send, which needs the server thread held off for
/// the 70 ms before it, is the only way to fail here, so a couple of failures are allowed.)
#[test]
fn a_connection_closed_while_the_thread_slept_is_reopened_before_the_send() {
    use std::io::{Read, Write};
    use std::net::TcpListener;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = accepted.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            seen.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            std::thread::spawn(move || {
                stream
                    .set_read_timeout(Some(std::time::Duration::from_millis(30)))
                    .unwrap();
                let mut buf = [0u8; 4096];
                let mut have = Vec::new();
                loop {
                    match stream.read(&mut buf) {
                        Ok(0) | Err(_) => return, // idle for 30 ms (or closed): close
                        Ok(n) => have.extend_from_slice(&buf[..n]),
                    }
                    while let Some(end) = have.windows(4).position(|w| w == b"\r\n\r\n") {
                        have.drain(..end + 4);
                        let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
                    }
                }
            });
        }
    });
    let mut config = candor_load::RunPlan::new(
        Target::parse(&format!("http://{addr}/")).unwrap(),
        Default::default(),
    )
    .unwrap();
    config.shape = candor_load::LoadShape::constant(40.0);
    config.connections = 4;
    config.threads = 1;
    config.duration_ns = 2_000_000_000;
    config.validate().unwrap();
    let outcome = candor_load::run(&config, RunOptions::default(), &mut |_| {}).unwrap();
    let counts = &outcome.main.counts;
    assert_eq!(counts.intended, 80);
    assert_eq!(
        counts.intended,
        counts.completed + counts.failed + counts.in_flight_at_end
    );
    assert!(
        counts.failed <= 2,
        "{} of 80 requests failed on connections the server had closed while idle",
        counts.failed
    );
    // The server did close idle connections, so the reopening was needed.
    assert!(accepted.load(std::sync::atomic::Ordering::Relaxed) >= 40);
}
