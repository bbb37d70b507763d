//! Codes a protocol's replies carry beside the HTTP status (gRPC's `grpc-status`): each
//! protocol declares its codes once as a [`ReplyCodeTable`], the books count them generically
//! ([`ReplyCodeCounts`], no allocation), and the results write them under the table's field.

use crate::phase_results::FailureClass;
use crate::workload_results::FailedCheck;
use std::collections::BTreeMap;

/// The most codes one table may hold: the books keep a fixed array, so that counting a code
/// never allocates.
pub const MAX_REPLY_CODES: usize = 32;

/// A protocol's reply codes: their names by number, the results field they are written under,
/// and how a reply the protocol judged unacceptable fails.
#[derive(Debug)]
pub struct ReplyCodeTable {
    /// The results' field (the contract, e.g. `grpc_status`): see [`ReplyCodeCounts::write_into`].
    pub field: &'static str,
    /// The counter of these codes in `/metrics` and the pushed series (e.g.
    /// `candor_grpc_calls_total`); `field` is its label naming the code.
    pub series: &'static str,
    /// Each code's name, at its number (at most [`MAX_REPLY_CODES`]).
    pub names: &'static [&'static str],
    /// The class a refused code fails in, and what its failure example names.
    pub failure: FailureClass,
    pub check: FailedCheck,
}

impl ReplyCodeTable {
    /// Code `code`'s name; a number the table does not name goes by its number.
    pub fn name(&self, code: u32) -> std::borrow::Cow<'static, str> {
        match self.names.get(code as usize) {
            Some(name) => (*name).into(),
            None => code.to_string().into(),
        }
    }
}

/// One reply's code, in its protocol's table.
#[derive(Debug, Clone, Copy)]
pub struct ReplyCode {
    pub table: &'static ReplyCodeTable,
    pub code: u32,
}

/// Replies counted by code, for one table (the run's protocol has at most one).
#[derive(Debug, Clone, Copy, Default)]
pub struct ReplyCodeCounts {
    table: Option<&'static ReplyCodeTable>,
    counts: [u64; MAX_REPLY_CODES],
}

impl ReplyCodeCounts {
    /// Counts one reply; a code past [`MAX_REPLY_CODES`] is counted in the last slot.
    #[inline]
    pub fn record(&mut self, code: ReplyCode) {
        self.table = Some(code.table);
        self.counts[(code.code as usize).min(MAX_REPLY_CODES - 1)] += 1;
    }

    pub fn merge(&mut self, other: &ReplyCodeCounts) {
        if self.table.is_none() {
            self.table = other.table;
        }
        for (mine, theirs) in self.counts.iter_mut().zip(other.counts) {
            *mine += theirs;
        }
    }

    /// Replies counted with `code`.
    pub fn get(&self, code: u32) -> u64 {
        self.counts[(code as usize).min(MAX_REPLY_CODES - 1)]
    }

    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The results field the counts go under, once any reply was counted.
    /// The table of the codes counted, `None` before the first.
    pub fn table(&self) -> Option<&'static ReplyCodeTable> {
        self.table
    }

    pub fn field(&self) -> Option<&'static str> {
        self.table.map(|t| t.field)
    }

    /// Writes the counts under the field their table names (the results' contract:
    /// `grpc_status`).
    pub fn write_into(&self, results: &mut crate::phase_results::PhaseResults) {
        let into = match self.field() {
            Some("grpc_status") => &mut results.grpc_status,
            None => return,
            Some(other) => {
                debug_assert!(false, "the results have no field {other}");
                return;
            }
        };
        *into = self.by_name();
    }

    /// The codes seen by name, as the results write them (`{"OK": 9000, "UNAVAILABLE": 12}`).
    pub fn by_name(&self) -> BTreeMap<String, u64> {
        let Some(table) = self.table else {
            return BTreeMap::new();
        };
        (0..MAX_REPLY_CODES as u32)
            .zip(self.counts)
            .filter(|(_, n)| *n > 0)
            .map(|(code, n)| (table.name(code).into_owned(), n))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static TABLE: ReplyCodeTable = ReplyCodeTable {
        field: "grpc_status",
        series: "candor_grpc_calls_total",
        names: &["OK", "CANCELLED", "UNKNOWN"],
        failure: FailureClass::Grpc,
        check: FailedCheck::Grpc,
    };

    fn code(code: u32) -> ReplyCode {
        ReplyCode {
            table: &TABLE,
            code,
        }
    }

    #[test]
    fn counts_are_written_by_name_under_their_tables_field() {
        let mut a = ReplyCodeCounts::default();
        assert_eq!((a.field(), a.by_name().len()), (None, 0));
        a.record(code(0));
        a.record(code(0));
        let mut b = ReplyCodeCounts::default();
        b.record(code(2));
        b.record(code(7));
        a.merge(&b);
        assert_eq!(a.field(), Some("grpc_status"));
        assert_eq!(a.total(), 4);
        let names: Vec<(String, u64)> = a.by_name().into_iter().collect();
        assert_eq!(
            names,
            [("7".into(), 1), ("OK".into(), 2), ("UNKNOWN".into(), 1)]
        );
    }

    #[test]
    fn a_code_past_the_array_is_counted_not_lost() {
        let mut a = ReplyCodeCounts::default();
        a.record(code(1_000));
        assert_eq!(a.total(), 1);
    }
}
