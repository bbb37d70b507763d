//! The `candor-grpc-test-server` binary: it prints where it listens, serves what its flags say,
//! refuses bad flags in one line, and stops on SIGTERM.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use candor_grpc::test_server::pb::bench_client::BenchClient;
use candor_grpc::test_server::pb::EchoRequest;

const BIN: &str = env!("CARGO_BIN_EXE_candor-grpc-test-server");

/// The server process, killed if a test ends before it stopped it.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        if self.0.try_wait().ok().flatten().is_none() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// Starts the binary and reads its `listening on ADDR` line.
fn start(args: &[&str]) -> (Server, SocketAddr) {
    let mut child = Command::new(BIN)
        .args(["--addr", "127.0.0.1:0"])
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .parse()
        .unwrap();
    (Server(child), addr)
}

fn wait_bounded(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if started.elapsed() > limit {
            child.kill().unwrap();
            panic!("the server did not stop within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test]
async fn the_binary_serves_its_flags_and_stops_on_sigterm() {
    let (mut server, addr) = start(&["--fail", "NOT_FOUND", "--fail-every", "2", "--reflection"]);
    let mut client = BenchClient::connect(format!("http://{addr}"))
        .await
        .unwrap();
    let request = || EchoRequest {
        name: "bin".to_string(),
        ..Default::default()
    };
    assert!(client.echo(request()).await.is_ok());
    let status = client.echo(request()).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::NotFound);
    let target = candor_grpc::reflect::ReflectTarget {
        addr,
        authority: addr.to_string(),
        tls: None,
        timeout: Duration::from_secs(20),
    };
    let services =
        tokio::task::spawn_blocking(move || candor_grpc::reflect::list_services(&target))
            .await
            .unwrap()
            .unwrap();
    assert!(services.contains(&"candor.bench.Bench".to_string()));
    drop(client);

    let killed = Command::new("kill")
        .args(["-TERM", &server.0.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    assert!(wait_bounded(&mut server.0, Duration::from_secs(20)).success());
}

#[test]
fn a_stall_longer_than_its_period_is_refused_in_one_line() {
    let output = Command::new(BIN)
        .args([
            "--addr",
            "127.0.0.1:0",
            "--stall-every",
            "1s",
            "--stall-for",
            "2s",
        ])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("invalid stall"), "{stderr}");
    assert!(output.stdout.is_empty());
}
