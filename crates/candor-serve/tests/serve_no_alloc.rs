//! Checks that the server allocates nothing per request once warmed up, with and without a
//! delay, by counting every heap allocation in this test process. It lives in its own test
//! binary with a single test so that no other test's allocations are counted.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use candor_serve::{start, ServeConfig};

#[global_allocator]
static ALLOCATOR: candor_testkit::CountingAllocator = candor_testkit::CountingAllocator;

/// Sends `n` requests, `batch` pipelined at a time, and reads the answers; allocation-free on
/// the client side (stack buffers, std sockets).
fn exchange(stream: &mut TcpStream, n: usize, batch: usize) {
    const REQ: &[u8] = b"GET / HTTP/1.1\r\nHost: t\r\n\r\n";
    const RESP_LEN: usize = 66; // the default 2-byte-body answer
    let mut out = [0u8; REQ.len() * 8];
    for i in 0..batch {
        out[i * REQ.len()..(i + 1) * REQ.len()].copy_from_slice(REQ);
    }
    let mut buf = [0u8; RESP_LEN * 8];
    for _ in 0..n / batch {
        stream.write_all(&out[..REQ.len() * batch]).unwrap();
        let want = RESP_LEN * batch;
        let mut got = 0;
        while got < want {
            let k = stream.read(&mut buf[got..want]).unwrap();
            assert!(k > 0, "server closed the connection");
            got += k;
        }
        assert!(buf.starts_with(b"HTTP/1.1 200 OK\r\n"));
    }
}

#[test]
fn steady_state_requests_allocate_nothing() {
    for delay_ns in [0, 100_000] {
        let mut config = ServeConfig::new("127.0.0.1:0".parse().unwrap());
        config.delay_ns = delay_ns;
        let server = start(config).unwrap();
        let mut a = TcpStream::connect(server.local_addr()).unwrap();
        let mut b = TcpStream::connect(server.local_addr()).unwrap();
        for s in [&a, &b] {
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            s.set_nodelay(true).unwrap();
        }
        // Warm-up: connection slots, buffers and queues reach their working size.
        exchange(&mut a, 200, 1);
        exchange(&mut a, 200, 8);
        exchange(&mut b, 200, 8);
        let before = candor_testkit::total_allocations();
        exchange(&mut a, 2000, 1);
        exchange(&mut b, 2000, 8);
        exchange(&mut a, 2000, 4);
        let during = candor_testkit::total_allocations() - before;
        // 6000 requests: one allocation per request would show as thousands. The count is
        // process-wide, so the bound is exact only because nothing else runs meanwhile.
        assert_eq!(
            during, 0,
            "{during} allocations for 6000 requests (delay {delay_ns} ns)"
        );
        server.shutdown();
    }
}
