//! The gRPC flags of `candor run` (`--proto`, `--import-path`, `--reflect`, `--call`, the JSON
//! of `--body`, `-H` as metadata, `-T` as `grpc-timeout`, gRPC status names in
//! `--check-status`), made into the HTTP/2 request a `grpc://` or `grpcs://` run sends, before
//! any load: every mistake is a one-line error here.

use crate::flags::{FlagError, LoadArgs};
use candor_grpc::{
    CallName, CodeSet, GrpcMethod, GrpcTimeout, Metadata, RequestEncoder, StaticMessage,
};
use candor_load::{GrpcConfig, LoadConfig, Scheme};
use std::time::Duration;

type Result<T> = std::result::Result<T, FlagError>;

/// How long `--reflect` waits for the server's descriptors, connecting included.
const REFLECT_TIMEOUT: Duration = Duration::from_secs(5);

fn invalid(e: impl std::fmt::Display) -> FlagError {
    FlagError::Invalid(e.to_string())
}

/// The gRPC side of the load flags, apart from clap (tests and other front ends fill it).
#[derive(Debug, Clone, Default)]
pub struct GrpcFlags {
    /// `--call package.Service/Method`.
    pub call: Option<String>,
    /// `--proto` files and `--import-path` directories.
    pub proto: Vec<std::path::PathBuf>,
    pub import_path: Vec<std::path::PathBuf>,
    /// `--reflect`.
    pub reflect: bool,
    /// `-H` lines: the call's metadata.
    pub headers: Vec<String>,
    /// `--check-status`: gRPC status names or numbers.
    pub check_status: Option<String>,
    /// `--requests` or `--replay` given (not for gRPC yet).
    pub request_set: bool,
}

impl GrpcFlags {
    pub fn of(a: &LoadArgs) -> GrpcFlags {
        GrpcFlags {
            call: a.call.clone(),
            proto: a.proto.clone(),
            import_path: a.import_path.clone(),
            reflect: a.reflect,
            headers: a.headers.clone(),
            check_status: a.check_status.clone(),
            request_set: a.requests.is_some() || a.replay.is_some(),
        }
    }
}

/// Makes `c` (its target, `-T` and body already read from the flags) the gRPC call `a`
/// describes, or refuses the gRPC flags for a target that is not gRPC.
pub fn apply(a: &GrpcFlags, c: &mut LoadConfig) -> Result<()> {
    if !c.target.grpc {
        let given = [
            (a.call.is_some(), "--call"),
            (!a.proto.is_empty(), "--proto"),
            (!a.import_path.is_empty(), "--import-path"),
            (a.reflect, "--reflect"),
        ];
        if let Some((_, flag)) = given.iter().find(|(g, _)| *g) {
            return Err(invalid(format!(
                "{flag} applies to grpc:// and grpcs:// targets (e.g. grpc://127.0.0.1:50051)"
            )));
        }
        return Ok(());
    }
    let Some(call) = &a.call else {
        return Err(invalid(
            "a gRPC target needs the method to call: --call package.Service/Method",
        ));
    };
    let call = CallName::parse(call).map_err(invalid)?;
    if !matches!(c.method.as_str(), "GET" | "POST") {
        return Err(invalid(
            "-m/--method does not apply to gRPC targets: every call is a POST to the method's path",
        ));
    }
    if a.request_set {
        return Err(invalid(
            "--requests and --replay do not apply to gRPC targets yet: one --call per run",
        ));
    }
    let pool = match (a.reflect, a.proto.is_empty()) {
        (true, false) => {
            return Err(invalid(
                "--reflect and --proto both describe the service: give one",
            ))
        }
        (true, true) => {
            let tls = match c.target.scheme {
                Scheme::Https => Some(
                    candor_load::transport::tls::client_config(&c.tls, &[b"h2"])
                        .map_err(invalid)?,
                ),
                _ => None,
            };
            let target = candor_grpc::reflect::ReflectTarget {
                addr: c.target.addr,
                authority: c.target.host_header.clone(),
                tls,
                timeout: REFLECT_TIMEOUT,
            };
            candor_grpc::reflect::fetch_descriptors(&target, &[call.service()])
                .map_err(invalid)?
        }
        (false, false) => {
            candor_grpc::compile_protos(&a.proto, &a.import_path).map_err(invalid)?
        }
        (false, true) => {
            return Err(invalid(
                "a gRPC call needs its service's descriptors: --proto FILE.proto (with --import-path DIR for its imports) or --reflect",
            ))
        }
    };
    let method = GrpcMethod::resolve_supported(&pool, &call).map_err(invalid)?;
    if c.body.is_empty() {
        c.body = b"{}".to_vec();
    }
    // Placeholders make the message per request (its JSON filled, then encoded); without them
    // it is encoded once, here.
    let templated = c.body.windows(2).any(|w| w == b"{{");
    let encoder = RequestEncoder::new(method.input());
    let body = if templated {
        c.body.clone()
    } else {
        StaticMessage::from_json(method.input(), &c.body)
            .map_err(|e| invalid(format!("--body: {e}")))?
            .framed()
            .to_vec()
    };
    let mut headers = vec![
        "content-type: application/grpc".to_string(),
        "te: trailers".to_string(),
        format!(
            "grpc-timeout: {}",
            GrpcTimeout::from_ns(c.timeout_ns).as_str()
        ),
    ];
    for line in &a.headers {
        let m = Metadata::parse(line).map_err(invalid)?;
        headers.push(format!("{}: {}", m.name(), m.value()));
    }
    let accept = match &a.check_status {
        Some(list) => list.parse::<CodeSet>().map_err(invalid)?,
        None => CodeSet::OK_ONLY,
    };
    c.method = "POST".into();
    c.target.path = method.path().to_string();
    c.headers = headers;
    c.body = body;
    c.http2 = true;
    // A gRPC answer is HTTP 200; any other HTTP status fails in class `status`.
    c.accept_status = candor_load::StatusSet::parse("200").map_err(invalid)?;
    c.grpc = Some(GrpcConfig {
        call: call.to_string(),
        kind: method.kind(),
        accept,
        templated: templated.then(|| encoder.clone()),
    });
    if templated {
        // The first request's JSON, filled as the run will fill it, must fit the message:
        // a template that never can is a mistake to name now, not a run of failures.
        let json = candor_load::config::request_set::filled_body(c, 0)?;
        let mut framed = Vec::new();
        encoder.encode_framed(&json, &mut framed).map_err(|e| {
            invalid(format!(
                "--body: request 0 filled as {}: {e}",
                String::from_utf8_lossy(&json)
            ))
        })?;
    }
    Ok(())
}
