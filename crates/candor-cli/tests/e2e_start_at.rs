//! `--start-at`, the agreed instant at which shards start: a start ahead is announced and either
//! signal ends the wait with results, a start already past keeps the schedule and reports the
//! wall-clock lateness, and absurd instants and endless counts are refused before anything.

mod common;
mod support {
    pub mod process;
}

use common::{assert_balanced, candor, req, serial, text, Server};
use std::process::Stdio;
use std::time::Duration;
use support::process::*;

fn unix_now_s() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

#[test]
fn a_start_at_ahead_is_announced_and_either_signal_ends_the_wait_with_results() {
    let _g = serial();
    let server = Server::start(&[]);
    let dir = tmp("start-at-wait");
    // A minute ahead, and two days ahead with the opt-in: a signal must end either wait at once.
    for (sig, code, ahead_s, far) in [
        (libc::SIGINT, 130, 60.0, false),
        (libc::SIGTERM, 143, 2.0 * 86_400.0, true),
    ] {
        let json = dir.join(format!("wait-{sig}.json"));
        let start_at = format!("{:.3}", unix_now_s() + ahead_s);
        let mut child = candor()
            .args([
                "run",
                "-q",
                "-R",
                "100",
                "-d",
                "2s",
                "--start-at",
                &start_at,
            ])
            .args(if far {
                &["--start-at-far"][..]
            } else {
                &[][..]
            })
            .arg("--json")
            .arg(&json)
            .arg(&server.url)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let seen = watch_stderr(&mut child);
        wait_for_text(&seen, "waiting until ");
        wait_for_handlers(&child);
        signal(&child, sig);
        // Without the fix the run sat out the whole wait (a minute, two days).
        let (out, _) = exit_within(child, Duration::from_secs(15));
        let t = format!("{}{}", text(&out), seen.lock().unwrap());
        assert_eq!(out.status.code(), Some(code), "{t}");
        assert!(t.contains(" (in "), "the wait says how long: {t}");
        let v = read_json(&json);
        assert_eq!(v["stop_reason"], "interrupt", "{v}");
        assert_balanced(&v);
        assert_eq!(req(&v, "intended"), 0, "nothing was due before the start");
        assert!(
            v["warnings"][0]
                .as_str()
                .unwrap()
                .contains("interrupted before the first intended send"),
            "{}",
            v["warnings"]
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn absurd_start_instants_and_endless_counts_are_refused_before_anything() {
    let server = Server::start(&[]);
    let two_days = format!("{:.0}", unix_now_s() + 2.0 * 86_400.0);
    for (args, says) in [
        (vec!["--start-at", "1e300"], "--start-at"),
        (vec!["--start-at", "inf"], "--start-at"),
        (vec!["--start-at", "NaN"], "--start-at"),
        (vec!["--start-at", "2100-01-01T00:00:00Z"], "--start-at-far"),
        (vec!["--start-at", &two_days], "days ahead"),
        (vec!["-n", "200000000000000000"], "could never finish"),
        (
            vec!["-n", "18446744073709551615", "-R", "1M"],
            "could never finish",
        ),
        // 228 years twice: each fits, their sum does not.
        (
            vec!["-d", "2000000h", "--warmup", "2000000h"],
            "could never finish",
        ),
    ] {
        // Bounded: an instant that is accepted would wait for it (years), -n would run on.
        let child = candor()
            .arg("run")
            .args(&args)
            .arg(&server.url)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (out, _) = exit_within(child, Duration::from_secs(20));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}: no report, nothing ran");
    }
    // A Kubernetes Job whose pods would all refuse their start is refused when printed.
    let out = candor()
        .args([
            "k8s",
            "--shards",
            "2",
            "--image",
            "candor:1",
            "--start-at",
            &two_days,
        ])
        .args(["--", "-R", "1k", "http://svc.invalid/"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("days ahead"), "{err}");
    assert!(out.stdout.is_empty(), "no manifest");
}

#[test]
fn a_start_at_already_past_keeps_the_schedule_and_reports_wall_clock_lateness() {
    let _g = serial();
    let server = Server::start(&[]);
    // 3 s and an hour late: the whole schedule is sent with its shape and drained, and the
    // lateness is the wall-clock distance to the agreed instant (it read as the uptime).
    for late_s in [3.0, 3600.0] {
        let start_at = format!("{:.3}", unix_now_s() - late_s);
        let (v, out) = common::run_json(&[
            "-R",
            "200",
            "-d",
            "1s",
            "-c",
            "4",
            "--start-at",
            &start_at,
            &server.url,
        ]);
        assert_balanced(&v);
        assert_eq!(req(&v, "intended"), 200, "{}", text(&out));
        assert_eq!(
            req(&v, "completed"),
            200,
            "a local server answers every request of a paced second: {}",
            text(&out)
        );
        assert_eq!(v["stop_reason"], "duration");
        let late = v["config"]["late_start_s"].as_f64().unwrap();
        // Late by the instant's age plus the time to start and open the pool: generous for a
        // busy machine, far below any uptime-sized error.
        assert!(late >= late_s && late < late_s + 30.0, "late {late}");
        let shift = v["start_time_unix_s"].as_f64().unwrap()
            - v["config"]["start_at_unix_s"].as_f64().unwrap();
        assert!(
            (shift - late).abs() < 0.05,
            "started when ready: {shift} vs {late}"
        );
        let w = v["warnings"].to_string();
        assert!(w.contains("after the agreed --start-at"), "{w}");
        assert!(w.contains("its shape kept"), "{w}");
    }
}
