//! The reflection client against the test server: descriptors fetched (plain and TLS), and each
//! failure as one line.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use candor_grpc::reflect::{fetch_descriptors, list_services, ReflectError, ReflectTarget};
use candor_grpc::test_server::{TestServer, TestServerOptions};
use candor_grpc::{CallKind, CallName, GrpcMethod, RequestEncoder};

fn target(addr: SocketAddr) -> ReflectTarget {
    ReflectTarget {
        addr,
        authority: addr.to_string(),
        tls: None,
        timeout: Duration::from_secs(20),
    }
}

fn reflecting(tls: bool) -> (SocketAddr, TestServer) {
    TestServer::start(TestServerOptions {
        reflection: true,
        tls,
        ..Default::default()
    })
    .unwrap()
}

#[test]
fn descriptors_from_reflection_resolve_calls_and_encode_messages() {
    let (addr, _server) = reflecting(false);
    let pool = fetch_descriptors(&target(addr), &["candor.bench.Bench"]).unwrap();
    let method = GrpcMethod::resolve(
        &pool,
        &CallName::parse("candor.bench.Bench/Stream").unwrap(),
    )
    .unwrap();
    assert_eq!(method.kind(), CallKind::ServerStreaming);
    assert_eq!(method.path(), "/candor.bench.Bench/Stream");
    let mut out = Vec::new();
    RequestEncoder::new(method.input())
        .encode_framed(br#"{"name":"r","count":3}"#, &mut out)
        .unwrap();
    assert_eq!(out.len(), 5 + 5);
    // bench.proto imports timestamp.proto: the client fetched it too.
    let echo = pool
        .get_message_by_name("candor.bench.EchoRequest")
        .unwrap();
    let mut out = Vec::new();
    RequestEncoder::new(echo)
        .encode_framed(br#"{"sentAt":"2026-01-02T03:04:05Z"}"#, &mut out)
        .unwrap();
    assert!(pool
        .get_message_by_name("google.protobuf.Timestamp")
        .is_some());

    let services = list_services(&target(addr)).unwrap();
    assert!(
        services.contains(&"candor.bench.Bench".to_string()),
        "{services:?}"
    );
    assert!(
        services.iter().any(|s| s.starts_with("grpc.reflection.")),
        "{services:?}"
    );
}

#[test]
fn reflection_works_over_tls() {
    let (addr, server) = reflecting(true);
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_pemfile::certs(&mut server.ca_pem().unwrap().as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let target = ReflectTarget {
        authority: format!("localhost:{}", addr.port()),
        tls: Some(Arc::new(config)),
        ..target(addr)
    };
    let pool = fetch_descriptors(&target, &["candor.bench.Bench"]).unwrap();
    assert!(pool.get_message_by_name("candor.bench.EchoReply").is_some());
}

#[test]
fn an_unknown_service_lists_the_ones_offered() {
    let (addr, _server) = reflecting(false);
    let error = fetch_descriptors(&target(addr), &["candor.bench.Nope"]).unwrap_err();
    match &error {
        ReflectError::UnknownService { service, known, .. } => {
            assert_eq!(service, "candor.bench.Nope");
            assert!(known.contains(&"candor.bench.Bench".to_string()));
        }
        other => panic!("{other}"),
    }
    let text = error.to_string();
    assert!(
        text.contains("no service `candor.bench.Nope`; it offers: candor.bench.Bench"),
        "{text}"
    );
    assert!(!text.contains('\n'));
}

#[test]
fn a_server_without_reflection_is_said_so_in_one_line() {
    let (addr, _server) = TestServer::start(TestServerOptions::default()).unwrap();
    let error = fetch_descriptors(&target(addr), &["candor.bench.Bench"]).unwrap_err();
    assert_eq!(error, ReflectError::NotOffered(addr.to_string()));
    let text = error.to_string();
    assert!(
        text.contains("does not offer gRPC reflection") && text.contains("--proto"),
        "{text}"
    );
}

#[test]
fn nothing_listening_is_a_connect_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let error = fetch_descriptors(&target(port), &["x.Y"]).unwrap_err();
    assert!(matches!(error, ReflectError::Connect { .. }), "{error}");
    assert!(error
        .to_string()
        .starts_with(&format!("--reflect: cannot connect to {port}: ")));
}

#[test]
fn a_silent_server_times_out() {
    // Accepts TCP but never speaks HTTP/2.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let target = ReflectTarget {
        timeout: Duration::from_millis(300),
        ..target(addr)
    };
    let error = fetch_descriptors(&target, &["x.Y"]).unwrap_err();
    assert!(matches!(error, ReflectError::Timeout { .. }), "{error}");
    drop(listener);
}
