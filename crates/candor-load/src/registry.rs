//! The registry of protocols: the one place that reads the target and the protocol flags and
//! chooses what the run speaks, as one typed value ([`choose`]). Everything else asks that value
//! (`candor_engine::seam::unit::ProtocolUnit`); a new protocol is its folder in
//! `candor-protocols` plus its line in [`choose`] (and its flag in [`ProtocolFlags`]).

use candor_engine::config::{LoadConfigError, Scheme, DEFAULT_STREAMS};
use candor_engine::seam::unit::ProtocolUnit;
use candor_protocols::http1::Http1;
use candor_protocols::http2::Http2;
use candor_protocols::tcp::{Framing, Tcp};
use candor_protocols::ws::matching::WsMatch;
use candor_protocols::ws::WebSocket;
use candor_wire::target::Target;
use std::sync::Arc;

/// The flags that choose and set up a protocol, as the command line gave them.
#[derive(Debug, Clone, PartialEq)]
pub struct ProtocolFlags {
    /// `--h2`: HTTP/2 on an `http://` or `https://` target (a gRPC target always speaks it).
    pub h2: bool,
    /// `--streams`: HTTP/2 streams, or WebSocket messages in flight, per connection.
    pub streams: usize,
    /// `--pipeline`: HTTP/1.1 (or raw TCP) requests in flight per connection.
    pub pipeline: usize,
    /// `--ws-match`, `--ws-binary`.
    pub ws_match: WsMatch,
    pub ws_binary: bool,
    /// `--payload`/`--payload-file` and the response framing of `tcp://`.
    pub payload: Vec<u8>,
    pub framing: Option<Framing>,
}

impl Default for ProtocolFlags {
    fn default() -> Self {
        ProtocolFlags {
            h2: false,
            streams: DEFAULT_STREAMS,
            pipeline: 1,
            ws_match: WsMatch::InOrder,
            ws_binary: false,
            payload: Vec::new(),
            framing: None,
        }
    }
}

/// What `target` speaks with `flags`, or the one-line reason the flags do not fit it.
pub fn choose(
    target: &Target,
    flags: ProtocolFlags,
) -> Result<Arc<dyn ProtocolUnit>, LoadConfigError> {
    check_flags(target, &flags).map_err(LoadConfigError::Invalid)?;
    let ProtocolFlags {
        h2,
        streams,
        pipeline,
        ws_match,
        ws_binary,
        payload,
        framing,
    } = flags;
    Ok(match target.scheme {
        Scheme::Tcp => Arc::new(Tcp {
            pipeline,
            payload,
            framing: framing.expect("checked: tcp:// has a framing"),
        }),
        Scheme::Ws | Scheme::Wss => Arc::new(WebSocket {
            streams,
            matching: ws_match,
            binary: ws_binary,
        }),
        Scheme::Http | Scheme::Https if h2 || target.grpc => Arc::new(Http2 { streams }),
        Scheme::Http | Scheme::Https => Arc::new(Http1 { pipeline }),
    })
}

/// The protocol flags against each other and the target, in the order the run has always
/// checked them.
fn check_flags(target: &Target, f: &ProtocolFlags) -> Result<(), String> {
    if f.pipeline == 0 || f.pipeline > 1024 {
        return Err(format!(
            "pipeline depth must be 1..=1024, got {}",
            f.pipeline
        ));
    }
    if f.streams == 0 {
        return Err("streams must be at least 1".into());
    }
    if f.h2 && f.pipeline > 1 {
        return Err("--pipeline is for HTTP/1.1; HTTP/2 multiplexes with --streams".into());
    }
    match target.scheme {
        Scheme::Tcp => {
            if f.framing.is_none() {
                return Err("tcp:// needs a response framing: --expect-bytes, --expect-delimiter or --length-prefix".into());
            }
            if f.h2 {
                return Err("--h2 and --requests apply to HTTP targets, not tcp://".into());
            }
        }
        Scheme::Http | Scheme::Https | Scheme::Ws | Scheme::Wss => {
            if f.framing.is_some() || !f.payload.is_empty() {
                return Err("--payload and response framing apply to tcp:// targets".into());
            }
        }
    }
    if target.grpc && f.pipeline > 1 {
        return Err("--pipeline is for HTTP/1.1; gRPC multiplexes with --streams".into());
    }
    if target.scheme.is_websocket() {
        if f.h2 {
            return Err("--h2 applies to http:// and https:// targets, not ws:// or wss://".into());
        }
        if f.pipeline > 1 {
            return Err("--pipeline is for HTTP/1.1; a WebSocket connection carries up to --streams messages at once".into());
        }
    } else if f.ws_binary || f.ws_match != WsMatch::InOrder {
        return Err("--ws-match and --ws-binary apply to ws:// and wss:// targets".into());
    }
    Ok(())
}
