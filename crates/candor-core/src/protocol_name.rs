//! The name a run's protocol goes by in the results and reports, declared by each protocol in
//! its own folder: a `static` [`ProtocolNaming`] added to [`PROTOCOL_NAMES`] where it is
//! written, so that adding a protocol adds no line here.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// How a protocol is named: its id in the results (`"h2c"`), its words in a report's first line
/// (`"HTTP/2, h2c"`), and what a report must know of its replies.
#[derive(Debug)]
pub struct ProtocolNaming {
    /// The results' `config.protocol` (the contract: never renamed).
    pub id: &'static str,
    /// The protocol in the words of a report's first line.
    pub words: &'static str,
    /// Its replies are messages (WebSocket): no HTTP status, and each arrives whole, so its
    /// first byte is its end.
    pub replies_are_messages: bool,
}

/// Every protocol's naming, gathered at link time from the folders that declare them
/// (`#[linkme::distributed_slice(PROTOCOL_NAMES)]`): a results file names its protocol by id,
/// and a reader finds the words here.
// A link-time list (linkme) rather than a match here: the names belong to the protocols, and
// this crate, under all of them, cannot list what is above it.
#[linkme::distributed_slice]
pub static PROTOCOL_NAMES: [ProtocolNaming];

/// The protocol a load run spoke, as recorded: one of [`PROTOCOL_NAMES`], or, read from a file a
/// build with other protocols wrote, an id this build does not know (its words are its id).
#[derive(Clone, Copy)]
pub struct ProtocolName(&'static ProtocolNaming);

impl ProtocolName {
    pub const fn new(naming: &'static ProtocolNaming) -> ProtocolName {
        ProtocolName(naming)
    }

    /// The protocol with results id `id`, among those this build declares.
    pub fn of_id(id: &str) -> Option<ProtocolName> {
        PROTOCOL_NAMES.iter().find(|n| n.id == id).map(ProtocolName)
    }

    pub fn id(self) -> &'static str {
        self.0.id
    }

    /// Whether its replies are messages (see [`ProtocolNaming::replies_are_messages`]).
    pub fn replies_are_messages(self) -> bool {
        self.0.replies_are_messages
    }

    /// The protocol in the words of a report's first line: "HTTP/1.1", "HTTP/2, h2c", ...
    pub fn describe(self) -> &'static str {
        self.0.words
    }
}

impl PartialEq for ProtocolName {
    fn eq(&self, other: &Self) -> bool {
        self.0.id == other.0.id
    }
}

impl Eq for ProtocolName {}

impl fmt::Debug for ProtocolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ProtocolName({:?})", self.0.id)
    }
}

impl Serialize for ProtocolName {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.0.id)
    }
}

impl<'de> Deserialize<'de> for ProtocolName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let id = String::deserialize(d)?;
        Ok(ProtocolName::of_id(&id).unwrap_or_else(|| {
            // A protocol this build does not have (a file of a newer build, or a reader that
            // links no protocol): named by its id. Leaked once per such file read, a few bytes,
            // so that every ProtocolName stays a Copy reference.
            let id: &'static str = Box::leak(id.into_boxed_str());
            ProtocolName(Box::leak(Box::new(ProtocolNaming {
                id,
                words: id,
                replies_are_messages: false,
            })))
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[linkme::distributed_slice(PROTOCOL_NAMES)]
    static DECLARED: ProtocolNaming = ProtocolNaming {
        id: "test/declared",
        words: "a protocol a test declares",
        replies_are_messages: true,
    };

    #[test]
    fn a_declared_protocol_is_read_back_by_its_id_and_keeps_its_words() {
        let name = ProtocolName::new(&DECLARED);
        let json = serde_json::to_string(&name).unwrap();
        assert_eq!(json, "\"test/declared\"");
        let back: ProtocolName = serde_json::from_str(&json).unwrap();
        assert_eq!(back, name);
        assert_eq!(back.describe(), "a protocol a test declares");
        assert!(back.replies_are_messages());
    }

    #[test]
    fn an_unknown_id_is_kept_and_described_by_itself() {
        let back: ProtocolName = serde_json::from_str("\"h9 (quantum)\"").unwrap();
        assert_eq!(back.id(), "h9 (quantum)");
        assert_eq!(back.describe(), "h9 (quantum)");
        assert!(!back.replies_are_messages());
        assert_eq!(serde_json::to_string(&back).unwrap(), "\"h9 (quantum)\"");
    }
}
