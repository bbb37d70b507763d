//! Where requests go: a target URL parsed and checked (`TargetUrl`), then resolved (`Target`),
//! with the credentials it carries.

use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;
use thiserror::Error;

/// Why a target URL cannot be used.
#[derive(Debug, Error)]
pub enum TargetError {
    #[error("invalid URL '{0}': {1}")]
    Url(String, String),
    #[error("unsupported scheme '{0}' in '{1}': candor run speaks http://, https://, grpc://, grpcs://, tcp://, ws:// and wss://")]
    Scheme(String, String),
    #[error("cannot resolve host '{0}': {1}")]
    Resolve(String, String),
    #[error("cannot connect to {0}: {1} (is the server running?)")]
    Connect(SocketAddr, String),
}

/// The protocol named by the URL scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// HTTP/1.1 (or HTTP/2 with `http2`) in the clear.
    Http,
    /// HTTP over TLS; HTTP/2 when `http2` is set.
    Https,
    /// Raw TCP request/response with user-defined framing.
    Tcp,
    /// WebSocket (RFC 6455) in the clear: an HTTP/1.1 upgrade, then messages.
    Ws,
    /// WebSocket over TLS.
    Wss,
}

impl Scheme {
    /// Whether connections of this scheme run TLS.
    pub fn is_tls(self) -> bool {
        matches!(self, Scheme::Https | Scheme::Wss)
    }

    /// Whether this is a WebSocket scheme (`ws://`, `wss://`).
    pub fn is_websocket(self) -> bool {
        matches!(self, Scheme::Ws | Scheme::Wss)
    }
}

/// A target URL, parsed and checked but not resolved: what `candor run` and a Kubernetes
/// manifest's run flags agree on, where the host may exist only inside a cluster.
#[derive(Debug, Clone)]
pub struct TargetUrl {
    /// The URL as reports show it (a password replaced by `***`).
    pub url: String,
    pub scheme: Scheme,
    /// Host name as written in the URL, without IPv6 brackets (TLS server name for SNI).
    pub host: String,
    /// The URL's port, or the scheme's default.
    pub port: u16,
    /// Value of the Host header.
    pub host_header: String,
    /// Path and query, at least "/".
    pub path: String,
    /// `user:password@` of the URL, percent-decoded; sent as Basic authorization.
    pub credentials: Option<Credentials>,
    /// A gRPC target (`grpc://`, HTTP/2 in the clear, or `grpcs://`, over TLS: `scheme` is
    /// `Http` or `Https`).
    pub grpc: bool,
}

/// Where requests go: a [`TargetUrl`] with its host resolved.
#[derive(Debug, Clone)]
pub struct Target {
    pub url: String,
    pub scheme: Scheme,
    /// Host name as written in the URL (TLS server name for SNI and verification).
    pub host: String,
    pub addr: SocketAddr,
    /// Value of the Host header.
    pub host_header: String,
    /// Path and query, at least "/".
    pub path: String,
    /// `user:password@` of the URL, percent-decoded; sent as Basic authorization.
    pub credentials: Option<Credentials>,
    /// A gRPC target (`grpc://`, HTTP/2 in the clear, or `grpcs://`, over TLS: `scheme` is
    /// `Http` or `Https`).
    pub grpc: bool,
}

/// A user name and password given in the URL.
#[derive(Clone, PartialEq)]
pub struct Credentials {
    pub user: Vec<u8>,
    pub password: Vec<u8>,
}

impl std::fmt::Debug for Credentials {
    // Never print the password (results and logs may be shared).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Credentials({}:***)",
            String::from_utf8_lossy(&self.user)
        )
    }
}

impl Credentials {
    /// The `Authorization` header line: `Basic` and base64 of `user:password`, as curl sends it.
    pub fn basic_header(&self) -> String {
        use base64::Engine as _;
        let mut plain = self.user.clone();
        plain.push(b':');
        plain.extend_from_slice(&self.password);
        format!(
            "Authorization: Basic {}",
            base64::engine::general_purpose::STANDARD.encode(plain)
        )
    }
}

impl TargetUrl {
    /// Parses and checks an `http://`, `https://`, `ws://`, `wss://` or `tcp://host:port` URL without any I/O.
    pub fn parse(text: &str) -> Result<TargetUrl, TargetError> {
        // The URL standard silently drops tabs and line breaks ("/a\r\nX: 1" would be sent as
        // "/aX:%201"): a URL holding a control character is a mistake or an injection, refused.
        if text.chars().any(|c| c.is_control()) {
            return Err(TargetError::Url(
                text.escape_debug().to_string(),
                "it holds a control character (a line break, tab or NUL): percent-encode it".into(),
            ));
        }
        if !text.contains("://") {
            return Err(TargetError::Url(
                text.into(),
                format!("no scheme; did you mean http://{text}?"),
            ));
        }
        // `http:///path` is read by the URL standard as host "path": nothing between `://` and
        // the path is no host, whatever a lenient parser makes of it.
        if let Some((_, rest)) = text.split_once("://") {
            if rest.is_empty() || rest.starts_with(['/', '?', '#']) {
                return Err(TargetError::Url(
                    text.into(),
                    "no host between :// and the path (e.g. http://127.0.0.1:8080/path)".into(),
                ));
            }
        }
        let url =
            url::Url::parse(text).map_err(|e| TargetError::Url(text.into(), e.to_string()))?;
        let (scheme, grpc) = match url.scheme() {
            "http" => (Scheme::Http, false),
            "https" => (Scheme::Https, false),
            "tcp" => (Scheme::Tcp, false),
            "grpc" => (Scheme::Http, true),
            "grpcs" => (Scheme::Https, true),
            "ws" => (Scheme::Ws, false),
            "wss" => (Scheme::Wss, false),
            other => return Err(TargetError::Scheme(other.into(), text.into())),
        };
        if (scheme == Scheme::Tcp || grpc) && url.port().is_none() {
            return Err(TargetError::Url(
                text.into(),
                format!("{}:// needs a port", url.scheme()),
            ));
        }
        if grpc && !matches!(url.path(), "" | "/") {
            return Err(TargetError::Url(
                text.into(),
                "a gRPC target is host:port; the method is given with --call".into(),
            ));
        }
        let host = url
            .host_str()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| TargetError::Url(text.into(), "no host".into()))?
            .to_string();
        let port = url.port_or_known_default().unwrap_or(80);
        let lookup_host = host.trim_start_matches('[').trim_end_matches(']');
        let host_header = match url.port() {
            Some(p) => format!("{host}:{p}"),
            None => host.clone(),
        };
        // Like curl: percent-decoded, a missing password is empty. The URL kept for reports
        // shows the user but not the password.
        let (credentials, shown) = if !url.username().is_empty() || url.password().is_some() {
            let decode = |s: &str| percent_encoding::percent_decode_str(s).collect::<Vec<u8>>();
            let credentials = Credentials {
                user: decode(url.username()),
                password: decode(url.password().unwrap_or("")),
            };
            let mut shown = url.clone();
            if url.password().is_some() {
                let _ = shown.set_password(Some("***"));
            }
            (Some(credentials), shown.to_string())
        } else {
            (None, text.to_string())
        };
        let mut path = url.path().to_string();
        if path.is_empty() {
            path.push('/');
        }
        if let Some(q) = url.query() {
            path.push('?');
            path.push_str(q);
        }
        Ok(TargetUrl {
            url: shown,
            scheme,
            host: lookup_host.to_string(),
            port,
            host_header,
            path,
            credentials,
            grpc,
        })
    }

    /// The same URL with the loopback address for its host: for checking the settings that
    /// depend on a target's scheme, port and credentials where its host can only be resolved
    /// elsewhere (inside a cluster), without resolving it here.
    pub fn on_loopback(&self) -> String {
        let mut url = url::Url::parse(&self.url).expect("parsed and checked by TargetUrl::parse");
        let _ = url.set_host(Some("127.0.0.1"));
        url.to_string()
    }

    /// Resolves the host (the first address it has).
    pub fn resolve(self) -> Result<Target, TargetError> {
        let addr = (self.host.as_str(), self.port)
            .to_socket_addrs()
            .map_err(|e| TargetError::Resolve(self.host.clone(), e.to_string()))?
            .next()
            .ok_or_else(|| TargetError::Resolve(self.host.clone(), "no addresses".into()))?;
        Ok(self.at(addr))
    }

    /// The target at a known address.
    pub fn at(self, addr: SocketAddr) -> Target {
        Target {
            url: self.url,
            scheme: self.scheme,
            host: self.host,
            addr,
            host_header: self.host_header,
            path: self.path,
            credentials: self.credentials,
            grpc: self.grpc,
        }
    }
}

impl Target {
    /// Parses and resolves an `http://`, `https://` or `tcp://host:port` URL.
    pub fn parse(text: &str) -> Result<Target, TargetError> {
        TargetUrl::parse(text)?.resolve()
    }

    /// One blocking connection attempt, so that a wrong port fails before the run, not during it.
    pub fn check_reachable(&self, timeout: Duration) -> Result<(), TargetError> {
        TcpStream::connect_timeout(&self.addr, timeout)
            .map(drop)
            .map_err(|e| TargetError::Connect(self.addr, e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_with_a_control_character_is_refused_not_silently_altered() {
        for bad in [
            "http://127.0.0.1:1/a\r\nX: 1",
            "http://127.0.0.1:1\n/a",
            "http://127.0.0.1:1/a\tb",
            "http://127.0.0.1:1/a\0b",
            "https://127.0.0.1:1/?q=\x7f",
            "tcp://127.0.0.1:1\r",
        ] {
            let e = TargetUrl::parse(bad).unwrap_err().to_string();
            assert!(e.contains("control character"), "{bad:?}: {e}");
            // One line, the characters shown escaped.
            assert!(!e.contains(['\r', '\n', '\0']), "{e:?}");
        }
        assert!(TargetUrl::parse("http://127.0.0.1:1/a%0D%0Ab").is_ok());
    }

    #[test]
    fn parses_http_urls() {
        let t = Target::parse("http://127.0.0.1:8080/a/b?x=1").unwrap();
        assert_eq!(t.addr, "127.0.0.1:8080".parse().unwrap());
        assert_eq!(t.host_header, "127.0.0.1:8080");
        assert_eq!(t.path, "/a/b?x=1");
        let t = Target::parse("http://127.0.0.1").unwrap();
        assert_eq!(t.path, "/");
        assert_eq!(t.addr.port(), 80);
    }

    #[test]
    fn rejects_bad_urls_clearly() {
        assert!(matches!(
            Target::parse("not a url"),
            Err(TargetError::Url(..))
        ));
        assert_eq!(
            Target::parse("localhost:8080/").unwrap_err().to_string(),
            "invalid URL 'localhost:8080/': no scheme; did you mean http://localhost:8080/?"
        );
        assert!(matches!(
            Target::parse("ftp://127.0.0.1/"),
            Err(TargetError::Scheme(..))
        ));
        assert!(matches!(
            Target::parse("tcp://127.0.0.1/"),
            Err(TargetError::Url(..))
        ));
        assert_eq!(
            Target::parse("tcp://127.0.0.1:9").unwrap().scheme,
            Scheme::Tcp
        );
        assert_eq!(
            Target::parse("https://127.0.0.1/").unwrap().addr.port(),
            443
        );
        // WebSocket URLs take their scheme's default port and keep path and query.
        let ws = TargetUrl::parse("ws://h.invalid/chat?room=1").unwrap();
        assert_eq!(
            (ws.scheme, ws.port, ws.path.as_str()),
            (Scheme::Ws, 80, "/chat?room=1")
        );
        let wss = TargetUrl::parse("wss://h.invalid").unwrap();
        assert_eq!((wss.scheme, wss.port), (Scheme::Wss, 443));
        assert!(wss.scheme.is_tls() && wss.scheme.is_websocket() && !Scheme::Https.is_websocket());
        assert!(matches!(
            Target::parse("http://no-such-host.invalid/"),
            Err(TargetError::Resolve(..))
        ));
    }

    #[test]
    fn parsing_a_target_does_not_resolve_its_host() {
        // `.invalid` never resolves (RFC 6761): parsing succeeds, resolving fails clearly.
        let u = TargetUrl::parse("https://u:pw@checkout.invalid/pay?x=1").unwrap();
        assert_eq!(
            (u.scheme, u.host.as_str(), u.port, u.path.as_str()),
            (Scheme::Https, "checkout.invalid", 443, "/pay?x=1")
        );
        assert_eq!(u.url, "https://u:***@checkout.invalid/pay?x=1");
        assert!(matches!(
            u.clone().resolve(),
            Err(TargetError::Resolve(h, _)) if h == "checkout.invalid"
        ));
        let t = u.at("10.0.0.7:443".parse().unwrap());
        assert_eq!((t.host.as_str(), t.addr.port()), ("checkout.invalid", 443));
        assert_eq!(t.host_header, "checkout.invalid");
        assert!(t.credentials.is_some());
        // Bad URLs are refused by the parse alone.
        assert!(matches!(
            TargetUrl::parse("ftp://svc/"),
            Err(TargetError::Scheme(..))
        ));
        assert!(TargetUrl::parse("tcp://svc").is_err());
        assert_eq!(
            TargetUrl::parse("tcp://u@db.cluster.local:5432")
                .unwrap()
                .on_loopback(),
            "tcp://u@127.0.0.1:5432"
        );
        let v6 = TargetUrl::parse("http://[::1]:8080/").unwrap();
        assert_eq!(v6.resolve().unwrap().addr, "[::1]:8080".parse().unwrap());
    }
}
