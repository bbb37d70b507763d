//! The push thread of one output: a bounded queue of batches filled by the run's collector (which
//! never waits), emptied by a blocking HTTP client with retries and back-off. What cannot be
//! delivered is counted, never held without bound.

use crate::answer::Answer;
use crate::format::Format;
use crate::series::Batch;
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Batches waiting at most: each holds every series, and a newer one supersedes an older one's
/// cumulative values, so a few are enough to ride out a receiver's hiccup.
pub const QUEUE_BATCHES: usize = 8;
/// One POST's bound, connect included.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// Attempts at one batch while a newer one waits: after these the older one is given up.
const ATTEMPTS_BEFORE_NEWER: u32 = 3;
/// Most bytes of an error answer kept for the summary line.
const ERROR_EXCERPT: u64 = 200;

/// What an output delivered, for the line after the run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PushStats {
    pub sent_samples: u64,
    pub dropped_samples: u64,
    pub pushes: u64,
    pub retries: u64,
    /// The last refusal or transport error, in plain words.
    pub last_error: Option<String>,
}

struct Queue {
    batches: VecDeque<Batch>,
    /// Set at close: after `deadline`, what is left is dropped.
    deadline: Option<Instant>,
    stats: PushStats,
    /// Samples of the batch being posted (counted as dropped if close gives up on it).
    in_flight: u64,
    /// The thread has ended.
    ended: bool,
}

struct Shared {
    queue: Mutex<Queue>,
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// One output's push thread.
pub struct Sender {
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// How batches reach the receiver: HTTP POSTs, or gRPC calls (`otlp-grpc`).
enum Transport {
    Http(ureq::Agent),
    Grpc(crate::grpc::Client),
}

impl Transport {
    fn send(&mut self, url: &str, format: &dyn Format, body: &[u8]) -> Answer {
        match self {
            Transport::Http(agent) => post(agent, url, format, body),
            Transport::Grpc(client) => client.export(body, REQUEST_TIMEOUT, url),
        }
    }
}

fn post(agent: &ureq::Agent, url: &str, format: &dyn Format, body: &[u8]) -> Answer {
    let mut req = agent.post(url);
    for (k, v) in format.headers() {
        req = req.header(*k, *v);
    }
    match req.send(body) {
        Ok(mut resp) => {
            let code = resp.status().as_u16();
            if (200..300).contains(&code) {
                return Answer::Accepted;
            }
            let text = resp
                .body_mut()
                .with_config()
                .limit(ERROR_EXCERPT)
                .read_to_string()
                .unwrap_or_default();
            let why = format!("{url} answered {code}: {}", text.trim());
            if code == 429 || code >= 500 {
                Answer::Retry(why)
            } else {
                Answer::Refused(why)
            }
        }
        Err(e) => Answer::Retry(format!("{url}: {e}")),
    }
}

impl Sender {
    /// Starts the push thread of `format` to `url`, over gRPC to `grpc` when given.
    pub fn start(
        format: Box<dyn Format>,
        url: String,
        grpc: Option<crate::grpc::Endpoint>,
    ) -> std::io::Result<Sender> {
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue {
                batches: VecDeque::new(),
                deadline: None,
                stats: PushStats::default(),
                in_flight: 0,
                ended: false,
            }),
            changed: Condvar::new(),
        });
        let s = shared.clone();
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(REQUEST_TIMEOUT))
            .http_status_as_error(false)
            // As the load itself: no proxy from the environment.
            .proxy(None)
            .build()
            .into();
        let mut transport = match grpc {
            Some(endpoint) => Transport::Grpc(crate::grpc::Client::new(endpoint)?),
            None => Transport::Http(agent),
        };
        let thread = std::thread::Builder::new()
            .name(format!("candor-push-{}", format.name()))
            .spawn(move || {
                run(&s, &mut transport, &url, format.as_ref());
                s.lock().ended = true;
                s.changed.notify_all();
            })?;
        Ok(Sender {
            shared,
            thread: Some(thread),
        })
    }

    /// Queues `batch` without waiting: past [`QUEUE_BATCHES`] the oldest waiting one is dropped.
    pub fn send(&self, batch: Batch) {
        let mut q = self.shared.lock();
        q.batches.push_back(batch);
        while q.batches.len() > QUEUE_BATCHES {
            if let Some(old) = q.batches.pop_front() {
                q.stats.dropped_samples += old.samples();
            }
        }
        drop(q);
        self.shared.changed.notify_all();
    }

    /// Delivers what is queued for at most `flush`, then stops; what is left is dropped. A POST
    /// still under way then is not waited for (its thread ends with the process).
    pub fn close(mut self, flush: Duration) -> PushStats {
        let deadline = Instant::now() + flush;
        let mut q = self.shared.lock();
        q.deadline = Some(deadline);
        self.shared.changed.notify_all();
        // A little past the deadline: the thread notices it between attempts.
        let give_up = deadline + Duration::from_millis(200);
        while !q.ended {
            let left = give_up.saturating_duration_since(Instant::now());
            if left.is_zero() {
                let abandoned: u64 = q.batches.drain(..).map(|b| b.samples()).sum();
                q.stats.dropped_samples += abandoned + q.in_flight;
                q.in_flight = 0;
                let stats = q.stats.clone();
                // Whatever the thread still records lands after this copy, unreported.
                return stats;
            }
            q = self
                .shared
                .changed
                .wait_timeout(q, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        let stats = q.stats.clone();
        drop(q);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        stats
    }
}

impl Drop for Sender {
    fn drop(&mut self) {
        let mut q = self.shared.lock();
        q.deadline.get_or_insert_with(Instant::now);
        drop(q);
        self.shared.changed.notify_all();
    }
}

fn past(deadline: Option<Instant>) -> bool {
    deadline.is_some_and(|d| Instant::now() >= d)
}

fn run(shared: &Shared, transport: &mut Transport, url: &str, format: &dyn Format) {
    loop {
        let batch = {
            let mut q = shared.lock();
            loop {
                if past(q.deadline) {
                    let left: u64 = q.batches.drain(..).map(|b| b.samples()).sum();
                    q.stats.dropped_samples += left;
                    return;
                }
                if let Some(b) = q.batches.pop_front() {
                    break b;
                }
                if q.deadline.is_some() {
                    return;
                }
                q = shared.changed.wait(q).unwrap_or_else(|e| e.into_inner());
            }
        };
        deliver(shared, transport, url, format, &batch);
    }
}

/// Posts `batch` until it is accepted, refused, superseded or out of time.
fn deliver(
    shared: &Shared,
    transport: &mut Transport,
    url: &str,
    format: &dyn Format,
    batch: &Batch,
) {
    let body = format.encode(batch);
    shared.lock().in_flight = batch.samples();
    let mut backoff = FIRST_BACKOFF;
    let mut attempts = 0u32;
    loop {
        let answer = transport.send(url, format, &body);
        attempts += 1;
        let mut q = shared.lock();
        let why = match answer {
            Answer::Accepted => {
                q.in_flight = 0;
                q.stats.sent_samples += batch.samples();
                q.stats.pushes += 1;
                return;
            }
            Answer::Refused(why) => {
                q.in_flight = 0;
                q.stats.dropped_samples += batch.samples();
                q.stats.last_error = Some(why);
                return;
            }
            Answer::Retry(why) => why,
        };
        q.stats.last_error = Some(why);
        let superseded = !q.batches.is_empty() && attempts >= ATTEMPTS_BEFORE_NEWER;
        if superseded || past(q.deadline) {
            q.in_flight = 0;
            q.stats.dropped_samples += batch.samples();
            return;
        }
        q.stats.retries += 1;
        // Wait out the back-off, or less if the run closes meanwhile.
        let wait = match q.deadline {
            Some(d) => backoff.min(d.saturating_duration_since(Instant::now())),
            None => backoff,
        };
        let _ = shared
            .changed
            .wait_timeout(q, wait)
            .unwrap_or_else(|e| e.into_inner());
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remote_write::RemoteWrite;
    use crate::series::{Series, Value};

    fn batch(n: usize) -> Batch {
        Batch {
            series: (0..n)
                .map(|_| Series {
                    name: "candor_run_finished",
                    help: "",
                    labels: Vec::new(),
                    value: Value::Gauge(1.0),
                })
                .collect(),
            ..Batch::default()
        }
    }

    #[test]
    fn a_receiver_that_never_answers_costs_the_flush_time_not_the_request_timeout() {
        // Accepts, reads nothing, answers nothing: the POST would wait its 5 s.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/w", listener.local_addr().unwrap());
        let hold = std::thread::spawn(move || listener.accept().map(|c| c.0));
        let s = Sender::start(Box::new(RemoteWrite { classic: false }), url, None).unwrap();
        s.send(batch(3));
        s.send(batch(2));
        let _held = hold.join().unwrap().unwrap();
        let t0 = Instant::now();
        let stats = s.close(Duration::from_millis(100));
        assert!(t0.elapsed() < REQUEST_TIMEOUT, "{:?}", t0.elapsed());
        assert_eq!(stats.sent_samples, 0);
        assert_eq!(
            stats.dropped_samples, 5,
            "the one being posted and the one queued"
        );
    }

    #[test]
    fn a_full_queue_drops_its_oldest_batches_and_counts_them() {
        // Nothing listens: every batch waits in the queue or in retries.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let s = Sender::start(
            Box::new(RemoteWrite { classic: false }),
            format!("http://127.0.0.1:{port}/w"),
            None,
        )
        .unwrap();
        for _ in 0..QUEUE_BATCHES + 10 {
            s.send(batch(1));
        }
        assert!(s.shared.lock().batches.len() <= QUEUE_BATCHES);
        let stats = s.close(Duration::ZERO);
        assert_eq!(stats.sent_samples, 0);
        assert_eq!(stats.dropped_samples, QUEUE_BATCHES as u64 + 10);
    }
}
