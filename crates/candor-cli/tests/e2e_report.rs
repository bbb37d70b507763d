//! End-to-end tests of `candor report` and `candor merge` on files a test writes itself: inputs
//! that are impossible, oversized, empty or damaged are refused (or reported as holding no data)
//! with one line naming the file, and a log's report claims nothing the log does not hold.

mod common;

use candor_core::results::RunResults;
use candor_report::synthetic::synthetic_run;
use common::candor;
use std::path::{Path, PathBuf};
use std::process::Output;

fn dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("candor-e2e-report-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write(name: &str, text: &str) -> PathBuf {
    let p = dir().join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn write_run(name: &str, r: &RunResults) -> PathBuf {
    write(name, &r.to_json_pretty())
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Exit 1 with exactly one line on stderr that names `file` and contains `why`.
fn refused(o: &Output, file: &Path, why: &str) {
    let e = stderr(o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert_eq!(e.trim_end().lines().count(), 1, "one line: {e}");
    assert!(
        e.contains(&file.display().to_string()),
        "names the file: {e}"
    );
    assert!(e.contains(why), "{why:?} in {e}");
    assert!(!e.contains("panicked"), "{e}");
}

#[test]
fn merge_refuses_impossible_counts_and_unbalanced_books() {
    let good = write_run("good.json", &synthetic_run(1, 4, 100, 1_000_000, 0));
    let out = dir().join("merged.json");

    let mut huge = synthetic_run(2, 4, 100, 1_000_000, 0);
    huge.main.requests.completed = u64::MAX;
    huge.main.requests.intended = u64::MAX;
    let huge = write_run("huge.json", &huge);
    let o = candor()
        .arg("merge")
        .arg(&good)
        .arg(&huge)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    refused(
        &o,
        &huge,
        "main.requests.completed = 18446744073709551615 is beyond any possible run",
    );
    assert!(!out.exists(), "nothing written");

    let mut bad = synthetic_run(3, 4, 100, 1_000_000, 0);
    bad.main.requests.intended = 7;
    bad.main.requests.completed = 400;
    let bad = write_run("unbalanced.json", &bad);
    let o = candor()
        .arg("merge")
        .arg(&good)
        .arg(&bad)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    refused(
        &o,
        &bad,
        "requests do not balance: intended 7 is not completed 400",
    );
    // report reads through the same checks.
    let o = candor().arg("report").arg(&bad).output().unwrap();
    refused(&o, &bad, "do not balance");
}

#[test]
fn merge_warns_about_the_same_run_twice_and_unlike_runs() {
    let mut a = synthetic_run(1, 4, 100, 1_000_000, 0);
    a.config = candor_core::results::RunConfig {
        rate_per_s: Some(100.0),
        method: "GET".into(),
        ..Default::default()
    }
    .into();
    let pa = write_run("a.json", &a);
    let copy = write_run("copy.json", &a);
    let out = dir().join("twice.json");
    let o = candor()
        .arg("merge")
        .arg(&pa)
        .arg(&copy)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("warning: a.json and copy.json are the same run"),
        "{}",
        stderr(&o)
    );
    let merged: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert!(merged["warnings"][0]
        .as_str()
        .unwrap()
        .contains("counted twice"));

    let mut b = synthetic_run(2, 4, 100, 1_000_000, 0);
    b.target = "http://127.0.0.1:2/other".into();
    b.config = candor_core::results::RunConfig {
        rate_per_s: Some(5000.0),
        method: "POST".into(),
        ..Default::default()
    }
    .into();
    let pb = write_run("b.json", &b);
    let o = candor()
        .arg("merge")
        .arg(&pa)
        .arg(&pb)
        .arg("-o")
        .arg(dir().join("unlike.json"))
        .output()
        .unwrap();
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{e}");
    for what in ["targets", "methods", "rates (-R)"] {
        assert!(
            e.contains(&format!("warning: merging runs of different {what}")),
            "{what}: {e}"
        );
    }
}

#[test]
fn oversized_inputs_are_refused_before_they_are_read() {
    // A sparse 1 GiB file: no disk space used, and reading it would take seconds and a GiB.
    let big = dir().join("big.hlog");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    for cmd in ["report", "merge"] {
        let mut c = candor();
        c.arg(cmd).arg(&big);
        if cmd == "merge" {
            c.arg("-o").arg(dir().join("never.json"));
        }
        let o = c.output().unwrap();
        refused(&o, &big, "larger than 256 MiB");
    }
    std::fs::remove_file(&big).unwrap();
}

#[test]
fn an_empty_log_has_no_data_and_a_negative_interval_is_refused() {
    let log = candor_report::hlog::write_hlog(&synthetic_run(1, 3, 50, 1_000_000, 0));
    let header: String = log
        .lines()
        .filter(|l| l.starts_with('#') || l.starts_with('"'))
        .map(|l| format!("{l}\n"))
        .collect();
    let empty = write("empty.hlog", &header);
    let o = candor().arg("report").arg(&empty).output().unwrap();
    let t = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(t.contains("latency: no data"), "{t}");
    assert!(!t.contains("0ns"), "no invented zeros: {t}");

    let zero = write("zero.hlog", "");
    let o = candor().arg("report").arg(&zero).output().unwrap();
    refused(&o, &zero, "the file is empty");

    let mut lines: Vec<String> = log.lines().map(str::to_string).collect();
    let at = lines
        .iter()
        .position(|l| !l.starts_with('#') && !l.starts_with('"'))
        .unwrap();
    let f: Vec<String> = lines[at].split(',').map(str::to_string).collect();
    lines[at] = format!("{},-1.000,{},{}", f[0], f[2], f[3]);
    let neg = write("negative.hlog", &(lines.join("\n") + "\n"));
    let o = candor().arg("report").arg(&neg).output().unwrap();
    refused(
        &o,
        &neg,
        &format!("line {}: negative interval length -1", at + 1),
    );
}

#[test]
fn a_log_report_shows_only_what_the_log_holds() {
    let log = write(
        "run.hlog",
        &candor_report::hlog::write_hlog(&synthetic_run(1, 4, 100, 1_000_000, 0)),
    );
    let o = candor().arg("report").arg(&log).output().unwrap();
    let t = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(t.contains("400 latencies recorded"), "{t}");
    assert!(
        t.contains("are unknown (an interval log records latencies only)"),
        "{t}"
    );
    for invented in ["intended =", "status:", "bytes:", "errors:"] {
        assert!(!t.contains(invented), "{invented:?} is not in a log: {t}");
    }
}

#[test]
fn labels_are_a_comma_list_one_per_input() {
    let a = write_run("la.json", &synthetic_run(1, 3, 50, 1_000_000, 0));
    let b = write_run("lb.json", &synthetic_run(2, 3, 50, 2_000_000, 0));
    let o = candor()
        .arg("report")
        .arg(&a)
        .arg(&b)
        .args(["--label", "before,after"])
        .output()
        .unwrap();
    let t = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(t.contains("== before\n") && t.contains("== after\n"), "{t}");
    let o = candor()
        .arg("compare")
        .arg(&a)
        .arg(&b)
        .args(["--label", "one,two,three"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o).trim_end(),
        "candor: error: --label gives 3 labels for 2 inputs: give one per input, in order, comma-separated (--label before,after)"
    );
}

#[test]
fn summaries_and_status_counts_the_histograms_deny_are_refused_by_every_reader() {
    let ok = synthetic_run(1, 5, 100, 1_000_000, 0);
    let mut inflated = ok.clone();
    inflated.main.response_time.count *= 1000;
    let mut statuses = ok.clone();
    statuses.main.requests.status.s2xx = ok.main.requests.completed + ok.main.requests.failed + 1;
    let good = write_run("summary-good.json", &ok);
    for (name, r, why) in [
        ("summary-count.json", &inflated, "main.response_time.count"),
        ("summary-status.json", &statuses, "status classes count"),
    ] {
        let bad = write_run(name, r);
        let o = candor().arg("report").arg(&bad).output().unwrap();
        refused(&o, &bad, why);
        let o = candor()
            .arg("compare")
            .arg(&good)
            .arg(&bad)
            .output()
            .unwrap();
        refused(&o, &bad, why);
        let out = dir().join(format!("merged-{name}"));
        let o = candor()
            .args(["merge", "-o"])
            .arg(&out)
            .arg(&good)
            .arg(&bad)
            .output()
            .unwrap();
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{e}");
        assert!(e.contains(why), "{e}");
    }
    // An HTML report on stdout says so, not "wrote -".
    let o = candor()
        .args(["report", "-o", "-"])
        .arg(&good)
        .output()
        .unwrap();
    assert!(stderr(&o).contains("wrote stdout"), "{}", stderr(&o));
}
