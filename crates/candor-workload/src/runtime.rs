//! A load thread's side of the workload: which request each schedule entry sends (the request
//! choice, by `seq`) and, for templated requests or a replayed trace, its bytes, filled into the
//! buffer of the slot that carries it. Every buffer is sized before the run, so nothing here
//! allocates per request.

use super::data::{DataOrder, DataTable};
use super::source::{Next, RequestSource};
use super::template::{data_row, request_rng, Fill, FillBuffers, Unsendable};
use super::CompiledRequests;
use std::sync::Arc;

/// Per load thread: the compiled requests and one fill buffer per slot; the request source of
/// weighted choice, templates and a replayed trace.
pub struct RequestMaker {
    compiled: Arc<CompiledRequests>,
    data: Option<Arc<DataTable>>,
    data_order: DataOrder,
    seed: u64,
    slots: Vec<FillBuffers>,
    /// Per slot: whether its request is a HEAD request (its response has no body).
    heads: Vec<bool>,
    /// Whether it makes the bytes (templates, a trace's records) or only chooses (weights).
    fills: bool,
    /// The longest request a slot's buffer holds without growing.
    max_request_bytes: usize,
}

impl RequestMaker {
    /// A maker for `slots` slots; `extra_bytes` more capacity per slot for requests that do not
    /// come from the templates (a replayed trace's records, which it then copies into the slot).
    /// It makes the bytes of templated requests and of such records; otherwise it only chooses.
    pub fn new(
        compiled: Arc<CompiledRequests>,
        data: Option<Arc<DataTable>>,
        data_order: DataOrder,
        seed: u64,
        slots: usize,
        extra_bytes: usize,
    ) -> RequestMaker {
        let longest = FillBuffers::for_templates(&compiled.templates)
            .request
            .capacity();
        let slots: Vec<FillBuffers> = (0..slots)
            .map(|_| {
                let mut b = FillBuffers::for_templates(&compiled.templates);
                b.request.reserve(extra_bytes);
                b
            })
            .collect();
        RequestMaker {
            heads: vec![false; slots.len()],
            fills: compiled.templated || extra_bytes > 0,
            max_request_bytes: longest + extra_bytes,
            compiled,
            data,
            data_order,
            seed,
            slots,
        }
    }

    /// Whether slot `slot` carries a HEAD request.
    #[inline]
    pub fn is_head(&self, slot: usize) -> bool {
        self.heads[slot]
    }

    pub fn compiled(&self) -> &CompiledRequests {
        &self.compiled
    }

    /// Which request the schedule entry `seq` sends (the one chooser, [`super::pick::Picker::choose`]).
    #[inline]
    pub fn choose(&self, seq: u64) -> u32 {
        self.compiled.picker.choose(self.seed, seq)
    }

    /// The longest request (templates filled, or a trace's record) a slot holds without growing.
    pub fn max_request_bytes(&self) -> usize {
        self.max_request_bytes
    }

    /// Fills request `request` for entry `seq` into slot `slot`'s buffer; `Err` when a value
    /// cannot be sent where it goes (the request is not to be sent: it fails in class `template`).
    #[inline]
    pub fn fill(&mut self, slot: usize, request: u32, seq: u64) -> Result<(), Unsendable> {
        let mut rng = request_rng(self.seed, seq);
        let rows = self.data.as_ref().map_or(1, |d| d.rows());
        let row = data_row(self.data_order, rows, seq, &mut rng);
        let mut fill = Fill {
            seq,
            row,
            rng: &mut rng,
            data: self.data.as_deref(),
        };
        let template = &self.compiled.templates[request as usize];
        self.heads[slot] = template.head_only;
        template.fill(&mut fill, &mut self.slots[slot]).map(drop)
    }

    /// Copies a request made elsewhere (a replayed record) into slot `slot`'s buffer.
    #[inline]
    pub fn copy(&mut self, slot: usize, bytes: &[u8], head: bool) {
        self.heads[slot] = head;
        let b = &mut self.slots[slot].request;
        b.clear();
        b.extend_from_slice(bytes);
    }

    /// The bytes slot `slot` carries.
    #[inline]
    pub fn bytes(&self, slot: usize) -> &[u8] {
        &self.slots[slot].request
    }
}

impl RequestSource for RequestMaker {
    #[inline]
    fn next(&mut self, slot: usize, seq: u64, taken: Option<(&[u8], bool)>) -> Next {
        let request = self.choose(seq);
        let mut sendable = true;
        if self.fills {
            match taken {
                Some((bytes, head)) => self.copy(slot, bytes, head),
                None => sendable = self.fill(slot, request, seq).is_ok(),
            }
        }
        Next { request, sendable }
    }

    #[inline]
    fn made(&self, slot: usize) -> Option<(&[u8], bool)> {
        self.fills.then(|| (self.bytes(slot), self.is_head(slot)))
    }
}
