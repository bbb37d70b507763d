//! The results as candor's JSON model: written, read back by candor-core's reader, with the
//! harness's mapping (end to end = response_time, probes in `extra`, one interval per phase).

use candor_core::results::RunResults;
use candor_harness::{Harness, HarnessError, Iteration, ManualClock};

fn results() -> candor_harness::HarnessResults {
    let clock = ManualClock::new(1_000);
    let mut b = Harness::builder()
        .name("json test")
        .throughput(100_000)
        .warmup_iterations(50)
        .iterations(1_000)
        .runs(3)
        .record_os_jitter(false)
        .print(false);
    let probe = b.add_probe("half");
    let mut h = b.build().unwrap();
    h.run_with_clock(&clock, |ctx: &mut Iteration| {
        clock.advance(2_000);
        ctx.sample(probe, 1_000);
    })
}

#[test]
fn json_round_trips_with_the_harness_mapping() {
    let r = results();
    let path = std::env::temp_dir().join(format!("candor-harness-{}.json", std::process::id()));
    r.write_json(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    let back = RunResults::from_json(&text).unwrap();
    assert_eq!(back.kind, "harness");
    assert_eq!(back.mode, "open-loop");
    assert_eq!(back.target, "json test");
    assert_eq!(back.main.response_time.count, 3_000);
    assert_eq!(back.main.service_time.count, 3_000);
    assert_eq!(back.main.send_lag.count, 3_000);
    // Every iteration takes 2 us of (manual) time at 10 us spacing: never late.
    assert_eq!(back.main.response_time.max_ns, 2_000);
    assert_eq!(back.main.send_lag.max_ns, 1);
    assert!(back.main.requests.balanced());
    assert_eq!(back.main.requests.intended, 3_000);
    assert_eq!(
        back.warmup.as_ref().map(|w| w.response_time.count),
        Some(50)
    );
    assert_eq!(back.intervals.len(), 4);
    assert!(back.intervals[0].warmup && !back.intervals[1].warmup);
    assert_eq!(back.extra.len(), 2);
    assert_eq!(back.extra[0].name, "half");
    assert_eq!(back.extra[0].summary.count, 3_000);
    assert_eq!(back.extra[1].name, "wait_stalls");
    let candor_core::recorded::RecordedConfig::Harness(config) = &back.config else {
        panic!("harness settings read back typed: {:?}", back.config)
    };
    assert_eq!(config.harness["iterations"], 1_000);
    assert_eq!(config.summaries[0]["name"], "end to end");
    let decoded = back.main.histograms.decode().unwrap();
    assert_eq!(decoded.response.len(), 3_000);
    // The three measured runs are repeats, each whole (issue 23): what `candor compare` reads
    // to compare two sessions across runs.
    assert_eq!(back.repeats.len(), 3);
    for rep in &back.repeats {
        assert_eq!(rep.main.response_time.count, 1_000);
        assert!(rep.main.requests.balanced() && rep.warmup.is_none());
        assert_eq!(rep.intervals.len(), 1);
        assert!(rep.repeats.is_empty());
    }
}

/// A session whose iterations take `work_ns` of manual time each, with a run-to-run wobble.
fn session(work_ns: u64) -> candor_harness::HarnessResults {
    let clock = ManualClock::new(1_000);
    let mut h = Harness::builder()
        .throughput(10_000)
        .warmup_iterations(10)
        .iterations(1_200)
        .runs(3)
        .record_os_jitter(false)
        .print(false)
        .build()
        .unwrap();
    let mut i = 0u64;
    h.run_with_clock(&clock, |_: &mut Iteration| {
        // Each stretch of about a run moves the level by 0-2%: run-to-run variation.
        i += 1;
        clock.advance(work_ns + work_ns * (i / 1_210 % 3) / 100 + i % 7 * 10);
    })
}

#[test]
fn sessions_are_compared_across_their_runs() {
    use candor_harness::Verdict;
    let base = session(20_000);
    let same = session(20_000);
    let slow = session(26_000);
    let c = same.compare_sessions(&base, &[50.0, 90.0], 0.02);
    assert_eq!(c.method, candor_harness::Method::AcrossRuns);
    assert!(c.rows.iter().all(|r| r.verdict == Verdict::Same), "{c:?}");
    let c = slow.compare_sessions(&base, &[50.0, 90.0], 0.02);
    assert!(c.rows.iter().all(|r| r.verdict == Verdict::Slower), "{c:?}");
    let back = base.compare_sessions(&slow, &[50.0], 0.02);
    assert_eq!(back.rows[0].verdict, Verdict::Faster);
}

#[test]
fn unwritable_path_is_an_error_not_a_panic() {
    let r = results();
    let err = r
        .write_json("/nonexistent-dir/for/sure/out.json")
        .unwrap_err();
    assert!(matches!(err, HarnessError::Write { .. }));
    assert!(err.to_string().contains("/nonexistent-dir"), "{err}");
}

#[test]
fn bad_settings_are_errors() {
    assert!(matches!(
        Harness::builder().throughput(0).build(),
        Err(HarnessError::Throughput(_))
    ));
    assert!(Harness::builder().throughput_f64(f64::NAN).build().is_err());
    assert!(Harness::builder().iterations(0).build().is_err());
    assert!(Harness::builder().runs(0).build().is_err());
    let mut b = Harness::builder();
    b.add_probe("x");
    b.add_probe("x");
    assert!(matches!(b.build(), Err(HarnessError::ProbeName(_))));
}

#[test]
fn text_report_has_jlbh_shape() {
    let r = results();
    let t = r.text();
    assert!(t.contains("Warm up complete (50 iterations took"), "{t}");
    assert!(t.contains("BENCHMARK RESULTS (RUN 3) us"), "{t}");
    // The .name() given to the builder labels every run block and the summary.
    assert_eq!(t.matches("Benchmark: json test\n").count(), 3, "{t}");
    assert!(t.contains("Summary of json test over 3 runs"), "{t}");
    assert!(t.contains("Correcting for co-ordinated:true"), "{t}");
    assert!(
        t.contains("Target throughput:100000/s = 1 message every 10us"),
        "{t}"
    );
    assert!(t.contains("End to End: (1,000)"), "{t}");
    assert!(
        t.contains("50/90 99 - worst was 2.0 / 2.0  2.0 - 2.0"),
        "{t}"
    );
    assert!(t.contains("SUMMARY (end to end) us"), "{t}");
    assert!(t.contains("SUMMARY (half) us"), "{t}");
    assert!(t.contains("worst:"), "{t}");
    assert!(t.contains("over runs 2..3"), "{t}");
}

#[test]
fn hlog_and_html_exports_share_candor_runs_formats() {
    let r = results();
    let dir = std::env::temp_dir().join(format!("candor-harness-exports-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (hlog, html) = (dir.join("h.hlog"), dir.join("h.html"));
    r.write_hlog(&hlog).unwrap();
    r.write_html(&html, "json test").unwrap();
    let log_text = std::fs::read_to_string(&hlog).unwrap();
    let page = std::fs::read_to_string(&html).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    // The log's untagged (end-to-end) intervals add up to the measured iterations: 3 runs of
    // 1,000 (the warm-up interval is left out of the log, as for `candor run`).
    let log = candor_report::hlog::read_hlog(&log_text, &Default::default()).unwrap();
    let total: u64 = log
        .intervals
        .iter()
        .filter(|i| i.tag.is_none())
        .map(|i| i.histogram.len())
        .sum();
    assert_eq!(total, 3_000);
    assert!(page.contains("<html") && page.contains("json test"));
}
