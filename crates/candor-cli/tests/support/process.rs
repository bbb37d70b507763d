//! A `candor` child process as the lifecycle tests drive it: a folder per test, a port nobody listens on, its signal handlers awaited, a signal sent, its exit awaited
//! within a bound, its stderr watched as it comes, and the results file it wrote.

#![allow(dead_code)]

use std::io::Read;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Output};
use std::time::{Duration, Instant};

pub fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("candor-lifecycle-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A port nobody listens on (bound, then released).
pub fn refused_url() -> String {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    format!("http://127.0.0.1:{port}/")
}

/// Waits until the child catches SIGINT and SIGTERM (its handlers are installed when the first
/// run starts), so that a signal sent next is certainly one candor handles, never the default
/// action killing a process still starting up on a busy machine.
pub fn wait_for_handlers(child: &Child) {
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

pub fn signal(child: &Child, sig: i32) {
    // SAFETY: kill only sends a signal to the child we started.
    assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
}

/// Waits up to `limit` for the child to exit; kills it and fails the test otherwise.
pub fn exit_within(mut child: Child, limit: Duration) -> (Output, Duration) {
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

pub fn read_json(path: &PathBuf) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("results written")).unwrap()
}

/// Collects the child's stderr as it comes, for a test that acts on what it says.
pub fn watch_stderr(child: &mut Child) -> std::sync::Arc<std::sync::Mutex<String>> {
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
pub fn wait_for_text(seen: &std::sync::Mutex<String>, needle: &str) {
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
