//! candor's WebSocket pieces (handshake, frames, matching) driven by a plain blocking client
//! against a real server built on tokio-tungstenite (`candor_testkit::ws_server`): the upgrade
//! with the user's headers, echoes, fragmented replies, pings answered with pongs, out-of-order
//! replies matched by number, and a close on command.

use candor_load::protocol::ws::frames::{write_client_frame, FrameDecoder, Opcode, WsEvent};
use candor_load::protocol::ws::handshake::{key_from, read_response, write_request};
use candor_load::protocol::ws::matching::WsMatch;
use candor_testkit::ws_server::{self, WsServerConfig, CLOSE_COMMAND};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::time::Duration;

#[derive(Debug, PartialEq, Eq)]
enum Got {
    Message(bool, Vec<u8>),
    Close(Option<u16>),
}

struct Client {
    stream: TcpStream,
    decoder: FrameDecoder,
    buf: Vec<u8>,
    mask: u32,
}

impl Client {
    fn connect(server: &ws_server::WsServer, headers: &[(String, String)]) -> Client {
        let mut stream = TcpStream::connect(server.addr()).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let key = key_from(*b"0123456789abcdef");
        let mut req = Vec::new();
        write_request(&mut req, &server.addr().to_string(), "/echo", &key, headers);
        stream.write_all(&req).unwrap();
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        let head = loop {
            let n = stream.read(&mut chunk).unwrap();
            assert!(n > 0, "closed during the upgrade");
            buf.extend_from_slice(&chunk[..n]);
            if let Some(head) = read_response(&buf, &key).unwrap() {
                break head;
            }
        };
        buf.drain(..head);
        Client {
            stream,
            decoder: FrameDecoder::new(1024, 1 << 20),
            buf,
            mask: 0x1234_5678,
        }
    }

    fn send(&mut self, opcode: Opcode, payload: &[u8]) {
        self.mask = self.mask.wrapping_mul(2_654_435_761).wrapping_add(1);
        let mut frame = Vec::new();
        write_client_frame(&mut frame, opcode, payload, self.mask.to_be_bytes());
        self.stream.write_all(&frame).unwrap();
    }

    /// Reads until `n` messages or a close came; pings are answered with pongs on the way.
    fn receive(&mut self, n: usize) -> (Vec<Got>, usize) {
        let mut got = Vec::new();
        let mut pings = 0;
        let mut chunk = [0u8; 4096];
        loop {
            let mut pongs = Vec::new();
            let pending = std::mem::take(&mut self.buf);
            self.decoder
                .feed(&pending, |e| match e {
                    WsEvent::Message { binary, prefix, .. } => {
                        got.push(Got::Message(binary, prefix.to_vec()))
                    }
                    WsEvent::Ping(p) => pongs.push(p.to_vec()),
                    WsEvent::Pong => {}
                    WsEvent::Close(code) => got.push(Got::Close(code)),
                })
                .unwrap();
            for p in pongs {
                pings += 1;
                self.send(Opcode::Pong, &p);
            }
            if got.len() >= n || matches!(got.last(), Some(Got::Close(_))) {
                return (got, pings);
            }
            let k = self.stream.read(&mut chunk).unwrap();
            if k == 0 {
                return (got, pings);
            }
            self.buf.extend_from_slice(&chunk[..k]);
        }
    }
}

#[test]
fn the_upgrade_carries_the_users_headers_and_messages_are_echoed_whole() {
    let server = ws_server::start(WsServerConfig::default()).unwrap();
    let headers = vec![("Authorization".to_string(), "Bearer t0k".to_string())];
    let mut c = Client::connect(&server, &headers);
    c.send(Opcode::Text, b"hello");
    c.send(Opcode::Binary, &[0, 1, 2, 255]);
    let big = vec![b'z'; 70_000]; // a 64-bit length, both ways
    c.send(Opcode::Binary, &big);
    let (got, _) = c.receive(3);
    assert_eq!(got[0], Got::Message(false, b"hello".to_vec()));
    assert_eq!(got[1], Got::Message(true, vec![0, 1, 2, 255]));
    assert_eq!(
        got[2],
        Got::Message(true, vec![b'z'; 1024]),
        "the first 1024 bytes kept"
    );
    let seen = server.counts().upgrade_headers.lock().unwrap();
    assert!(seen[0].contains(&("authorization".into(), "Bearer t0k".into())));
}

#[test]
fn fragmented_replies_are_one_message_each() {
    let server = ws_server::start(WsServerConfig {
        fragment: true,
        ..WsServerConfig::default()
    })
    .unwrap();
    let mut c = Client::connect(&server, &[]);
    for m in [&b"abcdef"[..], b"0123456789"] {
        c.send(Opcode::Text, m);
    }
    let (got, _) = c.receive(2);
    assert_eq!(
        got,
        vec![
            Got::Message(false, b"abcdef".to_vec()),
            Got::Message(false, b"0123456789".to_vec())
        ]
    );
}

#[test]
fn pings_are_answered_and_the_server_sees_the_pongs() {
    let server = ws_server::start(WsServerConfig {
        ping_every: Some(Duration::from_millis(20)),
        ..WsServerConfig::default()
    })
    .unwrap();
    let mut c = Client::connect(&server, &[]);
    // The server pings every 20 ms whatever the client does: read until one came (and was
    // answered), then a message is still echoed whole between pings.
    let mut pings = 0;
    while pings == 0 {
        pings += c.receive(0).1;
        if pings == 0 {
            let mut chunk = [0u8; 256];
            let n = c.stream.read(&mut chunk).unwrap();
            assert!(n > 0, "the server closed");
            c.buf.extend_from_slice(&chunk[..n]);
        }
    }
    c.send(Opcode::Text, b"x");
    let (got, _) = c.receive(1);
    assert_eq!(got, vec![Got::Message(false, b"x".to_vec())]);
    // The pong went out before the message, on the same connection, and the server reads in
    // order: once the echo is back, the pong has been read (the count is bumped just after;
    // bounded wait).
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while server.counts().pongs.load(Ordering::SeqCst) < 1 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(server.counts().pongs.load(Ordering::SeqCst) >= 1);
}

#[test]
fn out_of_order_replies_are_matched_by_the_number_candor_wrote() {
    let server = ws_server::start(WsServerConfig {
        reorder_pairs: true,
        ..WsServerConfig::default()
    })
    .unwrap();
    let WsMatch::JsonField(id) = "json:id".parse::<WsMatch>().unwrap() else {
        unreachable!()
    };
    let mut c = Client::connect(&server, &[]);
    let mut message = Vec::new();
    for seq in [7u64, 8] {
        message.clear();
        id.write_with_number(&mut message, br#"{"op":"echo"}"#, seq);
        c.send(Opcode::Text, &message);
    }
    let (got, _) = c.receive(2);
    let numbers: Vec<Option<u64>> = got
        .iter()
        .map(|g| match g {
            Got::Message(_, p) => id.number_in(p),
            Got::Close(_) => None,
        })
        .collect();
    // The server answered the second first: in-order matching would pin 8's reply on 7.
    assert_eq!(numbers, vec![Some(8), Some(7)]);
}

#[test]
fn a_close_on_command_arrives_with_its_code() {
    let server = ws_server::start(WsServerConfig::default()).unwrap();
    let mut c = Client::connect(&server, &[]);
    c.send(Opcode::Text, format!("{{{CLOSE_COMMAND}}}").as_bytes());
    let (got, _) = c.receive(1);
    assert_eq!(got, vec![Got::Close(Some(1011))]);
}
