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

/// Why a connection ended or could not be opened, as the report names it: the causes every
/// protocol meets (the connect, TLS, the byte stream), and those a protocol names for itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The TCP connect failed (refused, unreachable).
    Refused,
    /// Connecting (TCP, TLS or the protocol's greeting) took longer than `--timeout`.
    ConnectTimeout,
    /// The TLS handshake failed.
    Tls,
    /// The server closed or reset the connection before a response was complete.
    Closed,
    /// Writing the request failed.
    Reset,
    /// The server's bytes broke the protocol (bytes no request asked for, a malformed
    /// response).
    Malformed,
    /// An in-order response said the connection closes (HTTP/1.1's `Connection: close`)
    /// while requests were pipelined behind it: they were cut off by a close the server
    /// announced, not a crash.
    PipelinedClose,
    /// The TLS of an open connection broke (after the handshake), for this reason.
    TlsBroken(TlsBreak),
    /// A cause the protocol names (a GOAWAY's code, a WebSocket close frame).
    Protocol(ProtocolFault),
}

/// A cause of connection faults that a protocol names for itself: declared once, as a
/// `static` in the protocol's folder, and counted by the books like any other cause.
#[derive(Debug)]
pub struct FaultCause {
    /// Codes `0..named_codes` are counted apart; any code past them shares one row.
    pub named_codes: u32,
    /// The cause in words for a code (a code past the named ones is `named_codes`): the key
    /// the results count it under.
    pub describe: fn(u32) -> String,
}

/// One fault of a cause a protocol names, with its code (0 for a cause without codes).
#[derive(Clone, Copy, Debug)]
pub struct ProtocolFault {
    cause: &'static FaultCause,
    code: u32,
}

impl ProtocolFault {
    /// A fault of `cause` with `code` (a code past its named ones shares their row).
    pub fn new(cause: &'static FaultCause, code: u32) -> ProtocolFault {
        ProtocolFault {
            cause,
            code: code.min(cause.named_codes),
        }
    }

    /// The fault in words, as the results key it.
    pub fn describe(&self) -> String {
        (self.cause.describe)(self.code)
    }
}

impl PartialEq for ProtocolFault {
    fn eq(&self, o: &Self) -> bool {
        std::ptr::eq(self.cause, o.cause) && self.code == o.code
    }
}

impl Eq for ProtocolFault {}

impl From<ProtocolFault> for Fault {
    fn from(f: ProtocolFault) -> Fault {
        Fault::Protocol(f)
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

/// The causes every protocol meets, before the TLS ones in [`FaultTally`].
const PLAIN: usize = 7;
const TLS_START: usize = PLAIN;
/// Slots of the causes the engine names.
const SLOTS: usize = TLS_START + TLS_PLAIN + TLS_ALERTS.len() + 1;
/// Rows for the causes and codes protocols name: more than any protocol has (HTTP/2's two
/// code-carrying causes and its floods come to 37).
const PROTOCOL_ROWS: usize = 64;

impl Fault {
    /// Its slot among the causes the engine names; `None` for a protocol's own.
    fn index(self) -> Option<usize> {
        Some(match self {
            Fault::Refused => 0,
            Fault::ConnectTimeout => 1,
            Fault::Tls => 2,
            Fault::Closed => 3,
            Fault::Reset => 4,
            Fault::Malformed => 5,
            Fault::PipelinedClose => 6,
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
            Fault::Protocol(_) => return None,
        })
    }

    /// The cause of slot `index` in words, as the results key it.
    fn describe(index: usize) -> String {
        match index {
            0 => "connect refused or failed".into(),
            1 => "connect timed out".into(),
            2 => "TLS handshake failed".into(),
            3 => "closed or reset by the server before the full response".into(),
            4 => "writing the request failed".into(),
            5 => "response broke the protocol".into(),
            6 => "server said Connection: close while requests were pipelined behind it".into(),
            k => match k - TLS_START {
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
        }
    }
}

/// A protocol's cause and code, and how many of its faults were counted.
#[derive(Clone, Copy, Debug)]
struct Row {
    fault: ProtocolFault,
    n: u64,
}

/// Connection faults by cause, in fixed storage (a storm of them allocates nothing).
#[derive(Clone, Copy, Debug)]
pub struct FaultTally {
    counts: [u64; SLOTS],
    rows: [Option<Row>; PROTOCOL_ROWS],
    /// Faults of protocol causes past the rows (none with today's protocols).
    unplaced: u64,
}

impl Default for FaultTally {
    fn default() -> Self {
        FaultTally {
            counts: [0; SLOTS],
            rows: [None; PROTOCOL_ROWS],
            unplaced: 0,
        }
    }
}

impl PartialEq for FaultTally {
    fn eq(&self, o: &Self) -> bool {
        self.by_cause() == o.by_cause()
    }
}

impl Eq for FaultTally {}

impl FaultTally {
    #[inline]
    pub fn count(&mut self, fault: Fault) {
        self.count_n(fault, 1);
    }

    fn count_n(&mut self, fault: Fault, n: u64) {
        match (fault.index(), fault) {
            (Some(k), _) => self.counts[k] += n,
            (None, Fault::Protocol(f)) => self.count_row(f, n),
            (None, _) => unreachable!("only a protocol's causes have no slot"),
        }
    }

    fn count_row(&mut self, fault: ProtocolFault, n: u64) {
        for slot in self.rows.iter_mut() {
            match slot {
                Some(row) if row.fault == fault => {
                    row.n += n;
                    return;
                }
                Some(_) => {}
                None => {
                    *slot = Some(Row { fault, n });
                    return;
                }
            }
        }
        self.unplaced += n;
    }

    pub fn add(&mut self, o: &FaultTally) {
        for (a, b) in self.counts.iter_mut().zip(o.counts.iter()) {
            *a += b;
        }
        for row in o.rows.iter().flatten() {
            self.count_row(row.fault, row.n);
        }
        self.unplaced += o.unplaced;
    }

    pub fn total(&self) -> u64 {
        self.counts.iter().sum::<u64>()
            + self.rows.iter().flatten().map(|r| r.n).sum::<u64>()
            + self.unplaced
    }

    /// Each cause that occurred, in words, with its count.
    pub fn by_cause(&self) -> std::collections::BTreeMap<String, u64> {
        let mut by: std::collections::BTreeMap<String, u64> = self
            .counts
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(k, &n)| (Fault::describe(k), n))
            .collect();
        for row in self.rows.iter().flatten() {
            *by.entry(row.fault.describe()).or_default() += row.n;
        }
        if self.unplaced > 0 {
            *by.entry("other faults the protocol named".into())
                .or_default() += self.unplaced;
        }
        by
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

    static NAMED: FaultCause = FaultCause {
        named_codes: 2,
        describe: |code| format!("named cause, code {code}"),
    };
    static PLAIN_CAUSE: FaultCause = FaultCause {
        named_codes: 0,
        describe: |_| "a cause without codes".into(),
    };

    #[test]
    fn a_protocols_causes_are_tallied_by_cause_and_code_beside_the_engines() {
        let mut t = FaultTally::default();
        for _ in 0..3 {
            t.count(ProtocolFault::new(&NAMED, 1).into());
        }
        // Codes past the named ones share one row, as the cause words it.
        t.count(ProtocolFault::new(&NAMED, 7).into());
        t.count(ProtocolFault::new(&NAMED, 9).into());
        t.count(ProtocolFault::new(&PLAIN_CAUSE, 4).into());
        t.count(Fault::Refused);
        let mut u = FaultTally::default();
        u.add(&t);
        u.add(&t);
        assert_eq!(u.total(), 14);
        let by = u.by_cause();
        assert_eq!(by.get("named cause, code 1"), Some(&6));
        assert_eq!(by.get("named cause, code 2"), Some(&4));
        assert_eq!(by.get("a cause without codes"), Some(&2));
        assert_eq!(by.get("connect refused or failed"), Some(&2));
        assert_eq!(by.len(), 4);
        assert_eq!(u, {
            let mut v = t;
            v.add(&t);
            v
        });
    }

    #[test]
    fn causes_past_the_rows_are_still_counted() {
        static MANY: FaultCause = FaultCause {
            named_codes: 1000,
            describe: |code| format!("code {code}"),
        };
        let mut t = FaultTally::default();
        for code in 0..(PROTOCOL_ROWS as u32 + 5) {
            t.count(ProtocolFault::new(&MANY, code).into());
        }
        assert_eq!(t.total(), PROTOCOL_ROWS as u64 + 5);
        assert_eq!(
            t.by_cause().get("other faults the protocol named"),
            Some(&5)
        );
    }
}
