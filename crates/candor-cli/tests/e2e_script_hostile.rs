//! Hostile scripts against the real binary (issue 36): a script file that never ends, Lua
//! bytecode, a heap that grows without end, a `done()` that prints without end, loops that never
//! return (in `done()`, past the run's end), `os.exit()`, and `io.write` to a file. Each ends in
//! bounded memory and time with its results written and one line saying why.

mod common;

use common::{assert_balanced, candor, req, run_watched, serial, Server};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

fn script(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/scripts")
        .join(name)
        .display()
        .to_string()
}

fn tempdir() -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "candor-e2e-hostile-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn read_json(path: &std::path::Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path:?} is not JSON ({e}): {text:?}"))
}

/// `-s /dev/zero` read 5.6 GB in 20 s before it was capped. Now refused at 16 MiB, before any
/// load: peak RSS well under 200 MB (a debug candor runs in ~30 MB; the 16 MiB read buffer and
/// its chunk come on top), within seconds.
#[test]
fn a_script_file_that_never_ends_is_refused_at_its_cap() {
    let mut cmd = candor();
    cmd.args(["run", "-R", "10", "-d", "1s", "-s", "/dev/zero"])
        .arg("http://127.0.0.1:9/");
    // 10 s: the cap is reached in well under a second; the defect would be at GBs by then.
    let w = run_watched(cmd, Duration::from_secs(10));
    assert!(!w.killed, "still reading /dev/zero after 10 s");
    assert_eq!(w.status.code(), Some(1), "{}", w.stderr);
    assert!(
        w.stderr
            .contains("cannot read script /dev/zero: larger than 16 MiB"),
        "{}",
        w.stderr
    );
    assert_eq!(w.stderr.lines().count(), 1, "{}", w.stderr);
    assert!(
        w.peak_rss_kib < 200 * 1024,
        "peak RSS {} KiB",
        w.peak_rss_kib
    );
}

/// LuaJIT does not verify bytecode: a crafted chunk crashed candor (SIGSEGV, no message), given
/// to `-s` or, made by a mutated `string.dump`, to `load()`. Both are refused as text only.
#[test]
fn lua_bytecode_is_refused_in_the_script_and_in_load() {
    let out = candor()
        .args(["run", "-R", "10", "-d", "1s", "-s"])
        .arg(script("hostile_bytecode.luac"))
        .arg("http://127.0.0.1:9/")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("hostile_bytecode.luac: a precompiled (bytecode) chunk: candor loads Lua source text only"),
        "{stderr}"
    );
    let out = candor()
        .args(["run", "-R", "10", "-d", "1s", "-s"])
        .arg(script("hostile_bytecode_load.lua"))
        .arg("http://127.0.0.1:9/")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    // The script's own error, raised after load() refused the chunk (LuaJIT's words).
    assert!(
        stderr.contains("load() said: attempt to load chunk with wrong mode"),
        "{stderr}"
    );
}

/// A `request()` doubling a string reached 1.46 GB (and a 1 s run took 7.5 s). Each Lua state
/// now has a heap limit (256 MiB by default): the string's next doubling past it fails
/// `request()`, the run stops with one line naming the callback. Bound: one state's 256 MiB
/// plus the process (~50 MB) plus the last string copied once into the send buffer (< 128 MB)
/// stays under 600 MB, where the defect passed a GB.
#[test]
fn a_request_that_grows_without_end_stops_at_the_heap_limit() {
    let _s = serial();
    let server = Server::start(&[]);
    let dir = tempdir();
    let json = dir.join("out.json");
    let mut cmd = candor();
    cmd.args([
        "run", "-q", "-R", "50", "-d", "20s", "-c", "1", "-t", "1", "-s",
    ])
    .arg(script("hostile_request_doubling.lua"))
    .arg("--json")
    .arg(&json)
    .arg(&server.url);
    // 60 s: the limit is reached within ~30 calls (under a second at 50/s); the run ends there.
    let w = run_watched(cmd, Duration::from_secs(60));
    assert!(!w.killed, "not stopped: {}", w.stderr);
    assert_eq!(w.status.code(), Some(1), "{}", w.stderr);
    assert!(
        w.stderr.contains(
            "the script's Lua heap reached its limit of 256 MiB in request() (--script-memory sets it)"
        ),
        "{}",
        w.stderr
    );
    assert!(
        w.peak_rss_kib < 600 * 1024,
        "peak RSS {} KiB",
        w.peak_rss_kib
    );
    assert!(w.elapsed < Duration::from_secs(20), "{:?}", w.elapsed);
    let v = read_json(&json);
    assert_balanced(&v);
    assert_eq!(v["stop_reason"], "abort", "{}", v["stop"]);

    // --script-memory lowers it: the same script stops at 32 MiB.
    let mut cmd = candor();
    cmd.args(["run", "-q", "-R", "50", "-d", "20s", "-c", "1", "-t", "1"])
        .args(["--script-memory", "32MiB", "-s"])
        .arg(script("hostile_request_doubling.lua"))
        .arg(&server.url);
    let w = run_watched(cmd, Duration::from_secs(60));
    assert_eq!(w.status.code(), Some(1), "{}", w.stderr);
    assert!(
        w.stderr
            .contains("the script's Lua heap reached its limit of 32 MiB in request()"),
        "{}",
        w.stderr
    );
    // 32 MiB of heap, a 16 MiB string copied once, and the process: under 200 MB.
    assert!(
        w.peak_rss_kib < 200 * 1024,
        "peak RSS {} KiB",
        w.peak_rss_kib
    );
}

/// A 100 MB `request()` string cost up to 767 MB (copied to be kept and to be sent) while
/// `--body-file` is capped at 64 MiB. One call may now return at most 64 MiB: the run stops at
/// the first such call with one line, and none is sent. Bound: the Lua heap holds the 70 MiB
/// body, the request made from it and LuaJIT's buffer for the concatenation (up to 128 MiB):
/// ~270 MiB, the script's own doing (hence `--script-memory 1GiB`); nothing is copied out:
/// under 450 MB with the process.
#[test]
fn a_request_larger_than_a_body_file_may_be_is_refused() {
    let _s = serial();
    let server = Server::start(&[]);
    let mut cmd = candor();
    cmd.args(["run", "-q", "-R", "10", "-d", "5s", "-c", "1", "-t", "1"])
        .args(["--script-memory", "1GiB", "-s"])
        .arg(script("hostile_huge_request.lua"))
        .arg(&server.url);
    let w = run_watched(cmd, Duration::from_secs(60));
    assert!(!w.killed);
    assert_eq!(w.status.code(), Some(1), "{}", w.stderr);
    assert!(
        w.stderr.contains(
            "request() returned an invalid HTTP request: 73400374 bytes, more than 64 MiB, the most one call may return (as --body-file)"
        ),
        "{}",
        w.stderr
    );
    assert!(
        w.peak_rss_kib < 450 * 1024,
        "peak RSS {} KiB",
        w.peak_rss_kib
    );
}

/// A `done()` printing 200 MB took 632 MB: everything printed was held until the end. done()'s
/// output is now written as it is printed: printing 100 MB costs no more than a small run
/// (under 150 MB peak, where the held copies alone were 200 MB and more).
#[test]
fn what_done_prints_is_streamed_not_held() {
    let _s = serial();
    let server = Server::start(&[]);
    let mut cmd = candor();
    cmd.args([
        "run", "-q", "-R", "20", "-d", "1s", "-c", "1", "-t", "1", "-s",
    ])
    .arg(script("hostile_done_print.lua"))
    .arg(&server.url);
    let w = run_watched(cmd, Duration::from_secs(120));
    assert!(!w.killed);
    assert_eq!(w.status.code(), Some(0), "{}", w.stderr);
    let line = "x".repeat(999);
    assert_eq!(
        w.stdout.lines().filter(|l| *l == line).count(),
        100_000,
        "every line printed reaches stdout"
    );
    assert!(
        w.peak_rss_kib < 150 * 1024,
        "peak RSS {} KiB",
        w.peak_rss_kib
    );
}

/// Waits until candor has its SIGINT/SIGTERM handlers (it reacts to signals only then).
fn wait_for_file(path: &std::path::Path, child: &mut std::process::Child) {
    let t0 = Instant::now();
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            if serde_json::from_str::<serde_json::Value>(&text).is_ok() {
                return;
            }
        }
        if t0.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("{path:?} never written");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn ends_within(child: &mut std::process::Child, limit: Duration) -> std::process::ExitStatus {
    let t0 = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("still running {limit:?} after the signal");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A `done()` that never returns ignored SIGTERM and the first SIGINT. It runs after the results
/// are written; a signal now stops it at once (exit 143 for SIGTERM, 130 for SIGINT), the JSON
/// stays as written. Bound: 20 s after the signal (the hook checks every 1,000 instructions).
#[test]
fn a_signal_stops_an_endless_done() {
    let _s = serial();
    let server = Server::start(&[]);
    for (signal, code) in [(libc::SIGTERM, 143), (libc::SIGINT, 130)] {
        let dir = tempdir();
        let json = dir.join("out.json");
        let mut child = candor()
            .args([
                "run", "-q", "-R", "20", "-d", "1s", "-c", "1", "-t", "1", "-s",
            ])
            .arg(script("hostile_done_loop.lua"))
            .arg("--json")
            .arg(&json)
            .arg(&server.url)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The JSON is written before done() runs: once it is there, candor is in done().
        wait_for_file(&json, &mut child);
        std::thread::sleep(Duration::from_millis(300));
        // SAFETY: kill only sends a signal to the child this test started.
        assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
        let status = ends_within(&mut child, Duration::from_secs(20));
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(status.code(), Some(code), "{stderr}");
        assert!(
            stderr.contains("script interrupted while in done()"),
            "{stderr}"
        );
        let v = read_json(&json);
        assert_balanced(&v);
        assert!(req(&v, "completed") > 0);
    }
}

/// A `response()` that never returns kept a 1 s run going (12 s, or for ever). At the end of the
/// run's window and drain (plus a second's grace) the script is stopped, the results written and
/// the run marked: `-d 1s --drain 1s` ends within 1 + 1 + 1 s and a generous 15 s for a slow
/// machine, where the defect never ended.
#[test]
fn a_callback_running_past_the_end_of_the_run_is_stopped_there() {
    let _s = serial();
    let server = Server::start(&[]);
    let dir = tempdir();
    let json = dir.join("out.json");
    let mut cmd = candor();
    cmd.args([
        "run", "-q", "-R", "20", "-d", "1s", "--drain", "1s", "-c", "1", "-t", "1",
    ])
    .arg("-s")
    .arg(script("hostile_response_loop.lua"))
    .arg("--json")
    .arg(&json)
    .arg(&server.url);
    let w = run_watched(cmd, Duration::from_secs(60));
    assert!(!w.killed, "never ended: {}", w.stderr);
    assert!(w.elapsed < Duration::from_secs(18), "{:?}", w.elapsed);
    assert_eq!(w.status.code(), Some(1), "{}", w.stderr);
    assert!(
        w.stderr.contains(
            "response() was still running at the end of the run (the duration and the drain) and was stopped there"
        ),
        "{}",
        w.stderr
    );
    let v = read_json(&json);
    assert_balanced(&v);
    assert_eq!(v["stop_reason"], "abort");
}

/// `os.exit(3)` killed candor with no report: a 0-byte JSON, a 0-byte `.hlog`, exit 3 (candor's
/// own SLO code). It now stops the run as `thread:stop()` does: results written and marked,
/// one line, exit 1 (0 for `os.exit(0)`).
#[test]
fn os_exit_stops_the_run_with_results_written() {
    let _s = serial();
    let server = Server::start(&[]);
    let dir = tempdir();
    let json = dir.join("out.json");
    let hlog = dir.join("out.hlog");
    let mut cmd = candor();
    cmd.args([
        "run", "-q", "-R", "200", "-d", "20s", "-c", "2", "-t", "1", "-s",
    ])
    .arg(script("hostile_exit.lua"))
    .arg("--json")
    .arg(&json)
    .arg("--hlog")
    .arg(&hlog)
    .arg(&server.url);
    let w = run_watched(cmd, Duration::from_secs(60));
    assert!(!w.killed);
    assert_eq!(w.status.code(), Some(1), "{}", w.stderr);
    assert!(
        w.stderr
            .contains("candor: error: the script called os.exit(3) in response()"),
        "{}",
        w.stderr
    );
    assert!(w.elapsed < Duration::from_secs(15), "{:?}", w.elapsed);
    let v = read_json(&json);
    assert_balanced(&v);
    assert_eq!(v["stop_reason"], "abort");
    assert!(
        v["stop"]["detail"]
            .as_str()
            .unwrap_or("")
            .contains("os.exit(3)"),
        "{}",
        v["stop"]
    );
    assert!(req(&v, "completed") >= 19);
    assert!(std::fs::metadata(&hlog).unwrap().len() > 0);

    // os.exit(0), even inside a pcall: the same stop, exit 0.
    let mut cmd = candor();
    cmd.args([
        "run", "-q", "-R", "200", "-d", "20s", "-c", "2", "-t", "1", "-s",
    ])
    .arg(script("hostile_exit0.lua"))
    .arg("--json")
    .arg(&json)
    .arg(&server.url);
    let w = run_watched(cmd, Duration::from_secs(60));
    assert_eq!(w.status.code(), Some(0), "{}", w.stderr);
    assert!(w.elapsed < Duration::from_secs(15), "{:?}", w.elapsed);
    let v = read_json(&json);
    assert_balanced(&v);
    assert_eq!(v["stop_reason"], "abort");
    assert!(
        v["stop"]["detail"]
            .as_str()
            .unwrap_or("")
            .contains("the script called os.exit(0) in response()"),
        "{}",
        v["stop"]
    );

    // One thread's os.exit(0) with two threads: the other thread's calls that returned stand,
    // and those the exit ended are no verdict, so no response fails its check and no entry
    // fails unmade; what the stop kept from being sent is unfinished. (Before, every call of
    // the other thread after the exit failed: its responses as `check`, its requests as
    // `template`, and thread 1's own response too.)
    let mut cmd = candor();
    cmd.args([
        "run", "-q", "-R", "200", "-d", "20s", "-c", "2", "-t", "2", "-s",
    ])
    .arg(script("hostile_exit_one_thread.lua"))
    .arg("--json")
    .arg(&json)
    .arg(&server.url);
    let w = run_watched(cmd, Duration::from_secs(60));
    assert!(!w.killed);
    assert_eq!(w.status.code(), Some(0), "{}", w.stderr);
    assert!(w.elapsed < Duration::from_secs(15), "{:?}", w.elapsed);
    let v = read_json(&json);
    assert_balanced(&v);
    assert_eq!(v["stop_reason"], "abort");
    assert!(
        v["stop"]["detail"]
            .as_str()
            .unwrap_or("")
            .contains("the script called os.exit(0) in response()"),
        "{}",
        v["stop"]
    );
    assert_eq!(v["requests"]["errors"]["check"], 0, "{}", v["requests"]);
    assert_eq!(v["requests"]["errors"]["template"], 0, "{}", v["requests"]);
    assert_eq!(req(&v, "failed"), 0, "{}", v["requests"]);
    assert!(req(&v, "completed") >= 5, "{}", v["requests"]);
}

/// `io.write` ignored `io.output(file)` (the file stayed empty, the text went to stdout) and
/// returned nil where LuaJIT returns the file.
#[test]
fn io_write_follows_io_output_and_returns_the_file() {
    let _s = serial();
    let server = Server::start(&[]);
    let dir = tempdir();
    let file = dir.join("written.txt");
    let out = candor()
        .args([
            "run", "-q", "-R", "10", "-d", "1s", "-c", "1", "-t", "1", "-s",
        ])
        .arg(script("hostile_io_output.lua"))
        .arg(&server.url)
        .arg("--")
        .arg(&file)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "to the file 42\n");
    assert!(!stdout.contains("to the file"), "{stdout}");
    assert!(stdout.contains("to stdout"), "{stdout}");
}
