//! What the workload tests share: a recording HTTP/1.1 server (when each request arrived, and
//! its request line) with its fixed answers, and the workload files a test writes.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::common::take_request_head;

/// A recording HTTP/1.1 server: answers every request `200 ok` on a thread per connection and
/// keeps the arrival instant and request line of each. Stops with the test process.
pub struct Recorder {
    pub url: String,
    pub arrivals: Arc<Mutex<Vec<(Instant, String)>>>,
}

impl Recorder {
    pub fn start() -> Recorder {
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
    pub fn seen(&self) -> Vec<(f64, String)> {
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

/// The body of every answer to `GET /busy`: a tab and a CRLF, to be shown escaped.
pub const BUSY_BODY: &str = "over capacity\tretry in 5s\r\n";

/// `GET /busy` gets a 503 with [`BUSY_BODY`], `GET /wrong` a 200 whose body says `"ok":false`,
/// anything else `200 ok`.
fn answer_to(request_line: &str) -> &'static [u8] {
    if request_line.starts_with("GET /busy ") {
        b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 27\r\n\r\nover capacity\tretry in 5s\r\n"
    } else if request_line.starts_with("GET /wrong ") {
        b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n{\"ok\":false}"
    } else {
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    }
}

/// Reads requests (bodies by Content-Length) off one connection and answers each.
fn serve(mut stream: TcpStream, log: &Mutex<Vec<(Instant, String)>>) {
    let _ = stream.set_nodelay(true);
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    loop {
        while let Some(head) = take_request_head(&mut buf) {
            let line = head.lines().next().unwrap_or("").to_string();
            let answer = answer_to(&line);
            log.lock().unwrap().push((Instant::now(), line));
            if stream.write_all(answer).is_err() {
                return;
            }
        }
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

pub fn temp_file(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("candor-wl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}
