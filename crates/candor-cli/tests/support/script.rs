//! What the script tests share: the scripts of `tests/scripts/`, a folder per run, and a server
//! that records every request's head and answers a login with a token later requests must carry.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use crate::common;

pub fn script(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/scripts")
        .join(name)
        .display()
        .to_string()
}

/// The token the login of `/login` answers with; `/api/...` wants it as a bearer token.
pub const TOKEN: &str = "t0k3n";

/// A server that records the head of every request and answers: `POST /login` with the token,
/// `/api/...` with 200 only when it carries the token (else 401 with `X-Why`), anything else 200.
/// Returns its URL and the heads it received; it serves until the test process ends.
pub fn recording_server() -> (String, Arc<Mutex<Vec<String>>>) {
    serve(false)
}

/// [`recording_server`]; with `hold_login`, the login is answered only once a request without
/// the token has been answered 401 on another connection (or after 10 s), so that a run with
/// several connections certainly sends some before the token is known.
pub fn serve(hold_login: bool) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let heads = Arc::new(Mutex::new(Vec::new()));
    let seen = heads.clone();
    let refused = Arc::new((Mutex::new(false), Condvar::new()));
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let seen = seen.clone();
            let refused = refused.clone();
            std::thread::spawn(move || {
                let mut stream = stream;
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    let n = match stream.read(&mut chunk) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => n,
                    };
                    buf.extend_from_slice(&chunk[..n]);
                    while let Some(head) = common::take_request_head(&mut buf) {
                        let answer = answer(&head);
                        let (flag, cond) = &*refused;
                        if answer.contains(" 401 ") {
                            *flag.lock().unwrap() = true;
                            cond.notify_all();
                        } else if hold_login && head.starts_with("POST /login") {
                            let held = flag.lock().unwrap();
                            let _ = cond
                                .wait_timeout_while(held, Duration::from_secs(10), |r| !*r)
                                .unwrap();
                        }
                        seen.lock().unwrap().push(head);
                        if stream.write_all(answer.as_bytes()).is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    (url, heads)
}

pub fn answer(head: &str) -> String {
    let line = head.lines().next().unwrap_or("");
    let (status, why, body) = if line.starts_with("POST /login ") {
        ("200 OK", "", format!("token={TOKEN}"))
    } else if line.contains(" /api/") {
        if head.contains(&format!("Authorization: Bearer {TOKEN}")) {
            ("200 OK", "", "ok".to_string())
        } else {
            ("401 Unauthorized", "X-Why: no-token\r\n", "no".to_string())
        }
    } else {
        ("200 OK", "", "ok".to_string())
    };
    format!(
        "HTTP/1.1 {status}\r\n{why}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

pub fn tempdir() -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "candor-e2e-script-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
