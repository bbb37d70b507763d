//! What the live-view tests share: the run in the background with its live address, plain HTTP
//! reads, and a Prometheus of the test's own scraping it.

use super::common::candor;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Generous bound for anything that waits on a process on a loaded 2-core machine.
pub const PATIENCE: Duration = Duration::from_secs(120);

pub fn temp_dir(tag: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let p = std::env::temp_dir().join(format!("candor-{tag}-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&p).unwrap();
    p
}

pub fn artefact_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    let dir = target.join("candor-live-artefacts");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A child process killed (and reaped) when dropped.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A `candor run --live 127.0.0.1:0 ...` in the background, with the address it printed.
pub struct LiveRun {
    pub _child: Killed,
    pub addr: SocketAddr,
    pub stdout: std::sync::Arc<std::sync::Mutex<String>>,
}

impl LiveRun {
    pub fn start(args: &[&str]) -> LiveRun {
        let mut child = candor()
            .arg("run")
            .args(["--live", "127.0.0.1:0"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn candor run");
        let stderr = child.stderr.take().unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Some(rest) = line.split("live view at http://").nth(1) {
                    let addr = rest.split('/').next().unwrap().to_string();
                    let _ = tx.send(addr);
                }
                eprintln!("[candor run] {line}");
            }
        });
        let out = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let into = out.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut buf) {
                if n == 0 {
                    break;
                }
                into.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        let child = Killed(child);
        let addr = rx
            .recv_timeout(PATIENCE)
            .expect("candor run printed its live address")
            .parse()
            .expect("a socket address");
        LiveRun {
            _child: child,
            addr,
            stdout: out,
        }
    }

    /// Waits (bounded) until the run has written its results JSON on stdout, and returns it.
    /// The live server lingers on; dropping the run stops it.
    pub fn stdout_json(&self) -> serde_json::Value {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let text = self.stdout.lock().unwrap().clone();
            // Until the document is complete it does not parse; once it does, it must be all
            // there is (stdout stays clean of the live view's messages).
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) {
                return v;
            }
            assert!(Instant::now() < deadline, "no results on stdout: {text:?}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

pub fn http_get(addr: SocketAddr, path: &str) -> String {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).expect("read response");
    out
}

pub fn body(response: &str) -> &str {
    response.split_once("\r\n\r\n").map(|x| x.1).unwrap_or("")
}

/// Percent-encodes a PromQL expression for a query string.
pub fn encode(q: &str) -> String {
    q.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A Prometheus server of our own on a free loopback port, with its own storage, scraping `target`
/// every second; with `native`, under `--enable-feature=native-histograms` (it then asks for the
/// protobuf exposition and keeps native histograms).
pub struct Prometheus {
    _child: Killed,
    pub addr: SocketAddr,
    dir: PathBuf,
}

impl Prometheus {
    pub fn start(target: SocketAddr, native: bool) -> Prometheus {
        let dir = temp_dir("prometheus");
        let config = dir.join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n\
                 scrape_configs:\n  - job_name: candor\n    static_configs:\n      - targets: ['{target}']\n"
            ),
        )
        .unwrap();
        // The port is chosen by binding and releasing it; should another process take it in
        // between, Prometheus exits and the next attempt picks another.
        for _attempt in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
            let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
            let child = Command::new("prometheus")
                .arg(format!("--config.file={}", config.display()))
                .arg(format!(
                    "--storage.tsdb.path={}",
                    dir.join("data").display()
                ))
                .arg(format!("--web.listen-address={addr}"))
                .arg("--log.level=warn")
                .args(native.then_some("--enable-feature=native-histograms"))
                .stdout(log.try_clone().unwrap())
                .stderr(log)
                .spawn()
                .expect("prometheus not found: run scripts/install-test-deps.sh");
            let mut child = Killed(child);
            let deadline = Instant::now() + PATIENCE;
            loop {
                if child.0.try_wait().unwrap().is_some() {
                    break;
                }
                if TcpStream::connect(addr).is_ok()
                    && http_get(addr, "/-/ready").starts_with("HTTP/1.1 200")
                {
                    return Prometheus {
                        _child: child,
                        addr,
                        dir,
                    };
                }
                assert!(Instant::now() < deadline, "prometheus not ready in time");
                std::thread::sleep(Duration::from_millis(200));
            }
        }
        panic!(
            "prometheus would not start: {}",
            std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default()
        );
    }

    /// The single value of an instant query, if it has one yet.
    pub fn query(&self, promql: &str) -> Option<f64> {
        let r = http_get(
            self.addr,
            &format!("/api/v1/query?query={}", encode(promql)),
        );
        let v: serde_json::Value = serde_json::from_str(body(&r)).ok()?;
        assert_eq!(v["status"], "success", "{promql}: {v}");
        let result = v["data"]["result"].as_array()?;
        assert!(result.len() <= 1, "{promql}: one series expected: {v}");
        result.first()?["value"][1].as_str()?.parse().ok()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
