//! HTTP/2's pre-run check: one blocking connection that proves the target speaks HTTP/2 (by ALPN
//! or prior knowledge, with a usable SETTINGS_MAX_CONCURRENT_STREAMS), so that a run in which
//! nothing could work is one clear error before any load, not a report full of failures.

use candor_engine::config::{LoadConfig, Scheme};
use candor_engine::seam::unit::ProbeFailure;
use candor_engine::transport::tls;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// The client's HTTP/2 connection preface (RFC 9113 section 3.4) and an empty SETTINGS frame.
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00";
const FRAME_HEADER: usize = 9;
const SETTINGS: u8 = 0x4;
const GOAWAY: u8 = 0x7;
const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 0x3;
/// SETTINGS_MAX_FRAME_SIZE's floor: the largest frame a server may send before it knows ours.
const MAX_FIRST_FRAME: usize = 16_384;

/// What the first bytes a server sent after our HTTP/2 preface say.
#[derive(Debug, PartialEq, Eq)]
pub enum H2Answer {
    /// Not enough bytes yet to tell.
    NeedMore,
    /// A SETTINGS frame, as RFC 9113 requires first; with its stream limit if it sent one.
    Settings { max_concurrent_streams: Option<u32> },
    /// An HTTP/1.x response: the server does not speak HTTP/2 here. Holds its status line.
    Http1(String),
    /// A GOAWAY first: the server speaks HTTP/2 and refuses the connection, with this code.
    GoAway { code: u32 },
    /// Something else: not an HTTP/2 server.
    NotH2,
}

/// Judges the server's first bytes after the client preface (pure, so it is tested exactly).
pub fn judge_h2_answer(bytes: &[u8]) -> H2Answer {
    if bytes.starts_with(b"HTTP/") || (bytes.len() < 5 && b"HTTP/".starts_with(bytes)) {
        return match bytes.iter().position(|&b| b == b'\n') {
            Some(end) => H2Answer::Http1(
                String::from_utf8_lossy(&bytes[..end])
                    .trim_end()
                    .to_string(),
            ),
            // A status line is short; 200 bytes without one is still HTTP/1, just odd.
            None if bytes.len() >= 200 => {
                H2Answer::Http1(String::from_utf8_lossy(&bytes[..40]).trim_end().to_string())
            }
            None => H2Answer::NeedMore,
        };
    }
    if bytes.len() < FRAME_HEADER {
        return H2Answer::NeedMore;
    }
    let len = u32::from_be_bytes([0, bytes[0], bytes[1], bytes[2]]) as usize;
    let (kind, flags) = (bytes[3], bytes[4]);
    let stream = u32::from_be_bytes([bytes[5], bytes[6], bytes[7], bytes[8]]) & 0x7fff_ffff;
    if kind == GOAWAY && stream == 0 && (8..=MAX_FIRST_FRAME).contains(&len) {
        let Some(p) = bytes.get(FRAME_HEADER..FRAME_HEADER + 8) else {
            return H2Answer::NeedMore;
        };
        return H2Answer::GoAway {
            code: u32::from_be_bytes([p[4], p[5], p[6], p[7]]),
        };
    }
    // The server's preface is a SETTINGS frame without ACK on stream 0, 6 bytes per setting.
    if kind != SETTINGS
        || flags & 0x1 != 0
        || stream != 0
        || !len.is_multiple_of(6)
        || len > MAX_FIRST_FRAME
    {
        return H2Answer::NotH2;
    }
    let Some(payload) = bytes.get(FRAME_HEADER..FRAME_HEADER + len) else {
        return H2Answer::NeedMore;
    };
    // A setting sent twice counts by its last value (RFC 9113 section 6.5).
    let max_concurrent_streams = payload
        .chunks_exact(6)
        .filter(|s| u16::from_be_bytes([s[0], s[1]]) == SETTINGS_MAX_CONCURRENT_STREAMS)
        .map(|s| u32::from_be_bytes([s[2], s[3], s[4], s[5]]))
        .next_back();
    H2Answer::Settings {
        max_concurrent_streams,
    }
}

/// HTTP/2's pre-run probe: over TLS, that the server chooses `h2` by ALPN; then, over TLS or in
/// the clear (prior knowledge), that it answers the connection preface with SETTINGS allowing
/// at least one stream.
pub fn probe(config: &LoadConfig, timeout: Duration) -> Result<(), ProbeFailure> {
    let t = &config.target;
    let preface = |reason: PrefaceError| ProbeFailure::Protocol(reason.to_string());
    if t.scheme == Scheme::Https {
        let client = tls::client_config(&config.tls, &[b"h2"])?;
        let mut stream = tls::handshake(&client, &config.tls, &t.host, t.addr, timeout)?;
        let chosen = stream.conn.alpn_protocol();
        if chosen != Some(b"h2".as_slice()) {
            let did = chosen.map_or("chose no protocol".into(), |p| {
                format!("chose '{}'", String::from_utf8_lossy(p))
            });
            return Err(ProbeFailure::Protocol(format!(
                "the server does not speak HTTP/2 over TLS: candor offered 'h2' by ALPN and the server {did}; \
                 drop --h2 to test it with HTTP/1.1"
            )));
        }
        stream.sock.restart(timeout);
        h2_handshake(&mut stream, timeout, false).map_err(preface)?;
        stream.conn.send_close_notify();
        let _ = stream.conn.complete_io(&mut stream.sock);
        return Ok(());
    }
    let sock = TcpStream::connect_timeout(&t.addr, timeout)
        .map_err(|e| ProbeFailure::Protocol(format!("cannot connect: {e}")))?;
    h2_handshake(&mut tls::Recording::new(sock, timeout), timeout, true).map_err(preface)
}

/// Why the server's answer to the HTTP/2 preface rules out an HTTP/2 run; `cleartext`: h2c with
/// prior knowledge (the advice differs from HTTP/2 over TLS).
#[derive(Debug, thiserror::Error)]
pub enum PrefaceError {
    #[error("sending the HTTP/2 connection preface failed: {0}")]
    Send(io::Error),
    #[error("the server allows no HTTP/2 streams at all (SETTINGS_MAX_CONCURRENT_STREAMS = 0): no request could be sent; raise the server's stream limit")]
    NoStreams,
    #[error("the server answered the HTTP/2 preface in HTTP/1 ('{status}'): {}", drop_h2(.cleartext))]
    Http1 { status: String, cleartext: bool },
    #[error("the server refused the HTTP/2 connection: it answered the preface with GOAWAY {} before any request, so nothing could be sent", goaway_name(.code))]
    GoAway { code: u32 },
    #[error("the server's answer to the HTTP/2 preface is not HTTP/2: {}", drop_h2(.cleartext))]
    NotH2 { cleartext: bool },
    #[error("the server closed the connection on the HTTP/2 preface: {}", drop_h2(.cleartext))]
    Closed { cleartext: bool },
    #[error("the server did not answer the HTTP/2 preface within {}: {}", candor_core::units::format_ns(.timeout.as_nanos() as f64), drop_h2(.cleartext))]
    Silent { timeout: Duration, cleartext: bool },
    /// It began to answer, and had not finished when the time was up.
    #[error("the server's answer to the HTTP/2 preface was not complete within {} (it came too slowly)", candor_core::units::format_ns(.timeout.as_nanos() as f64))]
    Slow { timeout: Duration },
    #[error("the connection failed on the HTTP/2 preface ({error}): {}", drop_h2(.cleartext))]
    Failed { error: io::Error, cleartext: bool },
}

/// What to do about a server that does not speak HTTP/2 where the run would.
fn drop_h2(cleartext: &bool) -> &'static str {
    if *cleartext {
        "it does not speak HTTP/2 in the clear (h2c with prior knowledge); drop --h2, or use https:// if it offers HTTP/2 over TLS"
    } else {
        "drop --h2 to test it with HTTP/1.1"
    }
}

fn goaway_name(code: &u32) -> &'static str {
    super::faults::h2_code_name(*code)
}

/// Sends the HTTP/2 preface and reads the server's first frame; `cleartext` is h2c with prior
/// knowledge (the advice differs from HTTP/2 over TLS).
fn h2_handshake<S: Read + Write>(
    sock: &mut S,
    timeout: Duration,
    cleartext: bool,
) -> Result<(), PrefaceError> {
    sock.write_all(H2_PREFACE)
        .and_then(|()| sock.flush())
        .map_err(PrefaceError::Send)?;
    let mut got = Vec::with_capacity(256);
    let mut buf = [0u8; 4096];
    loop {
        match judge_h2_answer(&got) {
            H2Answer::NeedMore => {}
            H2Answer::Settings {
                max_concurrent_streams: Some(0),
            } => return Err(PrefaceError::NoStreams),
            H2Answer::Settings { .. } => return Ok(()),
            H2Answer::Http1(status) => return Err(PrefaceError::Http1 { status, cleartext }),
            H2Answer::GoAway { code } => return Err(PrefaceError::GoAway { code }),
            H2Answer::NotH2 => return Err(PrefaceError::NotH2 { cleartext }),
        }
        match sock.read(&mut buf) {
            Ok(0) => return Err(PrefaceError::Closed { cleartext }),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err(if got.is_empty() {
                    PrefaceError::Silent { timeout, cleartext }
                } else {
                    PrefaceError::Slow { timeout }
                })
            }
            Err(e) => {
                return Err(PrefaceError::Failed {
                    error: e,
                    cleartext,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candor_engine::config::TlsOptions;
    use std::net::TcpListener;
    use std::time::Instant;

    /// A server for one connection: reads what the client sends first, then `serve`s it.
    fn one_shot(serve: impl FnOnce(TcpStream) + Send + 'static) -> std::net::SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            serve(s);
        });
        addr
    }

    /// Writes `head`, then the bytes of `rest` one every 100 ms, for at most 6 s (so that the
    /// check without a total deadline ended too, after 6 s, not after `rest`'s minutes).
    fn trickle(mut s: TcpStream, head: &[u8], rest: usize) {
        let until = Instant::now() + Duration::from_secs(6);
        if s.write_all(head).is_err() {
            return;
        }
        for _ in 0..rest {
            if Instant::now() > until || s.write_all(&[0]).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn insecure() -> (std::sync::Arc<rustls::ClientConfig>, TlsOptions) {
        let opts = TlsOptions {
            insecure: true,
            ca_file: None,
        };
        (tls::client_config(&opts, &[]).unwrap(), opts)
    }

    /// A handshake trickled a byte every 100 ms, each read well within the timeout: the check
    /// ends at its 500 ms in all (it took as long as the server kept trickling). The bound:
    /// 500 ms and 2.5 s for a busy machine, below the 6 s the trickle lasts.
    #[test]
    fn a_handshake_trickled_to_the_probe_is_bounded_in_total() {
        let addr = one_shot(|s| trickle(s, &[22, 3, 3, 0x3e, 0x80], 16_000));
        let (config, opts) = insecure();
        let began = Instant::now();
        let err = tls::handshake(
            &config,
            &opts,
            "localhost",
            addr,
            Duration::from_millis(500),
        )
        .err()
        .expect("no handshake");
        assert!(
            began.elapsed() < Duration::from_secs(3),
            "{:?}",
            began.elapsed()
        );
        let said = err.to_string();
        assert!(
            said.contains("did not complete the TLS handshake within 500"),
            "{said}"
        );
    }

    /// The same for an HTTP/2 SETTINGS frame (100 settings) trickled to the preface check.
    #[test]
    fn a_settings_frame_trickled_to_the_probe_is_bounded_in_total() {
        let addr = one_shot(|s| trickle(s, &[0, 2, 0x58, SETTINGS, 0, 0, 0, 0, 0], 600));
        let sock = TcpStream::connect(addr).unwrap();
        let timeout = Duration::from_millis(500);
        let began = Instant::now();
        let err = h2_handshake(&mut tls::Recording::new(sock, timeout), timeout, true).unwrap_err();
        assert!(
            began.elapsed() < Duration::from_secs(3),
            "{:?}",
            began.elapsed()
        );
        assert!(matches!(err, PrefaceError::Slow { .. }), "{err}");
    }

    /// A server that closes halfway through its handshake is named as such, not as an
    /// "unexpected end of file".
    #[test]
    fn a_probe_closed_halfway_through_the_handshake_says_so() {
        let addr = one_shot(|mut s| {
            let _ = s.write_all(&[22, 3, 3, 0, 90, 2, 0, 0, 86, 3, 3]);
        });
        let (config, opts) = insecure();
        let err = tls::handshake(&config, &opts, "localhost", addr, Duration::from_secs(5))
            .err()
            .expect("no handshake");
        let said = err.to_string();
        assert!(
            said.contains("closed the connection in the middle of the TLS handshake"),
            "{said}"
        );
    }

    /// A certificate for "localhost" carrying `padding` bytes in an extension of no meaning (a
    /// private OID, not critical: verifiers skip it), for certificate messages of a chosen size.
    pub fn padded_identity(
        padding: usize,
    ) -> (
        Vec<rustls::pki_types::CertificateDer<'static>>,
        rustls::pki_types::PrivateKeyDer<'static>,
    ) {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(vec!["localhost".to_string()]).unwrap();
        params
            .custom_extensions
            .push(rcgen::CustomExtension::from_oid_content(
                &[1, 3, 6, 1, 4, 1, 55555, 1],
                octet_string(padding),
            ));
        let cert = params.self_signed(&key).unwrap();
        (
            vec![cert.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
        )
    }

    /// A DER OCTET STRING of `len` bytes (its contents are opaque to every parser).
    fn octet_string(len: usize) -> Vec<u8> {
        let mut der = vec![0x04, 0x83, (len >> 16) as u8, (len >> 8) as u8, len as u8];
        der.resize(der.len() + len, 0x5a);
        der
    }

    /// A 200 KB certificate chain is named for what it is, not "not TLS (plain HTTP?)".
    #[test]
    fn a_certificate_chain_over_64_kib_is_named() {
        let (mut chain, key) = padded_identity(50_000);
        for _ in 0..3 {
            chain.push(padded_identity(50_000).0.remove(0));
        }
        let server = rustls::ServerConfig::builder_with_provider(std::sync::Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let mut conn = rustls::ServerConnection::new(std::sync::Arc::new(server)).unwrap();
            while conn.is_handshaking() {
                if conn.complete_io(&mut s).is_err() {
                    return;
                }
            }
        });
        let (config, opts) = insecure();
        let err = tls::handshake(&config, &opts, "localhost", addr, Duration::from_secs(5))
            .err()
            .expect("no handshake");
        let said = err.to_string();
        assert!(said.contains("over the 64 KiB"), "{said}");
        assert!(!said.contains("plain-HTTP"), "{said}");
    }

    fn settings(pairs: &[(u16, u32)]) -> Vec<u8> {
        let len = pairs.len() * 6;
        let mut f = vec![
            (len >> 16) as u8,
            (len >> 8) as u8,
            len as u8,
            SETTINGS,
            0,
            0,
            0,
            0,
            0,
        ];
        for (id, v) in pairs {
            f.extend_from_slice(&id.to_be_bytes());
            f.extend_from_slice(&v.to_be_bytes());
        }
        f
    }

    #[test]
    fn a_settings_frame_is_http2_and_its_stream_limit_is_read() {
        assert_eq!(
            judge_h2_answer(&settings(&[])),
            H2Answer::Settings {
                max_concurrent_streams: None
            }
        );
        assert_eq!(
            judge_h2_answer(&settings(&[(0x4, 65_535), (0x3, 100)])),
            H2Answer::Settings {
                max_concurrent_streams: Some(100)
            }
        );
        // The last of repeated values counts.
        assert_eq!(
            judge_h2_answer(&settings(&[(0x3, 100), (0x3, 0)])),
            H2Answer::Settings {
                max_concurrent_streams: Some(0)
            }
        );
        // Trailing bytes (the next frame) do not matter.
        let mut two = settings(&[(0x3, 0)]);
        two.extend_from_slice(&settings(&[]));
        assert_eq!(
            judge_h2_answer(&two),
            H2Answer::Settings {
                max_concurrent_streams: Some(0)
            }
        );
    }

    #[test]
    fn partial_answers_wait_for_more() {
        let full = settings(&[(0x3, 7)]);
        for cut in 0..full.len() {
            assert_eq!(judge_h2_answer(&full[..cut]), H2Answer::NeedMore, "{cut}");
        }
        assert_eq!(judge_h2_answer(b"HTT"), H2Answer::NeedMore);
        assert_eq!(judge_h2_answer(b"HTTP/1.1 400 Bad"), H2Answer::NeedMore);
    }

    #[test]
    fn a_goaway_first_is_the_server_refusing_with_its_code() {
        // GOAWAY(last stream 0, PROTOCOL_ERROR), whole and in pieces.
        let goaway = [0, 0, 8, 0x7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
        assert_eq!(judge_h2_answer(&goaway), H2Answer::GoAway { code: 1 });
        assert_eq!(judge_h2_answer(&goaway[..12]), H2Answer::NeedMore);
        // Too short for a GOAWAY, or on a stream: not HTTP/2.
        let mut short = goaway;
        short[2] = 4;
        assert_eq!(judge_h2_answer(&short[..13]), H2Answer::NotH2);
        let mut on_stream = goaway;
        on_stream[8] = 1;
        assert_eq!(judge_h2_answer(&on_stream), H2Answer::NotH2);
    }

    #[test]
    fn http1_answers_and_other_frames_are_not_http2() {
        assert_eq!(
            judge_h2_answer(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n"),
            H2Answer::Http1("HTTP/1.1 400 Bad Request".into())
        );
        // A SETTINGS ACK, a frame on a stream, a ragged SETTINGS payload, text.
        let mut ack = settings(&[]);
        ack[4] = 1;
        let mut on_stream = settings(&[]);
        on_stream[8] = 1;
        let mut ragged = settings(&[(3, 1)]);
        ragged[2] = 5;
        for bad in [ack, on_stream, ragged, b"SSH-2.0-OpenSSH_9\r\n".to_vec()] {
            assert_eq!(judge_h2_answer(&bad), H2Answer::NotH2, "{bad:?}");
        }
    }

    #[test]
    fn a_refused_preface_says_why_and_what_to_do_in_one_line() {
        assert_eq!(
            PrefaceError::NotH2 { cleartext: false }.to_string(),
            "the server's answer to the HTTP/2 preface is not HTTP/2: drop --h2 to test it with HTTP/1.1"
        );
        assert_eq!(
            PrefaceError::Closed { cleartext: true }.to_string(),
            "the server closed the connection on the HTTP/2 preface: it does not speak HTTP/2 in the clear (h2c with prior knowledge); drop --h2, or use https:// if it offers HTTP/2 over TLS"
        );
        assert_eq!(
            PrefaceError::NoStreams.to_string(),
            "the server allows no HTTP/2 streams at all (SETTINGS_MAX_CONCURRENT_STREAMS = 0): no request could be sent; raise the server's stream limit"
        );
        let goaway = PrefaceError::GoAway { code: 0xb }.to_string();
        assert!(
            goaway.starts_with("the server refused the HTTP/2 connection: it answered the preface with GOAWAY ENHANCE_YOUR_CALM before any request"),
            "{goaway}"
        );
    }
}
