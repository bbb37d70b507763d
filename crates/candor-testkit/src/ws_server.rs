//! A WebSocket echo server for the tests of `ws://` and `wss://` targets, built on
//! `tokio-tungstenite` (a maintained implementation, so that candor's own frames and handshake are
//! checked against someone else's): each message is echoed `delay` after it arrived, held to the
//! end of a stall window when it falls due inside one; on command it closes or first sends a
//! message of its own that answers nothing, and it can reorder
//! replies, fragment them and ping the client, so that every path of a client is exercised.

use futures_util::{SinkExt, StreamExt};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};
use tokio_tungstenite::tungstenite::handshake::server::{Request, Response};
use tokio_tungstenite::tungstenite::protocol::frame::coding::{CloseCode, Data, OpCode};
use tokio_tungstenite::tungstenite::protocol::frame::{CloseFrame, Frame};
use tokio_tungstenite::tungstenite::Message;

/// A message whose text holds this closes the connection with code 1011 instead of an echo.
pub const CLOSE_COMMAND: &str = "\"cmd\":\"close\"";

/// A message whose text holds this is answered first by a message of the server's own
/// ([`STRAY_REPLY`], which carries no number and answers nothing), then by its echo.
pub const STRAY_COMMAND: &str = "\"cmd\":\"stray\"";
/// What the server sends of its own on [`STRAY_COMMAND`].
pub const STRAY_REPLY: &str = "{\"stray\":true}";

/// How the server behaves.
#[derive(Clone, Default)]
pub struct WsServerConfig {
    /// Each echo leaves this long after its message arrived.
    pub delay: Duration,
    /// Stalled for the last `.1` of every `.0` from the server's start: an echo due inside
    /// a window leaves at its end.
    pub stall: Option<(Duration, Duration)>,
    /// Echo messages two at a time, the second first (an out-of-order server).
    pub reorder_pairs: bool,
    /// Send each echo as two fragments (a first frame and a continuation).
    pub fragment: bool,
    /// Ping the client this often.
    pub ping_every: Option<Duration>,
    /// Serve `wss://` with this TLS configuration.
    pub tls: Option<Arc<tokio_rustls::rustls::ServerConfig>>,
}

/// What the server has seen, for the tests' assertions.
#[derive(Default)]
pub struct WsCounts {
    pub connections: AtomicU64,
    pub messages: AtomicU64,
    /// Of `messages`, those sent as binary frames.
    pub binary: AtomicU64,
    /// How many times each distinct message (as text, binary lossily) arrived.
    pub by_message: Mutex<std::collections::HashMap<String, u64>>,
    pub echoes: AtomicU64,
    pub pongs: AtomicU64,
    /// The headers of each upgrade request, lower-case names.
    pub upgrade_headers: Mutex<Vec<Vec<(String, String)>>>,
}

/// A running server; dropping it stops it.
pub struct WsServer {
    addr: SocketAddr,
    started: Instant,
    counts: Arc<WsCounts>,
    stop: Option<watch::Sender<bool>>,
    thread: Option<JoinHandle<()>>,
}

impl WsServer {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// When the server started: stall windows count from here.
    pub fn started(&self) -> Instant {
        self.started
    }

    pub fn counts(&self) -> &WsCounts {
        &self.counts
    }
}

impl Drop for WsServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(true);
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Starts the server on 127.0.0.1 with a port of its own; it accepts when this returns.
pub fn start(config: WsServerConfig) -> std::io::Result<WsServer> {
    let std_listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    std_listener.set_nonblocking(true)?;
    let addr = std_listener.local_addr()?;
    let counts = Arc::new(WsCounts::default());
    let (stop_tx, stop_rx) = watch::channel(false);
    let started = Instant::now();
    let thread = {
        let counts = counts.clone();
        std::thread::Builder::new()
            .name("ws-test-server".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .enable_all()
                    .build()
                    .expect("a tokio runtime");
                runtime.block_on(serve(std_listener, config, counts, started, stop_rx));
            })?
    };
    Ok(WsServer {
        addr,
        started,
        counts,
        stop: Some(stop_tx),
        thread: Some(thread),
    })
}

async fn serve(
    listener: std::net::TcpListener,
    config: WsServerConfig,
    counts: Arc<WsCounts>,
    started: Instant,
    mut stop: watch::Receiver<bool>,
) {
    let listener = TcpListener::from_std(listener).expect("a tokio listener");
    let config = Arc::new(config);
    loop {
        let accepted = tokio::select! {
            _ = stop.changed() => return,
            a = listener.accept() => a,
        };
        let Ok((stream, _)) = accepted else { continue };
        let _ = stream.set_nodelay(true);
        counts.connections.fetch_add(1, Ordering::SeqCst);
        let (config, counts, stop) = (config.clone(), counts.clone(), stop.clone());
        tokio::spawn(async move {
            match &config.tls {
                Some(tls) => {
                    let acceptor = tokio_rustls::TlsAcceptor::from(tls.clone());
                    if let Ok(tls_stream) = acceptor.accept(stream).await {
                        connection(tls_stream, &config, &counts, started, stop).await;
                    }
                }
                None => connection(stream, &config, &counts, started, stop).await,
            }
        });
    }
}

/// When an echo of a message that arrived at `arrived` leaves.
pub fn echo_due(config: &WsServerConfig, started: Instant, arrived: Instant) -> Instant {
    let due = arrived + config.delay;
    match config.stall {
        Some((every, length)) => {
            let every_ns = every.as_nanos();
            let phase = due.duration_since(started).as_nanos() % every_ns;
            let stalled_from = every_ns - length.as_nanos();
            if phase >= stalled_from {
                due + Duration::from_nanos((every_ns - phase) as u64)
            } else {
                due
            }
        }
        None => due,
    }
}

async fn connection<S: AsyncRead + AsyncWrite + Unpin + Send + 'static>(
    stream: S,
    config: &Arc<WsServerConfig>,
    counts: &Arc<WsCounts>,
    started: Instant,
    mut stop: watch::Receiver<bool>,
) {
    // The callback's error type is tungstenite's (an HTTP response): not ours to shrink.
    #[allow(clippy::result_large_err)]
    let record = |req: &Request, resp: Response| {
        let headers = req
            .headers()
            .iter()
            .map(|(n, v)| {
                (
                    n.as_str().to_ascii_lowercase(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        if let Ok(mut all) = counts.upgrade_headers.lock() {
            all.push(headers);
        }
        Ok(resp)
    };
    let Ok(ws) = tokio_tungstenite::accept_hdr_async(stream, record).await else {
        return;
    };
    let (mut sink, mut source) = ws.split();
    // The reader stamps each message's arrival; the writer sends each echo when it is due.
    let (tx, mut rx) = mpsc::unbounded_channel::<(Instant, Message)>();
    let reader = {
        let counts = counts.clone();
        tokio::spawn(async move {
            while let Some(Ok(m)) = source.next().await {
                let now = Instant::now();
                match m {
                    Message::Text(_) | Message::Binary(_) => {
                        counts.messages.fetch_add(1, Ordering::SeqCst);
                        let text = match &m {
                            Message::Binary(b) => {
                                counts.binary.fetch_add(1, Ordering::SeqCst);
                                String::from_utf8_lossy(b).into_owned()
                            }
                            Message::Text(t) => t.as_str().to_string(),
                            _ => String::new(),
                        };
                        if let Ok(mut all) = counts.by_message.lock() {
                            *all.entry(text).or_default() += 1;
                        }
                        if tx.send((now, m)).is_err() {
                            return;
                        }
                    }
                    Message::Pong(_) => {
                        counts.pongs.fetch_add(1, Ordering::SeqCst);
                    }
                    Message::Close(_) => return,
                    _ => {}
                }
            }
        })
    };
    let mut held: Option<Message> = None;
    let mut ping = config.ping_every.map(tokio::time::interval);
    // Echoes waiting for their instant, oldest first (the delay is fixed, so due order is
    // arrival order); pings go out meanwhile.
    let mut waiting: std::collections::VecDeque<(tokio::time::Instant, Message)> =
        std::collections::VecDeque::new();
    let far = tokio::time::Instant::now() + Duration::from_secs(86_400);
    loop {
        let front_due = waiting.front().map_or(far, |(due, _)| *due);
        tokio::select! {
            _ = stop.changed() => break,
            m = rx.recv() => {
                let Some((arrived, message)) = m else { break };
                waiting.push_back((echo_due(config, started, arrived).into(), message));
                continue;
            }
            _ = async { ping.as_mut().unwrap().tick().await }, if ping.is_some() => {
                if sink.send(Message::Ping(b"candor?".to_vec().into())).await.is_err() {
                    break;
                }
                continue;
            }
            _ = tokio::time::sleep_until(front_due), if !waiting.is_empty() => {}
        }
        let Some((_, message)) = waiting.pop_front() else {
            continue;
        };
        if matches!(&message, Message::Text(t) if t.as_str().contains(CLOSE_COMMAND)) {
            let _ = sink
                .send(Message::Close(Some(CloseFrame {
                    code: CloseCode::Error,
                    reason: "closed on command".into(),
                })))
                .await;
            break;
        }
        if matches!(&message, Message::Text(t) if t.as_str().contains(STRAY_COMMAND))
            && sink.send(Message::Text(STRAY_REPLY.into())).await.is_err()
        {
            break;
        }
        let batch: Vec<Message> = if config.reorder_pairs {
            match held.take() {
                None => {
                    held = Some(message);
                    continue;
                }
                Some(first) => vec![message, first],
            }
        } else {
            vec![message]
        };
        for m in batch {
            let sent = if config.fragment {
                send_fragmented(&mut sink, m).await
            } else {
                sink.send(m).await.is_ok()
            };
            if !sent {
                reader.abort();
                return;
            }
            counts.echoes.fetch_add(1, Ordering::SeqCst);
        }
    }
    reader.abort();
}

/// Sends a message as two frames: its first half, then the rest as a continuation.
async fn send_fragmented<S>(sink: &mut S, m: Message) -> bool
where
    S: futures_util::Sink<Message> + Unpin,
{
    let (kind, data) = match m {
        Message::Text(t) => (Data::Text, t.as_bytes().to_vec()),
        Message::Binary(b) => (Data::Binary, b.to_vec()),
        other => return sink.send(other).await.is_ok(),
    };
    let half = data.len() / 2;
    let first = Frame::message(data[..half].to_vec(), OpCode::Data(kind), false);
    let rest = Frame::message(data[half..].to_vec(), OpCode::Data(Data::Continue), true);
    sink.send(Message::Frame(first)).await.is_ok() && sink.send(Message::Frame(rest)).await.is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_echo_due_inside_a_stall_leaves_at_its_end() {
        let c = WsServerConfig {
            delay: Duration::from_millis(10),
            stall: Some((Duration::from_secs(5), Duration::from_secs(1))),
            ..WsServerConfig::default()
        };
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        assert_eq!(echo_due(&c, t0, at(100)), at(110));
        assert_eq!(echo_due(&c, t0, at(3_990)), at(5_000));
        assert_eq!(echo_due(&c, t0, at(4_500)), at(5_000));
        assert_eq!(echo_due(&c, t0, at(4_995)), at(5_005));
        assert_eq!(echo_due(&c, t0, at(9_000)), at(10_000));
    }
}
