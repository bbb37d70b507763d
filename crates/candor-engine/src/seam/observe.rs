//! The response observer: what a protocol learns of each response (its status, its headers, its
//! body, where the protocol has them) goes to one [`ResponseObserver`], which judges the
//! response checks (`--check-header`, `--check-body`), keeps the first bytes of failing
//! bodies for the report, and hands a script's `response(status, headers, body)` the response
//! (`-s`, through a [`ScriptJudge`]; a response it fails is a `check` failure whose excerpt is
//! the script's reason).
//! Headers are looked at only when the observer asks for them
//! ([`ResponseObserver::wants_headers`]), as wrk hands a script headers and body only when it has
//! a `response` function. Nothing here allocates per response: the tables are shared, the excerpt
//! is inline.

use crate::examples::{ContentCheck, ExcerptBuf};
use candor_stream::openai::StreamEnd;
use candor_stream::tap::{StreamOutcome, StreamSettings, StreamTap};
use candor_wire::status::StatusSet;
use candor_workload::check::{BodyMatch, ResponseChecks};
use candor_workload::script_source::ScriptJudge;
use std::sync::Arc;

/// Header checks a header fed one at a time ([`ResponseObserver::header_bits`]) is matched
/// against: one bit each.
const HEADER_BITS: usize = 64;

/// One connection's (or one HTTP/2 stream's) view of the responses it receives, one at a time.
#[derive(Clone, Debug)]
pub struct ResponseObserver {
    /// Response checks of every request, if any; `request` says whose apply now.
    checks: Option<Arc<[ResponseChecks]>>,
    /// The statuses each request accepts, when failing responses' bodies are kept.
    accept: Option<Arc<[StatusSet]>>,
    request: usize,
    headers_ok: bool,
    body: BodyMatch,
    /// Whether the current body is copied into `excerpt`: its status failed, or a check applies.
    capturing: bool,
    /// The first bytes of the current (after it, the last completed) response's body.
    excerpt: ExcerptBuf,
    /// The check the last completed response failed besides its status (`None`: passed).
    last_failed: Option<ContentCheck>,
    /// A script's `response()`, when it defines one: it sees every response whole.
    script: Option<ScriptJudge>,
    /// The current response's status (for its stream's verdict).
    status: u16,
    /// Responses read as streams of events (`--stream`, `--llm`); `None` otherwise.
    tap: Option<Box<StreamTap>>,
}

impl Default for ResponseObserver {
    fn default() -> Self {
        ResponseObserver {
            checks: None,
            accept: None,
            request: 0,
            headers_ok: true,
            body: BodyMatch::default(),
            capturing: false,
            excerpt: ExcerptBuf::default(),
            last_failed: None,
            script: None,
            status: 0,
            tap: None,
        }
    }
}

impl ResponseObserver {
    /// Checks responses against `table` (one entry per request; see [`Self::begin`]).
    pub fn set_checks(&mut self, table: Arc<[ResponseChecks]>) {
        self.checks = Some(table);
    }

    /// Keeps the first bytes of the body of every response whose status request `i` does not
    /// accept (`accept[i]`), or that has checks to pass. Bodies of responses that pass by their
    /// status and have no checks are never copied.
    pub fn keep_excerpts(&mut self, accept: Arc<[StatusSet]>) {
        self.accept = Some(accept);
    }

    /// Hands every response, whole, to a script's `response()` (headers and body are then
    /// gathered; without a script they never are).
    pub fn set_script(&mut self, judge: ScriptJudge) {
        self.script = Some(judge);
    }

    /// Whether a script wants the current response's headers, each fed to
    /// [`Self::script_header`] after [`Self::head`].
    #[inline]
    pub fn wants_script_headers(&self) -> bool {
        self.script.is_some()
    }

    /// The current response's headers start: what was gathered for the script is dropped (an
    /// interim response's, or the previous response's on this connection or stream).
    #[inline]
    pub fn script_head_start(&mut self) {
        if let Some(j) = &mut self.script {
            j.clear_head();
        }
    }

    /// One header of the current response, for the script (after [`Self::script_head_start`]).
    #[inline]
    pub fn script_header(&mut self, name: &[u8], value: &[u8]) {
        if let Some(j) = &mut self.script {
            j.header(name, value);
        }
    }

    /// Reads responses as streams of events as `settings` say (nothing when they ask nothing).
    pub fn set_stream(&mut self, settings: StreamSettings) {
        if settings.kind.is_some() || settings.llm {
            self.tap = Some(Box::new(StreamTap::new(settings)));
        }
    }

    /// [`Self::set_stream`] for responses whose body comes in frames of at most `frame` bytes,
    /// each handed over whole (HTTP/2's DATA frames).
    pub fn set_stream_frames(&mut self, settings: StreamSettings, frame: usize) {
        if settings.kind.is_some() || settings.llm {
            self.tap = Some(Box::new(StreamTap::for_frames(settings, frame)));
        }
    }

    /// Whether responses may be read as streams (their `Content-Type` is then wanted).
    #[inline]
    pub fn streams(&self) -> bool {
        self.tap.is_some()
    }

    /// The bytes fed next arrived at `now` (the instant of the read that brought them).
    #[inline]
    pub fn at(&mut self, now: u64) {
        if let Some(t) = &mut self.tap {
            t.at(now);
        }
    }

    /// The current response's `Content-Type` (when [`Self::streams`]), after [`Self::head`].
    pub fn content_type(&mut self, value: Option<&[u8]>) {
        if let Some(t) = &mut self.tap {
            t.head(value);
        }
    }

    /// [`Self::content_type`] given the kind the `Content-Type` said (HTTP/2).
    pub fn content_kind(&mut self, said: Option<candor_stream::StreamKind>) {
        if let Some(t) = &mut self.tap {
            t.head_said(said);
        }
    }

    /// The end of one chunk of the current body (HTTP/1.1 chunk, HTTP/2 DATA frame).
    #[inline]
    pub fn chunk_end(&mut self) {
        if let Some(t) = &mut self.tap {
            t.chunk_end();
        }
    }

    /// The stream reader, for the engine to take gaps and outcomes from.
    #[inline]
    pub fn tap(&mut self) -> Option<&mut StreamTap> {
        self.tap.as_deref_mut()
    }

    /// The connection is gone in the middle of the current response: what its stream came to
    /// (a stream that had delivered events fails as cut), if it was read as one.
    pub fn cut(&mut self) -> Option<StreamOutcome> {
        let t = self.tap.as_deref_mut()?;
        if !t.active() {
            return None;
        }
        t.end(StreamEnd::Cut, self.status);
        t.take_outcome()
    }

    /// The current response's stream waited past `--event-timeout` for its next event: what it
    /// came to (failed as `event_timeout`, its events counted), if it was read as a stream.
    pub fn stalled(&mut self) -> Option<StreamOutcome> {
        let t = self.tap.as_deref_mut()?;
        if !t.active() {
            return None;
        }
        t.end(StreamEnd::EventTimeout, self.status);
        t.take_outcome()
    }

    /// The current response's request is failing for `--timeout`: what its stream came to
    /// (failed as `timeout`, its first token, first event and events counted), if it was read
    /// as a stream.
    pub fn timed_out(&mut self) -> Option<StreamOutcome> {
        let t = self.tap.as_deref_mut()?;
        if !t.active() {
            return None;
        }
        t.end(StreamEnd::Timeout, self.status);
        t.take_outcome()
    }

    /// The run is ending with the current response under way: what its stream delivered (its
    /// first token, first event and events; no failure, no output tokens), if it was read as a
    /// stream. Its request stays unfinished.
    pub fn unfinished(&mut self) -> Option<StreamOutcome> {
        let t = self.tap.as_deref_mut()?;
        if !t.active() {
            return None;
        }
        t.end(StreamEnd::Unfinished, self.status);
        t.take_outcome()
    }

    /// The next response answers request `request`: its checks apply, and nothing of the
    /// previous response's verdict on headers or body is carried over.
    #[inline]
    pub fn begin(&mut self, request: usize) {
        self.request = request;
        self.forget();
    }

    /// Forgets the partial response (its verdict so far), keeping the last completed one's.
    #[inline]
    pub fn forget(&mut self) {
        self.body.reset();
        self.headers_ok = true;
        self.capturing = false;
    }

    fn current_checks(&self) -> Option<&ResponseChecks> {
        self.checks.as_ref().and_then(|t| t.get(self.request))
    }

    /// Whether the current response's headers are wanted: its request has header checks.
    #[inline]
    pub fn wants_headers(&self) -> bool {
        self.current_checks().is_some_and(|c| !c.headers.is_empty())
    }

    /// For headers that arrive one at a time (HTTP/2's header block): which of the current
    /// request's header checks (the first 64) `name: value` satisfies, a bit each, to be
    /// gathered over the block and handed to [`Self::head`] by [`Self::header_bits_pass`].
    #[inline]
    pub fn header_bits(&self, name: &[u8], value: &[u8]) -> u64 {
        let mut hits = 0;
        if let Some(c) = self.current_checks() {
            for (k, check) in c.headers.iter().enumerate().take(HEADER_BITS) {
                if check.matches(name, value) {
                    hits |= 1 << k;
                }
            }
        }
        hits
    }

    /// Whether the bits gathered with [`Self::header_bits`] satisfy every header check.
    pub fn header_bits_pass(checks: &ResponseChecks, hits: u64) -> bool {
        let n = checks.headers.len().min(HEADER_BITS);
        let all = if n == HEADER_BITS {
            u64::MAX
        } else {
            (1u64 << n) - 1
        };
        hits & all == all
    }

    /// The final response's head arrived with `status`; `headers_pass` judges the current
    /// request's header checks (called only when it has checks).
    #[inline]
    pub fn head(&mut self, status: u16, headers_pass: impl FnOnce(&ResponseChecks) -> bool) {
        self.status = status;
        self.excerpt.clear();
        self.capturing = self.captures(status);
        if let Some(j) = &mut self.script {
            j.begin(status);
        }
        if let Some(c) = self.current_checks() {
            self.headers_ok = headers_pass(c);
        }
    }

    /// Whether the body of the response to the current request, with `status`, is kept.
    fn captures(&self, status: u16) -> bool {
        let Some(accept) = &self.accept else {
            return false;
        };
        let accepted = accept
            .get(self.request)
            .or(accept.first())
            .is_none_or(|a| a.accepts(status));
        !accepted || self.current_checks().is_some_and(|c| !c.is_empty())
    }

    /// The next bytes of the current response's body.
    #[inline]
    pub fn body(&mut self, bytes: &[u8]) {
        if self.capturing {
            self.excerpt.push(bytes);
        }
        if let Some(j) = &mut self.script {
            j.body(bytes);
        }
        let ResponseObserver {
            checks,
            request,
            body,
            ..
        } = self;
        let needle = checks
            .as_ref()
            .and_then(|t| t.get(*request))
            .and_then(|c| c.body.as_ref());
        if let Some(needle) = needle {
            body.feed(needle, bytes);
        }
        if let Some(t) = &mut self.tap {
            t.body(bytes);
        }
    }

    /// The current response is complete: its verdict is kept (see [`Self::failed_check`]) and
    /// returned.
    #[inline]
    pub fn end(&mut self) -> Option<ContentCheck> {
        self.last_failed = self.verdict();
        if let Some(t) = &mut self.tap {
            t.end(StreamEnd::Complete, self.status);
            if self.last_failed.is_none() && t.failure().is_some() {
                self.last_failed = Some(ContentCheck::Stream);
            }
        }
        if let Some(j) = &mut self.script {
            // The script sees every response (as in wrk), even one a check already failed.
            if let Some(reason) = j.end() {
                if self.last_failed.is_none() {
                    self.last_failed = Some(ContentCheck::Script);
                    self.excerpt.clear();
                    self.excerpt.push(reason.as_bytes());
                }
            }
        }
        // Only a response that succeeded outputs tokens: one a check failed adds none.
        if let (Some(t), Some(_)) = (&mut self.tap, self.last_failed) {
            t.forfeit_tokens();
        }
        self.last_failed
    }

    fn verdict(&self) -> Option<ContentCheck> {
        let c = self.current_checks()?;
        if !self.headers_ok {
            Some(ContentCheck::Header)
        } else if c.body.is_some() && !self.body.found() {
            Some(ContentCheck::Body)
        } else {
            None
        }
    }

    /// The check the last completed response failed besides its status, if any.
    #[inline]
    pub fn failed_check(&self) -> Option<ContentCheck> {
        self.last_failed
    }

    /// The first bytes of the last completed response's body, when kept (see
    /// [`Self::keep_excerpts`]; empty unless that response failed its status or had checks).
    #[inline]
    pub fn excerpt(&self) -> Option<&[u8]> {
        self.accept.as_ref().map(|_| self.excerpt.as_slice())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candor_workload::check::{BodyNeedle, HeaderCheck};

    fn observer() -> ResponseObserver {
        let mut o = ResponseObserver::default();
        o.set_checks(
            vec![
                ResponseChecks {
                    body: Some(BodyNeedle::new(b"ok").unwrap()),
                    headers: vec![
                        HeaderCheck::parse("A: 1").unwrap(),
                        HeaderCheck::parse("B: 2").unwrap(),
                    ],
                },
                ResponseChecks::default(),
            ]
            .into(),
        );
        o.keep_excerpts(vec![StatusSet::default()].into());
        o
    }

    #[test]
    fn headers_one_at_a_time_and_all_at_once_are_judged_alike() {
        let o = observer();
        assert!(o.wants_headers());
        let hits = o.header_bits(b"a", b"1") | o.header_bits(b"b", b" 2 ");
        let checks = &o.checks.as_ref().unwrap()[0];
        assert!(ResponseObserver::header_bits_pass(checks, hits));
        assert!(!ResponseObserver::header_bits_pass(
            checks,
            o.header_bits(b"a", b"1")
        ));
        let all = [
            httparse::Header {
                name: "A",
                value: b"1",
            },
            httparse::Header {
                name: "b",
                value: b"2",
            },
        ];
        assert!(checks.headers.iter().all(|h| h.passes(&all)));
    }

    #[test]
    fn a_verdict_is_per_response_and_applies_the_requests_own_checks() {
        let mut o = observer();
        o.begin(0);
        o.head(200, |_| true);
        o.body(b"o");
        o.body(b"k");
        assert_eq!(o.end(), None);
        o.begin(0);
        o.head(200, |_| false);
        o.body(b"ok");
        assert_eq!(o.end(), Some(ContentCheck::Header));
        // The failing response's body was kept (it had checks); request 1 has none and passes
        // by its status: nothing is judged, nothing copied.
        assert_eq!(o.excerpt(), Some(&b"ok"[..]));
        o.begin(1);
        assert!(!o.wants_headers());
        // No header check fails when there are none.
        o.head(200, |c| c.headers.iter().all(|_| false));
        o.body(b"anything");
        assert_eq!(o.end(), None);
        assert_eq!(o.excerpt(), Some(&b""[..]));
    }
}
