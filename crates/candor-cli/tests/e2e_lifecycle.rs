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
    child
        .stdout
        .take()
        .unwrap()
        .read_to_end(&mut stdout)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_end(&mut stderr)
        .unwrap();
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
