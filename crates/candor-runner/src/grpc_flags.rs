//! The gRPC flags of `candor run` (`--proto`, `--import-path`, `--reflect`, `--call`, the JSON
//! of `--body`, `-H` as metadata, `-T` as `grpc-timeout`, gRPC status names in
//! `--check-status`), made into the HTTP/2 request a `grpc://` or `grpcs://` run sends, before
//! any load: every mistake is a one-line error here.

use crate::flags::args::LoadArgs;
use crate::flags::error::FlagError;
use candor_grpc::{
    CallName, CodeSet, GrpcMethod, GrpcTimeout, Metadata, RequestEncoder, StaticMessage,
};
use candor_load::{GrpcCall, GrpcConfig, LoadConfig, RequestSpec, Scheme};
use std::time::Duration;

type Result<T> = std::result::Result<T, FlagError>;

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
    /// `--replay` given (not for gRPC).
    pub replay: bool,
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
            replay: a.replay.is_some(),
        }
    }
}

/// One request of a gRPC run before it is resolved: its call, its message's JSON, its own
/// metadata, and what names it in errors.
struct CallSpec {
    call: CallName,
    json: Vec<u8>,
    metadata: Vec<String>,
    what: String,
    /// Its `--requests` line (`None`: the one call of `--call`).
    line: Option<usize>,
}

/// A run that is not gRPC: its flags and `--requests` lines name nothing of gRPC's.
fn refuse_grpc_flags(a: &GrpcFlags, c: &LoadConfig) -> Result<()> {
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
    if let Some(l) = c
        .workload
        .lines
        .iter()
        .find(|l| l.call.is_some() || l.message.is_some())
    {
        return Err(invalid(format!(
            "--requests line {}: \"call\" and \"message\" apply to grpc:// and grpcs:// targets",
            l.line
        )));
    }
    Ok(())
}

/// The calls a gRPC run makes: its one `--call` with `--body`, or one per `--requests` line
/// (a line without `"call"` falls back on `--call`), each refused with its line when it cannot
/// be a call.
fn call_specs(a: &GrpcFlags, c: &LoadConfig) -> Result<Vec<CallSpec>> {
    if !matches!(c.method.as_str(), "GET" | "POST") {
        return Err(invalid(
            "-m/--method does not apply to gRPC targets: every call is a POST to the method's path",
        ));
    }
    if a.replay {
        return Err(invalid(
            "--replay does not apply to gRPC targets: give the calls with --call or --requests lines",
        ));
    }
    let default_call = a
        .call
        .as_deref()
        .map(CallName::parse)
        .transpose()
        .map_err(invalid)?;
    let default_json = if c.body.is_empty() {
        b"{}".to_vec()
    } else {
        c.body.clone()
    };
    let mut specs = Vec::new();
    if c.workload.lines.is_empty() {
        let Some(call) = default_call else {
            return Err(invalid(
                "a gRPC target needs the method to call: --call package.Service/Method",
            ));
        };
        specs.push(CallSpec {
            call,
            json: default_json,
            metadata: Vec::new(),
            what: "--body".into(),
            line: None,
        });
    } else {
        for l in &c.workload.lines {
            let at = |m: &str| invalid(format!("--requests line {}: {m}", l.line));
            if l.call.is_none() && l.message.is_none() {
                return Err(at(
                    "a gRPC line names its method with \"call\" (and its request with \"message\"), not \"path\" or \"url\"",
                ));
            }
            if !l.spec.body.is_empty() {
                return Err(at(
                    "a gRPC line gives its request with \"message\", not \"body\"",
                ));
            }
            if l.check_status.is_some() {
                return Err(at(
                    "\"check_status\" is HTTP's; a gRPC run's statuses are --check-status's",
                ));
            }
            let call = match (&l.call, &default_call) {
                (Some(text), _) => CallName::parse(text).map_err(|e| at(&e.to_string()))?,
                (None, Some(call)) => call.clone(),
                (None, None) => {
                    return Err(at("no \"call\", and no --call to fall back on"));
                }
            };
            specs.push(CallSpec {
                call,
                json: l
                    .message
                    .as_ref()
                    .map_or_else(|| default_json.clone(), |m| m.as_bytes().to_vec()),
                metadata: l.spec.headers.clone(),
                what: format!("--requests line {} \"message\"", l.line),
                line: Some(l.line),
            });
        }
    }
    Ok(specs)
}

/// Makes `c` (its target, `-T`, body and `--requests` lines already read from the flags) the
/// requests of the gRPC calls `a` describes, and returns the calls for HTTP/2 to make (`None`
/// for a target that is not gRPC, whose gRPC flags are refused).
pub fn apply(a: &GrpcFlags, c: &mut LoadConfig) -> Result<Option<GrpcConfig>> {
    if !c.target.grpc {
        return refuse_grpc_flags(a, c).map(|()| None);
    }
    let specs = call_specs(a, c)?;
    let pool = descriptors(a, c, &specs)?;
    let accept = match &a.check_status {
        Some(list) => list.parse::<CodeSet>().map_err(invalid)?,
        None => CodeSet::OK_ONLY,
    };
    let mut base = vec![
        "content-type: application/grpc".to_string(),
        "te: trailers".to_string(),
        format!(
            "grpc-timeout: {}",
            GrpcTimeout::from_ns(c.timeout_ns).as_str()
        ),
    ];
    for line in &a.headers {
        let m = Metadata::parse(line).map_err(invalid)?;
        base.push(format!("{}: {}", m.name(), m.value()));
    }
    let mut calls = Vec::with_capacity(specs.len());
    let mut requests = Vec::with_capacity(specs.len());
    let mut names: Vec<String> = Vec::new();
    for spec in &specs {
        let method =
            GrpcMethod::resolve_supported(&pool, &spec.call).map_err(|e| match spec.line {
                Some(n) => invalid(format!("--requests line {n}: {e}")),
                None => invalid(e),
            })?;
        // Placeholders make the message per request (its JSON filled, then encoded); without
        // them it is encoded once, here.
        let templated = spec.json.windows(2).any(|w| w == b"{{");
        let body = if templated {
            spec.json.clone()
        } else {
            StaticMessage::from_json(method.input(), &spec.json)
                .map_err(|e| invalid(format!("{}: {e}", spec.what)))?
                .framed()
                .to_vec()
        };
        let mut headers = base.clone();
        for line in &spec.metadata {
            let m = Metadata::parse(line).map_err(|e| invalid(format!("{}: {e}", spec.what)))?;
            headers.push(format!("{}: {}", m.name(), m.value()));
        }
        requests.push(RequestSpec {
            method: "POST".into(),
            path: method.path().to_string(),
            headers,
            body,
        });
        calls.push(GrpcCall {
            kind: method.kind(),
            templated: templated.then(|| RequestEncoder::new(method.input())),
        });
        let name = spec.call.to_string();
        if !names.contains(&name) {
            names.push(name);
        }
    }
    c.method = "POST".into();
    // A gRPC answer is HTTP 200; any other HTTP status fails in class `status`.
    c.accept_status = candor_load::StatusSet::parse("200").map_err(invalid)?;
    let one = c.workload.lines.is_empty();
    if one {
        let r = requests.pop().expect("one request");
        c.target.path = r.path;
        c.headers = r.headers;
        c.body = r.body;
    } else {
        c.target.path = requests[0].path.clone();
        c.headers = base;
        c.body = Vec::new();
        for (line, r) in c.workload.lines.iter_mut().zip(&requests) {
            line.spec = r.clone();
        }
        c.requests = requests;
    }
    let grpc = GrpcConfig {
        call: names.join(", "),
        accept,
        calls,
    };
    // Each templated message's first fill, as the run will fill it, must fit its message type:
    // a template that never can is a mistake to name now, not a run of failures.
    let mut compiled = None;
    for (i, spec) in specs.iter().enumerate() {
        let Some(encoder) = &grpc.calls[i].templated else {
            continue;
        };
        if compiled.is_none() {
            // Compiled once, for the first templated message only.
            compiled = Some(candor_load::request_plan::compile_requests(c, &|i| {
                grpc.body_form(i)
            })?);
        }
        let compiled = compiled.as_ref().expect("compiled above");
        let json = candor_load::request_plan::filled_body(c, compiled, i, 0)?;
        let mut framed = Vec::new();
        encoder.encode_framed(&json, &mut framed).map_err(|e| {
            invalid(format!(
                "{}: request 0 filled as {}: {e}",
                spec.what,
                String::from_utf8_lossy(&json)
            ))
        })?;
    }
    Ok(Some(grpc))
}

/// How long `--reflect` waits for the server's descriptors: the run's `-T`.
fn reflect_timeout(c: &LoadConfig) -> Duration {
    Duration::from_nanos(c.timeout_ns.max(1))
}

/// The descriptors of the run's calls: `--proto` compiled, or fetched by `--reflect` for the
/// services the calls name.
fn descriptors(
    a: &GrpcFlags,
    c: &LoadConfig,
    specs: &[CallSpec],
) -> Result<candor_grpc::DescriptorPool> {
    match (a.reflect, a.proto.is_empty()) {
        (true, false) => Err(invalid(
            "--reflect and --proto both describe the service: give one",
        )),
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
                // The run's -T bounds every wait on the target, this exchange (connecting
                // included) as much as a request.
                timeout: reflect_timeout(c),
            };
            let mut services: Vec<&str> = Vec::new();
            for s in specs {
                if !services.contains(&s.call.service()) {
                    services.push(s.call.service());
                }
            }
            candor_grpc::reflect::fetch_descriptors(&target, &services).map_err(invalid)
        }
        (false, false) => {
            candor_grpc::compile_protos(&a.proto, &a.import_path).map_err(invalid)
        }
        (false, true) => Err(invalid(
            "a gRPC call needs its service's descriptors: --proto FILE.proto (with --import-path DIR for its imports) or --reflect",
        )),
    }
}
