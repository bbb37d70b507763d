//! HTTP/3's causes of connection faults, with their codes: how the server (or candor) closed the
//! QUIC connection (a transport error code, a TLS alert, an HTTP/3 or QPACK code), the QUIC
//! faults without a code (stateless reset, idle and handshake timeouts, version negotiation),
//! and a request stream the server reset. Each is a `static FaultCause` the books count by its
//! words; [`of_loss`] decides which one a lost connection is, without I/O.

use candor_engine::backoff::{Fault, FaultCause, ProtocolFault};
use quinn_proto::ConnectionError;

/// QUIC transport error codes 0x00..=0x10 (RFC 9000 §20.1).
const TRANSPORT_CODES: [&str; 17] = [
    "NO_ERROR",
    "INTERNAL_ERROR",
    "CONNECTION_REFUSED",
    "FLOW_CONTROL_ERROR",
    "STREAM_LIMIT_ERROR",
    "STREAM_STATE_ERROR",
    "FINAL_SIZE_ERROR",
    "FRAME_ENCODING_ERROR",
    "TRANSPORT_PARAMETER_ERROR",
    "CONNECTION_ID_LIMIT_ERROR",
    "PROTOCOL_VIOLATION",
    "INVALID_TOKEN",
    "APPLICATION_ERROR",
    "CRYPTO_BUFFER_EXCEEDED",
    "KEY_UPDATE_ERROR",
    "AEAD_LIMIT_REACHED",
    "NO_VIABLE_PATH",
];

/// HTTP/3 error codes 0x100..=0x110 (RFC 9114 §8.1), then QPACK's 0x200..=0x202 (RFC 9204 §6).
const H3_CODES: [&str; 20] = [
    "H3_NO_ERROR",
    "H3_GENERAL_PROTOCOL_ERROR",
    "H3_INTERNAL_ERROR",
    "H3_STREAM_CREATION_ERROR",
    "H3_CLOSED_CRITICAL_STREAM",
    "H3_FRAME_UNEXPECTED",
    "H3_FRAME_ERROR",
    "H3_EXCESSIVE_LOAD",
    "H3_ID_ERROR",
    "H3_SETTINGS_ERROR",
    "H3_MISSING_SETTINGS",
    "H3_REQUEST_REJECTED",
    "H3_REQUEST_CANCELLED",
    "H3_REQUEST_INCOMPLETE",
    "H3_MESSAGE_ERROR",
    "H3_CONNECT_ERROR",
    "H3_VERSION_FALLBACK",
    "QPACK_DECOMPRESSION_FAILED",
    "QPACK_ENCODER_STREAM_ERROR",
    "QPACK_DECODER_STREAM_ERROR",
];

pub const H3_NO_ERROR: u64 = 0x100;
pub const H3_GENERAL_PROTOCOL_ERROR: u64 = 0x101;
pub const H3_STREAM_CREATION_ERROR: u64 = 0x103;
pub const H3_CLOSED_CRITICAL_STREAM: u64 = 0x104;
pub const H3_FRAME_UNEXPECTED: u64 = 0x105;
pub const H3_FRAME_ERROR: u64 = 0x106;
pub const H3_EXCESSIVE_LOAD: u64 = 0x107;
pub const H3_ID_ERROR: u64 = 0x108;
pub const H3_MISSING_SETTINGS: u64 = 0x10a;
pub const H3_REQUEST_CANCELLED: u64 = 0x10c;
pub const QPACK_DECOMPRESSION_FAILED: u64 = 0x200;

/// An HTTP/3 or QPACK code as a row index (past the named ones: one shared row).
fn h3_index(code: u64) -> u32 {
    match code {
        0x100..=0x110 => (code - 0x100) as u32,
        0x200..=0x202 => (code - 0x200) as u32 + 17,
        _ => H3_CODES.len() as u32,
    }
}

fn h3_name(index: u32) -> String {
    H3_CODES
        .get(index as usize)
        .map_or("an unknown code".into(), |n| n.to_string())
}

/// A QUIC transport code as a row index: 0x00..=0x10 as themselves, a TLS alert (0x100 + alert)
/// after them.
fn transport_index(code: u64) -> u32 {
    match code {
        0..=0x10 => code as u32,
        0x100..=0x1ff => 17 + (code - 0x100) as u32,
        _ => 17 + 256,
    }
}

fn transport_name(index: u32) -> String {
    match index {
        0..=16 => TRANSPORT_CODES[index as usize].into(),
        17..=272 => format!("TLS alert {}", index - 17),
        _ => "an unknown code".into(),
    }
}

/// The server closed the QUIC connection with a transport error (CONNECTION_CLOSE 0x1c).
pub static QUIC_CLOSED: FaultCause = FaultCause {
    named_codes: 17 + 256,
    describe: |i| format!("server closed the QUIC connection: {}", transport_name(i)),
};

/// candor closed the QUIC connection: the server broke QUIC, or its certificate or TLS was
/// refused (the code is the transport error or TLS alert candor sent).
pub static QUIC_BROKE: FaultCause = FaultCause {
    named_codes: 17 + 256,
    describe: |i| format!("candor closed the QUIC connection: {}", transport_name(i)),
};

/// The server closed the connection with an HTTP/3 or QPACK code (CONNECTION_CLOSE 0x1d).
pub static H3_CLOSED: FaultCause = FaultCause {
    named_codes: H3_CODES.len() as u32,
    describe: |i| format!("server closed the HTTP/3 connection: {}", h3_name(i)),
};

/// The server's frames broke HTTP/3: candor closed the connection with this code.
pub static H3_BROKE: FaultCause = FaultCause {
    named_codes: H3_CODES.len() as u32,
    describe: |i| {
        format!(
            "server's frames broke HTTP/3 (candor closed with {})",
            h3_name(i)
        )
    },
};

/// The server reset a request stream (RESET_STREAM) with this code: the request failed, the
/// connection carried on.
pub static STREAM_RESET: FaultCause = FaultCause {
    named_codes: H3_CODES.len() as u32,
    describe: |i| format!("server reset a request stream: {}", h3_name(i)),
};

/// The QUIC faults that carry no code.
pub static QUIC: FaultCause = FaultCause {
    named_codes: 4,
    describe: |i| {
        match i {
            0 => "server reset the QUIC connection (stateless reset)",
            1 => "QUIC idle timeout: the server went silent",
            2 => "QUIC handshake timeout: the server never answered",
            3 => "server speaks no QUIC version candor offers (version negotiation)",
            _ => "QUIC connection lost",
        }
        .into()
    },
};

const STATELESS_RESET: u32 = 0;
const IDLE_TIMEOUT: u32 = 1;
const HANDSHAKE_TIMEOUT: u32 = 2;
const VERSION_MISMATCH: u32 = 3;
const OTHER: u32 = 4;

/// candor closed the connection because the server's HTTP/3 broke with `code`.
pub fn h3_broke(code: u64) -> Fault {
    ProtocolFault::new(&H3_BROKE, h3_index(code)).into()
}

/// A request stream reset with `code`.
pub fn stream_reset(code: u64) -> Fault {
    ProtocolFault::new(&STREAM_RESET, h3_index(code)).into()
}

/// The name of HTTP/3 code `code` (a QPACK code, or a code it does not know, in words).
pub fn h3_code_name(code: u64) -> String {
    h3_name(h3_index(code))
}

/// Whether a lost QUIC connection is no fault: an established connection that carried nothing
/// went idle past its timeout, or the server closed it without an error (as an HTTP/1.1 server
/// closes an idle keep-alive connection). It is connected again when a request needs it.
pub fn quiet_close(reason: &ConnectionError, handshaking: bool, carrying: bool) -> bool {
    let graceful = match reason {
        ConnectionError::TimedOut => true,
        ConnectionError::ApplicationClosed(c) => c.error_code.into_inner() == H3_NO_ERROR,
        ConnectionError::ConnectionClosed(c) => u64::from(c.error_code) == 0,
        _ => false,
    };
    graceful && !handshaking && !carrying
}

/// The fault a lost QUIC connection is (`handshaking`: before it was established), decided from
/// quinn-proto's reason alone.
pub fn of_loss(reason: &ConnectionError, handshaking: bool) -> Fault {
    let quic = |i| ProtocolFault::new(&QUIC, i).into();
    match reason {
        ConnectionError::Reset => quic(STATELESS_RESET),
        ConnectionError::TimedOut if handshaking => quic(HANDSHAKE_TIMEOUT),
        ConnectionError::TimedOut => quic(IDLE_TIMEOUT),
        ConnectionError::VersionMismatch => quic(VERSION_MISMATCH),
        ConnectionError::ConnectionClosed(c) => {
            ProtocolFault::new(&QUIC_CLOSED, transport_index(u64::from(c.error_code))).into()
        }
        ConnectionError::ApplicationClosed(c) => {
            ProtocolFault::new(&H3_CLOSED, h3_index(c.error_code.into_inner())).into()
        }
        ConnectionError::TransportError(e) => {
            ProtocolFault::new(&QUIC_BROKE, transport_index(u64::from(e.code))).into()
        }
        ConnectionError::LocallyClosed | ConnectionError::CidsExhausted => quic(OTHER),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quinn_proto::{TransportError, TransportErrorCode};

    fn words(f: Fault) -> String {
        match f {
            Fault::Protocol(p) => p.describe(),
            other => format!("{other:?}"),
        }
    }

    #[test]
    fn each_loss_reads_as_its_cause_and_code() {
        assert_eq!(
            words(of_loss(&ConnectionError::Reset, false)),
            "server reset the QUIC connection (stateless reset)"
        );
        assert_eq!(
            words(of_loss(&ConnectionError::TimedOut, true)),
            "QUIC handshake timeout: the server never answered"
        );
        assert_eq!(
            words(of_loss(&ConnectionError::TimedOut, false)),
            "QUIC idle timeout: the server went silent"
        );
        assert_eq!(
            words(of_loss(&ConnectionError::VersionMismatch, true)),
            "server speaks no QUIC version candor offers (version negotiation)"
        );
        let refused = TransportError {
            code: TransportErrorCode::crypto(48),
            frame: None,
            reason: "invalid peer certificate: UnknownIssuer".into(),
        };
        assert_eq!(
            words(of_loss(&ConnectionError::TransportError(refused), true)),
            "candor closed the QUIC connection: TLS alert 48"
        );
        let violation = TransportError {
            code: TransportErrorCode::PROTOCOL_VIOLATION,
            frame: None,
            reason: String::new(),
        };
        assert_eq!(
            words(of_loss(&ConnectionError::TransportError(violation), false)),
            "candor closed the QUIC connection: PROTOCOL_VIOLATION"
        );
    }

    #[test]
    fn only_an_idle_or_errorless_close_of_an_established_connection_carrying_nothing_is_quiet() {
        let idle = ConnectionError::TimedOut;
        assert!(quiet_close(&idle, false, false));
        assert!(!quiet_close(&idle, false, true), "requests were carried");
        assert!(
            !quiet_close(&idle, true, false),
            "a handshake that timed out"
        );
        assert!(!quiet_close(&ConnectionError::Reset, false, false));
        let refused = TransportError {
            code: TransportErrorCode::PROTOCOL_VIOLATION,
            frame: None,
            reason: String::new(),
        };
        let broke = ConnectionError::TransportError(refused);
        assert!(!quiet_close(&broke, false, false));
    }

    #[test]
    fn h3_codes_are_named_and_unknown_ones_share_a_row() {
        assert_eq!(h3_code_name(H3_REQUEST_CANCELLED), "H3_REQUEST_CANCELLED");
        assert_eq!(
            h3_code_name(QPACK_DECOMPRESSION_FAILED),
            "QPACK_DECOMPRESSION_FAILED"
        );
        assert_eq!(h3_code_name(0x1f * 7 + 0x21), "an unknown code");
        assert_eq!(stream_reset(0x999), stream_reset(0x21));
        assert_eq!(
            words(stream_reset(0x10b)),
            "server reset a request stream: H3_REQUEST_REJECTED"
        );
        assert_eq!(
            words(h3_broke(H3_FRAME_UNEXPECTED)),
            "server's frames broke HTTP/3 (candor closed with H3_FRAME_UNEXPECTED)"
        );
    }
}
