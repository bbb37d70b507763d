//! The first failed responses of a load thread, kept so that the report can show what came back
//! (status, failed check, a body excerpt), in storage fixed in size before the run: a protocol
//! copies a failing body's first bytes into an [`ExcerptBuf`] of its connection or stream, and the
//! ledger keeps the earliest [`FAILURE_EXAMPLES`] by intended time in [`FailureSamples`]. Nothing
//! here allocates.

use candor_core::workload_results::{FailedCheck, EXCERPT_BYTES, FAILURE_EXAMPLES};

/// Bytes an excerpt keeps: one more than is shown, so that a longer body is known to be longer.
pub const EXCERPT_KEPT: usize = EXCERPT_BYTES + 1;

/// A response check other than the status that a response failed (the status is judged by the
/// ledger). Headers are judged before the body, so a response failing both is `Header`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ContentCheck {
    Header,
    Body,
    /// A script's `response()` returned false or called `wrk.fail`.
    Script,
    /// A streamed response whose stream failed (an error event, no `[DONE]`, a 429 of an LLM
    /// run): class `stream`.
    Stream,
}

impl From<ContentCheck> for FailedCheck {
    fn from(c: ContentCheck) -> FailedCheck {
        match c {
            ContentCheck::Header => FailedCheck::Header,
            ContentCheck::Body => FailedCheck::Body,
            ContentCheck::Script => FailedCheck::Script,
            ContentCheck::Stream => FailedCheck::Stream,
        }
    }
}

/// The first [`EXCERPT_KEPT`] bytes of one response body, fed as the body streams in.
#[derive(Clone, Copy, Debug)]
pub struct ExcerptBuf {
    bytes: [u8; EXCERPT_KEPT],
    len: usize,
}

impl Default for ExcerptBuf {
    fn default() -> Self {
        ExcerptBuf {
            bytes: [0; EXCERPT_KEPT],
            len: 0,
        }
    }
}

impl ExcerptBuf {
    /// Starts a new body.
    #[inline]
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Appends the next bytes of the body, as far as there is room.
    #[inline]
    pub fn push(&mut self, more: &[u8]) {
        let take = more.len().min(EXCERPT_KEPT - self.len);
        self.bytes[self.len..self.len + take].copy_from_slice(&more[..take]);
        self.len += take;
    }

    pub fn as_slice(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// One kept failure: which entry of the schedule, which request, what came back.
#[derive(Clone, Copy, Debug)]
pub struct FailureSample {
    pub seq: u64,
    /// Absolute intended send time (monotonic ns).
    pub intended: u64,
    /// The prepared request it sent.
    pub request: u32,
    pub status: u16,
    pub check: FailedCheck,
    /// `None`: the protocol did not capture the body.
    body: Option<ExcerptBuf>,
}

impl FailureSample {
    /// The body's first bytes (more than [`EXCERPT_BYTES`] of them: the body was longer).
    pub fn body(&self) -> Option<&[u8]> {
        self.body.as_ref().map(ExcerptBuf::as_slice)
    }

    fn key(&self) -> (u64, u64) {
        (self.intended, self.seq)
    }
}

/// The earliest [`FAILURE_EXAMPLES`] failures by intended time (then `seq`) of one thread, or of
/// a run once the threads' are merged; unordered.
#[derive(Clone, Copy, Debug, Default)]
pub struct FailureSamples {
    kept: [Option<FailureSample>; FAILURE_EXAMPLES],
}

impl FailureSamples {
    /// Keeps `sample` if fewer than [`FAILURE_EXAMPLES`] are kept or it is earlier than the
    /// latest kept one (which it then replaces).
    pub fn offer(&mut self, sample: FailureSample) {
        let mut latest: Option<usize> = None;
        for (i, k) in self.kept.iter().enumerate() {
            match k {
                None => {
                    self.kept[i] = Some(sample);
                    return;
                }
                Some(k) => {
                    if latest.is_none_or(|l| self.kept[l].is_some_and(|m| k.key() > m.key())) {
                        latest = Some(i);
                    }
                }
            }
        }
        if let Some(l) = latest {
            if self.kept[l].is_some_and(|m| sample.key() < m.key()) {
                self.kept[l] = Some(sample);
            }
        }
    }

    /// Keeps a failure of request `request` (entry `seq`, intended at `intended`) that failed
    /// `check` with `status`; `body`: its first bytes, `None` when not captured.
    #[inline]
    pub fn record(
        &mut self,
        seq: u64,
        intended: u64,
        request: u32,
        status: u16,
        check: FailedCheck,
        body: Option<&[u8]>,
    ) {
        // Cheap refusal first: most failures of a failing run are later than every kept one.
        if self.kept.iter().all(Option::is_some)
            && self
                .kept
                .iter()
                .flatten()
                .all(|k| k.key() < (intended, seq))
        {
            return;
        }
        let body = body.map(|b| {
            let mut buf = ExcerptBuf::default();
            buf.push(b);
            buf
        });
        self.offer(FailureSample {
            seq,
            intended,
            request,
            status,
            check,
            body,
        });
    }

    /// Forgets the failure of entry `seq` (it was re-booked in another class).
    pub fn forget(&mut self, seq: u64) {
        for k in &mut self.kept {
            if k.is_some_and(|s| s.seq == seq) {
                *k = None;
            }
        }
    }

    /// Keeps the earliest of both.
    pub fn merge(&mut self, other: &FailureSamples) {
        for s in other.kept.iter().flatten() {
            self.offer(*s);
        }
    }

    /// The kept failures, earliest first.
    pub fn sorted(&self) -> Vec<FailureSample> {
        let mut v: Vec<FailureSample> = self.kept.iter().flatten().copied().collect();
        v.sort_by_key(FailureSample::key);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_excerpt_keeps_the_first_bytes_across_pushes() {
        let mut b = ExcerptBuf::default();
        b.push(b"HTTP body ");
        b.push(&[b'x'; 200]);
        assert_eq!(b.as_slice().len(), EXCERPT_KEPT);
        assert!(b.as_slice().starts_with(b"HTTP body xx"));
        b.clear();
        b.push(b"again");
        assert_eq!(b.as_slice(), b"again");
    }

    #[test]
    fn at_most_n_are_kept_and_they_are_the_earliest() {
        let mut s = FailureSamples::default();
        // Completion order is not intended order: seq 7 (intended 70) completes first.
        for (seq, intended) in [
            (7, 70),
            (9, 90),
            (1, 10),
            (8, 80),
            (3, 30),
            (2, 20),
            (6, 60),
        ] {
            s.record(seq, intended, 0, 503, FailedCheck::Status, Some(b"busy"));
        }
        let seqs: Vec<u64> = s.sorted().iter().map(|k| k.seq).collect();
        assert_eq!(seqs, vec![1, 2, 3, 6, 7]);
        s.forget(3);
        let mut other = FailureSamples::default();
        other.record(4, 40, 1, 200, FailedCheck::Body, None);
        other.record(5, 95, 1, 200, FailedCheck::Header, None);
        s.merge(&other);
        let kept = s.sorted();
        let seqs: Vec<u64> = kept.iter().map(|k| k.seq).collect();
        assert_eq!(seqs, vec![1, 2, 4, 6, 7]);
        assert_eq!(kept[0].body(), Some(&b"busy"[..]));
        assert_eq!((kept[2].check, kept[2].body()), (FailedCheck::Body, None));
    }
}
