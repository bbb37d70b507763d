//! A loopback HTTP/2 server (cleartext, prior knowledge) for benchmarks and manual tries of
//! `candor run --h2`: tokio + the `h2` server API, answering every request 200 "ok" (the same
//! 2-byte body as `candor serve`). The same server the HTTP/2 tests use.
//!
//! `cargo run --release -p candor-load --example h2_server [ADDR] [--delay MS]` (default
//! 127.0.0.1:0); prints `listening on http://ADDR`.

#[path = "../tests/h2_support/mod.rs"]
mod h2_support;

use std::time::Duration;

fn main() {
    let mut addr = "127.0.0.1:0".to_string();
    let mut opts = h2_support::ServerOptions::default();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--delay" {
            match args.next().and_then(|v| v.parse::<u64>().ok()) {
                Some(ms) => opts.delay = Duration::from_millis(ms),
                None => {
                    eprintln!("h2_server: --delay needs a whole number of milliseconds");
                    std::process::exit(2);
                }
            }
        } else {
            addr = a;
        }
    }
    let server = match h2_support::start_on(&addr, opts) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("h2_server: cannot listen on {addr}: {e}");
            std::process::exit(1);
        }
    };
    println!("listening on http://{}", server.addr);
    loop {
        std::thread::park();
    }
}
