//! The gRPC test server as a process, for benchmarks (ghz, candor) and end-to-end tests:
//! prints `listening on ADDR` (and the CA file with --tls), serves until SIGINT/SIGTERM.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use candor_core::units::parse_duration_ns;
use candor_grpc::test_server::{InjectedFailure, Stall, TestServer, TestServerOptions};
use candor_grpc::Code;
use clap::Parser;

/// candor's gRPC test server: candor.bench.Bench (Echo, Stream, Collect, Chat) with delays,
/// stalls and failures on command.
#[derive(Parser)]
#[command(name = "candor-grpc-test-server")]
struct Args {
    /// Address to listen on (port 0: any free port).
    #[arg(long, default_value = "127.0.0.1:0")]
    addr: SocketAddr,
    /// Worker threads.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Added to every call, e.g. 2ms.
    #[arg(long, value_parser = duration)]
    delay: Option<Duration>,
    /// Stall every call for --stall-for, once per this period, e.g. 5s.
    #[arg(long, value_parser = duration, requires = "stall_for")]
    stall_every: Option<Duration>,
    /// Length of each stall, e.g. 1s.
    #[arg(long, value_parser = duration, requires = "stall_every")]
    stall_for: Option<Duration>,
    /// Fail calls with this status (a name such as UNAVAILABLE, or a number).
    #[arg(long)]
    fail: Option<Code>,
    /// With --fail: fail every N-th call only.
    #[arg(long, default_value_t = 1, requires = "fail")]
    fail_every: u64,
    /// Offer the reflection service.
    #[arg(long)]
    reflection: bool,
    /// Serve TLS with a self-signed certificate, written (PEM) to this file for clients.
    #[arg(long, value_name = "CA_FILE")]
    tls: Option<PathBuf>,
    /// Send GOAWAY to each connection this long after it opened, e.g. 10s.
    #[arg(long, value_parser = duration)]
    max_connection_age: Option<Duration>,
}

fn duration(text: &str) -> Result<Duration, String> {
    parse_duration_ns(text)
        .map(Duration::from_nanos)
        .map_err(|e| e.to_string())
}

fn main() -> ExitCode {
    let args = Args::parse();
    let options = TestServerOptions {
        addr: args.addr,
        threads: args.threads,
        delay: args.delay.unwrap_or_default(),
        stall: match (args.stall_every, args.stall_for) {
            (Some(every), Some(length)) => Some(Stall {
                every_ns: every.as_nanos() as u64,
                for_ns: length.as_nanos() as u64,
            }),
            _ => None,
        },
        failure: args.fail.map(|code| InjectedFailure {
            code,
            every: args.fail_every,
        }),
        reflection: args.reflection,
        tls: args.tls.is_some(),
        max_connection_age: args.max_connection_age,
    };
    let (addr, server) = match TestServer::start(options) {
        Ok(started) => started,
        Err(error) => {
            eprintln!("candor-grpc-test-server: {error}");
            return ExitCode::FAILURE;
        }
    };
    if let (Some(path), Some(pem)) = (&args.tls, server.ca_pem()) {
        if let Err(error) = std::fs::write(path, pem) {
            eprintln!("candor-grpc-test-server: --tls {}: {error}", path.display());
            return ExitCode::FAILURE;
        }
    }
    println!("listening on {addr}");
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("candor-grpc-test-server: {error}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("SIGTERM handler");
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    });
    server.shutdown();
    ExitCode::SUCCESS
}
