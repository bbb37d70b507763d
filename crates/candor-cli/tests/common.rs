//! Helpers shared by the end-to-end tests: the real `candor` binary, a `candor serve` process on
//! a loopback port it chose itself, and one lock so that timing-sensitive runs do not overlap on
//! a 2-core machine.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard};

static SERIAL: Mutex<()> = Mutex::new(());

/// Runs tests one at a time even when the harness runs them on several threads.
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// What a finished run printed, stdout then stderr, for assertions and their messages.
pub fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

pub fn candor() -> Command {
    Command::new(env!("CARGO_BIN_EXE_candor"))
}

/// A `candor serve` child process, killed when dropped.
pub struct Server {
    child: Child,
    pub url: String,
}

impl Server {
    pub fn start(args: &[&str]) -> Server {
        let mut child = candor()
            .arg("serve")
            .args(["--listen", "127.0.0.1:0"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn candor serve");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .expect("read serve banner");
        let url = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .unwrap_or_else(|| panic!("no URL in serve banner {line:?}"))
            .trim_end_matches(',')
            .to_string();
        Server { child, url }
    }
}

impl Server {
    /// Process id of the server (for --pause-pid).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `candor run ARGS --json FILE` and returns the parsed JSON and the process output.
pub fn run_json(args: &[&str]) -> (serde_json::Value, Output) {
    let (v, out) = run_json_any(args);
    assert!(
        out.status.success(),
        "candor run failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    (v, out)
}

/// [`run_json`] whatever the exit code (the results are written in any case).
pub fn run_json_any(args: &[&str]) -> (serde_json::Value, Output) {
    let dir = std::env::temp_dir().join(format!("candor-e2e-{}-{}", std::process::id(), unique()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("out.json");
    let out = candor()
        .arg("run")
        .args(args)
        .args(["--quiet", "--json"])
        .arg(&path)
        .output()
        .expect("run candor");
    let text = std::fs::read_to_string(&path).expect("json written");
    let _ = std::fs::remove_dir_all(&dir);
    (serde_json::from_str(&text).expect("valid json"), out)
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

/// Value in ns at percentile `p` of measure `m` ("response_time", ...).
pub fn pct(v: &serde_json::Value, m: &str, p: f64) -> f64 {
    v[m]["percentiles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| (e["percentile"].as_f64().unwrap() - p).abs() < 1e-9)
        .unwrap_or_else(|| panic!("no p{p} in {m}"))["value_ns"]
        .as_f64()
        .unwrap()
}

pub fn req(v: &serde_json::Value, k: &str) -> u64 {
    v["requests"][k].as_u64().unwrap()
}

/// intended = completed + failed + unfinished, and failures = sum of classes.
pub fn assert_balanced(v: &serde_json::Value) {
    let r = &v["requests"];
    let e = &r["errors"];
    let errors: u64 = ["connect", "read", "write", "timeout", "parse", "status"]
        .iter()
        .map(|k| e[k].as_u64().unwrap())
        .sum::<u64>()
        // Response checks' class and unsendable templates', present in files written since
        // each exists.
        + e["check"].as_u64().unwrap_or(0)
        + e["template"].as_u64().unwrap_or(0)
        + e["stream"].as_u64().unwrap_or(0)
        + e["grpc"].as_u64().unwrap_or(0)
        + e["protocol"].as_u64().unwrap_or(0);
    assert_eq!(
        req(v, "failed"),
        errors,
        "failures by class must add up: {r}"
    );
    assert_eq!(
        req(v, "intended"),
        req(v, "completed") + req(v, "failed") + req(v, "in_flight_at_end"),
        "a request vanished from the accounting: {r}"
    );
}

/// Serves HTTP/1.1 over TLS with `config` on a free loopback port, answering every request
/// `200 ok` on a thread per connection, until the test process ends; returns the port.
pub fn serve_tls_ok(config: std::sync::Arc<rustls::ServerConfig>) -> u16 {
    use std::io::Write as _;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let config = config.clone();
            std::thread::spawn(move || {
                let Ok(conn) = rustls::ServerConnection::new(config) else {
                    return;
                };
                let mut reader = BufReader::new(rustls::StreamOwned::new(conn, stream));
                loop {
                    let mut line = String::new();
                    match reader.read_line(&mut line) {
                        Ok(0) | Err(_) => return,
                        Ok(_) => {}
                    }
                    if line == "\r\n" {
                        let w = reader.get_mut();
                        if w.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                            .is_err()
                        {
                            return;
                        }
                        let _ = w.flush();
                    }
                }
            });
        }
    });
    port
}

/// Takes the next whole request (head and Content-Length body) off the front of `buf`, returning
/// its head; None while it has not fully arrived. The e2e servers that record requests share it.
#[allow(dead_code)]
pub fn take_request_head(buf: &mut Vec<u8>) -> Option<String> {
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&buf[..end]).to_string();
    let body = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    if buf.len() < end + 4 + body {
        return None;
    }
    buf.drain(..end + 4 + body);
    Some(head)
}

/// What [`run_watched`] saw of one `candor` process: its output, its peak resident memory
/// (the kernel's `ru_maxrss` of the reaped child) and how long it lived.
pub struct Watched {
    pub status: std::process::ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub peak_rss_kib: u64,
    pub elapsed: std::time::Duration,
    /// The watchdog had to kill it (it outlived `limit`).
    pub killed: bool,
}

/// Runs `cmd` to its end, killing it if it outlives `limit` (so a hostile case never hangs
/// the suite), and reads its peak RSS from `wait4`'s rusage: the bound the hardening tests
/// assert (a flood that grows memory without a cap shows here as gigabytes).
pub fn run_watched(mut cmd: Command, limit: std::time::Duration) -> Watched {
    use std::io::Read as _;
    let start = std::time::Instant::now();
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn candor");
    let pid = child.id() as libc::pid_t;
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = out.read_to_end(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = err.read_to_end(&mut s);
        s
    });
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let killed = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watchdog = {
        let (done, killed) = (done.clone(), killed.clone());
        std::thread::spawn(move || {
            while start.elapsed() < limit {
                if done.load(std::sync::atomic::Ordering::Acquire) {
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            if !done.load(std::sync::atomic::Ordering::Acquire) {
                killed.store(true, std::sync::atomic::Ordering::Release);
                // SAFETY: kill(2) on the child's pid, which is not reaped until wait4 below returns.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        })
    };
    let mut raw_status: libc::c_int = 0;
    // SAFETY: an all-zero rusage is a valid value; wait4 fills it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: wait4 on our own child, with valid out-pointers; the Child is not waited on again.
    let reaped = unsafe { libc::wait4(pid, &mut raw_status, 0, &mut usage) };
    assert_eq!(reaped, pid, "wait4 on the candor child");
    done.store(true, std::sync::atomic::Ordering::Release);
    let elapsed = start.elapsed();
    let _ = watchdog.join();
    std::mem::forget(child);
    use std::os::unix::process::ExitStatusExt as _;
    Watched {
        status: std::process::ExitStatus::from_raw(raw_status),
        stdout: String::from_utf8_lossy(&out_reader.join().unwrap()).into_owned(),
        stderr: String::from_utf8_lossy(&err_reader.join().unwrap()).into_owned(),
        peak_rss_kib: usage.ru_maxrss as u64,
        elapsed,
        killed: killed.load(std::sync::atomic::Ordering::Acquire),
    }
}
