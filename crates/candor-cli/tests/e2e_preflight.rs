//! The pre-run check of `candor run`, end to end: certificates people actually make (a
//! self-signed certificate marked as a CA, given with `--ca`), every certificate problem as one
//! line before any load (wrong host, unknown issuer, self-signed, expired), `https://` to a
//! plain-HTTP server, and `--h2` against servers that do not speak HTTP/2.

mod common;

use common::{assert_balanced, candor, req, run_json, serial, Server};
use rcgen::{date_time_ymd, BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
use std::path::PathBuf;
use std::process::Output;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A certificate and its key, in DER and PEM.
struct Made {
    der: rustls::pki_types::CertificateDer<'static>,
    pem: String,
    key: KeyPair,
}

/// A certificate for `names`; self-signed and marked as a CA (as `openssl req -x509` makes
/// it) unless `issuer` signs it; valid until `until` (year) if given.
fn make(
    cn: &str,
    names: &[&str],
    issuer: Option<&(rcgen::Certificate, KeyPair)>,
    until: Option<i32>,
) -> Made {
    let key = KeyPair::generate().unwrap();
    let mut p =
        CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
    p.distinguished_name.push(DnType::CommonName, cn);
    if let Some(year) = until {
        p.not_before = date_time_ymd(year - 1, 1, 1);
        p.not_after = date_time_ymd(year, 1, 1);
    }
    let cert = match issuer {
        Some((ca, ca_key)) => p.signed_by(&key, ca, ca_key).unwrap(),
        None => {
            p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
            p.self_signed(&key).unwrap()
        }
    };
    Made {
        der: cert.der().clone(),
        pem: cert.pem(),
        key,
    }
}

fn ca(cn: &str) -> (rcgen::Certificate, KeyPair) {
    let key = KeyPair::generate().unwrap();
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.distinguished_name.push(DnType::CommonName, cn);
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    (p.self_signed(&key).unwrap(), key)
}

/// A TLS HTTP/1.1 server on a free loopback port presenting `cert` (and `chain` after it),
/// offering `alpn`; returns its port. Every request is answered `200 ok`.
fn tls_server(cert: &Made, chain: &[&rcgen::Certificate], alpn: &[&[u8]]) -> u16 {
    let mut certs = vec![cert.der.clone()];
    certs.extend(chain.iter().map(|c| c.der().clone()));
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(cert.key.serialize_der().into());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    common::serve_tls_ok(Arc::new(config))
}

struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let d = std::env::temp_dir().join(format!("candor-preflight-{}-{tag}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        TempDir(d)
    }
    fn write(&self, name: &str, text: &str) -> String {
        let p = self.0.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `candor run ARGS` meant to fail before the load: returns its one-line error, after
/// checking the exit code, that no report was printed and that it did not run the load.
fn refused(args: &[&str]) -> String {
    let t0 = Instant::now();
    // -d 60s: a run that started its load would take a minute; the check takes milliseconds,
    // and 30 s leaves a stalled machine plenty.
    let out: Output = candor()
        .args(["run", "-R", "100", "-d", "60s", "-T", "2s", "--quiet"])
        .args(args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
    assert!(!out.status.success(), "{err}");
    assert!(
        out.stdout.is_empty(),
        "no report: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        t0.elapsed() < Duration::from_secs(30),
        "took {:?}",
        t0.elapsed()
    );
    err
}

#[test]
fn a_ca_flagged_self_signed_certificate_given_with_ca_is_trusted() {
    let _g = serial();
    let dir = TempDir::new("pinned");
    let cert = make("localhost", &["127.0.0.1"], None, None);
    let ca = dir.write("cert.pem", &cert.pem);
    let port = tls_server(&cert, &[], &[b"http/1.1"]);
    let url = format!("https://127.0.0.1:{port}/");
    let (v, _) = run_json(&[
        "-R", "200", "-c", "2", "-t", "1", "-d", "1s", "--ca", &ca, &url,
    ]);
    assert_balanced(&v);
    assert_eq!(req(&v, "completed"), 200);

    // Pinning still checks the name: the certificate is for 127.0.0.1 only.
    let err = refused(&["--ca", &ca, &format!("https://localhost:{port}/")]);
    assert!(err.contains("is for '127.0.0.1', not 'localhost'"), "{err}");
}

#[test]
fn certificate_problems_are_one_sentence_before_any_load() {
    let _g = serial();
    let dir = TempDir::new("problems");
    let authority = ca("candor test authority");
    let stranger = ca("someone else");
    let stranger_pem = dir.write("stranger.pem", &stranger.0.pem());

    // Unknown issuer: signed by an authority that is not given.
    let leaf = make("server", &["127.0.0.1"], Some(&authority), None);
    let port = tls_server(&leaf, &[], &[b"http/1.1"]);
    let err = refused(&["--ca", &stranger_pem, &format!("https://127.0.0.1:{port}/")]);
    assert!(
        err.contains("not issued by an authority in the certificates in")
            && err.contains("use --ca FILE with its issuer's certificate"),
        "{err}"
    );
    // The same server with its authority given is fine.
    let authority_pem = dir.write("authority.pem", &authority.0.pem());
    let (v, _) = run_json(&[
        "-R",
        "50",
        "-c",
        "1",
        "-t",
        "1",
        "-d",
        "1s",
        "--ca",
        &authority_pem,
        &format!("https://127.0.0.1:{port}/"),
    ]);
    assert_eq!(req(&v, "completed"), 50);

    // Self-signed and not given.
    let own = make("self", &["127.0.0.1"], None, None);
    let port = tls_server(&own, &[], &[b"http/1.1"]);
    let err = refused(&["--ca", &stranger_pem, &format!("https://127.0.0.1:{port}/")]);
    assert!(
        err.contains("self-signed")
            && err.contains("use --ca FILE to trust it, or -k/--insecure to skip checks"),
        "{err}"
    );

    // Expired, even though pinned.
    let old = make("old", &["127.0.0.1"], None, Some(2001));
    let old_pem = dir.write("old.pem", &old.pem);
    let port = tls_server(&old, &[], &[b"http/1.1"]);
    let err = refused(&["--ca", &old_pem, &format!("https://127.0.0.1:{port}/")]);
    assert!(err.contains("expired on 2001-01-01 00:00:00 UTC"), "{err}");
}

#[test]
fn https_to_a_plain_http_server_says_so() {
    let _g = serial();
    let server = Server::start(&[]);
    let url = server.url.replacen("http://", "https://", 1);
    let err = refused(&["-k", &url]);
    assert!(
        err.contains("plain") && err.contains("try http://"),
        "{err}"
    );
}

#[test]
fn h2_against_an_http1_server_fails_before_any_load() {
    let _g = serial();
    let server = Server::start(&[]);
    let err = refused(&["--h2", &server.url]);
    assert!(
        err.contains("HTTP/2") && err.contains("h2c") && err.contains("drop --h2"),
        "{err}"
    );

    // Over TLS: a server whose ALPN offers only http/1.1.
    let dir = TempDir::new("alpn");
    let cert = make("localhost", &["127.0.0.1"], None, None);
    let ca = dir.write("cert.pem", &cert.pem);
    let port = tls_server(&cert, &[], &[b"http/1.1"]);
    let err = refused(&["--h2", "--ca", &ca, &format!("https://127.0.0.1:{port}/")]);
    assert!(
        err.contains("does not speak HTTP/2 over TLS") && err.contains("drop --h2"),
        "{err}"
    );
}
