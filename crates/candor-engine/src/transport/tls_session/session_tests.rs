//! Tests of the TLS session: handshakes and records against a rustls server in memory.

use super::*;
use std::collections::VecDeque;

/// A byte pipe between the session and an in-memory rustls server: `WouldBlock` when empty.
#[derive(Default)]
struct Wire {
    to_server: VecDeque<u8>,
    to_client: VecDeque<u8>,
}

struct ClientEnd<'a>(&'a mut Wire);

impl Read for ClientEnd<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.0.to_client.is_empty() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        self.0.to_client.read(buf)
    }
}

impl Write for ClientEnd<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.to_server.extend(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

struct Pair {
    wire: Wire,
    client: TlsSession,
    server: rustls::ServerConnection,
    /// What the server has read so far.
    server_got: Vec<u8>,
    /// The server's first error: it then reads no more.
    server_error: Option<rustls::Error>,
}

impl Pair {
    /// Moves bytes both ways until neither side has more to say.
    fn pump_server(&mut self) {
        loop {
            let mut moved = false;
            while !self.wire.to_server.is_empty() {
                if self.server_error.is_some() {
                    self.wire.to_server.clear();
                    break;
                }
                let (a, _) = self.wire.to_server.as_slices();
                let mut a = a;
                let n = self.server.read_tls(&mut a).unwrap();
                self.wire.to_server.drain(..n);
                if let Err(e) = self.server.process_new_packets() {
                    self.server_error = Some(e);
                }
                let _ = self.server.reader().read_to_end(&mut self.server_got);
                moved = true;
            }
            while self.server.wants_write() {
                let mut out = Vec::new();
                self.server.write_tls(&mut out).unwrap();
                self.wire.to_client.extend(out);
                moved = true;
            }
            if !moved {
                return;
            }
        }
    }

    fn handshake(&mut self) -> Handshake {
        for _ in 0..20 {
            let state = self.client.handshake(&mut ClientEnd(&mut self.wire));
            self.pump_server();
            if state != Handshake::Waiting {
                return state;
            }
        }
        panic!("handshake did not finish")
    }

    fn send(&mut self, data: &[u8]) {
        let mut at = 0;
        while at < data.len() {
            at += self
                .client
                .write(&mut ClientEnd(&mut self.wire), &data[at..])
                .unwrap();
        }
        self.client.flush(&mut ClientEnd(&mut self.wire)).unwrap();
        self.pump_server();
    }

    fn server_received(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.server_got)
    }

    /// Reads until `WouldBlock` or the end; `Ok(None)` for the end.
    fn receive(&mut self) -> io::Result<Option<Vec<u8>>> {
        let mut got = Vec::new();
        let mut buf = [0u8; 1000];
        loop {
            match self.client.read(&mut ClientEnd(&mut self.wire), &mut buf) {
                Ok(0) => return Ok(None),
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Some(got)),
                Err(e) => return Err(e),
            }
        }
    }
}

pub fn test_identity() -> (
    Vec<rustls::pki_types::CertificateDer<'static>>,
    rustls::pki_types::PrivateKeyDer<'static>,
) {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    (
        vec![cert.cert.der().clone()],
        rustls::pki_types::PrivateKeyDer::Pkcs8(cert.key_pair.serialize_der().into()),
    )
}

fn pair(suite: SupportedCipherSuite, alpn_client: &[&[u8]], alpn_server: &[&[u8]]) -> Pair {
    pair_with(suite, alpn_client, alpn_server, test_identity(), |_| {})
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

fn pair_with(
    suite: SupportedCipherSuite,
    alpn_client: &[&[u8]],
    alpn_server: &[&[u8]],
    (chain, key): (
        Vec<rustls::pki_types::CertificateDer<'static>>,
        rustls::pki_types::PrivateKeyDer<'static>,
    ),
    adjust: impl FnOnce(&mut rustls::ServerConfig),
) -> Pair {
    let mut provider = rustls::crypto::ring::default_provider();
    provider.cipher_suites = vec![suite];
    let provider = Arc::new(provider);
    let versions: &[&rustls::SupportedProtocolVersion] = match suite {
        SupportedCipherSuite::Tls12(_) => &[&rustls::version::TLS12],
        SupportedCipherSuite::Tls13(_) => &[&rustls::version::TLS13],
    };
    let mut server = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(versions)
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain.clone(), key)
        .unwrap();
    // For tests that seal records as the server would.
    server.enable_secret_extraction = true;
    server.alpn_protocols = alpn_server.iter().map(|p| p.to_vec()).collect();
    adjust(&mut server);
    let mut roots = rustls::RootCertStore::empty();
    roots.add(chain[0].clone()).unwrap();
    let mut client = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    client.alpn_protocols = alpn_client.iter().map(|p| p.to_vec()).collect();
    client.enable_secret_extraction = true;
    Pair {
        wire: Wire::default(),
        client: TlsSession::new(Arc::new(client), "localhost".try_into().unwrap()).unwrap(),
        server: rustls::ServerConnection::new(Arc::new(server)).unwrap(),
        server_got: Vec::new(),
        server_error: None,
    }
}

/// Every suite of the ring provider, TLS 1.2 and 1.3, that an ECDSA certificate serves (the
/// TLS 1.2 RSA suites protect records exactly as their ECDSA twins; ring cannot make RSA
/// keys): the handshake, requests and responses both ways (several records in one write,
/// several in one read), session tickets, then close_notify as the end.
#[test]
fn sessions_speak_with_rustls_in_every_suite() {
    let mut checked = 0;
    for suite in rustls::crypto::ring::default_provider().cipher_suites {
        if !suite.usable_for_signature_algorithm(rustls::SignatureAlgorithm::ECDSA) {
            continue;
        }
        checked += 1;
        let mut p = pair(suite, &[], &[]);
        assert_eq!(p.handshake(), Handshake::Done, "{suite:?}");
        p.send(b"GET / HTTP/1.1\r\n\r\n");
        assert_eq!(p.server_received(), b"GET / HTTP/1.1\r\n\r\n", "{suite:?}");
        let big: Vec<u8> = (0..50_000u32).map(|i| i as u8).collect();
        p.send(&big);
        assert_eq!(p.server_received(), big, "{suite:?}");
        p.server.writer().write_all(b"x").unwrap();
        p.server.writer().write_all(&big).unwrap();
        p.pump_server();
        let mut want = b"x".to_vec();
        want.extend_from_slice(&big);
        assert_eq!(p.receive().unwrap(), Some(want), "{suite:?}");
        p.server.send_close_notify();
        p.pump_server();
        assert_eq!(p.receive().unwrap(), None, "{suite:?}");
    }
    assert_eq!(checked, 6, "three TLS 1.3 suites, three TLS 1.2 ECDSA ones");
}

/// Key updates both ways: the server renews its key and asks for ours (TLS 1.3), and ours
/// is renewed by itself at its (lowered) limit; the server reads everything.
#[test]
fn key_updates_renew_both_directions() {
    let suite = rustls::crypto::ring::cipher_suite::TLS13_AES_128_GCM_SHA256;
    let mut p = pair(suite, &[], &[]);
    assert_eq!(p.handshake(), Handshake::Done);
    p.server.refresh_traffic_keys().unwrap();
    p.server.writer().write_all(b"after").unwrap();
    p.pump_server();
    assert_eq!(p.receive().unwrap(), Some(b"after".to_vec()));
    // The session answered the server's request with a KeyUpdate of its own.
    p.send(b"ping");
    assert_eq!(p.server_received(), b"ping");
    let Phase::Traffic(t) = &mut p.client.phase else {
        panic!("not in traffic")
    };
    let first_key_seq = t.tx.seq();
    assert_eq!(first_key_seq, 1, "a renewed key starts from 0");
    t.tx_limit = 3;
    for i in 0..10u8 {
        p.send(&[i; 10]);
        assert_eq!(p.server_received(), [i; 10]);
    }
    let Phase::Traffic(t) = &p.client.phase else {
        panic!("not in traffic")
    };
    assert!(t.tx.seq() <= 3, "renewed at the limit: {}", t.tx.seq());
}

/// A socket that takes nothing.
struct Full;

impl Write for Full {
    fn write(&mut self, _: &[u8]) -> io::Result<usize> {
        Err(io::ErrorKind::WouldBlock.into())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A renewal of the sending key that falls on a large write while the socket is full: the
/// KeyUpdate and the data record both fit what is left of the buffer, and the server reads
/// everything.
#[test]
fn a_key_renewal_on_a_full_buffer_leaves_room_for_both_records() {
    let suite = rustls::crypto::ring::cipher_suite::TLS13_AES_128_GCM_SHA256;
    let mut p = pair(suite, &[], &[]);
    assert_eq!(p.handshake(), Handshake::Done);
    assert_eq!(p.client.write(&mut Full, &[1; 100]).unwrap(), 100);
    let Phase::Traffic(t) = &mut p.client.phase else {
        panic!("not in traffic")
    };
    t.tx_limit = t.tx.seq();
    let big = [2u8; MAX_PLAINTEXT];
    let n = p.client.write(&mut Full, &big).unwrap();
    assert!(n > MAX_PLAINTEXT / 2, "{n}");
    p.client.flush(&mut ClientEnd(&mut p.wire)).unwrap();
    p.pump_server();
    let mut expected = vec![1u8; 100];
    expected.extend_from_slice(&big[..n]);
    assert_eq!(p.server_received(), expected);
}

/// TLS 1.3 knows no warning alerts but user_canceled (RFC 8446 §6): any other is fatal.
/// The alerts are sealed with the server's sending key, extracted from rustls.
#[test]
fn a_tls13_warning_alert_is_fatal_but_user_canceled_is_not() {
    let suite = rustls::crypto::ring::cipher_suite::TLS13_AES_128_GCM_SHA256;
    for (alert, fatal) in [([WARNING, 40u8], true), ([WARNING, USER_CANCELED], false)] {
        let mut p = pair(suite, &[], &[]);
        assert_eq!(p.handshake(), Handshake::Done);
        p.receive().unwrap();
        let Pair {
            mut wire,
            mut client,
            server,
            ..
        } = p;
        let (seq, secrets) = server.dangerous_extract_secrets().unwrap().tx;
        let mut server_key = RecordKey::new(Version::Tls13, secrets, seq).unwrap();
        let mut record = [0u8; 64];
        let len = server_key.seal(ALERT, &alert, &mut record).unwrap();
        wire.to_client.extend(&record[..len]);
        let mut buf = [0u8; 16];
        let err = client
            .read(&mut ClientEnd(&mut wire), &mut buf)
            .unwrap_err();
        let expected = if fatal {
            io::ErrorKind::InvalidData
        } else {
            io::ErrorKind::WouldBlock
        };
        assert_eq!(err.kind(), expected, "alert {alert:?}");
    }
}

#[test]
fn tls12_ends_the_connection_at_the_record_limit() {
    let suite = rustls::crypto::ring::cipher_suite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256;
    let mut p = pair(suite, &[], &[]);
    // rcgen's default key is ECDSA P-256, which this suite needs.
    assert_eq!(p.handshake(), Handshake::Done);
    let Phase::Traffic(t) = &mut p.client.phase else {
        panic!("not in traffic")
    };
    t.tx_limit = t.tx.seq() + 2;
    p.send(b"a");
    p.send(b"b");
    let err = p
        .client
        .write(&mut ClientEnd(&mut p.wire), b"c")
        .unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::Other);
    assert_eq!(p.server_received(), b"ab");
}

#[test]
fn alpn_is_reported_and_its_refusal_named() {
    let suite = rustls::crypto::ring::cipher_suite::TLS13_AES_256_GCM_SHA384;
    let mut p = pair(suite, &[b"h2"], &[b"h2"]);
    assert_eq!(p.handshake(), Handshake::Done);
    assert_eq!(p.client.alpn_protocol(), Some(&b"h2"[..]));
    let mut p = pair(suite, &[b"h2"], &[b"http/1.1"]);
    assert_eq!(
        p.client.handshake(&mut ClientEnd(&mut p.wire)),
        Handshake::Waiting
    );
    // The server refuses, and says so with an alert.
    let (a, _) = p.wire.to_server.as_slices();
    let mut a = a;
    p.server.read_tls(&mut a).unwrap();
    assert!(p.server.process_new_packets().is_err());
    p.wire.to_server.clear();
    let mut out = Vec::new();
    while p.server.wants_write() {
        p.server.write_tls(&mut out).unwrap();
    }
    p.wire.to_client.extend(out);
    assert_eq!(
        p.client.handshake(&mut ClientEnd(&mut p.wire)),
        Handshake::AlpnRefused
    );
}

/// A record that does not decrypt is invalid data (a parse failure), not a panic or an end.
#[test]
fn a_corrupted_record_is_invalid_data() {
    let suite = rustls::crypto::ring::cipher_suite::TLS13_CHACHA20_POLY1305_SHA256;
    let mut p = pair(suite, &[], &[]);
    assert_eq!(p.handshake(), Handshake::Done);
    p.server.writer().write_all(b"hello").unwrap();
    let mut out = Vec::new();
    p.server.write_tls(&mut out).unwrap();
    let last = out.len() - 1;
    out[last] ^= 0x80;
    p.wire.to_client.extend(out);
    let err = p.receive().unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidData);
}

/// The steady state allocates nothing: a counting allocator is not available inside a unit
/// test, so this is shown end to end (`tests/http1_over_tls.rs`, `tests/h2.rs`); here, that the
/// buffers stay where they were across many exchanges (no growth, no reallocation).
#[test]
fn buffers_are_reused() {
    let suite = rustls::crypto::ring::cipher_suite::TLS13_AES_128_GCM_SHA256;
    let mut p = pair(suite, &[], &[]);
    assert_eq!(p.handshake(), Handshake::Done);
    // Tickets arrive after the handshake; let them be handled first.
    p.receive().unwrap();
    let (rx, tx) = (p.client.rx.as_ptr(), p.client.tx.as_ptr());
    let (rx_cap, tx_cap) = (p.client.rx.capacity(), p.client.tx.capacity());
    for i in 0..200u32 {
        p.send(&i.to_be_bytes());
        assert_eq!(p.server_received(), i.to_be_bytes());
        p.server.writer().write_all(&[7; 300]).unwrap();
        p.pump_server();
        assert_eq!(p.receive().unwrap(), Some(vec![7; 300]));
    }
    assert_eq!((p.client.rx.as_ptr(), p.client.tx.as_ptr()), (rx, tx));
    assert_eq!(
        (p.client.rx.capacity(), p.client.tx.capacity()),
        (rx_cap, tx_cap)
    );
}

/// A certificate message over the 64 KiB rustls accepts (a server sending a whole CA bundle)
/// fails the handshake; asking rustls for the alert to send while it holds part of the message
/// must not panic (it did: `process_tls_records` on an empty buffer, its progress in the old).
#[test]
fn a_handshake_message_over_64_kib_fails_the_handshake_without_a_panic() {
    let suite = rustls::crypto::ring::cipher_suite::TLS13_AES_128_GCM_SHA256;
    // One certificate cannot hold that much (webpki reads lengths up to 64 KiB): two do.
    let (mut chain, key) = padded_identity(40_000);
    chain.push(padded_identity(26_000).0.remove(0));
    let mut p = pair_with(suite, &[], &[], (chain, key), |_| {});
    assert_eq!(p.handshake(), Handshake::Failed);
    // A record announcing a 16 MiB message, its first 16 KiB sent whole.
    let mut p = pair(suite, &[], &[]);
    assert_eq!(
        p.client.handshake(&mut ClientEnd(&mut p.wire)),
        Handshake::Waiting
    );
    let mut record = vec![HANDSHAKE, 3, 3, 0x40, 0x00, 2, 0xff, 0xff, 0xff];
    record.resize(HEADER + 0x4000, 0);
    p.wire.to_client.extend(&record);
    p.wire.to_client.extend(&record[..HEADER + 100]);
    assert_eq!(
        p.client.handshake(&mut ClientEnd(&mut p.wire)),
        Handshake::Failed
    );
}

/// After a handshake with a 60 KB certificate chain, what was grown for it is given back: a
/// connection keeps at most a record's room, not the chain's (each of 400 connections kept
/// ~137 KB, for the run).
#[test]
fn handshake_buffers_are_released_once_the_session_is_established() {
    let suite = rustls::crypto::ring::cipher_suite::TLS13_AES_128_GCM_SHA256;
    let mut p = pair_with(suite, &[], &[], padded_identity(60_000), |_| {});
    assert_eq!(p.handshake(), Handshake::Done);
    p.receive().unwrap();
    p.send(b"ping");
    assert_eq!(p.server_received(), b"ping");
    assert!(
        p.client.rx.capacity() <= RX_MAX,
        "{}",
        p.client.rx.capacity()
    );
    assert!(
        p.client.tx.capacity() <= TX_INITIAL,
        "{}",
        p.client.tx.capacity()
    );
    assert!(
        p.client.post_handshake.capacity() + p.client.early.capacity() <= 1024,
        "{} {}",
        p.client.post_handshake.capacity(),
        p.client.early.capacity()
    );
}

fn fault(e: io::Error) -> TlsFault {
    assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{e}");
    *e.get_ref()
        .and_then(|e| e.downcast_ref::<TlsFault>())
        .unwrap_or_else(|| panic!("not a TlsFault: {e}"))
}

/// KeyUpdates that ask for one, flooded by a server that never reads: the answer is one
/// KeyUpdate however many were asked (the send buffer grew by one per request, without end),
/// and past 32 without application data between them (rustls's and BoringSSL's cap) the
/// connection fails with that cause.
#[test]
fn a_flood_of_key_update_requests_is_a_fault_and_the_send_buffer_stays_bounded() {
    let suite = rustls::crypto::ring::cipher_suite::TLS13_AES_128_GCM_SHA256;
    let mut p = pair(suite, &[], &[]);
    assert_eq!(p.handshake(), Handshake::Done);
    p.receive().unwrap();
    // Between application records, any number: the answers do not pile up.
    for round in 0..200 {
        for _ in 0..3 {
            p.server.refresh_traffic_keys().unwrap();
        }
        p.server.writer().write_all(b"data").unwrap();
        p.pump_server();
        assert_eq!(
            p.receive().unwrap(),
            Some(b"data".to_vec()),
            "round {round}"
        );
        assert!(p.client.tx_len <= 64, "round {round}: {}", p.client.tx_len);
    }
    // The answers that did go out keep both sides in step.
    p.send(b"ping");
    assert_eq!(p.server_received(), b"ping");
    assert_eq!(p.server_error, None);
    for _ in 0..40 {
        p.server.refresh_traffic_keys().unwrap();
    }
    p.pump_server();
    assert_eq!(fault(p.receive().unwrap_err()), TlsFault::TooManyKeyUpdates);
    assert!(p.client.tx_len <= 64, "{}", p.client.tx_len);
}

/// The server's sending key for TLS 1.2, extracted, with what it will seal next.
fn tls12_server_key(p: Pair) -> (Wire, TlsSession, RecordKey) {
    let Pair {
        wire,
        client,
        server,
        ..
    } = p;
    let (seq, secrets) = server.dangerous_extract_secrets().unwrap().tx;
    (
        wire,
        client,
        RecordKey::new(Version::Tls12, secrets, seq).unwrap(),
    )
}

/// What rustls limits and the own record layer must too: warning alerts (4 in all), empty
/// records (32 in a row), HelloRequests (one is ignored, the next is refused).
#[test]
fn floods_of_warnings_empty_records_and_hello_requests_are_faults() {
    let suite = rustls::crypto::ring::cipher_suite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256;
    let cases: [(u8, &[u8], usize, TlsFault); 3] = [
        (ALERT, &[WARNING, 100], 4, TlsFault::TooManyWarnings),
        (APPLICATION_DATA, &[], 32, TlsFault::TooManyEmptyRecords),
        (
            HANDSHAKE,
            &[HELLO_REQUEST, 0, 0, 0],
            1,
            TlsFault::TooManyHelloRequests,
        ),
    ];
    for (typ, payload, allowed, expected) in cases {
        let mut p = pair(suite, &[], &[]);
        assert_eq!(p.handshake(), Handshake::Done);
        let (mut wire, mut client, mut key) = tls12_server_key(p);
        let mut seal = |typ, payload: &[u8]| {
            let mut record = [0u8; 64];
            let n = key.seal(typ, payload, &mut record).unwrap();
            record[..n].to_vec()
        };
        let mut buf = [0u8; 16];
        for _ in 0..allowed {
            wire.to_client.extend(seal(typ, payload));
        }
        let err = client
            .read(&mut ClientEnd(&mut wire), &mut buf)
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::WouldBlock, "{expected:?}: {err}");
        wire.to_client.extend(seal(typ, payload));
        let err = client
            .read(&mut ClientEnd(&mut wire), &mut buf)
            .unwrap_err();
        assert_eq!(fault(err), expected);
    }
}

/// HKDF-Expand-Label (RFC 8446 §7.1) with SHA-256, empty context.
fn expand_label(secret: &[u8], label: &str, len: usize) -> Vec<u8> {
    struct Len(usize);
    impl ring::hkdf::KeyType for Len {
        fn len(&self) -> usize {
            self.0
        }
    }
    let full = format!("tls13 {label}");
    let info = [
        &(len as u16).to_be_bytes()[..],
        &[full.len() as u8],
        full.as_bytes(),
        &[0],
    ];
    let prk = ring::hkdf::Prk::new_less_safe(ring::hkdf::HKDF_SHA256, secret);
    let mut out = vec![0; len];
    prk.expand(&info, Len(len)).unwrap().fill(&mut out).unwrap();
    out
}

#[derive(Debug, Default)]
struct ServerSecret(std::sync::Mutex<Option<Vec<u8>>>);

impl rustls::KeyLog for ServerSecret {
    fn log(&self, label: &str, _: &[u8], secret: &[u8]) {
        if label == "SERVER_TRAFFIC_SECRET_0" {
            *self.0.lock().unwrap() = Some(secret.to_vec());
        }
    }
}

/// A server may send KeyUpdate(update_requested) right behind its Finished (RFC 8446 §4.6.3),
/// in the bytes that end the handshake. The answer must reach the server before any record
/// sealed with the next key (it was lost at the handover to the own record layer, and the
/// server could not decrypt the next request).
#[test]
fn a_key_update_right_after_the_servers_finished_is_answered() {
    let suite = rustls::crypto::ring::cipher_suite::TLS13_CHACHA20_POLY1305_SHA256;
    let secret = Arc::new(ServerSecret::default());
    let log = secret.clone();
    let mut p = pair_with(suite, &[], &[], test_identity(), |s| {
        s.key_log = log;
        // Tickets would be sealed with the key this test's KeyUpdate replaced.
        s.send_tls13_tickets = 0;
    });
    assert_eq!(
        p.client.handshake(&mut ClientEnd(&mut p.wire)),
        Handshake::Waiting
    );
    p.pump_server();
    // The server's flight up to its Finished is on the wire; the KeyUpdate follows it, sealed
    // with the server's first application key.
    let secret = secret
        .0
        .lock()
        .unwrap()
        .clone()
        .expect("server secret logged");
    let key: [u8; 32] = expand_label(&secret, "key", 32).try_into().unwrap();
    let iv: [u8; 12] = expand_label(&secret, "iv", 12).try_into().unwrap();
    let secrets = rustls::ConnectionTrafficSecrets::Chacha20Poly1305 {
        key: rustls::crypto::cipher::AeadKey::from(key),
        iv: rustls::crypto::cipher::Iv::new(iv),
    };
    let mut server_key = RecordKey::new(Version::Tls13, secrets, 0).unwrap();
    let mut record = [0u8; 64];
    let n = server_key
        .seal(HANDSHAKE, &[KEY_UPDATE, 0, 0, 1, 1], &mut record)
        .unwrap();
    p.wire.to_client.extend(&record[..n]);
    assert_eq!(p.handshake(), Handshake::Done);
    assert_eq!(p.receive().unwrap(), Some(Vec::new()));
    p.send(b"ping");
    assert_eq!(p.server_error, None);
    assert_eq!(p.server_received(), b"ping");
}
