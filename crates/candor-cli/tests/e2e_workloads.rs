//! End-to-end tests of the workload features against a local server that records when each
//! request arrived, so that the shape of the load is checked as the server saw it.

mod common;
use common::*;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// A recording HTTP/1.1 server: answers every request `200 ok` on a thread per connection and
/// keeps the arrival instant and request line of each. Stops with the test process.
struct Recorder {
    url: String,
    arrivals: Arc<Mutex<Vec<(Instant, String)>>>,
}

impl Recorder {
    fn start() -> Recorder {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let arrivals = Arc::new(Mutex::new(Vec::new()));
        let log = arrivals.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let log = log.clone();
                std::thread::spawn(move || serve(stream, &log));
            }
        });
        Recorder { url, arrivals }
    }

    /// Arrival offsets in seconds from the first, in arrival order, and the request lines.
    fn seen(&self) -> Vec<(f64, String)> {
        let mut v = self.arrivals.lock().unwrap().clone();
        v.sort_by_key(|a| a.0);
        let Some(first) = v.first().map(|a| a.0) else {
            return Vec::new();
        };
        v.into_iter()
            .map(|(t, line)| ((t - first).as_secs_f64(), line))
            .collect()
    }
}

/// Reads GET requests (no bodies) off one connection and answers each.
fn serve(mut stream: TcpStream, log: &Mutex<Vec<(Instant, String)>>) {
    let _ = stream.set_nodelay(true);
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    loop {
        while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_string();
            buf.drain(..end + 4);
            let line = head.lines().next().unwrap_or("").to_string();
            log.lock().unwrap().push((Instant::now(), line));
            if stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                .is_err()
            {
                return;
            }
        }
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// A ramp 100..900/s over 4 s sends where its integral 100τ + 100τ² reaches each k: 200, 400,
/// 600 and 800 requests in its four seconds, 2000 in all, exactly, and the server sees that shape.
#[test]
fn a_ramp_arrives_as_a_ramp() {
    let _g = serial();
    let server = Recorder::start();
    let (v, _) = run_json(&[
        "-R",
        "100..900:4s",
        "-c",
        "8",
        "-t",
        "2",
        &format!("{}/ramp", server.url),
    ]);
    assert_balanced(&v);
    assert_eq!(req(&v, "intended"), 2000, "the ramp's integral is 2000");
    assert_eq!(req(&v, "completed"), 2000);
    assert_eq!(v["duration_s"].as_f64(), Some(4.0));
    let seen = server.seen();
    assert_eq!(seen.len(), 2000);
    // The intended offset of send k solves 100τ + 100τ² = k. Anchor the server's clock on the
    // median of (arrival − intended) over all requests, so a late first request or the loopback
    // delay does not shift the bins.
    let intended = |k: usize| (-100.0 + (100.0f64 * 100.0 + 400.0 * k as f64).sqrt()) / 200.0;
    let mut shift: Vec<f64> = seen
        .iter()
        .enumerate()
        .map(|(k, (t, _))| t - intended(k))
        .collect();
    shift.sort_by(f64::total_cmp);
    let anchor = shift[shift.len() / 2];
    let mut per_second = [0i64; 4];
    for (t, _) in &seen {
        per_second[((t - anchor).max(0.0) as usize).min(3)] += 1;
    }
    eprintln!(
        "per-second arrivals as the server saw them: {per_second:?} (exact: [200, 400, 600, 800])"
    );
    // Tolerance: a bin gains or loses only requests displaced across one of its boundaries. A
    // displacement of up to 150 ms (thousands of times candor's send lag, room for a shared
    // 2-core machine's scheduler) moves at most rate × 0.15 s across a boundary where the rate
    // is 300, 500 or 700/s: 45, 75 and 105 requests, on each side of a bin.
    let exact = [200i64, 400, 600, 800];
    let slack = [45i64, 45 + 75, 75 + 105, 105];
    for i in 0..4 {
        assert!(
            (per_second[i] - exact[i]).abs() <= slack[i],
            "second {i}: {} arrivals, intended {} (±{})",
            per_second[i],
            exact[i],
            slack[i]
        );
    }
    assert!(seen.iter().all(|(_, line)| line == "GET /ramp HTTP/1.1"));
}

#[test]
fn malformed_stages_and_disagreeing_durations_are_one_line_errors() {
    let server = Recorder::start();
    for (args, expect) in [
        (vec!["-R", "500:"], "invalid stage '500:'"),
        (vec!["-R", "..100:5s"], "invalid stage '..100:5s'"),
        (vec!["-R", "100:0s"], "a stage must last longer than zero"),
        (vec!["-R", "-5:1s"], "rate '-5'"),
        (
            vec!["-R", "100:1s", "-d", "2s"],
            "-d 2s disagrees with the -R stages",
        ),
        (
            vec!["-R", "100:1s", "-n", "5"],
            "-n does not combine with -R stages",
        ),
    ] {
        let out = candor()
            .arg("run")
            .args(&args)
            .arg(&server.url)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(expect), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
    assert!(server.seen().is_empty(), "nothing may be sent on bad input");
}
