//! Exact merging of several results into one (kind "merged"): histograms are added bucket by
//! bucket and counts summed, never percentiles averaged; intervals are aligned by absolute time;
//! load-profile stages are merged by index (the runs must share one profile) and per-name
//! results by name.

use crate::codec::add_exact;
use candor_core::hist::{from_base64_v2, HistCodecError};
use candor_core::recorded::{MergedConfig, MergedSource, RecordedConfig};
use candor_core::results::{
    EncodedHistograms, Goodput, Interval, IntervalStats, Kind, LlmTokens, Mode, NamedHistogram,
    PhaseResults, RequestCounts, RunResults, StreamResults,
};
use candor_core::stream_measures::{IntervalStream, StreamMeasure};
use candor_core::units::format_rate;
use candor_core::workload_results::{StageResults, WorkloadResults};
use candor_core::{new_histogram, Histo, Recorder, Summary};
use std::collections::BTreeSet;

#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("nothing to merge")]
    Empty,
    #[error("run {index}: impossible results: {cause}")]
    Impossible {
        index: usize,
        cause: crate::validate::Impossible,
    },
    #[error("{0}")]
    Overflow(crate::validate::Impossible),
    #[error("merging overflows: the inputs hold more than 2^62 {what} latencies together")]
    Histograms { what: &'static str },
    #[error("run {index}: {what} histogram is not valid: {cause}")]
    Histogram {
        index: usize,
        what: String,
        cause: HistCodecError,
    },
    #[error("run {index} has other load-profile stages than run 1 ({difference}): only runs of one profile merge stage by stage")]
    Stages { index: usize, difference: String },
}

fn decode(index: usize, what: &str, enc: &EncodedHistograms) -> Result<Recorder, MergeError> {
    enc.decode().map_err(|cause| MergeError::Histogram {
        index,
        what: what.to_string(),
        cause,
    })
}

/// The measured window of a run in absolute seconds. A candor run's window is its schedule's
/// (start + warm-up, for its duration): its intervals also cover the drain after the last intended
/// send, which would understate its rates. Other inputs (logs, merges) have only their intervals;
/// without intervals, start, warm-up and duration are used.
fn window(r: &RunResults) -> (f64, f64) {
    let main: Vec<&Interval> = r.intervals.iter().filter(|i| !i.warmup).collect();
    if r.kind == Kind::Run {
        let s = r.start_time_unix_s + r.warmup.as_ref().map_or(0.0, |w| w.duration_s);
        return (s, s + r.main.duration_s);
    }
    if let (Some(first), Some(last)) = (main.first(), main.last()) {
        let s = r.start_time_unix_s + first.start_s;
        return (s, r.start_time_unix_s + last.start_s + last.length_s);
    }
    let warm = r.warmup.as_ref().map_or(0.0, |w| w.duration_s);
    let s = r.start_time_unix_s + warm;
    (s, s + r.main.duration_s)
}

/// Length of the union of time spans.
fn union_length(mut spans: Vec<(f64, f64)>) -> f64 {
    spans.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut total = 0.0;
    let mut cur: Option<(f64, f64)> = None;
    for (s, e) in spans {
        match cur {
            Some((cs, ce)) if s <= ce => cur = Some((cs, ce.max(e))),
            Some((cs, ce)) => {
                total += ce - cs;
                cur = Some((s, e));
            }
            None => cur = Some((s, e)),
        }
    }
    if let Some((cs, ce)) = cur {
        total += ce - cs;
    }
    total
}

/// Combines summaries whose histograms are not stored (unfinished ages): count, min, max, mean and
/// stdev are exact (pooled); each percentile is the highest of the runs', an upper bound.
fn combine_summaries(parts: &[&Summary]) -> Summary {
    let count: u64 = parts.iter().map(|s| s.count).sum();
    if count == 0 {
        return Summary::of(&new_histogram());
    }
    let nonempty: Vec<&&Summary> = parts.iter().filter(|s| s.count > 0).collect();
    let mean = nonempty
        .iter()
        .map(|s| s.mean_ns * s.count as f64)
        .sum::<f64>()
        / count as f64;
    let second = nonempty
        .iter()
        .map(|s| (s.stdev_ns * s.stdev_ns + s.mean_ns * s.mean_ns) * s.count as f64)
        .sum::<f64>()
        / count as f64;
    let mut percentiles = nonempty[0].percentiles.clone();
    for p in percentiles.iter_mut() {
        p.value_ns = nonempty
            .iter()
            .filter_map(|s| s.at(p.percentile))
            .max()
            .unwrap_or(0);
    }
    Summary {
        count,
        min_ns: nonempty.iter().map(|s| s.min_ns).min().unwrap_or(0),
        max_ns: nonempty.iter().map(|s| s.max_ns).max().unwrap_or(0),
        mean_ns: mean,
        stdev_ns: (second - mean * mean).max(0.0).sqrt(),
        percentiles,
    }
}

/// Refuses an addition of histograms whose totals would pass the decoder's bound (2^62, see
/// `codec::MAX_TOTAL_COUNT`), beyond which bucket counts and percentile scans could overflow.
fn fits(acc: &Recorder, more: &Recorder) -> Result<(), MergeError> {
    for (what, a, b) in [
        ("response-time", &acc.response, &more.response),
        ("service-time", &acc.service, &more.service),
        ("send-lag", &acc.send_lag, &more.send_lag),
        ("first-byte", &acc.first_byte, &more.first_byte),
    ] {
        if u128::from(a.len()) + u128::from(b.len()) > u128::from(crate::codec::MAX_TOTAL_COUNT) {
            return Err(MergeError::Histograms { what });
        }
    }
    Ok(())
}

fn merge_phase(
    index_phases: &[(usize, &PhaseResults)],
    duration_s: f64,
) -> Result<PhaseResults, MergeError> {
    let phases: Vec<&PhaseResults> = index_phases.iter().map(|(_, p)| *p).collect();
    crate::validate::check_sum(&phases).map_err(MergeError::Overflow)?;
    let mut rec = Recorder::new();
    let mut requests = RequestCounts::default();
    let mut intended_rate_s = 0.0;
    let mut all_targeted = true;
    for (i, p) in index_phases {
        let one = decode(*i, "phase", &p.histograms)?;
        fits(&rec, &one)?;
        rec.add(&one);
        // check_sum above proved that no counter can overflow here.
        requests.add(&p.requests);
        match p.rate.target_per_s {
            Some(t) => intended_rate_s += t * p.duration_s,
            None => all_targeted = false,
        }
    }
    rec.clamped = requests.clamped_values;
    let target = if all_targeted && duration_s > 0.0 {
        Some(intended_rate_s / duration_s)
    } else {
        None
    };
    let mut phase =
        PhaseResults::from_recorder(&rec, &new_histogram(), requests, duration_s, target);
    let ages: Vec<&Summary> = index_phases
        .iter()
        .map(|(_, p)| &p.unfinished_age)
        .collect();
    phase.unfinished_age = combine_summaries(&ages);
    // Codes and connection faults add up as the counts do (saturating: check_sum covers the
    // counts, not these keyed maps).
    for (_, p) in index_phases {
        for (into, from) in [
            (&mut phase.status_codes, &p.status_codes),
            (&mut phase.connection_faults, &p.connection_faults),
            (&mut phase.grpc_status, &p.grpc_status),
        ] {
            for (k, n) in from {
                let v = into.entry(k.clone()).or_insert(0);
                *v = v.saturating_add(*n);
            }
        }
    }
    // Multi-turn runs' conversations add up as the counts do.
    phase.conversations = index_phases
        .iter()
        .filter_map(|(_, p)| p.conversations)
        .reduce(|mut all, c| {
            all.add(&c);
            all
        });
    Ok(phase)
}

/// Merges runs as repeats of one test (`candor merge --as-repeats`): the union as [`merge`]
/// makes it, with every run kept whole in `repeats` in input order, so `candor compare` compares
/// across them. An input that already holds repeats contributes its repeats, not its union.
pub fn merge_as_repeats(runs: &[RunResults]) -> Result<RunResults, MergeError> {
    let repeats: Vec<RunResults> = runs
        .iter()
        .flat_map(|r| {
            if r.repeats.is_empty() {
                vec![r.clone()]
            } else {
                r.repeats.clone()
            }
        })
        .collect();
    let mut union = merge(&repeats)?;
    union.repeats = repeats;
    Ok(union)
}

/// Merges runs exactly. Runs that overlapped in time (several load generators against one system)
/// and runs one after another (repeats) both merge correctly: durations are the union of the
/// measured windows, so the achieved rate is total completions over wall-clock time covered.
pub fn merge(runs: &[RunResults]) -> Result<RunResults, MergeError> {
    let first = runs.first().ok_or(MergeError::Empty)?;
    for (index, r) in runs.iter().enumerate() {
        crate::validate::check(r).map_err(|cause| MergeError::Impossible {
            index: index + 1,
            cause,
        })?;
    }
    check_stages(runs)?;
    let main_duration = union_length(runs.iter().map(window).collect());
    let mains: Vec<(usize, &PhaseResults)> = runs.iter().map(|r| &r.main).enumerate().collect();
    let mut main = merge_phase(&mains, main_duration)?;
    let warmup = merge_warmup(runs)?;
    let mut workload = merge_workload(runs, main_duration)?;
    let start = runs
        .iter()
        .map(|r| r.start_time_unix_s)
        .fold(f64::INFINITY, f64::min);
    workload.failure_examples = merge_failure_examples(runs, start);
    let intervals = merge_intervals(runs, start)?;
    let extra = merge_extra(runs)?;
    merge_streams(&mut main, runs, &extra);

    let same = |f: &dyn Fn(&RunResults) -> String| {
        let v = f(first);
        if runs.iter().all(|r| f(r) == v) {
            v
        } else {
            runs.iter().map(f).collect::<Vec<_>>().join(" + ")
        }
    };
    let warnings = merged_warnings(runs, &main);
    Ok(RunResults {
        command_line: first.command_line.clone(),
        start_time_unix_s: start,
        environment: first.environment.clone(),
        warmup,
        intervals,
        extra: extra
            .iter()
            .map(|(n, h)| NamedHistogram::of(n, h))
            .collect(),
        warnings,
        workload,
        ..RunResults::new(
            Kind::Merged,
            Mode::common(runs.iter().map(|r| r.mode.clone())).unwrap_or(Mode::OpenLoop),
            same(&|r| r.target.clone()),
            merged_config(runs),
            main,
        )
    })
}

/// The runs' warm-ups merged over the union of their windows; `None` when no run had one.
fn merge_warmup(runs: &[RunResults]) -> Result<Option<PhaseResults>, MergeError> {
    let warms: Vec<(usize, &PhaseResults)> = runs
        .iter()
        .enumerate()
        .filter_map(|(i, r)| r.warmup.as_ref().map(|w| (i, w)))
        .collect();
    Ok(if warms.is_empty() {
        None
    } else {
        let d = union_length(
            runs.iter()
                .filter_map(|r| {
                    r.warmup
                        .as_ref()
                        .map(|w| (r.start_time_unix_s, r.start_time_unix_s + w.duration_s))
                })
                .collect(),
        );
        Some(merge_phase(&warms, d)?)
    })
}

/// The runs' intervals aligned on the millisecond of their absolute start: those that start
/// together are added up (histograms, counts, streams), their start made relative to `start`.
fn merge_intervals(runs: &[RunResults], start: f64) -> Result<Vec<Interval>, MergeError> {
    let mut slots: Vec<(i64, f64, bool, u64, u64, Recorder)> = Vec::new();
    let mut streams: Vec<(i64, StreamSlot)> = Vec::new();
    for (i, r) in runs.iter().enumerate() {
        for iv in &r.intervals {
            let key = ((r.start_time_unix_s + iv.start_s) * 1000.0).round() as i64;
            let rec = decode(i, "interval", &iv.histograms)?;
            if let Some(st) = &iv.stream {
                let slot = match streams.iter_mut().find(|s| s.0 == key) {
                    Some(s) => &mut s.1,
                    None => {
                        streams.push((key, StreamSlot::default()));
                        &mut streams.last_mut().expect("just pushed").1
                    }
                };
                slot.add(i, st)?;
            }
            match slots.iter_mut().find(|s| s.0 == key) {
                Some(s) => {
                    let overflow = |field: &str| {
                        MergeError::Overflow(crate::validate::Impossible::Overflow {
                            field: format!("intervals.{field}"),
                        })
                    };
                    s.1 = s.1.max(iv.length_s);
                    s.2 &= iv.warmup;
                    s.3 =
                        s.3.checked_add(iv.completed)
                            .ok_or_else(|| overflow("completed"))?;
                    s.4 =
                        s.4.checked_add(iv.failed)
                            .ok_or_else(|| overflow("failed"))?;
                    fits(&s.5, &rec)?;
                    s.5.add(&rec);
                }
                None => slots.push((key, iv.length_s, iv.warmup, iv.completed, iv.failed, rec)),
            }
        }
    }
    slots.sort_by_key(|s| s.0);
    Ok(slots
        .into_iter()
        .map(|(key, length_s, warmup, completed, failed, rec)| Interval {
            start_s: key as f64 / 1000.0 - start,
            length_s,
            warmup,
            completed,
            failed,
            response_time: IntervalStats::of(&rec.response),
            service_time: IntervalStats::of(&rec.service),
            send_lag: IntervalStats::of(&rec.send_lag),
            first_byte: IntervalStats::of_recorded(&rec.first_byte),
            histograms: EncodedHistograms::of(&rec),
            stream: streams
                .iter()
                .find(|s| s.0 == key)
                .map(|(_, s)| s.interval(length_s)),
        })
        .collect())
}

/// The runs' further named histograms, added up by name in the order first seen.
fn merge_extra(runs: &[RunResults]) -> Result<Vec<(String, Histo)>, MergeError> {
    let mut extra: Vec<(String, Histo)> = Vec::new();
    for (i, r) in runs.iter().enumerate() {
        for n in &r.extra {
            let h = from_base64_v2(&n.histogram).map_err(|cause| MergeError::Histogram {
                index: i,
                what: format!("extra '{}'", n.name),
                cause,
            })?;
            match extra.iter_mut().find(|(name, _)| *name == n.name) {
                Some((_, acc)) => add_exact(acc, &h),
                None => {
                    let mut acc = new_histogram();
                    add_exact(&mut acc, &h);
                    extra.push((n.name.clone(), acc));
                }
            }
        }
    }
    Ok(extra)
}

/// Each run's warnings, numbered by run, and the merge's own.
fn merged_warnings(runs: &[RunResults], main: &PhaseResults) -> Vec<String> {
    let mut warnings: Vec<String> = Vec::new();
    for (i, r) in runs.iter().enumerate() {
        for w in &r.warnings {
            warnings.push(format!("run {}: {w}", i + 1));
        }
    }
    if main.unfinished_age.count > 0 && runs.len() > 1 {
        warnings.push(
            "unfinished-request age percentiles are the highest of the merged runs' (an upper bound): \
             their histograms are not stored"
                .into(),
        );
    }
    warnings
}

/// What a merge records as its settings: each run's own, as it was.
fn merged_config(runs: &[RunResults]) -> RecordedConfig {
    RecordedConfig::Merged(Box::new(MergedConfig {
        merged_from: runs
            .iter()
            .map(|r| MergedSource {
                kind: r.kind,
                target: r.target.clone(),
                start_time_unix_s: r.start_time_unix_s,
                command_line: r.command_line.clone(),
                config: r.config.clone(),
                environment: r.environment.clone(),
            })
            .collect(),
        threads: None,
        connections: None,
        rate_per_s: None,
        duration_s: None,
        warmup_s: None,
        shards: None,
    }))
}

/// One aligned interval's streams across the runs: histograms added, counts summed.
#[derive(Default)]
struct StreamSlot {
    responses: u64,
    events: u64,
    output_tokens: Option<u64>,
    input_tokens: u64,
    /// Runs whose server said cached tokens: those summed.
    cached_tokens: Option<u64>,
    /// Multi-turn runs: the conversations summed.
    conversations: Option<candor_core::results::Conversations>,
    /// Goodput runs: good responses summed.
    good: Option<u64>,
    /// Embeddings runs: inputs summed.
    inputs: Option<u64>,
    histograms: Vec<(StreamMeasure, Histo)>,
}

impl StreamSlot {
    fn add(&mut self, index: usize, s: &IntervalStream) -> Result<(), MergeError> {
        self.responses = self.responses.saturating_add(s.responses);
        self.events = self.events.saturating_add(s.events);
        if let Some(t) = s.output_tokens {
            self.output_tokens = Some(self.output_tokens.unwrap_or(0).saturating_add(t));
            self.input_tokens = self
                .input_tokens
                .saturating_add(s.input_tokens.unwrap_or(0));
        }
        if let Some(c) = &s.conversations {
            self.conversations
                .get_or_insert_with(Default::default)
                .add(c);
        }
        if let Some(c) = s.cached_tokens {
            self.cached_tokens = Some(self.cached_tokens.unwrap_or(0).saturating_add(c));
        }
        if let Some(g) = s.good {
            self.good = Some(self.good.unwrap_or(0).saturating_add(g));
        }
        if let Some(n) = s.inputs {
            self.inputs = Some(self.inputs.unwrap_or(0).saturating_add(n));
        }
        for m in StreamMeasure::ALL {
            if s.histograms.get(m).is_none() {
                continue;
            }
            let h = s
                .histograms
                .decode(m)
                .map_err(|cause| MergeError::Histogram {
                    index,
                    what: format!("interval {}", m.name()),
                    cause,
                })?;
            match self.histograms.iter_mut().find(|(n, _)| *n == m) {
                Some((_, acc)) => add_exact(acc, &h),
                None => self.histograms.push((m, h)),
            }
        }
        Ok(())
    }

    fn interval(&self, length_s: f64) -> IntervalStream {
        let s = IntervalStream::of(
            self.responses,
            self.events,
            self.output_tokens,
            length_s,
            self.histograms.iter().map(|(m, h)| (*m, h)),
        )
        .with_input_tokens(self.input_tokens, length_s);
        let s = match self.cached_tokens {
            Some(c) => s.with_cached_tokens(c, 1),
            None => s,
        };
        let s = match self.conversations {
            Some(c) => s.with_conversations(c),
            None => s,
        };
        let s = match self.inputs {
            Some(n) => s.with_inputs(n, length_s),
            None => s,
        };
        match self.good {
            Some(g) => s.with_goodput(g, length_s),
            None => s,
        }
    }
}

/// The streams of the merged measured window: each measure's summary from its merged full
/// histogram (`extra`), the counts summed, failures by name added, and the output tokens with
/// the responses whose count came from usage or from chunks kept apart.
fn merge_streams(main: &mut PhaseResults, runs: &[RunResults], extra: &[(String, Histo)]) {
    let parts: Vec<&StreamResults> = runs.iter().filter_map(|r| r.main.stream.as_ref()).collect();
    for m in StreamMeasure::ALL {
        let summary = extra
            .iter()
            .find(|(n, _)| n == m.name())
            .filter(|(_, h)| !h.is_empty())
            .map(|(_, h)| Summary::of(h));
        // A run recorded the measure but its histogram is missing (an older file): the
        // summaries are combined as the unfinished ages are, percentiles an upper bound.
        let summary = summary.or_else(|| {
            let given: Vec<&Summary> = runs
                .iter()
                .filter_map(|r| r.main.stream_summary(m))
                .collect();
            (!given.is_empty()).then(|| combine_summaries(&given))
        });
        main.set_stream_summary(m, summary);
    }
    if parts.is_empty() {
        return;
    }
    let mut out = StreamResults {
        responses: 0,
        events: 0,
        events_per_response: 0.0,
        failures: Default::default(),
        llm: None,
        goodput: None,
    };
    // Goodput adds up when every shard judged the same objectives; otherwise the merged window
    // has none (a sum of different judgements is no one's goodput).
    let goodputs: Vec<&Goodput> = parts.iter().filter_map(|p| p.goodput.as_ref()).collect();
    let same_slo =
        goodputs.len() == parts.len() && goodputs.windows(2).all(|w| w[0].slo == w[1].slo);
    if let (true, Some(first)) = (same_slo, goodputs.first()) {
        out.goodput = Some(Goodput::of(
            first.slo.clone(),
            goodputs.iter().map(|g| g.good).sum(),
            goodputs.iter().map(|g| g.good_service).sum(),
            main.requests.intended,
            main.duration_s,
        ));
    }
    for p in &parts {
        out.responses = out.responses.saturating_add(p.responses);
        out.events = out.events.saturating_add(p.events);
        for (k, n) in &p.failures {
            let v = out.failures.entry(k.clone()).or_insert(0);
            *v = v.saturating_add(*n);
        }
        if let Some(t) = &p.llm {
            let acc = out.llm.get_or_insert(LlmTokens::default());
            acc.output_tokens = acc.output_tokens.saturating_add(t.output_tokens);
            acc.input_tokens = acc.input_tokens.saturating_add(t.input_tokens);
            acc.input_counted = acc.input_counted.saturating_add(t.input_counted);
            acc.inputs = acc.inputs.saturating_add(t.inputs);
            acc.cached_tokens = acc.cached_tokens.saturating_add(t.cached_tokens);
            acc.cached_counted = acc.cached_counted.saturating_add(t.cached_counted);
            acc.counted_from_usage = acc.counted_from_usage.saturating_add(t.counted_from_usage);
            acc.counted_from_chunks = acc
                .counted_from_chunks
                .saturating_add(t.counted_from_chunks);
            acc.counted_by_tokenizer = acc
                .counted_by_tokenizer
                .saturating_add(t.counted_by_tokenizer);
            if let Some(c) = &t.tokenizer_check {
                acc.tokenizer_check
                    .get_or_insert_with(Default::default)
                    .add(c);
            }
        }
    }
    if out.responses > 0 {
        out.events_per_response = out.events as f64 / out.responses as f64;
    }
    // Tokens per second over the merged window, as the merged request rate is.
    if let Some(t) = &mut out.llm {
        t.set_rates(main.duration_s);
    }
    main.stream = Some(out);
}

/// A stage as it must agree across runs: window and target rates, in words for the refusal.
fn stage_words(s: &StageResults) -> String {
    let rate = if s.from_per_s == s.to_per_s {
        format_rate(s.from_per_s)
    } else {
        format!("{}..{}", format_rate(s.from_per_s), format_rate(s.to_per_s))
    };
    format!(
        "{rate} for {:.3}s from {:.3}s",
        s.results.duration_s, s.start_s
    )
}

/// Whether two stages are the same stage of one profile. Windows come from integer nanoseconds
/// written as seconds, and rates from the same profile (a shard's share of it), so anything
/// beyond floating-point noise is another profile.
fn same_stage(a: &StageResults, b: &StageResults) -> bool {
    let close = |x: f64, y: f64| (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0);
    close(a.start_s, b.start_s)
        && close(a.results.duration_s, b.results.duration_s)
        && close(a.from_per_s, b.from_per_s)
        && close(a.to_per_s, b.to_per_s)
}

/// Refuses runs whose stage lists differ from the first run's: a stage of one profile added to
/// another stage describes neither.
fn check_stages(runs: &[RunResults]) -> Result<(), MergeError> {
    let first = &runs[0].workload.stages;
    for (i, r) in runs.iter().enumerate().skip(1) {
        let other = &r.workload.stages;
        let difference = if other.len() != first.len() {
            Some(format!("{} stages, not {}", other.len(), first.len()))
        } else {
            first
                .iter()
                .zip(other)
                .position(|(a, b)| !same_stage(a, b))
                .map(|k| {
                    format!(
                        "stage {} is {}, not {}",
                        k + 1,
                        stage_words(&other[k]),
                        stage_words(&first[k])
                    )
                })
        };
        if let Some(difference) = difference {
            return Err(MergeError::Stages {
                index: i + 1,
                difference,
            });
        }
    }
    Ok(())
}

/// Merges the stages (by index, their lists already checked equal) and the per-name results (by
/// name, the union): histograms added, counts summed, as for the whole run. A stage's duration
/// is the union of the runs' windows of that stage in absolute time, as the whole run's is, so
/// shards (which run the stage together) add their rates and repeats (one after another) keep
/// one run's; names are measured over the merged window, as each run's are over its own.
fn merge_workload(
    runs: &[RunResults],
    main_duration_s: f64,
) -> Result<WorkloadResults, MergeError> {
    let mut out = WorkloadResults::default();
    for (k, stage) in runs[0].workload.stages.iter().enumerate() {
        let parts: Vec<(usize, &StageResults)> = runs
            .iter()
            .enumerate()
            .map(|(i, r)| (i, &r.workload.stages[k]))
            .collect();
        let spans = parts
            .iter()
            .map(|(i, s)| {
                let start = window(&runs[*i]).0 + s.start_s;
                (start, start + s.results.duration_s)
            })
            .collect();
        let duration_s = union_length(spans);
        let phases: Vec<(usize, &PhaseResults)> =
            parts.iter().map(|(i, s)| (*i, &s.results)).collect();
        let results = merge_phase(&phases, duration_s)?;
        // The intended rate integrated over every run's stage, spread over the merged window.
        let spread = |rate: fn(&StageResults) -> f64| {
            if duration_s > 0.0 {
                parts
                    .iter()
                    .map(|(_, s)| rate(s) * s.results.duration_s)
                    .sum::<f64>()
                    / duration_s
            } else {
                rate(stage)
            }
        };
        out.stages.push(StageResults {
            start_s: stage.start_s,
            from_per_s: spread(|s| s.from_per_s),
            to_per_s: spread(|s| s.to_per_s),
            results,
        });
    }
    let names: BTreeSet<&String> = runs
        .iter()
        .flat_map(|r| r.workload.by_request.keys())
        .collect();
    for name in names {
        let phases: Vec<(usize, &PhaseResults)> = runs
            .iter()
            .enumerate()
            .filter_map(|(i, r)| r.workload.by_request.get(name).map(|p| (i, p)))
            .collect();
        out.by_request
            .insert(name.clone(), merge_phase(&phases, main_duration_s)?);
    }
    Ok(out)
}

/// The inputs' first failed responses as one run's: their union, each intended time moved onto
/// the merged `start`, keeping the earliest few (`keep_earliest`).
fn merge_failure_examples(
    runs: &[RunResults],
    start: f64,
) -> Vec<candor_core::workload_results::FailureExample> {
    let mut all: Vec<_> = runs
        .iter()
        .flat_map(|r| {
            r.workload.failure_examples.iter().map(move |e| {
                let mut e = e.clone();
                e.intended_s = r.start_time_unix_s + e.intended_s - start;
                e
            })
        })
        .collect();
    candor_core::workload_results::keep_earliest(&mut all);
    all
}

/// One setting of a run, as text (`None` when the run does not record it).
type Setting = Box<dyn Fn(&RunResults) -> Option<String>>;

/// Groups `inputs` by a setting and describes a disagreement: `X in a.json, b.json; Y in c.json`.
fn disagreement(
    inputs: &[(String, RunResults)],
    value: impl Fn(&RunResults) -> Option<String>,
) -> Option<String> {
    let mut groups: Vec<(String, Vec<&str>)> = Vec::new();
    for (label, r) in inputs {
        let Some(v) = value(r) else { continue };
        match groups.iter_mut().find(|(x, _)| *x == v) {
            Some((_, names)) => names.push(label),
            None => groups.push((v, vec![label])),
        }
    }
    (groups.len() > 1).then(|| {
        groups
            .iter()
            .map(|(v, names)| format!("{v} in {}", names.join(", ")))
            .collect::<Vec<_>>()
            .join("; ")
    })
}

/// What makes a merge of these inputs (label, results) questionable: the same run given twice,
/// or runs of different targets, methods, modes or rates, whose merged percentiles describe none
/// of them. Empty when they belong together.
pub fn mismatches(inputs: &[(String, RunResults)]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, (a, ra)) in inputs.iter().enumerate() {
        for (b, rb) in &inputs[..i] {
            if ra.start_time_unix_s.to_bits() == rb.start_time_unix_s.to_bits()
                && ra.target == rb.target
                && ra.main.histograms == rb.main.histograms
            {
                out.push(format!(
                    "{b} and {a} are the same run (same start, target and histograms): its requests are counted twice"
                ));
            }
        }
    }
    for (label, r) in inputs {
        if crate::books::Books::of(r) == crate::books::Books::LatencyOnly {
            out.push(format!(
                "{label} is an interval log, which holds latencies only: the merged request counts take each \
                 of its latencies as a completed request, and its failures are unknown"
            ));
        }
    }
    // Only runs record a method and a rate; a setting an older file lacks is not compared.
    let run = |r: &RunResults| (r.kind == Kind::Run).then(|| r.run_config()).flatten();
    let checks: [(&str, Setting); 4] = [
        ("targets", Box::new(|r: &RunResults| Some(r.target.clone()))),
        ("modes", Box::new(|r: &RunResults| Some(r.mode.name()))),
        (
            "methods",
            Box::new(move |r: &RunResults| run(r).map(|c| c.method).filter(|m| !m.is_empty())),
        ),
        (
            "rates (-R)",
            Box::new(move |r: &RunResults| {
                run(r).map(|c| {
                    c.rate_per_s
                        .map_or_else(|| "closed loop".into(), candor_core::units::format_rate)
                })
            }),
        ),
    ];
    for (what, value) in checks {
        if let Some(d) = disagreement(inputs, value) {
            out.push(format!(
                "merging runs of different {what}: {d}; the merged percentiles describe none of them"
            ));
        }
    }
    out
}

#[cfg(test)]
#[path = "exact_merge_tests.rs"]
mod tests;
