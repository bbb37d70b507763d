//! WebSocket as what a run speaks: messages in flight per connection, how a reply is matched to
//! its message, text or binary frames; and what HTTP alone means, refused rather than dropped.

use super::matching::WsMatch;
use candor_core::protocol_name::ProtocolNaming;
use candor_core::results::{ProtocolName, RunConfig};
use candor_engine::config::{LoadConfig, LoadConfigError, Scheme};
use candor_engine::pool::GateTicket;
use candor_engine::seam::carrying::{Slots, TimeoutScope};
use candor_engine::seam::unit::{ProbeFailure, ProtocolUnit, ScheduleAt};
use candor_engine::shared::{PhaseAcc, WorkerError, WorkerSetup};
use candor_engine::transport::tls::{self, TlsError};
use candor_wire::target::Target;
use candor_workload::WorkloadError;
use std::sync::Arc;
use std::time::Duration;

/// The names this folder's protocol goes by in the results (see `ProtocolName`).
#[linkme::distributed_slice(candor_core::protocol_name::PROTOCOL_NAMES)]
pub static WS: ProtocolNaming = ProtocolNaming {
    id: "ws",
    words: "WebSocket",
    replies_are_messages: true,
};

#[linkme::distributed_slice(candor_core::protocol_name::PROTOCOL_NAMES)]
pub static WS_TLS: ProtocolNaming = ProtocolNaming {
    id: "ws (TLS)",
    words: "WebSocket over TLS",
    replies_are_messages: true,
};

/// What TLS offers by ALPN for the upgrade (an HTTP/1.1 request).
const ALPN: &[&[u8]] = &[b"http/1.1"];

/// WebSocket (`ws://`, `wss://`): up to `streams` messages in flight per connection, replies
/// matched by `matching`, messages sent as binary frames when `binary`.
#[derive(Debug, Clone, PartialEq)]
pub struct WebSocket {
    pub streams: usize,
    pub matching: WsMatch,
    pub binary: bool,
}

impl ProtocolUnit for WebSocket {
    fn name(&self, target: &Target) -> ProtocolName {
        match target.scheme {
            Scheme::Wss => ProtocolName::new(&WS_TLS),
            _ => ProtocolName::new(&WS),
        }
    }

    fn slots(&self) -> Slots {
        Slots {
            per_connection: self.streams.max(1),
            timeout: TimeoutScope::Stream,
        }
    }

    /// A message is the body of each request (`--body`, `--body-file`, templates, `--requests`
    /// lines), sent after an upgrade with `GET` and `-H`.
    fn record(&self, settings: &mut RunConfig) {
        settings.streams = Some(self.streams);
        settings.ws_binary = Some(self.binary);
        settings.ws_match = Some(self.matching.to_string());
    }

    fn check(&self, config: &LoadConfig) -> Result<(), LoadConfigError> {
        let bad = |m: &str| Err(LoadConfigError::Invalid(m.into()));
        if config.method != "GET" {
            return bad("-m/--method does not apply to ws:// and wss://: the upgrade is a GET and a message is the body");
        }
        let w = &config.workload;
        if !w.checks.is_empty() {
            return bad(
                "--check-body and --check-header apply to HTTP targets, not ws:// or wss://",
            );
        }
        if !w.targets.is_empty() {
            return bad(
                "request lines with their own \"url\" apply to HTTP targets, not ws:// or wss://",
            );
        }
        if let WsMatch::JsonField(field) = &self.matching {
            let bodies: Vec<(&[u8], String)> = if config.requests.is_empty() {
                let origin = "--body".to_string();
                vec![(&config.body[..], origin)]
            } else {
                config
                    .requests
                    .iter()
                    .enumerate()
                    .map(|(i, r)| (&r.body[..], format!("request {} of the request set", i + 1)))
                    .collect()
            };
            for (body, origin) in bodies {
                // A templated body is JSON only once filled; a fill that is not is sent as it
                // is, and its reply, carrying no number, is counted as matching nothing.
                if !candor_engine::config::has_placeholder(body) {
                    field
                        .check_body(body, &origin)
                        .map_err(|e| LoadConfigError::Invalid(e.to_string()))?;
                }
            }
        }
        Ok(())
    }

    fn check_workload(&self, config: &LoadConfig) -> Result<(), WorkloadError> {
        if config.workload.script.is_some() {
            return Err(WorkloadError::Invalid(
                "-s (a wrk script) makes HTTP requests; it does not apply to ws:// or wss:// (messages, not requests)".into(),
            ));
        }
        Ok(())
    }

    fn thread_tls(
        &self,
        config: &LoadConfig,
    ) -> Result<Option<Arc<rustls::ClientConfig>>, TlsError> {
        tls::shared_client_config(config, ALPN)
    }

    fn probe(&self, config: &LoadConfig, timeout: Duration) -> Result<(), ProbeFailure> {
        Ok(tls::probe_handshake(config, ALPN, timeout)?)
    }

    fn run_thread(
        &self,
        setup: WorkerSetup,
        tls: Option<Arc<rustls::ClientConfig>>,
        ticket: GateTicket,
        schedule_at: ScheduleAt<'_>,
    ) -> Result<[PhaseAcc; 2], WorkerError> {
        let settings = super::carrier::Settings {
            streams: self.streams,
            matching: self.matching.clone(),
            binary: self.binary,
        };
        super::carrier::run_worker(setup, settings, tls, ticket, schedule_at)
    }
}
