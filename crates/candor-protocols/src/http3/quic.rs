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

/// The most datagrams quinn-proto is asked for at once (quinn's own batch): a run of
/// datagrams of one size that the transport can send in one system call.
const BATCH_DATAGRAMS: usize = 10;

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
            scratch: Vec::with_capacity(BATCH_DATAGRAMS * 1500),
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
            let Some(t) = self
                .conn
                .poll_transmit(at, BATCH_DATAGRAMS, &mut self.scratch)
            else {
                break;
            };
            // A batch of datagrams of `segment_size` bytes (the last may be shorter), each
            // framed on its own: the transport batches them again as its socket allows.
            let size = t.segment_size.unwrap_or(t.size).max(1);
            for d in self.scratch[..t.size].chunks(size) {
                let start = datagram::begin(out);
                out.extend_from_slice(d);
                datagram::end(out, start);
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use quinn_proto::{ConnectionError, Event};

    /// A client setup whose server never answers (nothing is sent: the test is the clock).
    fn silent(idle: Duration) -> QuicSetup {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])
            .unwrap()
            .with_root_certificates(rustls::RootCertStore::empty())
            .with_no_client_auth();
        tls.alpn_protocols = vec![b"h3".to_vec()];
        let crypto = quinn_proto::crypto::rustls::QuicClientConfig::try_from(tls).unwrap();
        let mut transport = quinn_proto::TransportConfig::default();
        transport.max_idle_timeout(Some(quinn_proto::IdleTimeout::try_from(idle).unwrap()));
        let mut client = ClientConfig::new(Arc::new(crypto));
        client.transport_config(Arc::new(transport));
        QuicSetup {
            client,
            endpoint: Arc::new(EndpointConfig::default()),
            peer: "127.0.0.1:9".parse().unwrap(),
            server_name: "localhost".into(),
        }
    }

    /// A silent server on simulated time: quinn-proto's timers, woken only at the times the
    /// connection asks for, resend the first flight at growing intervals (probe timeouts back
    /// off) and give the handshake up exactly at the idle timeout, which the protocol books as
    /// `faults::of_loss(TimedOut, handshaking)`: the handshake timeout.
    #[test]
    fn a_silent_server_is_given_up_exactly_at_the_idle_timeout_on_simulated_time() {
        let start = 5_000_000_000u64;
        let idle = Duration::from_secs(30);
        let mut q = Quic::connect(&silent(idle), start).unwrap();
        let mut out = Vec::new();
        q.transmit(&mut out, start);
        assert!(!out.is_empty(), "the first flight goes at once");
        let (mut now, mut sends, mut gaps) = (start, vec![start], Vec::new());
        let lost = loop {
            let at = q.wake_at();
            assert!(
                at > now && at != u64::MAX,
                "a timer is always set while connecting"
            );
            now = at;
            q.timeout(now);
            out.clear();
            q.transmit(&mut out, now);
            if !out.is_empty() {
                gaps.push(now - sends.last().unwrap());
                sends.push(now);
            }
            if let Some(Event::ConnectionLost { reason }) = q.conn.poll() {
                break reason;
            }
            assert!(
                now - start <= idle.as_nanos() as u64,
                "never past the idle timeout"
            );
        };
        assert_eq!(lost, ConnectionError::TimedOut);
        assert_eq!(
            now - start,
            idle.as_nanos() as u64,
            "lost exactly at the idle timeout"
        );
        // The first probe timeout is 3 x quinn-proto's initial RTT estimate (333 ms), doubled
        // each time; the fifth (15.984 s later, at 30.969 s) would come after the idle timeout.
        assert_eq!(
            gaps,
            [999_000_000, 1_998_000_000, 3_996_000_000, 7_992_000_000],
            "the first flight is resent as probe timeouts back off"
        );
        let fault = super::super::faults::of_loss(&lost, true);
        match fault {
            candor_engine::backoff::Fault::Protocol(p) => {
                assert!(
                    p.describe().contains("handshake timeout"),
                    "{}",
                    p.describe()
                )
            }
            other => panic!("{other:?}"),
        }
    }
}
