//! The run's lifecycle as a user meets it: rates no machine can pace, the open-file limit,
//! output paths, units, `-n`, wrong input, and the command-line habits (help, hints, completions,
//! man). Signals are in e2e_signals.rs, `--start-at` in e2e_start_at.rs.

mod common;
mod support {
    pub mod process;
}

use common::{assert_balanced, candor, req, serial, text, Server};
use std::os::unix::process::CommandExt;
use std::process::{Command, Output};
use std::time::{Duration, Instant};
use support::process::*;

#[test]
fn rates_no_machine_can_pace_are_refused_before_any_load() {
    let url = refused_url();
    for rate in ["1e12", "18446744073709551616"] {
        let out = candor()
            .args(["run", "-R", rate, "-d", "1s", &url])
            .output()
            .unwrap();
        let t = text(&out);
        assert_eq!(out.status.code(), Some(1), "{t}");
        // The rate check comes before the connection attempt (nothing listens on this port).
        assert!(t.contains("beyond what any machine can pace"), "{t}");
        assert_eq!(t.trim().lines().count(), 1, "{t}");
    }
}

/// `candor ARGS` with RLIMIT_NOFILE set to (soft, hard) in the child.
fn with_nofile(args: &[&str], soft: u64, hard: u64) -> Output {
    let mut cmd: Command = candor();
    cmd.args(args);
    // SAFETY: setrlimit is async-signal-safe and touches only the child.
    unsafe {
        cmd.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: soft as libc::rlim_t,
                rlim_max: hard as libc::rlim_t,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.output().unwrap()
}

#[test]
fn the_open_file_limit_is_checked_and_raised_before_the_run() {
    let _g = serial();
    let server = Server::start(&[]);
    let out = with_nofile(&["run", "-c", "2000", "-d", "1s", &server.url], 256, 256);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains("ulimit -n") && t.contains("limit is 256"), "{t}");
    assert_eq!(t.trim().lines().count(), 1, "{t}");

    // Only the soft limit low: candor raises it itself and every connection works (300
    // connections need 300 + 2 * 8 + 64 = 380 descriptors, above the soft 256).
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into our struct.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) }, 0);
    // rlim_t is u32 on some 32-bit targets.
    #[allow(clippy::unnecessary_cast)]
    let hard = lim.rlim_max as u64;
    if hard < 1000 {
        eprintln!("hard open-file limit {hard} < 1000 here: the raise case is not exercised");
        return;
    }
    let dir = tmp("nofile");
    let json = dir.join("r.json");
    let json_s = json.to_str().unwrap();
    let out = with_nofile(
        &[
            "run",
            "-q",
            "-R",
            "300",
            "-c",
            "300",
            "-d",
            "1s",
            "--json",
            json_s,
            &server.url,
        ],
        256,
        hard,
    );
    assert!(out.status.success(), "{}", text(&out));
    let v = read_json(&json);
    assert_balanced(&v);
    assert_eq!(v["requests"]["errors"]["connect"].as_u64(), Some(0));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn unwritable_outputs_fail_before_the_load_and_a_late_failure_keeps_the_rest() {
    let _g = serial();
    let server = Server::start(&[]);
    let dir = tmp("outputs");
    let missing = dir.join("no/such/dir/r.hlog");
    for (flag, path) in [
        ("--json", dir.clone()),
        ("--hlog", missing.clone()),
        ("--hgrm", missing),
    ] {
        let t0 = Instant::now();
        let out = candor()
            .args(["run", "-q", "-R", "100", "-d", "30s", flag])
            .arg(&path)
            .arg(&server.url)
            .output()
            .unwrap();
        let t = text(&out);
        assert_eq!(out.status.code(), Some(1), "{t}");
        assert!(
            t.contains(flag) && t.contains(path.to_str().unwrap()),
            "{t}"
        );
        assert_eq!(t.trim().lines().count(), 1, "{t}");
        // The run would have lasted 30 s; failing before it means well under that.
        assert!(t0.elapsed() < Duration::from_secs(15), "{:?}", t0.elapsed());
    }
    // A device that is always full: the write fails at the end, and the JSON is still written.
    if std::path::Path::new("/dev/full").exists() {
        let json = dir.join("r.json");
        let out = candor()
            .args([
                "run",
                "-q",
                "-R",
                "100",
                "-d",
                "1s",
                "--hgrm",
                "/dev/full",
                "--json",
            ])
            .arg(&json)
            .arg(&server.url)
            .output()
            .unwrap();
        let t = text(&out);
        assert_eq!(out.status.code(), Some(1), "{t}");
        assert!(t.contains("writing --hgrm /dev/full"), "{t}");
        assert_balanced(&read_json(&json));
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn durations_and_slos_need_units() {
    let url = refused_url();
    for (args, want) in [
        (
            vec!["run", "-T", "500", &url],
            "--timeout: '500' has no unit: write 500s",
        ),
        (
            vec!["run", "-d", "30", &url],
            "--duration: '30' has no unit",
        ),
        (
            vec!["run", "--slo", "p99<10", &url],
            "p99<10': add a unit, e.g. p99<10ms",
        ),
    ] {
        let out = candor().args(&args).output().unwrap();
        let t = text(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {t}");
        assert!(t.contains(want), "{args:?}: {t}");
    }
}

#[test]
fn dash_n_sends_exactly_n_requests() {
    let _g = serial();
    let server = Server::start(&[]);
    // 333 at 1000/s: a window of 333 ms whose end is not a whole number of periods of the
    // two interleaved threads; the count is exact by construction, not by timing.
    let (v, _) = common::run_json(&["-R", "1000", "-n", "333", "-c", "4", &server.url]);
    assert_eq!(req(&v, "intended"), 333);
    assert_eq!(v["config"]["requests_total"].as_u64(), Some(333));
    assert!((v["config"]["duration_s"].as_f64().unwrap() - 0.333).abs() < 1e-9);
    assert_balanced(&v);
    let url = refused_url();
    let out = candor()
        .args(["run", "-n", "10", "-d", "5s", &url])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let out = candor()
        .args(["run", "-n", "10", "--arrival", "poisson", &url])
        .output()
        .unwrap();
    assert!(text(&out).contains("-n needs --arrival constant"));
}

#[test]
fn command_line_habits() {
    for sub in ["sweep", "capacity"] {
        let out = candor().args([sub, "--help"]).output().unwrap();
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(
            !help
                .lines()
                .any(|l| l.trim_start().starts_with("-R") || l.contains("--rate <")),
            "{sub} --help lists -R: {help}"
        );
    }
    let help = String::from_utf8_lossy(&candor().args(["run", "--help"]).output().unwrap().stdout)
        .to_string();
    assert!(help.contains("-R, --rate <RATE>") && help.contains("-n, --requests-total <N>"));

    let out = candor().args(["run", "localhost:8080/"]).output().unwrap();
    assert!(text(&out).contains("did you mean http://localhost:8080/?"));
    let out = candor().args(["swep"]).output().unwrap();
    assert!(text(&out).contains("a similar subcommand exists: 'sweep'"));

    let k8s = String::from_utf8_lossy(&candor().args(["k8s", "--help"]).output().unwrap().stdout)
        .to_string();
    assert!(k8s.contains("Containerfile"), "{k8s}");
}

#[test]
fn completions_and_man_page() {
    let dir = tmp("completions");
    for shell in ["bash", "zsh", "fish"] {
        let out = candor().args(["completions", shell]).output().unwrap();
        assert!(out.status.success());
        let script = String::from_utf8(out.stdout).unwrap();
        // Every shell names the long flag without its dashes somewhere (fish: `-l rates`).
        assert!(
            script.contains("sweep") && script.contains("rates"),
            "{shell}"
        );
        if shell == "bash" {
            let path = dir.join("candor.bash");
            std::fs::write(&path, &script).unwrap();
            let check = Command::new("bash").arg("-n").arg(&path).output().unwrap();
            assert!(check.status.success(), "{}", text(&check));
        }
    }
    let out = candor().args(["man"]).output().unwrap();
    assert!(out.status.success());
    let page = String::from_utf8(out.stdout).unwrap();
    assert!(page.contains(".TH candor 1"));
    for sub in ["run", "sweep", "capacity", "completions", "man"] {
        assert!(
            page.contains(&format!("candor\\-{sub}(1)")),
            "{sub} missing"
        );
    }
    // Rendered by man itself where it is installed.
    let path = dir.join("candor.1");
    std::fs::write(&path, &page).unwrap();
    if let Ok(r) = Command::new("man")
        .arg("-l")
        .arg(&path)
        .env("MANPAGER", "cat")
        .output()
    {
        if r.status.success() {
            assert!(String::from_utf8_lossy(&r.stdout).contains("SUBCOMMANDS"));
        }
    }
    let pages = dir.join("pages");
    let out = candor()
        .args(["man", "--dir"])
        .arg(&pages)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(pages.join("candor-run.1").exists());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn wrong_input_gets_one_true_line() {
    let server = Server::start(&[]);
    let tcp = server.url.replace("http://", "tcp://");
    let tcp = tcp.trim_end_matches('/');
    let cases: Vec<(Vec<&str>, i32, &str)> = vec![
        (vec!["run", "http:///path"], 1, "no host"),
        (vec!["run", "-m", "GE\nT", &server.url], 1, "'GE\\nT'"),
        (vec!["run", "-R", "1:1ns", &server.url], 1, "long enough"),
        (
            vec!["run", "-R", "0:1s", &server.url],
            1,
            "every stage has rate 0",
        ),
        (
            vec!["run", "-d", "-1s", &server.url],
            1,
            "invalid duration '-1s'",
        ),
        (
            vec!["run", "--bogus", &server.url],
            2,
            "see 'candor run --help'",
        ),
        (
            vec!["run", "-c", "abc", &server.url],
            2,
            "invalid value 'abc'",
        ),
        (
            vec!["sweep", "--rates", "1k", "-c", "x", &server.url],
            2,
            "see 'candor sweep --help'",
        ),
        (vec!["run"], 2, "<URL>"),
        (
            vec!["run", "-t", "4", "-c", "2", &server.url],
            1,
            "connections (2)",
        ),
    ];
    let mut cases = cases;
    for flags in [
        vec!["-H", "X-A: b"],
        vec!["-m", "POST"],
        vec!["--body", "x"],
        vec!["--check-body", "ok"],
        vec!["--check-header", "X: y"],
        vec!["-k"],
    ] {
        let mut args = vec!["run", "--payload", "hi", "--expect-bytes", "2"];
        let name = flags[0];
        args.extend(flags);
        args.push(tcp);
        cases.push((args, 1, name));
    }
    for (args, code, says) in cases {
        let out = candor().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(!err.contains("resolve host"), "{args:?}: {err}");
    }
    // --help keeps clap's full page.
    let out = candor().args(["run", "--help"]).output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).lines().count() > 20);
}

#[test]
fn threads_follow_a_smaller_connection_count_and_tiny_rates_read_honestly() {
    let _g = serial();
    let server = Server::start(&[]);
    // -c 1 with -t left out: one thread, as wrk users expect.
    let (v, _) = common::run_json(&["-c", "1", "-R", "100", "-d", "300ms", &server.url]);
    assert_eq!(v["config"]["threads"], 1);
    assert_eq!(req(&v, "completed"), 30);
    // One request due in the window of a rate a million times lower: 100% of it, not 10^8 %.
    let out = candor()
        .args(["run", "-q", "-R", "0.000001", "-d", "500ms", &server.url])
        .output()
        .unwrap();
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("target 0.00000100/s"), "{t}");
    assert!(t.contains("(100.0% of 1 intended)"), "{t}");
    assert!(!t.contains("00000.0%"), "{t}");
}

#[test]
fn capacity_takes_quiet_and_its_help_names_only_what_it_takes() {
    let _g = serial();
    let server = Server::start(&[]);
    let help = String::from_utf8_lossy(
        &candor()
            .args(["capacity", "--help"])
            .output()
            .unwrap()
            .stdout,
    )
    .to_string();
    let duration_help: String = help
        .split("-d, --duration")
        .nth(1)
        .and_then(|rest| rest.split("\n  -").next())
        .unwrap_or_default()
        .into();
    assert!(!duration_help.is_empty(), "{help}");
    assert!(!duration_help.contains("stage"), "{duration_help}");
    let out = candor()
        .args([
            "capacity", "-q", "--slo", "p99<1s", "--min", "100", "--max", "200",
        ])
        .args(["--confirm", "1", "--max-steps", "3", "--pause", "0s"])
        .args(["-c", "2", "-d", "300ms", "--warmup", "100ms", &server.url])
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        matches!(out.status.code(), Some(0 | 3)),
        "-q accepted: {stderr}"
    );
    assert!(stdout.contains("CAPACITY: "), "{stdout}");
    assert!(!stderr.contains("candor capacity:"), "quiet: {stderr}");
    assert!(!stderr.contains("bracket"), "quiet: {stderr}");
}
