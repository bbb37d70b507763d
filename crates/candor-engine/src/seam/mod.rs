//! The seam a protocol plugs into: what the one driver (`driver.rs`) asks of a protocol, one value
//! per connection ([`Protocol`]). A protocol that answers each request with one response, in order,
//! is fed the bytes the driver reads ([`Carriage::InOrder`], with [`progress::Progress`]); one
//! that frames its own requests writes them into the connection's out buffer through a [`Link`]
//! and completes any of them from what it reads ([`Carriage::Framed`]). The responses' status,
//! headers and body are watched by one [`observe::ResponseObserver`] per protocol.

pub mod carrying;
pub mod link;
pub mod observe;
pub mod progress;
pub mod unit;

use crate::backoff::Fault;
use crate::config::LoadConfig;
use crate::shared::{FailureClass, Prepared, WorkerError};
use candor_workload::script_source::ScriptJudge;
pub use carrying::Transport;
pub use link::{Link, Outgoing};
use progress::{ParseError, Progress};
use std::sync::Arc;

/// How a protocol carries requests on a connection: this decides which of [`Protocol`]'s
/// methods the driver calls.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Carriage {
    /// One response per request, in order (HTTP/1.1, raw TCP): the driver writes each request's
    /// bytes as prepared and feeds what it reads to [`Protocol::feed`]; a response completes
    /// the oldest request, and losing the connection fails every request it carried.
    InOrder,
    /// The protocol frames requests itself into the connection's out buffer
    /// ([`Protocol::send`]), answers any of them from what it reads ([`Protocol::receive`]),
    /// may greet the server first and limit how many it carries (HTTP/2; WebSocket fits here
    /// too). Losing the connection fails the requests on the wire; those still waiting for a
    /// place connect again.
    Framed,
}

/// What a protocol does after TCP (and TLS) is up.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Greeting {
    /// Nothing to exchange: the connection is open at once.
    Open,
    /// The protocol wrote its greeting into the out buffer (HTTP/2's preface and SETTINGS, a
    /// WebSocket upgrade); the connection opens when [`Link::opened`] is called from
    /// [`Protocol::receive`] (the server's first word), and failures before that are failed
    /// connects.
    AwaitPeer,
}

/// What the server said by ALPN over TLS.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum AlpnAnswer<'a> {
    /// It refused what was offered (a `no_application_protocol` alert).
    Refused,
    /// The handshake ended with this protocol chosen, or none.
    Chose(Option<&'a [u8]>),
}

/// What a framed protocol made of the bytes it was handed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Received {
    /// Bytes at the front of the input that are done with.
    pub consumed: usize,
    /// Requests may be sent now that could not before (a stream closed, a limit rose, the
    /// connection opened): the driver calls [`Protocol::send`].
    pub freed: bool,
}

/// Why a framed protocol gives up on its connection.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Broken {
    /// The server broke the protocol: the protocol's goodbye (HTTP/2's GOAWAY with its code)
    /// is in the out buffer and is sent as far as the socket takes it at once; the connection
    /// closes, its requests on the wire fail as `parse`, and `fault` is booked.
    Protocol(Fault),
    /// The server refused the connection before answering anything (a GOAWAY right after the
    /// preface, a WebSocket upgrade without a valid 101): everything it carried fails in the
    /// class the protocol gives (`parse` for a refusal in the protocol's own words, `connect`
    /// for a connection that never opened), `fault` is booked, and it is connected again only
    /// after its back-off.
    Refused(Fault, FailureClass),
    /// The server ended the protocol in good form (a WebSocket close frame): the requests on
    /// the wire fail as `read`, as when a connection closes, `fault` is booked, and requests
    /// waiting connect again after its back-off.
    Closed(Fault),
    /// The server sent a reply that answers no request on the wire (a WebSocket message that
    /// `--ws-match` places on none): the protocol's goodbye is in the out buffer; the
    /// connection closes, its requests on the wire fail as `protocol` (which reply was whose
    /// can no longer be told), `fault` is booked, and requests waiting connect again after its
    /// back-off.
    Unmatched(Fault),
}

/// What every connection of a load thread is fitted with before its pool opens.
pub struct Fitting {
    /// Per prepared request, the statuses that count as success (bodies of the first failed
    /// responses are kept).
    pub accept: Arc<[candor_wire::status::StatusSet]>,
    /// Per prepared request, its `--check-*` checks, when there are any.
    pub checks: Option<Arc<[candor_workload::check::ResponseChecks]>>,
    /// The largest request the request source fills (templates, replay), when there is one.
    pub max_filled_bytes: Option<usize>,
    /// How responses are read as streams of events (`--stream`, `--llm`).
    pub stream: candor_stream::tap::StreamSettings,
}

/// One protocol, as the one driver (`engine/driver.rs`) runs it: one value per connection. The
/// [`Carriage`] says which methods matter; every one has a default but `reset`, so a
/// byte-stream protocol implements `start`, `feed` and `reset` and a framed one `send`,
/// `receive` and `reset`.
pub trait Protocol {
    /// How this protocol carries requests.
    const CARRIAGE: Carriage = Carriage::InOrder;

    /// What carries its bytes.
    const TRANSPORT: Transport = Transport::Stream;

    /// Framed: it keeps timers of its own (retransmissions, acks, an idle timeout): the driver
    /// asks each connection [`Protocol::wake_at`] and calls [`Protocol::woken`] when it is due.
    const WAKES: bool = false;

    /// Over TLS, before the greeting: whether the server's ALPN `answer` suits this protocol.
    /// An error ends the run (the server does not speak it); the connect fails either way when
    /// the answer is a refusal.
    fn alpn(&self, _answer: AlpnAnswer<'_>, _config: &LoadConfig) -> Result<(), WorkerError> {
        Ok(())
    }

    /// Fits the connection with the thread's checks and filled-request sizes.
    fn fit(&mut self, fitting: &Fitting) {
        if let Some(o) = self.observer() {
            o.keep_excerpts(fitting.accept.clone());
            o.set_stream(fitting.stream);
            if let Some(table) = &fitting.checks {
                o.set_checks(table.clone());
            }
        }
    }

    /// In-order: before the first byte of the response to `request` (prepared request `index`)
    /// is fed.
    fn start(&mut self, _request: &Prepared, _index: usize) {}

    /// In-order: consumes what it can of `input` (`full`: the read buffer is full, so a head
    /// that does not fit in it never will). A framed protocol is never fed in order: bytes
    /// arriving there are out of step.
    fn feed(&mut self, _input: &[u8], _full: bool) -> Result<Progress, ParseError> {
        Err(ParseError::Head("bytes fed in order to a framed protocol"))
    }

    /// In-order: the connection closed; the status of a response that the close completes.
    fn finish_at_eof(&mut self) -> Option<u16> {
        None
    }

    /// The connection is gone: forgets every partial response and per-connection state.
    fn reset(&mut self);

    /// The observer of this protocol's responses (status, headers, body), for protocols that
    /// have them (`observe.rs`); `None` for those that do not (raw TCP).
    fn observer(&mut self) -> Option<&mut observe::ResponseObserver> {
        None
    }

    /// Hands a script's `response()` every response of this connection: one judge from
    /// `judge` per observer (HTTP/2 has one per lane, as its streams' responses interleave).
    fn set_script(&mut self, judge: &mut dyn FnMut() -> Option<ScriptJudge>) {
        if let Some(observer) = self.observer() {
            if let Some(j) = judge() {
                observer.set_script(j);
            }
        }
    }

    /// Framed: TCP (and TLS) is up; what to say first (into `link.out`).
    fn greet(&mut self, _link: &mut Link<'_>) -> Greeting {
        Greeting::Open
    }

    /// Framed: puts every request the connection carries that is not on the wire yet into
    /// `link.out`, in order, as far as the server's limits allow.
    fn send(&mut self, _link: &mut Link<'_>) {}

    /// Framed: handles what was read (`input`, the whole buffer): completes or fails any of
    /// the requests carried, answers the server in `link.out` (acks, window updates).
    fn receive(&mut self, _link: &mut Link<'_>, _input: &[u8]) -> Result<Received, Broken> {
        Err(Broken::Protocol(Fault::Malformed))
    }

    /// Framed, with [`Protocol::WAKES`]: when this connection next needs [`Protocol::woken`]
    /// (`u64::MAX`: not until something else happens), on the driver's clock.
    fn wake_at(&self) -> u64 {
        u64::MAX
    }

    /// Framed, with [`Protocol::WAKES`]: its time came (`link.now` is at or past
    /// [`Protocol::wake_at`]): what it writes goes in `link.out`, what it completes or fails is
    /// booked through the link, and `Broken` gives up on the connection, as from
    /// [`Protocol::receive`] (nothing of the input is consumed).
    fn woken(&mut self, _link: &mut Link<'_>) -> Result<Received, Broken> {
        Ok(Received {
            consumed: 0,
            freed: false,
        })
    }

    /// Framed: slot `slot`'s request timed out (the core has failed it); what to tell the
    /// server (HTTP/2's RST_STREAM) goes in `link.out`.
    fn expired(&mut self, _link: &mut Link<'_>, _slot: usize) {}

    /// Framed: slot `slot`'s streamed response waited past `--event-timeout` for its next
    /// event: the protocol books what its stream came to, fails it in class `stream` and tells
    /// the server (HTTP/2's RST_STREAM) in `link.out`.
    fn stalled(&mut self, link: &mut Link<'_>, slot: usize) {
        link.fail(slot, crate::shared::FailureClass::Stream);
    }

    /// Framed: the connection broke with lane `lane`'s response under way: what its stream
    /// came to (a stream that had delivered events fails as cut), if it was read as one.
    fn cut_stream(&mut self, _lane: usize) -> Option<candor_stream::tap::StreamOutcome> {
        None
    }

    /// Framed: lane `lane`'s request is failing for `--timeout` with its response under way:
    /// what its stream came to (failed as `timeout`, its events counted), if it was read as one.
    fn timed_out_stream(&mut self, _lane: usize) -> Option<candor_stream::tap::StreamOutcome> {
        None
    }

    /// The run ends with lane `lane`'s response under way (an in-order protocol has one
    /// response under way, its observer's): what its stream delivered, if it was read as one.
    fn unfinished_stream(&mut self, _lane: usize) -> Option<candor_stream::tap::StreamOutcome> {
        self.observer()?.unfinished()
    }

    /// Framed: the connection takes no more requests and carries none: the driver closes it
    /// (no fault) and connects again for requests waiting on it (after HTTP/2's GOAWAY).
    fn spent(&self) -> bool {
        false
    }

    /// The run is over and the connection still up: what to tell the server (HTTP/2's GOAWAY).
    fn goodbye(&mut self, _out: &mut Vec<u8>) {}

    /// What this connection saw that the results must name (once per run, however many
    /// connections saw it).
    fn end_warning(&self) -> Option<&'static str> {
        None
    }
}
