//! Bounds on what a server may make this HTTP/2 client do while no response moves: acks it
//! asks for that cannot be written yet (PING, SETTINGS), and frames that carry nothing to a
//! response (empty DATA, WINDOW_UPDATE with no body waiting, RST_STREAM of streams this client
//! does not have, CONTINUATION, PRIORITY and unknown frames). Past a bound the server is
//! flooding: the connection ends with GOAWAY ENHANCE_YOUR_CALM and the flood is booked by its
//! kind (as nghttp2 and the `h2` crate do), instead of acks piling up in the out buffer without
//! end (gigabytes in seconds) or a read loop that never yields.

pub(crate) use super::faults::H2Flood;

/// Acks of one kind queued while the out buffer was never written out whole: nghttp2's
/// default bound on its queue of outbound acks.
pub(super) const MAX_PENDING_ACKS: u32 = 1_000;

/// Frames of one kind in a row that moved no response. A server's keep-alive PINGs (gRPC's
/// are 10 s apart at the least) take hours to reach it on a connection where nothing moves;
/// a flood reaches it in a few hundred KiB.
pub(super) const MAX_IDLE_FRAMES: u32 = 10_000;

/// The counts behind the bounds, per connection (forgotten with it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Floods {
    pending_pings: u32,
    pending_settings: u32,
    /// Per kind ([`H2Flood::index`]), frames since a response last moved.
    idle: [u32; 7],
}

impl Floods {
    /// A frame of `kind` that moved no response arrived.
    pub(super) fn idle(&mut self, kind: H2Flood) -> Result<(), H2Flood> {
        let n = &mut self.idle[kind.index()];
        *n += 1;
        if *n > MAX_IDLE_FRAMES {
            return Err(kind);
        }
        Ok(())
    }

    /// A PING or SETTINGS (`kind`) asks for an ack; `written_out`: everything queued before it
    /// has been written to the socket (the out buffer is empty), so no earlier ack is pending.
    pub(super) fn ack(&mut self, kind: H2Flood, written_out: bool) -> Result<(), H2Flood> {
        self.idle(kind)?;
        let pending = match kind {
            H2Flood::Settings => &mut self.pending_settings,
            _ => &mut self.pending_pings,
        };
        if written_out {
            *pending = 0;
        }
        *pending += 1;
        if *pending > MAX_PENDING_ACKS {
            return Err(kind);
        }
        Ok(())
    }

    /// A response moved (a header block or body bytes of a stream of this client, a stream
    /// ended or reset) or a request body went out: whatever came before was not a flood.
    pub(super) fn progress(&mut self) {
        self.idle = [0; 7];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_frames_of_a_kind_are_a_flood_past_the_bound_until_a_response_moves() {
        let mut f = Floods::default();
        for _ in 0..MAX_IDLE_FRAMES {
            assert_eq!(f.idle(H2Flood::WindowUpdate), Ok(()));
            // Each kind counts on its own.
            assert_eq!(f.idle(H2Flood::RstStream), Ok(()));
        }
        f.progress();
        for _ in 0..MAX_IDLE_FRAMES {
            assert_eq!(f.idle(H2Flood::WindowUpdate), Ok(()));
        }
        assert_eq!(f.idle(H2Flood::WindowUpdate), Err(H2Flood::WindowUpdate));
        assert_eq!(f.idle(H2Flood::Continuation), Ok(()));
    }

    #[test]
    fn acks_pending_past_the_bound_are_a_flood_and_a_written_out_buffer_clears_them() {
        let mut f = Floods::default();
        assert_eq!(f.ack(H2Flood::Ping, true), Ok(()));
        for _ in 1..MAX_PENDING_ACKS {
            assert_eq!(f.ack(H2Flood::Ping, false), Ok(()));
        }
        // SETTINGS acks are pending apart from PING acks.
        assert_eq!(f.ack(H2Flood::Settings, false), Ok(()));
        // The out buffer was written whole: the next PING's ack is the only one pending.
        assert_eq!(f.ack(H2Flood::Ping, true), Ok(()));
        f.progress();
        for _ in 1..MAX_PENDING_ACKS {
            assert_eq!(f.ack(H2Flood::Ping, false), Ok(()));
        }
        assert_eq!(f.ack(H2Flood::Ping, false), Err(H2Flood::Ping));
    }

    #[test]
    fn pings_answered_in_time_are_still_a_flood_when_nothing_else_moves() {
        let mut f = Floods::default();
        for _ in 0..MAX_IDLE_FRAMES {
            assert_eq!(f.ack(H2Flood::Ping, true), Ok(()));
        }
        assert_eq!(f.ack(H2Flood::Ping, true), Err(H2Flood::Ping));
        let mut g = Floods::default();
        for _ in 0..MAX_IDLE_FRAMES {
            assert_eq!(g.ack(H2Flood::Settings, true), Ok(()));
            g.progress();
        }
        assert_eq!(g.ack(H2Flood::Settings, true), Ok(()));
    }
}
