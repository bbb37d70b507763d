//! What an HTTP/3 connection does with what QUIC delivered: the connection's events (the
//! handshake done, the connection lost, streams readable, opened or writable), each request
//! stream's frames made a response for the core's books, and the server's unidirectional
//! streams (its control stream's SETTINGS and GOAWAY; QPACK's streams dropped; push refused).

use super::faults::{self, *};
use super::frames::{self, FrameError, FrameReader, Piece};
use super::{qpack, H3Connection, PeerStream};
use candor_engine::seam::observe::ResponseObserver;
use candor_engine::seam::{Broken, Link};
use candor_engine::shared::FailureClass;
use quinn_proto::{Dir, Event, ReadError, StreamEvent, StreamId, VarInt};

/// A connection error this client raises: the HTTP/3 code it closes with.
struct H3Code(u64);

impl From<FrameError> for H3Code {
    fn from(e: FrameError) -> H3Code {
        H3Code(match e {
            FrameError::TooLarge => H3_EXCESSIVE_LOAD,
            FrameError::Malformed => H3_FRAME_ERROR,
        })
    }
}

/// How a request stream's read ended in this pass.
enum StreamEnd {
    More,
    Fin,
    Reset(u64),
}

impl H3Connection {
    /// Handles every event QUIC has; whether requests may now go (the connection opened, a
    /// stream closed, the server allowed more).
    pub(super) fn events(&mut self, link: &mut Link<'_>) -> Result<bool, Broken> {
        let mut freed = false;
        loop {
            let Some(q) = self.quic.as_mut() else {
                return Ok(freed);
            };
            let Some(event) = q.conn.poll() else {
                break;
            };
            match event {
                Event::Connected => {
                    self.handshaking = false;
                    let took = link.now.saturating_sub(link.connect_called);
                    link.core.tls_handshake(took, link.now);
                    link.opened();
                    freed = true;
                }
                Event::ConnectionLost { reason } => {
                    let carrying = link.carried_at(0).is_some();
                    if faults::quiet_close(&reason, self.handshaking, carrying) {
                        // No fault: the driver closes it as spent, and connects again when a
                        // request needs it.
                        self.quiet = true;
                        return Ok(true);
                    }
                    let fault = faults::of_loss(&reason, self.handshaking);
                    return Err(match self.handshaking {
                        true => Broken::Refused(fault, FailureClass::Connect),
                        false => Broken::Closed(fault),
                    });
                }
                Event::Stream(StreamEvent::Readable { id }) => {
                    freed |= self.readable(link, id)?;
                }
                Event::Stream(StreamEvent::Opened { dir: Dir::Uni }) => self.accept_peers(),
                Event::Stream(StreamEvent::Writable { id }) => {
                    if let Some(lane) = self.lanes.iter().position(|l| l.id == Some(id)) {
                        self.write_lane(link, lane);
                    }
                }
                Event::Stream(StreamEvent::Available { dir: Dir::Bi }) => freed = true,
                _ => {}
            }
        }
        Ok(freed)
    }

    /// Takes the server's new unidirectional streams (at most the transport's limit are open).
    fn accept_peers(&mut self) {
        let Some(q) = self.quic.as_mut() else {
            return;
        };
        while let Some(id) = q.conn.streams().accept(Dir::Uni) {
            self.peers.push(PeerStream {
                id,
                kind: None,
                type_bytes: [0; 8],
                type_len: 0,
                reader: FrameReader::new(frames::MAX_CONTROL_FRAME),
                settled: false,
            });
        }
    }

    /// Stream `id` has bytes (or its end, or a reset): a request's, or one of the server's own.
    fn readable(&mut self, link: &mut Link<'_>, id: StreamId) -> Result<bool, Broken> {
        if let Some(lane) = self.lanes.iter().position(|l| l.id == Some(id)) {
            return match self.read_request(link, lane) {
                Ok(done) => Ok(done),
                Err(H3Code(code)) => Err(self.broke(link, code)),
            };
        }
        if let Some(k) = self.peers.iter().position(|p| p.id == id) {
            if let Err(H3Code(code)) = self.read_peer(k) {
                return Err(self.broke(link, code));
            }
            if let Some(last) = self.goaway {
                return Ok(self.refused_by_goaway(link, last));
            }
        }
        Ok(false)
    }

    /// The server said GOAWAY with `last`, the first request stream id it will not process:
    /// requests on streams from there were sent and never processed; they fail as `read`
    /// (candor never retries behind the user's back). Whether any did.
    fn refused_by_goaway(&mut self, link: &mut Link<'_>, last: u64) -> bool {
        let mut any = false;
        for lane in 0..self.lanes.len() {
            let Some(id) = self.lanes[lane].id else {
                continue;
            };
            if VarInt::from(id).into_inner() >= last {
                link.fail(self.lanes[lane].slot, FailureClass::Read);
                self.forget(lane);
                self.observers[lane].forget();
                any = true;
            }
        }
        any
    }

    /// Reads lane `lane`'s response as far as it has come; whether it ended.
    fn read_request(&mut self, link: &mut Link<'_>, lane: usize) -> Result<bool, H3Code> {
        let H3Connection {
            quic,
            lanes,
            observers,
            names,
            values,
            ..
        } = self;
        let (Some(q), Some(id)) = (quic.as_mut(), lanes[lane].id) else {
            return Ok(false);
        };
        let slot = lanes[lane].slot;
        let mut recv = q.conn.recv_stream(id);
        let Ok(mut chunks) = recv.read(true) else {
            return Ok(false);
        };
        let mut end = StreamEnd::More;
        let mut failed = Ok(());
        loop {
            match chunks.next(usize::MAX) {
                Ok(Some(chunk)) => {
                    let l = &mut lanes[lane];
                    let o = &mut observers[lane];
                    let status = &mut l.status;
                    failed = l.reader.feed(&chunk.bytes, keep_on_request, |piece| {
                        response_piece(link, slot, o, status, piece, names, values)
                    });
                    if failed.is_err() {
                        break;
                    }
                }
                Ok(None) => {
                    end = StreamEnd::Fin;
                    break;
                }
                Err(ReadError::Reset(code)) => {
                    end = StreamEnd::Reset(code.into_inner());
                    break;
                }
                Err(ReadError::Blocked) => break,
            }
        }
        let _ = chunks.finalize();
        failed?;
        match end {
            StreamEnd::More => Ok(false),
            StreamEnd::Reset(code) => {
                // The server cut the request off (it never answered, or not all of it): the
                // request fails as `read`, and the code is counted.
                let now = link.now;
                link.core
                    .ledger_mut()
                    .connection_fault(faults::stream_reset(code), now);
                // A streamed response reset after events had come fails as a stream cut off.
                let cut = self.observers[lane].cut();
                if let Some(o) = &cut {
                    link.stream_outcome(slot, o);
                }
                let class = match cut {
                    Some(o) if o.failure.is_some() => FailureClass::Stream,
                    _ => FailureClass::Read,
                };
                link.fail(slot, class);
                self.forget(lane);
                self.observers[lane].forget();
                Ok(true)
            }
            StreamEnd::Fin => {
                self.complete(link, lane);
                Ok(true)
            }
        }
    }

    /// Lane `lane`'s stream ended: the core books its response.
    fn complete(&mut self, link: &mut Link<'_>, lane: usize) {
        let l = &self.lanes[lane];
        let (slot, status, whole) = (l.slot, l.status, l.reader.between_frames());
        if !l.finished {
            // The server answered before the whole request was sent: this side stops too.
            if let (Some(q), Some(id)) = (self.quic.as_mut(), l.id) {
                let _ = q.conn.send_stream(id).reset(VarInt::from_u32(0x100));
            }
        }
        self.forget(lane);
        // Headers are judged before the body, as over HTTP/1.1 and HTTP/2.
        let failed = self.observers[lane].end();
        if let Some(tap) = self.observers[lane].tap() {
            link.stream_progress(slot, tap);
            if let Some(outcome) = tap.take_outcome() {
                link.stream_outcome(slot, &outcome);
            }
        }
        if status == 0 || !whole {
            // No final head, or a frame cut by the stream's end: malformed.
            link.fail(slot, FailureClass::Parse);
        } else {
            let body = self.observers[lane].excerpt();
            link.complete(slot, status, failed, body);
        }
    }

    /// Reads the server's unidirectional stream `k`: its type, then what that type carries.
    fn read_peer(&mut self, k: usize) -> Result<(), H3Code> {
        let Some(q) = self.quic.as_mut() else {
            return Ok(());
        };
        let p = &mut self.peers[k];
        let mut recv = q.conn.recv_stream(p.id);
        let Ok(mut chunks) = recv.read(true) else {
            return Ok(());
        };
        let mut result = Ok(());
        let mut ended = false;
        let mut goaway = None;
        loop {
            match chunks.next(usize::MAX) {
                Ok(Some(chunk)) => {
                    let mut bytes = &chunk.bytes[..];
                    if p.kind.is_none() {
                        let take = (8 - p.type_len).min(bytes.len());
                        p.type_bytes[p.type_len..p.type_len + take].copy_from_slice(&bytes[..take]);
                        let have = p.type_len + take;
                        match frames::get_varint(&p.type_bytes[..have]) {
                            Some((kind, n)) => {
                                p.kind = Some(kind);
                                bytes = &bytes[n - p.type_len..];
                            }
                            None => {
                                p.type_len = have;
                                continue;
                            }
                        }
                    }
                    result = match p.kind {
                        Some(frames::CONTROL_STREAM) => control(p, bytes, &mut goaway),
                        // Nothing can be inserted in a table of capacity 0: dropped.
                        Some(frames::QPACK_ENCODER_STREAM | frames::QPACK_DECODER_STREAM) => Ok(()),
                        // This client never sent MAX_PUSH_ID: a push stream breaks that.
                        Some(frames::PUSH_STREAM) => Err(H3Code(H3_ID_ERROR)),
                        // A stream type it does not know: read and dropped (RFC 9114 §6.2).
                        _ => Ok(()),
                    };
                    if result.is_err() {
                        break;
                    }
                }
                Ok(None) | Err(ReadError::Reset(_)) => {
                    ended = true;
                    break;
                }
                Err(ReadError::Blocked) => break,
            }
        }
        let _ = chunks.finalize();
        result?;
        if let Some(id) = goaway {
            self.goaway = Some(self.goaway.map_or(id, |g: u64| g.min(id)));
        }
        if ended {
            if self.peers[k].kind == Some(frames::CONTROL_STREAM) {
                return Err(H3Code(H3_CLOSED_CRITICAL_STREAM));
            }
            self.peers.swap_remove(k);
        }
        Ok(())
    }
}

/// Frames a request stream keeps whole (HEADERS, and those that have no place on it, to refuse
/// them); DATA is streamed, unknown kinds skipped.
fn keep_on_request(kind: u64) -> bool {
    matches!(
        kind,
        frames::HEADERS
            | frames::CANCEL_PUSH
            | frames::SETTINGS
            | frames::PUSH_PROMISE
            | frames::GOAWAY
            | frames::MAX_PUSH_ID
    )
}

/// One piece of a response: a head (interim, final or trailers) or body bytes.
fn response_piece(
    link: &mut Link<'_>,
    slot: usize,
    o: &mut ResponseObserver,
    status: &mut u16,
    piece: Piece<'_>,
    names: &mut Vec<u8>,
    values: &mut Vec<u8>,
) -> Result<(), H3Code> {
    match piece {
        Piece::Data(bytes, ends) => {
            if *status == 0 {
                // DATA before the final head.
                return Err(H3Code(H3_FRAME_UNEXPECTED));
            }
            o.at(link.now);
            o.body(bytes);
            if ends {
                // With `--stream chunks` each DATA frame is one event, as over HTTP/2.
                o.chunk_end();
            }
            if let Some(tap) = o.tap() {
                link.stream_progress(slot, tap);
            }
            Ok(())
        }
        Piece::Whole {
            kind: frames::HEADERS,
            payload,
        } => {
            if *status != 0 {
                // Trailers: nothing in them is judged.
                return qpack::decode(payload, names, values, |_, _| {})
                    .map_err(|_| H3Code(QPACK_DECOMPRESSION_FAILED));
            }
            link.first_byte(slot);
            // Headers are looked at only for an observer that wants them (header checks, a
            // script's response(), a stream's Content-Type).
            let (wants, script, streams) =
                (o.wants_headers(), o.wants_script_headers(), o.streams());
            let mut got = 0u16;
            let mut hits = 0u64;
            let mut kind = None;
            qpack::decode(payload, names, values, |name, value| {
                if name == b":status" {
                    got = std::str::from_utf8(value)
                        .ok()
                        .and_then(|s| s.parse().ok())
                        .unwrap_or(0);
                    // A response's head (an interim one's too): the script's headers start afresh.
                    o.script_head_start();
                    return;
                }
                if streams && name == b"content-type" {
                    kind = candor_stream::StreamKind::from_content_type(value);
                }
                if wants {
                    hits |= o.header_bits(name, value);
                }
                if script && !name.starts_with(b":") {
                    o.script_header(name, value);
                }
            })
            .map_err(|_| H3Code(QPACK_DECOMPRESSION_FAILED))?;
            if (100..200).contains(&got) {
                // Interim response: the final one follows.
                return Ok(());
            }
            if got == 0 {
                return Err(H3Code(faults::H3_GENERAL_PROTOCOL_ERROR));
            }
            *status = got;
            o.head(got, |c| ResponseObserver::header_bits_pass(c, hits));
            o.content_kind(kind);
            Ok(())
        }
        Piece::Whole {
            kind: frames::PUSH_PROMISE,
            ..
        } => Err(H3Code(H3_ID_ERROR)),
        Piece::Whole { .. } => Err(H3Code(H3_FRAME_UNEXPECTED)),
    }
}

/// The server's control stream: SETTINGS first and once (its values need nothing of this
/// client: it never uses a dynamic table), then GOAWAY (the first stream id not processed).
fn control(p: &mut PeerStream, bytes: &[u8], goaway: &mut Option<u64>) -> Result<(), H3Code> {
    let settled = &mut p.settled;
    p.reader.feed(bytes, keep_on_request, |piece| match piece {
        Piece::Whole {
            kind: frames::SETTINGS,
            ..
        } if !*settled => {
            *settled = true;
            Ok(())
        }
        _ if !*settled => Err(H3Code(H3_MISSING_SETTINGS)),
        Piece::Whole {
            kind: frames::GOAWAY,
            payload,
        } => match frames::get_varint(payload) {
            Some((id, n)) if n == payload.len() => {
                *goaway = Some(id);
                Ok(())
            }
            _ => Err(H3Code(H3_FRAME_ERROR)),
        },
        Piece::Whole {
            kind: frames::CANCEL_PUSH | frames::MAX_PUSH_ID,
            ..
        } => Ok(()),
        _ => Err(H3Code(H3_FRAME_UNEXPECTED)),
    })
}
