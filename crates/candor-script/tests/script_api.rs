//! The wrk scripting API end to end through the Rust API the engine calls, one script each
//! (tests/scripts/): request bytes exact, responses judged, done() output exact, bad scripts
//! as one-line errors with their location.

use candor_script::{
    RequestInfo, ResponseVerdict, RunSummary, ScriptError, ScriptHost, ScriptOptions, ScriptPhase,
    ScriptTarget, ThreadScript, RETURNED_FALSE,
};
use hdrhistogram::Histogram;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

const URL: &str = "http://127.0.0.1:8080/base?q=1";

fn script(name: &str) -> PathBuf {
    // Relative, as users name scripts: Lua shortens long chunk names in its messages.
    PathBuf::from("tests/scripts").join(name)
}

fn host(name: &str) -> ScriptHost {
    host_for(name, URL, &[])
}

fn host_for(name: &str, url: &str, args: &[&str]) -> ScriptHost {
    ScriptHost::load(
        &script(name),
        args.iter().map(|a| a.to_string()).collect(),
        ScriptTarget::url(url),
    )
    .unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn one_thread(name: &str) -> ThreadScript {
    host(name).setup_threads(1).unwrap().pop().unwrap()
}

fn next(t: &mut ThreadScript) -> (Vec<u8>, RequestInfo) {
    let mut out = Vec::new();
    let info = t.next_request(&mut out).unwrap();
    (out, info)
}

/// A request split into its request line, its header lines (sorted: pairs() order is Lua's)
/// and its body.
fn split(req: &[u8]) -> (String, Vec<String>, String) {
    let text = String::from_utf8(req.to_vec()).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let mut lines = head.split("\r\n").map(str::to_string);
    let first = lines.next().unwrap();
    let mut headers: Vec<String> = lines.collect();
    headers.sort();
    (first, headers, body.to_string())
}

fn empty_stats() -> Histogram<u64> {
    Histogram::new(3).unwrap()
}

fn done_output(host: &mut ScriptHost) -> String {
    host.done(&RunSummary::default(), &empty_stats(), &empty_stats())
        .unwrap()
}

#[test]
fn format_without_arguments_is_a_get_of_the_target_path_with_host_exactly() {
    let mut t = one_thread("format_defaults.lua");
    let (bytes, info) = next(&mut t);
    assert_eq!(
        bytes,
        b"GET /base?q=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n"
    );
    assert_eq!(info.requests, 1);
    assert_eq!(info.name, None);
    assert!(t.is_dynamic());
    assert!(!t.wants_response());
}

#[test]
fn format_host_of_an_ipv6_target_is_bracketed_and_a_url_without_port_has_none() {
    let mut t = host_for("format_defaults.lua", "http://[::1]:9000/", &[])
        .setup_threads(1)
        .unwrap()
        .pop()
        .unwrap();
    assert_eq!(
        next(&mut t).0,
        b"GET / HTTP/1.1\r\nHost: [::1]:9000\r\n\r\n"
    );
    let mut t = host_for("format_defaults.lua", "http://localhost", &[])
        .setup_threads(1)
        .unwrap()
        .pop()
        .unwrap();
    assert_eq!(next(&mut t).0, b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n");
}

#[test]
fn format_adds_host_and_content_length_to_the_table_it_is_given() {
    let mut t = one_thread("format_side_effects.lua");
    let (bytes, info) = next(&mut t);
    let (line, headers, body) = split(&bytes);
    assert_eq!(line, "POST /submit HTTP/1.1");
    assert_eq!(
        headers,
        ["Content-Length: 3", "Host: 127.0.0.1:8080", "X-Kind: probe"]
    );
    assert_eq!(body, "abc");
    assert_eq!(t.name(info.name.unwrap()), "host=127.0.0.1:8080 length=3");
}

#[test]
fn without_request_the_request_built_after_init_is_sent_every_time() {
    let mut target = ScriptTarget::url(URL);
    target.headers.push(("X-From-Cli".into(), "yes".into()));
    let mut h = ScriptHost::load(&script("static_request.lua"), vec![], target).unwrap();
    let mut t = h.setup_threads(1).unwrap().pop().unwrap();
    assert!(!t.is_dynamic());
    let (first, info) = next(&mut t);
    let (line, headers, body) = split(&first);
    assert_eq!(line, "PUT /static HTTP/1.1");
    assert_eq!(
        headers,
        [
            "Content-Length: 7",
            "Content-Type: text/plain",
            "Host: 127.0.0.1:8080",
            "X-From-Cli: yes"
        ]
    );
    assert_eq!(body, "payload");
    assert_eq!(info.requests, 1);
    assert_eq!(next(&mut t).0, first);
    assert_eq!(t.last_lua_ns(), 0, "a fixed request costs no Lua call");
}

#[test]
fn request_can_send_the_default_request_through_wrk_request() {
    let mut t = one_thread("default_via_wrk_request.lua");
    next(&mut t);
    let (bytes, info) = next(&mut t);
    assert_eq!(
        bytes,
        b"GET /base?q=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n"
    );
    assert_eq!(t.name(info.name.unwrap()), "call 2");
}

#[test]
fn pipelined_requests_are_returned_together_and_counted() {
    let mut t = one_thread("pipeline.lua");
    let (bytes, info) = next(&mut t);
    assert_eq!(info.requests, 3);
    let text = String::from_utf8(bytes).unwrap();
    assert!(
        text.starts_with("GET /one HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\nGET /two HTTP/1.1\r\n")
    );
    assert!(text.ends_with("\r\n\r\nxyz"), "{text}");
    // The caller's buffer is appended to, so the engine can batch.
    let mut out = b"previous".to_vec();
    t.next_request(&mut out).unwrap();
    assert!(out.starts_with(b"previousGET /one"));
}

#[test]
fn a_token_from_a_response_is_carried_by_later_requests_and_rejections_fail() {
    let mut t = one_thread("token.lua");
    assert!(t.wants_response());
    let (login, _) = next(&mut t);
    assert!(login.starts_with(b"POST /login HTTP/1.1\r\n"));
    assert!(login.ends_with(b"\r\n\r\nuser=demo"));
    let headers: [(&[u8], &[u8]); 2] = [(b"Content-Type", b"text/plain"), (b"X-Token", b"s3cr3t")];
    assert_eq!(
        t.response(200, headers.into_iter(), b"ok").unwrap(),
        ResponseVerdict::Ok
    );
    let (data, _) = next(&mut t);
    let (line, headers, _) = split(&data);
    assert_eq!(line, "GET /data HTTP/1.1");
    assert_eq!(
        headers,
        ["Authorization: Bearer s3cr3t", "Host: 127.0.0.1:8080"]
    );

    assert_eq!(
        t.response(403, std::iter::empty(), b"").unwrap(),
        ResponseVerdict::Fail(RETURNED_FALSE.to_string())
    );
    assert_eq!(
        t.response(200, std::iter::empty(), b"denied").unwrap(),
        ResponseVerdict::Fail("server denied the token".to_string())
    );
    // A failure recorded by wrk.fail belongs to that response only.
    assert_eq!(
        t.response(200, std::iter::empty(), b"fine").unwrap(),
        ResponseVerdict::Ok
    );
}

#[test]
fn thread_get_and_set_copy_values_between_states_and_stop_is_seen() {
    let mut h = host("threads.lua");
    let mut threads = h.setup_threads(2).unwrap();
    for _ in 0..2 {
        next(&mut threads[0]);
    }
    assert!(!threads[0].stop_requested());
    let (third, _) = next(&mut threads[0]);
    assert!(third.starts_with(b"GET /1/3 HTTP/1.1"));
    assert!(threads[0].stop_requested(), "thread:stop() in request()");
    let (first, _) = next(&mut threads[1]);
    assert!(first.starts_with(b"GET /2/1 HTTP/1.1"));
    assert!(!threads[1].stop_requested());
    drop(threads); // done() still reaches the thread states
    assert_eq!(
        done_output(&mut h),
        "thread 1: 3 requests, t1/20/true, false\nthread 2: 1 requests, t2/20/true, false\n"
    );
}

#[test]
fn one_states_os_exit_does_not_fail_the_calls_of_another_that_return() {
    let mut h = host("exit_one_thread.lua");
    let mut threads = h.setup_threads(2).unwrap();
    let (first, _) = next(&mut threads[0]);
    assert!(first.starts_with(b"GET /1 HTTP/1.1"));
    // Thread 1's own exit, caught by its pcall, still ends its call and every later one.
    match threads[0].response(200, std::iter::empty(), b"") {
        Err(ScriptError::Exit { phase, code }) => {
            assert_eq!((phase, code), (ScriptPhase::Response, 0))
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        threads[0].next_request(&mut Vec::new()),
        Err(ScriptError::Exit { .. })
    ));
    assert_eq!(h.interrupt_handle().exit_code(), Some(0));
    // Thread 2's calls returned normally: what they returned stands.
    assert_eq!(
        threads[1].response(200, std::iter::empty(), b"").unwrap(),
        ResponseVerdict::Ok
    );
    let (second, _) = next(&mut threads[1]);
    assert!(second.starts_with(b"GET /2 HTTP/1.1"));
}

#[test]
fn statistics_objects_give_wrk_and_wrk2_index_forms_in_microseconds() {
    let mut h = host("stats.lua");
    let mut latency = Histogram::<u64>::new(3).unwrap();
    latency.record_n(1_000, 3).unwrap(); // 1 µs three times
    latency.record(2_000).unwrap();
    latency.record(5_000).unwrap();
    let mut requests = Histogram::<u64>::new(3).unwrap();
    requests.record(900).unwrap();
    requests.record(1100).unwrap();
    let summary = RunSummary {
        duration_us: 2_000_000,
        requests: 5,
        bytes: 640,
        errors: candor_script::WrkErrorCounts {
            connect: 1,
            read: 2,
            write: 3,
            status: 4,
            timeout: 5,
        },
    };
    let out = h.done(&summary, &latency, &requests).unwrap();
    assert_eq!(
        out,
        "duration=2000000 requests=5 bytes=640\n\
         errors 1 2 3 4 5\n\
         min=1 max=5 mean=2.0 stdev=1.549\n\
         p50=1 p90=5 p100=5\n\
         #=3\n\
         s(1)=1,3 s[1]=1\n\
         s(2)=2,1 s[2]=2\n\
         s(3)=5,1 s[3]=5\n\
         requests min=900 max=1100\n"
    );
}

#[test]
fn unknown_fields_of_the_statistics_objects_read_as_their_names_as_in_wrk() {
    // wrk's script_stats_index pushes nothing for a name it does not know and returns the key;
    // summary is a plain table in wrk as here.
    let mut h = host("stats_unknown.lua");
    assert_eq!(
        done_output(&mut h),
        "total: total\nstring p99 nil\nfunction\n"
    );
}

#[test]
fn init_gets_the_url_as_args_0_and_the_arguments_after_the_double_dash() {
    let mut t = host_for("args.lua", URL, &["alpha", "beta"])
        .setup_threads(1)
        .unwrap()
        .pop()
        .unwrap();
    let (bytes, info) = next(&mut t);
    assert!(bytes.starts_with(b"GET /alpha/beta/2 HTTP/1.1\r\n"));
    assert_eq!(t.name(info.name.unwrap()), URL);
}

#[test]
fn require_finds_modules_beside_the_script() {
    let mut t = one_thread("uses_module.lua");
    assert!(next(&mut t)
        .0
        .starts_with(b"GET /item/1?from=nested HTTP/1.1"));
    assert!(next(&mut t)
        .0
        .starts_with(b"GET /item/2?from=nested HTTP/1.1"));
}

#[test]
fn require_searches_beside_the_script_then_luajits_and_debians_directories() {
    let path = done_output(&mut host("package_path.lua"));
    assert!(
        path.starts_with("tests/scripts/?.lua;tests/scripts/?/init.lua;"),
        "{path}"
    );
    // Debian's wrk runs on Debian's LuaJIT, which searches /usr/share/lua/5.1 (lua-* packages).
    assert!(
        path.contains(";/usr/share/lua/5.1/?.lua;")
            && path.ends_with("/usr/share/lua/5.1/?/init.lua"),
        "{path}"
    );
}

#[test]
fn a_failed_require_of_a_c_module_says_why_on_one_line() {
    let msg = load_error("require_c_module.lua");
    assert!(
        msg.starts_with("require_c_module.lua:2: module 'socket' not found: "),
        "{msg}"
    );
    assert!(msg.contains("C modules"), "{msg}");
}

#[test]
fn setup_chooses_the_thread_address_with_lookup_and_connect_tells_whether_it_listens() {
    // Listen where `localhost` resolves first (127.0.0.1 or ::1, as the machine's hosts file
    // orders them): that is the address wrk.lookup returns first.
    use std::net::ToSocketAddrs;
    let first = ("localhost", 0).to_socket_addrs().unwrap().next().unwrap();
    let listener = std::net::TcpListener::bind((first.ip(), 0)).unwrap();
    let port = listener.local_addr().unwrap().port();
    let mut h = host_for("addr.lua", &format!("http://localhost:{port}/"), &[]);
    let mut threads = h.setup_threads(1).unwrap();
    let addr = threads[0].addr().unwrap();
    assert_eq!(addr, SocketAddr::new(first.ip(), port));
    let mut printed = Vec::new();
    threads[0].take_output(&mut printed);
    // wrk's form: the numeric host and the port, IPv6 without brackets.
    let shown = format!("{}:{}", addr.ip(), addr.port());
    assert_eq!(
        String::from_utf8(printed).unwrap(),
        format!("thread addr: {shown}\n")
    );
    assert_eq!(done_output(&mut h), format!("addr {shown} connect true\n"));

    drop(listener);
    let mut h = host_for("addr.lua", &format!("http://127.0.0.1:{port}/"), &[]);
    h.setup_threads(1).unwrap();
    // What the thread's state printed and nobody drained comes first, then done()'s.
    assert_eq!(
        done_output(&mut h),
        format!("thread addr: 127.0.0.1:{port}\naddr 127.0.0.1:{port} connect false\n")
    );
}

#[test]
fn without_setup_the_thread_address_is_the_target() {
    let t = one_thread("format_defaults.lua");
    assert_eq!(t.addr(), Some("127.0.0.1:8080".parse().unwrap()));
}

#[test]
fn request_names_come_from_format_tables_and_wrk_name() {
    let mut t = one_thread("named.lua");
    let (odd, a) = next(&mut t);
    let (even, b) = next(&mut t);
    let (_, c) = next(&mut t);
    assert!(odd.starts_with(b"GET /odd "));
    assert!(even.starts_with(b"GET /even "));
    assert_eq!(t.name(a.name.unwrap()), "odd");
    assert_eq!(t.name(b.name.unwrap()), "even");
    assert_eq!(c.name, a.name, "a repeated label is the same id");
}

#[test]
fn time_us_is_wall_clock_microseconds_and_thread_output_is_captured() {
    let mut t = one_thread("time_us.lua");
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64;
    next(&mut t);
    let after = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64;
    let mut printed = Vec::new();
    t.take_output(&mut printed);
    let text = String::from_utf8(printed).unwrap();
    let us: u64 = text.trim().strip_prefix("now ").unwrap().parse().unwrap();
    assert!(before <= us && us <= after, "{before} <= {us} <= {after}");
}

#[test]
fn time_in_lua_is_measured_per_call() {
    let mut t = one_thread("busy.lua");
    next(&mut t);
    assert!(t.last_lua_ns() >= 2_000_000, "{}", t.last_lua_ns());
    next(&mut t);
    assert!(t.total_lua_ns() >= 4_000_000, "{}", t.total_lua_ns());
}

#[test]
fn delay_is_called_in_a_closed_loop_and_refused_in_an_open_loop() {
    let mut h = host("delay.lua");
    let err = h.check_open_loop().unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("delay.lua defines delay()") && !msg.contains('\n'),
        "{msg}"
    );
    let mut t = h.setup_threads(1).unwrap().pop().unwrap();
    assert!(t.has_delay());
    assert_eq!(t.delay_ms().unwrap(), Some(25));
    assert!(host("format_defaults.lua").check_open_loop().is_ok());
    assert_eq!(one_thread("format_defaults.lua").delay_ms().unwrap(), None);
}

#[test]
fn a_negative_or_nan_delay_is_no_wait_and_is_told() {
    let mut t = one_thread("odd_delay.lua");
    assert_eq!(t.delay_ms().unwrap(), Some(0));
    assert_eq!(t.odd_delay(), Some(-5.0));
    assert_eq!(t.delay_ms().unwrap(), Some(0));
    assert!(t.odd_delay().is_some_and(f64::is_nan));
    assert_eq!(t.delay_ms().unwrap(), Some(3));
    assert_eq!(t.odd_delay(), None);
}

#[test]
fn a_delay_past_any_run_is_u64_max_ms_with_its_value_kept() {
    // The run bounds it by its length and tells it with the value returned (inf, not a count
    // of milliseconds): see ScriptSource's hold.
    let mut t = one_thread("huge_delay.lua");
    assert_eq!(t.delay_ms().unwrap(), Some(u64::MAX));
    assert_eq!(t.returned_delay(), f64::INFINITY);
    assert_eq!(t.odd_delay(), None);
    assert_eq!(t.delay_ms().unwrap(), Some(u64::MAX));
    assert_eq!(t.returned_delay(), 1e300);
    assert_eq!(t.delay_ms().unwrap(), Some(3));
    assert_eq!(t.returned_delay(), 3.0);
}

/// Runs `request()` of `name` on another thread, interrupts it after 50 ms and expects it back.
fn interrupted(name: &str, options: ScriptOptions) {
    let mut host =
        ScriptHost::load_with(&script(name), vec![], ScriptTarget::url(URL), options).unwrap();
    let interrupt = host.interrupt_handle();
    let mut t = host.setup_threads(1).unwrap().pop().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = tx.send(t.next_request(&mut out));
    });
    std::thread::sleep(Duration::from_millis(50));
    interrupt.interrupt();
    assert!(interrupt.is_interrupted());
    // Bounded: a broken interrupt fails here instead of hanging the suite.
    let result = rx
        .recv_timeout(Duration::from_secs(30))
        .unwrap_or_else(|_| panic!("{name}: request() was not interrupted"));
    match result {
        Err(ScriptError::Interrupted {
            phase: ScriptPhase::Request,
        }) => {}
        other => panic!("{name}: {other:?}"),
    }
}

#[test]
fn a_script_stuck_in_request_is_stopped_by_the_interrupt() {
    interrupted("forever_pure.lua", ScriptOptions::default());
    interrupted("forever.lua", ScriptOptions::default());
}

#[test]
fn with_the_jit_on_a_loop_calling_candor_functions_is_still_stopped() {
    interrupted(
        "forever.lua",
        ScriptOptions {
            jit: true,
            ..Default::default()
        },
    );
}

fn load_error(name: &str) -> String {
    let path = script(name);
    let err = match ScriptHost::load(&path, vec![], ScriptTarget::url(URL)) {
        Err(e) => e,
        Ok(mut h) => match h.setup_threads(1) {
            Err(e) => e,
            Ok(mut threads) => {
                let mut out = Vec::new();
                match threads[0].next_request(&mut out) {
                    Err(e) => e,
                    Ok(_) => threads[0]
                        .response(200, std::iter::empty(), b"")
                        .expect_err("the script should fail"),
                }
            }
        },
    };
    let msg = err.to_string();
    assert!(!msg.contains('\n'), "one line: {msg:?}");
    msg.replace("tests/scripts/", "")
}

#[test]
fn a_syntax_error_is_one_line_with_file_and_line() {
    let msg = load_error("bad_syntax.lua");
    assert!(msg.starts_with("bad_syntax.lua:3: "), "{msg}");
    let msg = load_error("bad_top_level.lua");
    assert!(
        msg.starts_with("bad_top_level.lua:2: attempt to index"),
        "{msg}"
    );
}

#[test]
fn runtime_errors_name_their_location_and_function() {
    let cases = [
        ("bad_setup.lua", "bad_setup.lua:2: setup broke (in setup())"),
        (
            "bad_init.lua",
            "bad_init.lua:3: attempt to perform arithmetic",
        ),
        (
            "bad_request.lua",
            "bad_request.lua:3: attempt to index local 't'",
        ),
        (
            "bad_response.lua",
            "bad_response.lua:2: cannot judge 200 (in response())",
        ),
        (
            "bad_lookup.lua",
            "bad_lookup.lua:2: unable to resolve no-such-host.invalid:80: ",
        ),
        (
            "bad_transfer.lua",
            "bad_transfer.lua:3: cannot transfer 'function' to thread",
        ),
        (
            "bad_addr.lua",
            "bad_addr.lua:3: bad argument #2 to `ThreadHandle.addr`",
        ),
    ];
    for (name, start) in cases {
        let msg = load_error(name);
        assert!(msg.starts_with(start), "{name}: {msg}");
    }
    assert!(load_error("bad_init.lua").ends_with("(in init())"));
    assert!(load_error("bad_request.lua").ends_with("(in request())"));
}

#[test]
fn request_must_return_a_whole_http_request_string() {
    assert_eq!(
        load_error("returns_number.lua"),
        "request() returned number, not a string"
    );
    assert_eq!(
        load_error("returns_nil.lua"),
        "request() returned nil, not a string"
    );
    let msg = load_error("returns_garbage.lua");
    assert!(
        msg.starts_with("request() returned an invalid HTTP request: "),
        "{msg}"
    );
}

#[test]
fn an_unreadable_script_or_target_is_one_line() {
    let err = ScriptHost::load(&script("missing.lua"), vec![], ScriptTarget::url(URL))
        .err()
        .unwrap();
    assert!(err.to_string().starts_with("cannot read script "), "{err}");
    // The OS's words are in the line; no source repeats them in an error chain.
    assert!(std::error::Error::source(&err).is_none(), "{err:?}");
    let err = ScriptHost::load(
        &script("format_defaults.lua"),
        vec![],
        ScriptTarget::url("not a url"),
    )
    .err()
    .unwrap();
    assert!(
        err.to_string()
            .starts_with("invalid target URL not a url: "),
        "{err}"
    );
}

#[test]
fn format_builds_the_bytes_the_lua_definition_did_for_every_kind_of_input() {
    let mut t = one_thread("format_matches_lua.lua");
    // Twice round the script's 12 cases: the second time with tables that already hold Host.
    for _ in 0..24 {
        let mut out = Vec::new();
        if let Err(e) = t.next_request(&mut out) {
            panic!("{e}");
        }
        assert_eq!(out, b"GET /compared HTTP/1.1\r\nHost: x\r\n\r\n");
    }
}

#[test]
fn format_rejects_what_it_cannot_write_at_the_line_that_called_it() {
    assert_eq!(
        load_error("bad_format_name.lua"),
        "bad_format_name.lua:2: a header name must be a string (got a boolean value) in \
         'format' (in request())"
    );
    assert_eq!(
        load_error("bad_format_body.lua"),
        "bad_format_body.lua:2: bad argument #4 to 'format' (string or nil expected, got \
         table) (in request())"
    );
    // Line breaks in what format() is given would be headers or requests nobody wrote.
    assert_eq!(
        load_error("bad_format_crlf.lua"),
        "bad_format_crlf.lua:3: the value of header 'X-A' given to 'format' holds a line \
         break or NUL, which would start another header (in request())"
    );
    assert_eq!(
        load_error("bad_format_method.lua"),
        "bad_format_method.lua:3: the method given to 'format' holds a line break or NUL, \
         which would cut the request line (in request())"
    );
    // wrk.headers set at the top level: the request built after init() refuses it there.
    let msg = load_error("bad_format_lf.lua");
    assert!(
        msg.contains("the value of header 'X-A' given to 'format' holds a line break")
            && msg.ends_with("(in init())"),
        "{msg}"
    );
    // Bytes written by hand: a bare LF in the head is refused like a head cut short.
    let msg = load_error("bare_lf.lua");
    assert!(
        msg.starts_with("request() returned an invalid HTTP request: request 1: a CR or LF that is not part of a CRLF line end"),
        "{msg}"
    );
    // `return wrk.format(...)` is a tail call: no frame of the script is left to name.
    assert_eq!(
        load_error("bad_format_tail.lua"),
        "a header name must be a string (got a boolean value) in 'format' (in request())"
    );
}

#[test]
fn the_scripts_page_names_each_heading_once() {
    // docs/scripts.md is this crate's page: a heading repeated by an edit reads as two
    // sections, the second empty.
    let page = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/scripts.md"),
    )
    .unwrap();
    let mut seen = std::collections::HashSet::new();
    for heading in page.lines().filter(|l| l.starts_with('#')) {
        assert!(seen.insert(heading), "repeated heading: {heading}");
    }
}
