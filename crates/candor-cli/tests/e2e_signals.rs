//! SIGINT and SIGTERM as a user sends them: a run with an endless backlog, repeats, a sweep and
//! a capacity search (in a step and in the pause between steps), the initial connect and the
//! reading of the inputs each end promptly, with exit code 130 or 143 and the results so far.

mod common;
mod support {
    pub mod process;
}

use common::{assert_balanced, candor, req, serial, text, Server};
use std::net::TcpListener;
use std::process::Stdio;
use std::time::Duration;
use support::process::*;

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
