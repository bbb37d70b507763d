//! A load thread's side of the workload: which request each schedule entry sends (the request
//! choice, by `seq`) and, for templated requests or a replayed trace, its bytes, filled into the
//! buffer of the slot that carries it. Every buffer is sized before the run, so nothing here
//! allocates per request.

use super::data::{DataOrder, DataTable};
use super::template::{data_row, request_rng, Fill, FillBuffers, Unsendable};
use super::CompiledRequests;
use std::sync::Arc;

/// Salt of the generator that picks the request, so that it does not repeat the draws the
/// request's own placeholders make from `request_rng(seed, seq)`.
const PICK_SALT: u64 = 0x5EED_0FC4_01CE;

/// Which request the schedule entry `seq` sends: a pure function of the seed and `seq`, so every
/// thread, shard and target's worker agrees on it.
#[inline]
pub fn choose(picker: &super::pick::Picker, seed: u64, seq: u64) -> u32 {
    let mut rng = request_rng(seed ^ PICK_SALT, seq);
    picker.pick(seq, &mut rng) as u32
}

/// Per load thread: the compiled requests and one fill buffer per slot.
pub struct RequestMaker {
    compiled: Arc<CompiledRequests>,
    data: Option<Arc<DataTable>>,
    data_order: DataOrder,
    seed: u64,
    slots: Vec<FillBuffers>,
    /// Per slot: whether its request is a HEAD request (its response has no body).
    heads: Vec<bool>,
}

impl RequestMaker {
    /// A maker for `slots` slots; `extra_bytes` more capacity per slot for requests that do not
    /// come from the templates (a replayed trace's records).
    pub fn new(
        compiled: Arc<CompiledRequests>,
        data: Option<Arc<DataTable>>,
        data_order: DataOrder,
        seed: u64,
        slots: usize,
        extra_bytes: usize,
    ) -> RequestMaker {
        let slots: Vec<FillBuffers> = (0..slots)
            .map(|_| {
                let mut b = FillBuffers::for_templates(&compiled.templates);
                b.request.reserve(extra_bytes);
                b
            })
            .collect();
        RequestMaker {
            heads: vec![false; slots.len()],
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

    /// The one request choice: which request the schedule entry `seq` sends.
    #[inline]
    pub fn choose(&self, seq: u64) -> u32 {
        choose(&self.compiled.picker, self.seed, seq)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{LoadConfig, Target};

    #[test]
    fn seq_decides_choice_and_values_whatever_the_slot_or_thread() {
        let mut c = LoadConfig::new(Target::parse("http://127.0.0.1:1/").unwrap());
        let lines = crate::requests::parse_request_lines(
            "{\"path\": \"/a/{{seq}}/{{random:0:1000000}}\", \"weight\": 1}\n{\"path\": \"/b/{{uuid}}\", \"weight\": 3}",
        )
        .unwrap();
        c.requests = lines.iter().map(|l| l.spec.clone()).collect();
        c.workload.lines = lines;
        let compiled = Arc::new(crate::config::request_set::compile_requests(&c).unwrap());
        let mut one = RequestMaker::new(compiled.clone(), None, DataOrder::Sequential, 4, 2, 0);
        let mut other = RequestMaker::new(compiled, None, DataOrder::Sequential, 4, 8, 0);
        let mut seen = std::collections::HashSet::new();
        for seq in 0..2000u64 {
            let r = one.choose(seq);
            assert_eq!(r, other.choose(seq));
            one.fill((seq % 2) as usize, r, seq).unwrap();
            other.fill(7, r, seq).unwrap();
            assert_eq!(one.bytes((seq % 2) as usize), other.bytes(7));
            assert!(
                seen.insert(one.bytes((seq % 2) as usize).to_vec()),
                "{seq}: a repeat"
            );
        }
        let a = (0..2000u64).filter(|&s| one.choose(s) == 0).count();
        // Weight 1 of 4: 500 expected, binomial sd ≈ 19; 5 sd.
        assert!((a as i64 - 500).abs() < 97, "{a}");
    }
}
