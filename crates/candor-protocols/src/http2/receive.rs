//! What the HTTP/2 client does with each frame the server sends (RFC 9113 §6): DATA fed to the
//! body check with its window given back, header blocks from HEADERS and CONTINUATION decoded,
//! RST_STREAM, SETTINGS and their ack, PING, GOAWAY, WINDOW_UPDATE; and the end of a response,
//! booked by the core. Every frame that moves no response is counted against the flood bounds
//! (`flood.rs`).

use super::flood::H2Flood;
use super::{
    frame, FrameHeader, GrpcLie, H2Connection, ProtocolError, CONNECTION_WINDOW, GRPC_MESSAGE_KEPT,
    STREAM_WINDOW,
};
use candor_engine::seam::observe::ResponseObserver;
use candor_engine::seam::Link;
use candor_engine::shared::FailureClass;

/// The largest response header block accepted (over all its CONTINUATION frames); a load
/// generator's responses need a few hundred bytes.
const MAX_HEADER_BLOCK: usize = 256 * 1024;

/// The largest a flow-control window may be (RFC 9113 §6.9.1).
const MAX_WINDOW: i64 = 0x7fff_ffff;

impl H2Connection {
    /// One frame; whether it closed a stream (or opened the connection, or raised a limit).
    pub(super) fn frame(
        &mut self,
        link: &mut Link<'_>,
        h: FrameHeader,
        payload: &[u8],
    ) -> Result<bool, ProtocolError> {
        let c = self;
        if c.block_stream != 0 && h.kind != frame::CONTINUATION {
            return Err(ProtocolError::PROTOCOL);
        }
        // These frames belong to a stream; on stream 0 they are a connection error (§6.1-6.4).
        if h.stream == 0
            && matches!(
                h.kind,
                frame::DATA | frame::HEADERS | frame::RST_STREAM | frame::CONTINUATION
            )
        {
            return Err(ProtocolError::PROTOCOL);
        }
        // The server's first frame must be SETTINGS (RFC 9113 §3.4); a GOAWAY instead is the
        // server refusing the connection, and is booked as that, with its code.
        if !c.settled && !matches!(h.kind, frame::SETTINGS | frame::GOAWAY) {
            return Err(ProtocolError::PROTOCOL);
        }
        match h.kind {
            frame::DATA => c.on_data(link, h, payload),
            frame::HEADERS => c.on_headers(link, h, payload),
            frame::CONTINUATION => c.on_continuation(link, h, payload),
            frame::RST_STREAM => c.on_rst_stream(link, h, payload),
            frame::SETTINGS => c.on_settings(link, h, payload),
            frame::PING => {
                if h.len != 8 {
                    return Err(ProtocolError::FRAME_SIZE);
                }
                if h.flags & frame::ACK == 0 {
                    c.floods.ack(H2Flood::Ping, link.out.is_empty())?;
                    frame::put_header(link.out, 8, frame::PING, frame::ACK, 0);
                    link.out.extend_from_slice(payload);
                } else {
                    // This client sends no PING: an ack is unasked for.
                    c.floods.idle(H2Flood::Ping)?;
                }
                Ok(false)
            }
            frame::GOAWAY => c.on_goaway(link, h, payload),
            frame::WINDOW_UPDATE => c.on_window_update(link, h, payload),
            // Push is disabled in this client's SETTINGS.
            frame::PUSH_PROMISE => Err(ProtocolError::PROTOCOL),
            // PRIORITY and unknown frame types are ignored (RFC 9113 §4.1), but counted.
            _ => {
                c.floods.idle(H2Flood::Other)?;
                Ok(false)
            }
        }
    }

    /// A DATA frame.
    fn on_data(
        &mut self,
        link: &mut Link<'_>,
        h: FrameHeader,
        payload: &[u8],
    ) -> Result<bool, ProtocolError> {
        let c = self;
        let data = strip_padding(h.flags, payload)?;
        c.unacked += h.len as u32;
        if c.unacked >= CONNECTION_WINDOW / 2 {
            frame::put_window_update(link.out, 0, c.unacked);
            c.unacked = 0;
        }
        let Some(slot) = c.slot_of(h.stream) else {
            // A stream this client reset or gave up on: what was in flight is a window
            // at most, an endless stream of it a flood.
            c.floods.idle(H2Flood::Data)?;
            return Ok(false);
        };
        if data.is_empty() && h.flags & frame::END_STREAM == 0 {
            c.floods.idle(H2Flood::Data)?;
        } else {
            c.floods.progress();
        }
        let lane = link.lane(slot);
        let o = &mut c.observers[lane];
        o.at(link.now());
        o.body(data);
        // With `--stream chunks` each DATA frame is one event.
        o.chunk_end();
        if let Some(tap) = o.tap() {
            link.stream_progress(slot, tap);
        }
        let s = &mut c.streams[lane];
        if let Some(messages) = c.grpc_messages.get_mut(lane) {
            // The first flaw of the messages' framing is kept (the call is INTERNAL
            // whatever its status says); a streaming call's first message is timed.
            if s.grpc_framing.is_none() {
                match messages.feed(data) {
                    Ok(fed) if fed.first_completed && s.grpc_streaming => link.first_message(slot),
                    Ok(_) => {}
                    Err(e) => s.grpc_framing = Some(e),
                }
            }
        }
        if h.flags & frame::END_STREAM != 0 {
            c.complete(link, slot);
            return Ok(true);
        }
        let s = &mut c.streams[lane];
        s.unacked += h.len as u32;
        if s.unacked >= STREAM_WINDOW / 2 {
            frame::put_window_update(link.out, h.stream, s.unacked);
            s.unacked = 0;
        }
        Ok(false)
    }

    /// A HEADERS frame.
    fn on_headers(
        &mut self,
        link: &mut Link<'_>,
        h: FrameHeader,
        payload: &[u8],
    ) -> Result<bool, ProtocolError> {
        let c = self;
        // A response's first HEADERS frame is its first byte (trailers come later and
        // keep the first instant).
        if let Some(slot) = c.slot_of(h.stream) {
            link.first_byte(slot);
        }
        let mut fragment = strip_padding(h.flags, payload)?;
        if h.flags & frame::PRIORITY_FLAG != 0 {
            fragment = fragment.get(5..).ok_or(ProtocolError::PROTOCOL)?;
        }
        c.block.clear();
        c.block.extend_from_slice(fragment);
        let ends = h.flags & frame::END_STREAM != 0;
        if h.flags & frame::END_HEADERS != 0 {
            c.header_block(link, h.stream, ends)
        } else {
            c.block_stream = h.stream;
            c.block_ends = ends;
            Ok(false)
        }
    }

    /// A CONTINUATION frame.
    fn on_continuation(
        &mut self,
        link: &mut Link<'_>,
        h: FrameHeader,
        payload: &[u8],
    ) -> Result<bool, ProtocolError> {
        let c = self;
        if c.block_stream == 0 || c.block_stream != h.stream {
            return Err(ProtocolError::PROTOCOL);
        }
        c.block.extend_from_slice(payload);
        // A header block without end (a CONTINUATION flood) must not grow without
        // bound, nor go on for ever in empty frames.
        if c.block.len() > MAX_HEADER_BLOCK {
            return Err(H2Flood::Continuation.into());
        }
        if h.flags & frame::END_HEADERS == 0 {
            c.floods.idle(H2Flood::Continuation)?;
        }
        if h.flags & frame::END_HEADERS != 0 {
            c.block_stream = 0;
            let ends = c.block_ends;
            c.header_block(link, h.stream, ends)
        } else {
            Ok(false)
        }
    }

    /// A RST_STREAM frame.
    fn on_rst_stream(
        &mut self,
        link: &mut Link<'_>,
        h: FrameHeader,
        _payload: &[u8],
    ) -> Result<bool, ProtocolError> {
        let c = self;
        let Some(slot) = c.slot_of(h.stream) else {
            c.floods.idle(H2Flood::RstStream)?;
            return Ok(false);
        };
        c.floods.progress();
        c.forget(h.stream);
        let lane = link.lane(slot);
        c.streams[lane].id = 0;
        // A streamed response reset after events had come fails as a stream cut off.
        let cut = c.observers[lane].cut();
        if let Some(o) = &cut {
            link.stream_outcome(slot, o);
        }
        let kind = match cut {
            Some(o) if o.failure.is_some() => FailureClass::Stream,
            _ => FailureClass::Read,
        };
        link.fail(slot, kind);
        Ok(true)
    }

    /// A SETTINGS frame.
    fn on_settings(
        &mut self,
        link: &mut Link<'_>,
        h: FrameHeader,
        payload: &[u8],
    ) -> Result<bool, ProtocolError> {
        let c = self;
        if h.flags & frame::ACK != 0 {
            // This client sends one SETTINGS: further acks are unasked for.
            c.floods.idle(H2Flood::Settings)?;
            return Ok(false);
        }
        if h.stream != 0 {
            return Err(ProtocolError::PROTOCOL);
        }
        if !h.len.is_multiple_of(6) {
            return Err(ProtocolError::FRAME_SIZE);
        }
        // The server's opening SETTINGS is not counted: the bounds are on those after.
        if c.settled {
            c.floods.ack(H2Flood::Settings, link.out.is_empty())?;
        }
        for s in payload.chunks_exact(6) {
            let id = u16::from_be_bytes([s[0], s[1]]);
            let value = u32::from_be_bytes([s[2], s[3], s[4], s[5]]);
            match id {
                frame::SETTINGS_MAX_CONCURRENT_STREAMS => c.max_streams = value as usize,
                frame::SETTINGS_INITIAL_WINDOW_SIZE => {
                    if value > 0x7fff_ffff {
                        return Err(ProtocolError::FLOW_CONTROL);
                    }
                    let delta = value as i64 - c.initial_window;
                    c.initial_window = value as i64;
                    for &(_, slot) in &c.active {
                        let s = &mut c.streams[link.lane(slot)];
                        s.send_window += delta;
                        // A stream window pushed past 2^31-1 by the new initial size
                        // is an error of the connection (RFC 9113 §6.9.2).
                        if s.send_window > MAX_WINDOW {
                            return Err(ProtocolError::FLOW_CONTROL);
                        }
                    }
                }
                frame::SETTINGS_MAX_FRAME_SIZE => {
                    if !(16_384..=16_777_215).contains(&value) {
                        return Err(ProtocolError::PROTOCOL);
                    }
                    c.max_frame = value as usize;
                }
                _ => {}
            }
        }
        frame::put_header(link.out, 0, frame::SETTINGS, frame::ACK, 0);
        if !c.settled {
            c.settled = true;
            link.opened();
            // Requests that waited for the connection.
            return Ok(true);
        }
        c.resume_bodies(link);
        // A raised limit lets waiting requests open streams.
        Ok(true)
    }

    /// A GOAWAY frame.
    fn on_goaway(
        &mut self,
        link: &mut Link<'_>,
        h: FrameHeader,
        payload: &[u8],
    ) -> Result<bool, ProtocolError> {
        let c = self;
        if h.len < 8 {
            return Err(ProtocolError::PROTOCOL);
        }
        let last =
            u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]]) & 0x7fff_ffff;
        let code = u32::from_be_bytes([payload[4], payload[5], payload[6], payload[7]]);
        if !link.has_answered() && c.active.iter().all(|&(id, _)| id > last) {
            // Refused before it answered or took anything (say right after the preface): what
            // the connection carried fails as a protocol error, booked with the
            // server's code, and it is connected again only after its back-off, so a
            // server that does this every time is counted and named, not a silent
            // reconnect storm.
            return Err(ProtocolError::Refused(code));
        }
        // A graceful shutdown sends two; more move nothing.
        c.floods.idle(H2Flood::Other)?;
        c.goaway = true;
        // Streams above the last one the server processed were sent and never
        // processed: they fail; candor does not retry behind the user's back.
        let mut k = 0;
        while k < c.active.len() {
            let (id, slot) = c.active[k];
            if id > last {
                c.active.swap_remove(k);
                c.streams[link.lane(slot)].id = 0;
                link.fail(slot, FailureClass::Read);
            } else {
                k += 1;
            }
        }
        Ok(true)
    }

    /// A WINDOW_UPDATE frame.
    fn on_window_update(
        &mut self,
        link: &mut Link<'_>,
        h: FrameHeader,
        payload: &[u8],
    ) -> Result<bool, ProtocolError> {
        let c = self;
        if h.len != 4 {
            return Err(ProtocolError::FRAME_SIZE);
        }
        let inc = (u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]])
            & 0x7fff_ffff) as i64;
        // An increment of 0, or one that takes a window past 2^31-1, is an error of
        // the connection when it is the connection's window, of the stream otherwise
        // (RFC 9113 §6.9, §6.9.1).
        if h.stream == 0 {
            if inc == 0 {
                return Err(ProtocolError::PROTOCOL);
            }
            if c.send_window + inc > MAX_WINDOW {
                return Err(ProtocolError::FLOW_CONTROL);
            }
            c.send_window += inc;
        } else if let Some(slot) = c.slot_of(h.stream) {
            let lane = link.lane(slot);
            if inc == 0 || c.streams[lane].send_window + inc > MAX_WINDOW {
                let code = if inc == 0 {
                    frame::PROTOCOL_ERROR
                } else {
                    frame::FLOW_CONTROL_ERROR
                };
                c.reset_stream_with(link, slot, code);
                link.fail(slot, FailureClass::Parse);
                return Ok(true);
            }
            c.streams[lane].send_window += inc;
        }
        // Counted before a waiting body it lets go on counts as progress.
        c.floods.idle(H2Flood::WindowUpdate)?;
        c.resume_bodies(link);
        Ok(false)
    }

    /// A whole header block for `stream` (in `block`): decoded whatever the stream (the
    /// decoder's table must follow the server's), looked at if the stream is ours.
    fn header_block(
        &mut self,
        link: &mut Link<'_>,
        stream: u32,
        ends: bool,
    ) -> Result<bool, ProtocolError> {
        let c = self;
        let slot = c.slot_of(stream);
        let streams = slot.is_some_and(|slot| c.observers[link.lane(slot)].streams());
        // Headers are looked at only for an observer that wants them (header checks, a
        // script's response()).
        let mut observer = slot
            .map(|slot| &mut c.observers[link.lane(slot)])
            .filter(|o| o.wants_headers() || o.wants_script_headers());
        let mut kind = None;
        let mut status = 0u16;
        let mut hits = 0u64;
        // gRPC: `grpc-status` ends the call, in its trailers or in a trailers-only response; a
        // value that is no code is kept as UNKNOWN (the gRPC spec's mapping of the unknown).
        let mut grpc_status = None;
        let (mut typed, mut encoded) = (false, false);
        let mut said = slot.and_then(|slot| c.grpc_messages_said.get_mut(link.lane(slot)));
        let grpc = c.grpc;
        let block = std::mem::take(&mut c.block);
        let decoded = c.decoder.decode(&block, |name, value| {
            if name == b":status" {
                status = std::str::from_utf8(value)
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(0);
                if let Some(o) = observer.as_deref_mut() {
                    // A response's head (not its trailers): the script's headers start afresh.
                    o.script_head_start();
                }
            } else if grpc && name == b"grpc-status" {
                grpc_status = Some(
                    candor_grpc::Code::from_header_value(value)
                        .unwrap_or(candor_grpc::Code::Unknown),
                );
            } else {
                if streams && name == b"content-type" {
                    kind = candor_stream::StreamKind::from_content_type(value);
                }
                if grpc {
                    match name {
                        b"content-type" => typed = value.starts_with(b"application/grpc"),
                        b"grpc-encoding" => encoded = value != b"identity",
                        b"grpc-message" => {
                            if let Some(said) = said.as_deref_mut() {
                                said.clear();
                                let kept = &value[..value.len().min(GRPC_MESSAGE_KEPT)];
                                candor_grpc::decode_grpc_message(kept, said);
                            }
                        }
                        _ => {}
                    }
                }
                if let Some(o) = observer.as_deref_mut() {
                    hits |= o.header_bits(name, value);
                    if o.wants_script_headers() && !name.starts_with(b":") {
                        o.script_header(name, value);
                    }
                }
            }
        });
        c.block = block;
        if decoded.is_err() {
            return Err(ProtocolError::COMPRESSION);
        }
        let Some(slot) = slot else {
            c.floods.idle(H2Flood::Other)?;
            return Ok(false);
        };
        c.floods.progress();
        let lane = link.lane(slot);
        if grpc_status.is_some() {
            c.streams[lane].grpc_status = grpc_status;
        }
        if status != 0 {
            if (100..200).contains(&status) {
                if ends {
                    // An interim response cannot end the stream (RFC 9113 §8.1).
                    c.reset_stream(link, slot);
                    link.fail(slot, FailureClass::Parse);
                    return Ok(true);
                }
                // Interim response: the final one follows.
                return Ok(false);
            }
            c.streams[lane].status = status;
            c.streams[lane].grpc_typed = typed;
            c.streams[lane].grpc_encoded = encoded;
            // Only a failing or checked body is copied (for the first failed responses).
            c.observers[lane].head(status, |c| ResponseObserver::header_bits_pass(c, hits));
            c.observers[lane].content_kind(kind);
        }
        if ends {
            c.complete(link, slot);
            return Ok(true);
        }
        Ok(false)
    }

    /// Slot `slot`'s response ended: the core books it.
    fn complete(&mut self, link: &mut Link<'_>, slot: usize) {
        let lane = link.lane(slot);
        let s = &self.streams[lane];
        if s.body_sent < s.body_len {
            // The server answered before the whole request body was sent: close this side
            // too (§8.1), or the server keeps counting the stream against its concurrency limit.
            self.reset_stream(link, slot);
        }
        let id = std::mem::take(&mut self.streams[lane].id);
        self.forget(id);
        // Headers are judged before the body, as over HTTP/1.1.
        let failed = self.observers[lane].end();
        if let Some(tap) = self.observers[lane].tap() {
            link.stream_progress(slot, tap);
            if let Some(outcome) = tap.take_outcome() {
                link.stream_outcome(slot, &outcome);
            }
        }
        let status = self.streams[lane].status;
        if status == 0 {
            // A response without :status is malformed.
            link.fail(slot, FailureClass::Parse);
        } else if self.grpc && status == 200 {
            match self.streams[lane].grpc_status.take() {
                Some(code) => {
                    let (code, said) = self.grpc_verdict(lane, code);
                    let body = self.observers[lane].excerpt();
                    let end = candor_engine::ledger::CodedEnd {
                        code: super::grpc_status::reply_code(code),
                        accepted: self.grpc_accept.contains(code),
                        said: said.then_some(&self.grpc_said[..]),
                    };
                    link.complete_coded(slot, status, end, failed, body);
                }
                // A gRPC response that ends without `grpc-status` breaks the protocol.
                None => link.fail(slot, FailureClass::Parse),
            }
        } else {
            let body = self.observers[lane].excerpt();
            link.complete(slot, status, failed, body);
        }
    }

    /// The code a gRPC call on lane `lane` that ended with `code` is booked with: INTERNAL for
    /// an OK the reply belies (as grpc-go's client judges it); and whether `grpc_said` holds what
    /// its failure example says (the code's name, then why, or the server's `grpc-message`).
    fn grpc_verdict(&mut self, lane: usize, code: candor_grpc::Code) -> (candor_grpc::Code, bool) {
        use candor_grpc::Code;
        use std::io::Write as _;
        let s = &self.streams[lane];
        let messages = &self.grpc_messages[lane];
        let lie = if code != Code::Ok {
            None
        } else if !s.grpc_typed {
            Some(GrpcLie::NotGrpc)
        } else if let Some(e) = s.grpc_framing.or(messages.finish().err()) {
            Some(GrpcLie::Framing(e))
        } else if messages.compressed() > 0 && !s.grpc_encoded {
            Some(GrpcLie::CompressedUnannounced)
        } else {
            None
        };
        let message = &self.grpc_messages_said[lane];
        let out = &mut self.grpc_said;
        out.clear();
        // Within the buffer's capacity: nothing is allocated.
        let _ = match lie {
            Some(lie) => write!(out, "{}: {lie}", Code::Internal.name()),
            None if code != Code::Ok && !message.is_empty() => {
                let _ = write!(out, "{}: ", code.name());
                out.write_all(message)
            }
            None => return (code, false),
        };
        (lie.map_or(code, |_| Code::Internal), true)
    }

    /// Sends RST_STREAM (CANCEL) for slot `slot`'s stream, which this client gives up on; the
    /// caller books the slot.
    fn reset_stream(&mut self, link: &mut Link<'_>, slot: usize) {
        self.reset_stream_with(link, slot, frame::CANCEL);
    }

    /// Sends RST_STREAM with error `code` for slot `slot`'s stream; the caller books the slot.
    fn reset_stream_with(&mut self, link: &mut Link<'_>, slot: usize, code: u32) {
        let lane = link.lane(slot);
        let id = self.streams[lane].id;
        if id != 0 {
            frame::put_rst_stream(link.out, id, code);
            self.forget(id);
            self.streams[lane].id = 0;
        }
    }
}

/// The payload of a DATA or HEADERS frame without its padding.
fn strip_padding(flags: u8, payload: &[u8]) -> Result<&[u8], ProtocolError> {
    if flags & frame::PADDED == 0 {
        return Ok(payload);
    }
    let (&pad, rest) = payload.split_first().ok_or(ProtocolError::PROTOCOL)?;
    rest.get(
        ..rest
            .len()
            .checked_sub(pad as usize)
            .ok_or(ProtocolError::PROTOCOL)?,
    )
    .ok_or(ProtocolError::PROTOCOL)
}
