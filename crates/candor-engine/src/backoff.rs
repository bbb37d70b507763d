//! Connections that keep failing the same way: when one may be tried again (exponential
//! back-off, decided without I/O) and what made them fail (a fixed tally of causes), so that a
//! server that refuses, resets or breaks the protocol on every connection is counted and named
//! instead of becoming a silent reconnect storm.
//!
//! The rule: a connection that ends before it answered any exchange (refused, reset, a failed
//! TLS handshake, a GOAWAY or a protocol error before the first response) may be connected again
//! only after a wait that starts at [`FIRST_NS`] and doubles with each such end in a row, up to
//! [`MAX_NS`]; one answered exchange resets it. The requests waiting meanwhile keep their
//! intended times, so the wait shows as send lag and response time, as it would for a real
//! client. A timeout is not such an end: it is already bounded by `--timeout` per attempt.

/// The first wait after a connection ended without an answer.
pub const FIRST_NS: u64 = 1_000_000;
/// The longest wait: a target that recovers is tried again within a second.
pub const MAX_NS: u64 = 1_000_000_000;

/// The back-off state of one connection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Backoff {
    /// Ends in a row without an answered exchange.
    streak: u32,
    /// An exchange was answered on the current connection.
    answered: bool,
    /// The earliest instant the next connect may start.
    retry_at: u64,
}

impl Backoff {
    /// The wait after the `streak`-th end in a row without an answer (0: none).
    pub fn delay_ns(streak: u32) -> u64 {
        match streak {
            0 => 0,
            n => FIRST_NS.saturating_mul(1u64 << (n - 1).min(32)).min(MAX_NS),
        }
    }

    /// A new connection is being opened: nothing answered on it yet.
    #[inline]
    pub fn connecting(&mut self) {
        self.answered = false;
    }

    /// An exchange was answered on this connection: it works.
    #[inline]
    pub fn answered(&mut self) {
        self.answered = true;
        self.streak = 0;
    }

    /// The connection ended at `now` (failed, or closed by the server); returns when it may be
    /// connected again.
    pub fn ended(&mut self, now: u64) -> u64 {
        if std::mem::take(&mut self.answered) {
            self.streak = 0;
            self.retry_at = now;
        } else {
            self.streak = self.streak.saturating_add(1);
            self.retry_at = now.saturating_add(Self::delay_ns(self.streak));
        }
        self.retry_at
    }

    /// Whether an exchange was answered on the current connection.
    pub fn has_answered(&self) -> bool {
        self.answered
    }

    /// The connection was closed at `now` without a fault (the server closed it with nothing
    /// outstanding, say an idle keep-alive close): it may be connected again at once, and the
    /// streak of failures stands.
    pub fn closed(&mut self, now: u64) {
        if std::mem::take(&mut self.answered) {
            self.streak = 0;
        }
        self.retry_at = now;
    }

    /// The earliest instant the next connect may start.
    pub fn retry_at(&self) -> u64 {
        self.retry_at
    }

    /// Ends in a row without an answered exchange.
    pub fn streak(&self) -> u32 {
        self.streak
    }
}

/// Why a connection ended or could not be opened, as the report names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The TCP connect failed (refused, unreachable).
    Refused,
    /// Connecting (TCP, TLS or the HTTP/2 preface) took longer than `--timeout`.
    ConnectTimeout,
    /// The TLS handshake failed.
    Tls,
    /// The server closed or reset the connection before a response was complete.
    Closed,
    /// Writing the request failed.
    Reset,
    /// The server's bytes broke the protocol (HTTP/1.1, a raw TCP framing, bytes no request
    /// asked for).
    Malformed,
    /// The server refused the WebSocket upgrade: its answer is not a valid
    /// `101 Switching Protocols` (malformed, or without its `Upgrade`/`Connection` headers).
    Upgrade,
    /// The server answered the WebSocket upgrade with a status other than 101.
    UpgradeStatus,
    /// The server's 101 carries a `Sec-WebSocket-Accept` that is not the key's.
    UpgradeAccept,
    /// The server closed the WebSocket with a close frame.
    WsClose,
    /// The server sent a WebSocket message that `--ws-match` matches to no message sent.
    WsUnmatched,
    /// The server sent pings faster than it took their pongs: candor closed with 1008.
    WsPingFlood,
    /// The server sent a text message (or close reason) that is not UTF-8: candor closed with
    /// 1007 (RFC 6455 section 8.1).
    WsInvalidUtf8,
    /// The server answered with `Connection: close` while requests were pipelined behind that
    /// response (HTTP/1.1): they were cut off by a close the server announced, not a crash.
    PipelinedClose,
    /// The server sent GOAWAY with this error code before answering anything.
    GoAway(u32),
    /// The server's frames broke HTTP/2: candor ended the connection with GOAWAY and this code.
    H2Error(u32),
    /// The server flooded the connection with frames of this kind (more pending acks, or more
    /// frames that moved no response, than the HTTP/2 protocol's bounds allow): candor ended it
    /// with GOAWAY ENHANCE_YOUR_CALM.
    H2Flood(H2Flood),
    /// The TLS of an open connection broke (after the handshake), for this reason.
    TlsBroken(TlsBreak),
}

/// The kinds of HTTP/2 flood a server can send (each bounded in `protocol/http2/flood.rs`),
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
    const ALL: [H2Flood; 7] = [
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

/// Why the TLS of an open connection broke: the record layer's and the post-handshake
/// messages' faults, grouped as a person would act on them; a fatal alert by its code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlsBreak {
    /// A record failed to decrypt.
    Decrypt,
    /// A record malformed, too large, or of a type not expected.
    Record,
    /// A handshake message after the handshake malformed or not expected.
    Message,
    /// More of what rustls caps than it allows: KeyUpdates between application records,
    /// warning alerts, empty records in a row, HelloRequests.
    Flood,
    /// A fatal alert, with its code.
    Alert(u8),
}

/// The TLS alert codes given a slot of their own (RFC 8446 §6, RFC 5246 §7.2, and the
/// extensions' registry); others share one.
const TLS_ALERTS: [u8; 34] = [
    0, 10, 20, 21, 22, 30, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 60, 70, 71, 80, 86, 90,
    100, 109, 110, 111, 112, 113, 114, 115, 116, 120,
];
/// The TLS causes before the alerts.
const TLS_PLAIN: usize = 4;

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

/// The plain causes before the two code-carrying ones in [`FaultTally`].
const PLAIN: usize = 14;
/// One slot per named code and one for the others.
const CODES: usize = H2_CODES.len() + 1;
const TLS_START: usize = PLAIN + 2 * CODES + H2Flood::ALL.len();
const SLOTS: usize = TLS_START + TLS_PLAIN + TLS_ALERTS.len() + 1;

impl Fault {
    fn index(self) -> usize {
        let code = |c: u32| (c as usize).min(H2_CODES.len());
        match self {
            Fault::Refused => 0,
            Fault::ConnectTimeout => 1,
            Fault::Tls => 2,
            Fault::Closed => 3,
            Fault::Reset => 4,
            Fault::Malformed => 5,
            Fault::Upgrade => 6,
            Fault::WsClose => 7,
            Fault::WsUnmatched => 8,
            Fault::UpgradeStatus => 9,
            Fault::UpgradeAccept => 10,
            Fault::WsPingFlood => 11,
            Fault::WsInvalidUtf8 => 12,
            Fault::PipelinedClose => 13,
            Fault::GoAway(c) => PLAIN + code(c),
            Fault::H2Error(c) => PLAIN + CODES + code(c),
            Fault::H2Flood(f) => PLAIN + 2 * CODES + f.index(),
            Fault::TlsBroken(b) => {
                TLS_START
                    + match b {
                        TlsBreak::Decrypt => 0,
                        TlsBreak::Record => 1,
                        TlsBreak::Message => 2,
                        TlsBreak::Flood => 3,
                        TlsBreak::Alert(a) => {
                            TLS_PLAIN
                                + TLS_ALERTS
                                    .iter()
                                    .position(|&k| k == a)
                                    .unwrap_or(TLS_ALERTS.len())
                        }
                    }
            }
        }
    }

    /// The cause in words, as the results key it.
    pub fn describe(index: usize) -> String {
        let code = |k: usize| h2_code_name(k as u32);
        match index {
            0 => "connect refused or failed".into(),
            1 => "connect timed out".into(),
            2 => "TLS handshake failed".into(),
            3 => "closed or reset by the server before the full response".into(),
            4 => "writing the request failed".into(),
            5 => "response broke the protocol".into(),
            6 => "WebSocket upgrade refused (no valid 101)".into(),
            7 => "server closed the WebSocket (close frame)".into(),
            8 => "WebSocket reply matched no message sent".into(),
            9 => "WebSocket upgrade refused (status not 101)".into(),
            10 => "WebSocket upgrade refused (wrong Sec-WebSocket-Accept)".into(),
            11 => "WebSocket ping flood (pongs the server did not take)".into(),
            12 => "WebSocket text message not UTF-8 (closed 1007)".into(),
            13 => "server said Connection: close while requests were pipelined behind it".into(),
            k if k < PLAIN + CODES => {
                format!("server sent GOAWAY {} before any response", code(k - PLAIN))
            }
            k if k >= TLS_START => match k - TLS_START {
                0 => "a TLS record from the server failed to decrypt".into(),
                1 => "the server sent a malformed or unexpected TLS record".into(),
                2 => "the server sent a malformed or unexpected TLS handshake message after the handshake".into(),
                3 => "the server sent more TLS KeyUpdates, warning alerts, empty records or HelloRequests than allowed".into(),
                a => match TLS_ALERTS.get(a - TLS_PLAIN) {
                    Some(&code) => format!(
                        "the server ended TLS with the alert '{}'",
                        crate::transport::tls_session::alert_name(code)
                    ),
                    None => "the server ended TLS with an alert of an unknown code".into(),
                },
            },
            k if k < PLAIN + 2 * CODES => format!(
                "server's frames broke HTTP/2 (candor sent GOAWAY {})",
                code(k - PLAIN - CODES)
            ),
            k => format!(
                "server flooded the connection with {} (candor sent GOAWAY ENHANCE_YOUR_CALM)",
                H2Flood::ALL[k - PLAIN - 2 * CODES].frames()
            ),
        }
    }
}

/// Connection faults by cause, in fixed storage (a storm of them allocates nothing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultTally {
    counts: [u64; SLOTS],
}

impl Default for FaultTally {
    fn default() -> Self {
        FaultTally { counts: [0; SLOTS] }
    }
}

impl FaultTally {
    #[inline]
    pub fn count(&mut self, fault: Fault) {
        self.counts[fault.index()] += 1;
    }

    pub fn add(&mut self, o: &FaultTally) {
        for (a, b) in self.counts.iter_mut().zip(o.counts.iter()) {
            *a += b;
        }
    }

    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Each cause that occurred, in words, with its count.
    pub fn by_cause(&self) -> std::collections::BTreeMap<String, u64> {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(k, &n)| (Fault::describe(k), n))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_doubles_from_a_millisecond_up_to_a_second_and_an_answer_resets_it() {
        let mut b = Backoff::default();
        let mut now = 5_000;
        let mut waits = Vec::new();
        for _ in 0..14 {
            let at = b.ended(now);
            waits.push(at - now);
            now = at;
        }
        let ms = 1_000_000;
        assert_eq!(
            waits,
            vec![
                ms,
                2 * ms,
                4 * ms,
                8 * ms,
                16 * ms,
                32 * ms,
                64 * ms,
                128 * ms,
                256 * ms,
                512 * ms,
                1000 * ms,
                1000 * ms,
                1000 * ms,
                1000 * ms
            ]
        );
        assert_eq!(b.streak(), 14);
        // A connection that answered, then closed (an idle keep-alive close), is reopened at once.
        b.answered();
        assert_eq!(b.ended(now), now);
        assert_eq!(b.streak(), 0);
        // The next that fails starts again at a millisecond.
        assert_eq!(b.ended(now), now + ms);
        assert_eq!(Backoff::delay_ns(u32::MAX), MAX_NS);
        // A close without a fault (nothing outstanding) is no failure: at once, streak kept.
        let streak = b.streak();
        b.closed(now + 5);
        assert_eq!((b.retry_at(), b.streak()), (now + 5, streak));
        assert_eq!(b.ended(now + 5), now + 5 + 2 * ms);
    }

    #[test]
    fn faults_are_tallied_by_cause_with_their_http2_codes() {
        let mut t = FaultTally::default();
        for _ in 0..3 {
            t.count(Fault::GoAway(1));
        }
        t.count(Fault::H2Error(6));
        t.count(Fault::Refused);
        t.count(Fault::GoAway(0xdead));
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
                t.count(Fault::H2Flood(kind));
            }
        }
        t.count(Fault::H2Error(11));
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
