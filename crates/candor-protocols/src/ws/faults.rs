//! WebSocket's own causes of connection faults, as the books count them: an upgrade refused
//! (and why), the server's close frame, a reply that matches nothing, a ping flood, text that is
//! not UTF-8.

use candor_engine::backoff::{Fault, FaultCause, ProtocolFault};

/// A cause without codes, in these words.
macro_rules! cause {
    ($name:ident, $doc:literal, $words:literal) => {
        #[doc = $doc]
        pub static $name: FaultCause = FaultCause {
            named_codes: 0,
            describe: |_| $words.into(),
        };
    };
}

cause!(
    UPGRADE,
    "The server refused the upgrade: its answer is not a valid `101 Switching Protocols`.",
    "WebSocket upgrade refused (no valid 101)"
);
cause!(
    UPGRADE_STATUS,
    "The server answered the upgrade with a status other than 101.",
    "WebSocket upgrade refused (status not 101)"
);
cause!(
    UPGRADE_ACCEPT,
    "The server's 101 carries a `Sec-WebSocket-Accept` that is not the key's.",
    "WebSocket upgrade refused (wrong Sec-WebSocket-Accept)"
);
cause!(
    CLOSE,
    "The server closed the WebSocket with a close frame.",
    "server closed the WebSocket (close frame)"
);
cause!(
    UNMATCHED,
    "The server sent a message that `--ws-match` matches to no message sent.",
    "WebSocket reply matched no message sent"
);
cause!(
    PING_FLOOD,
    "The server sent pings faster than it took their pongs: candor closed with 1008.",
    "WebSocket ping flood (pongs the server did not take)"
);
cause!(
    INVALID_UTF8,
    "The server sent text that is not UTF-8: candor closed with 1007 (RFC 6455 section 8.1).",
    "WebSocket text message not UTF-8 (closed 1007)"
);

/// A fault of `cause`.
pub fn fault(cause: &'static FaultCause) -> Fault {
    ProtocolFault::new(cause, 0).into()
}
