//! A workload split across shards, end to end against the recording server: stages split with
//! the warm-up holding the first rate, `seq` unique across threads and shards, and the shards of
//! a profile merged stage by stage and reported as HTML.

mod common;
use common::*;
#[path = "../../candor-load/tests/h2_support/mod.rs"]
mod h2_support;
mod support {
    pub mod workload;
}

use support::workload::*;

/// `{{seq}}` is the request's index in the whole schedule: unique across threads and shards,
/// and together the shards send exactly 0..N.
/// Two stages, warm-up at the first stage's rate, and shards: each shard's stages carry half of
/// every stage's integral, and the warm-up is not in any stage.
#[test]
fn stages_split_across_shards_and_the_warm_up_holds_the_first_rate() {
    let _g = serial();
    let server = Recorder::start();
    let mut per_stage = [0u64; 2];
    for shard in ["0/2", "1/2"] {
        let (v, _) = run_json(&[
            "-R",
            "300:1s,300..900:1s",
            "--warmup",
            "500ms",
            "-c",
            "4",
            "--shard",
            shard,
            &server.url,
        ]);
        assert_balanced(&v);
        // Warm-up 300/s for 0.5 s is 150, half each.
        assert_eq!(v["warmup"]["requests"]["intended"].as_u64(), Some(75));
        let stages = v["stages"].as_array().unwrap();
        assert_eq!(
            stages[1]["from_per_s"].as_f64(),
            Some(150.0),
            "a shard's share"
        );
        for (i, s) in stages.iter().enumerate() {
            per_stage[i] += s["requests"]["intended"].as_u64().unwrap();
        }
        assert_eq!(req(&v, "intended"), 450, "300 + 600, half each");
    }
    assert_eq!(per_stage, [300, 600]);
    assert_eq!(server.seen().len(), 150 + 900);
}

#[test]
fn seq_is_unique_across_threads_and_shards() {
    let _g = serial();
    let server = Recorder::start();
    let url = format!("{}/item/{{{{seq}}}}?d={{{{random:1:6}}}}", server.url);
    for shard in ["0/2", "1/2"] {
        let (v, _) = run_json(&[
            "-R", "400", "-d", "1s", "-c", "4", "-t", "2", "--shard", shard, &url,
        ]);
        assert_balanced(&v);
        assert_eq!(req(&v, "completed"), 200, "each shard carries half");
    }
    let mut seqs: Vec<u64> = server
        .seen()
        .iter()
        .map(|(_, line)| {
            let path = line.split(' ').nth(1).unwrap();
            let (seq, dice) = path["/item/".len()..].split_once("?d=").unwrap();
            let dice: u64 = dice.parse().unwrap();
            assert!((1..=6).contains(&dice), "{line}");
            seq.parse().unwrap()
        })
        .collect();
    seqs.sort_unstable();
    assert_eq!(seqs, (0..400).collect::<Vec<u64>>());
}

fn load_json(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("results written")).expect("json")
}

/// A load profile with named requests, run as two shards with a common `--start-at`, reported as
/// HTML and merged: the merged stages are each the sum of the shards' (so each stage's integral,
/// at the whole profile's rates), the names add up, and the pages show stages and names; a file
/// of another profile is refused in one line.
#[test]
fn shards_of_a_profile_merge_stage_by_stage_and_report_as_html() {
    let _g = serial();
    let server = Recorder::start();
    let reqs = temp_file(
        "named.jsonl",
        "{\"name\": \"home\", \"path\": \"/\", \"weight\": 3}\n{\"name\": \"<b>search</b>\", \"path\": \"/s?q={{seq}}\", \"weight\": 1}\n",
    );
    let dir = reqs.parent().unwrap().join("profile-shards");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let unix_now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    // 3 s lead: two processes start and connect in tens of ms when idle; a late start would only
    // show in send lag, never in the counts checked here.
    let start_at = format!("{:.3}", unix_now + 3.0);
    let parts = run_two_shards(&server, &reqs, &dir, &start_at);
    assert_a_shards_page(&dir);
    let merged_path = merge_and_check_stages_and_names(&dir, &parts);
    assert_the_merged_reports(&dir, &merged_path);
    assert_objectives_per_stage(&dir);
    assert_another_profiles_file_is_refused(&dir, &parts);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs the profile as two shards starting together at `start_at`; their results.
fn run_two_shards(
    server: &Recorder,
    reqs: &std::path::Path,
    dir: &std::path::Path,
    start_at: &str,
) -> Vec<serde_json::Value> {
    let shards: Vec<_> = (0..2)
        .map(|i| {
            candor()
                .args(["run", "--shard", &format!("{i}/2"), "--start-at", start_at])
                .args(["-R", "200:1s,200..600:1s", "--warmup", "500ms"])
                .args(["-c", "4", "-t", "1", "--quiet", "--requests"])
                .arg(reqs)
                .arg("--json")
                .arg(dir.join(format!("shard-{i}.json")))
                .arg(&server.url)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("spawn a shard")
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|child| child.wait_with_output().expect("shard finished"))
        .collect();
    for (i, out) in shards.iter().enumerate() {
        assert!(
            out.status.success(),
            "shard {i}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let parts: Vec<serde_json::Value> = (0..2)
        .map(|i| load_json(&dir.join(format!("shard-{i}.json"))))
        .collect();
    parts
}

fn assert_a_shards_page(dir: &std::path::Path) {
    // One shard's page: the stage table, the target line's data and the names, escaped.
    let page_path = dir.join("shard-0.html");
    let out = candor()
        .arg("report")
        .arg(dir.join("shard-0.json"))
        .arg("-o")
        .arg(&page_path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = std::fs::read_to_string(&page_path).unwrap();
    assert!(page.contains("<h2>Load profile stages</h2>"));
    assert!(
        page.contains("<td>100.0/s \u{2192} 300.0/s</td>"),
        "a shard's share of the ramp"
    );
    assert!(
        page.contains("\"profile\":[[0.0,100.0],[0.5,100.0]"),
        "the target line starts with the warm-up"
    );
    assert!(page.contains("<h2>By request name</h2>"));
    assert!(page.contains("&lt;b&gt;search&lt;/b&gt;</th>"));
    assert!(page.contains("id=\"names-0\""));
}

/// Merges the two shards; the merged stages and names are the sums of the shards'.
fn merge_and_check_stages_and_names(
    dir: &std::path::Path,
    parts: &[serde_json::Value],
) -> std::path::PathBuf {
    let merged_path = dir.join("merged.json");
    let out = candor()
        .arg("merge")
        .arg(dir.join("shard-0.json"))
        .arg(dir.join("shard-1.json"))
        .arg("-o")
        .arg(&merged_path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let m = load_json(&merged_path);
    assert_balanced(&m);
    let stages = m["stages"].as_array().expect("merged stages");
    assert_eq!(stages.len(), 2);
    let count = |v: &serde_json::Value, k: &str| v["requests"][k].as_u64().unwrap();
    for (k, s) in stages.iter().enumerate() {
        for field in ["intended", "completed", "failed"] {
            let sum: u64 = parts.iter().map(|p| count(&p["stages"][k], field)).sum();
            assert_eq!(count(s, field), sum, "stage {k} {field}");
        }
        let samples: u64 = parts
            .iter()
            .map(|p| p["stages"][k]["response_time"]["count"].as_u64().unwrap())
            .sum();
        assert_eq!(s["response_time"]["count"].as_u64(), Some(samples));
        let max = parts
            .iter()
            .map(|p| p["stages"][k]["response_time"]["max_ns"].as_u64().unwrap())
            .max();
        assert_eq!(
            s["response_time"]["max_ns"].as_u64(),
            max,
            "histograms added, not averaged"
        );
    }
    // Each stage's integral, as one process would send it: 200 × 1 s, then (200 + 600) / 2 × 1 s.
    assert_eq!(count(&stages[0], "intended"), 200);
    assert_eq!(count(&stages[1], "intended"), 400);
    // The shards ran together, so the stage's rates are the whole profile's.
    let rate = |k: &str| stages[1][k].as_f64().unwrap();
    assert!(
        (rate("from_per_s") - 200.0).abs() < 1e-6,
        "{}",
        rate("from_per_s")
    );
    assert!(
        (rate("to_per_s") - 600.0).abs() < 1e-6,
        "{}",
        rate("to_per_s")
    );
    for name in ["home", "<b>search</b>"] {
        let sum: u64 = parts
            .iter()
            .map(|p| count(&p["by_request"][name], "intended"))
            .sum();
        assert_eq!(count(&m["by_request"][name], "intended"), sum, "{name}");
    }
    let named: u64 = ["home", "<b>search</b>"]
        .iter()
        .map(|n| count(&m["by_request"][n], "completed"))
        .sum();
    assert_eq!(
        named,
        req(&m, "completed"),
        "every completed request had a name"
    );
    merged_path
}

fn assert_the_merged_reports(dir: &std::path::Path, merged_path: &std::path::Path) {
    // The merged page and text show the whole profile.
    let out = candor()
        .arg("report")
        .arg(merged_path)
        .arg("-o")
        .arg(dir.join("merged.html"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = std::fs::read_to_string(dir.join("merged.html")).unwrap();
    assert!(page.contains("<td>200.0/s \u{2192} 600.0/s</td>"));
    let out = candor().arg("report").arg(merged_path).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("1.0-2.0s 200.0/s..600.0/s"), "{text}");
}

fn assert_objectives_per_stage(dir: &std::path::Path) {
    // Objectives are judged on each stage as well (recorded, shown); the exit code is the whole
    // run's. No response takes under 1 ns and every error share is at most 100%: exact verdicts.
    let out = candor()
        .arg("merge")
        .arg(dir.join("shard-0.json"))
        .arg(dir.join("shard-1.json"))
        .args(["-o", "-", "--slo", "p99<1ns,errors<=100%"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("objectives per stage"), "{err}");
    assert!(
        err.contains("  stage 2 (1.0-2.0s 200.0/s..600.0/s):\n    SLO p99<1ns"),
        "{err}"
    );
    let judged: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for s in judged["stages"].as_array().unwrap() {
        let slo = &s["analysis"]["slo"];
        assert_eq!(slo[0]["pass"], false, "{slo}");
        assert_eq!(slo[1]["pass"], true, "{slo}");
    }
}

fn assert_another_profiles_file_is_refused(dir: &std::path::Path, parts: &[serde_json::Value]) {
    // A file of another profile does not merge stage by stage: one line, non-zero exit.
    let mut other = parts[1].clone();
    other["stages"][1]["to_per_s"] = serde_json::json!(500.0);
    let other_path = dir.join("other.json");
    std::fs::write(&other_path, other.to_string()).unwrap();
    let out = candor()
        .arg("merge")
        .arg(dir.join("shard-0.json"))
        .arg(&other_path)
        .args(["-o", "-"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("run 2 has other load-profile stages than run 1 (stage 2 is 100.0/s..500.0/s"),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "nothing written on refusal");
}
