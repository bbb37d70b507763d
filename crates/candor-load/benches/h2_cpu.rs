//! Client CPU per request of the HTTP/2 engine beside the HTTP/1.1 engine, in-process: the load
//! thread's own CPU clock (`pthread_getcpuclockid`) is read at two instants in steady state, so
//! the servers' CPU (on other threads) is not counted. Open loop at a fixed rate (with and
//! without the pacing spin) and closed loop, against `candor serve` (HTTP/1.1) and the tests'
//! `h2` server (HTTP/2); both answer 200 with the same 2-byte body.
//!
//! `cargo bench -p candor-load --bench h2_cpu [-- --rounds N]`

#[path = "../tests/h2_support/mod.rs"]
mod h2_support;

use candor_load::load_run::RunOptions;
use candor_load::Target;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const S: u64 = 1_000_000_000;
/// Steady-state window: intervals 2, 3 and 4 of a 6 s run (start-up and the end excluded).
const WINDOW: (u64, u64) = (2, 5);

#[derive(Clone, Copy)]
enum Proto {
    Http1,
    Http2 { streams: usize },
}

struct Case {
    name: &'static str,
    proto: Proto,
    connections: usize,
    rate: Option<f64>,
    spin: bool,
}

fn thread_cpu_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid clock id of a live thread and a writable timespec.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * S + ts.tv_nsec as u64
}

/// Returns (requests completed in the window, load-thread CPU ns in the window, send lag p50 ns).
fn measure(case: &Case, h1_url: &str, h2_url: &str) -> (u64, u64, u64) {
    let url = match case.proto {
        Proto::Http1 => h1_url,
        Proto::Http2 { .. } => h2_url,
    };
    let mut c =
        candor_load::RunPlan::new(Target::parse(url).expect("url"), Default::default()).unwrap();
    c.threads = 1;
    c.connections = case.connections;
    c.shape = case.rate.map_or(
        candor_load::LoadShape::ClosedLoop,
        candor_load::LoadShape::constant,
    );
    c.duration_ns = 6 * S;
    if !case.spin {
        c.spin_ns = Some(0);
    }
    if let Proto::Http2 { streams } = case.proto {
        c.protocol = std::sync::Arc::new(candor_load::protocol::http2::unit::Http2 {
            streams,
            grpc: None,
        });
    }
    c.validate().expect("config");
    let clocks: Arc<Mutex<Vec<libc::clockid_t>>> = Arc::default();
    let start = Arc::new(AtomicU64::new(0));
    let cl = clocks.clone();
    let st = start.clone();
    let options = RunOptions {
        worker_start_hook: Some(Arc::new(move || {
            let mut clock: libc::clockid_t = 0;
            // SAFETY: asks for the CPU clock of the calling (live) thread.
            if unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut clock) } == 0 {
                cl.lock().expect("lock").push(clock);
            }
        })),
        on_start: Some(Arc::new(move |t| st.store(t, Ordering::SeqCst))),
        ..Default::default()
    };
    let sampler = {
        let (clocks, start) = (clocks.clone(), start.clone());
        std::thread::spawn(move || {
            while start.load(Ordering::SeqCst) == 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
            let t0 = start.load(Ordering::SeqCst);
            candor_core::exact_sleep::sleep_until_absolute(t0 + WINDOW.0 * S);
            let a: u64 = clocks
                .lock()
                .expect("lock")
                .iter()
                .map(|&c| thread_cpu_ns(c))
                .sum();
            candor_core::exact_sleep::sleep_until_absolute(t0 + WINDOW.1 * S);
            let b: u64 = clocks
                .lock()
                .expect("lock")
                .iter()
                .map(|&c| thread_cpu_ns(c))
                .sum();
            b - a
        })
    };
    let mut in_window = 0;
    let out = candor_load::run(&c, options, &mut |r| {
        if (WINDOW.0..WINDOW.1).contains(&r.index) {
            in_window += r.completed;
        }
    })
    .expect("run");
    let cpu = sampler.join().expect("sampler");
    assert_eq!(out.main.counts.failed, 0, "{}: failures", case.name);
    (
        in_window,
        cpu,
        out.main.recorder.send_lag.value_at_quantile(0.5),
    )
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let mut rounds = 3;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--rounds" {
            rounds = args.next().and_then(|v| v.parse().ok()).unwrap_or(3);
        }
    }
    let h1 = candor_serve::start(candor_serve::ServeConfig::new(
        "127.0.0.1:0".parse().expect("addr"),
    ))
    .expect("candor serve");
    let h2 = h2_support::start(h2_support::ServerOptions::default());
    let h1_url = format!("http://{}/", h1.local_addr());
    let h2_url = format!("http://{}/", h2.addr);
    let rate = Some(5000.0);
    let cases = [
        Case {
            name: "http/1.1  open 5k/s  c4          spin 0",
            proto: Proto::Http1,
            connections: 4,
            rate,
            spin: false,
        },
        Case {
            name: "h2c       open 5k/s  c4 x16 str  spin 0",
            proto: Proto::Http2 { streams: 16 },
            connections: 4,
            rate,
            spin: false,
        },
        Case {
            name: "h2c       open 5k/s  c1 x16 str  spin 0",
            proto: Proto::Http2 { streams: 16 },
            connections: 1,
            rate,
            spin: false,
        },
        Case {
            name: "http/1.1  open 5k/s  c4          spin 60us",
            proto: Proto::Http1,
            connections: 4,
            rate,
            spin: true,
        },
        Case {
            name: "h2c       open 5k/s  c4 x16 str  spin 60us",
            proto: Proto::Http2 { streams: 16 },
            connections: 4,
            rate,
            spin: true,
        },
        Case {
            name: "http/1.1  closed     c16",
            proto: Proto::Http1,
            connections: 16,
            rate: None,
            spin: true,
        },
        Case {
            name: "h2c       closed     c1 x16 str",
            proto: Proto::Http2 { streams: 16 },
            connections: 1,
            rate: None,
            spin: true,
        },
        Case {
            name: "h2c       closed     c4 x16 str",
            proto: Proto::Http2 { streams: 16 },
            connections: 4,
            rate: None,
            spin: true,
        },
    ];
    let mut results: Vec<Vec<(f64, f64, f64)>> = cases.iter().map(|_| Vec::new()).collect();
    for r in 0..rounds {
        for (i, case) in cases.iter().enumerate() {
            let (n, cpu, lag) = measure(case, &h1_url, &h2_url);
            let secs = (WINDOW.1 - WINDOW.0) as f64;
            results[i].push((
                cpu as f64 / n.max(1) as f64 / 1e3,
                n as f64 / secs,
                lag as f64 / 1e3,
            ));
        }
        eprintln!("round {}/{rounds} done", r + 1);
    }
    let reference = median(results[0].iter().map(|x| x.0).collect());
    println!(
        "client (load thread) CPU per request, 1 thread, steady state {}..{} s, median of {rounds}",
        WINDOW.0, WINDOW.1
    );
    println!(
        "{:<42} {:>11} {:>11} {:>12} {:>12}",
        "mode", "requests/s", "CPU us/req", "vs first", "lag p50 us"
    );
    for (case, v) in cases.iter().zip(&results) {
        let us = median(v.iter().map(|x| x.0).collect());
        let rps = median(v.iter().map(|x| x.1).collect());
        let lag = median(v.iter().map(|x| x.2).collect());
        println!(
            "{:<42} {rps:>11.0} {us:>11.2} {:>11.2}x {lag:>12.2}",
            case.name,
            us / reference
        );
    }
    h1.shutdown();
}
