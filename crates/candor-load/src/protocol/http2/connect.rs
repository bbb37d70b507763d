//! Opening an HTTP/2 connection: TCP connect, the TLS handshake with ALPN `h2` (a server that
//! refuses it ends the run with a plain-words error), the preface and this client's SETTINGS;
//! the connection is open once the server's SETTINGS arrive. And the pool: every connection
//! opened this way before the first intended send (`crate::pool::open`, as for every driver).

use super::{frame, ConnState, Driver, CONNECTION_WINDOW, STREAM_WINDOW};
use crate::engine::socket_steps;
use crate::pool::{Opener, PoolReport};
use crate::shared::Failure;
use crate::transport::{start_tls, ConnectState, Handshake};
use candor_core::timerfd::TimerFd;
use mio::Poll;

impl Driver {
    pub(super) fn start_connect(&mut self, i: usize, now: u64) {
        self.core.connecting(i, now);
        self.conns[i].connect_called = now;
        let Some(sock) = socket_steps::connect(self.config.target.addr, &self.poll, i) else {
            return self.connect_failed(i, Failure::Connect, now);
        };
        let c = &mut self.conns[i];
        c.sock = Some(sock);
        c.state = ConnState::Connecting;
    }

    pub(super) fn finish_connect(&mut self, i: usize, now: u64) {
        let c = &mut self.conns[i];
        let Some(sock) = c.sock.as_mut() else {
            return;
        };
        match sock.connect_state() {
            ConnectState::InProgress => return,
            ConnectState::Failed => return self.connect_failed(i, Failure::Connect, now),
            ConnectState::Connected => {}
        }
        c.tcp_connected = now;
        self.core.connected(now);
        if let Some(tls) = &self.tls {
            if start_tls(&mut c.sock, tls, &self.config.target.host) {
                c.state = ConnState::Handshaking;
                self.drive_handshake(i, now);
            } else {
                self.connect_failed(i, Failure::Connect, now);
            }
        } else {
            self.send_preface(i, now);
        }
    }

    /// Drives the TLS handshake; a server that refuses `h2` by ALPN must be named.
    pub(super) fn drive_handshake(&mut self, i: usize, now: u64) {
        let c = &mut self.conns[i];
        let Some(sock) = c.sock.as_mut() else {
            return;
        };
        match sock.handshake() {
            Handshake::Waiting => {}
            Handshake::Failed => self.connect_failed(i, Failure::Connect, now),
            Handshake::AlpnRefused => {
                self.not_h2("refused it (no_application_protocol alert)");
                self.connect_failed(i, Failure::Connect, now);
            }
            Handshake::Done => {
                let alpn = sock.alpn_protocol();
                if alpn != Some(b"h2".as_slice()) {
                    let got = alpn.map_or("chose no protocol".into(), |p| {
                        format!("chose '{}'", String::from_utf8_lossy(p))
                    });
                    self.not_h2(&got);
                    return self.connect_failed(i, Failure::Connect, now);
                }
                let handshake = now.saturating_sub(c.tcp_connected);
                self.core.tls_handshake(handshake, now);
                self.send_preface(i, now);
                // Frames may have arrived with the last handshake flight.
                if self.conns[i].sock.is_some() {
                    self.read_frames(i, true);
                }
            }
        }
    }

    fn not_h2(&mut self, server_did: &str) {
        if self.fatal.is_none() {
            self.fatal = Some(format!(
                "{} does not speak HTTP/2 over TLS: candor offered 'h2' by ALPN and the server {server_did}; \
                 drop --h2 to test it with HTTP/1.1",
                self.config.target.url
            ));
        }
    }

    fn send_preface(&mut self, i: usize, now: u64) {
        let c = &mut self.conns[i];
        c.state = ConnState::Settings;
        frame::put_preface(&mut c.wbuf, STREAM_WINDOW, CONNECTION_WINDOW);
        self.flush(i, now);
    }
}

impl Opener for Driver {
    fn connection_count(&self) -> usize {
        self.conns.len()
    }
    fn opening(&self, i: usize) -> bool {
        matches!(
            self.conns[i].state,
            ConnState::Connecting | ConnState::Handshaking | ConnState::Settings
        )
    }
    fn start_connect(&mut self, i: usize, now: u64) {
        Driver::start_connect(self, i, now)
    }
    fn given_up(&self) -> bool {
        self.halt.aborting() || self.fatal.is_some()
    }
    fn handle_event(&mut self, ev: &mio::event::Event) {
        Driver::handle_event(self, ev)
    }
    fn waits(&mut self) -> (&mut Poll, &mut TimerFd) {
        (&mut self.poll, &mut self.timer)
    }
    fn report(&mut self) -> &mut Option<PoolReport> {
        &mut self.pool
    }
    fn timeout_ns(&self) -> u64 {
        self.config.timeout_ns
    }
}
