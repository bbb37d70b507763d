//! End-to-end tests of what a user's input files may put on the wire: nothing from `--requests`,
//! `--replay`, `--data` or `-H` reaches a server unchecked (line breaks and NUL are refused or fail
//! their request in class `template`, paths are percent-encoded), a body's framing cannot be
//! contradicted, every input file is read bounded, and requests carry a User-Agent.

mod common;
use common::*;
#[path = "../../candor-load/tests/h2_support/mod.rs"]
mod h2_support;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

/// An HTTP/1.1 server that keeps the raw head of every request it receives (bodies by
/// Content-Length) and answers each `200 ok`, on a thread per connection, until the test process
/// ends.
struct RawRecorder {
    url: String,
    heads: Arc<Mutex<Vec<String>>>,
}

impl RawRecorder {
    fn start() -> RawRecorder {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let heads = Arc::new(Mutex::new(Vec::new()));
        let log = heads.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let log = log.clone();
                std::thread::spawn(move || serve(stream, &log));
            }
        });
        RawRecorder { url, heads }
    }

    fn heads(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
    }
}

fn serve(mut stream: TcpStream, log: &Mutex<Vec<String>>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        while let Some(head) = take_request_head(&mut buf) {
            log.lock().unwrap().push(head);
            if stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                .is_err()
            {
                return;
            }
        }
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

fn temp_file(name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("candor-inputs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// Runs `candor run -d 1s ARGS` expecting a one-line error (exit 1) containing `expect`.
fn refused(args: &[String], expect: &str) {
    let out = candor()
        .arg("run")
        .args(["-d", "1s"])
        .args(args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
    assert!(err.contains(expect), "{args:?}: {err}");
    assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn line_breaks_and_contradicting_framing_are_refused_before_any_load() {
    let server = RawRecorder::start();
    let url = server.url.clone();
    let s = |x: &str| x.to_string();
    let file = |name: &str, text: &str| temp_file(name, text.as_bytes()).display().to_string();
    let cases: Vec<(Vec<String>, String)> = vec![
        {
            let f = file(
                "hv.jsonl",
                "{\"path\": \"/ok\"}\n{\"method\":\"GET\",\"path\":\"/a\",\"headers\":{\"X\":\"a\\r\\nY: b\"}}\n",
            );
            (
                vec![s("--requests"), f.clone(), url.clone()],
                format!("{f}: line 2: invalid header 'X: a\\r\\nY: b'"),
            )
        },
        {
            let f = file(
                "hn.jsonl",
                "{\"path\":\"/a\",\"headers\":{\"X\\nY\":\"b\"}}\n",
            );
            (
                vec![s("--requests"), f.clone(), url.clone()],
                format!("{f}: line 1: the header name 'X\\nY' is not a token"),
            )
        },
        {
            let f = file(
                "nul.jsonl",
                "{\"path\":\"/a\",\"headers\":[\"X: a\\u0000b\"]}\n",
            );
            (
                vec![s("--requests"), f.clone(), url.clone()],
                format!("{f}: line 1: invalid header"),
            )
        },
        {
            let f = file("path.jsonl", "\n# c\n{\"path\":\"/a b\\r\\nX: y\"}\n");
            (
                vec![s("--requests"), f.clone(), url.clone()],
                format!("{f}: line 3: path '/a b\\r\\nX: y' holds a line break or NUL"),
            )
        },
        {
            let f = file(
                "cl.jsonl",
                "{\"path\":\"/\",\"headers\":{\"Content-Length\":\"5\"}}\n",
            );
            (
                vec![s("--requests"), f.clone(), url.clone()],
                format!("{f}: line 1: header 'Content-Length: 5' contradicts the body, which has 0 bytes"),
            )
        },
        {
            let f = file(
                "te.jsonl",
                "{\"method\":\"POST\",\"path\":\"/\",\"body\":\"x\",\"headers\":{\"Transfer-Encoding\":\"chunked\"}}\n",
            );
            (
                vec![s("--requests"), f.clone(), url.clone()],
                format!("{f}: line 1: header 'Transfer-Encoding: chunked'"),
            )
        },
        {
            let f = file(
                "inj.jsonl",
                "{\"at\":0,\"path\":\"/a\"}\n{\"at\":1,\"path\":\"/a\",\"headers\":{\"X\":\"1\\r\\nY: 2\"}}\n",
            );
            (
                vec![s("--replay"), f.clone(), url.clone()],
                format!("--replay {f}: 1 of 2 lines are malformed (more than 1%), the first at line 2: invalid header 'X: 1\\r\\nY: 2'"),
            )
        },
        (
            vec![s("-H"), s("Content-Length: 5"), url.clone()],
            s("header 'Content-Length: 5' contradicts the body, which has 0 bytes"),
        ),
        (
            vec![
                s("-m"),
                s("POST"),
                s("--body"),
                s("abc"),
                s("-H"),
                s("content-length: 4"),
                url.clone(),
            ],
            s("header 'content-length: 4' contradicts the body, which has 3 bytes"),
        ),
        (
            vec![
                s("-H"),
                s("Transfer-Encoding: chunked"),
                s("--h2"),
                url.clone(),
            ],
            s("HTTP/2 forbids Transfer-Encoding"),
        ),
        (
            vec![s("-H"), s("X: a\rb"), url.clone()],
            s("invalid header 'X: a\\rb': its value holds a line break or NUL"),
        ),
        (
            vec![s("-m"), s("GET\n"), url.clone()],
            s("invalid HTTP method 'GET\\n'"),
        ),
    ];
    for (args, expect) in &cases {
        refused(args, expect);
    }
    assert!(
        server.heads().is_empty(),
        "nothing may be sent on bad input"
    );
}

/// A path from a file is percent-encoded where a request-target needs it (a `%XX` already there
/// is kept); a `{{data:..}}` value is encoded as one path segment; a value with a line break for
/// a header fails that request in class `template`, never reaching the server; every request
/// carries candor's User-Agent unless it has its own.
#[test]
fn paths_are_encoded_and_unsendable_values_fail_as_template() {
    let _g = serial();
    let server = RawRecorder::start();
    let data = temp_file(
        "ids.csv",
        b"\xEF\xBB\xBFid\n\"bob, jr\"\n\"a\r\nX-Inj: 1\"\nx/y\n\"nul\0\"\n",
    );
    let reqs = temp_file(
        "encode.jsonl",
        b"\xEF\xBB\xBF{\"name\": \"u\", \"path\": \"/u/{{data:id}}?q=a b\", \"headers\": {\"X-Id\": \"{{data:id}}\"}}\n",
    );
    let (v, _) = run_json_any(&[
        "-n",
        "8",
        "-R",
        "200",
        "-c",
        "2",
        "--requests",
        reqs.to_str().unwrap(),
        "--data",
        data.to_str().unwrap(),
        &server.url,
    ]);
    assert_balanced(&v);
    // Rows 1 and 3 of 4 (seq mod 4) cannot go into X-Id: 4 of 8 requests.
    assert_eq!(req(&v, "intended"), 8);
    assert_eq!(v["requests"]["errors"]["template"].as_u64(), Some(4), "{v}");
    assert_eq!(req(&v, "completed"), 4);
    assert_eq!(
        v["by_request"]["u"]["requests"]["errors"]["template"].as_u64(),
        Some(4)
    );
    let heads = server.heads();
    assert_eq!(heads.len(), 4, "{heads:?}");
    let ua = format!("User-Agent: candor/{}", env!("CARGO_PKG_VERSION"));
    let mut lines: Vec<&str> = heads.iter().map(|h| h.lines().next().unwrap()).collect();
    lines.sort_unstable();
    assert_eq!(
        lines,
        [
            "GET /u/bob%2C%20jr?q=a%20b HTTP/1.1",
            "GET /u/bob%2C%20jr?q=a%20b HTTP/1.1",
            "GET /u/x%2Fy?q=a%20b HTTP/1.1",
            "GET /u/x%2Fy?q=a%20b HTTP/1.1",
        ]
    );
    for h in &heads {
        assert!(!h.contains("X-Inj"), "{h:?}");
        assert_eq!(h.matches(&ua).count(), 1, "{h:?}");
        assert!(
            h.contains("\r\nX-Id: bob, jr") || h.contains("\r\nX-Id: x/y"),
            "{h:?}"
        );
    }

    // The user's own User-Agent replaces candor's: by -H, for the URL's request and for every
    // line of a request set without its own, or by a line's headers.
    let server = RawRecorder::start();
    let ua = [
        "-n",
        "3",
        "-R",
        "100",
        "-c",
        "1",
        "-t",
        "1",
        "-H",
        "user-agent: mine/2",
    ];
    run_json(&[&ua[..], &[server.url.as_str()]].concat());
    let set = temp_file(
        "ua.jsonl",
        b"{\"path\": \"/a\"}\n{\"path\": \"/b\", \"headers\": {\"User-Agent\": \"line/3\"}}\n",
    );
    let mut args = vec![
        "-n",
        "4",
        "-R",
        "100",
        "-c",
        "1",
        "-t",
        "1",
        "-H",
        "user-agent: mine/2",
    ];
    args.extend(["--requests", set.to_str().unwrap(), server.url.as_str()]);
    run_json(&args);
    let heads = server.heads();
    assert_eq!(heads.len(), 7);
    for h in &heads {
        assert!(!h.contains("candor/"), "{h:?}");
        if h.starts_with("GET /b ") {
            assert!(
                h.contains("\r\nUser-Agent: line/3") && !h.contains("mine/2"),
                "{h:?}"
            );
        } else {
            assert!(h.contains("\r\nuser-agent: mine/2"), "{h:?}");
        }
    }
    assert_eq!(heads.iter().filter(|h| h.starts_with("GET /b ")).count(), 2);
}

/// The same over HTTP/2: the filled path is encoded, an unsendable value fails in class
/// `template`, and the server sees only the others.
#[test]
fn h2_unsendable_values_fail_as_template() {
    let _g = serial();
    let server = h2_support::start(h2_support::ServerOptions::default());
    let url = format!("http://{}/v/{{{{data:id}}}}", server.addr);
    let data = temp_file("h2ids.csv", b"id\nok 1\n\"bad\nX-Inj: 1\"\n");
    let (v, _) = run_json_any(&[
        "--h2",
        "-n",
        "6",
        "-R",
        "100",
        "-c",
        "1",
        "-t",
        "1",
        "--data",
        data.to_str().unwrap(),
        "-H",
        "X-Id: {{data:id}}",
        &url,
    ]);
    assert_balanced(&v);
    assert_eq!(v["requests"]["errors"]["template"].as_u64(), Some(3), "{v}");
    assert_eq!(req(&v, "completed"), 3);
    let seen = server.stats.requests.lock().unwrap().clone();
    assert_eq!(seen, vec!["GET /v/ok%201 x-id=ok 1"; 3]);
}

/// Every input file is read bounded: an endless device, a file past its limit and a single line
/// past the line limit are each a one-line error naming the limit, before any load.
#[test]
fn input_files_are_capped() {
    let server = RawRecorder::start();
    let url = server.url.clone();
    let s = |x: &str| x.to_string();
    let long_line = temp_file("long.jsonl", &vec![b'x'; (4 << 20) + 1]);
    let long = long_line.display().to_string();
    let long_trace = temp_file("long.log", &{
        let mut t = b"{\"at\": 0, \"path\": \"/\"}\n".to_vec();
        t.extend(std::iter::repeat_n(b' ', 5 << 20));
        t
    });
    let trace = long_trace.display().to_string();
    for (args, expect) in [
        (
            vec![s("--requests"), s("/dev/zero"), url.clone()],
            s("--requests /dev/zero: line 1 is longer than 4 MiB, the longest line candor reads"),
        ),
        (
            vec![s("--requests"), long.clone(), url.clone()],
            format!("--requests {long}: line 1 is longer than 4 MiB"),
        ),
        (
            vec![s("--data"), s("/dev/zero"), format!("{url}/{{{{data:a}}}}")],
            s("--data /dev/zero: line 1 is longer than 4 MiB"),
        ),
        (
            vec![s("--body-file"), s("/dev/zero"), url.clone()],
            s("--body-file /dev/zero: larger than 64 MiB, the most candor reads for it"),
        ),
        (
            vec![s("--replay"), s("/dev/zero"), url.clone()],
            s("--replay /dev/zero: line 1 is longer than 4 MiB"),
        ),
        (
            vec![s("--replay"), trace.clone(), url.clone()],
            format!("--replay {trace}: line 2 is longer than 4 MiB"),
        ),
    ] {
        refused(&args, &expect);
    }
    assert!(
        server.heads().is_empty(),
        "nothing may be sent on bad input"
    );
}

/// A request line may name an absolute URL of another target: one run sends each line to its own
/// target, over connections of its own, with the Host of that target, and reports each line's
/// `by_request` row; the books of the whole run balance.
#[test]
fn request_lines_with_their_own_url_go_to_their_own_target() {
    let _g = serial();
    let (one, two) = (RawRecorder::start(), RawRecorder::start());
    let other = format!("{}/b/{{{{seq}}}}", two.url);
    let set = temp_file(
        "targets.jsonl",
        format!(
            "{{\"name\": \"a\", \"path\": \"/a\"}}\n{{\"name\": \"b\", \"url\": \"{other}\"}}\n{{\"name\": \"c\", \"url\": \"{}/c\"}}\n",
            one.url
        )
        .as_bytes(),
    );
    let (v, _) = run_json(&[
        "-n",
        "30",
        "-R",
        "300",
        "-c",
        "2",
        "--requests",
        set.to_str().unwrap(),
        &one.url,
    ]);
    assert_balanced(&v);
    assert_eq!(req(&v, "completed"), 30);
    for name in ["a", "b", "c"] {
        assert_eq!(
            v["by_request"][name]["requests"]["completed"].as_u64(),
            Some(10),
            "{name}: {}",
            v["by_request"]
        );
    }
    let host = |url: &str| format!("\r\nHost: {}\r\n", url.trim_start_matches("http://"));
    let (h1, h2) = (one.heads(), two.heads());
    assert_eq!((h1.len(), h2.len()), (20, 10));
    for h in &h1 {
        assert!(
            h.starts_with("GET /a ") || h.starts_with("GET /c "),
            "{h:?}"
        );
        assert!(h.contains(&host(&one.url)), "{h:?}");
    }
    let mut seqs: Vec<u64> = h2
        .iter()
        .map(|h| {
            assert!(h.contains(&host(&two.url)), "{h:?}");
            let path = h.split(' ').nth(1).unwrap();
            path.strip_prefix("/b/").unwrap().parse().unwrap()
        })
        .collect();
    seqs.sort_unstable();
    // Round robin over three lines: line 2 takes seq 1, 4, 7, ...
    assert_eq!(seqs, (0..10).map(|k| 3 * k + 1).collect::<Vec<u64>>());
    // Each target had connections of its own: 2 per target.
    assert_eq!(req(&v, "connections_opened"), 4, "{}", v["requests"]);
}

/// The same over HTTP/2: each target's server sees only its lines' requests.
#[test]
fn h2_request_lines_with_their_own_url_go_to_their_own_target() {
    let _g = serial();
    let one = h2_support::start(h2_support::ServerOptions::default());
    let two = h2_support::start(h2_support::ServerOptions::default());
    let set = temp_file(
        "h2targets.jsonl",
        format!(
            "{{\"path\": \"/a\"}}\n{{\"url\": \"http://{}/b\", \"headers\": {{\"X-T\": \"2\"}}}}\n",
            two.addr
        )
        .as_bytes(),
    );
    let (v, _) = run_json(&[
        "--h2",
        "-n",
        "20",
        "-R",
        "200",
        "-c",
        "2",
        "--requests",
        set.to_str().unwrap(),
        &format!("http://{}", one.addr),
    ]);
    assert_balanced(&v);
    assert_eq!(req(&v, "completed"), 20);
    let seen = |s: &h2_support::H2Server| s.stats.requests.lock().unwrap().clone();
    assert_eq!(seen(&one), vec!["GET /a"; 10]);
    assert_eq!(seen(&two), vec!["GET /b x-t=2"; 10]);
}
