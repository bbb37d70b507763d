//! `--call package.Service/Method` resolved against the descriptors: the HTTP/2 path, the
//! request and response message types, and the kind of call.

use prost_reflect::{DescriptorPool, MessageDescriptor, MethodDescriptor};
use thiserror::Error;

/// A call's name as the user wrote it: `package.Service/Method` (ghz's `package.Service.Method`
/// is accepted too).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallName {
    service: String,
    method: String,
}

/// Why a `--call` could not be resolved or is not supported.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CallError {
    #[error("--call `{}`: expected package.Service/Method", crate::headers::shown(.0))]
    Syntax(String),
    #[error("--call: no service `{service}`; the descriptors hold: {}", list(.known))]
    UnknownService { service: String, known: Vec<String> },
    #[error("--call: service `{service}` has no method `{method}`; it has: {}", list(.known))]
    UnknownMethod {
        service: String,
        method: String,
        known: Vec<String>,
    },
    #[error("--call {call}: {kind} calls are not supported yet (unary and server-streaming are)")]
    Unsupported { call: String, kind: CallKind },
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}

impl CallName {
    pub fn parse(text: &str) -> Result<CallName, CallError> {
        let syntax = || CallError::Syntax(text.to_string());
        let trimmed = text.trim().trim_start_matches('/');
        let (service, method) = trimmed
            .rsplit_once('/')
            .or_else(|| trimmed.rsplit_once('.'))
            .ok_or_else(syntax)?;
        let ident = |s: &str| {
            !s.is_empty()
                && s.split('.').all(|part| {
                    part.chars()
                        .next()
                        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                        && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                })
        };
        if !ident(service) || !ident(method) || method.contains('.') {
            return Err(syntax());
        }
        Ok(CallName {
            service: service.to_string(),
            method: method.to_string(),
        })
    }

    pub fn service(&self) -> &str {
        &self.service
    }

    pub fn method(&self) -> &str {
        &self.method
    }
}

impl std::fmt::Display for CallName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.service, self.method)
    }
}

/// Whether each side of a call sends one message or a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallKind {
    Unary,
    ServerStreaming,
    ClientStreaming,
    Bidirectional,
}

impl std::fmt::Display for CallKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CallKind::Unary => "unary",
            CallKind::ServerStreaming => "server-streaming",
            CallKind::ClientStreaming => "client-streaming",
            CallKind::Bidirectional => "bidirectional-streaming",
        })
    }
}

/// A method ready to call.
#[derive(Debug, Clone)]
pub struct GrpcMethod {
    descriptor: MethodDescriptor,
    path: String,
    kind: CallKind,
}

impl GrpcMethod {
    /// The method `call` names in `pool`, whatever its kind.
    pub fn resolve(pool: &DescriptorPool, call: &CallName) -> Result<GrpcMethod, CallError> {
        let service = pool.get_service_by_name(&call.service).ok_or_else(|| {
            let mut known: Vec<String> =
                pool.services().map(|s| s.full_name().to_string()).collect();
            known.sort();
            CallError::UnknownService {
                service: call.service.clone(),
                known,
            }
        })?;
        let descriptor = service
            .methods()
            .find(|m| m.name() == call.method)
            .ok_or_else(|| CallError::UnknownMethod {
                service: call.service.clone(),
                method: call.method.clone(),
                known: service.methods().map(|m| m.name().to_string()).collect(),
            })?;
        let kind = match (
            descriptor.is_client_streaming(),
            descriptor.is_server_streaming(),
        ) {
            (false, false) => CallKind::Unary,
            (false, true) => CallKind::ServerStreaming,
            (true, false) => CallKind::ClientStreaming,
            (true, true) => CallKind::Bidirectional,
        };
        let path = format!("/{}/{}", service.full_name(), descriptor.name());
        Ok(GrpcMethod {
            descriptor,
            path,
            kind,
        })
    }

    /// As `resolve`, refusing the kinds candor cannot load-test yet (a client stream needs a
    /// message source the request model does not have).
    pub fn resolve_supported(
        pool: &DescriptorPool,
        call: &CallName,
    ) -> Result<GrpcMethod, CallError> {
        let method = GrpcMethod::resolve(pool, call)?;
        match method.kind {
            CallKind::Unary | CallKind::ServerStreaming => Ok(method),
            kind => Err(CallError::Unsupported {
                call: call.to_string(),
                kind,
            }),
        }
    }

    /// The HTTP/2 `:path`: `/package.Service/Method`.
    pub fn path(&self) -> &str {
        &self.path
    }

    pub fn kind(&self) -> CallKind {
        self.kind
    }

    pub fn input(&self) -> MessageDescriptor {
        self.descriptor.input()
    }

    pub fn output(&self) -> MessageDescriptor {
        self.descriptor.output()
    }

    pub fn descriptor(&self) -> &MethodDescriptor {
        &self.descriptor
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool() -> DescriptorPool {
        crate::bench_descriptor_pool()
    }

    #[test]
    fn a_line_break_in_a_call_is_quoted_not_echoed() {
        assert_eq!(
            CallName::parse("a.B/C\r\nD").err().unwrap().to_string(),
            "--call `a.B/C\\r\\nD`: expected package.Service/Method"
        );
    }

    #[test]
    fn calls_resolve_to_path_types_and_kind() {
        let pool = pool();
        let echo = GrpcMethod::resolve(&pool, &CallName::parse("candor.bench.Bench/Echo").unwrap())
            .unwrap();
        assert_eq!(echo.path(), "/candor.bench.Bench/Echo");
        assert_eq!(echo.kind(), CallKind::Unary);
        assert_eq!(echo.input().full_name(), "candor.bench.EchoRequest");
        assert_eq!(echo.output().full_name(), "candor.bench.EchoReply");
        let stream = GrpcMethod::resolve_supported(
            &pool,
            &CallName::parse("candor.bench.Bench.Stream").unwrap(),
        )
        .unwrap();
        assert_eq!(stream.kind(), CallKind::ServerStreaming);
        assert_eq!(stream.input().full_name(), "candor.bench.StreamRequest");
        let collect = CallName::parse("candor.bench.Bench/Collect").unwrap();
        assert_eq!(
            GrpcMethod::resolve(&pool, &collect).unwrap().kind(),
            CallKind::ClientStreaming
        );
        let error = GrpcMethod::resolve_supported(&pool, &collect)
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            "--call candor.bench.Bench/Collect: client-streaming calls are not supported yet (unary and server-streaming are)"
        );
        let chat = CallName::parse("/candor.bench.Bench/Chat").unwrap();
        assert!(matches!(
            GrpcMethod::resolve_supported(&pool, &chat),
            Err(CallError::Unsupported {
                kind: CallKind::Bidirectional,
                ..
            })
        ));
    }

    #[test]
    fn unknown_services_and_methods_list_what_exists() {
        let pool = pool();
        let error = GrpcMethod::resolve(&pool, &CallName::parse("candor.Bench/Echo").unwrap())
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            "--call: no service `candor.Bench`; the descriptors hold: candor.bench.Bench"
        );
        let error = GrpcMethod::resolve(&pool, &CallName::parse("candor.bench.Bench/Ech").unwrap())
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            "--call: service `candor.bench.Bench` has no method `Ech`; it has: Echo, Stream, Collect, Chat"
        );
    }

    #[test]
    fn malformed_call_names_are_refused() {
        for bad in [
            "",
            "Echo",
            "pkg.Service/",
            "/Echo",
            "pkg.Ser vice/Echo",
            "pkg.Service/Ec-ho",
            "1pkg.S/M",
        ] {
            assert_eq!(
                CallName::parse(bad),
                Err(CallError::Syntax(bad.to_string())),
                "{bad}"
            );
        }
        let name = CallName::parse("Svc/M").unwrap();
        assert_eq!((name.service(), name.method()), ("Svc", "M"));
        assert_eq!(name.to_string(), "Svc/M");
    }
}
