//! Bad input named by its right cause, end to end (issue 36): one line on stderr, a non-zero exit
//! and no connection to the target before the line, proved by a listener that counts the
//! connections it accepts; and `candor --help` naming every protocol `run` speaks.

mod common;

use common::*;
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A loopback listener that accepts, counts and holds connections, answering nothing, until
/// dropped.
struct Silent {
    port: u16,
    accepted: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Silent {
    fn start() -> Silent {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (a, s) = (accepted.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            let mut held: Vec<TcpStream> = Vec::new();
            while !s.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((c, _)) => {
                        a.fetch_add(1, Ordering::Relaxed);
                        held.push(c);
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Silent {
            port,
            accepted,
            stop,
            thread: Some(thread),
        }
    }

    fn accepted(&self) -> usize {
        self.accepted.load(Ordering::Relaxed)
    }
}

impl Drop for Silent {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// `candor run ARGS`: refused, with one line on stderr, which is returned.
fn refused(args: &[&str]) -> String {
    let out = candor().arg("run").args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
    assert!(!out.status.success(), "{args:?} ran: {err}");
    assert!(err.starts_with("candor: error: "), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    err
}

fn proto() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../candor-grpc/tests/proto/bench.proto")
        .display()
        .to_string()
}

#[test]
fn bad_input_is_named_by_its_cause_in_one_line_before_any_connection() {
    let _g = serial();
    let target = Silent::start();
    let grpc = format!("grpc://127.0.0.1:{}", target.port);
    let http = format!("http://127.0.0.1:{}/", target.port);
    let dir = std::env::temp_dir().join(format!("candor-e2e-messages-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let dir_text = format!("{}/", dir.display());
    let p = proto();
    let echo = "candor.bench.Bench/Echo";
    let cases: Vec<(Vec<&str>, String)> = vec![
        // These read "no such file" before.
        (
            vec![&grpc, "--proto", "/dev/null", "--call", "a.B/C"],
            "--proto /dev/null: a device or other special file, not a .proto file".into(),
        ),
        (
            vec![&grpc, "--proto", &dir_text, "--call", "a.B/C"],
            format!("--proto {dir_text}: a directory, not a .proto file"),
        ),
        // This read "expected a number with a unit", which it has.
        (
            vec!["-T", "999999999h", &http],
            "duration '999999999h' is too long: the longest is about 292 years".into(),
        ),
        // These echoed the line break itself, cutting the error in two lines.
        (
            vec![
                &grpc,
                "--proto",
                &p,
                "--call",
                echo,
                "-H",
                "x-a: b\r\nx-evil: 1",
            ],
            "-H `x-a: b\\r\\nx-evil: 1`: value must be printable ASCII".into(),
        ),
        (
            vec![&grpc, "--proto", &p, "--call", "a.B/C\r\nD"],
            "--call `a.B/C\\r\\nD`: expected package.Service/Method".into(),
        ),
    ];
    for (args, want) in cases {
        let err = refused(&args);
        assert!(err.contains(&want), "{args:?}: {err}");
    }
    assert_eq!(
        target.accepted(),
        0,
        "no connection before the input is checked"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn reflect_waits_as_long_as_the_runs_timeout() {
    let _g = serial();
    // A server that accepts and never answers: the reflection exchange times out after -T, as
    // the message says (it waited a fixed 5 s whatever -T was).
    let target = Silent::start();
    let grpc = format!("grpc://127.0.0.1:{}", target.port);
    let err = refused(&[
        &grpc,
        "--reflect",
        "--call",
        "candor.bench.Bench/Echo",
        "-T",
        "300ms",
    ]);
    assert!(
        err.contains(&format!(
            "--reflect: no answer from 127.0.0.1:{} within 300ms",
            target.port
        )),
        "{err}"
    );
}

#[test]
fn help_names_every_protocol_run_speaks() {
    let out = candor().arg("--help").output().unwrap();
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    let run = help
        .lines()
        .find(|l| l.trim_start().starts_with("run "))
        .unwrap_or_else(|| panic!("{help}"));
    for p in ["HTTP/1.1", "HTTPS", "HTTP/2", "WebSocket", "gRPC", "TCP"] {
        assert!(run.contains(p), "{p}: {run}");
    }
}
