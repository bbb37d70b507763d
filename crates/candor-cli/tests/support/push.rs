//! What the push tests share: a remote-write (or OTLP over HTTP) receiver in this process that
//! keeps what it accepts, the series read back from a decoded write, and `candor run` with its
//! results in a file.

// Each test file uses only some of these.
#![allow(dead_code)]

use super::common::{candor, text};
use candor_push::remote_write::{decode, TimeSeries, WriteRequest};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Output;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A remote-write receiver on a loopback port: answers the `n`th request (from 0) with
/// `answer(n)`, and stops listening (connections closed) after `die_after` requests.
pub struct Receiver {
    pub url: String,
    got: Arc<Mutex<Vec<Vec<u8>>>>,
    pub requests: Arc<Mutex<usize>>,
}

impl Receiver {
    pub fn start(answer: fn(usize) -> u16, die_after: Option<usize>) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/api/v1/write", listener.local_addr().unwrap());
        let got = Arc::new(Mutex::new(Vec::new()));
        let requests = Arc::new(Mutex::new(0usize));
        let (g, r) = (got.clone(), requests.clone());
        std::thread::spawn(move || {
            // One connection at a time: the push thread uses one.
            for conn in listener.incoming() {
                let Ok(conn) = conn else { return };
                if serve(conn, answer, die_after, &g, &r) {
                    return; // dropping the listener: connections are refused from now on
                }
            }
        });
        Receiver { url, got, requests }
    }

    /// The accepted bodies, decoded as remote write.
    pub fn accepted(&self) -> Vec<WriteRequest> {
        self.bodies()
            .iter()
            .map(|b| decode(b).expect("a valid remote-write body"))
            .collect()
    }

    pub fn bodies(&self) -> Vec<Vec<u8>> {
        self.got.lock().unwrap().clone()
    }
}

/// Serves one connection's requests; true once the receiver is to die.
fn serve(
    conn: TcpStream,
    answer: fn(usize) -> u16,
    die_after: Option<usize>,
    got: &Mutex<Vec<Vec<u8>>>,
    requests: &Mutex<usize>,
) -> bool {
    conn.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut conn = conn;
    loop {
        let mut length = 0usize;
        let mut line = String::new();
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return false;
            }
            if line == "\r\n" {
                break;
            }
            let lower = line.to_ascii_lowercase();
            if let Some(v) = lower.strip_prefix("content-length:") {
                length = v.trim().parse().unwrap();
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        let n = {
            let mut r = requests.lock().unwrap();
            *r += 1;
            *r - 1
        };
        let code = answer(n);
        if code == 200 || code == 204 {
            got.lock().unwrap().push(body);
        }
        let reason = if code < 300 { "OK" } else { "No" };
        let _ = write!(
            conn,
            "HTTP/1.1 {code} {reason}\r\ncontent-length: 7\r\n\r\nanswer\n"
        );
        if die_after.is_some_and(|d| n + 1 >= d) {
            return true;
        }
    }
}

/// The value of the series `name` with label `key="value"` (and phase measured) in `w`.
pub fn sample(w: &WriteRequest, name: &str, key: &str, value: &str) -> Option<f64> {
    series(w, name, key, value).map(|t| t.samples[0].value)
}

pub fn series<'a>(
    w: &'a WriteRequest,
    name: &str,
    key: &str,
    value: &str,
) -> Option<&'a TimeSeries> {
    let has =
        |t: &TimeSeries, k: &str, v: &str| t.labels.iter().any(|l| l.name == k && l.value == v);
    w.timeseries
        .iter()
        .find(|t| has(t, "__name__", name) && (key.is_empty() || has(t, key, value)))
}

/// Runs `candor run` with `args`, results to a JSON file; returns them and the output.
pub fn run(args: &[&str]) -> (serde_json::Value, Output, Duration) {
    let dir = std::env::temp_dir().join(format!("candor-e2e-push-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{}.json", args.len()));
    let _ = std::fs::remove_file(&path);
    let t0 = Instant::now();
    let out = candor()
        .arg("run")
        .args(args)
        .args(["--quiet", "--json"])
        .arg(&path)
        .output()
        .unwrap();
    let took = t0.elapsed();
    let json = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("results written: {}", text(&out)));
    (serde_json::from_str(&json).unwrap(), out, took)
}
