//! HTTP/2's own causes of connection faults, as the books count them: a GOAWAY before any
//! answer (by its error code), frames that broke the protocol (by the code candor sent), and
//! floods of frames (by kind).

use candor_engine::backoff::{Fault, FaultCause, ProtocolFault};

/// The kinds of HTTP/2 flood a server can send (each bounded in `flood.rs`),
/// named apart so that the results say which one a server sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum H2Flood {
    /// PING frames: acks pending past the bound, or PINGs without a response moving.
    Ping,
    /// SETTINGS frames, likewise.
    Settings,
    /// DATA frames that carry nothing to a response (empty, or on no stream of this client).
    Data,
    /// WINDOW_UPDATE frames with no request body waiting for them.
    WindowUpdate,
    /// RST_STREAM frames for streams this client does not have (CVE-2023-44487 style).
    RstStream,
    /// CONTINUATION frames of one header block past its bound (CVE-2024-27316 style).
    Continuation,
    /// PRIORITY, unknown and other frames that move nothing (GOAWAY again, HEADERS of no
    /// stream of this client).
    Other,
}

impl H2Flood {
    pub const ALL: [H2Flood; 7] = [
        H2Flood::Ping,
        H2Flood::Settings,
        H2Flood::Data,
        H2Flood::WindowUpdate,
        H2Flood::RstStream,
        H2Flood::Continuation,
        H2Flood::Other,
    ];

    /// Its place among the kinds, in the order they are declared (the fault tally's slots).
    pub fn index(self) -> usize {
        self as usize
    }

    /// The frames in words, as the results name the flood.
    pub fn frames(self) -> &'static str {
        match self {
            H2Flood::Ping => "PING frames",
            H2Flood::Settings => "SETTINGS frames",
            H2Flood::Data => "DATA frames that carry nothing",
            H2Flood::WindowUpdate => "WINDOW_UPDATE frames",
            H2Flood::RstStream => "RST_STREAM frames",
            H2Flood::Continuation => "CONTINUATION frames",
            H2Flood::Other => "frames that move nothing (PRIORITY, unknown)",
        }
    }
}

/// HTTP/2 error codes with names (RFC 9113 §7); codes past these are counted as "other".
const H2_CODES: [&str; 14] = [
    "NO_ERROR",
    "PROTOCOL_ERROR",
    "INTERNAL_ERROR",
    "FLOW_CONTROL_ERROR",
    "SETTINGS_TIMEOUT",
    "STREAM_CLOSED",
    "FRAME_SIZE_ERROR",
    "REFUSED_STREAM",
    "CANCEL",
    "COMPRESSION_ERROR",
    "CONNECT_ERROR",
    "ENHANCE_YOUR_CALM",
    "INADEQUATE_SECURITY",
    "HTTP_1_1_REQUIRED",
];

/// The name of HTTP/2 error code `code` (RFC 9113 §7), e.g. `PROTOCOL_ERROR`.
pub fn h2_code_name(code: u32) -> &'static str {
    H2_CODES
        .get(code as usize)
        .copied()
        .unwrap_or("an unknown code")
}

/// The server sent GOAWAY with this error code before answering anything.
pub static GOAWAY: FaultCause = FaultCause {
    named_codes: H2_CODES.len() as u32,
    describe: |code| {
        format!(
            "server sent GOAWAY {} before any response",
            h2_code_name(code)
        )
    },
};

/// The server's frames broke HTTP/2: candor ended the connection with GOAWAY and this code.
pub static BROKE: FaultCause = FaultCause {
    named_codes: H2_CODES.len() as u32,
    describe: |code| {
        format!(
            "server's frames broke HTTP/2 (candor sent GOAWAY {})",
            h2_code_name(code)
        )
    },
};

/// The server flooded the connection with frames of one kind (the code is its index): candor
/// ended it with GOAWAY ENHANCE_YOUR_CALM.
pub static FLOOD: FaultCause = FaultCause {
    named_codes: H2Flood::ALL.len() as u32,
    describe: |kind| {
        format!(
            "server flooded the connection with {} (candor sent GOAWAY ENHANCE_YOUR_CALM)",
            H2Flood::ALL[kind as usize].frames()
        )
    },
};

/// A GOAWAY with `code` before any answer.
pub fn goaway(code: u32) -> Fault {
    ProtocolFault::new(&GOAWAY, code).into()
}

/// Frames that broke HTTP/2; candor sent GOAWAY with `code`.
pub fn broke(code: u32) -> Fault {
    ProtocolFault::new(&BROKE, code).into()
}

/// A flood of `kind`.
pub fn flood(kind: H2Flood) -> Fault {
    ProtocolFault::new(&FLOOD, kind.index() as u32).into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use candor_engine::backoff::FaultTally;

    #[test]
    fn faults_are_tallied_by_cause_with_their_http2_codes() {
        let mut t = FaultTally::default();
        for _ in 0..3 {
            t.count(goaway(1));
        }
        t.count(broke(6));
        t.count(Fault::Refused);
        t.count(goaway(0xdead));
        let mut u = FaultTally::default();
        u.add(&t);
        assert_eq!(u.total(), 6);
        let by = u.by_cause();
        assert_eq!(
            by.get("server sent GOAWAY PROTOCOL_ERROR before any response"),
            Some(&3)
        );
        assert_eq!(
            by.get("server's frames broke HTTP/2 (candor sent GOAWAY FRAME_SIZE_ERROR)"),
            Some(&1)
        );
        assert_eq!(by.get("connect refused or failed"), Some(&1));
        assert_eq!(
            by.get("server sent GOAWAY an unknown code before any response"),
            Some(&1)
        );
    }

    #[test]
    fn each_http2_flood_is_tallied_under_its_own_kind() {
        let mut t = FaultTally::default();
        for (n, &kind) in H2Flood::ALL.iter().enumerate() {
            assert_eq!(kind.index(), n);
            for _ in 0..=n {
                t.count(flood(kind));
            }
        }
        t.count(broke(11));
        let by = t.by_cause();
        assert_eq!(by.len(), 8);
        assert_eq!(
            by.get("server flooded the connection with PING frames (candor sent GOAWAY ENHANCE_YOUR_CALM)"),
            Some(&1)
        );
        assert_eq!(
            by.get("server flooded the connection with CONTINUATION frames (candor sent GOAWAY ENHANCE_YOUR_CALM)"),
            Some(&6)
        );
        assert_eq!(
            by.get("server flooded the connection with frames that move nothing (PRIORITY, unknown) (candor sent GOAWAY ENHANCE_YOUR_CALM)"),
            Some(&7)
        );
        assert_eq!(
            by.get("server's frames broke HTTP/2 (candor sent GOAWAY ENHANCE_YOUR_CALM)"),
            Some(&1)
        );
    }
}
