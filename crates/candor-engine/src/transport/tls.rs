//! TLS client configuration (rustls): system roots by default, `--ca` to trust given
//! certificates (as issuers, or pinned as the server's own certificate), `--insecure` to skip
//! verification, ALPN for HTTP/2; a blocking handshake used before a run so that a certificate
//! problem is one clear error, not a run of failures; and the plain-words explanation of every
//! handshake failure.

use crate::config::TlsOptions;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, ClientConnection, DigitallySignedStruct, OtherError,
    RootCertStore, SignatureScheme, StreamOwned,
};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("reading CA file {0}: {1}")]
    CaFile(String, String),
    #[error("no certificates in CA file {0}")]
    EmptyCa(String),
    #[error("no trusted root certificates found on this system (use --ca FILE or --insecure)")]
    NoRoots,
    #[error("invalid TLS server name '{0}'")]
    ServerName(String),
    #[error("TLS handshake with {0} failed: {1}")]
    Handshake(SocketAddr, String),
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Builds the client configuration once per run.
pub fn client_config(opts: &TlsOptions, alpn: &[&[u8]]) -> Result<Arc<ClientConfig>, TlsError> {
    let builder = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .expect("ring supports the default protocol versions");
    let verifier: Arc<dyn ServerCertVerifier> = if opts.insecure {
        Arc::new(AcceptAnyCertificate(provider()))
    } else {
        let mut roots = RootCertStore::empty();
        let mut pinned = Vec::new();
        match &opts.ca_file {
            Some(path) => {
                let shown = path.display().to_string();
                let pem = candor_core::bounded::read_file(
                    path,
                    candor_core::bounded::MAX_CA_FILE_BYTES,
                    None,
                )
                .map_err(|e| TlsError::CaFile(shown.clone(), e.to_string()))?;
                for cert in rustls_pemfile::certs(&mut pem.as_slice()) {
                    let cert = cert.map_err(|e| TlsError::CaFile(shown.clone(), e.to_string()))?;
                    // A certificate that cannot be a trust anchor can still be pinned.
                    let _ = roots.add(cert.clone());
                    pinned.push(cert);
                }
                if pinned.is_empty() {
                    return Err(TlsError::EmptyCa(shown));
                }
            }
            None => {
                let found = rustls_native_certs::load_native_certs();
                for cert in found.certs {
                    let _ = roots.add(cert);
                }
                if roots.is_empty() {
                    return Err(TlsError::NoRoots);
                }
            }
        }
        let chain = if roots.is_empty() {
            None
        } else {
            Some(
                WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider())
                    .build()
                    .map_err(|e| {
                        TlsError::CaFile(
                            opts.ca_file
                                .as_ref()
                                .map_or("(system roots)".into(), |p| p.display().to_string()),
                            e.to_string(),
                        )
                    })?,
            )
        };
        Arc::new(PinningVerifier {
            chain,
            pinned,
            provider: provider(),
        })
    };
    let mut config = builder
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    // The load threads take the traffic keys over after the handshake and protect records in
    // buffers of their own, allocating nothing per request (engine/tls_session.rs).
    config.enable_secret_extraction = true;
    Ok(Arc::new(config))
}

pub fn server_name(host: &str) -> Result<ServerName<'static>, TlsError> {
    ServerName::try_from(host.to_string()).map_err(|_| TlsError::ServerName(host.into()))
}

/// The probe's socket: it keeps the first bytes the server sent, to tell a plain-HTTP answer
/// from TLS, and bounds the whole exchange, not each read: a server that trickles a byte per
/// read timeout would otherwise hold the check for as long as it likes (`-T` bounds a
/// handshake during the run; the check must be bounded too).
pub struct Recording {
    sock: TcpStream,
    first: Vec<u8>,
    deadline: Instant,
}

impl Recording {
    /// `sock`, for an exchange that must end within `timeout` from now.
    pub fn new(sock: TcpStream, timeout: Duration) -> Recording {
        Recording {
            sock,
            first: Vec::new(),
            deadline: Instant::now() + timeout,
        }
    }

    /// The next exchange (the HTTP/2 preface after the handshake) has `timeout` from now.
    pub fn restart(&mut self, timeout: Duration) {
        self.deadline = Instant::now() + timeout;
    }

    /// What is left of the deadline, as the socket's timeout; `TimedOut` once it has passed.
    fn left(&self) -> io::Result<Duration> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::ErrorKind::TimedOut.into());
        }
        Ok(left)
    }
}

impl Read for Recording {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.sock.set_read_timeout(Some(self.left()?))?;
        let n = self.sock.read(buf)?;
        let keep = n.min(16 - self.first.len().min(16));
        self.first.extend_from_slice(&buf[..keep]);
        Ok(n)
    }
}

impl Write for Recording {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.sock.set_write_timeout(Some(self.left()?))?;
        self.sock.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.sock.flush()
    }
}

/// A TLS stream after a successful blocking handshake (see [`handshake`]).
pub type BlockingTls = StreamOwned<ClientConnection, Recording>;

/// The client configuration, offering `alpn`, that a protocol's load threads share over a TLS
/// target; `None` in the clear.
pub fn shared_client_config(
    config: &crate::config::LoadConfig,
    alpn: &[&[u8]],
) -> Result<Option<Arc<ClientConfig>>, TlsError> {
    if !config.target.scheme.is_tls() {
        return Ok(None);
    }
    Ok(Some(client_config(&config.tls, alpn)?))
}

/// The pre-run probe of a protocol that needs nothing beyond a connection: over a TLS target, one
/// blocking handshake offering `alpn`, closed in good form; nothing in the clear.
pub fn probe_handshake(
    config: &crate::config::LoadConfig,
    alpn: &[&[u8]],
    timeout: Duration,
) -> Result<(), TlsError> {
    if !config.target.scheme.is_tls() {
        return Ok(());
    }
    let t = &config.target;
    let client = client_config(&config.tls, alpn)?;
    let mut stream = handshake(&client, &config.tls, &t.host, t.addr, timeout)?;
    stream.conn.send_close_notify();
    let _ = stream.conn.complete_io(&mut stream.sock);
    Ok(())
}

/// One blocking connection and handshake (reads and writes bounded by `timeout`), so that
/// certificate and protocol problems are reported before the run.
pub fn handshake(
    config: &Arc<ClientConfig>,
    opts: &TlsOptions,
    host: &str,
    addr: SocketAddr,
    timeout: Duration,
) -> Result<BlockingTls, TlsError> {
    let name = server_name(host)?;
    let sock = TcpStream::connect_timeout(&addr, timeout)
        .map_err(|e| TlsError::Handshake(addr, e.to_string()))?;
    let mut sock = Recording::new(sock, timeout);
    let mut conn = ClientConnection::new(config.clone(), name)
        .map_err(|e| TlsError::Handshake(addr, e.to_string()))?;
    while conn.is_handshaking() {
        if let Err(e) = conn.complete_io(&mut sock) {
            let ctx = Context {
                host,
                ca_file: opts.ca_file.as_deref(),
                offered_h2: config.alpn_protocols.iter().any(|p| p == b"h2"),
            };
            return Err(TlsError::Handshake(
                addr,
                explain_io(&e, &sock.first, timeout, &ctx),
            ));
        }
    }
    Ok(StreamOwned::new(conn, sock))
}

/// [`handshake`], then a polite close.
pub fn check_handshake(
    config: &Arc<ClientConfig>,
    opts: &TlsOptions,
    host: &str,
    addr: SocketAddr,
    timeout: Duration,
) -> Result<(), TlsError> {
    let mut tls = handshake(config, opts, host, addr, timeout)?;
    tls.conn.send_close_notify();
    let _ = tls.conn.complete_io(&mut tls.sock);
    Ok(())
}

/// What an explanation may mention besides the error itself.
pub struct Context<'a> {
    pub host: &'a str,
    pub ca_file: Option<&'a std::path::Path>,
    /// `h2` was offered by ALPN (HTTP/2 was asked for).
    pub offered_h2: bool,
}

const PLAIN_HTTP_HINT: &str = "is it a plain-HTTP server? try http://";
const TRUST_HINT: &str = "use --ca FILE to trust it, or -k/--insecure to skip checks";

/// An I/O failure during the handshake, in words: a server that never answered or answered in
/// plain text is named as such; a TLS error is explained by [`explain`].
pub fn explain_io(e: &io::Error, first_bytes: &[u8], timeout: Duration, ctx: &Context) -> String {
    if first_bytes.starts_with(b"HTTP/") {
        return "the server answered in plain HTTP, not TLS (try http://)".into();
    }
    if let Some(tls) = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
        return explain(tls, ctx);
    }
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut if first_bytes.is_empty() => format!(
            "the server did not answer the TLS handshake within {} ({PLAIN_HTTP_HINT})",
            candor_core::units::format_ns(timeout.as_nanos() as f64)
        ),
        io::ErrorKind::UnexpectedEof | io::ErrorKind::ConnectionReset if first_bytes.is_empty() => {
            format!("the server closed the connection without answering the TLS handshake ({PLAIN_HTTP_HINT})")
        }
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => format!(
            "the server did not complete the TLS handshake within {} (it answered, too slowly)",
            candor_core::units::format_ns(timeout.as_nanos() as f64)
        ),
        io::ErrorKind::UnexpectedEof | io::ErrorKind::ConnectionReset => {
            "the server closed the connection in the middle of the TLS handshake".into()
        }
        _ => e.to_string(),
    }
}

/// The server's certificate is self-signed and not among the trusted ones: told apart from an
/// unknown issuer because the advice differs.
#[derive(Debug, thiserror::Error)]
#[error("self-signed certificate")]
pub struct SelfSigned;

/// A rustls handshake error as one sentence a person can act on.
pub fn explain(e: &rustls::Error, ctx: &Context) -> String {
    use CertificateError as C;
    let host = ctx.host;
    let trusted = match ctx.ca_file {
        Some(p) => format!("the certificates in {}", p.display()),
        None => "this system's trusted roots".into(),
    };
    match e {
        rustls::Error::InvalidCertificate(c) => match c {
            C::Expired => format!("the server's certificate has expired ({TRUST_HINT})"),
            C::ExpiredContext { time, not_after } => format!(
                "the server's certificate expired on {} (it is now {}); renew it, or use -k/--insecure to skip checks",
                utc(not_after.as_secs()),
                utc(time.as_secs())
            ),
            C::NotValidYet => "the server's certificate is not valid yet (check this machine's clock)".into(),
            C::NotValidYetContext { time, not_before } => format!(
                "the server's certificate is not valid before {} (it is now {}; check the clocks)",
                utc(not_before.as_secs()),
                utc(time.as_secs())
            ),
            C::NotValidForName => format!(
                "the server's certificate is not valid for the name '{host}' (connect by a name it lists, or use -k/--insecure to skip checks)"
            ),
            C::NotValidForNameContext { presented, .. } => format!(
                "the server's certificate is for {}, not '{host}' (connect by one of those names, or use -k/--insecure to skip checks)",
                if presented.is_empty() {
                    "no names at all".to_string()
                } else {
                    presented.iter().map(|p| format!("'{}'", shown_name(p))).collect::<Vec<_>>().join(", ")
                }
            ),
            C::UnknownIssuer => format!(
                "the server's certificate was not issued by an authority in {trusted} (use --ca FILE with its issuer's certificate, or -k/--insecure to skip checks)"
            ),
            C::BadSignature => "the server's certificate chain has a signature that does not verify".into(),
            C::Revoked => "the server's certificate has been revoked".into(),
            C::InvalidPurpose | C::InvalidPurposeContext { .. } => {
                "the server's certificate is not meant for TLS servers (its extended key usage excludes it)".into()
            }
            C::BadEncoding => "the server's certificate is malformed".into(),
            C::Other(OtherError(inner)) if inner.downcast_ref::<SelfSigned>().is_some() => {
                format!("the server's certificate is self-signed and not in {trusted} ({TRUST_HINT})")
            }
            C::Other(OtherError(inner))
                if matches!(
                    inner.downcast_ref::<webpki::Error>(),
                    Some(webpki::Error::CaUsedAsEndEntity)
                ) =>
            {
                format!(
                    "the server presented a CA certificate as its own and it is not in {trusted} (to trust exactly this certificate, {TRUST_HINT})"
                )
            }
            other => format!("the server's certificate was rejected: {other}"),
        },
        rustls::Error::AlertReceived(rustls::AlertDescription::NoApplicationProtocol) if ctx.offered_h2 => {
            "the server does not speak HTTP/2 over TLS: candor offered 'h2' by ALPN and the server refused it; drop --h2 to test it with HTTP/1.1".into()
        }
        rustls::Error::AlertReceived(a) => format!("the server ended the handshake with the TLS alert '{a:?}'"),
        rustls::Error::InvalidMessage(
            rustls::InvalidMessage::HandshakePayloadTooLarge | rustls::InvalidMessage::MessageTooLarge,
        ) => "the server sent a TLS handshake message over the 64 KiB TLS clients accept (a certificate \
              chain that long: have it send its own chain, not a whole CA bundle)"
            .into(),
        rustls::Error::InvalidMessage(_) | rustls::Error::InappropriateMessage { .. } => {
            format!("the server's answer is not TLS ({PLAIN_HTTP_HINT})")
        }
        rustls::Error::PeerIncompatible(_) => {
            format!("the server and candor have no TLS version or cipher suite in common ({e})")
        }
        other => other.to_string(),
    }
}

/// A name as webpki presents it (`DnsName("a.example")`, `IpAddress(127.0.0.1)`), as written
/// in a URL.
fn shown_name(presented: &str) -> &str {
    match presented.split_once('(') {
        Some((kind, rest))
            if kind.chars().all(|c| c.is_ascii_alphabetic()) && rest.ends_with(')') =>
        {
            rest[..rest.len() - 1].trim_matches('"')
        }
        _ => presented,
    }
}

/// `secs` since the Unix epoch as "YYYY-MM-DD HH:MM:SS UTC" (proleptic Gregorian calendar).
fn utc(secs: u64) -> String {
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Days to civil date: Howard Hinnant's algorithm, shifted so that years begin in March.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// Full chain verification (webpki) for every server, except that a server presenting exactly
/// (byte for byte) one of the `--ca` certificates is accepted after checking only its name and
/// validity dates: that is what `--ca self-signed.pem` means to the person who made it, even
/// when the certificate is marked as a CA (as `openssl req -x509` makes it) and webpki would
/// refuse it as an end entity. Handshake signatures are always verified.
#[derive(Debug)]
struct PinningVerifier {
    /// None when `--ca` held no usable trust anchor (pinning only).
    chain: Option<Arc<WebPkiServerVerifier>>,
    pinned: Vec<CertificateDer<'static>>,
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl PinningVerifier {
    fn verify_pinned(
        end_entity: &CertificateDer<'_>,
        server_name: &ServerName<'_>,
        now: UnixTime,
    ) -> Result<(), rustls::Error> {
        let bad = |c| rustls::Error::InvalidCertificate(c);
        let parsed = rustls::server::ParsedCertificate::try_from(end_entity)?;
        rustls::client::verify_server_name(&parsed, server_name)?;
        let (_, cert) = x509_parser::parse_x509_certificate(end_entity.as_ref())
            .map_err(|_| bad(CertificateError::BadEncoding))?;
        let to_unix = |t: i64| UnixTime::since_unix_epoch(Duration::from_secs(t.max(0) as u64));
        let validity = cert.validity();
        let (not_before, not_after) = (
            validity.not_before.timestamp(),
            validity.not_after.timestamp(),
        );
        let now_s = now.as_secs() as i64;
        if now_s < not_before {
            return Err(bad(CertificateError::NotValidYetContext {
                time: now,
                not_before: to_unix(not_before),
            }));
        }
        if now_s > not_after {
            return Err(bad(CertificateError::ExpiredContext {
                time: now,
                not_after: to_unix(not_after),
            }));
        }
        Ok(())
    }
}

/// True when the certificate names itself as its issuer (with no chain sent beside it).
fn self_issued(end_entity: &CertificateDer<'_>) -> bool {
    x509_parser::parse_x509_certificate(end_entity.as_ref())
        .is_ok_and(|(_, c)| c.issuer().as_raw() == c.subject().as_raw())
}

impl ServerCertVerifier for PinningVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if self
            .pinned
            .iter()
            .any(|p| p.as_ref() == end_entity.as_ref())
        {
            Self::verify_pinned(end_entity, server_name, now)?;
            return Ok(ServerCertVerified::assertion());
        }
        let result = match &self.chain {
            Some(v) => {
                v.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
            }
            None => Err(rustls::Error::InvalidCertificate(
                CertificateError::UnknownIssuer,
            )),
        };
        result.map_err(|e| {
            let untrusted_self_signed = match &e {
                rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer) => true,
                rustls::Error::InvalidCertificate(CertificateError::Other(OtherError(inner))) => {
                    matches!(
                        inner.downcast_ref::<webpki::Error>(),
                        Some(webpki::Error::CaUsedAsEndEntity)
                    )
                }
                _ => false,
            };
            if untrusted_self_signed && intermediates.is_empty() && self_issued(end_entity) {
                rustls::Error::InvalidCertificate(CertificateError::Other(OtherError(Arc::new(
                    SelfSigned,
                ))))
            } else {
                e
            }
        })
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// `--insecure`: accepts any certificate but still checks handshake signatures, so the
/// connection is encrypted and the cost of TLS is measured faithfully.
#[derive(Debug)]
struct AcceptAnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{date_time_ymd, BasicConstraints, CertificateParams, IsCa, KeyPair};
    use std::path::Path;

    /// A self-signed certificate for `names`, marked as a CA as `openssl req -x509` makes it,
    /// with a subject of its own (rcgen gives every certificate the same one by default).
    fn ca_flagged(names: &[&str]) -> (CertificateDer<'static>, KeyPair) {
        static SERIAL: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let key = KeyPair::generate().unwrap();
        let mut p = CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
            .unwrap();
        let n = SERIAL.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        p.distinguished_name
            .push(rcgen::DnType::CommonName, format!("candor test {n}"));
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        (p.self_signed(&key).unwrap().der().clone(), key)
    }

    fn verifier(roots: &[&CertificateDer<'static>]) -> PinningVerifier {
        let mut store = RootCertStore::empty();
        for r in roots {
            store.add((*r).clone()).unwrap();
        }
        PinningVerifier {
            chain: Some(
                WebPkiServerVerifier::builder_with_provider(Arc::new(store), provider())
                    .build()
                    .unwrap(),
            ),
            pinned: roots.iter().map(|r| (*r).clone()).collect(),
            provider: provider(),
        }
    }

    fn ip() -> ServerName<'static> {
        server_name("127.0.0.1").unwrap()
    }

    fn now() -> UnixTime {
        UnixTime::now()
    }

    fn verify(
        v: &PinningVerifier,
        ee: &CertificateDer<'_>,
        name: &ServerName<'_>,
        at: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        v.verify_server_cert(ee, &[], name, &[], at)
    }

    fn ctx(host: &str) -> Context<'_> {
        Context {
            host,
            ca_file: Some(Path::new("ca.pem")),
            offered_h2: false,
        }
    }

    #[test]
    fn a_ca_flagged_self_signed_certificate_given_with_ca_is_accepted() {
        let (cert, _) = ca_flagged(&["127.0.0.1"]);
        let v = verifier(&[&cert]);
        verify(&v, &cert, &ip(), now()).expect("pinned certificate");
        // Without pinning, webpki alone refuses it: the case this verifier exists for.
        let webpki = v.chain.as_ref().unwrap();
        let refused = webpki.verify_server_cert(&cert, &[], &ip(), &[], now());
        assert!(
            format!("{refused:?}").contains("CaUsedAsEndEntity"),
            "{refused:?}"
        );
    }

    #[test]
    fn a_pinned_certificate_still_has_its_name_and_dates_checked() {
        let (cert, _) = ca_flagged(&["127.0.0.1"]);
        let v = verifier(&[&cert]);
        let wrong = verify(&v, &cert, &server_name("localhost").unwrap(), now()).unwrap_err();
        assert!(
            matches!(
                &wrong,
                rustls::Error::InvalidCertificate(CertificateError::NotValidForNameContext { presented, .. })
                    if presented.iter().any(|p| p.contains("127.0.0.1"))
            ),
            "{wrong:?}"
        );
        // rcgen's default validity runs from 1975 to 4096.
        let at = |secs| UnixTime::since_unix_epoch(Duration::from_secs(secs));
        let early = verify(&v, &cert, &ip(), at(0)).unwrap_err();
        assert!(
            matches!(
                early,
                rustls::Error::InvalidCertificate(CertificateError::NotValidYetContext { .. })
            ),
            "{early:?}"
        );
        let key = KeyPair::generate().unwrap();
        let mut p = CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        p.not_before = date_time_ymd(2000, 1, 1);
        p.not_after = date_time_ymd(2001, 1, 1);
        let old = p.self_signed(&key).unwrap().der().clone();
        let expired = verify(&verifier(&[&old]), &old, &ip(), now()).unwrap_err();
        let said = explain(&expired, &ctx("127.0.0.1"));
        assert!(
            said.contains("expired on 2001-01-01 00:00:00 UTC"),
            "{said}"
        );
    }

    #[test]
    fn certificates_not_given_get_full_chain_verification() {
        // A CA and a server certificate it signed: trusting the CA accepts the server's
        // certificate (webpki), which is not pinned.
        let ca_key = KeyPair::generate().unwrap();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "candor test CA");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = ca_params.self_signed(&ca_key).unwrap();
        let leaf_key = KeyPair::generate().unwrap();
        let leaf = CertificateParams::new(vec!["127.0.0.1".to_string()])
            .unwrap()
            .signed_by(&leaf_key, &ca, &ca_key)
            .unwrap();
        let v = verifier(&[ca.der()]);
        verify(&v, leaf.der(), &ip(), now()).expect("chain to the CA");
        // Another CA's certificate: unknown issuer.
        let (other, _) = ca_flagged(&["127.0.0.1"]);
        let e = verify(&verifier(&[&other]), leaf.der(), &ip(), now()).unwrap_err();
        assert_eq!(
            e,
            rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer)
        );
        // A self-signed certificate that was not given: told apart, with the advice for it.
        let (stranger, _) = ca_flagged(&["127.0.0.1"]);
        let e = verify(&v, &stranger, &ip(), now()).unwrap_err();
        let said = explain(&e, &ctx("127.0.0.1"));
        assert!(
            said.contains("self-signed") && said.contains("--ca FILE"),
            "{said}"
        );
        let plain = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
        let e = verify(&v, plain.cert.der(), &ip(), now()).unwrap_err();
        assert!(
            explain(&e, &ctx("127.0.0.1")).contains("self-signed"),
            "{e:?}"
        );
    }

    #[test]
    fn a_ca_file_is_read_bounded() {
        let opts = TlsOptions {
            insecure: false,
            ca_file: Some("/dev/zero".into()),
        };
        let e = client_config(&opts, &[]).unwrap_err().to_string();
        assert!(
            e.contains("/dev/zero") && e.contains("larger than 16 MiB"),
            "{e}"
        );
    }

    #[test]
    fn every_verification_failure_is_a_sentence() {
        use rustls::Error as E;
        use CertificateError as C;
        let at = |secs| UnixTime::since_unix_epoch(Duration::from_secs(secs));
        let cases: Vec<(E, &str)> = vec![
            (
                E::InvalidCertificate(C::ExpiredContext {
                    time: at(1_800_000_000),
                    not_after: at(1_700_000_000),
                }),
                "the server's certificate expired on 2023-11-14 22:13:20 UTC (it is now 2027-01-15 08:00:00 UTC)",
            ),
            (E::InvalidCertificate(C::Expired), "has expired"),
            (
                E::InvalidCertificate(C::NotValidYetContext {
                    time: at(0),
                    not_before: at(86_400 * 366),
                }),
                "not valid before 1971-01-02 00:00:00 UTC (it is now 1970-01-01 00:00:00 UTC",
            ),
            (E::InvalidCertificate(C::NotValidYet), "not valid yet"),
            (
                E::InvalidCertificate(C::NotValidForNameContext {
                    expected: server_name("example.org").unwrap(),
                    presented: vec![
                        "DnsName(\"a.example\")".into(),
                        "IpAddress(10.0.0.1)".into(),
                    ],
                }),
                "is for 'a.example', '10.0.0.1', not 'example.org'",
            ),
            (
                E::InvalidCertificate(C::NotValidForName),
                "not valid for the name 'example.org'",
            ),
            (
                E::InvalidCertificate(C::UnknownIssuer),
                "not issued by an authority in the certificates in ca.pem (use --ca FILE",
            ),
            (
                E::InvalidCertificate(C::Other(OtherError(Arc::new(SelfSigned)))),
                "self-signed and not in the certificates in ca.pem (use --ca FILE to trust it, or -k/--insecure to skip checks)",
            ),
            (
                E::InvalidCertificate(C::Other(OtherError(Arc::new(
                    webpki::Error::CaUsedAsEndEntity,
                )))),
                "presented a CA certificate as its own",
            ),
            (E::InvalidCertificate(C::BadSignature), "does not verify"),
            (E::InvalidCertificate(C::Revoked), "revoked"),
            (E::InvalidCertificate(C::InvalidPurpose), "not meant for TLS servers"),
            (E::InvalidCertificate(C::BadEncoding), "malformed"),
            (
                E::InvalidMessage(rustls::InvalidMessage::InvalidContentType),
                "not TLS (is it a plain-HTTP server? try http://)",
            ),
            (
                E::AlertReceived(rustls::AlertDescription::HandshakeFailure),
                "TLS alert 'HandshakeFailure'",
            ),
        ];
        for (e, want) in cases {
            let said = explain(&e, &ctx("example.org"));
            assert!(said.contains(want), "{e:?}: {said}");
            assert!(!said.contains('\n'), "{said}");
        }
        // No --ca: the system's roots are named instead.
        let said = explain(
            &E::InvalidCertificate(C::UnknownIssuer),
            &Context {
                host: "h",
                ca_file: None,
                offered_h2: false,
            },
        );
        assert!(said.contains("this system's trusted roots"), "{said}");
        // ALPN refused while asking for HTTP/2.
        let said = explain(
            &E::AlertReceived(rustls::AlertDescription::NoApplicationProtocol),
            &Context {
                host: "h",
                ca_file: None,
                offered_h2: true,
            },
        );
        assert!(
            said.contains("does not speak HTTP/2") && said.contains("drop --h2"),
            "{said}"
        );
    }

    #[test]
    fn a_server_that_is_not_tls_is_named_as_such() {
        let t = Duration::from_secs(2);
        let c = ctx("h");
        let timed_out = io::Error::from(io::ErrorKind::WouldBlock);
        assert_eq!(
            explain_io(&timed_out, b"", t, &c),
            "the server did not answer the TLS handshake within 2.000s (is it a plain-HTTP server? try http://)"
        );
        let eof = io::Error::from(io::ErrorKind::UnexpectedEof);
        assert!(explain_io(&eof, b"", t, &c).contains("closed the connection without answering"));
        let bad = io::Error::new(
            io::ErrorKind::InvalidData,
            rustls::Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType),
        );
        assert!(explain_io(&bad, b"HTTP/1.1 400 Bad", t, &c).contains("answered in plain HTTP"));
        let cert = io::Error::new(
            io::ErrorKind::InvalidData,
            rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer),
        );
        assert!(explain_io(&cert, &[22, 3, 3], t, &c).contains("not issued by an authority"));
    }

    #[test]
    fn dates_and_names_read_as_written() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc(4_102_444_799), "2099-12-31 23:59:59 UTC");
        assert_eq!(shown_name("DnsName(\"a.example\")"), "a.example");
        assert_eq!(shown_name("IpAddress(::1)"), "::1");
        assert_eq!(shown_name("odd"), "odd");
    }
}
