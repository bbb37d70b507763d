//! Tests of merging (`exact_merge.rs`), kept beside it so that neither file runs long.

use super::*;
use crate::synthetic::synthetic_run;

#[test]
fn merge_adds_histograms_and_counts_exactly() {
    let a = synthetic_run(1, 5, 500, 1_000_000, 0);
    let b = synthetic_run(2, 5, 700, 3_000_000, 2);
    let m = merge(&[a.clone(), b.clone()]).unwrap();
    assert_eq!(m.kind, Kind::Merged);
    assert_eq!(
        m.main.response_time.count,
        a.main.response_time.count + b.main.response_time.count
    );
    assert_eq!(
        m.main.requests.completed,
        a.main.requests.completed + b.main.requests.completed
    );
    assert!(m.main.requests.balanced());
    let mut expected = a.main.histograms.decode().unwrap();
    expected.add(&b.main.histograms.decode().unwrap());
    assert_eq!(
        m.main.histograms.decode().unwrap().response,
        expected.response
    );
    assert_eq!(m.main.response_time, Summary::of(&expected.response));
    // b starts 1 s after a (synthetic start = base + seed), so intervals interleave by time.
    assert_eq!(m.intervals.len(), 7);
    let at = |t: f64| {
        m.intervals
            .iter()
            .find(|i| (i.start_s - t).abs() < 1e-9)
            .unwrap()
    };
    assert_eq!(at(0.0).completed, 500);
    assert!(at(0.0).warmup);
    assert_eq!(at(2.0).completed, 1200);
    assert_eq!(at(6.0).completed, 700);
    // Windows [1,6) and [2,7) overlap: union is 6 s.
    assert!(
        (m.main.duration_s - 6.0).abs() < 1e-9,
        "{}",
        m.main.duration_s
    );
}

#[test]
fn merge_as_repeats_keeps_every_run_whole_beside_the_union() {
    let a = synthetic_run(1, 5, 500, 1_000_000, 0);
    let b = synthetic_run(2, 5, 700, 3_000_000, 2);
    let c = synthetic_run(3, 5, 600, 2_000_000, 0);
    let two = merge_as_repeats(&[a.clone(), b.clone()]).unwrap();
    assert_eq!(two.repeats, [a.clone(), b.clone()]);
    // The union is the plain merge's, byte for byte apart from the repeats.
    let mut plain = two.clone();
    plain.repeats.clear();
    assert_eq!(plain, merge(&[a.clone(), b.clone()]).unwrap());
    // A file of repeats contributes its runs, not its union; a plain merge drops them.
    let three = merge_as_repeats(&[two.clone(), c.clone()]).unwrap();
    assert_eq!(three.repeats, [a.clone(), b.clone(), c.clone()]);
    assert_eq!(
        three.main.requests.completed,
        a.main.requests.completed + b.main.requests.completed + c.main.requests.completed
    );
    assert!(merge(&[two, c]).unwrap().repeats.is_empty());
    // Older files have no `repeats`: they read as before, and a single run writes none.
    let json = serde_json::to_value(&a).unwrap();
    assert!(json.get("repeats").is_none());
    let back: RunResults = serde_json::from_value(json).unwrap();
    assert!(back.repeats.is_empty());
    let json = serde_json::to_value(&three).unwrap();
    assert_eq!(json["repeats"].as_array().unwrap().len(), 3);
}

#[test]
fn status_codes_and_connection_faults_add_up_by_key() {
    let mut a = synthetic_run(1, 5, 500, 1_000_000, 0);
    let mut b = synthetic_run(2, 5, 700, 3_000_000, 0);
    let map = |pairs: &[(&str, u64)]| -> std::collections::BTreeMap<String, u64> {
        pairs.iter().map(|(k, n)| (k.to_string(), *n)).collect()
    };
    a.main.status_codes = map(&[("200", 400), ("404", 100)]);
    b.main.status_codes = map(&[("200", 700)]);
    b.main.connection_faults = map(&[("connect refused or failed", 3)]);
    let m = merge(&[a, b]).unwrap();
    assert_eq!(m.main.status_codes, map(&[("200", 1100), ("404", 100)]));
    assert_eq!(
        m.main.connection_faults,
        map(&[("connect refused or failed", 3)])
    );
}

#[test]
fn conversations_add_up_and_stay_absent_without_them() {
    use candor_core::results::Conversations;
    let mut a = synthetic_run(1, 5, 500, 1_000_000, 0);
    let mut b = synthetic_run(2, 5, 700, 3_000_000, 0);
    assert_eq!(
        merge(&[a.clone(), b.clone()]).unwrap().main.conversations,
        None
    );
    let c = |started, completed, cut| Conversations {
        started,
        completed,
        cut,
        turns: 3 * started,
        ..Default::default()
    };
    a.main.conversations = Some(c(10, 8, 2));
    b.main.conversations = Some(c(5, 5, 0));
    let m = merge(&[a, b]).unwrap();
    assert_eq!(m.main.conversations, Some(c(15, 13, 2)));
}

#[test]
fn impossible_inputs_and_overflowing_sums_are_refused() {
    let a = synthetic_run(1, 5, 500, 1_000_000, 0);
    let mut b = synthetic_run(2, 5, 700, 3_000_000, 0);
    // A completed count near 2^64 wrapped to a small number before.
    b.main.requests.completed = u64::MAX - 100;
    b.main.requests.intended = u64::MAX - 100;
    let e = merge(&[a.clone(), b]).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("run 2: impossible results: main.requests.completed"),
        "{e}"
    );
    // Books that do not balance.
    let mut b = synthetic_run(2, 5, 700, 3_000_000, 0);
    b.main.requests.intended = 7;
    assert!(matches!(
        merge(&[a.clone(), b]),
        Err(MergeError::Impossible { index: 2, .. })
    ));
    // Each file in range, the sum not: bytes are bounded by 64 bits only.
    let mut b = synthetic_run(2, 5, 700, 3_000_000, 0);
    b.main.requests.bytes_written = u64::MAX - 1;
    let e = merge(&[a, b]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "merging overflows: the sum of requests.bytes_written over the inputs exceeds 2^64"
    );
}

#[test]
fn merging_the_same_run_twice_or_unlike_runs_is_named() {
    let mut a = synthetic_run(1, 5, 500, 1_000_000, 0);
    a.config = candor_core::results::RunConfig {
        rate_per_s: Some(500.0),
        method: "GET".into(),
        ..Default::default()
    }
    .into();
    let mut b = synthetic_run(2, 5, 500, 1_000_000, 0);
    b.config = a.config.clone();
    let like = [
        ("a.json".to_string(), a.clone()),
        ("b.json".to_string(), b.clone()),
    ];
    assert!(mismatches(&like).is_empty(), "{:?}", mismatches(&like));
    let mut log = b.clone();
    log.kind = Kind::Hlog;
    let m = mismatches(&[
        ("a.json".to_string(), a.clone()),
        ("b.hlog".to_string(), log),
    ]);
    assert!(
        m[0].starts_with("b.hlog is an interval log, which holds latencies only"),
        "{m:?}"
    );
    let twice = [
        ("a.json".to_string(), a.clone()),
        ("copy.json".to_string(), a.clone()),
    ];
    assert_eq!(
        mismatches(&twice),
        ["a.json and copy.json are the same run (same start, target and histograms): its requests are counted twice"]
    );
    let mut c = b.clone();
    c.target = "http://elsewhere/".into();
    c.config = candor_core::results::RunConfig {
        rate_per_s: Some(2000.0),
        method: "POST".into(),
        ..Default::default()
    }
    .into();
    let m = mismatches(&[("a.json".to_string(), a), ("c.json".to_string(), c)]);
    assert_eq!(m.len(), 3, "{m:?}");
    assert!(
        m[0].starts_with("merging runs of different targets: "),
        "{m:?}"
    );
    assert!(m[0].contains("http://elsewhere/ in c.json"), "{m:?}");
    assert!(m[1].contains("GET in a.json; POST in c.json"), "{m:?}");
    assert!(
        m[2].contains("500.0/s in a.json; 2.00k/s in c.json"),
        "{m:?}"
    );
}

#[test]
fn merging_one_run_keeps_its_numbers() {
    let a = synthetic_run(3, 4, 300, 2_000_000, 0);
    let m = merge(std::slice::from_ref(&a)).unwrap();
    assert_eq!(m.main.response_time, a.main.response_time);
    assert_eq!(m.main.histograms, a.main.histograms);
    assert_eq!(m.intervals.len(), a.intervals.len());
    assert!(matches!(merge(&[]), Err(MergeError::Empty)));
}

#[test]
fn merged_failure_examples_are_the_earliest_of_the_union_on_the_merged_clock() {
    use candor_core::workload_results::{FailedCheck, FailureExample, FAILURE_EXAMPLES};
    let example = |seq: u64, t: f64| {
        FailureExample::new("GET /".into(), seq, t, 503, FailedCheck::Status, Some(b"x"))
    };
    let mut a = synthetic_run(3, 4, 300, 2_000_000, 0);
    let mut b = synthetic_run(4, 4, 300, 2_000_000, 0);
    assert_eq!(b.start_time_unix_s - a.start_time_unix_s, 1.0);
    // a's failures at 0.5 s and later; b's (which started 1 s later) at 1.2 s on a's clock.
    a.workload.failure_examples = (0..5).map(|k| example(2 * k, 0.5 + k as f64)).collect();
    b.workload.failure_examples = vec![example(1, 0.2)];
    let m = merge(&[a, b]).unwrap();
    let kept: Vec<(u64, f64)> = m
        .workload
        .failure_examples
        .iter()
        .map(|e| (e.seq, e.intended_s))
        .collect();
    assert_eq!(kept.len(), FAILURE_EXAMPLES);
    assert_eq!(
        kept.iter().map(|k| k.0).collect::<Vec<_>>(),
        vec![0, 1, 2, 4, 6]
    );
    // Unix seconds near 1.8e9 carry about 2.4e-7 s of f64 resolution.
    assert!((kept[1].1 - 1.2).abs() < 1e-6, "{kept:?}");
}

/// The stages and names of `runs`' merge, with each input's decoded histograms added.
fn added(parts: &[&PhaseResults]) -> Recorder {
    let mut rec = Recorder::new();
    for p in parts {
        rec.add(&p.histograms.decode().unwrap());
    }
    rec
}

#[test]
fn stages_merge_by_index_and_names_by_key_with_histograms_added() {
    use crate::synthetic::synthetic_workload_run;
    let a = synthetic_workload_run(1, 400, &["home", "user"]);
    let mut b = synthetic_workload_run(2, 400, &["home", "search"]);
    // Two shards of one schedule run together: the same window.
    b.start_time_unix_s = a.start_time_unix_s;
    let m = merge(&[a.clone(), b.clone()]).unwrap();
    assert_eq!(m.workload.stages.len(), 2);
    for (k, s) in m.workload.stages.iter().enumerate() {
        let (sa, sb) = (&a.workload.stages[k], &b.workload.stages[k]);
        let q = &s.results.requests;
        assert_eq!(
            q.intended,
            sa.results.requests.intended + sb.results.requests.intended
        );
        assert_eq!(
            q.failed,
            sa.results.requests.failed + sb.results.requests.failed
        );
        assert!(q.balanced());
        let expected = added(&[&sa.results, &sb.results]);
        assert_eq!(
            s.results.histograms.decode().unwrap().response,
            expected.response
        );
        assert_eq!(s.results.response_time, Summary::of(&expected.response));
        assert_eq!(s.results.send_lag, Summary::of(&expected.send_lag));
        // Run together, the stage keeps its window and the rates add.
        assert_eq!(s.start_s, sa.start_s);
        assert!((s.results.duration_s - sa.results.duration_s).abs() < 1e-9);
        assert!(
            (s.from_per_s - 2.0 * sa.from_per_s).abs() < 1e-6,
            "{}",
            s.from_per_s
        );
        assert!(
            (s.to_per_s - 2.0 * sa.to_per_s).abs() < 1e-6,
            "{}",
            s.to_per_s
        );
        let achieved = q.responses() as f64 / s.results.duration_s;
        assert!((s.results.rate.achieved_per_s - achieved).abs() < 1e-9);
    }
    // Names: the union; a name in both runs adds, a name in one keeps its books.
    let names: Vec<&str> = m.workload.by_request.keys().map(|k| k.as_str()).collect();
    assert_eq!(names, ["home", "search", "user"]);
    let home = &m.workload.by_request["home"];
    let (ha, hb) = (
        &a.workload.by_request["home"],
        &b.workload.by_request["home"],
    );
    assert_eq!(
        home.requests.completed,
        ha.requests.completed + hb.requests.completed
    );
    let expected = added(&[ha, hb]);
    assert_eq!(home.histograms.decode().unwrap().service, expected.service);
    assert_eq!(home.response_time, Summary::of(&expected.response));
    assert!(
        (home.rate.achieved_per_s - home.requests.responses() as f64 / m.main.duration_s).abs()
            < 1e-9
    );
    assert_eq!(
        m.workload.by_request["user"].requests,
        a.workload.by_request["user"].requests
    );
    // Through JSON and back, as `candor merge` writes it.
    let back = RunResults::from_json(&m.to_json_pretty()).unwrap();
    for (x, y) in back.workload.stages.iter().zip(&m.workload.stages) {
        assert!(
            x.results.requests == y.results.requests
                && x.results.histograms == y.results.histograms
        );
    }
    assert!(back
        .workload
        .by_request
        .keys()
        .eq(m.workload.by_request.keys()));
}

#[test]
fn repeats_of_a_profile_keep_one_runs_rates() {
    use crate::synthetic::synthetic_workload_run;
    let a = synthetic_workload_run(1, 400, &["home"]);
    let mut b = synthetic_workload_run(2, 400, &["home"]);
    b.start_time_unix_s = a.start_time_unix_s + 100.0;
    let m = merge(&[a.clone(), b]).unwrap();
    let s = &m.workload.stages[0];
    // Two 2 s windows one after the other: 4 s at one run's rate.
    assert!((s.results.duration_s - 4.0).abs() < 1e-9);
    assert!((s.from_per_s - 400.0).abs() < 1e-9);
    assert_eq!(
        s.results.requests.intended,
        2 * a.workload.stages[0].results.requests.intended
    );
}

#[test]
fn runs_of_different_profiles_are_refused_in_one_line() {
    use crate::synthetic::synthetic_workload_run;
    let a = synthetic_workload_run(1, 400, &["home"]);
    let mut b = synthetic_workload_run(2, 400, &["home"]);
    b.workload.stages[1].to_per_s = 1000.0;
    let e = merge(&[a.clone(), b]).unwrap_err().to_string();
    assert_eq!(
        e,
        "run 2 has other load-profile stages than run 1 (stage 2 is 400.0/s..1.00k/s for 3.000s \
         from 2.000s, not 400.0/s..800.0/s for 3.000s from 2.000s): only runs of one profile \
         merge stage by stage"
    );
    assert!(!e.contains('\n'));
    let plain = synthetic_run(3, 5, 400, 1_000_000, 0);
    let e = merge(&[a.clone(), plain]).unwrap_err().to_string();
    assert!(
        e.starts_with("run 2 has other load-profile stages than run 1 (0 stages, not 2)"),
        "{e}"
    );
    // Runs without stages merge as before.
    let m = merge(&[
        synthetic_run(3, 5, 400, 1_000_000, 0),
        synthetic_run(4, 5, 400, 1_000_000, 0),
    ])
    .unwrap();
    assert!(m.workload.is_empty());
}

#[test]
fn impossible_stage_books_are_refused() {
    use crate::synthetic::synthetic_workload_run;
    let a = synthetic_workload_run(1, 400, &["home"]);
    let mut b = synthetic_workload_run(2, 400, &["home"]);
    b.workload.stages[0].results.requests.intended += 1;
    assert!(matches!(
        merge(&[a, b]),
        Err(MergeError::Impossible { index: 2, .. })
    ));
}
