//! End-to-end `candor compare` with confidence: real runs against `candor serve`, one of them
//! behind a 1 ms delay, compared with ratios, intervals, verdicts and their rules, `--json` and
//! `--fail-if-slower`; `run --repeat` and `merge --as-repeats` compared across runs.

mod common;

use common::{candor, serial, Server};
use std::path::{Path, PathBuf};
use std::process::Output;

fn dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("candor-e2e-compare-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `candor run` at 500/s for `secs` seconds against `url`, results written to `path`.
fn run_to(path: &Path, url: &str, secs: u32) {
    run_with(path, url, secs, &[]);
}

fn run_with(path: &Path, url: &str, secs: u32, extra: &[&str]) {
    let out = candor()
        .arg("run")
        .args(extra)
        .args([
            "-R",
            "500",
            "-c",
            "8",
            "-d",
            &format!("{secs}s"),
            "--quiet",
            "--json",
        ])
        .arg(path)
        .arg(url)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "candor run failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn compare(args: &[&Path], extra: &[&str]) -> Output {
    candor()
        .arg("compare")
        .args(args)
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn a_server_one_millisecond_slower_is_a_change_beyond_noise_and_fails_the_gate() {
    let _guard = serial();
    let d = dir();
    let (a, b, c, short) = (
        d.join("a.json"),
        d.join("b.json"),
        d.join("c.json"),
        d.join("short.json"),
    );
    {
        let fast = Server::start(&[]);
        let slow = Server::start(&["--delay", "1ms"]);
        // 11 one-second intervals each: enough blocks for the bootstrap (10).
        run_to(&a, &fast.url, 11);
        run_to(&b, &slow.url, 11);
        run_to(&short, &fast.url, 3);
    }

    // One run a side and no noise floor: the change is not called, and the gate does not fail
    // on what could be run-to-run variation (issue 23).
    let o = compare(&[&a, &b], &["--fail-if-slower", "50"]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("one run per side cannot separate a change from run-to-run variation"),
        "{stdout}"
    );
    let p50 = stdout
        .lines()
        .find(|l| l.starts_with("p50 ") && l.contains(".."))
        .unwrap();
    assert!(
        p50.contains("not enough runs (one run per side"),
        "{stdout}"
    );
    assert!(
        stderr.contains("p50 of b.json against a.json: not enough runs"),
        "{stderr}"
    );

    // With a noise floor of 10%, a 1 ms delay on a sub-millisecond answer is beyond it.
    let o = compare(
        &[&a, &b],
        &[
            "--json",
            c.to_str().unwrap(),
            "--fail-if-slower",
            "50",
            "--noise",
            "10%",
        ],
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("p50 of b.json is slower than a.json"),
        "{stderr}"
    );
    // Each server listens on its own port: a comparison of different targets is allowed, with
    // a warning.
    assert!(
        stderr.contains("the ratios compare different targets"),
        "{stderr}"
    );
    // 11 s gives 11 intervals, or 12 when the last answers fall into a short final interval.
    assert!(stdout.contains("(block bootstrap over "), "{stdout}");
    let p50 = stdout
        .lines()
        .find(|l| l.starts_with("p50 ") && l.contains(".."))
        .unwrap();
    assert!(
        p50.ends_with("CHANGED beyond noise, higher (beyond noise and above the 2% threshold)"),
        "{stdout}"
    );
    assert!(stdout.contains("95% CI + noise"), "{stdout}");

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&c).unwrap()).unwrap();
    let cmp = &json["comparisons"][0];
    assert_eq!(cmp["baseline"], "a.json");
    assert_eq!(cmp["candidate"], "b.json");
    assert_eq!(cmp["method"], "bootstrap");
    for n in cmp["intervals"].as_array().unwrap() {
        // 11 or 12 (see above); 10 would take a whole second without an answer.
        assert!((10..=13).contains(&n.as_u64().unwrap()), "{cmp}");
    }
    let rows = cmp["rows"].as_array().unwrap();
    let pcts: Vec<f64> = rows
        .iter()
        .map(|r| r["percentile"].as_f64().unwrap())
        .collect();
    assert_eq!(pcts, [50.0, 90.0, 99.0, 99.9, 100.0]);
    // A 1 ms delay on a loopback answer of well under 1 ms: the p50 ratio is above 1 with its
    // whole interval, however busy the machine (the delay adds to whatever the base was).
    assert_eq!(rows[0]["verdict"], "changed beyond noise");
    assert_eq!(rows[0]["rule"], "beyond_noise");
    assert_eq!(cmp["noise"], 0.1);
    assert!(rows[0]["ci_low"].as_f64().unwrap() > 1.0, "{cmp}");
    // 5,500 samples cannot support p99 (10,000 needed) nor anything above: no interval shown.
    for r in &rows[2..] {
        assert_eq!(r["verdict"], "not enough samples", "{r}");
        assert!(r["ci_low"].is_null() && r["ci_high"].is_null(), "{r}");
    }

    // A run against itself is the same at every supported percentile, and passes the gate.
    let o = compare(&[&a, &a], &["--fail-if-slower", "p90"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    for p in ["p50 ", "p90 "] {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(p) && l.contains(".."))
            .unwrap();
        assert!(line.ends_with("same (interval contains 1)"), "{stdout}");
    }

    // Three intervals are too few for a bootstrap: said, and order statistics instead.
    let o = compare(&[&short, &b], &[]);
    assert_eq!(o.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("order statistics (too few intervals for a bootstrap)"),
        "{stdout}"
    );
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("too few intervals for a bootstrap ("),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn fail_if_slower_refuses_a_percentile_it_cannot_judge() {
    // Refused while parsing the arguments: the file is never opened.
    let f = std::env::temp_dir().join("candor-e2e-compare-never-read.json");
    for (bad, why) in [("100", "out of range"), ("max", "not a percentile")] {
        let o = compare(&[&f, &f], &["--fail-if-slower", bad]);
        assert_eq!(o.status.code(), Some(2));
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(e.contains(why), "{e}");
    }
}

#[test]
fn repeats_are_compared_across_runs_and_the_gate_uses_those_verdicts() {
    let _guard = serial();
    let d = dir().join("repeats");
    std::fs::create_dir_all(&d).unwrap();
    let (a, a2, b, m) = (
        d.join("a.json"),
        d.join("a2.json"),
        d.join("b.json"),
        d.join("m.json"),
    );
    let (b1, b2) = (d.join("b1.json"), d.join("b2.json"));
    {
        let fast = Server::start(&[]);
        let slow = Server::start(&["--delay", "2ms"]);
        let rep: &[&str] = &["--repeat", "3", "--repeat-pause", "50ms"];
        run_with(&a, &fast.url, 1, rep);
        run_with(&a2, &fast.url, 1, rep);
        run_with(&b, &slow.url, 1, rep);
        // Two single runs merged as repeats compare like a --repeat file.
        run_to(&b1, &slow.url, 1);
        run_to(&b2, &slow.url, 1);
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&a).unwrap()).unwrap();
    let reps = json["repeats"].as_array().unwrap();
    assert_eq!(reps.len(), 3);
    // The union's books are the repeats' books added up, and each repeat balances on its own.
    let sum = |k: &str| -> u64 {
        reps.iter()
            .map(|r| r["requests"][k].as_u64().unwrap())
            .sum()
    };
    for k in ["intended", "completed", "failed"] {
        assert_eq!(json["requests"][k].as_u64().unwrap(), sum(k), "{k}");
    }
    assert_eq!(json["kind"], "run");

    let o = candor()
        .args(["merge", "--as-repeats", "-o"])
        .arg(&m)
        .arg(&b1)
        .arg(&b2)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("2 runs kept apart as repeats"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );

    // A 2 ms delay on a loopback answer well under a millisecond: slower across runs whatever
    // the machine's run-to-run spread (it would take a spread of several hundred percent).
    for cand in [&b, &m] {
        let o = compare(&[&a, cand], &["--fail-if-slower", "p50"]);
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(3), "{stdout}");
        assert!(stdout.contains("(across 3 and "), "{stdout}");
        let p50 = stdout
            .lines()
            .find(|l| l.starts_with("p50 ") && l.contains(".."))
            .unwrap();
        assert!(
            p50.ends_with("SLOWER (significant and above the 2% threshold)"),
            "{stdout}"
        );
        assert!(!stdout.contains("one run per side"), "{stdout}");
    }
    // Every verdict line names its rule, in the text and in the JSON.
    let j = d.join("c.json");
    let o = compare(&[&a, &a2], &["--json", j.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&o.stdout);
    let verdict_lines: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with('p') || l.starts_with("max"))
        .filter(|l| l.contains('(') && !l.contains('%'))
        .collect();
    assert!(!verdict_lines.is_empty(), "{stdout}");
    let c: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    assert_eq!(c["comparisons"][0]["method"], "across_runs");
    assert_eq!(c["comparisons"][0]["runs"], serde_json::json!([3, 3]));
    for r in c["comparisons"][0]["rows"].as_array().unwrap() {
        assert!(r["rule"].is_string(), "{r}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn bad_repeat_and_compare_flags_are_one_line_errors_before_any_load() {
    // Port 9 on loopback: nothing is sent, since the flags are refused first.
    for (args, why) in [
        (&["--repeat", "0"][..], "--repeat"),
        (
            &["--repeat", "2", "--repeat-pause", "soon"][..],
            "--repeat-pause",
        ),
        (&["--repeat-pause", "1s"][..], "--repeat"),
    ] {
        let o = candor()
            .arg("run")
            .args(args)
            .args(["-d", "1s", "http://127.0.0.1:9/"])
            .output()
            .unwrap();
        // 2 from the argument parser, 1 from the checks after it; never a run.
        assert!(matches!(o.status.code(), Some(1 | 2)), "{args:?}: {o:?}");
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(e.contains(why), "{args:?}: {e}");
    }
    let f = std::env::temp_dir().join("candor-e2e-compare-never-read.json");
    for bad in [["--threshold", "150%"], ["--noise", "much"]] {
        let o = compare(&[&f, &f], &bad);
        assert_eq!(o.status.code(), Some(2), "{bad:?}");
    }
}

#[test]
fn calibrate_noise_measures_the_floor_compare_takes() {
    let _guard = serial();
    let server = Server::start(&[]);
    let o = candor()
        .args(["calibrate", "--noise", &server.url, "--noise-runs", "3"])
        .args(["--noise-load", "-R 500 -c 4 -d 1s"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(stdout.contains("3 runs of `-R 500 -c 4 -d 1s`"), "{stdout}");
    // 500 samples a run: p50 is measured, p90 (1,000) and p99 are not.
    assert!(
        stdout.contains("two single runs differ by up to"),
        "{stdout}"
    );
    assert!(
        stdout.contains("p99    not enough samples (500"),
        "{stdout}"
    );
    // The figure it prints is one compare takes.
    let line = stdout
        .lines()
        .find(|l| l.starts_with("noise floor: "))
        .unwrap();
    match line.split("pass --noise ").nth(1) {
        Some(figure) => {
            let figure = figure.split_whitespace().next().unwrap();
            let f = std::env::temp_dir().join("candor-e2e-compare-never-read.json");
            let o = compare(&[&f, &f], &["--noise", figure]);
            // Parsed (the file's absence is what fails, not the flag).
            assert_eq!(o.status.code(), Some(1), "{figure}");
        }
        // A machine so busy that runs differ more than compare takes: said, not advised.
        None => assert!(
            line.contains("more than the 1000% candor compare takes"),
            "{line}"
        ),
    }

    // Bad load flags: one line, before any load.
    let o = candor()
        .args(["calibrate", "--noise", &server.url])
        .args(["--noise-load", "-R 500 --bogus"])
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert_eq!(e.trim().lines().count(), 1, "{e}");
    assert!(e.contains("--noise-load"), "{e}");
}
