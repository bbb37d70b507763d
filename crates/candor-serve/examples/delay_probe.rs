//! Measures how closely the server's fixed service time holds under closed-loop load:
//! `cargo run --release -p candor-serve --example delay_probe -- DELAY_US CONNECTIONS SECONDS`.
//! Prints throughput against the ideal capacity (connections / delay) and the latency
//! percentiles seen by blocking clients (one thread per connection).

use std::io::{Read, Write};
use std::net::TcpStream;

use candor_core::now_ns;
use candor_serve::{start, ServeConfig};

fn main() {
    let args: Result<Vec<u64>, _> = std::env::args().skip(1).map(|a| a.parse()).collect();
    let (delay_us, conns, secs) = match args.as_deref() {
        Ok([d, c, s]) if *d > 0 && *c > 0 && *s > 0 => (*d, *c, *s),
        Ok([]) => (1000, 10, 3),
        _ => {
            eprintln!("usage: delay_probe DELAY_US CONNECTIONS SECONDS (positive integers)");
            std::process::exit(2);
        }
    };
    let mut config = ServeConfig::new("127.0.0.1:0".parse().unwrap());
    config.delay_ns = delay_us * 1000;
    let server = start(config).expect("server starts");
    let addr = server.local_addr();
    let end = now_ns() + secs * 1_000_000_000;
    let threads: Vec<_> = (0..conns)
        .map(|_| {
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(addr).unwrap();
                s.set_nodelay(true).unwrap();
                let req = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";
                let mut buf = [0u8; 256];
                let mut lat = Vec::new();
                while now_ns() < end {
                    let t0 = now_ns();
                    s.write_all(req).unwrap();
                    // The default response is 66 bytes and arrives in one segment on loopback.
                    let mut got = 0;
                    while got < 66 {
                        got += s.read(&mut buf[got..]).unwrap();
                    }
                    lat.push(now_ns() - t0);
                }
                lat
            })
        })
        .collect();
    let mut all: Vec<u64> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    all.sort_unstable();
    let pct = |q: f64| all[((all.len() - 1) as f64 * q) as usize] as f64 / 1000.0;
    let rate = all.len() as f64 / secs as f64;
    let capacity = conns as f64 * 1e6 / delay_us as f64;
    println!(
        "delay {delay_us} us, {conns} connections: {rate:.0} req/s = {:.1}% of capacity {capacity:.0}/s; \
         latency us p50 {:.1} p90 {:.1} p99 {:.1} p99.9 {:.1} max {:.1}",
        100.0 * rate / capacity,
        pct(0.5),
        pct(0.9),
        pct(0.99),
        pct(0.999),
        pct(1.0)
    );
}
