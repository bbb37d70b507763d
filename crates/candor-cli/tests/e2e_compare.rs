//! End-to-end `candor compare` with confidence: real runs against `candor serve`, one of them
//! behind a 1 ms delay, compared with ratios, intervals, verdicts, `--json` and
//! `--fail-if-slower`.

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
    let out = candor()
        .arg("run")
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
fn a_server_one_millisecond_slower_reads_slower_and_fails_the_gate() {
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

    let o = compare(
        &[&a, &b],
        &["--json", c.to_str().unwrap(), "--fail-if-slower", "50"],
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
    assert!(p50.ends_with("SLOWER"), "{stdout}");

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
    assert_eq!(rows[0]["verdict"], "slower");
    assert!(rows[0]["ci_low"].as_f64().unwrap() > 1.0, "{cmp}");
    // 5,500 samples cannot support p99 (10,000 needed) nor anything above.
    for r in &rows[2..] {
        assert_eq!(r["verdict"], "not enough samples", "{r}");
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
        assert!(line.ends_with("same"), "{stdout}");
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
