//! A loopback HTTPS (HTTP/1.1 keep-alive) server with a freshly generated self-signed
//! certificate, for benchmarks and manual tries of `candor run https://...`: one thread per
//! connection, every request answered `200 ok`.
//!
//! `cargo run --release -p candor-load --example tls_server [ADDR] [CERT_OUT.pem]`; prints
//! `listening on https://localhost:PORT/` and writes the certificate (for `--ca`) if asked.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::Arc;

fn main() {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:0".into());
    let cert_out = args.next();
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()])
        .expect("generate certificate");
    if let Some(path) = &cert_out {
        if let Err(e) = std::fs::write(path, cert.cert.pem()) {
            eprintln!("tls_server: cannot write {path}: {e}");
            std::process::exit(1);
        }
    }
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(cert.key_pair.serialize_der().into());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = Arc::new(
        rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_no_client_auth()
            .with_single_cert(vec![cert.cert.der().clone()], key)
            .expect("certificate"),
    );
    let listener = match TcpListener::bind(&addr) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("tls_server: cannot listen on {addr}: {e}");
            std::process::exit(1);
        }
    };
    let port = listener.local_addr().expect("bound").port();
    println!("listening on https://localhost:{port}/");
    for stream in listener.incoming().flatten() {
        let config = config.clone();
        std::thread::spawn(move || {
            let _ = stream.set_nodelay(true);
            let Ok(conn) = rustls::ServerConnection::new(config) else {
                return;
            };
            let mut reader = BufReader::new(rustls::StreamOwned::new(conn, stream));
            let mut line = String::new();
            loop {
                line.clear();
                match reader.read_line(&mut line) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
                if line == "\r\n" {
                    let w = reader.get_mut();
                    if w.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                        .is_err()
                        || w.flush().is_err()
                    {
                        return;
                    }
                }
            }
        });
    }
}
