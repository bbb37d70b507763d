//! The socket steps of the one driver (`driver.rs`), whatever the protocol: a non-blocking
//! connect registered with the poll, the failure a read error counts as, and the release of a
//! closed connection's socket.

use crate::backoff::{Fault, TlsBreak};
use crate::shared::FailureClass;
use crate::transport::Sock;
use mio::net::TcpStream;
use mio::{Interest, Poll, Token};
use std::io;
use std::net::SocketAddr;

/// Starts a non-blocking TCP connect to `addr`, its readiness reported by `poll` under token
/// `i` (connection `i`); `None` when the connect or its registration failed (a connect failure:
/// the stream, if any, is closed).
pub fn connect(addr: SocketAddr, poll: &Poll, i: usize) -> Option<Sock> {
    let mut stream = TcpStream::connect(addr).ok()?;
    let interest = Interest::READABLE | Interest::WRITABLE;
    poll.registry()
        .register(&mut stream, Token(i), interest)
        .ok()?;
    Some(Sock::Plain(stream))
}

/// Opens a UDP socket connected to `addr` for a datagram transport, its readiness reported by
/// `poll` under token `i`; `None` when it cannot be made or registered (a connect failure).
pub fn connect_datagram(addr: SocketAddr, poll: &Poll, i: usize) -> Option<Sock> {
    let mut socket = crate::transport::datagram::connect(addr).ok()?;
    let interest = Interest::READABLE | Interest::WRITABLE;
    poll.registry()
        .register(&mut socket.socket, Token(i), interest)
        .ok()?;
    Some(Sock::Datagram(socket))
}

/// What a read error on an open connection counts as: bytes TLS could not accept (a bad record,
/// a fatal alert: `InvalidData`) break the protocol; anything else broke the read.
pub fn read_failure(e: &io::Error) -> FailureClass {
    if e.kind() == io::ErrorKind::InvalidData {
        FailureClass::Parse
    } else {
        FailureClass::Read
    }
}

/// The connection fault a read error is, when it says more than its failure class: the TLS
/// session's cause (an alert by its name, a flood rustls caps, a record that did not decrypt).
pub fn read_fault(e: &io::Error) -> Option<Fault> {
    use crate::transport::tls_session::TlsFault as F;
    let fault = e.get_ref()?.downcast_ref::<F>()?;
    Some(Fault::TlsBroken(match *fault {
        F::Record(crate::transport::tls_record::RecordError::Decrypt) => TlsBreak::Decrypt,
        F::Record(_) | F::UnexpectedRecord(_) => TlsBreak::Record,
        F::Alert(code) => TlsBreak::Alert(code),
        F::TooManyKeyUpdates
        | F::TooManyWarnings
        | F::TooManyEmptyRecords
        | F::TooManyHelloRequests => TlsBreak::Flood,
        F::UnexpectedMessage(_)
        | F::MessageTooLong
        | F::MalformedKeyUpdate
        | F::KeyUpdateNotAtEnd
        | F::Ticket
        | F::KeyUpdate => TlsBreak::Message,
    }))
}

/// Takes a closed connection's socket out of `sock`, and out of `poll`'s interest (dropping it
/// closes it).
pub fn release(sock: &mut Option<Sock>, poll: &Poll) {
    if let Some(mut sock) = sock.take() {
        let _ = poll.registry().deregister(sock.source());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mio::Events;
    use std::net::TcpListener;
    use std::time::Duration;

    #[test]
    fn connect_reports_under_the_connection_token_and_release_forgets_it() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut poll = Poll::new().unwrap();
        let mut sock = connect(listener.local_addr().unwrap(), &poll, 7);
        assert!(sock.is_some());
        let _peer = listener.accept().unwrap();
        let mut events = Events::with_capacity(8);
        // Bounded: a loopback connect that was accepted is writable at once.
        let mut tokens = Vec::new();
        for _ in 0..50 {
            poll.poll(&mut events, Some(Duration::from_millis(100)))
                .unwrap();
            tokens.extend(events.iter().map(|e| e.token()));
            if !tokens.is_empty() {
                break;
            }
        }
        assert_eq!(tokens.first(), Some(&Token(7)));
        release(&mut sock, &poll);
        assert!(sock.is_none());
        // Released twice is harmless: nothing is left to release.
        release(&mut sock, &poll);
    }

    /// A TLS fault is booked by its cause, the alert by its name; other errors say nothing more.
    #[test]
    fn a_tls_fault_is_booked_by_its_cause_and_an_alert_by_its_name() {
        use crate::transport::tls_session::TlsFault;
        let tls = |f: TlsFault| io::Error::new(io::ErrorKind::InvalidData, f);
        let cases = [
            (
                TlsFault::Alert(80),
                "the server ended TLS with the alert 'internal_error'",
            ),
            (
                TlsFault::Record(crate::transport::tls_record::RecordError::Decrypt),
                "a TLS record from the server failed to decrypt",
            ),
            (
                TlsFault::TooManyKeyUpdates,
                "the server sent more TLS KeyUpdates, warning alerts, empty records or HelloRequests than allowed",
            ),
            (
                TlsFault::UnexpectedRecord(99),
                "the server sent a malformed or unexpected TLS record",
            ),
        ];
        for (fault, said) in cases {
            let mut tally = crate::backoff::FaultTally::default();
            tally.count(read_fault(&tls(fault)).unwrap());
            let causes = tally.by_cause();
            assert_eq!(causes.get(said), Some(&1), "{fault:?}: {causes:?}");
        }
        // An alert of no known code still counts, in words.
        let mut tally = crate::backoff::FaultTally::default();
        tally.count(read_fault(&tls(TlsFault::Alert(201))).unwrap());
        assert_eq!(
            tally.by_cause().keys().collect::<Vec<_>>(),
            ["the server ended TLS with an alert of an unknown code"]
        );
        assert_eq!(
            read_fault(&io::Error::from(io::ErrorKind::ConnectionReset)),
            None
        );
        assert_eq!(
            read_fault(&io::Error::new(io::ErrorKind::InvalidData, "bad")),
            None
        );
    }

    #[test]
    fn a_tls_record_error_is_a_parse_failure_and_others_a_read_failure() {
        let bad = io::Error::new(io::ErrorKind::InvalidData, "bad record");
        assert_eq!(read_failure(&bad), FailureClass::Parse);
        for kind in [
            io::ErrorKind::ConnectionReset,
            io::ErrorKind::BrokenPipe,
            io::ErrorKind::UnexpectedEof,
        ] {
            assert_eq!(read_failure(&io::Error::from(kind)), FailureClass::Read);
        }
    }
}
