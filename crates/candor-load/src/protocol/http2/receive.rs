//! What the HTTP/2 client does with each frame the server sends (RFC 9113 §6): DATA fed to the
//! body check with its window given back, header blocks from HEADERS and CONTINUATION decoded,
//! RST_STREAM, SETTINGS and their ack, PING, GOAWAY, WINDOW_UPDATE; and the end of a response,
//! booked by the core.

use super::{
    frame, ConnState, Driver, FrameHeader, ProtocolError, CONNECTION_WINDOW, STREAM_WINDOW,
};
use crate::engine::backoff::Fault;
use crate::protocol::observe::ResponseObserver;
use crate::shared::Failure;

/// The largest response header block accepted (over all its CONTINUATION frames); a load
/// generator's responses need a few hundred bytes.
const MAX_HEADER_BLOCK: usize = 256 * 1024;

/// The largest a flow-control window may be (RFC 9113 §6.9.1).
const MAX_WINDOW: i64 = 0x7fff_ffff;

impl Driver {
    /// One frame; whether it closed a stream.
    pub(super) fn frame(
        &mut self,
        i: usize,
        h: FrameHeader,
        payload: &[u8],
        now: u64,
    ) -> Result<bool, ProtocolError> {
        let c = &mut self.conns[i];
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
        if c.state == ConnState::Settings && !matches!(h.kind, frame::SETTINGS | frame::GOAWAY) {
            return Err(ProtocolError::PROTOCOL);
        }
        match h.kind {
            frame::DATA => {
                let data = strip_padding(h.flags, payload)?;
                c.unacked += h.len as u32;
                if c.unacked >= CONNECTION_WINDOW / 2 {
                    frame::put_window_update(&mut c.wbuf, 0, c.unacked);
                    c.unacked = 0;
                }
                let Some(slot) = c.slot_of(h.stream) else {
                    // A stream this client reset or gave up on.
                    return Ok(false);
                };
                self.observers[slot].body(data);
                if let Some(messages) = self.grpc_messages.get_mut(slot) {
                    // A malformed prefix is the server's to answer for in its status; only
                    // the first message's time is taken here.
                    if matches!(messages.feed(data), Ok(fed) if fed.first_completed) {
                        self.core.first_message(slot, now);
                    }
                }
                if h.flags & frame::END_STREAM != 0 {
                    self.complete(i, slot, now);
                    return Ok(true);
                }
                let s = &mut self.streams[slot];
                s.unacked += h.len as u32;
                if s.unacked >= STREAM_WINDOW / 2 {
                    frame::put_window_update(&mut c.wbuf, h.stream, s.unacked);
                    s.unacked = 0;
                }
                Ok(false)
            }
            frame::HEADERS => {
                let mut fragment = strip_padding(h.flags, payload)?;
                if h.flags & frame::PRIORITY_FLAG != 0 {
                    fragment = fragment.get(5..).ok_or(ProtocolError::PROTOCOL)?;
                }
                c.block.clear();
                c.block.extend_from_slice(fragment);
                let ends = h.flags & frame::END_STREAM != 0;
                if h.flags & frame::END_HEADERS != 0 {
                    self.header_block(i, h.stream, ends, now)
                } else {
                    c.block_stream = h.stream;
                    c.block_ends = ends;
                    Ok(false)
                }
            }
            frame::CONTINUATION => {
                if c.block_stream == 0 || c.block_stream != h.stream {
                    return Err(ProtocolError::PROTOCOL);
                }
                c.block.extend_from_slice(payload);
                // A header block without end (a CONTINUATION flood) must not grow without bound.
                if c.block.len() > MAX_HEADER_BLOCK {
                    return Err(ProtocolError::PROTOCOL);
                }
                if h.flags & frame::END_HEADERS != 0 {
                    c.block_stream = 0;
                    let ends = c.block_ends;
                    self.header_block(i, h.stream, ends, now)
                } else {
                    Ok(false)
                }
            }
            frame::RST_STREAM => {
                let Some(slot) = c.slot_of(h.stream) else {
                    return Ok(false);
                };
                c.forget(h.stream);
                self.streams[slot].id = 0;
                self.core.fail(slot, Failure::Read, now);
                Ok(true)
            }
            frame::SETTINGS => {
                if h.flags & frame::ACK != 0 {
                    return Ok(false);
                }
                if h.stream != 0 {
                    return Err(ProtocolError::PROTOCOL);
                }
                if !h.len.is_multiple_of(6) {
                    return Err(ProtocolError::FRAME_SIZE);
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
                                self.streams[slot].send_window += delta;
                                // A stream window pushed past 2^31-1 by the new initial size
                                // is an error of the connection (RFC 9113 §6.9.2).
                                if self.streams[slot].send_window > MAX_WINDOW {
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
                frame::put_header(&mut c.wbuf, 0, frame::SETTINGS, frame::ACK, 0);
                if c.state == ConnState::Settings {
                    c.state = ConnState::Open;
                    self.core.new_stream_connection(i);
                    if let Some(p) = &mut self.pool {
                        p.ready(now - c.connect_called);
                    }
                    // Requests that waited for the connection.
                    return Ok(true);
                }
                self.resume_bodies(i);
                // A raised limit lets waiting requests open streams.
                Ok(true)
            }
            frame::PING => {
                if h.len != 8 {
                    return Err(ProtocolError::FRAME_SIZE);
                }
                if h.flags & frame::ACK == 0 {
                    frame::put_header(&mut c.wbuf, 8, frame::PING, frame::ACK, 0);
                    c.wbuf.extend_from_slice(payload);
                }
                Ok(false)
            }
            frame::GOAWAY => {
                if h.len < 8 {
                    return Err(ProtocolError::PROTOCOL);
                }
                let last = u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]])
                    & 0x7fff_ffff;
                let code = u32::from_be_bytes([payload[4], payload[5], payload[6], payload[7]]);
                if !self.core.has_answered(i) && c.active.iter().all(|&(id, _)| id > last) {
                    // Refused before it answered or took anything (say right after the preface): what
                    // the connection carried fails as a protocol error, booked with the
                    // server's code, and it is connected again only after its back-off, so a
                    // server that does this every time is counted and named, not a silent
                    // reconnect storm.
                    self.connect_failed_for(i, Failure::Parse, Fault::GoAway(code), now);
                    return Ok(true);
                }
                c.goaway = true;
                // Streams above the last one the server processed were sent and never
                // processed: they fail; candor does not retry behind the user's back.
                let mut k = 0;
                while k < c.active.len() {
                    let (id, slot) = c.active[k];
                    if id > last {
                        c.active.swap_remove(k);
                        self.streams[slot].id = 0;
                        self.core.fail(slot, Failure::Read, now);
                    } else {
                        k += 1;
                    }
                }
                Ok(true)
            }
            frame::WINDOW_UPDATE => {
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
                    if inc == 0 || self.streams[slot].send_window + inc > MAX_WINDOW {
                        let code = if inc == 0 {
                            frame::PROTOCOL_ERROR
                        } else {
                            frame::FLOW_CONTROL_ERROR
                        };
                        self.reset_stream_with(i, slot, code);
                        self.core.fail(slot, Failure::Parse, now);
                        return Ok(true);
                    }
                    self.streams[slot].send_window += inc;
                }
                self.resume_bodies(i);
                Ok(false)
            }
            // Push is disabled in this client's SETTINGS.
            frame::PUSH_PROMISE => Err(ProtocolError::PROTOCOL),
            // PRIORITY and unknown frame types are ignored (RFC 9113 §4.1).
            _ => Ok(false),
        }
    }

    /// A whole header block for `stream` (in `conns[i].block`): decoded whatever the stream
    /// (the decoder's table must follow the server's), looked at if the stream is ours.
    fn header_block(
        &mut self,
        i: usize,
        stream: u32,
        ends: bool,
        now: u64,
    ) -> Result<bool, ProtocolError> {
        let c = &mut self.conns[i];
        let slot = c.slot_of(stream);
        // Headers are looked at only for an observer that wants them (header checks).
        let observer = slot
            .map(|slot| &self.observers[slot])
            .filter(|o| o.wants_headers());
        let mut status = 0u16;
        let mut hits = 0u64;
        // gRPC: `grpc-status` ends the call, in its trailers or in a trailers-only response; a
        // value that is no code is kept as UNKNOWN (the gRPC spec's mapping of the unknown).
        let mut grpc_status = None;
        let grpc = self.grpc;
        let block = std::mem::take(&mut c.block);
        let decoded = c.decoder.decode(&block, |name, value| {
            if name == b":status" {
                status = std::str::from_utf8(value)
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(0);
            } else if grpc && name == b"grpc-status" {
                grpc_status = Some(
                    candor_grpc::Code::from_header_value(value)
                        .unwrap_or(candor_grpc::Code::Unknown),
                );
            } else if let Some(o) = observer {
                hits |= o.header_bits(name, value);
            }
        });
        c.block = block;
        if decoded.is_err() {
            return Err(ProtocolError::COMPRESSION);
        }
        let Some(slot) = slot else {
            return Ok(false);
        };
        if grpc_status.is_some() {
            self.streams[slot].grpc_status = grpc_status;
        }
        if status != 0 {
            if (100..200).contains(&status) {
                if ends {
                    // An interim response cannot end the stream (RFC 9113 §8.1).
                    self.reset_stream(i, slot);
                    self.core.fail(slot, Failure::Parse, now);
                    return Ok(true);
                }
                // Interim response: the final one follows.
                return Ok(false);
            }
            self.streams[slot].status = status;
            // Only a failing or checked body is copied (for the first failed responses).
            self.observers[slot].head(status, |c| ResponseObserver::header_bits_pass(c, hits));
        }
        if ends {
            self.complete(i, slot, now);
            return Ok(true);
        }
        Ok(false)
    }

    /// Slot `slot`'s response ended: the core books it.
    fn complete(&mut self, i: usize, slot: usize, now: u64) {
        let s = &self.streams[slot];
        if s.body_sent < s.body_len {
            // The server answered before the whole request body was sent: close this side
            // too (§8.1), or the server keeps counting the stream against its concurrency limit.
            self.reset_stream(i, slot);
        }
        let s = &mut self.streams[slot];
        self.conns[i].forget(s.id);
        s.id = 0;
        // Headers are judged before the body, as over HTTP/1.1.
        let failed = self.observers[slot].end();
        if s.status == 0 {
            // A response without :status is malformed.
            self.core.fail(slot, Failure::Parse, now);
        } else if self.grpc && s.status == 200 {
            match s.grpc_status.take() {
                Some(code) => {
                    let body = self.observers[slot].excerpt();
                    self.core
                        .complete_grpc(slot, s.status, code, failed, body, now);
                }
                // A gRPC response that ends without `grpc-status` breaks the protocol.
                None => self.core.fail(slot, Failure::Parse, now),
            }
        } else {
            let body = self.observers[slot].excerpt();
            self.core
                .complete_response(slot, s.status, failed, body, now);
        }
    }
}

impl Driver {
    /// Sends RST_STREAM (CANCEL) for slot `slot`'s stream on connection `i`, which this client
    /// gives up on; the caller books the slot.
    fn reset_stream(&mut self, i: usize, slot: usize) {
        self.reset_stream_with(i, slot, frame::CANCEL);
    }

    /// Sends RST_STREAM with error `code` for slot `slot`'s stream on connection `i`; the caller
    /// books the slot.
    fn reset_stream_with(&mut self, i: usize, slot: usize, code: u32) {
        let id = self.streams[slot].id;
        if id != 0 {
            frame::put_rst_stream(&mut self.conns[i].wbuf, id, code);
            self.conns[i].forget(id);
            self.streams[slot].id = 0;
            self.mark_dirty(i);
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
