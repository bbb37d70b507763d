//! OTLP over gRPC (`--out otlp-grpc=URL`): each batch one unary
//! `opentelemetry.proto.collector.metrics.v1.MetricsService/Export` call over one HTTP/2
//! connection (`http://`: cleartext with prior knowledge, as collectors listen on 4317;
//! `https://`: TLS with ALPN h2 and the webpki roots), kept across pushes and opened again after
//! an error.
//!
//! Hand-rolled over `h2` and a current-thread tokio runtime, as candor-grpc's `--reflect` client
//! is (both already in the binary), rather than tonic's generated client, which would bring
//! tower, hyper's client and tonic's transport for one small call per push interval.

use crate::answer::Answer;
use bytes::{Bytes, BytesMut};
use std::sync::Arc;
use std::time::Duration;

/// The Export method's path.
const EXPORT_PATH: &str = "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export";
/// The most response bytes read (an ExportMetricsServiceResponse is a few bytes; anything past
/// this is not waited for).
const MAX_RESPONSE: usize = 64 << 10;

/// Where the collector is, from the `--out otlp-grpc=URL`.
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoint {
    pub host: String,
    pub port: u16,
    pub tls: bool,
}

impl Endpoint {
    /// `http://HOST[:PORT]` or `https://...`; a path is ignored (gRPC names the method).
    pub fn of(uri: &ureq::http::Uri) -> Option<Endpoint> {
        let tls = match uri.scheme_str()? {
            "http" => false,
            "https" => true,
            _ => return None,
        };
        let host = uri.host()?.trim_start_matches('[').trim_end_matches(']');
        Some(Endpoint {
            host: host.to_string(),
            port: uri.port_u16().unwrap_or(if tls { 443 } else { 80 }),
            tls,
        })
    }

    fn authority(&self) -> String {
        match self.host.contains(':') {
            true => format!("[{}]:{}", self.host, self.port),
            false => format!("{}:{}", self.host, self.port),
        }
    }
}

/// A blocking gRPC client of one endpoint.
pub(crate) struct Client {
    runtime: tokio::runtime::Runtime,
    endpoint: Endpoint,
    tls: Option<Arc<rustls::ClientConfig>>,
    conn: Option<h2::client::SendRequest<Bytes>>,
}

/// What a gRPC status means for the batch: retried when the collector is down, overloaded or
/// slow (the codes OTLP's specification calls retryable), else refused.
pub(crate) fn answer_of(code: u32, message: &str, url: &str) -> Answer {
    let why = format!("{url} answered grpc-status {code}: {message}");
    match code {
        0 => Answer::Accepted,
        // CANCELLED, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, ABORTED, OUT_OF_RANGE,
        // UNAVAILABLE, DATA_LOSS.
        1 | 4 | 8 | 10 | 11 | 14 | 15 => Answer::Retry(why),
        _ => Answer::Refused(why),
    }
}

impl Client {
    pub(crate) fn new(endpoint: Endpoint) -> std::io::Result<Client> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let tls = endpoint.tls.then(|| {
            let roots =
                rustls::RootCertStore::from_iter(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
            let mut c = rustls::ClientConfig::builder_with_provider(Arc::new(
                rustls::crypto::ring::default_provider(),
            ))
            .with_safe_default_protocol_versions()
            .expect("ring supports the default TLS versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
            c.alpn_protocols = vec![b"h2".to_vec()];
            Arc::new(c)
        });
        Ok(Client {
            runtime,
            endpoint,
            tls,
            conn: None,
        })
    }

    /// One Export call of `message` (an ExportMetricsServiceRequest), within `timeout`.
    pub(crate) fn export(&mut self, message: &[u8], timeout: Duration, url: &str) -> Answer {
        let runtime = &self.runtime;
        let call = async {
            let conn = match self.conn.take() {
                Some(c) => c,
                None => connect(&self.endpoint, self.tls.clone()).await?,
            };
            let (answer, conn) = call(conn, &self.endpoint, message, url).await?;
            self.conn = Some(conn);
            Ok::<Answer, String>(answer)
        };
        match runtime.block_on(async { tokio::time::timeout(timeout, call).await }) {
            Ok(Ok(answer)) => answer,
            Ok(Err(why)) => Answer::Retry(format!("{url}: {why}")),
            Err(_) => Answer::Retry(format!("{url}: no answer within {timeout:?}")),
        }
    }
}

async fn connect(
    endpoint: &Endpoint,
    tls: Option<Arc<rustls::ClientConfig>>,
) -> Result<h2::client::SendRequest<Bytes>, String> {
    let tcp = tokio::net::TcpStream::connect((endpoint.host.as_str(), endpoint.port))
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let _ = tcp.set_nodelay(true);
    match tls {
        None => handshake(tcp).await,
        Some(config) => {
            let name = rustls::pki_types::ServerName::try_from(endpoint.host.clone())
                .map_err(|e| format!("TLS name: {e}"))?;
            let stream = tokio_rustls::TlsConnector::from(config)
                .connect(name, tcp)
                .await
                .map_err(|e| format!("TLS: {e}"))?;
            handshake(stream).await
        }
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

/// The gRPC status of headers or trailers, if they carry one.
fn status(map: &http::HeaderMap) -> Option<(u32, String)> {
    let code = map.get("grpc-status")?.to_str().ok()?.trim().parse().ok()?;
    let message = map
        .get("grpc-message")
        .and_then(|m| m.to_str().ok())
        .unwrap_or("")
        .to_string();
    Some((code, message))
}

async fn call(
    conn: h2::client::SendRequest<Bytes>,
    endpoint: &Endpoint,
    message: &[u8],
    url: &str,
) -> Result<(Answer, h2::client::SendRequest<Bytes>), String> {
    let h2e = |e: h2::Error| format!("HTTP/2: {e}");
    let mut conn = conn.ready().await.map_err(h2e)?;
    let scheme = if endpoint.tls { "https" } else { "http" };
    let request = http::Request::post(format!("{scheme}://{}{EXPORT_PATH}", endpoint.authority()))
        .header("content-type", "application/grpc+proto")
        .header("te", "trailers")
        .body(())
        .map_err(|e| e.to_string())?;
    let (response, mut send) = conn.send_request(request, false).map_err(h2e)?;
    // The length prefix: uncompressed, then the message's length (gRPC over HTTP/2).
    let mut framed = BytesMut::with_capacity(5 + message.len());
    framed.extend_from_slice(&[0]);
    framed.extend_from_slice(&(message.len() as u32).to_be_bytes());
    framed.extend_from_slice(message);
    send.send_data(framed.freeze(), true).map_err(h2e)?;
    let response = response.await.map_err(h2e)?;
    let code = response.status().as_u16();
    if code != 200 {
        let why = format!("{url} answered HTTP {code}");
        let answer = match code {
            429 | 502..=504 => Answer::Retry(why),
            _ => Answer::Refused(why),
        };
        return Ok((answer, conn));
    }
    // A trailers-only answer carries the status in its headers.
    if let Some((c, m)) = status(response.headers()) {
        return Ok((answer_of(c, &m, url), conn));
    }
    let mut body = response.into_body();
    let mut read = 0usize;
    while let Some(chunk) = body.data().await {
        let chunk = chunk.map_err(h2e)?;
        read += chunk.len();
        let _ = body.flow_control().release_capacity(chunk.len());
        if read > MAX_RESPONSE {
            return Err(format!("an answer of more than {MAX_RESPONSE} bytes"));
        }
    }
    match body.trailers().await.map_err(h2e)? {
        Some(t) => match status(&t) {
            Some((c, m)) => Ok((answer_of(c, &m, url), conn)),
            None => Err("an answer without grpc-status".into()),
        },
        None => Err("an answer without trailers".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sender::Sender;
    use std::sync::Mutex;

    /// A gRPC server on a loopback port (h2 on tokio, in a thread of its own) answering its
    /// `n`th call with `statuses[n]` (then OK) in the trailers; the request bodies are kept.
    fn server(statuses: Vec<u32>) -> (String, Arc<Mutex<Vec<Vec<u8>>>>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let got = Arc::new(Mutex::new(Vec::new()));
        let g = got.clone();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let mut n = 0;
                loop {
                    let (sock, _) = listener.accept().await.unwrap();
                    let Ok(mut conn) = h2::server::handshake(sock).await else {
                        continue;
                    };
                    while let Some(Ok((req, mut respond))) = conn.accept().await {
                        assert_eq!(req.uri().path(), EXPORT_PATH);
                        let mut body = req.into_body();
                        let mut bytes = Vec::new();
                        while let Some(Ok(c)) = body.data().await {
                            let _ = body.flow_control().release_capacity(c.len());
                            bytes.extend_from_slice(&c);
                        }
                        g.lock().unwrap().push(bytes);
                        let code = statuses.get(n).copied().unwrap_or(0);
                        n += 1;
                        let head = http::Response::builder()
                            .status(200)
                            .header("content-type", "application/grpc")
                            .body(())
                            .unwrap();
                        let mut send = respond.send_response(head, false).unwrap();
                        // An empty ExportMetricsServiceResponse, then the status.
                        send.send_data(Bytes::from_static(&[0; 5]), false).unwrap();
                        let mut trailers = http::HeaderMap::new();
                        trailers.insert("grpc-status", code.to_string().parse().unwrap());
                        send.send_trailers(trailers).unwrap();
                    }
                }
            });
        });
        (url, got)
    }

    fn endpoint(url: &str) -> Endpoint {
        Endpoint::of(&url.parse().unwrap()).unwrap()
    }

    #[test]
    fn an_export_call_is_framed_and_its_status_read_from_the_trailers() {
        let (url, got) = server(vec![14, 3]);
        let mut c = Client::new(endpoint(&url)).unwrap();
        let t = Duration::from_secs(10);
        assert!(
            matches!(c.export(b"abc", t, &url), Answer::Retry(w) if w.contains("grpc-status 14"))
        );
        assert!(
            matches!(c.export(b"abc", t, &url), Answer::Refused(w) if w.contains("grpc-status 3"))
        );
        assert!(matches!(c.export(b"hello", t, &url), Answer::Accepted));
        let bodies = got.lock().unwrap().clone();
        assert_eq!(bodies.len(), 3, "one connection, three calls");
        assert_eq!(bodies[2], [0, 0, 0, 0, 5, b'h', b'e', b'l', b'l', b'o']);
    }

    #[test]
    fn a_collector_that_is_down_is_retried_and_the_url_parts_are_read() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let url = format!("http://127.0.0.1:{port}");
        let mut c = Client::new(endpoint(&url)).unwrap();
        assert!(matches!(
            c.export(b"x", Duration::from_secs(5), &url),
            Answer::Retry(w) if w.contains("connect")
        ));
        assert_eq!(
            endpoint("https://otel.example:4317/x"),
            Endpoint {
                host: "otel.example".into(),
                port: 4317,
                tls: true
            }
        );
        assert_eq!(endpoint("http://[::1]").authority(), "[::1]:80");
    }

    #[test]
    fn the_push_thread_delivers_otlp_over_grpc_after_a_retry() {
        let (url, got) = server(vec![14]);
        let s = Sender::start(
            Box::new(crate::otlp::Otlp),
            url.clone(),
            Some(endpoint(&url)),
        )
        .unwrap();
        s.send(crate::series::Batch::default());
        let stats = s.close(Duration::from_secs(10));
        assert_eq!((stats.pushes, stats.retries), (1, 1), "{stats:?}");
        let bodies = got.lock().unwrap().clone();
        let message = &bodies[1][5..];
        assert!(crate::otlp::decode(message).is_ok());
    }
}
