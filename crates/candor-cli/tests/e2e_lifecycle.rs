//! The run's lifecycle as a user meets it: rates no machine can pace, signals, the open-file
//! limit, output paths, units, `-n`, and the command-line habits (help, hints, completions, man).

mod common;

use common::{assert_balanced, candor, req, serial, Server};
use std::io::Read;
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("candor-lifecycle-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A port nobody listens on (bound, then released).
fn refused_url() -> String {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    format!("http://127.0.0.1:{port}/")
}

/// A server that accepts connections and never answers: every request stays outstanding, so
/// at a high rate the never-sent backlog grows by the whole rate every second.
fn black_hole() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in listener.incoming().flatten() {
            held.push(s);
        }
    });
    url
}

/// Waits until the child catches SIGINT and SIGTERM (its handlers are installed when the first
/// run starts), so that a signal sent next is certainly one candor handles, never the default
/// action killing a process still starting up on a busy machine.
fn wait_for_handlers(child: &Child) {
    let path = format!("/proc/{}/status", child.id());
    let want = (1u64 << (libc::SIGINT - 1)) | (1u64 << (libc::SIGTERM - 1));
    let t0 = Instant::now();
    loop {
        let status = std::fs::read_to_string(&path).unwrap_or_default();
        let caught = status
            .lines()
            .find_map(|l| l.strip_prefix("SigCgt:"))
            .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
            .unwrap_or(0);
        if caught & want == want {
            return;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "no signal handlers: {status}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn signal(child: &Child, sig: i32) {
    // SAFETY: kill only sends a signal to the child we started.
    assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
}

/// Waits up to `limit` for the child to exit; kills it and fails the test otherwise.
fn exit_within(mut child: Child, limit: Duration) -> (Output, Duration) {
    let t0 = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("candor did not exit within {limit:?} of the signal");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let took = t0.elapsed();
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    // A pipe a test took to watch as the child runs is read there.
    if let Some(mut o) = child.stdout.take() {
        o.read_to_end(&mut stdout).unwrap();
    }
    if let Some(mut e) = child.stderr.take() {
        e.read_to_end(&mut stderr).unwrap();
    }
    let status = child.wait().unwrap();
    (
        Output {
            status,
            stdout,
            stderr,
        },
        took,
    )
}

fn read_json(path: &PathBuf) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("results written")).unwrap()
}

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

#[test]
fn sigterm_ends_a_run_with_an_endless_backlog_promptly_and_writes_results() {
    let _g = serial();
    let url = black_hole();
    let dir = tmp("sigterm");
    let json = dir.join("r.json");
    // 100M/s on one thread (the ceiling) against a target that never answers: the never-sent
    // backlog grows by 1e8 entries a second. Counting an entry costs ~20-25 ns, so after 6 s the
    // full count alone would take ~12-15 s; before the stop request was honoured while
    // counting, SIGTERM here meant waiting for all of it.
    let child = candor()
        .args(["run", "-q", "-R", "100M", "-t", "1", "-c", "1", "-d", "60s"])
        .args(["-T", "60s", "--json"])
        .arg(&json)
        .arg(&url)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_handlers(&child);
    std::thread::sleep(Duration::from_secs(6));
    signal(&child, libc::SIGTERM);
    // The budget after a stop is 1 s of counting plus writing a report; 10 s leaves a loaded
    // 2-core machine a factor of several.
    let (out, took) = exit_within(child, Duration::from_secs(10));
    let t = text(&out);
    assert_eq!(out.status.code(), Some(143), "took {took:?}: {t}");
    assert!(t.contains("interrupted by SIGTERM after"), "{t}");
    let v = read_json(&json);
    assert_balanced(&v);
    assert!(req(&v, "intended") > 0);
    let after = v["config"]["interrupted_after_s"].as_f64().expect("field");
    assert!(after > 0.0 && after < 60.0, "{after}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn sigint_says_interrupted_in_every_report_and_exits_130() {
    let _g = serial();
    let server = Server::start(&[]);
    let dir = tmp("sigint");
    let json = dir.join("r.json");
    let hlog = dir.join("r.hlog");
    let child = candor()
        .args(["run", "-q", "-R", "200", "-c", "2", "-d", "30s", "--json"])
        .arg(&json)
        .arg("--hlog")
        .arg(&hlog)
        .arg(&server.url)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_handlers(&child);
    std::thread::sleep(Duration::from_millis(1500));
    signal(&child, libc::SIGINT);
    let (out, _) = exit_within(child, Duration::from_secs(10));
    let t = text(&out);
    assert_eq!(out.status.code(), Some(130), "{t}");
    assert!(t.contains("WARNING: interrupted after"), "{t}");
    assert!(t.contains("interrupted by SIGINT after"), "{t}");
    let v = read_json(&json);
    assert_balanced(&v);
    assert!(v["warnings"][0]
        .as_str()
        .unwrap()
        .starts_with("interrupted after"));
    assert!(v["config"]["interrupted_after_s"].as_f64().unwrap() < 30.0);
    assert!(std::fs::metadata(&hlog).unwrap().len() > 0);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_signal_ends_repeats_promptly_with_the_repeats_so_far_written() {
    let _g = serial();
    let server = Server::start(&[]);
    let dir = tmp("repeat");
    let json = dir.join("r.json");
    // A 1 s run, then a 60 s pause before the next: the signal lands in the pause (or, on a
    // very busy machine, still in the first run); either way it must end the command at once.
    let child = candor()
        .args([
            "run", "-q", "-R", "200", "-c", "2", "-d", "1s", "--repeat", "5",
        ])
        .args(["--repeat-pause", "60s", "--json"])
        .arg(&json)
        .arg(&server.url)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_handlers(&child);
    std::thread::sleep(Duration::from_millis(2500));
    signal(&child, libc::SIGTERM);
    let (out, took) = exit_within(child, Duration::from_secs(20));
    let t = text(&out);
    assert_eq!(out.status.code(), Some(143), "{t}");
    assert!(took < Duration::from_secs(20), "{took:?}");
    assert!(
        t.contains("interrupted by SIGTERM after 1 of 5 repeats"),
        "{t}"
    );
    let v = read_json(&json);
    assert_balanced(&v);
    // Issue 36: the union's stop_reason was null for an interrupted series.
    assert_eq!(v["stop_reason"], "interrupt", "{}", v["stop_reason"]);
    let reps = v["repeats"].as_array().unwrap();
    assert_eq!(reps.len(), 1, "{v}");
    assert_balanced(&reps[0]);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_signal_ends_a_sweep_and_a_capacity_search_not_just_their_current_step() {
    let _g = serial();
    let server = Server::start(&[]);
    let dir = tmp("sweep-signal");
    let json = dir.join("sweep.json");
    // Three steps of 1 s warm-up + 5 s: 20 s with pauses if the signal only ended one step.
    let child = candor()
        .args([
            "sweep",
            "-q",
            "--rates",
            "100,200,300",
            "-c",
            "2",
            "-d",
            "5s",
            "--json",
        ])
        .arg(&json)
        .arg(&server.url)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_handlers(&child);
    std::thread::sleep(Duration::from_millis(1000));
    signal(&child, libc::SIGINT);
    let (out, _) = exit_within(child, Duration::from_secs(10));
    let t = text(&out);
    assert_eq!(out.status.code(), Some(130), "{t}");
    assert!(
        t.contains("interrupted by SIGINT during step 1 of 3"),
        "{t}"
    );
    let v = read_json(&json);
    assert_eq!(v["steps"].as_array().unwrap().len(), 1);

    let child = candor()
        .args([
            "capacity", "--slo", "p99<1s", "--min", "100", "--max", "400",
        ])
        .args(["-c", "2", "-d", "5s", &server.url])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_handlers(&child);
    std::thread::sleep(Duration::from_millis(1000));
    signal(&child, libc::SIGTERM);
    let (out, _) = exit_within(child, Duration::from_secs(10));
    let t = text(&out);
    assert_eq!(out.status.code(), Some(143), "{t}");
    assert!(t.contains("interrupted by SIGTERM"), "{t}");
    let _ = std::fs::remove_dir_all(dir);
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

/// Collects the child's stderr as it comes, for a test that acts on what it says.
fn watch_stderr(child: &mut Child) -> std::sync::Arc<std::sync::Mutex<String>> {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let mut err = child.stderr.take().expect("stderr piped");
    let into = seen.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = err.read(&mut buf) {
            if n == 0 {
                break;
            }
            into.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    seen
}

/// Waits (up to 60 s, for a busy machine) until the watched stderr contains `needle`.
fn wait_for_text(seen: &std::sync::Mutex<String>, needle: &str) {
    let t0 = Instant::now();
    while !seen.lock().unwrap().contains(needle) {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "no {needle:?} in: {}",
            seen.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

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

/// A listener whose accept queue is full (backlog 0, one connection queued, never accepted):
/// a further connect gets no answer to its SYN and hangs until its own timeout.
fn never_accepting() -> (TcpListener, Vec<std::net::TcpStream>, String) {
    use std::os::fd::FromRawFd;
    // SAFETY: plain socket calls on a descriptor this function owns and hands to TcpListener.
    let listener = unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
        assert!(fd >= 0);
        let mut addr: libc::sockaddr_in = std::mem::zeroed();
        addr.sin_family = libc::AF_INET as libc::sa_family_t;
        addr.sin_addr.s_addr = u32::from(std::net::Ipv4Addr::LOCALHOST).to_be();
        let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        assert_eq!(
            libc::bind(fd, &addr as *const _ as *const libc::sockaddr, len),
            0
        );
        assert_eq!(libc::listen(fd, 0), 0);
        TcpListener::from_raw_fd(fd)
    };
    let addr = listener.local_addr().unwrap();
    let mut queued = Vec::new();
    for _ in 0..3 {
        if let Ok(s) = std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(300)) {
            queued.push(s);
        }
    }
    assert!(
        std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(300)).is_err(),
        "the accept queue should be full"
    );
    (listener, queued, format!("http://{addr}/"))
}

#[test]
fn either_signal_during_the_initial_connect_ends_the_run_with_results() {
    let _g = serial();
    let (_listener, _queued, url) = never_accepting();
    let dir = tmp("connect-signal");
    for (sig, code, name) in [
        (libc::SIGTERM, 143, "SIGTERM"),
        (libc::SIGINT, 130, "SIGINT"),
    ] {
        let json = dir.join(format!("connect-{sig}.json"));
        // -T 60s: the pre-flight connect would wait a minute for its SYN to be answered.
        let child = candor()
            .args(["run", "-q", "-R", "100", "-d", "2s", "-T", "60s", "--json"])
            .arg(&json)
            .arg(&url)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_for_handlers(&child);
        std::thread::sleep(Duration::from_millis(300));
        signal(&child, sig);
        let (out, _) = exit_within(child, Duration::from_secs(15));
        let t = text(&out);
        assert_eq!(out.status.code(), Some(code), "{t}");
        assert!(t.contains(&format!("interrupted by {name}")), "{t}");
        let v = read_json(&json);
        assert_eq!(v["stop_reason"], "interrupt");
        assert_balanced(&v);
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_signal_in_the_pause_ends_a_sweep_at_once_and_a_capacity_search_keeps_its_judged_steps() {
    let _g = serial();
    let server = Server::start(&[]);
    let dir = tmp("pause-signal");
    let json = dir.join("sweep.json");
    // A minute's pause after the first step: the signal comes in it.
    let mut child = candor()
        .args([
            "sweep", "-q", "--rates", "100,200", "-c", "2", "-d", "500ms",
        ])
        .args(["--warmup", "100ms", "--pause", "60s", "--json"])
        .arg(&json)
        .arg(&server.url)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let seen = watch_stderr(&mut child);
    wait_for_text(&seen, "throughput");
    signal(&child, libc::SIGINT);
    let (out, took) = exit_within(child, Duration::from_secs(15));
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    assert!(took < Duration::from_secs(15));
    assert_eq!(read_json(&json)["steps"].as_array().unwrap().len(), 1);

    let json = dir.join("capacity.json");
    let mut child = candor()
        .args([
            "capacity", "--slo", "p99<1s", "--min", "100", "--max", "400",
        ])
        .args([
            "-c", "2", "-d", "500ms", "--warmup", "100ms", "--pause", "60s",
        ])
        .arg("--json")
        .arg(&json)
        .arg(&server.url)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let seen = watch_stderr(&mut child);
    wait_for_text(&seen, "bracket");
    signal(&child, libc::SIGTERM);
    let (out, _) = exit_within(child, Duration::from_secs(15));
    let t = text(&out);
    assert_eq!(out.status.code(), Some(143), "{t}");
    assert!(t.contains("interrupted after 1 step judged"), "{t}");
    let v = read_json(&json);
    assert_eq!(v["outcome"]["kind"], "interrupted", "{v}");
    assert_eq!(v["probes"].as_array().unwrap().len(), 1, "{v}");
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

#[test]
fn either_signal_while_the_inputs_are_read_ends_the_command_at_once() {
    let _g = serial();
    let dir = tmp("input-signal");
    let fifo = dir.join("no-writer");
    let c_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo on a path of our own temporary directory.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    let f = fifo.to_str().unwrap();
    let url = refused_url();
    // A FIFO nobody writes blocks the open of every input file forever: each flag, each command
    // that reads the flags, and both signals must still end it (before any load is sent).
    let cases: [(&[&str], i32, i32); 5] = [
        (
            &["run", "-R", "10", "-d", "1s", "--requests", f],
            libc::SIGTERM,
            143,
        ),
        (
            &["run", "-R", "10", "-d", "1s", "--data", f],
            libc::SIGINT,
            130,
        ),
        (
            &["run", "-R", "10", "-d", "1s", "--body-file", f],
            libc::SIGTERM,
            143,
        ),
        (&["run", "-d", "1s", "--replay", f], libc::SIGINT, 130),
        (
            &["sweep", "--rates", "10,20", "-d", "1s", "--requests", f],
            libc::SIGTERM,
            143,
        ),
    ];
    for (args, sig, code) in cases {
        let mut argv: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        if args[0] == "run" && args.contains(&"--data") {
            argv.push(format!("{url}{{{{data:id}}}}"));
        } else {
            argv.push(url.clone());
        }
        let child = candor()
            .args(&argv)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_for_handlers(&child);
        std::thread::sleep(Duration::from_millis(300));
        signal(&child, sig);
        let (out, _) = exit_within(child, Duration::from_secs(15));
        let t = text(&out);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {t}");
        assert!(t.contains("interrupted by"), "{args:?}: {t}");
        assert_eq!(t.trim().lines().count(), 1, "{args:?}: {t}");
    }
    let _ = std::fs::remove_dir_all(dir);
}
