//! TLS client configuration (rustls): system roots by default, `--ca` to trust given
//! certificates, `--insecure` to skip verification, ALPN for HTTP/2; and a blocking handshake
//! used before a run so that a certificate problem is one clear error, not a run of failures.

use crate::config::TlsOptions;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

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
    let mut config = if opts.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate(provider())))
            .with_no_client_auth()
    } else {
        let mut roots = RootCertStore::empty();
        match &opts.ca_file {
            Some(path) => {
                let shown = path.display().to_string();
                let pem = std::fs::read(path)
                    .map_err(|e| TlsError::CaFile(shown.clone(), e.to_string()))?;
                let mut added = 0;
                for cert in rustls_pemfile::certs(&mut pem.as_slice()) {
                    let cert = cert.map_err(|e| TlsError::CaFile(shown.clone(), e.to_string()))?;
                    roots
                        .add(cert)
                        .map_err(|e| TlsError::CaFile(shown.clone(), e.to_string()))?;
                    added += 1;
                }
                if added == 0 {
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
        builder.with_root_certificates(roots).with_no_client_auth()
    };
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(Arc::new(config))
}

pub fn server_name(host: &str) -> Result<ServerName<'static>, TlsError> {
    ServerName::try_from(host.to_string()).map_err(|_| TlsError::ServerName(host.into()))
}

/// One blocking connection and handshake, to report certificate problems before the run.
pub fn check_handshake(
    config: &Arc<ClientConfig>,
    host: &str,
    addr: SocketAddr,
    timeout: Duration,
) -> Result<(), TlsError> {
    let name = server_name(host)?;
    let mut sock = TcpStream::connect_timeout(&addr, timeout)
        .map_err(|e| TlsError::Handshake(addr, e.to_string()))?;
    let _ = sock.set_read_timeout(Some(timeout));
    let _ = sock.set_write_timeout(Some(timeout));
    let mut conn = rustls::ClientConnection::new(config.clone(), name)
        .map_err(|e| TlsError::Handshake(addr, e.to_string()))?;
    while conn.is_handshaking() {
        conn.complete_io(&mut sock)
            .map_err(|e| TlsError::Handshake(addr, e.to_string()))?;
    }
    conn.send_close_notify();
    let _ = conn.complete_io(&mut sock);
    Ok(())
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
