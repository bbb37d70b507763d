//! A loopback HTTP/2 server (cleartext, prior knowledge) for benchmarks and manual tries of
//! `candor run --h2`: tokio + the `h2` server API, answering every request 200 "ok" (the same
//! 2-byte body as `candor serve`). The same server the HTTP/2 tests use.
//!
//! `cargo run --release -p candor-load --example h2_server [ADDR] [--delay MS] [--tls CA.pem]
//! [--max-streams N]` (default 127.0.0.1:0); prints `listening on http://ADDR`. `--max-streams`
//! announces SETTINGS_MAX_CONCURRENT_STREAMS (0 shows what `candor run --h2` says about a server
//! that allows no streams). With `--tls`, it serves HTTP/2 over
//! TLS (ALPN `h2`) with a fresh self-signed certificate for 127.0.0.1 and localhost, written to
//! CA.pem for `candor run --h2 --ca CA.pem https://ADDR/`, and prints `https://ADDR`.

#[path = "../tests/h2_support/mod.rs"]
mod h2_support;

use std::time::Duration;

fn main() {
    let mut addr = "127.0.0.1:0".to_string();
    let mut opts = h2_support::ServerOptions::default();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--tls" {
            let Some(path) = args.next() else {
                eprintln!("h2_server: --tls needs a file to write the CA certificate to");
                std::process::exit(2);
            };
            match h2_support::TestCert::at(std::path::Path::new(&path)) {
                Ok(cert) => {
                    opts.tls = Some(cert.server_config(&[b"h2"]));
                    // The CA file must outlive the server: keep it for the life of the process.
                    std::mem::forget(cert);
                }
                Err(e) => {
                    eprintln!("h2_server: cannot write {path}: {e}");
                    std::process::exit(1);
                }
            }
        } else if a == "--delay" {
            match args.next().and_then(|v| v.parse::<u64>().ok()) {
                Some(ms) => opts.delay = Duration::from_millis(ms),
                None => {
                    eprintln!("h2_server: --delay needs a whole number of milliseconds");
                    std::process::exit(2);
                }
            }
        } else if a == "--max-streams" {
            match args.next().and_then(|v| v.parse::<u32>().ok()) {
                Some(n) => opts.max_concurrent_streams = Some(n),
                None => {
                    eprintln!("h2_server: --max-streams needs a whole number");
                    std::process::exit(2);
                }
            }
        } else {
            addr = a;
        }
    }
    let tls = opts.tls.is_some();
    let server = match h2_support::start_on(&addr, opts) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("h2_server: cannot listen on {addr}: {e}");
            std::process::exit(1);
        }
    };
    let scheme = if tls { "https" } else { "http" };
    println!("listening on {scheme}://{}", server.addr);
    loop {
        std::thread::park();
    }
}
