//! Scale-out simulated on one machine: four `candor run --shard I/4` processes with a common
//! `--start-at` against one stalling server, merged with `candor merge`, must read as the
//! single-process run of the same total rate, and both must match the analytic truth.

mod common;
use common::*;
use std::process::Stdio;

const MS: f64 = 1e6;

fn unix_now_s() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

fn load(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("results written"))
        .expect("valid json")
}

/// A 0.5 s stall every 2 s, 1000 requests/s in total for 8 s (four whole periods), as in
/// e2e_run.rs: truth p90 = 300 ms, p99 = 480 ms, max = 500 ms (docs/truth.md). Run once as four
/// shards of 250/s each (one thread, four connections each: the machine has two cores) and once
/// as one process with the same sixteen connections.
#[test]
fn four_shards_merged_match_one_process_and_the_truth() {
    let _g = serial();
    let server = Server::start(&["--stall-every", "2s", "--stall-for", "500ms"]);
    let dir = std::env::temp_dir().join(format!("candor-e2e-shards-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();

    run_four_shards(&server, &dir);

    let (merged_path, m) = merge_the_shards(&dir);

    let (single, _) = run_json(&[
        "-R",
        "1000",
        "-c",
        "16",
        "-t",
        "2",
        "-d",
        "8s",
        "-T",
        "3s",
        &server.url,
    ]);
    assert_balanced(&single);

    let (am, a1) = assert_the_same_schedule(&m, &single);

    assert_the_intervals_line_up(&m, &dir);

    assert_both_read_the_truth(&m, &single, am, a1);

    assert_the_merged_file_renders(&merged_path);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs four shards of 250/s with a common `--start-at`; each writes `shard-I.json` in `dir`.
fn run_four_shards(server: &Server, dir: &std::path::Path) {
    // 5 s lead: four processes start and connect in tens of ms when idle; a busy machine can make
    // that a second or more, and a late start is reported rather than failed, so be generous.
    let start_at = format!("{:.3}", unix_now_s() + 5.0);
    let shards: Vec<_> = (0..4)
        .map(|i| {
            candor()
                .args(["run", "--shard", &format!("{i}/4"), "--start-at", &start_at])
                .args([
                    "-R", "1000", "-c", "4", "-t", "1", "-d", "8s", "-T", "3s", "--quiet",
                ])
                .arg("--json")
                .arg(dir.join(format!("shard-{i}.json")))
                .arg(&server.url)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn a shard")
        })
        .collect();
    for (i, child) in shards.into_iter().enumerate() {
        let out = child.wait_with_output().expect("shard finished");
        assert!(
            out.status.success(),
            "shard {i} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    for i in 0..4 {
        let s = load(&dir.join(format!("shard-{i}.json")));
        assert_balanced(&s);
        assert_eq!(req(&s, "intended"), 2000, "shard {i}: a quarter of 8000");
        assert_eq!(s["config"]["shard_index"], i);
        assert_eq!(
            s["config"]["late_start_s"], 0.0,
            "shard {i} missed a start 5 s ahead"
        );
    }
}

/// Merges the directory of shards (with objectives, to a file and to stdout); the merged result.
fn merge_the_shards(dir: &std::path::Path) -> (std::path::PathBuf, serde_json::Value) {
    // The directory form: every *.json in it. The SLO is judged on the merged response time
    // (truth p99 = 480 ms).
    let merged_path = dir.join("merged.out");
    let out = candor()
        .arg("merge")
        .arg(dir)
        .arg("-o")
        .arg(&merged_path)
        .args(["--slo", "p99<600ms,errors<0.1%"])
        .output()
        .expect("run candor merge");
    let merge_log = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "candor merge failed: {merge_log}");
    eprint!("{merge_log}");
    assert!(
        merge_log.contains("shard set complete and consistent"),
        "{merge_log}"
    );
    assert!(merge_log.contains("the agreed --start-at"), "{merge_log}");
    assert!(
        merge_log.contains("SLO: all objectives met on the merged result"),
        "{merge_log}"
    );
    let out = candor()
        .arg("merge")
        .arg(dir)
        .args(["-o", "-", "--slo", "p99<100ms"])
        .output()
        .expect("run candor merge");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "a missed SLO exits 3: {err}");
    assert!(err.contains("FAIL"), "{err}");
    let to_stdout: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(to_stdout["kind"], "merged");
    let m = load(&merged_path);
    assert_eq!(m["kind"], "merged");
    assert_balanced(&m);
    assert!(m["config"]["shards"]["problems"]
        .as_array()
        .unwrap()
        .is_empty());
    // Read back through the contract: a merge's sources and its shard report come back typed.
    let typed = candor_core::results::RunResults::from_json(&m.to_string()).unwrap();
    let candor_core::recorded::RecordedConfig::Merged(c) = &typed.config else {
        panic!("a merge's settings read back typed: {:?}", typed.config)
    };
    assert_eq!(c.shards.as_ref().map(|s| s.shards.len()), Some(4));
    assert!(c
        .merged_from
        .iter()
        .all(|s| matches!(s.config, candor_core::recorded::RecordedConfig::Run(_))));
    assert!(typed.main.analysis.is_some());
    assert_eq!(
        serde_json::to_value(&typed).unwrap(),
        m,
        "read and written back unchanged"
    );
    (merged_path, m)
}

/// The merged run and the single process ran the same schedule; their achieved rates.
fn assert_the_same_schedule(m: &serde_json::Value, single: &serde_json::Value) -> (f64, f64) {
    // Same schedule: the union of the shards is the single-process schedule, entry for entry.
    assert_eq!(req(m, "intended"), 8000);
    assert_eq!(req(single, "intended"), 8000);
    assert_eq!(req(m, "completed"), 8000);
    assert_eq!(req(single, "completed"), 8000);
    let achieved = |v: &serde_json::Value| v["rate"]["achieved_per_s"].as_f64().unwrap();
    let (am, a1) = (achieved(m), achieved(single));
    assert!(
        (am - a1).abs() <= 0.02 * a1,
        "achieved rate merged {am:.1}/s vs single {a1:.1}/s"
    );
    assert_eq!(m["rate"]["target_per_s"], 1000.0);
    (am, a1)
}

fn assert_the_intervals_line_up(m: &serde_json::Value, dir: &std::path::Path) {
    // Intervals aligned by absolute time: the shards started together, so each merged interval
    // is one second of all four, and together they hold every completion.
    let intervals = m["intervals"].as_array().unwrap();
    let most = (0..4)
        .map(|i| {
            load(&dir.join(format!("shard-{i}.json")))["intervals"]
                .as_array()
                .unwrap()
                .len()
        })
        .max()
        .unwrap();
    assert_eq!(
        intervals.len(),
        most,
        "intervals of the shards did not line up"
    );
    let sum: u64 = intervals
        .iter()
        .map(|i| i["completed"].as_u64().unwrap())
        .sum();
    assert_eq!(sum, 8000);
    // Each merged interval is exactly the sum of the shards' same interval.
    let shard_intervals: Vec<serde_json::Value> = (0..4)
        .map(|i| load(&dir.join(format!("shard-{i}.json")))["intervals"].clone())
        .collect();
    for (k, merged) in intervals.iter().enumerate() {
        let parts: u64 = shard_intervals
            .iter()
            .map(|iv| iv.get(k).map_or(0, |i| i["completed"].as_u64().unwrap()))
            .sum();
        assert_eq!(
            merged["completed"].as_u64().unwrap(),
            parts,
            "interval {k}: merged completions are the shards' sum"
        );
    }
}

/// Both runs read the truth, and a table of both is printed for the log.
fn assert_both_read_the_truth(m: &serde_json::Value, single: &serde_json::Value, am: f64, a1: f64) {
    // Tolerance as in e2e_run.rs: 40 ms either way for scheduler noise, plus, above the truth only,
    // the drain of the backlog at each stall's end: the request whose stall-only wait is w has
    // 1000/s · (500 ms − w) requests ahead of it leaving 16 at a time (4 per shard at 250/s:
    // the same ratio), one round (about a service time) apart.
    let tol = 40.0 * MS;
    let drain = |v: &serde_json::Value, truth: f64| {
        (1000.0 * (500.0 * MS - truth) / 1e9 / 16.0).ceil() * pct(v, "service_time", 90.0)
    };
    eprintln!("| percentile | truth | 4 shards merged | 1 process |");
    eprintln!("|---|---|---|---|");
    for (p, truth) in [
        (90.0, 300.0 * MS),
        (99.0, 480.0 * MS),
        (99.9, 498.0 * MS),
        (100.0, 500.0 * MS),
    ] {
        let (gm, g1) = (pct(m, "response_time", p), pct(single, "response_time", p));
        eprintln!(
            "| p{p} | {:.1} ms | {:.1} ms | {:.1} ms |",
            truth / MS,
            gm / MS,
            g1 / MS
        );
        for (what, got, v) in [("merged", gm, &m), ("single", g1, &single)] {
            assert!(
                got >= truth - tol && got <= truth + tol + drain(v, truth),
                "{what} response time p{p}: {:.1} ms, truth {:.1} ms",
                got / MS,
                truth / MS
            );
        }
    }
    eprintln!(
        "| p50 | service time | {:.3} ms | {:.3} ms |",
        pct(m, "response_time", 50.0) / MS,
        pct(single, "response_time", 50.0) / MS
    );
    eprintln!(
        "| intended | 8000 | {} | {} |",
        req(m, "intended"),
        req(single, "intended")
    );
    eprintln!("| achieved | 1000/s | {am:.1}/s | {a1:.1}/s |");
    eprintln!(
        "| send lag p99 | | {:.1} ms | {:.1} ms |",
        pct(m, "send_lag", 99.0) / MS,
        pct(single, "send_lag", 99.0) / MS
    );
    eprintln!(
        "| generator_late | 0 | {} | {} |",
        req(m, "generator_late"),
        req(single, "generator_late")
    );
}

fn assert_the_merged_file_renders(merged_path: &std::path::Path) {
    // The merged file renders like any run.
    let out = candor()
        .arg("report")
        .arg(merged_path)
        .output()
        .expect("run candor report");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("4 threads, 16 connections"), "{text}");
    assert!(text.contains("target 1.00k/s"), "{text}");
}

/// The log collection path of `candor k8s`, run locally: each shard runs under the pod's own
/// shell step (taken from the generated manifest), its combined output is the "pod log", and
/// `candor merge` reads the logs. Shard 1 of 3 is left out: the merge must say so.
#[test]
fn pod_logs_merge_and_an_incomplete_set_is_named() {
    let _g = serial();
    let server = Server::start(&[]);
    let dir = std::env::temp_dir().join(format!("candor-e2e-podlogs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let start_at = format!("{:.3}", unix_now_s() + 1.0);
    let out = candor()
        .args([
            "k8s",
            "--shards",
            "3",
            "--image",
            "candor:test",
            "--format",
            "json",
        ])
        .args([
            "--start-at",
            &start_at,
            "--",
            "-R",
            "300",
            "-d",
            "1s",
            "-c",
            "2",
            "-t",
            "1",
        ])
        .arg(&server.url)
        .output()
        .expect("candor k8s");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let job: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let c = &job["spec"]["template"]["spec"]["containers"][0];
    let command: Vec<String> = serde_json::from_value(c["command"].clone()).unwrap();
    let args: Vec<String> = serde_json::from_value(c["args"].clone()).unwrap();
    let children: Vec<_> = [0, 2]
        .iter()
        .map(|i| {
            // What the kubelet does: $(VAR) in args expanded from the env, then command + args.
            let results = dir.join(format!("shard-{i}.json"));
            let expanded: Vec<String> = args
                .iter()
                .map(|a| {
                    a.replace("$(JOB_COMPLETION_INDEX)", &i.to_string())
                        .replace("$(CANDOR_RESULTS)", results.to_str().unwrap())
                })
                .collect();
            assert_eq!(expanded[0], "candor");
            std::process::Command::new(&command[0])
                .args(&command[1..])
                .arg(env!("CARGO_BIN_EXE_candor"))
                .args(&expanded[1..])
                .env("CANDOR_RESULTS", &results)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn the pod step")
        })
        .collect();
    let mut logs = Vec::new();
    for (i, child) in [0, 2].iter().zip(children) {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let log = dir.join(format!("candor-load-{i}-abcde.log"));
        let mut text = out.stdout.clone();
        text.extend_from_slice(&out.stderr);
        std::fs::write(&log, text).unwrap();
        // Only the log is left to collect from.
        std::fs::remove_file(dir.join(format!("shard-{i}.json"))).unwrap();
        logs.push(log);
    }
    let merged = dir.join("merged.json");
    let out = candor()
        .arg("merge")
        .args(&logs)
        .arg("-o")
        .arg(&merged)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("shard is 1 of 3 missing"), "{err}");
    let m = load(&merged);
    assert_balanced(&m);
    assert_eq!(req(&m, "intended"), 200, "two thirds of 300/s for 1 s");
    assert!(m["warnings"][0]
        .as_str()
        .unwrap()
        .starts_with("inconsistent shard set: shard is 1 of 3 missing"));

    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let out = candor()
        .arg("merge")
        .arg(&empty)
        .args(["-o", "-"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("has no *.json results to merge"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
