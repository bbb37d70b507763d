//! A loopback TCP echo server for benchmarks and manual tries of `candor run tcp://...`:
//! one thread per connection, everything received is sent straight back.
//!
//! `cargo run --release -p candor-load --example echo_server [ADDR]` (default 127.0.0.1:0);
//! prints `listening on tcp://ADDR`.

use std::io::{Read, Write};
use std::net::TcpListener;

fn main() {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:0".into());
    let listener = match TcpListener::bind(&addr) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("echo_server: cannot listen on {addr}: {e}");
            std::process::exit(1);
        }
    };
    println!(
        "listening on tcp://{}",
        listener.local_addr().expect("bound")
    );
    for stream in listener.incoming().flatten() {
        std::thread::spawn(move || {
            let mut s = stream;
            let _ = s.set_nodelay(true);
            let mut buf = [0u8; 16384];
            while let Ok(n) = s.read(&mut buf) {
                if n == 0 || s.write_all(&buf[..n]).is_err() {
                    return;
                }
            }
        });
    }
}
