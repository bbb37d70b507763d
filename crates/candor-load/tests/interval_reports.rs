//! The interval reports add up to the run's outcome: their phase totals grow monotonically to the
//! final counts, and their histograms hold every recorded value exactly once (the live view
//! builds its cumulative numbers from them).

use candor_core::results::RequestCounts;
use candor_load::load_run::RunOptions;
use candor_load::{RunPlan, Target};

fn grew(before: &RequestCounts, after: &RequestCounts) -> bool {
    after.intended >= before.intended
        && after.completed >= before.completed
        && after.failed >= before.failed
        && after.errors.total() >= before.errors.total()
        && after.generator_late >= before.generator_late
}

/// A local server, and an open loop of 1000/s against it.
fn server_and_open_loop() -> (candor_serve::ServerHandle, RunPlan) {
    let server = candor_serve::start(candor_serve::ServeConfig::new(
        "127.0.0.1:0".parse().unwrap(),
    ))
    .unwrap();
    let mut config = candor_load::RunPlan::new(
        Target::parse(&format!("http://{}/", server.local_addr())).unwrap(),
        Default::default(),
    )
    .unwrap();
    config.shape = candor_load::LoadShape::constant(1000.0);
    (server, config)
}

#[test]
fn interval_reports_add_up_to_the_outcome() {
    let (server, mut config) = server_and_open_loop();
    config.connections = 4;
    config.threads = 2;
    config.warmup_ns = 1_000_000_000;
    config.duration_ns = 2_000_000_000;
    config.validate().unwrap();
    let mut totals: Vec<[RequestCounts; 2]> = Vec::new();
    let mut recorded = 0u64;
    let mut per_interval_completed = 0u64;
    let caller = std::thread::current().id();
    let background_allowed = std::thread::spawn(candor_load::priority::lower_to_background)
        .join()
        .unwrap();
    let outcome = candor_load::run(&config, RunOptions::default(), &mut |r| {
        // Reported by the background collector while the workers run, or by the caller's
        // thread once they have ended; in an open loop, the collector never at the load
        // threads' priority.
        let on_collector = std::thread::current().name() == Some("candor-collect");
        assert!(on_collector || std::thread::current().id() == caller);
        // (Where the policy is refused, as some sandboxes do, the collector keeps its priority.)
        if background_allowed {
            assert_eq!(candor_load::priority::is_background(), on_collector);
        }
        totals.push(r.totals);
        recorded += r.histograms.response.len();
        assert_eq!(r.histograms.response.len(), r.response_time.count);
        assert_eq!(r.histograms.service.len(), r.service_time.count);
        assert_eq!(r.histograms.send_lag.len(), r.send_lag.count);
        per_interval_completed += r.completed;
    })
    .unwrap();
    server.shutdown();
    assert!(totals.len() >= 3, "{} reports", totals.len());
    for w in totals.windows(2) {
        assert!(grew(&w[0][0], &w[1][0]) && grew(&w[0][1], &w[1][1]));
    }
    let last = totals.last().unwrap();
    let warm = outcome.warmup.as_ref().unwrap();
    let main = &outcome.main;
    // Completions and failures are counted in the interval they happen in, so the last report
    // has them all; only the never-sent backlog is counted after it, in the outcome.
    assert_eq!(last[0].completed, warm.counts.completed);
    assert_eq!(last[1].completed, main.counts.completed);
    assert_eq!(last[1].failed, main.counts.failed);
    assert!(last[1].intended <= main.counts.intended);
    assert_eq!(
        per_interval_completed,
        warm.counts.completed + main.counts.completed
    );
    assert!(main.counts.completed > 1000, "{}", main.counts.completed);
    // Every recorded response time is in exactly one interval.
    assert_eq!(
        recorded,
        warm.recorder.response.len() + main.recorder.response.len()
    );
}

/// A panic in the interval callback ends the run promptly (the workers are stopped, nothing
/// waits on a full queue) and reaches the caller, as a panic of the caller's own code would.
#[test]
fn a_panicking_interval_callback_stops_the_run_and_reaches_the_caller() {
    let (server, mut config) = server_and_open_loop();
    config.connections = 2;
    config.threads = 1;
    // Far longer than the test waits: only a stopped run returns in time.
    config.duration_ns = 600_000_000_000;
    config.validate().unwrap();
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let outcome = std::panic::catch_unwind(|| {
            candor_load::run(&config, RunOptions::default(), &mut |_| {
                panic!("the callback's own bug")
            })
        });
        let _ = done.send(outcome.is_err());
    });
    // The first interval ends after 1 s; the stop is seen within a loop turn of the workers. 60 s
    // is generous for a machine shared with other builds.
    let panicked = finished
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("the run ended");
    assert!(panicked);
    server.shutdown();
}

/// An LLM run's streams per interval, merged across threads by the collector: every TTFT, ITL and
/// TPOT sample and every output token is in exactly one interval (warm-up and measured window
/// together, as the intervals are by completion time).
#[test]
fn an_llm_runs_stream_measures_and_tokens_are_in_exactly_one_interval() {
    let mut serve = candor_serve::llm::LlmConfig::new("127.0.0.1:0".parse().unwrap());
    serve.ttft_ns = 5_000_000;
    serve.itl_ns = 1_000_000;
    serve.output_tokens = 4;
    let server = candor_serve::llm::start(serve).unwrap();
    let plan = candor_runner::llm_demo::LlmDemoPlan {
        duration_ns: 2_000_000_000,
        every_ns: 1,
        for_ns: 0,
        rate: 100.0,
        ttft_ns: 5_000_000,
        itl_ns: 1_000_000,
        output_tokens: 4,
    };
    let mut config = candor_runner::llm_demo::llm_config(
        &format!("http://{}/", server.local_addr()),
        &plan,
        candor_load::schedule::ArrivalKind::Constant,
        8,
    )
    .unwrap();
    config.threads = 2;
    config.warmup_ns = 500_000_000;
    config.validate().unwrap();
    let (mut ttft, mut itl, mut tpot, mut tokens, mut reports) = (0, 0, 0, 0, 0);
    let outcome = candor_load::run(&config, RunOptions::default(), &mut |r| {
        let s = r.stream.expect("an LLM run's reports carry its streams");
        ttft += s.ttft.len();
        itl += s.itl.len();
        tpot += s.tpot.len();
        tokens += s.output_tokens;
        reports += 1;
    })
    .unwrap();
    server.shutdown();
    let (w, m) = (
        outcome.warmup.as_ref().unwrap().stream.as_ref().unwrap(),
        outcome.main.stream.as_ref().unwrap(),
    );
    assert!(reports >= 3, "{reports} reports");
    assert_eq!(m.ttft.len(), 200, "2 s at 100/s, each with a first token");
    assert_eq!(ttft, w.ttft.len() + m.ttft.len());
    assert_eq!(itl, w.itl.len() + m.itl.len());
    assert_eq!(itl, 3 * ttft, "4 tokens, 3 gaps each");
    assert_eq!(tpot, w.tpot.len() + m.tpot.len());
    assert_eq!(tokens, w.output_tokens + m.output_tokens);
    assert_eq!(tokens, 4 * ttft);
}
