//! Descriptors fetched from a server's reflection service (`--reflect`), before any load: a
//! small blocking client of `grpc.reflection.v1` (falling back to `v1alpha`) over one h2
//! connection, plain or TLS.
//!
//! Hand-rolled over `h2` rather than tonic's generated client: the reflection protocol needs
//! five small messages (declared below with prost's derive) and one bidirectional stream, while
//! tonic's client would bring tower, hyper's client and tonic's transport into the candor
//! binary for a call made once per run, where h2 and a current-thread tokio runtime suffice.

use std::collections::{BTreeSet, HashMap};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use prost::Message;
use prost_reflect::DescriptorPool;
use thiserror::Error;

use crate::length_prefix::{prefix, PREFIX_LEN};
use crate::status::{decode_grpc_message, Code};

/// The largest reflection response accepted. Descriptor files run to kilobytes, a large API's to a
/// few megabytes; a length prefix beyond this is a broken or hostile server, refused at once
/// rather than waited for (and buffered) until the timeout.
pub const MAX_RESPONSE_BYTES: usize = 64 << 20;

/// Where the reflection service is.
#[derive(Clone)]
pub struct ReflectTarget {
    pub addr: SocketAddr,
    /// `:authority`, and the TLS server name: `host` or `host:port`.
    pub authority: String,
    /// TLS (`grpcs://`); the config's ALPN is set to h2 here.
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// For the whole exchange, connecting included.
    pub timeout: Duration,
}

/// Why descriptors could not be fetched.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ReflectError {
    #[error("--reflect: cannot connect to {addr}: {why}")]
    Connect { addr: SocketAddr, why: String },
    #[error("--reflect: the server at {0} does not offer gRPC reflection (grpc.reflection.v1 and v1alpha answer UNIMPLEMENTED): give its .proto files with --proto")]
    NotOffered(String),
    #[error("--reflect: the server at {addr} has no service `{service}`; it offers: {}", if .known.is_empty() { "none".to_string() } else { .known.join(", ") })]
    UnknownService {
        addr: String,
        service: String,
        known: Vec<String>,
    },
    #[error("--reflect: no answer from {addr} within {timeout:?}")]
    Timeout { addr: SocketAddr, timeout: Duration },
    #[error("--reflect: the reflection call ended with {code}: {message}")]
    Status { code: Code, message: String },
    #[error("--reflect: {0}")]
    Protocol(String),
}

/// The descriptors of `services` (full names, such as `candor.bench.Bench`) and every file they
/// import, as the server describes them.
pub fn fetch_descriptors(
    target: &ReflectTarget,
    services: &[&str],
) -> Result<DescriptorPool, ReflectError> {
    let Answer::Files(files) = run(target, Question::Files(services))? else {
        unreachable!("files asked")
    };
    let set = prost_types::FileDescriptorSet { file: files };
    DescriptorPool::from_file_descriptor_set(set).map_err(|e| {
        ReflectError::Protocol(format!("the server's descriptors do not fit together: {e}"))
    })
}

/// The services the server lists (reflection itself included), sorted.
pub fn list_services(target: &ReflectTarget) -> Result<Vec<String>, ReflectError> {
    let Answer::Services(names) = run(target, Question::Services)? else {
        unreachable!("services asked")
    };
    Ok(names)
}

enum Question<'a> {
    Files(&'a [&'a str]),
    Services,
}

enum Answer {
    Files(Vec<prost_types::FileDescriptorProto>),
    Services(Vec<String>),
}

fn run(target: &ReflectTarget, question: Question<'_>) -> Result<Answer, ReflectError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| ReflectError::Protocol(format!("runtime: {e}")))?;
    runtime.block_on(async {
        let exchange = async {
            for version in ["v1", "v1alpha"] {
                let mut session = Session::open(target, version).await?;
                let answer = match question {
                    Question::Files(services) => {
                        session.files_for(services).await.map(Answer::Files)
                    }
                    Question::Services => session.services().await.map(Answer::Services),
                };
                match answer {
                    Err(ReflectError::NotOffered(_)) => continue,
                    other => return other,
                }
            }
            Err(ReflectError::NotOffered(target.authority.clone()))
        };
        tokio::time::timeout(target.timeout, exchange)
            .await
            .unwrap_or(Err(ReflectError::Timeout {
                addr: target.addr,
                timeout: target.timeout,
            }))
    })
}

/// One reflection stream: requests sent one at a time, each answered by one response.
struct Session {
    target: ReflectTarget,
    version: &'static str,
    authority: String,
    send: h2::SendStream<Bytes>,
    response: Option<h2::client::ResponseFuture>,
    body: Option<h2::RecvStream>,
    buffered: BytesMut,
}

impl Session {
    async fn open(target: &ReflectTarget, version: &'static str) -> Result<Session, ReflectError> {
        let connect_error = |why: String| ReflectError::Connect {
            addr: target.addr,
            why,
        };
        let tcp = tokio::net::TcpStream::connect(target.addr)
            .await
            .map_err(|e| connect_error(e.to_string()))?;
        let _ = tcp.set_nodelay(true);
        let mut client = match &target.tls {
            None => handshake(tcp).await.map_err(connect_error)?,
            Some(config) => {
                let mut config = (**config).clone();
                config.alpn_protocols = vec![b"h2".to_vec()];
                let host = target
                    .authority
                    .rsplit_once(':')
                    .map_or(target.authority.as_str(), |(host, _)| host)
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .to_string();
                let name = rustls::pki_types::ServerName::try_from(host)
                    .map_err(|e| connect_error(format!("server name: {e}")))?;
                let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
                    .connect(name, tcp)
                    .await
                    .map_err(|e| connect_error(format!("TLS: {e}")))?;
                handshake(tls).await.map_err(connect_error)?
            }
        };
        let request = http::Request::builder()
            .method("POST")
            .uri(format!(
                "{}://{}/grpc.reflection.{version}.ServerReflection/ServerReflectionInfo",
                if target.tls.is_some() {
                    "https"
                } else {
                    "http"
                },
                target.authority
            ))
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .body(())
            .map_err(|e| ReflectError::Protocol(e.to_string()))?;
        client = client.ready().await.map_err(h2_error)?;
        let (response, send) = client.send_request(request, false).map_err(h2_error)?;
        Ok(Session {
            target: target.clone(),
            version,
            authority: target.authority.clone(),
            send,
            response: Some(response),
            body: None,
            buffered: BytesMut::new(),
        })
    }

    /// Sends one request and reads the one response it gets.
    async fn ask(&mut self, request: MessageRequest) -> Result<MessageResponse, ReflectError> {
        let request = ServerReflectionRequest {
            host: String::new(),
            message_request: Some(request),
        };
        let encoded = request.encode_to_vec();
        let mut framed = Vec::with_capacity(PREFIX_LEN + encoded.len());
        framed.extend_from_slice(&prefix(false, encoded.len() as u32));
        framed.extend_from_slice(&encoded);
        self.send
            .send_data(Bytes::from(framed), false)
            .map_err(h2_error)?;
        if let Some(response) = self.response.take() {
            let response = response.await.map_err(h2_error)?;
            // A trailers-only answer: the service is not there (UNIMPLEMENTED) or refused.
            if let Some(code) = response.headers().get("grpc-status") {
                return Err(self.status_error(code.as_bytes(), response.headers()));
            }
            self.body = Some(response.into_body());
        }
        let body = self.body.as_mut().expect("set above");
        loop {
            if let Some(message) = take_message(&mut self.buffered)? {
                let response = ServerReflectionResponse::decode(message)
                    .map_err(|e| ReflectError::Protocol(format!("undecodable response: {e}")))?;
                return response
                    .message_response
                    .ok_or_else(|| ReflectError::Protocol("empty response".to_string()));
            }
            match body.data().await {
                Some(chunk) => {
                    let chunk = chunk.map_err(h2_error)?;
                    let _ = body.flow_control().release_capacity(chunk.len());
                    self.buffered.extend_from_slice(&chunk);
                }
                None => {
                    let trailers = body.trailers().await.map_err(h2_error)?.unwrap_or_default();
                    let code = trailers
                        .get("grpc-status")
                        .map_or(&b"2"[..], |v| v.as_bytes())
                        .to_vec();
                    // OK without the answer asked for is no status to report: say what is
                    // missing.
                    if Code::from_header_value(&code) == Some(Code::Ok) {
                        return Err(ended_without_answer(&self.buffered));
                    }
                    return Err(self.status_error(&code, &trailers));
                }
            }
        }
    }

    fn status_error(&self, code: &[u8], headers: &http::HeaderMap) -> ReflectError {
        match Code::from_header_value(code) {
            Some(Code::Unimplemented) => ReflectError::NotOffered(self.authority.clone()),
            code => {
                let mut message = Vec::new();
                if let Some(value) = headers.get("grpc-message") {
                    decode_grpc_message(value.as_bytes(), &mut message);
                }
                let message = String::from_utf8_lossy(&message).into_owned();
                ReflectError::Status {
                    code: code.unwrap_or(Code::Unknown),
                    message,
                }
            }
        }
    }

    async fn services(&mut self) -> Result<Vec<String>, ReflectError> {
        match self
            .ask(MessageRequest::ListServices(String::new()))
            .await?
        {
            MessageResponse::Services(list) => {
                let mut names: Vec<String> = list.service.into_iter().map(|s| s.name).collect();
                names.sort();
                Ok(names)
            }
            other => Err(unexpected(other)),
        }
    }

    /// The error of a service the server does not have, listing those it has (on a new stream:
    /// the failed lookup may have ended this one).
    async fn unknown_service(&mut self, service: &str) -> ReflectError {
        let known = match Session::open(&self.target, self.version).await {
            Ok(mut session) => match session.services().await {
                Ok(known) => known,
                Err(error) => return error,
            },
            Err(error) => return error,
        };
        ReflectError::UnknownService {
            addr: self.authority.clone(),
            service: service.to_string(),
            known,
        }
    }

    /// The files defining `services` and, transitively, every file they import.
    async fn files_for(
        &mut self,
        services: &[&str],
    ) -> Result<Vec<prost_types::FileDescriptorProto>, ReflectError> {
        let mut files: HashMap<String, prost_types::FileDescriptorProto> = HashMap::new();
        for service in services {
            // grpc-go answers an unknown symbol with an error response; tonic ends the stream
            // with NOT_FOUND.
            let answer = match self
                .ask(MessageRequest::FileContainingSymbol(service.to_string()))
                .await
            {
                Err(ReflectError::Status {
                    code: Code::NotFound,
                    ..
                }) => return Err(self.unknown_service(service).await),
                answer => answer?,
            };
            match answer {
                MessageResponse::Files(found) => add_files(&mut files, found)?,
                MessageResponse::Error(error)
                    if error.error_code == Code::NotFound.as_u32() as i32 =>
                {
                    return Err(self.unknown_service(service).await);
                }
                other => return Err(unexpected(other)),
            }
        }
        loop {
            let missing: BTreeSet<String> = files
                .values()
                .flat_map(|file| file.dependency.iter())
                .filter(|name| !files.contains_key(*name))
                .cloned()
                .collect();
            let Some(name) = missing.into_iter().next() else {
                break;
            };
            match self
                .ask(MessageRequest::FileByFilename(name.clone()))
                .await?
            {
                MessageResponse::Files(found) => {
                    add_files(&mut files, found)?;
                    if !files.contains_key(&name) {
                        return Err(ReflectError::Protocol(format!(
                            "the server did not send `{name}`, which its descriptors import"
                        )));
                    }
                }
                other => return Err(unexpected(other)),
            }
        }
        Ok(files.into_values().collect())
    }
}

async fn handshake<T>(io: T) -> Result<h2::client::SendRequest<Bytes>, String>
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (client, connection) = h2::client::handshake(io)
        .await
        .map_err(|e| format!("HTTP/2: {e}"))?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(client)
}

fn h2_error(error: h2::Error) -> ReflectError {
    ReflectError::Protocol(format!("HTTP/2: {error}"))
}

fn unexpected(response: MessageResponse) -> ReflectError {
    match response {
        MessageResponse::Error(error) => ReflectError::Protocol(format!(
            "the server answered error {}: {}",
            Code::from_u32(error.error_code as u32)
                .map_or(error.error_code.to_string(), |c| c.to_string()),
            error.error_message
        )),
        _ => ReflectError::Protocol("the server answered another question".to_string()),
    }
}

fn add_files(
    files: &mut HashMap<String, prost_types::FileDescriptorProto>,
    found: FileDescriptorResponse,
) -> Result<(), ReflectError> {
    for bytes in found.file_descriptor_proto {
        let file = prost_types::FileDescriptorProto::decode(bytes.as_slice())
            .map_err(|e| ReflectError::Protocol(format!("undecodable file descriptor: {e}")))?;
        files.insert(file.name().to_string(), file);
    }
    Ok(())
}

/// The next whole message in `buffered`, if one has arrived.
fn take_message(buffered: &mut BytesMut) -> Result<Option<Bytes>, ReflectError> {
    if buffered.len() < PREFIX_LEN {
        return Ok(None);
    }
    if buffered[0] != 0 {
        return Err(ReflectError::Protocol(
            "compressed reflection response (candor asks for none)".to_string(),
        ));
    }
    let len = u32::from_be_bytes([buffered[1], buffered[2], buffered[3], buffered[4]]) as usize;
    if len > MAX_RESPONSE_BYTES {
        return Err(ReflectError::Protocol(format!(
            "the server announced a reflection response of {len} bytes, more than the {} MiB \
             candor accepts",
            MAX_RESPONSE_BYTES >> 20
        )));
    }
    if buffered.len() < PREFIX_LEN + len {
        return Ok(None);
    }
    buffered.advance(PREFIX_LEN);
    Ok(Some(buffered.split_to(len).freeze()))
}

/// The error of a reflection stream the server ended with OK before the response to the
/// question: nothing of it, or part of the message its prefix announced.
fn ended_without_answer(buffered: &[u8]) -> ReflectError {
    let what = if buffered.len() < PREFIX_LEN {
        "before answering".to_string()
    } else {
        let len = u32::from_be_bytes([buffered[1], buffered[2], buffered[3], buffered[4]]);
        format!(
            "after {} of the {len} bytes of the response it announced",
            buffered.len() - PREFIX_LEN
        )
    };
    ReflectError::Protocol(format!(
        "the server ended the reflection call (status OK) {what}"
    ))
}

// The reflection protocol's messages (grpc/reflection/v1/reflection.proto; v1alpha has the same
// fields), only those candor sends or reads.

#[derive(Clone, PartialEq, Message)]
struct ServerReflectionRequest {
    #[prost(string, tag = "1")]
    host: String,
    #[prost(oneof = "MessageRequest", tags = "3, 4, 7")]
    message_request: Option<MessageRequest>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
enum MessageRequest {
    #[prost(string, tag = "3")]
    FileByFilename(String),
    #[prost(string, tag = "4")]
    FileContainingSymbol(String),
    #[prost(string, tag = "7")]
    ListServices(String),
}

#[derive(Clone, PartialEq, Message)]
struct ServerReflectionResponse {
    #[prost(oneof = "MessageResponse", tags = "4, 6, 7")]
    message_response: Option<MessageResponse>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
enum MessageResponse {
    #[prost(message, tag = "4")]
    Files(FileDescriptorResponse),
    #[prost(message, tag = "6")]
    Services(ListServiceResponse),
    #[prost(message, tag = "7")]
    Error(ErrorResponse),
}

#[derive(Clone, PartialEq, Message)]
struct FileDescriptorResponse {
    #[prost(bytes = "vec", repeated, tag = "1")]
    file_descriptor_proto: Vec<Vec<u8>>,
}

#[derive(Clone, PartialEq, Message)]
struct ListServiceResponse {
    #[prost(message, repeated, tag = "1")]
    service: Vec<ServiceResponse>,
}

#[derive(Clone, PartialEq, Message)]
struct ServiceResponse {
    #[prost(string, tag = "1")]
    name: String,
}

#[derive(Clone, PartialEq, Message)]
struct ErrorResponse {
    #[prost(int32, tag = "1")]
    error_code: i32,
    #[prost(string, tag = "2")]
    error_message: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_response_claiming_4_gb_is_refused_at_its_prefix() {
        let mut b = BytesMut::from(&[0u8, 0xff, 0xff, 0xff, 0xff, 1, 2][..]);
        assert_eq!(
            take_message(&mut b).unwrap_err().to_string(),
            "--reflect: the server announced a reflection response of 4294967295 bytes, more \
             than the 64 MiB candor accepts"
        );
        // At the bound it is waited for, as any message not yet whole.
        let mut b = BytesMut::from(&prefix(false, MAX_RESPONSE_BYTES as u32)[..]);
        assert_eq!(take_message(&mut b), Ok(None));
    }

    #[test]
    fn a_call_ended_with_ok_before_its_answer_says_what_is_missing() {
        let mut partial = prefix(false, 100).to_vec();
        partial.extend_from_slice(&[0; 40]);
        assert_eq!(
            ended_without_answer(&partial).to_string(),
            "--reflect: the server ended the reflection call (status OK) after 40 of the 100 \
             bytes of the response it announced"
        );
        assert_eq!(
            ended_without_answer(&[]).to_string(),
            "--reflect: the server ended the reflection call (status OK) before answering"
        );
    }
}
