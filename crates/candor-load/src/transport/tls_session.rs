//! One TLS client session over a non-blocking byte stream, with buffers it owns and reuses, so
//! that requests over TLS allocate nothing: rustls's unbuffered API does the handshake (which
//! may allocate: it is not per request) in the session's own buffers, then hands the traffic
//! keys over (`rustls::kernel`, the API made for kTLS) and records are sealed and opened here
//! (`tls_record.rs`). rustls keeps what it alone can do: new traffic secrets on a key update and
//! the session tickets the server sends (stored for resumption, as before).
//!
//! What arrives after the handshake besides application data: close_notify ends the stream (as
//! does a close without it: for a client that is simply the end), a warning alert is ignored, a
//! fatal one or a record that does not decrypt is an `InvalidData` error (a parse failure, as
//! rustls's errors were); a KeyUpdate renews the receiving key (and, when asked, the sending
//! one); session tickets are given to rustls; a TLS 1.2 HelloRequest is ignored (no
//! renegotiation). Before the sending key reaches its suite's confidentiality limit, TLS 1.3
//! renews it with a KeyUpdate; TLS 1.2 cannot, and the connection then ends with a write error
//! (a reconnect follows, as after any drop), as rustls does.

use super::tls_record::{
    complete_record, RecordKey, Version, ALERT, APPLICATION_DATA, HANDSHAKE, HEADER,
    MAX_CIPHERTEXT, MAX_PLAINTEXT,
};
use rustls::client::{ClientConnectionData, UnbufferedClientConnection};
use rustls::kernel::KernelConnection;
use rustls::unbuffered::{ConnectionState, EncodeError, InsufficientSizeError};
use rustls::{ClientConfig, ProtocolVersion, SupportedCipherSuite};
use std::io::{self, Read, Write};
use std::ops::Range;
use std::sync::Arc;

/// The buffers start small and grow, once, to what the connection's traffic needs (at most one
/// whole record each way), then stay: growth is a connection's first large record or burst, not
/// a per-request cost. At 10,000 connections small buffers matter: each buffer's touched pages
/// stay resident, and small ones share pages.
const RX_INITIAL: usize = 2048;
const TX_INITIAL: usize = 2048;
/// Room for the largest record received (one read may take several smaller ones).
const RX_MAX: usize = HEADER + MAX_CIPHERTEXT;
/// Room for the largest record sent and a KeyUpdate before it (see `TlsSession::write`).
const TX_MAX: usize = MAX_PLAINTEXT + 128;
/// How far the receive buffer may grow for one handshake message spread over records (rustls
/// joins them in place; a certificate chain can exceed one record).
const HANDSHAKE_BUFFER_MAX: usize = 256 * 1024;
/// Records kept in hand below a suite's confidentiality limit when the sending key is renewed.
const LIMIT_MARGIN: u64 = 1024;

const KEY_UPDATE: u8 = 24;
const NEW_SESSION_TICKET: u8 = 4;
const HELLO_REQUEST: u8 = 0;
const CLOSE_NOTIFY: u8 = 0;
const USER_CANCELED: u8 = 90;
/// The most bytes of post-handshake messages held at once: one whole message of the largest
/// size rustls accepts (0xffff) and its header.
const MAX_POST_HANDSHAKE: usize = 0xffff + 4;
const WARNING: u8 = 1;

/// Where a TLS handshake stands.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Handshake {
    Done,
    /// Waiting for the server's next flight.
    Waiting,
    Failed,
    /// The server answered the ALPN offer with a `no_application_protocol` alert.
    AlpnRefused,
}

enum Phase {
    Handshaking(Box<UnbufferedClientConnection>),
    Traffic(Box<Traffic>),
    /// The handshake failed, or the handover of its keys did.
    Broken,
}

struct Traffic {
    /// rustls's side after the handover: new secrets on a key update, session tickets.
    kernel: KernelConnection<ClientConnectionData>,
    tx: RecordKey,
    rx: RecordKey,
    version: Version,
    /// Records the sending key may seal before it must be renewed (or the connection end).
    tx_limit: u64,
}

/// One TLS client session; its buffers live as long as it does.
pub struct TlsSession {
    phase: Phase,
    /// Bytes received: `rx[rx_start..rx_len]` is still to be used. When `plain` is not empty,
    /// the record at `rx_start` (up to `record_end`) was decrypted in place and `plain` is what
    /// of its plaintext is still to be handed out.
    rx: Vec<u8>,
    rx_start: usize,
    rx_len: usize,
    plain: Range<usize>,
    record_end: usize,
    /// Records to send: `tx[tx_sent..tx_len]` is not on the socket yet.
    tx: Vec<u8>,
    tx_sent: usize,
    tx_len: usize,
    /// Application data that came in rustls's buffers with the end of the handshake.
    early: Vec<u8>,
    early_at: usize,
    /// Handshake messages after the handshake (tickets, key updates): one may span records.
    post_handshake: Vec<u8>,
    alpn: Option<Vec<u8>>,
    /// The server's close_notify arrived: the stream has ended.
    closed: bool,
}

fn invalid(e: impl std::error::Error + Send + Sync + 'static) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

fn protocol(what: &'static str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what)
}

impl TlsSession {
    pub fn new(
        config: Arc<ClientConfig>,
        name: rustls::pki_types::ServerName<'static>,
    ) -> Result<TlsSession, rustls::Error> {
        Ok(TlsSession {
            phase: Phase::Handshaking(Box::new(UnbufferedClientConnection::new(config, name)?)),
            rx: vec![0; RX_INITIAL],
            rx_start: 0,
            rx_len: 0,
            plain: 0..0,
            record_end: 0,
            tx: vec![0; TX_INITIAL],
            tx_sent: 0,
            tx_len: 0,
            early: Vec::new(),
            early_at: 0,
            post_handshake: Vec::new(),
            alpn: None,
            closed: false,
        })
    }

    /// The protocol the server chose by ALPN, once the handshake is done.
    pub fn alpn_protocol(&self) -> Option<&[u8]> {
        self.alpn.as_deref()
    }

    /// Drives the handshake as far as `io` allows.
    pub fn handshake(&mut self, io: &mut (impl Read + Write)) -> Handshake {
        enum Step {
            Again,
            NeedInput,
            Done,
            Failed(Option<rustls::Error>),
        }
        loop {
            let Phase::Handshaking(conn) = &mut self.phase else {
                return match self.phase {
                    Phase::Traffic(_) => Handshake::Done,
                    _ => Handshake::Failed,
                };
            };
            let status = conn.process_tls_records(&mut self.rx[..self.rx_len]);
            let mut discard = status.discard;
            let step = match status.state {
                Err(e) => Step::Failed(Some(e)),
                Ok(ConnectionState::EncodeTlsData(mut data)) => loop {
                    match data.encode(&mut self.tx[self.tx_len..]) {
                        Ok(n) => {
                            self.tx_len += n;
                            break Step::Again;
                        }
                        Err(EncodeError::InsufficientSize(InsufficientSizeError {
                            required_size,
                        })) if self.tx_len + required_size <= HANDSHAKE_BUFFER_MAX => {
                            self.tx.resize(self.tx_len + required_size, 0);
                        }
                        Err(_) => break Step::Failed(None),
                    }
                },
                // What was encoded is in `tx`, and goes out with the next flush.
                Ok(ConnectionState::TransmitTlsData(data)) => {
                    data.done();
                    Step::Again
                }
                Ok(ConnectionState::BlockedHandshake) => Step::NeedInput,
                Ok(ConnectionState::ReadTraffic(mut traffic)) => {
                    let mut step = Step::Again;
                    while let Some(record) = traffic.next_record() {
                        match record {
                            Ok(record) => {
                                discard += record.discard;
                                self.early.extend_from_slice(record.payload);
                            }
                            Err(e) => {
                                step = Step::Failed(Some(e));
                                break;
                            }
                        }
                    }
                    step
                }
                Ok(ConnectionState::WriteTraffic(_)) => Step::Done,
                Ok(_) => Step::Failed(None),
            };
            self.rx.copy_within(discard..self.rx_len, 0);
            self.rx_len -= discard;
            match step {
                Step::Again => {}
                Step::NeedInput => {
                    match self.flush(io) {
                        Ok(()) => {}
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                        Err(_) => return self.fail(),
                    }
                    if self.rx_len == self.rx.len() {
                        if self.rx.len() >= HANDSHAKE_BUFFER_MAX {
                            return self.fail();
                        }
                        self.rx.resize(self.rx.len() * 2, 0);
                    }
                    match io.read(&mut self.rx[self.rx_len..]) {
                        Ok(0) => return self.fail(),
                        Ok(n) => self.rx_len += n,
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                            return Handshake::Waiting
                        }
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(_) => return self.fail(),
                    }
                }
                Step::Done => return self.begin_traffic(io),
                Step::Failed(e) => {
                    self.send_alert(io);
                    self.phase = Phase::Broken;
                    let refused = rustls::Error::AlertReceived(
                        rustls::AlertDescription::NoApplicationProtocol,
                    );
                    return if e == Some(refused) {
                        Handshake::AlpnRefused
                    } else {
                        Handshake::Failed
                    };
                }
            }
        }
    }

    fn fail(&mut self) -> Handshake {
        self.phase = Phase::Broken;
        Handshake::Failed
    }

    /// After a failed handshake, sends the alert rustls queued so the server learns why.
    fn send_alert(&mut self, io: &mut (impl Read + Write)) {
        if let Phase::Handshaking(conn) = &mut self.phase {
            let status = conn.process_tls_records(&mut []);
            if let Ok(ConnectionState::EncodeTlsData(mut data)) = status.state {
                if let Ok(n) = data.encode(&mut self.tx[self.tx_len..]) {
                    self.tx_len += n;
                }
            }
        }
        let _ = self.flush(io);
    }

    /// Takes over from rustls once the handshake is done: its keys, its ALPN choice.
    fn begin_traffic(&mut self, io: &mut (impl Read + Write)) -> Handshake {
        let Phase::Handshaking(conn) = std::mem::replace(&mut self.phase, Phase::Broken) else {
            return Handshake::Failed;
        };
        self.alpn = conn.alpn_protocol().map(<[u8]>::to_vec);
        let version = match conn.protocol_version() {
            Some(ProtocolVersion::TLSv1_3) => Version::Tls13,
            Some(ProtocolVersion::TLSv1_2) => Version::Tls12,
            _ => return Handshake::Failed,
        };
        let tx_limit = match conn.negotiated_cipher_suite() {
            Some(SupportedCipherSuite::Tls13(s)) => s.common.confidentiality_limit,
            Some(SupportedCipherSuite::Tls12(s)) => s.common.confidentiality_limit,
            None => return Handshake::Failed,
        };
        let Ok((secrets, kernel)) = conn.dangerous_into_kernel_connection() else {
            return Handshake::Failed;
        };
        let (Ok(tx), Ok(rx)) = (
            RecordKey::new(version, secrets.tx.1, secrets.tx.0),
            RecordKey::new(version, secrets.rx.1, secrets.rx.0),
        ) else {
            return Handshake::Failed;
        };
        self.phase = Phase::Traffic(Box::new(Traffic {
            kernel,
            tx,
            rx,
            version,
            tx_limit: tx_limit.saturating_sub(LIMIT_MARGIN),
        }));
        match self.flush(io) {
            Ok(()) => Handshake::Done,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Handshake::Done,
            Err(_) => {
                self.phase = Phase::Broken;
                Handshake::Failed
            }
        }
    }

    /// Sends what is sealed and not yet sent; `WouldBlock` means wait for writability.
    pub fn flush(&mut self, io: &mut impl Write) -> io::Result<()> {
        while self.tx_sent < self.tx_len {
            match io.write(&self.tx[self.tx_sent..self.tx_len]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => self.tx_sent += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        self.tx_sent = 0;
        self.tx_len = 0;
        Ok(())
    }

    /// Seals up to one record of `data` (sending earlier records first when there is no room
    /// for it); the bytes go out with [`TlsSession::flush`]. `WouldBlock`: no room, and the
    /// socket takes nothing.
    pub fn write(&mut self, io: &mut impl Write, data: &[u8]) -> io::Result<usize> {
        if data.is_empty() {
            return Ok(0);
        }
        let Phase::Traffic(t) = &self.phase else {
            return Err(io::ErrorKind::NotConnected.into());
        };
        let overhead = t.tx.overhead();
        // A key update may have to go first: room for its record (a 5-byte message) too.
        let reserve = 2 * overhead + 5;
        let want = data.len().min(MAX_PLAINTEXT);
        if self.tx.len() - self.tx_len < reserve + want {
            match self.flush(io) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
            self.tx.copy_within(self.tx_sent..self.tx_len, 0);
            self.tx_len -= self.tx_sent;
            self.tx_sent = 0;
            let need = self.tx_len + reserve + want;
            if need > self.tx.len() && self.tx.len() < TX_MAX {
                self.tx.resize(need.next_power_of_two().min(TX_MAX), 0);
            }
        }
        let room = self.tx.len() - self.tx_len;
        if room <= reserve {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        self.renew_tx_key_if_due()?;
        let Phase::Traffic(t) = &mut self.phase else {
            return Err(io::ErrorKind::NotConnected.into());
        };
        // What the KeyUpdate, if one went first, left.
        let room = self.tx.len() - self.tx_len;
        if room <= overhead {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let n = want.min(room - overhead);
        let sealed =
            t.tx.seal(APPLICATION_DATA, &data[..n], &mut self.tx[self.tx_len..])
                .map_err(invalid)?;
        self.tx_len += sealed;
        Ok(n)
    }

    fn renew_tx_key_if_due(&mut self) -> io::Result<()> {
        let Phase::Traffic(t) = &self.phase else {
            return Ok(());
        };
        if t.tx.seq() < t.tx_limit {
            return Ok(());
        }
        if t.version == Version::Tls12 {
            return Err(io::Error::other(
                "TLS 1.2 sending key used up (its suite's confidentiality limit)",
            ));
        }
        self.send_key_update()
    }

    /// Sends a KeyUpdate (not asking the server for one) and seals what follows with the
    /// next key.
    fn send_key_update(&mut self) -> io::Result<()> {
        let Phase::Traffic(t) = &mut self.phase else {
            return Ok(());
        };
        let message = [KEY_UPDATE, 0, 0, 1, 0];
        if self.tx.len() - self.tx_len < message.len() + t.tx.overhead() {
            self.tx
                .resize(self.tx_len + message.len() + t.tx.overhead(), 0);
        }
        let sealed =
            t.tx.seal(HANDSHAKE, &message, &mut self.tx[self.tx_len..])
                .map_err(invalid)?;
        self.tx_len += sealed;
        let (seq, secrets) = t.kernel.update_tx_secret().map_err(invalid)?;
        t.tx = RecordKey::new(t.version, secrets, seq).map_err(invalid)?;
        Ok(())
    }

    /// Like `Read::read` on the plaintext: `Ok(0)` is the end of the stream.
    pub fn read(&mut self, io: &mut (impl Read + Write), buf: &mut [u8]) -> io::Result<usize> {
        if self.early_at < self.early.len() {
            let n = buf.len().min(self.early.len() - self.early_at);
            buf[..n].copy_from_slice(&self.early[self.early_at..self.early_at + n]);
            self.early_at += n;
            return Ok(n);
        }
        loop {
            if !self.plain.is_empty() {
                let n = buf.len().min(self.plain.len());
                buf[..n].copy_from_slice(&self.rx[self.plain.start..self.plain.start + n]);
                self.plain.start += n;
                if self.plain.is_empty() {
                    self.rx_start = self.record_end;
                }
                return Ok(n);
            }
            if self.closed {
                return Ok(0);
            }
            let Phase::Traffic(t) = &mut self.phase else {
                return Err(io::ErrorKind::NotConnected.into());
            };
            let Some(len) =
                complete_record(&self.rx[self.rx_start..self.rx_len]).map_err(invalid)?
            else {
                self.rx.copy_within(self.rx_start..self.rx_len, 0);
                self.rx_len -= self.rx_start;
                self.rx_start = 0;
                if let [_, _, _, a, b, ..] = self.rx[..self.rx_len] {
                    // A record larger than the buffer (`complete_record` bounds its length).
                    let need = HEADER + usize::from(u16::from_be_bytes([a, b]));
                    if need > self.rx.len() {
                        self.rx
                            .resize(need.next_power_of_two().min(RX_MAX).max(need), 0);
                    }
                }
                match io.read(&mut self.rx[self.rx_len..])? {
                    0 => return Ok(0),
                    n => self.rx_len += n,
                }
                // A read that filled the buffer left more waiting: take more per read from now.
                if self.rx_len == self.rx.len() && self.rx.len() < RX_MAX {
                    self.rx.resize((2 * self.rx.len()).min(RX_MAX), 0);
                }
                continue;
            };
            let start = self.rx_start;
            let end = start + len;
            let (typ, plain) = t.rx.open(&mut self.rx[start..end]).map_err(invalid)?;
            let plain = start + plain.start..start + plain.end;
            match typ {
                APPLICATION_DATA => {
                    self.record_end = end;
                    self.plain = plain;
                    if self.plain.is_empty() {
                        self.rx_start = end;
                    }
                }
                ALERT => {
                    self.rx_start = end;
                    match self.rx[plain] {
                        [_, CLOSE_NOTIFY] => {
                            self.closed = true;
                            return Ok(0);
                        }
                        // TLS 1.3 has no warnings but user_canceled (RFC 8446 §6); TLS 1.2's
                        // are ignored.
                        [_, USER_CANCELED] if t.version == Version::Tls13 => {}
                        [WARNING, _] if t.version == Version::Tls12 => {}
                        _ => return Err(protocol("the TLS server sent a fatal alert")),
                    }
                }
                HANDSHAKE => {
                    self.rx_start = end;
                    let Range { start, end } = plain;
                    // No handshake message after the handshake is longer than 2^16 - 1 bytes
                    // (as rustls bounds them): a server announcing more cannot make every
                    // connection buffer up to 16 MiB.
                    if self.post_handshake.len() + (end - start) > MAX_POST_HANDSHAKE {
                        return Err(protocol("TLS handshake message too long"));
                    }
                    self.post_handshake.extend_from_slice(&self.rx[start..end]);
                    self.handle_post_handshake()?;
                }
                _ => return Err(protocol("unexpected TLS record type after the handshake")),
            }
        }
    }

    /// Handles the whole handshake messages received after the handshake.
    fn handle_post_handshake(&mut self) -> io::Result<()> {
        let mut at = 0;
        while let [typ, a, b, c, ..] = self.post_handshake[at..] {
            let len = u32::from_be_bytes([0, a, b, c]) as usize;
            let body = at + 4..at + 4 + len;
            if body.end > self.post_handshake.len() {
                break;
            }
            let Phase::Traffic(t) = &mut self.phase else {
                return Err(io::ErrorKind::NotConnected.into());
            };
            match typ {
                NEW_SESSION_TICKET => t
                    .kernel
                    .handle_new_session_ticket(&self.post_handshake[body.clone()])
                    .map_err(invalid)?,
                KEY_UPDATE if t.version == Version::Tls13 => {
                    let requested = match self.post_handshake[body.clone()] {
                        [0] => false,
                        [1] => true,
                        _ => return Err(protocol("malformed TLS KeyUpdate")),
                    };
                    // A key change ends the record it came in.
                    if body.end != self.post_handshake.len() {
                        return Err(protocol("TLS KeyUpdate not at the end of its record"));
                    }
                    let (seq, secrets) = t.kernel.update_rx_secret().map_err(invalid)?;
                    t.rx = RecordKey::new(t.version, secrets, seq).map_err(invalid)?;
                    if requested {
                        self.send_key_update()?;
                    }
                }
                HELLO_REQUEST if t.version == Version::Tls12 && len == 0 => {}
                _ => {
                    return Err(protocol(
                        "unexpected TLS handshake message after the handshake",
                    ))
                }
            }
            at = body.end;
        }
        self.post_handshake.drain(..at);
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
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
    }

    impl Pair {
        /// Moves bytes both ways until neither side has more to say.
        fn pump_server(&mut self) {
            loop {
                let mut moved = false;
                while !self.wire.to_server.is_empty() {
                    let (a, _) = self.wire.to_server.as_slices();
                    let mut a = a;
                    let n = self.server.read_tls(&mut a).unwrap();
                    self.wire.to_server.drain(..n);
                    self.server.process_new_packets().unwrap();
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

    pub(crate) fn test_identity() -> (
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
        let (chain, key) = test_identity();
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
    /// test, so this is shown end to end (`tests/tls.rs`, `tests/h2.rs`); here, that the
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
}
