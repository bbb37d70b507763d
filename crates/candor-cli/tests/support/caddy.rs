//! Caddy for the HTTP/3 end-to-end tests: a child process on a loopback port chosen here,
//! serving a Caddyfile site body over HTTP/3 with its internal CA (the binary that
//! `scripts/install-test-deps.sh` built into target/test-tools/bin, or one on the PATH).

#![allow(dead_code)]

use std::net::{TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A fresh directory of this test process.
pub fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("candor-h3-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A port free on loopback for both TCP and UDP (Caddy serves HTTP/1.1 and 2 and HTTP/3 on it).
pub fn free_port() -> u16 {
    loop {
        let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = tcp.local_addr().unwrap().port();
        if UdpSocket::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

/// The Caddy that `scripts/install-test-deps.sh` installed (or one on the PATH).
pub fn caddy_bin() -> PathBuf {
    let local = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-tools/bin/caddy");
    if local.exists() {
        return local;
    }
    PathBuf::from("caddy")
}

/// A Caddy child process serving `site` (a Caddyfile site body) over HTTP/3 with its internal
/// CA; killed when dropped.
pub struct Caddy {
    pub child: Child,
    pub port: u16,
    root: PathBuf,
}

impl Caddy {
    pub fn start(name: &str, site: &str) -> Caddy {
        let dir = tmp(name);
        let port = free_port();
        let config = format!(
            "{{\n\tadmin off\n\tauto_https disable_redirects\n\tskip_install_trust\n\tstorage file_system {data}\n\tlog default {{\n\t\toutput discard\n\t}}\n}}\nhttps://127.0.0.1:{port} {{\n\ttls internal\n\t{site}\n}}\n",
            data = dir.join("data").display()
        );
        let file = dir.join("Caddyfile");
        std::fs::write(&file, config).unwrap();
        let child = Command::new(caddy_bin())
            .args(["run", "--adapter", "caddyfile", "--config"])
            .arg(&file)
            .env("XDG_DATA_HOME", dir.join("xdg"))
            .env("XDG_CONFIG_HOME", dir.join("xdg"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("caddy: run scripts/install-test-deps.sh");
        let root = dir.join("data/pki/authorities/local/root.crt");
        let leaf = dir.join("data/certificates/local/127.0.0.1/127.0.0.1.crt");
        let c = Caddy { child, port, root };
        // Ready when its CA has issued the site's certificate and its port answers TCP (it binds UDP with it); bounded.
        let until = Instant::now() + Duration::from_secs(20);
        while !(leaf.exists() && std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()) {
            assert!(Instant::now() < until, "caddy did not start on port {port}");
            std::thread::sleep(Duration::from_millis(50));
        }
        c
    }

    pub fn url(&self) -> String {
        format!("https://127.0.0.1:{}/", self.port)
    }

    pub fn ca(&self) -> String {
        self.root.display().to_string()
    }
}

impl Drop for Caddy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
