//! The run's collector: it merges the load threads' interval histograms by index, in time order,
//! hands each finished interval to the run's owner, and keeps them for the results.

use candor_core::results::{EncodedHistograms, Interval, IntervalStats, RequestCounts};
use candor_core::Recorder;
use candor_engine::shared::{IntervalData, IntervalMsg};
use std::collections::BTreeMap;

/// What the live view gets once per interval.
#[derive(Clone)]
pub struct IntervalReport<'a> {
    pub index: u64,
    pub elapsed_s: f64,
    pub total_s: f64,
    pub length_s: f64,
    pub warmup: bool,
    pub completed: u64,
    pub failed: u64,
    pub response_time: IntervalStats,
    pub service_time: IntervalStats,
    pub send_lag: IntervalStats,
    /// Counts of both phases (0 = warm-up, 1 = measured, by intended time) from the start up to
    /// the end of this interval. `intended` counts a request when it leaves the schedule, so
    /// `intended - completed - failed` is what is in flight. The never-sent backlog counted at
    /// the end may come after the last report; the final counts are in `RunOutcome`.
    pub totals: [RequestCounts; 2],
    /// This interval's histograms (by completion time), for consumers that accumulate them
    /// (borrowed: nothing is copied for consumers that do not).
    pub histograms: &'a Recorder,
    /// This interval's responses by status code, per phase (by intended time, as `totals`).
    pub codes: &'a [candor_core::results::CodeCounts; 2],
    /// This interval's gRPC calls by `grpc-status`, per phase (all zero for other protocols).
    pub reply_codes: &'a [candor_core::reply_codes::ReplyCodeCounts; 2],
    /// This interval's streamed responses, both phases (runs with `--stream` or `--llm`).
    pub stream: Option<&'a candor_engine::books::StreamAcc>,
    /// Goodput is judged (`--goodput`, or bounds from `--slo`): `stream`'s `good` counts the
    /// responses that met every bound (without it, `good` stays 0 and means nothing).
    pub goodput: bool,
}

pub(crate) struct Pending {
    data: Box<IntervalData>,
    reported: usize,
    end_ns: Option<u64>,
}

/// Merges the workers' interval histograms by index, in time order.
pub(crate) struct Collector {
    pub(crate) pending: BTreeMap<u64, Pending>,
    pub(crate) threads: usize,
    pub(crate) interval_ns: u64,
    pub(crate) warmup_end_offset_ns: u64,
    pub(crate) total_ns: u64,
    pub(crate) start_ns: u64,
    pub(crate) done: candor_engine::interval_store::IntervalStore,
    pub(crate) totals: [RequestCounts; 2],
    /// An LLM run (`--llm`): its intervals report output tokens, zero included.
    pub(crate) llm: bool,
    /// Goodput is judged (`--goodput`, or bounds from `--slo`): intervals report it.
    pub(crate) goodput: bool,
    /// An embeddings run: intervals report the inputs embedded, zero included.
    pub(crate) embeddings: bool,
    /// A multi-turn run: intervals report their conversations, zero included.
    pub(crate) conversations: bool,
}

impl Collector {
    pub(crate) fn accept(
        &mut self,
        msg: IntervalMsg,
        pool: &crossbeam_channel::Sender<Box<IntervalData>>,
        on_interval: &mut (dyn FnMut(&IntervalReport) + Send),
    ) {
        match self.pending.get_mut(&msg.index) {
            Some(p) => {
                p.data.rec.add(&msg.data.rec);
                p.data.completed += msg.data.completed;
                p.data.failed += msg.data.failed;
                for (into, from) in p.data.counts.iter_mut().zip(msg.data.counts.iter()) {
                    into.add(from);
                }
                for (into, from) in p.data.codes.iter_mut().zip(msg.data.codes.iter()) {
                    into.add(from);
                }
                for (into, from) in p
                    .data
                    .reply_codes
                    .iter_mut()
                    .zip(msg.data.reply_codes.iter())
                {
                    into.merge(from);
                }
                if let (Some(into), Some(from)) = (&mut p.data.stream, &msg.data.stream) {
                    into.add(from);
                }
                p.reported += 1;
                p.end_ns = p.end_ns.max(msg.final_end_ns);
                let mut spent = msg.data;
                spent.reset();
                let _ = pool.try_send(spent);
            }
            None => {
                self.pending.insert(
                    msg.index,
                    Pending {
                        data: msg.data,
                        reported: 1,
                        end_ns: msg.final_end_ns,
                    },
                );
            }
        }
        // Emit every leading interval that all workers have delivered.
        while let Some(entry) = self.pending.first_entry() {
            if entry.get().reported < self.threads {
                break;
            }
            let (index, p) = entry.remove_entry();
            self.emit(index, p, pool, on_interval);
        }
    }

    pub(crate) fn finish_all(
        &mut self,
        pool: &crossbeam_channel::Sender<Box<IntervalData>>,
        on_interval: &mut (dyn FnMut(&IntervalReport) + Send),
    ) {
        while let Some((index, p)) = self.pending.pop_first() {
            self.emit(index, p, pool, on_interval);
        }
    }

    fn emit(
        &mut self,
        index: u64,
        p: Pending,
        pool: &crossbeam_channel::Sender<Box<IntervalData>>,
        on_interval: &mut (dyn FnMut(&IntervalReport) + Send),
    ) {
        let offset_ns = index * self.interval_ns;
        let length_ns = match p.end_ns {
            Some(end) => end
                .saturating_sub(self.start_ns + offset_ns)
                .clamp(1, self.interval_ns),
            None => self.interval_ns,
        };
        for (into, from) in self.totals.iter_mut().zip(p.data.counts.iter()) {
            into.add(from);
        }
        // An interval that ends before there is anything to record carries no information.
        // (Its counts still go into the totals; if it was the last, the outcome has them.)
        // Conversations decided at the end (cut, past the end) are kept: the intervals hold
        // the run's conversations exactly.
        let conversations = p.data.stream.as_ref().map(|s| s.conversations);
        if p.data.completed == 0
            && p.data.failed == 0
            && !conversations.is_some_and(|c| c != Default::default())
            && p.end_ns.is_some()
            && length_ns < self.interval_ns / 100
        {
            return;
        }
        let d = &p.data;
        let interval = Interval {
            start_s: offset_ns as f64 / 1e9,
            length_s: length_ns as f64 / 1e9,
            warmup: offset_ns < self.warmup_end_offset_ns,
            completed: d.completed,
            failed: d.failed,
            response_time: IntervalStats::of(&d.rec.response),
            service_time: IntervalStats::of(&d.rec.service),
            send_lag: IntervalStats::of(&d.rec.send_lag),
            first_byte: IntervalStats::of_recorded(&d.rec.first_byte),
            histograms: EncodedHistograms::of(&d.rec),
            stream: d.stream.as_ref().map(|s| {
                let i = s.interval(
                    length_ns as f64 / 1e9,
                    self.llm,
                    self.goodput,
                    self.embeddings,
                );
                if self.conversations {
                    i.with_conversations(s.conversations)
                } else {
                    i
                }
            }),
        };
        on_interval(&IntervalReport {
            index,
            elapsed_s: (offset_ns + length_ns) as f64 / 1e9,
            total_s: self.total_ns as f64 / 1e9,
            length_s: interval.length_s,
            warmup: interval.warmup,
            completed: d.completed,
            failed: d.failed,
            response_time: interval.response_time,
            service_time: interval.service_time,
            send_lag: interval.send_lag,
            totals: self.totals,
            histograms: &d.rec,
            codes: &d.codes,
            reply_codes: &d.reply_codes,
            stream: d.stream.as_deref(),
            goodput: self.goodput,
        });
        self.done.push(interval);
        let mut spent = p.data;
        spent.reset();
        let _ = pool.try_send(spent);
    }
}
