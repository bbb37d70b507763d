//! The registry of protocols: the one place that reads the target and the protocol flags and
//! chooses what the run speaks, as one typed value ([`choose`]). Everything else asks that value
//! (`candor_engine::seam::unit::ProtocolUnit`); a new protocol is its folder in
//! `candor-protocols` plus its line in [`choose`] (and its flag in [`ProtocolFlags`]).

use candor_engine::config::{LoadConfigError, Scheme, DEFAULT_STREAMS};
use candor_engine::seam::unit::ProtocolUnit;
use candor_protocols::http1::unit::Http1;
use candor_protocols::http2::calls::GrpcConfig;
use candor_protocols::http2::unit::Http2;
use candor_protocols::http3::unit::Http3;
use candor_protocols::tcp::unit::Tcp;
use candor_protocols::tcp::Framing;
use candor_protocols::ws::matching::WsMatch;
use candor_protocols::ws::unit::WebSocket;
use candor_wire::target::Target;
use std::sync::Arc;

/// A switch of the command line that chooses a protocol where the target's scheme leaves a
/// choice (`--h2` on `http://` and `https://`). The command line offers every one of
/// [`SWITCHES`] (`candor_runner`'s `ProtocolSwitches`), so a protocol's switch is declared here,
/// beside the line of [`choose`] that reads it, and nowhere else.
#[derive(Debug, PartialEq, Eq)]
pub struct Switch {
    /// The long flag, without its dashes.
    pub long: &'static str,
    /// Its line in `--help`.
    pub help: &'static str,
}

/// `--h2`: HTTP/2 on an `http://` or `https://` target (a gRPC target always speaks it).
pub static H2: Switch = Switch {
    long: "h2",
    help: "Speak HTTP/2 (prior knowledge over http://, ALPN over https://)",
};

/// `--h3`: HTTP/3 over QUIC on an `https://` target.
pub static H3: Switch = Switch {
    long: "h3",
    help: "Speak HTTP/3 over QUIC (https:// only; ALPN h3 over UDP)",
};

/// Every protocol switch, in the order `--help` lists them.
pub static SWITCHES: &[&Switch] = &[&H2, &H3];

/// The flags that choose and set up a protocol, as the command line gave them.
#[derive(Debug, Clone)]
pub struct ProtocolFlags {
    /// The protocol switches given (see [`Switch`]).
    pub switches: Vec<&'static Switch>,
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
    /// `--check-status` was given (it needs responses with a status).
    pub check_status: bool,
    /// A gRPC target's calls (`--call`, `--proto`, `--requests`), made by the command line.
    pub grpc: Option<Arc<GrpcConfig>>,
}

impl ProtocolFlags {
    /// Whether `switch` was given.
    pub fn switched(&self, switch: &'static Switch) -> bool {
        self.switches.iter().any(|s| std::ptr::eq(*s, switch))
    }
}

impl Default for ProtocolFlags {
    fn default() -> Self {
        ProtocolFlags {
            switches: Vec::new(),
            streams: DEFAULT_STREAMS,
            pipeline: 1,
            ws_match: WsMatch::InOrder,
            ws_binary: false,
            payload: Vec::new(),
            framing: None,
            check_status: false,
            grpc: None,
        }
    }
}

/// What `target` speaks with `flags`, or the one-line reason the flags do not fit it.
pub fn choose(
    target: &Target,
    flags: ProtocolFlags,
) -> Result<Arc<dyn ProtocolUnit>, LoadConfigError> {
    check_flags(target, &flags).map_err(LoadConfigError::Invalid)?;
    let (h2, h3) = (flags.switched(&H2), flags.switched(&H3));
    let ProtocolFlags {
        streams,
        pipeline,
        ws_match,
        ws_binary,
        payload,
        framing,
        grpc,
        ..
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
        Scheme::Https if h3 => Arc::new(Http3 { streams }),
        Scheme::Http | Scheme::Https if h2 || target.grpc => Arc::new(Http2 { streams, grpc }),
        Scheme::Http | Scheme::Https => Arc::new(Http1 { pipeline }),
    })
}

/// `--llm` asks for an OpenAI-compatible server over HTTP: any other target is refused, named.
pub fn refuse_llm(target: &Target) -> Result<(), LoadConfigError> {
    let other = match (target.scheme, target.grpc) {
        (Scheme::Https, true) => "grpcs://",
        (_, true) => "grpc://",
        (Scheme::Ws | Scheme::Wss, _) => "ws:// and wss://",
        (Scheme::Tcp, _) => "tcp://",
        (Scheme::Http | Scheme::Https, false) => return Ok(()),
    };
    Err(LoadConfigError::Invalid(format!(
        "--llm needs an http:// or https:// target (an OpenAI-compatible server), not {other}"
    )))
}

/// The protocol flags against each other and the target, in the order the run has always
/// checked them.
fn check_flags(target: &Target, f: &ProtocolFlags) -> Result<(), String> {
    if let [first, second, ..] = f.switches[..] {
        return Err(format!(
            "--{} and --{} choose different protocols: give one",
            first.long, second.long
        ));
    }
    let (h2, h3) = (f.switched(&H2), f.switched(&H3));
    if f.pipeline == 0 || f.pipeline > 1024 {
        return Err(format!(
            "pipeline depth must be 1..=1024, got {}",
            f.pipeline
        ));
    }
    if f.streams == 0 {
        return Err("streams must be at least 1".into());
    }
    if h3 {
        let refused = match (target.scheme, target.grpc) {
            _ if h2 => Some("--h2"),
            _ if f.pipeline > 1 => Some("--pipeline"),
            (_, true) => Some("gRPC targets"),
            (Scheme::Https, false) => None,
            (Scheme::Http, false) => Some("http:// (HTTP/3 is always over TLS)"),
            (Scheme::Ws | Scheme::Wss, _) => Some("ws:// and wss://"),
            (Scheme::Tcp, _) => Some("tcp://"),
        };
        if let Some(other) = refused {
            return Err(format!(
                "--h3 needs an https:// target and no other protocol flag, not {other}"
            ));
        }
    }
    if h2 && f.pipeline > 1 {
        return Err("--pipeline is for HTTP/1.1; HTTP/2 multiplexes with --streams".into());
    }
    match target.scheme {
        Scheme::Tcp => {
            if f.framing.is_none() {
                return Err("tcp:// needs a response framing: --expect-bytes, --expect-delimiter or --length-prefix".into());
            }
            if f.payload.is_empty() {
                return Err("tcp:// needs a request payload: --payload or --payload-file".into());
            }
            if h2 {
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
        if h2 {
            return Err("--h2 applies to http:// and https:// targets, not ws:// or wss://".into());
        }
        if f.pipeline > 1 {
            return Err("--pipeline is for HTTP/1.1; a WebSocket connection carries up to --streams messages at once".into());
        }
    } else if f.ws_binary || f.ws_match != WsMatch::InOrder {
        return Err("--ws-match and --ws-binary apply to ws:// and wss:// targets".into());
    }
    if f.check_status && !target.grpc {
        match target.scheme {
            Scheme::Tcp => {
                return Err(
                    "--check-status applies to HTTP targets; raw tcp:// responses have no status"
                        .into(),
                )
            }
            Scheme::Ws | Scheme::Wss => {
                return Err(
                    "--check-status applies to HTTP targets; WebSocket replies have no status"
                        .into(),
                )
            }
            Scheme::Http | Scheme::Https => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use candor_core::results::ProtocolName;

    fn target(url: &str) -> Target {
        Target::parse(url).unwrap()
    }

    fn named(url: &str, flags: ProtocolFlags) -> ProtocolName {
        let t = target(url);
        let name = choose(&t, flags).unwrap().name(&t);
        // Every name a unit gives is declared to the results' list: a file read back finds
        // its words.
        assert_eq!(ProtocolName::of_id(name.id()), Some(name), "{name:?}");
        name
    }

    fn refused(url: &str, flags: ProtocolFlags) -> String {
        choose(&target(url), flags).unwrap_err().to_string()
    }

    fn tcp_flags() -> ProtocolFlags {
        ProtocolFlags {
            payload: b"ping".to_vec(),
            framing: Some(Framing::ExpectBytes(4)),
            ..Default::default()
        }
    }

    #[test]
    fn the_target_and_the_flags_choose_one_protocol_named_as_the_results_name_it() {
        let h2 = || ProtocolFlags {
            switches: vec![&H2],
            ..Default::default()
        };
        let d = ProtocolFlags::default;
        assert_eq!(named("http://127.0.0.1:1/", d()).id(), "http/1.1");
        assert_eq!(named("https://127.0.0.1:1/", d()).id(), "http/1.1 (TLS)");
        assert_eq!(named("http://127.0.0.1:1/", h2()).id(), "h2c");
        assert_eq!(named("https://127.0.0.1:1/", h2()).id(), "h2 (TLS)");
        assert_eq!(named("grpc://127.0.0.1:1", d()).id(), "grpc");
        assert_eq!(named("grpcs://127.0.0.1:1", d()).id(), "grpc (TLS)");
        assert_eq!(named("ws://127.0.0.1:1/", d()).id(), "ws");
        assert_eq!(named("wss://127.0.0.1:1/", d()).id(), "ws (TLS)");
        assert_eq!(named("tcp://127.0.0.1:1", tcp_flags()).id(), "tcp");
        let h3 = ProtocolFlags {
            switches: vec![&H3],
            ..Default::default()
        };
        assert_eq!(named("https://127.0.0.1:1/", h3).id(), "h3");
    }

    #[test]
    fn h3_needs_https_and_no_other_protocol_flag() {
        let h3 = |f: ProtocolFlags| ProtocolFlags {
            switches: vec![&H3],
            ..f
        };
        let d = ProtocolFlags::default;
        let say = |other: &str| {
            format!("--h3 needs an https:// target and no other protocol flag, not {other}")
        };
        assert_eq!(
            refused("http://127.0.0.1:1/", h3(d())),
            say("http:// (HTTP/3 is always over TLS)")
        );
        assert_eq!(
            refused("wss://127.0.0.1:1/", h3(d())),
            say("ws:// and wss://")
        );
        assert_eq!(refused("grpcs://127.0.0.1:1", h3(d())), say("gRPC targets"));
        assert_eq!(refused("tcp://127.0.0.1:1", h3(tcp_flags())), say("tcp://"));
        let both = ProtocolFlags {
            switches: vec![&H2, &H3],
            ..d()
        };
        assert_eq!(
            refused("https://127.0.0.1:1/", both),
            "--h2 and --h3 choose different protocols: give one"
        );
        let piped = ProtocolFlags { pipeline: 4, ..d() };
        assert_eq!(
            refused("https://127.0.0.1:1/", h3(piped)),
            say("--pipeline")
        );
    }

    #[test]
    fn each_protocol_takes_its_own_settings_from_the_flags() {
        use candor_engine::seam::carrying::{Slots, TimeoutScope};
        let slots_of = |per_connection, timeout| Slots {
            per_connection,
            timeout,
        };
        let flags = ProtocolFlags {
            pipeline: 4,
            streams: 9,
            ..Default::default()
        };
        let slots = |url: &str, f: ProtocolFlags| choose(&target(url), f).unwrap().slots();
        assert_eq!(
            slots("http://127.0.0.1:1/", flags.clone()),
            slots_of(4, TimeoutScope::Connection)
        );
        let ws = ProtocolFlags {
            pipeline: 1,
            ..flags.clone()
        };
        assert_eq!(
            slots("ws://127.0.0.1:1/", ws),
            slots_of(9, TimeoutScope::Stream)
        );
        let h2 = ProtocolFlags {
            switches: vec![&H2],
            pipeline: 1,
            ..flags
        };
        assert_eq!(
            slots("http://127.0.0.1:1/", h2),
            slots_of(9, TimeoutScope::Stream)
        );
        let tcp = ProtocolFlags {
            pipeline: 3,
            ..tcp_flags()
        };
        let unit = choose(&target("tcp://127.0.0.1:1"), tcp).unwrap();
        assert_eq!(unit.slots(), slots_of(3, TimeoutScope::Connection));
        assert_eq!(
            unit.request_form(),
            candor_engine::seam::unit::RequestForm::Payload(b"ping")
        );
    }

    #[test]
    fn flags_that_do_not_fit_the_target_are_refused_in_one_line() {
        let http = "http://127.0.0.1:1/";
        let cases: Vec<(&str, ProtocolFlags, &str)> = vec![
            (
                http,
                ProtocolFlags {
                    pipeline: 0,
                    ..Default::default()
                },
                "pipeline depth must be 1..=1024, got 0",
            ),
            (
                http,
                ProtocolFlags {
                    streams: 0,
                    ..Default::default()
                },
                "streams must be at least 1",
            ),
            (
                http,
                ProtocolFlags {
                    switches: vec![&H2],
                    pipeline: 2,
                    ..Default::default()
                },
                "--pipeline is for HTTP/1.1; HTTP/2 multiplexes with --streams",
            ),
            (
                "tcp://127.0.0.1:1",
                ProtocolFlags::default(),
                "tcp:// needs a response framing",
            ),
            (
                "tcp://127.0.0.1:1",
                ProtocolFlags {
                    switches: vec![&H2],
                    ..tcp_flags()
                },
                "--h2 and --requests apply to HTTP targets, not tcp://",
            ),
            (
                http,
                tcp_flags(),
                "--payload and response framing apply to tcp:// targets",
            ),
            (
                "grpc://127.0.0.1:1",
                ProtocolFlags {
                    pipeline: 2,
                    ..Default::default()
                },
                "--pipeline is for HTTP/1.1; gRPC multiplexes with --streams",
            ),
            (
                "ws://127.0.0.1:1/",
                ProtocolFlags {
                    switches: vec![&H2],
                    ..Default::default()
                },
                "--h2 applies to http:// and https:// targets, not ws:// or wss://",
            ),
            (
                "wss://127.0.0.1:1/",
                ProtocolFlags {
                    pipeline: 2,
                    ..Default::default()
                },
                "--pipeline is for HTTP/1.1; a WebSocket connection carries up to --streams",
            ),
            (
                http,
                ProtocolFlags {
                    ws_binary: true,
                    ..Default::default()
                },
                "--ws-match and --ws-binary apply to ws:// and wss:// targets",
            ),
        ];
        for (url, flags, said) in cases {
            let got = refused(url, flags.clone());
            assert!(got.contains(said), "{url} {flags:?}: {got}");
            assert!(!got.contains('\n'), "{got}");
        }
    }

    #[test]
    fn raw_tcp_refuses_credentials_and_http_flags_rather_than_drop_them() {
        let mut c =
            crate::plan::RunPlan::new(target("tcp://u:p@127.0.0.1:9"), tcp_flags()).unwrap();
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .contains("cannot carry user:password@"));
        c.target = target("tcp://127.0.0.1:9");
        c.headers = vec!["X-A: 1".into()];
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .starts_with("-H/--header applies to http:// and https:// targets"));
    }
}
