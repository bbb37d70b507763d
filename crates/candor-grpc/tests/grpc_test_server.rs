//! The gRPC test server, driven by tonic's client (and raw HTTP/2 where tonic hides the
//! frames): each behaviour it offers, proved.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use candor_grpc::test_server::pb::bench_client::BenchClient;
use candor_grpc::test_server::pb::{EchoRequest, StreamRequest};
use candor_grpc::test_server::{InjectedFailure, Stall, TestServer, TestServerOptions};
use candor_grpc::Code;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint};

async fn client(addr: SocketAddr) -> BenchClient<Channel> {
    BenchClient::connect(format!("http://{addr}"))
        .await
        .expect("connects")
}

fn echo(name: &str, seq: i64) -> EchoRequest {
    EchoRequest {
        name: name.to_string(),
        seq,
        ..Default::default()
    }
}

#[tokio::test]
async fn echo_answers_with_the_request_and_counts_calls() {
    let (addr, server) = TestServer::start(TestServerOptions::default()).unwrap();
    assert!(addr.ip().is_loopback() && addr.port() != 0);
    let mut client = client(addr).await;
    let reply = client.echo(echo("x", 7)).await.unwrap().into_inner();
    assert_eq!((reply.message.as_str(), reply.seq), ("x", 7));
    client.echo(echo("y", 8)).await.unwrap();
    assert_eq!(server.calls(), 2);
    assert_eq!(server.connections(), 1);
}

#[tokio::test]
async fn server_streaming_sends_the_asked_number_of_replies() {
    let (addr, _server) = TestServer::start(TestServerOptions::default()).unwrap();
    let mut client = client(addr).await;
    let mut stream = client
        .stream(StreamRequest {
            name: "s".to_string(),
            count: 5,
            interval_us: 1_000,
        })
        .await
        .unwrap()
        .into_inner();
    let mut seqs = Vec::new();
    while let Some(reply) = stream.message().await.unwrap() {
        assert_eq!(reply.message, "s");
        seqs.push(reply.seq);
    }
    assert_eq!(seqs, [0, 1, 2, 3, 4]);
}

#[tokio::test]
async fn every_call_waits_the_delay_and_metadata_overrides_it() {
    let options = TestServerOptions {
        delay: Duration::from_millis(60),
        ..Default::default()
    };
    let (addr, _server) = TestServer::start(options).unwrap();
    let mut client = client(addr).await;
    let started = Instant::now();
    client.echo(echo("x", 1)).await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(60));
    let mut request = tonic::Request::new(echo("x", 2));
    request
        .metadata_mut()
        .insert("x-delay-ms", "150".parse().unwrap());
    let started = Instant::now();
    client.echo(request).await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(150));
}

#[tokio::test]
async fn a_call_arriving_in_a_stall_waits_for_its_end() {
    // Windows are [k·600 + 200, (k+1)·600) ms after the start.
    let stall = Stall {
        every_ns: 600_000_000,
        for_ns: 400_000_000,
    };
    let options = TestServerOptions {
        stall: Some(stall),
        ..Default::default()
    };
    let (addr, server) = TestServer::start(options).unwrap();
    let mut client = client(addr).await;
    // Sleep to a window's start, then call: the answer cannot come before its end. A wake-up
    // so late that it missed the window tries the next one.
    for _ in 0..20 {
        let now = candor_core::now_ns();
        let since = now - server.started_ns();
        let window_start = server.started_ns() + (since / 600_000_000) * 600_000_000 + 200_000_000;
        let window_start = if window_start <= now {
            window_start + 600_000_000
        } else {
            window_start
        };
        tokio::time::sleep(Duration::from_nanos(window_start - now)).await;
        let sent = candor_core::now_ns();
        let Some(end) = stall.window_end_at(server.started_ns(), sent) else {
            continue;
        };
        client.echo(echo("x", 1)).await.unwrap();
        let answered = candor_core::now_ns();
        assert!(
            answered >= end,
            "answered {} ns before the stall's end",
            end - answered
        );
        return;
    }
    panic!("never woke inside a 400 ms stall window in 20 tries");
}

#[tokio::test]
async fn calls_fail_with_the_configured_status_and_on_command() {
    let options = TestServerOptions {
        failure: Some(InjectedFailure {
            code: Code::Unavailable,
            every: 2,
        }),
        ..Default::default()
    };
    let (addr, server) = TestServer::start(options).unwrap();
    let mut client = client(addr).await;
    assert!(client.echo(echo("x", 1)).await.is_ok());
    let status = client.echo(echo("x", 2)).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::Unavailable);
    assert!(client.echo(echo("x", 3)).await.is_ok());

    server.set_failure(Some(InjectedFailure {
        code: Code::ResourceExhausted,
        every: 1,
    }));
    let status = client.echo(echo("x", 4)).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::ResourceExhausted);
    server.set_failure(None);
    assert!(client.echo(echo("x", 5)).await.is_ok());

    for code in [
        Code::NotFound,
        Code::DeadlineExceeded,
        Code::Unauthenticated,
    ] {
        let mut request = tonic::Request::new(echo("x", 6));
        request
            .metadata_mut()
            .insert("x-fail", code.name().parse().unwrap());
        let status = client.echo(request).await.unwrap_err();
        assert_eq!(status.code() as u32, code.as_u32());
    }
}

#[tokio::test]
async fn dropped_connections_cut_calls_in_flight_and_new_ones_are_accepted() {
    let (addr, server) = TestServer::start(TestServerOptions::default()).unwrap();
    let mut slow = client(addr).await;
    let call = tokio::spawn(async move {
        let mut request = tonic::Request::new(echo("slow", 1));
        request
            .metadata_mut()
            .insert("x-delay-ms", "30000".parse().unwrap());
        slow.echo(request).await
    });
    let waiting = Instant::now();
    while server.calls() == 0 {
        assert!(
            waiting.elapsed() < Duration::from_secs(20),
            "the slow call never arrived"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    server.drop_connections();
    let outcome = tokio::time::timeout(Duration::from_secs(20), call)
        .await
        .expect("the cut call ends long before its 30 s delay")
        .unwrap();
    let status = outcome.unwrap_err();
    assert_ne!(status.code(), tonic::Code::Ok);
    let mut fresh = client(addr).await;
    assert!(fresh.echo(echo("x", 2)).await.is_ok());
    assert!(server.connections() >= 2, "the fresh client connected anew");
}

/// Reads HTTP/2 frames after sending the client preface; true when a GOAWAY arrives.
fn sees_goaway(addr: SocketAddr) -> bool {
    let mut tcp = std::net::TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    tcp.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0")
        .unwrap();
    let mut header = [0u8; 9];
    loop {
        if tcp.read_exact(&mut header).is_err() {
            return false;
        }
        let len = u32::from_be_bytes([0, header[0], header[1], header[2]]) as usize;
        let mut payload = vec![0; len];
        if tcp.read_exact(&mut payload).is_err() {
            return false;
        }
        match header[3] {
            0x7 => return true,
            // Acknowledge the server's SETTINGS, as a client must.
            0x4 if header[4] & 1 == 0 => tcp.write_all(b"\0\0\0\x04\x01\0\0\0\0").unwrap(),
            _ => {}
        }
    }
}

#[test]
fn connections_older_than_the_age_limit_get_goaway() {
    let options = TestServerOptions {
        max_connection_age: Some(Duration::from_millis(200)),
        ..Default::default()
    };
    let (addr, _server) = TestServer::start(options).unwrap();
    assert!(sees_goaway(addr));
}

#[test]
fn shutting_down_sends_goaway() {
    let (addr, server) = TestServer::start(TestServerOptions::default()).unwrap();
    let watcher = std::thread::spawn(move || sees_goaway(addr));
    let waiting = Instant::now();
    while server.connections() == 0 {
        assert!(
            waiting.elapsed() < Duration::from_secs(20),
            "the watcher never connected"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    server.shutdown();
    assert!(watcher.join().unwrap());
}

#[tokio::test]
async fn tls_serves_h2_with_a_certificate_the_client_can_trust() {
    let options = TestServerOptions {
        tls: true,
        ..Default::default()
    };
    let (addr, server) = TestServer::start(options).unwrap();
    let ca = server.ca_pem().expect("TLS on").to_string();
    let tls = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(&ca))
        .domain_name("localhost");
    let channel = Endpoint::from_shared(format!("https://{addr}"))
        .unwrap()
        .tls_config(tls)
        .unwrap()
        .connect()
        .await
        .unwrap();
    let reply = BenchClient::new(channel)
        .echo(echo("tls", 1))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(reply.message, "tls");
    // The same port refuses plaintext gRPC.
    let plain = BenchClient::connect(format!("http://{addr}")).await;
    match plain {
        Err(_) => {}
        Ok(mut plain) => assert!(plain.echo(echo("x", 2)).await.is_err()),
    }
}
