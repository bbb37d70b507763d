//! A canned HTTP/1.1 server for the hostile-peer tests: on a loopback port it chose, it reads
//! each request (its head, then as many body bytes as its Content-Length says) and answers as it
//! is told; stopped and joined when dropped. Connection threads end when the client closes or
//! after 5 s of silence.
// Each test binary that includes it uses a part.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// What the server does with one request.
#[derive(Clone)]
pub enum Answer {
    /// Writes these bytes (a whole response) and waits for the next request.
    Whole(Vec<u8>),
    /// Writes these bytes (a head and part of a body), then sends nothing more until the
    /// client closes.
    Hang(Vec<u8>),
}

/// The server; its `url` is `http://127.0.0.1:PORT/`.
pub struct Canned {
    pub url: String,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl Canned {
    /// Answers every request with `answer`.
    pub fn always(answer: Answer) -> Canned {
        Canned::start(move |_| answer.clone())
    }

    /// Answers each request as `answer` says of its head (lowercased: `get /v1/models ...`).
    pub fn start(answer: impl Fn(&str) -> Answer + Send + Sync + 'static) -> Canned {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        listener.set_nonblocking(true).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let answer = Arc::new(answer);
        let accept = std::thread::spawn(move || {
            while !stopping.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((s, _)) => {
                        let answer = answer.clone();
                        std::thread::spawn(move || serve(s, &*answer));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Canned {
            url,
            stop,
            accept: Some(accept),
        }
    }
}

impl Drop for Canned {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

fn serve(mut s: TcpStream, answer: &dyn Fn(&str) -> Answer) {
    let _ = s.set_nonblocking(false);
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let mut buf = Vec::new();
    let mut read = [0u8; 4096];
    loop {
        let head_end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            match s.read(&mut read) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&read[..n]),
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        while buf.len() < head_end + length {
            match s.read(&mut read) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&read[..n]),
            }
        }
        buf.drain(..head_end + length);
        match answer(&head) {
            Answer::Whole(bytes) => {
                if s.write_all(&bytes).is_err() {
                    return;
                }
            }
            Answer::Hang(bytes) => {
                let _ = s.write_all(&bytes);
                while matches!(s.read(&mut read), Ok(n) if n > 0) {}
                return;
            }
        }
    }
}
