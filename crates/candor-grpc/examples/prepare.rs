//! What candor will prepare for a gRPC call before any load, printed: the method, its kind, the
//! request headers and the framed message; every bad input as one line and exit status 2.
//!
//! ```text
//! cargo run -p candor-grpc --example prepare -- --proto crates/candor-grpc/tests/proto/bench.proto \
//!     --call candor.bench.Bench/Echo --body '{"name":"x","seq":1}' -H 'x-user: 7' -T 2s
//! cargo run -p candor-grpc --example prepare -- --reflect 127.0.0.1:50051 --call candor.bench.Bench/Echo --body '{}'
//! ```

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use candor_grpc::reflect::{fetch_descriptors, ReflectTarget};
use candor_grpc::{
    compile_protos, request_headers, CallName, CallScheme, CodeSet, GrpcMethod, GrpcTimeout,
    Metadata, StaticMessage,
};
use clap::Parser;

#[derive(Parser)]
struct Args {
    #[arg(long)]
    proto: Vec<PathBuf>,
    #[arg(long)]
    import_path: Vec<PathBuf>,
    /// Fetch the descriptors from this server's reflection service instead.
    #[arg(long, conflicts_with = "proto")]
    reflect: Option<SocketAddr>,
    #[arg(long)]
    call: String,
    #[arg(long, conflicts_with = "body_file")]
    body: Option<String>,
    #[arg(long)]
    body_file: Option<PathBuf>,
    #[arg(short = 'H')]
    header: Vec<String>,
    /// Timeout, e.g. 250ms.
    #[arg(short = 'T')]
    timeout: Option<String>,
    #[arg(long)]
    check_status: Option<String>,
}

fn main() -> ExitCode {
    match prepare(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::from(2)
        }
    }
}

fn prepare(args: Args) -> Result<(), String> {
    let call = CallName::parse(&args.call).map_err(|e| e.to_string())?;
    let accepted: CodeSet = args
        .check_status
        .as_deref()
        .unwrap_or("OK")
        .parse()
        .map_err(|e: candor_grpc::CodeSetError| e.to_string())?;
    let metadata = args
        .header
        .iter()
        .map(|line| Metadata::parse(line))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    let timeout = args
        .timeout
        .as_deref()
        .map(candor_core::units::parse_duration_ns)
        .transpose()
        .map_err(|e| format!("-T: {e}"))?
        .map(GrpcTimeout::from_ns);
    let (pool, authority) = match args.reflect {
        Some(addr) => {
            let target = ReflectTarget {
                addr,
                authority: addr.to_string(),
                tls: None,
                timeout: Duration::from_secs(10),
            };
            let pool = fetch_descriptors(&target, &[call.service()]).map_err(|e| e.to_string())?;
            (pool, addr.to_string())
        }
        None => (
            compile_protos(&args.proto, &args.import_path).map_err(|e| e.to_string())?,
            "localhost".to_string(),
        ),
    };
    let method = GrpcMethod::resolve_supported(&pool, &call).map_err(|e| e.to_string())?;
    let json = match (&args.body, &args.body_file) {
        (Some(body), _) => body.clone().into_bytes(),
        (None, Some(path)) => {
            std::fs::read(path).map_err(|e| format!("--body-file {}: {e}", path.display()))?
        }
        (None, None) => b"{}".to_vec(),
    };
    let message =
        StaticMessage::from_json(method.input(), &json).map_err(|e| format!("--body: {e}"))?;
    let mut text = format!(
        "call      {} ({})\nrequest   {}\nresponse  {}\naccepted  {accepted}\n",
        method.path(),
        method.kind(),
        method.input().full_name(),
        method.output().full_name()
    );
    for field in request_headers(
        CallScheme::Http,
        &authority,
        method.path(),
        timeout,
        &metadata,
    ) {
        let value = String::from_utf8_lossy(&field.value);
        text.push_str(&format!("header    {}: {value}\n", field.name));
    }
    let hex: String = message
        .framed()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    text.push_str(&format!(
        "message   {} bytes framed: {hex}\n",
        message.framed().len()
    ));
    // A reader that has gone (`| head`) ends the output quietly.
    let _ = std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes());
    Ok(())
}
