//! `candor run --out prometheus-rw=URL` end to end: the real binary against `candor serve`,
//! pushing to a remote-write receiver in this process (decoded with candor-push's messages),
//! to one that refuses, fails or dies, and to a real Prometheus (Debian's 2.42 with its
//! remote-write receiver and native histograms, from scripts/install-test-deps.sh; ignored by a
//! plain `cargo test`).

mod common;
#[path = "support/push.rs"]
mod push;

use candor_push::remote_write::{TimeSeries, WriteRequest};
use common::{assert_balanced, candor, pct, serial, text, Server};
use push::{run, sample, series, Receiver};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn req(v: &serde_json::Value, k: &str) -> f64 {
    common::req(v, k) as f64
}

#[test]
fn a_one_second_run_is_pushed_whole() {
    let _g = serial();
    let server = Server::start(&[]);
    let rx = Receiver::start(|_| 200, None);
    let out_flag = format!("prometheus-rw={}", rx.url);
    let (v, out, _) = run(&[
        "-R",
        "200",
        "-d",
        "1s",
        "-c",
        "4",
        "--out",
        &out_flag,
        "--run-id",
        "one",
        "--tag",
        "team=perf",
        &server.url,
    ]);
    assert!(out.status.success(), "{}", text(&out));
    assert_balanced(&v);
    let got = rx.accepted();
    let last = got.last().expect("the end of the run is pushed");
    assert_eq!(sample(last, "candor_run_finished", "", ""), Some(1.0));
    for k in ["intended", "completed"] {
        assert_eq!(
            sample(
                last,
                &format!("candor_requests_{k}_total"),
                "phase",
                "measured"
            ),
            Some(req(&v, k)),
            "{k}"
        );
    }
    let h = series(last, "candor_response_time_seconds", "phase", "measured").unwrap();
    assert_eq!(
        h.histograms[0].count_int as f64,
        v["response_time"]["count"].as_f64().unwrap()
    );
    assert_eq!(h.histograms[0].schema, 7);
    for (k, want) in [("run_id", "one"), ("team", "perf"), ("phase", "measured")] {
        assert!(
            h.labels.iter().any(|l| l.name == k && l.value == want),
            "{k}: {h:?}"
        );
    }
    assert!(!text(&out).contains("dropped"), "{}", text(&out));
}

/// The last push of each run of a command of several, by its `label` (`step`, `repeat`): the
/// batch whose `candor_run_finished` is 1 for that run.
fn last_of_each_run(rx: &Receiver, label: &str, runs: usize) -> Vec<WriteRequest> {
    let got = rx.accepted();
    (1..=runs)
        .map(|n| {
            let n = n.to_string();
            got.iter()
                .rev()
                .find(|w| sample(w, "candor_run_finished", label, &n) == Some(1.0))
                .unwrap_or_else(|| panic!("no final push of {label} {n}"))
                .clone()
        })
        .collect()
}

#[test]
fn each_step_of_a_sweep_and_each_repeat_is_pushed_under_its_number() {
    let _g = serial();
    let server = Server::start(&[]);
    let dir = std::env::temp_dir().join(format!("candor-e2e-push-s-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let rx = Receiver::start(|_| 200, None);
    let out_flag = format!("prometheus-rw={}", rx.url);
    let sweep_json = dir.join("sweep.json");
    let out = candor()
        .args(["sweep", "--rates", "50,100", "--pause", "0s", "-d", "1s"])
        .args(["--warmup", "0s", "-c", "4", "--quiet", "--out", &out_flag])
        .args(["--run-id", "sw", "--json"])
        .arg(&sweep_json)
        .arg(&server.url)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&sweep_json).unwrap()).unwrap();
    for (i, last) in last_of_each_run(&rx, "step", 2).iter().enumerate() {
        let step = &v["steps"][i]["results"];
        let completed = series(
            last,
            "candor_requests_completed_total",
            "step",
            &(i + 1).to_string(),
        );
        assert_eq!(
            completed.unwrap().samples[0].value,
            req(step, "completed"),
            "step {i}"
        );
        assert!(completed
            .unwrap()
            .labels
            .iter()
            .any(|l| l.name == "run_id" && l.value == "sw"));
    }
    let rx = Receiver::start(|_| 200, None);
    let out_flag = format!("prometheus-rw={}", rx.url);
    let (v, out, _) = run(&[
        "--repeat",
        "2",
        "--repeat-pause",
        "0s",
        "-R",
        "50",
        "-d",
        "1s",
        "-c",
        "4",
        "--out",
        &out_flag,
        &server.url,
    ]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("candor: pushed"), "{}", text(&out));
    for (i, last) in last_of_each_run(&rx, "repeat", 2).iter().enumerate() {
        let run = &v["repeats"][i];
        let completed = sample(
            last,
            "candor_requests_completed_total",
            "repeat",
            &(i + 1).to_string(),
        );
        assert_eq!(completed, Some(req(run, "completed")), "repeat {i}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_failing_or_overloaded_receiver_is_retried_until_it_takes_the_samples() {
    let _g = serial();
    let server = Server::start(&[]);
    // 500, 429, 503, then fine: the final numbers are delivered on a later attempt.
    let rx = Receiver::start(|n| [500, 429, 503].get(n).copied().unwrap_or(200), None);
    let out_flag = format!("prometheus-rw={}", rx.url);
    let (v, out, _) = run(&[
        "-R",
        "100",
        "-d",
        "2s",
        "-c",
        "2",
        "--out",
        &out_flag,
        "--push-interval",
        "1s",
        &server.url,
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let last = rx
        .accepted()
        .last()
        .cloned()
        .expect("delivered after the retries");
    assert_eq!(
        sample(
            &last,
            "candor_requests_completed_total",
            "phase",
            "measured"
        ),
        Some(req(&v, "completed"))
    );
    assert_eq!(sample(&last, "candor_run_finished", "", ""), Some(1.0));
    // The three failures were retried: a batch given up for a newer one may be counted as
    // dropped (on a busy machine the next push can arrive during the back-off), never the last.
    assert!(*rx.requests.lock().unwrap() >= 4);
}

#[test]
fn a_refusing_receiver_costs_its_samples_not_the_results() {
    let _g = serial();
    let server = Server::start(&[]);
    let rx = Receiver::start(|_| 400, None);
    let out_flag = format!("prometheus-rw={}", rx.url);
    let (v, out, _) = run(&[
        "-R",
        "100",
        "-d",
        "1s",
        "-c",
        "2",
        "--out",
        &out_flag,
        &server.url,
    ]);
    assert!(out.status.success(), "{}", text(&out));
    assert_balanced(&v);
    let said = text(&out);
    let line = said
        .lines()
        .find(|l| l.starts_with("candor: pushed 0 samples"))
        .unwrap_or_else(|| panic!("{said}"));
    assert!(
        line.contains("samples dropped") && line.contains("answered 400"),
        "{line}"
    );
}

#[test]
fn a_receiver_killed_mid_run_stalls_nothing_and_the_drop_is_counted() {
    let _g = serial();
    let server = Server::start(&[]);
    // Takes two pushes, then stops listening for good.
    let rx = Receiver::start(|_| 200, Some(2));
    let out_flag = format!("prometheus-rw={}", rx.url);
    let (v, out, took) = run(&[
        "-R",
        "100",
        "-d",
        "4s",
        "-c",
        "2",
        "--out",
        &out_flag,
        "--push-interval",
        "1s",
        "--push-flush",
        "2s",
        &server.url,
    ]);
    assert!(out.status.success(), "{}", text(&out));
    assert_balanced(&v);
    assert_eq!(rx.accepted().len(), 2);
    assert_eq!(*rx.requests.lock().unwrap(), 2);
    let said = text(&out);
    assert!(said.contains("samples dropped"), "{said}");
    // The run's 4 s, its drain, and at most the 2 s flush plus one request's bound (5 s): a dead
    // receiver costs no more.
    assert!(took < Duration::from_secs(4 + 2 + 2 + 5 + 10), "{took:?}");
}

#[test]
fn bad_push_flags_fail_in_one_line_before_any_load() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    for (flags, says) in [
        (vec!["--out", "prometheus-rw"], "invalid --out"),
        (vec!["--out", "graphite=tcp://x:2003"], "invalid --out"),
        (vec!["--out", "prometheus-rw=ftp://x/"], "invalid --out URL"),
        (
            vec![
                "--out",
                "prometheus-rw=http://127.0.0.1:9/w",
                "--tag",
                "phase=x",
            ],
            "invalid --tag",
        ),
        (
            vec![
                "--out",
                "prometheus-rw=http://127.0.0.1:9/w",
                "--tag",
                "a-b=c",
            ],
            "invalid --tag",
        ),
    ] {
        let out = candor()
            .args(["run", "-R", "10", "-d", "1s"])
            .args(&flags)
            .arg(&url)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{flags:?}");
        assert!(
            err.contains(says) && err.trim().lines().count() == 1,
            "{flags:?}: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
    assert!(
        listener.accept().is_err(),
        "no connection reached the target"
    );
}

/// `--out otlp=URL` to a receiver decoding OTLP with the official definitions: the resource
/// names the run, the exponential histogram holds every response, and its p99 is within a bucket
/// (0.54%) of candor's.
#[test]
fn otlp_carries_the_run_with_exponential_histograms() {
    use candor_push::otlp::decode as decode_otlp;
    use opentelemetry_proto::tonic::metrics::v1::metric::Data;
    let _g = serial();
    let server = Server::start(&["--delay", "2ms"]);
    let rx = Receiver::start(|_| 200, None);
    let out_flag = format!("otlp={}", rx.url);
    let (v, out, _) = run(&[
        "-R",
        "300",
        "-d",
        "2s",
        "-c",
        "4",
        "--out",
        &out_flag,
        "--run-id",
        "o1",
        &server.url,
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let last = decode_otlp(rx.bodies().last().expect("pushed")).unwrap();
    let rm = &last.resource_metrics[0];
    let attrs = format!("{:?}", rm.resource.as_ref().unwrap().attributes);
    assert!(
        attrs.contains("service.name") && attrs.contains("\"o1\""),
        "{attrs}"
    );
    let metrics = &rm.scope_metrics[0].metrics;
    let hist = metrics
        .iter()
        .find_map(|m| match &m.data {
            Some(Data::ExponentialHistogram(e)) if m.name == "candor_response_time_seconds" => {
                Some(e.data_points[0].clone())
            }
            _ => None,
        })
        .expect("response time");
    assert_eq!(hist.count, v["response_time"]["count"].as_u64().unwrap());
    assert_eq!(hist.scale, 7);
    let b = hist.positive.unwrap();
    let rank = (0.99 * hist.count as f64).ceil() as u64;
    let mut seen = hist.zero_count;
    let k = b
        .bucket_counts
        .iter()
        .position(|&c| {
            seen += c;
            seen >= rank
        })
        .unwrap();
    let upper = candor_push::native::upper_bound_s(b.offset + k as i32 + 1);
    let ours = pct(&v, "response_time", 99.0) / 1e9;
    assert!(upper >= ours && upper / ours < 1.0055, "{upper} vs {ours}");
    let completed = metrics
        .iter()
        .find(|m| m.name == "candor_requests_completed_total")
        .expect("completed");
    assert!(
        format!("{completed:?}").contains(&format!("AsDouble({}.0)", req(&v, "completed"))),
        "{completed:?}"
    );
}

/// A GET on `addr`, the whole answer.
fn http_get(addr: SocketAddr, path: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

/// A Prometheus of our own on a free loopback port and its own storage, taking remote writes
/// with native histograms; killed and removed when dropped.
struct Prometheus {
    child: std::process::Child,
    addr: SocketAddr,
    dir: std::path::PathBuf,
}

impl Prometheus {
    fn start() -> Prometheus {
        let dir = std::env::temp_dir().join(format!("candor-push-prom-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let config = dir.join("prometheus.yml");
        std::fs::write(&config, "global:\n  scrape_interval: 15s\n").unwrap();
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .args([
                "--web.enable-remote-write-receiver",
                "--enable-feature=native-histograms",
            ])
            .arg("--log.level=warn")
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("prometheus not found: run scripts/install-test-deps.sh");
        let p = Prometheus { child, addr, dir };
        let deadline = Instant::now() + Duration::from_secs(120);
        while !(TcpStream::connect(addr).is_ok()
            && http_get(addr, "/-/ready").starts_with("HTTP/1.0 200"))
        {
            assert!(Instant::now() < deadline, "prometheus not ready in time");
            std::thread::sleep(Duration::from_millis(200));
        }
        p
    }

    /// The result vector of an instant query (its status must be success).
    fn query_all(&self, promql: &str) -> Vec<serde_json::Value> {
        let q: String = promql
            .bytes()
            .map(|b| match b {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'.' => (b as char).to_string(),
                _ => format!("%{b:02X}"),
            })
            .collect();
        let r = http_get(self.addr, &format!("/api/v1/query?query={q}"));
        let body = r.split("\r\n\r\n").nth(1).unwrap_or("");
        let v: serde_json::Value = serde_json::from_str(body).unwrap_or_else(|_| panic!("{r}"));
        assert_eq!(v["status"], "success", "{promql}: {v}");
        v["data"]["result"]
            .as_array()
            .unwrap_or_else(|| panic!("{v}"))
            .clone()
    }

    /// The single value of an instant query.
    fn query(&self, promql: &str) -> f64 {
        let result = self.query_all(promql);
        assert_eq!(result.len(), 1, "{promql}: {result:?}");
        result[0]["value"][1].as_str().unwrap().parse().unwrap()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The exactness proof: a stalling server (1 s every 5 s) makes a known, wide distribution;
/// Prometheus's quantiles over the pushed native histograms are within 2% of candor's own (the
/// schema's buckets are 0.54% wide).
#[test]
#[ignore = "needs Prometheus: scripts/test.sh"]
fn prometheus_reads_the_same_quantiles_as_candor_from_native_histograms() {
    let _g = serial();
    let prom = Prometheus::start();
    let server = Server::start(&["--stall-every", "5s", "--stall-for", "1s"]);
    let out_flag = format!("prometheus-rw=http://{}/api/v1/write", prom.addr);
    let (v, out, _) = run(&[
        "-R",
        "200",
        "-d",
        "10s",
        "-c",
        "50",
        "--out",
        &out_flag,
        "--push-interval",
        "1s",
        "--run-id",
        "exact",
        &server.url,
    ]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!text(&out).contains("dropped"), "{}", text(&out));
    let series = "candor_response_time_seconds{run_id=\"exact\",phase=\"measured\"}";
    for q in [0.9, 0.99] {
        let theirs = prom.query(&format!("histogram_quantile({q}, {series})"));
        let ours = pct(&v, "response_time", q * 100.0) / 1e9;
        let err = (theirs - ours).abs() / ours;
        println!(
            "q {q}: prometheus {theirs} s, candor {ours} s, {:.3}%",
            err * 100.0
        );
        assert!(ours > 0.1, "the stalls make a wide distribution: {ours}");
        assert!(err < 0.02, "q {q}: prometheus {theirs}, candor {ours}");
    }
    let completed =
        prom.query("candor_requests_completed_total{run_id=\"exact\",phase=\"measured\"}");
    assert_eq!(completed, req(&v, "completed"));
    dashboard_queries_answer(&prom, "exact");
}

/// Every query of dashboards/candor.json runs on the real Prometheus for run `run_id`: each is
/// valid PromQL, and each but the stream panels' (goodput among them) and the failures' (this run has neither)
/// returns data.
fn dashboard_queries_answer(prom: &Prometheus, run_id: &str) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../dashboards/candor.json");
    let dashboard: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut exprs = Vec::new();
    for panel in dashboard["panels"].as_array().unwrap() {
        for t in panel["targets"].as_array().unwrap() {
            exprs.push(t["expr"].as_str().unwrap().to_string());
        }
    }
    assert!(exprs.len() >= 15, "{exprs:?}");
    for e in exprs {
        let q = e
            .replace("$run_id", run_id)
            .replace("$__rate_interval", "1m");
        let result = prom.query_all(&q);
        let absent_here = ["ttft", "itl", "output_tokens", "good_requests"]
            .iter()
            .any(|m| q.contains(m))
            || q.ends_with("> 0");
        assert!(
            absent_here || !result.is_empty(),
            "no data for the dashboard's {q}"
        );
    }
}

/// An OTLP/gRPC collector stand-in on a loopback port (h2 on tokio, on a thread of its own):
/// answers the first Export call UNAVAILABLE, then OK, keeping each call's message.
fn grpc_collector() -> (String, Arc<Mutex<Vec<Vec<u8>>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
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
            let mut calls = 0;
            loop {
                let Ok((sock, _)) = listener.accept().await else {
                    return;
                };
                let Ok(mut conn) = h2::server::handshake(sock).await else {
                    continue;
                };
                while let Some(Ok((req, mut respond))) = conn.accept().await {
                    let path = req.uri().path().to_string();
                    let mut body = req.into_body();
                    let mut bytes = Vec::new();
                    while let Some(Ok(c)) = body.data().await {
                        let _ = body.flow_control().release_capacity(c.len());
                        bytes.extend_from_slice(&c);
                    }
                    let ok =
                        path == "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export";
                    let code = match (ok, calls) {
                        (false, _) => 12, // UNIMPLEMENTED
                        (true, 0) => 14,  // UNAVAILABLE: the first call is retried
                        (true, _) => 0,
                    };
                    calls += 1;
                    if code == 0 {
                        g.lock().unwrap().push(bytes[5..].to_vec());
                    }
                    let head = http::Response::builder()
                        .status(200)
                        .header("content-type", "application/grpc")
                        .body(())
                        .unwrap();
                    let Ok(mut send) = respond.send_response(head, false) else {
                        continue;
                    };
                    let _ = send.send_data(bytes::Bytes::from_static(&[0; 5]), false);
                    let mut trailers = http::HeaderMap::new();
                    trailers.insert("grpc-status", code.to_string().parse().unwrap());
                    let _ = send.send_trailers(trailers);
                }
            }
        });
    });
    (url, got)
}

#[test]
fn otlp_over_grpc_reaches_a_grpc_collector_whole() {
    let _g = serial();
    let server = Server::start(&[]);
    let (url, got) = grpc_collector();
    let out_flag = format!("otlp-grpc={url}");
    let (v, out, _) = run(&[
        "-R",
        "200",
        "-d",
        "1s",
        "-c",
        "4",
        "--out",
        &out_flag,
        "--run-id",
        "g1",
        &server.url,
    ]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!text(&out).contains("dropped"), "{}", text(&out));
    let messages = got.lock().unwrap().clone();
    let last = candor_push::otlp::decode(messages.last().expect("pushed")).unwrap();
    let rm = &last.resource_metrics[0];
    let attrs = format!("{:?}", rm.resource.as_ref().unwrap().attributes);
    assert!(attrs.contains("\"g1\""), "{attrs}");
    let metric = |name: &str| {
        let m = rm.scope_metrics[0].metrics.iter().find(|m| m.name == name);
        format!("{:?}", m.unwrap_or_else(|| panic!("no {name}")))
    };
    let finished = metric("candor_run_finished");
    assert!(finished.contains("AsDouble(1.0)"), "{finished}");
    let completed = metric("candor_requests_completed_total");
    let want = format!("AsDouble({}.0)", req(&v, "completed"));
    assert!(completed.contains(&want), "{completed}");
}

/// A request set of two names, `fast` on `fast_url` and `slow` on `slow_url`, in a file.
fn two_names(fast_url: &str, slow_url: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("candor-e2e-push-names-{}", std::process::id()));
    let line = |name: &str, url: &str| {
        format!(
            "{{\"name\":\"{name}\",\"url\":\"{}/{name}\"}}\n",
            url.trim_end_matches('/')
        )
    };
    let text = line("fast", fast_url) + &line("slow", slow_url);
    std::fs::write(&path, text).unwrap();
    path
}

/// The series of `w` named `metric` with label `name` = `value`.
fn named<'a>(w: &'a WriteRequest, metric: &str, value: &str) -> &'a TimeSeries {
    let has =
        |t: &TimeSeries, k: &str, v: &str| t.labels.iter().any(|l| l.name == k && l.value == v);
    w.timeseries
        .iter()
        .find(|t| has(t, "__name__", metric) && has(t, "name", value))
        .unwrap_or_else(|| panic!("{metric} for name {value}"))
}

#[test]
fn the_final_push_carries_each_request_name_as_the_results_do() {
    let _g = serial();
    let server = Server::start(&[]);
    let rx = Receiver::start(|_| 200, None);
    let reqs = two_names(&server.url, &server.url);
    let out_flag = format!("prometheus-rw={}", rx.url);
    let (v, out, _) = run(&[
        "-R",
        "200",
        "-d",
        "1s",
        "-c",
        "4",
        "--requests",
        reqs.to_str().unwrap(),
        "--out",
        &out_flag,
        &server.url,
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let got = rx.accepted();
    let last = got.last().expect("the end of the run is pushed");
    for name in ["fast", "slow"] {
        let by = &v["by_request"][name];
        for k in ["intended", "completed"] {
            let t = named(last, &format!("candor_requests_{k}_total"), name);
            assert_eq!(t.samples[0].value, req(by, k), "{name} {k}");
        }
        let h = named(last, "candor_response_time_seconds", name);
        assert_eq!(
            h.histograms[0].count_int as f64,
            by["response_time"]["count"].as_f64().unwrap(),
            "{name}"
        );
    }
    // The totals have no name, and equal the two names' sum (no request counted twice).
    let total = sample(last, "candor_requests_completed_total", "phase", "measured");
    assert_eq!(total, Some(req(&v, "completed")));
    let by = |n: &str| req(&v["by_request"][n], "completed");
    assert_eq!(req(&v, "completed"), by("fast") + by("slow"));
    // No interval push has a name (the per-name books are read at the end).
    for w in &got[..got.len() - 1] {
        let named = w
            .timeseries
            .iter()
            .any(|t| t.labels.iter().any(|l| l.name == "name"));
        assert!(!named);
    }
}

#[test]
#[ignore = "needs Prometheus: scripts/test.sh"]
fn prometheus_reads_each_request_names_p99_as_candor() {
    let _g = serial();
    let prom = Prometheus::start();
    // Two targets of known service times: each name's p99 sits near its own delay.
    let fast = Server::start(&["--delay", "20ms"]);
    let slow = Server::start(&["--delay", "80ms"]);
    let reqs = two_names(&fast.url, &slow.url);
    let out_flag = format!("prometheus-rw=http://{}/api/v1/write", prom.addr);
    let (v, out, _) = run(&[
        "-R",
        "100",
        "-d",
        "5s",
        "-c",
        "10",
        "--requests",
        reqs.to_str().unwrap(),
        "--out",
        &out_flag,
        "--push-interval",
        "1s",
        "--run-id",
        "names",
        &fast.url,
    ]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!text(&out).contains("dropped"), "{}", text(&out));
    for (name, delay_s) in [("fast", 0.020), ("slow", 0.080)] {
        let series = format!("candor_response_time_seconds{{run_id=\"names\",name=\"{name}\"}}");
        let theirs = prom.query(&format!("histogram_quantile(0.99, {series})"));
        let ours = pct(&v["by_request"][name], "response_time", 99.0) / 1e9;
        let err = (theirs - ours).abs() / ours;
        println!(
            "{name} p99: prometheus {theirs} s, candor {ours} s, {:.3}%",
            err * 100.0
        );
        assert!(ours >= delay_s, "{name}: {ours} below its server's delay");
        assert!(err < 0.02, "{name}: prometheus {theirs}, candor {ours}");
        let done = prom.query(&format!(
            "candor_requests_completed_total{{run_id=\"names\",name=\"{name}\"}}"
        ));
        assert_eq!(done, req(&v["by_request"][name], "completed"));
    }
    // The totals, selected with name="", count each request once.
    let total = prom
        .query("candor_requests_completed_total{run_id=\"names\",phase=\"measured\",name=\"\"}");
    assert_eq!(total, req(&v, "completed"));
}
