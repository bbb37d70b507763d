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
    complete_record, RecordError, RecordKey, Version, ALERT, APPLICATION_DATA, HANDSHAKE, HEADER,
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
    /// What rustls caps (as BoringSSL does) and the own record layer must too, lest a server
    /// make a connection work or buffer without end: KeyUpdates between application records,
    /// warning alerts in all, empty records in a row, HelloRequests (one is ignored).
    key_updates: u8,
    warnings: u8,
    empty_records: u8,
    hello_requests: u8,
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
    /// Bytes of `rx` handed to rustls during the handshake: whole records, one at a time, so
    /// that what follows the handshake's last record stays here for the own record layer
    /// (rustls would take it in and lose part of it at the handover: a KeyUpdate's answer).
    fed: usize,
    /// Records to send: `tx[tx_sent..tx_len]` is not on the socket yet.
    tx: Vec<u8>,
    tx_sent: usize,
    tx_len: usize,
    /// A KeyUpdate is sealed in `tx` and not yet sent: a further request needs no other answer
    /// (RFC 8446 §4.6.3 asks for one before the next application data; rustls sends one too).
    key_update_unsent: bool,
    /// Application data that came in rustls's buffers with the end of the handshake.
    early: Vec<u8>,
    early_at: usize,
    /// Handshake messages after the handshake (tickets, key updates): one may span records.
    post_handshake: Vec<u8>,
    alpn: Option<Vec<u8>>,
    /// The server's close_notify arrived: the stream has ended.
    closed: bool,
}

/// Why a TLS session failed after its handshake: the record layer's and the post-handshake
/// messages' faults, by cause, as rustls would have refused them.
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error)]
pub enum TlsFault {
    #[error("{0}")]
    Record(#[from] RecordError),
    #[error("the server sent the TLS alert '{}'", alert_name(*.0))]
    Alert(u8),
    #[error("the server sent more than {KEY_UPDATES_MAX} TLS KeyUpdates without application data between them")]
    TooManyKeyUpdates,
    #[error("the server sent more than {WARNINGS_MAX} TLS warning alerts")]
    TooManyWarnings,
    #[error("the server sent more than {EMPTY_RECORDS_MAX} empty TLS records in a row")]
    TooManyEmptyRecords,
    #[error("the server asked for a TLS renegotiation again (HelloRequest) after it was ignored")]
    TooManyHelloRequests,
    #[error("a TLS record of unexpected type {0} after the handshake")]
    UnexpectedRecord(u8),
    #[error("an unexpected TLS handshake message (type {0}) after the handshake")]
    UnexpectedMessage(u8),
    #[error("a TLS handshake message after the handshake longer than 64 KiB")]
    MessageTooLong,
    #[error("a malformed TLS KeyUpdate")]
    MalformedKeyUpdate,
    #[error("a TLS KeyUpdate not at the end of its record")]
    KeyUpdateNotAtEnd,
    #[error("a TLS session ticket rustls refused")]
    Ticket,
    #[error("a TLS key update rustls refused")]
    KeyUpdate,
}

/// An alert's name as RFC 8446 writes it (`internal_error`), from rustls's (`InternalError`).
pub fn alert_name(code: u8) -> String {
    let camel = format!("{:?}", rustls::AlertDescription::from(code));
    let mut name = String::with_capacity(camel.len() + 4);
    for (i, c) in camel.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            name.push('_');
        }
        name.push(c.to_ascii_lowercase());
    }
    name
}

const KEY_UPDATES_MAX: u8 = 32;
const WARNINGS_MAX: u8 = 4;
const EMPTY_RECORDS_MAX: u8 = 32;

/// A fault of the session after its handshake, as the read or write error it ends it with
/// (`InvalidData`: the server's bytes broke TLS; the cause is inside, for the tally).
fn fault(e: impl Into<TlsFault>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e.into())
}

impl Traffic {
    fn warning(&mut self) -> io::Result<()> {
        self.warnings += 1;
        if self.warnings > WARNINGS_MAX {
            return Err(fault(TlsFault::TooManyWarnings));
        }
        Ok(())
    }
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
            fed: 0,
            tx: vec![0; TX_INITIAL],
            tx_sent: 0,
            tx_len: 0,
            key_update_unsent: false,
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
            let status = conn.process_tls_records(&mut self.rx[..self.fed]);
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
            self.fed -= discard;
            match step {
                Step::Again => {}
                Step::NeedInput => {
                    if let Some(end) = self.next_record_end() {
                        self.fed = end;
                        continue;
                    }
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

    /// Where the next whole record not yet given to rustls ends, if it is all here; bytes that
    /// are no TLS record (a plain-HTTP answer) go to rustls as they are, for it to name them.
    fn next_record_end(&self) -> Option<usize> {
        match complete_record(&self.rx[self.fed..self.rx_len]) {
            Ok(Some(len)) => Some(self.fed + len),
            Ok(None) => None,
            Err(_) => (self.fed < self.rx_len).then_some(self.rx_len),
        }
    }

    fn fail(&mut self) -> Handshake {
        self.phase = Phase::Broken;
        Handshake::Failed
    }

    /// After a failed handshake, sends the alert rustls queued so the server learns why. rustls
    /// is given the same buffer as before: it may hold part of a message joined in it, and its
    /// progress counts from that buffer's start (an empty one made it index past the end).
    fn send_alert(&mut self, io: &mut (impl Read + Write)) {
        if let Phase::Handshaking(conn) = &mut self.phase {
            let status = conn.process_tls_records(&mut self.rx[..self.fed]);
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
            key_updates: 0,
            warnings: 0,
            empty_records: 0,
            hello_requests: 0,
        }));
        self.release_handshake_buffers();
        match self.flush(io) {
            Ok(()) => Handshake::Done,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Handshake::Done,
            Err(_) => {
                self.phase = Phase::Broken;
                Handshake::Failed
            }
        }
    }

    /// What rustls has taken in is its own; what follows the handshake's last record is the
    /// record layer's. The buffers grown for the handshake (a certificate chain of 60 KB took
    /// the receive buffer to 128 KiB) are given back: every connection would keep them for the
    /// run. They grow again, to one record at most, if the traffic needs it.
    fn release_handshake_buffers(&mut self) {
        self.rx.copy_within(self.fed..self.rx_len, 0);
        self.rx_len -= self.fed;
        self.fed = 0;
        let rx_size = self.rx_len.max(RX_INITIAL).next_power_of_two().min(RX_MAX);
        if self.rx.len() > rx_size && self.rx_len <= rx_size {
            let mut rx = vec![0; rx_size];
            rx[..self.rx_len].copy_from_slice(&self.rx[..self.rx_len]);
            self.rx = rx;
        }
        let pending = self.tx_len - self.tx_sent;
        if self.tx.len() > TX_INITIAL && pending <= TX_INITIAL {
            let mut tx = vec![0; TX_INITIAL];
            tx[..pending].copy_from_slice(&self.tx[self.tx_sent..self.tx_len]);
            self.tx = tx;
            self.tx_sent = 0;
            self.tx_len = pending;
        }
        self.early.shrink_to_fit();
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
        self.key_update_unsent = false;
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
                .map_err(fault)?;
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
                .map_err(fault)?;
        self.tx_len += sealed;
        self.key_update_unsent = true;
        let (seq, secrets) = t
            .kernel
            .update_tx_secret()
            .map_err(|_| fault(TlsFault::KeyUpdate))?;
        t.tx = RecordKey::new(t.version, secrets, seq).map_err(fault)?;
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
            let Some(len) = complete_record(&self.rx[self.rx_start..self.rx_len]).map_err(fault)?
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
            let (typ, plain) = t.rx.open(&mut self.rx[start..end]).map_err(fault)?;
            let plain = start + plain.start..start + plain.end;
            if plain.is_empty() {
                t.empty_records += 1;
                if t.empty_records > EMPTY_RECORDS_MAX {
                    return Err(fault(TlsFault::TooManyEmptyRecords));
                }
            } else {
                t.empty_records = 0;
            }
            match typ {
                APPLICATION_DATA => {
                    t.key_updates = 0;
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
                        // are ignored, as many as rustls ignores.
                        [_, USER_CANCELED] if t.version == Version::Tls13 => t.warning()?,
                        [WARNING, _] if t.version == Version::Tls12 => t.warning()?,
                        [_, code] => return Err(fault(TlsFault::Alert(code))),
                        _ => return Err(fault(TlsFault::Record(RecordError::Malformed))),
                    }
                }
                HANDSHAKE => {
                    self.rx_start = end;
                    let Range { start, end } = plain;
                    // No handshake message after the handshake is longer than 2^16 - 1 bytes
                    // (as rustls bounds them): a server announcing more cannot make every
                    // connection buffer up to 16 MiB.
                    if self.post_handshake.len() + (end - start) > MAX_POST_HANDSHAKE {
                        return Err(fault(TlsFault::MessageTooLong));
                    }
                    self.post_handshake.extend_from_slice(&self.rx[start..end]);
                    self.handle_post_handshake()?;
                }
                _ => return Err(fault(TlsFault::UnexpectedRecord(typ))),
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
                    .map_err(|_| fault(TlsFault::Ticket))?,
                KEY_UPDATE if t.version == Version::Tls13 => {
                    t.key_updates += 1;
                    if t.key_updates > KEY_UPDATES_MAX {
                        return Err(fault(TlsFault::TooManyKeyUpdates));
                    }
                    let requested = match self.post_handshake[body.clone()] {
                        [0] => false,
                        [1] => true,
                        _ => return Err(fault(TlsFault::MalformedKeyUpdate)),
                    };
                    // A key change ends the record it came in.
                    if body.end != self.post_handshake.len() {
                        return Err(fault(TlsFault::KeyUpdateNotAtEnd));
                    }
                    let (seq, secrets) = t
                        .kernel
                        .update_rx_secret()
                        .map_err(|_| fault(TlsFault::KeyUpdate))?;
                    t.rx = RecordKey::new(t.version, secrets, seq).map_err(fault)?;
                    // One answer unsent answers every request until it is sent: a server that
                    // asks without reading cannot grow the send buffer.
                    if requested && !self.key_update_unsent {
                        self.send_key_update()?;
                    }
                }
                HELLO_REQUEST if t.version == Version::Tls12 && len == 0 => {
                    t.hello_requests += 1;
                    if t.hello_requests > 1 {
                        return Err(fault(TlsFault::TooManyHelloRequests));
                    }
                }
                _ => return Err(fault(TlsFault::UnexpectedMessage(typ))),
            }
            at = body.end;
        }
        self.post_handshake.drain(..at);
        Ok(())
    }
}

#[cfg(test)]
pub mod session_tests;
