//! Proves that the load threads allocate nothing per request in steady state: a counting global
//! allocator counts allocations made on threads marked by the engine's worker start hook, and the
//! count must not move between two interval reports well inside a run of thousands of requests.
//! The engine core is also driven alone on simulated time (no sockets), so that its own
//! per-request path is checked apart from any transport.

mod steady_state;

use candor_load::config::RequestOrder;
use candor_load::engine::core::{Core, CoreConfig, HaltState, Plan, TimeoutScope};
use candor_load::engine::ledger::Ledger;
use candor_load::schedule::{ArrivalKind, Schedule};
use candor_load::shared::{IntervalData, WorkerSetup};
use candor_load::{RunPlan, Target};
use std::collections::VecDeque;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

/// The marked-allocation count is one for the whole process: the tests take turns.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

#[global_allocator]
static ALLOCATOR: candor_testkit::CountingAllocator = candor_testkit::CountingAllocator;

fn steady_state_allocations(rate: Option<f64>) -> (u64, u64) {
    steady_state_allocations_with(rate, |_| {})
}

fn steady_state_allocations_with(
    rate: Option<f64>,
    shape: impl FnOnce(&mut RunPlan),
) -> (u64, u64) {
    let (allocations, outcome) = steady_state_run(rate, shape);
    (allocations, outcome.main.counts.completed)
}

/// The marked allocations between the reports of intervals 1 and 3 of a run, and its outcome.
fn steady_state_run(
    rate: Option<f64>,
    shape: impl FnOnce(&mut RunPlan),
) -> (u64, candor_load::RunOutcome) {
    let server = candor_serve::start(candor_serve::ServeConfig::new(
        "127.0.0.1:0".parse().unwrap(),
    ))
    .unwrap();
    let mut config = candor_load::RunPlan::new(
        Target::parse(&format!("http://{}/", server.local_addr())).unwrap(),
        Default::default(),
    )
    .unwrap();
    config.shape = rate.map_or(
        candor_load::LoadShape::ClosedLoop,
        candor_load::LoadShape::constant,
    );
    config.connections = 8;
    config.threads = 2;
    shape(&mut config);
    let (allocations, outcome) = steady_state::steady_state_allocations(config);
    server.shutdown();
    (allocations, outcome)
}

/// Failing responses too: every response fails (one request line by its status, the other by
/// its body check), so each one's body is excerpted and offered to the kept failures.
#[test]
fn failing_responses_do_not_allocate_per_request() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (allocs, outcome) = steady_state_run(Some(5000.0), |c| {
        let lines = candor_load::requests::parse_request_lines(
            "{\"name\": \"s\", \"path\": \"/s\", \"check_status\": \"5xx\"}\n{\"name\": \"b\", \"path\": \"/b\", \"check_body\": \"nope\"}",
        )
        .unwrap();
        c.requests = lines.iter().map(|l| l.spec.clone()).collect();
        c.workload.lines = lines;
    });
    let e = &outcome.main.counts.errors;
    assert!(e.status >= 7_000 && e.check >= 7_000, "{e:?}");
    assert_eq!(outcome.main.counts.completed, 0);
    assert_eq!(outcome.main.failures.sorted().len(), 5);
    assert_eq!(
        allocs, 0,
        "runs of failing responses allocated {allocs} times in steady state"
    );
}

/// The workload paths too: a load profile (stages' books), weighted named requests filled from
/// templates and data (per-name books, per-slot fill buffers) and body and header checks.
#[test]
fn workloads_do_not_allocate_per_request() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (allocs, done) = steady_state_allocations_with(Some(5000.0), |c| {
        use candor_load::workload::check::{BodyNeedle, HeaderCheck};
        let profile =
            candor_load::workload::profile::Profile::parse("4000:2s,4000..6000:2s,6000:1s")
                .unwrap();
        c.duration_ns = profile.duration_ns();
        c.shape = candor_load::LoadShape::Stages {
            profile,
            arrival: candor_load::Arrival::Constant,
        };
        let lines = candor_load::requests::parse_request_lines(
            "{\"name\": \"a\", \"path\": \"/a/{{seq}}?u={{data:user}}\", \"weight\": 3}\n{\"name\": \"b\", \"path\": \"/b/{{uuid}}\", \"headers\": {\"X-R\": \"{{random:1:99}}\"}, \"weight\": 1, \"check_body\": \"o\"}",
        )
        .unwrap();
        c.requests = lines.iter().map(|l| l.spec.clone()).collect();
        c.workload.lines = lines;
        c.workload.data = Some(Arc::new(
            candor_load::workload::data::DataTable::parse(b"user\nalice\n\"bob, jr\"\n", "u.csv")
                .unwrap(),
        ));
        c.workload.checks.body = Some(BodyNeedle::new(b"ok").unwrap());
        c.workload.checks.headers = vec![HeaderCheck::parse("Content-Length: 2").unwrap()];
    });
    assert!(done >= 15_000, "completed only {done}");
    assert_eq!(
        allocs, 0,
        "workload runs allocated {allocs} times in steady state"
    );
}

/// `--records` too: each booked request's record goes to the preallocated queue, and the
/// file ends with a line per intended request (none dropped at this rate).
#[test]
fn records_do_not_allocate_per_request() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let path = std::env::temp_dir().join(format!("candor-no-alloc-{}.jsonl", std::process::id()));
    let (sink, writer) = candor_load::records::open(&path, Vec::new()).unwrap();
    let (allocs, outcome) = steady_state_run(Some(5000.0), |c| c.records = Some(sink));
    let summary = writer.finish().unwrap();
    let lines = std::fs::read_to_string(&path).unwrap().lines().count() as u64;
    let _ = std::fs::remove_file(&path);
    let intended = outcome.main.counts.intended + outcome.warmup.map_or(0, |w| w.counts.intended);
    assert!(
        outcome.main.counts.completed >= 15_000,
        "{:?}",
        outcome.main.counts
    );
    assert_eq!((summary.written, summary.dropped), (intended, 0));
    assert_eq!(lines, intended);
    assert_eq!(
        allocs, 0,
        "runs with --records allocated {allocs} times in steady state"
    );
}

#[test]
fn load_threads_do_not_allocate_per_request() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (open_allocs, open_done) = steady_state_allocations(Some(5000.0));
    assert!(open_done >= 15_000, "open loop completed only {open_done}");
    assert_eq!(
        open_allocs, 0,
        "open-loop workers allocated {open_allocs} times in steady state"
    );
    let (closed_allocs, closed_done) = steady_state_allocations(None);
    assert!(
        closed_done >= 15_000,
        "closed loop completed only {closed_done}"
    );
    assert_eq!(
        closed_allocs, 0,
        "closed-loop workers allocated {closed_allocs} times in steady state"
    );
}

const MS: u64 = 1_000_000;
const START: u64 = 1_000 * MS;

#[test]
fn the_engine_core_does_not_allocate_per_request_on_simulated_time() {
    let run = core_on_simulated_time(false);
    // Goodput over time: each good response is in the interval it completed in.
    assert_eq!(run.good_in_intervals, 100_000);
    let c = &run.phases[1].counts;
    assert_eq!((c.intended, c.completed), (100_000, 100_000));
    // Every one met the bounds: TTFT 10 us, TPOT 20 us, 50 us end to end.
    let s = run.phases[1].stream.as_ref().unwrap();
    assert_eq!(
        (s.good, s.good_service, s.events),
        (100_000, 100_000, 400_000)
    );
    assert_eq!(
        run.allocations, 0,
        "the core allocated {} times in steady state",
        run.allocations
    );
    // Simulated time outruns the writer: some records and gaps may be dropped, never lost.
    let summary = &run.records;
    assert_eq!(summary.written + summary.dropped, 100_000, "{summary:?}");
    assert_eq!(run.record_lines.len() as u64, summary.written);
    let whole = "\"itl_ns\":[20000],\"event_gaps_ns\":[10000,20000,5000]}";
    assert!(
        run.record_lines.iter().any(|l| l.ends_with(whole)),
        "{}",
        run.record_lines.first().map_or("", |l| l.as_str())
    );
}

/// Multi-turn conversations too: each start's two follow-ups go through the preallocated queue
/// of follow-ups and are taken from it as they fall due.
#[test]
fn conversation_turns_do_not_allocate_per_request_on_simulated_time() {
    let run = core_on_simulated_time(true);
    let c = &run.phases[1].counts;
    let conv = run.phases[1].stream.as_ref().unwrap().conversations;
    // 30,000 starts of 3 turns, the last few cut by the schedule's end.
    assert_eq!((conv.started, conv.cut, conv.unqueued), (30_000, 0, 0));
    assert_eq!(conv.started, conv.completed + conv.past_end);
    assert!(conv.completed > 29_990, "{conv:?}");
    assert_eq!((c.intended, c.completed), (conv.turns, conv.turns));
    assert_eq!(
        run.records.written + run.records.dropped,
        c.intended,
        "{:?}",
        run.records
    );
    assert_eq!(
        run.allocations, 0,
        "the core allocated {} times in steady state",
        run.allocations
    );
}

/// What [`core_on_simulated_time`] saw.
struct SimulatedRun {
    phases: [candor_load::engine::books::PhaseAcc; 2],
    /// Marked allocations between 200 and 800 ms of the 1 s schedule.
    allocations: u64,
    /// Good responses summed over the intervals handed to the collector.
    good_in_intervals: u64,
    records: candor_load::records::RecordsSummary,
    record_lines: Vec<String>,
}

/// The core alone at 100,000 requests a second (or 30,000 conversation starts, `conversational`:
/// of three turns, a think time drawn from 5 to 15 us), with streams' outcomes and gaps, --goodput's judgement,
/// --event-timeout's watch and --records (each request's record and its gaps) on every request.
fn core_on_simulated_time(conversational: bool) -> SimulatedRun {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut config = candor_load::RunPlan::new(
        Target::parse("http://127.0.0.1:1/").unwrap(),
        Default::default(),
    )
    .unwrap();
    config.duration_ns = 1_000 * MS;
    let plan = Arc::new(candor_load::workload::conversation::ConversationPlan::new(
        &[1, 2, 3],
    ));
    if conversational {
        config.conversations = Some(candor_load::ConversationSettings {
            plan: plan.clone(),
            // Drawn per follow-up, so that follow-ups overtake each other in the heap.
            think: "uniform:5us..15us".parse().unwrap(),
            seed: 1,
        });
    }
    // Every response is an LLM stream, judged for --goodput and watched by --event-timeout.
    config.stream.llm = true;
    config.goodput =
        Some(candor_load::stream::goodput::GoodputSlo::parse("ttft<1ms,tpot<1ms,e2el<1s").unwrap());
    let path = std::env::temp_dir().join(format!(
        "candor-no-alloc-sim-{}-{conversational}.jsonl",
        std::process::id()
    ));
    let (sink, writer) = candor_load::records::open(&path, Vec::new()).unwrap();
    config.records = Some(sink);
    // Bounded channels, as the run uses: they hold their slots from the start.
    let (to_collector, intervals) = crossbeam_channel::bounded(16);
    let (to_pool, pool) = crossbeam_channel::bounded(16);
    for _ in 0..3 {
        to_pool
            .send(Box::new(IntervalData::for_streams(true)))
            .unwrap();
    }
    let setup = WorkerSetup {
        requests_are: config.protocol.requests_are(),
        slots: config.protocol.slots(),
        config: Arc::new(config.config),
        requests: Vec::new().into(),
        compiled: None,
        connections: 4,
        start_ns: START,
        schedule: None,
        to_collector,
        pool,
        stop: Arc::new(AtomicBool::new(false)),
        end: Arc::default(),
        on_start: None,
        seq_lane: 0,
        seq_stride: 1,
    };
    let cfg = CoreConfig {
        start_ns: START,
        schedule_end_ns: START + 1_000 * MS,
        drain_ns: 100 * MS,
        timeout_ns: 2_000 * MS,
        event_timeout_ns: 5 * MS,
        stream_timeout_ns: 0,
        connections: 4,
        slots_per_connection: 2,
        timeout_scope: TimeoutScope::Connection,
        request_count: 3,
        request_order: RequestOrder::Random { seed: 1 },
        seq_lane: 0,
        seq_stride: 1,
        follow_ups: usize::from(conversational) * candor_load::engine::core::follow_up_capacity(8),
        think: setup
            .config
            .conversations
            .as_ref()
            .map_or(Default::default(), |c| c.think),
        think_seed: 1,
    };
    // Conversations: 30,000 starts a second make 90,000 turns, about 5 in flight on 8 slots.
    let rate = if conversational { 30_000.0 } else { 100_000.0 };
    let schedule = Schedule::new(START, rate, ArrivalKind::Constant, 0, 1);
    let mut core = Core::new(cfg, Some(schedule), Ledger::new(&setup));
    if conversational {
        core.set_source(Box::new(
            candor_load::workload::conversation::ConversationSource::new(plan, false, 0),
        ));
    }
    // The scripted server answers every request 50 us after it went out, in order.
    let mut answers: VecDeque<(u64, usize)> = VecDeque::with_capacity(1024);
    let (mut before, mut after) = (None, None);
    let mut good_in_intervals = 0;
    let mut now = START - MS;
    candor_testkit::mark_this_thread();
    loop {
        while let Some(&(at, slot)) = answers.front() {
            if at > now {
                break;
            }
            answers.pop_front();
            answer_stream(&mut core, slot, now);
        }
        core.halt(now, HaltState::default());
        core.flush_due(now);
        while let Some(due) = core.next_due(now) {
            core.sent(due.slot, now);
            core.written(due.slot, 100);
            answers.push_back((now + 50_000, due.slot));
        }
        core.scan_timeouts(now, |_| None);
        assert_eq!(
            core.take_stalled(),
            None,
            "no stream waited 5 ms for an event"
        );
        while let Ok(msg) = intervals.try_recv() {
            good_in_intervals += msg.data.stream.as_ref().map_or(0, |s| s.good);
            // Emptied for reuse, as the collector empties them.
            let mut data = msg.data;
            data.reset();
            let _ = to_pool.try_send(data);
        }
        // The window: from 200 ms to 800 ms of the 1 s schedule (60,000 requests).
        if before.is_none() && now >= START + 200 * MS {
            before = Some(candor_testkit::marked_allocations());
        }
        if after.is_none() && now >= START + 800 * MS {
            after = Some(candor_testkit::marked_allocations());
        }
        let Plan::Wait { send_at, wake } = core.plan(now) else {
            break;
        };
        let answer = answers.front().map_or(u64::MAX, |&(at, _)| at);
        now = send_at.min(wake).min(answer).max(now + 1);
    }
    let allocations = after.unwrap() - before.unwrap();
    let phases = core.finish(now, &|| now, &|| false);
    while let Ok(msg) = intervals.try_recv() {
        good_in_intervals += msg.data.stream.as_ref().map_or(0, |s| s.good);
    }
    drop(core);
    let records = writer.finish().unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    SimulatedRun {
        phases,
        allocations,
        good_in_intervals,
        records,
        record_lines: text.lines().map(str::to_string).collect(),
    }
}

/// The scripted server's answer in `slot` at `now`: a stream of four events whose first token
/// came 40 us before the end and its last 20 us after it, then the response's end.
fn answer_stream(core: &mut Core, slot: usize, now: u64) {
    let first = now - 40_000;
    // Three gaps between its four events, one of them between its two tokens.
    let gap = |ns, token| candor_load::stream::tap::Gap { ns, token };
    core.stream_gap(slot, gap(10_000, false));
    core.stream_gap(slot, gap(20_000, false));
    core.stream_gap(slot, gap(20_000, true));
    core.stream_gap(slot, gap(5_000, false));
    core.stream_event(slot, now - 20_000);
    core.stream_outcome(
        slot,
        &candor_load::stream::tap::StreamOutcome {
            events: 4,
            first_event: Some(first),
            first_token: Some(first),
            last_event: Some(now - 20_000),
            last_token: Some(now - 20_000),
            output_tokens: 2,
            input_tokens: Some(3),
            cached_tokens: Some(1),
            counted_tokens: Some(2),
            tokens_from: Some(candor_load::stream::openai::TokenSource::Usage),
            tpot_ns: Some(20_000),
            inputs: 0,
            failure: None,
        },
    );
    core.complete(slot, 200, now);
}
