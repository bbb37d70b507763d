//! HTTP/3's pre-run check: one QUIC handshake (TLS 1.3, ALPN `h3`, the run's `--ca` and
//! `--insecure`) on a blocking UDP socket, bounded by the timeout, so that a port nobody
//! listens on, a server that does not speak QUIC, or a certificate the client refuses is one
//! clear error before any load, not a run of failures.

use super::quic::{Quic, QuicSetup};
use candor_engine::config::LoadConfig;
use candor_engine::seam::unit::ProbeFailure;
use candor_engine::transport::datagram;
use candor_engine::transport::tls::TlsError;
use quinn_proto::{ConnectionError, Event};
use std::io;
use std::net::UdpSocket;
use std::sync::Arc;
use std::time::Duration;

/// The advice for a certificate candor refused (as over HTTPS).
const TRUST_HINT: &str = "use --ca FILE to trust it, or -k/--insecure to skip checks";

/// One QUIC handshake with the target within `timeout`, closed in good form.
pub fn probe(config: &LoadConfig, timeout: Duration) -> Result<(), ProbeFailure> {
    let addr = config.target.addr;
    let failed = |why: String| ProbeFailure::Tls(TlsError::Handshake(addr, why));
    let client = super::client_config(config).map_err(|e| match e {
        super::Http3Error::Tls(t) => ProbeFailure::Tls(t),
        other => ProbeFailure::Protocol(other.to_string()),
    })?;
    let setup = QuicSetup {
        client,
        endpoint: Arc::new(quinn_proto::EndpointConfig::default()),
        peer: addr,
        server_name: config.target.host.clone(),
    };
    let socket = UdpSocket::bind(if addr.is_ipv4() {
        "0.0.0.0:0"
    } else {
        "[::]:0"
    })
    .and_then(|s| s.connect(addr).map(|_| s))
    .map_err(|e| failed(format!("cannot open a UDP socket to it: {e}")))?;
    let start = candor_core::now_ns();
    let deadline = start + timeout.as_nanos() as u64;
    let mut quic =
        Quic::connect(&setup, start).map_err(|e| failed(format!("QUIC refused to start: {e}")))?;
    let mut out = Vec::new();
    let mut buf = vec![0u8; 65536];
    loop {
        let now = candor_core::now_ns();
        out.clear();
        quic.transmit(&mut out, now);
        send_all(&socket, &out).map_err(|e| failed(io_words(&e)))?;
        while let Some(event) = quic.conn.poll() {
            match event {
                Event::Connected => {
                    let code = quinn_proto::VarInt::from_u32(0x100);
                    quic.conn
                        .close(quic.instant(now), code, bytes::Bytes::new());
                    out.clear();
                    quic.transmit(&mut out, now);
                    let _ = send_all(&socket, &out);
                    return Ok(());
                }
                Event::ConnectionLost { reason } => return Err(failed(loss_words(&reason))),
                _ => {}
            }
        }
        if now >= deadline {
            return Err(failed(format!(
                "the server did not answer the QUIC handshake within {} (is HTTP/3 on, on this UDP port?)",
                candor_core::units::format_ns(timeout.as_nanos() as f64)
            )));
        }
        let wake = quic.wake_at().min(deadline);
        let wait = Duration::from_nanos(wake.saturating_sub(now).max(1_000_000));
        socket
            .set_read_timeout(Some(wait))
            .map_err(|e| failed(e.to_string()))?;
        match socket.recv(&mut buf) {
            Ok(n) => quic.receive(&buf[..n], candor_core::now_ns()),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                quic.timeout(candor_core::now_ns());
            }
            Err(e) => return Err(failed(io_words(&e))),
        }
    }
}

/// Sends the datagrams of an out buffer.
fn send_all(socket: &UdpSocket, mut out: &[u8]) -> io::Result<()> {
    while out.len() >= datagram::LENGTH_BYTES {
        let len = u16::from_be_bytes([out[0], out[1]]) as usize;
        let end = (datagram::LENGTH_BYTES + len).min(out.len());
        socket.send(&out[datagram::LENGTH_BYTES..end])?;
        out = &out[end..];
    }
    Ok(())
}

fn io_words(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::ConnectionRefused => {
            "nothing listens on its UDP port (ICMP port unreachable)".into()
        }
        _ => e.to_string(),
    }
}

/// Why the handshake ended, in words a person can act on.
fn loss_words(reason: &ConnectionError) -> String {
    match reason {
        ConnectionError::TransportError(e) if e.reason.contains("certificate") => {
            format!("{} ({TRUST_HINT})", e.reason)
        }
        ConnectionError::TransportError(e) if !e.reason.is_empty() => e.reason.clone(),
        other => format!("QUIC: {other}"),
    }
}
