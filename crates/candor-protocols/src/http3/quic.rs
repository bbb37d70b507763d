//! One QUIC connection from quinn-proto (sans-IO), as the one driver carries it: datagrams in
//! (one per read of the connection's UDP socket), datagrams out (into the connection's out
//! buffer, `candor_engine::transport::datagram`), and its timers (loss detection, acks, idle) on
//! the driver's clock, so that the driver's timer wakes it. quinn-proto reads time as
//! `Instant`s; the driver's clock is integer nanoseconds, so an `Instant` is taken once at the
//! connection's start and every time is counted from it (the same on a simulated clock).

use bytes::BytesMut;
use candor_engine::transport::datagram;
use quinn_proto::{
    ClientConfig, Connection, ConnectionHandle, DatagramEvent, Endpoint, EndpointConfig,
};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What every connection of a thread starts from.
pub struct QuicSetup {
    pub client: ClientConfig,
    pub endpoint: Arc<EndpointConfig>,
    pub peer: SocketAddr,
    pub server_name: String,
}

/// A QUIC connection and its (client-only) endpoint.
pub struct Quic {
    endpoint: Endpoint,
    handle: ConnectionHandle,
    pub conn: Connection,
    epoch: Instant,
    epoch_ns: u64,
    peer: SocketAddr,
    /// The next timer, on the driver's clock.
    next_wake: u64,
    /// Where quinn-proto writes a datagram before it is put in the out buffer (it writes from
    /// the start of the buffer it is given).
    scratch: Vec<u8>,
}

impl Quic {
    /// Starts the handshake at `now` (its first flight comes out of [`Quic::transmit`]).
    pub fn connect(setup: &QuicSetup, now: u64) -> Result<Quic, quinn_proto::ConnectError> {
        let epoch = Instant::now();
        let mut endpoint = Endpoint::new(setup.endpoint.clone(), None, false, None);
        let (handle, conn) =
            endpoint.connect(epoch, setup.client.clone(), setup.peer, &setup.server_name)?;
        Ok(Quic {
            endpoint,
            handle,
            conn,
            epoch,
            epoch_ns: now,
            peer: setup.peer,
            next_wake: u64::MAX,
            scratch: Vec::with_capacity(1500),
        })
    }

    /// The driver's time `ns` as quinn-proto's.
    pub fn instant(&self, ns: u64) -> Instant {
        self.epoch + Duration::from_nanos(ns.saturating_sub(self.epoch_ns))
    }

    fn ns(&self, at: Instant) -> u64 {
        let since = at.saturating_duration_since(self.epoch).as_nanos();
        self.epoch_ns
            .saturating_add(u64::try_from(since).unwrap_or(u64::MAX))
    }

    /// One datagram arrived at `now`.
    pub fn receive(&mut self, datagram: &[u8], now: u64) {
        let at = self.instant(now);
        self.scratch.clear();
        // quinn-proto takes the datagram as an owned buffer (one allocation per datagram).
        let data = BytesMut::from(datagram);
        let event = self
            .endpoint
            .handle(at, self.peer, None, None, data, &mut self.scratch);
        if let Some(DatagramEvent::ConnectionEvent(handle, event)) = event {
            if handle == self.handle {
                self.conn.handle_event(event);
            }
        }
        // A client endpoint answers nothing itself (no new connections, no resets of its own).
    }

    /// The connection's timers at `now`.
    pub fn timeout(&mut self, now: u64) {
        let at = self.instant(now);
        self.conn.handle_timeout(at);
    }

    /// Puts every datagram the connection has to send at `now` into `out`, hands the endpoint
    /// what the connection told it, and notes the next timer.
    pub fn transmit(&mut self, out: &mut Vec<u8>, now: u64) {
        let at = self.instant(now);
        while let Some(event) = self.conn.poll_endpoint_events() {
            if let Some(back) = self.endpoint.handle_event(self.handle, event) {
                self.conn.handle_event(back);
            }
        }
        loop {
            self.scratch.clear();
            let Some(t) = self.conn.poll_transmit(at, 1, &mut self.scratch) else {
                break;
            };
            let start = datagram::begin(out);
            out.extend_from_slice(&self.scratch[..t.size]);
            datagram::end(out, start);
        }
        self.next_wake = match self.conn.poll_timeout() {
            Some(t) => self.ns(t),
            None => u64::MAX,
        };
    }

    /// When its next timer is due, on the driver's clock.
    pub fn wake_at(&self) -> u64 {
        self.next_wake
    }

    /// The packets it sent and lost so far (quinn-proto's path statistics).
    pub fn packets(&self) -> (u64, u64) {
        let s = self.conn.stats();
        (s.path.sent_packets, s.path.lost_packets)
    }
}
