//! Tests of replayed traces (`replay.rs`), kept beside it so that neither file runs long.

use super::*;

fn items(text: &str) -> Result<Vec<Item>, ReplayError> {
    let mut r = TraceReader::new(text.as_bytes(), "t");
    let mut v = Vec::new();
    while let Some(i) = r.next_item()? {
        v.push(i);
    }
    Ok(v)
}

fn offsets(text: &str) -> Vec<(u64, f64, String)> {
    items(text)
        .unwrap()
        .into_iter()
        .filter_map(|i| match i {
            Item::Record {
                line,
                offset_s,
                record,
            } => Some((line, offset_s, format!("{} {}", record.method, record.path))),
            Item::Malformed(_) => None,
        })
        .collect()
}

#[test]
fn json_lines_records_and_defaults() {
    let text = "{\"at\": 100.0, \"path\": \"/a\"}\n\n{\"at\": 100.25, \"method\": \"post\", \"path\": \"/b?x=1\", \"headers\": {\"X-A\": \"1\"}, \"body\": \"hi\"}\n";
    let v = items(text).unwrap();
    assert_eq!(v.len(), 2);
    match &v[1] {
        Item::Record {
            line,
            offset_s,
            record,
        } => {
            assert_eq!((*line, *offset_s), (3, 0.25));
            assert_eq!(record.method, "POST");
            assert_eq!(record.headers, vec!["X-A: 1"]);
            assert_eq!(record.body, b"hi");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn json_lines_going_backwards_is_refused_naming_the_line() {
    let e = items("{\"at\": 5, \"path\": \"/\"}\n{\"at\": 6, \"path\": \"/\"}\n{\"at\": 5.5, \"path\": \"/\"}\n")
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "--replay t: line 3: timestamp 5.5 goes backwards (the previous record is at 6); a trace must be in time order"
    );
}

#[test]
fn malformed_json_lines_are_reported_by_line() {
    let v = items("{\"at\": 1, \"path\": \"/\"}\n{\"path\": \"/\"}\n{\"at\": 2, \"path\": \"x\"}\nnot json\n{\"at\": -1, \"path\": \"/\"}\n").unwrap();
    let bad: Vec<(u64, String)> = v
        .iter()
        .filter_map(|i| match i {
            Item::Malformed(m) => Some((m.line, m.reason.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(bad.len(), 4);
    assert_eq!(bad[0], (2, "missing \"at\"".into()));
    assert!(
        bad[1].1.starts_with("path 'x' must start with '/'"),
        "{bad:?}"
    );
    assert_eq!(bad[2].0, 4);
    assert!(bad[2].1.starts_with("not JSON"));
    assert_eq!(
        bad[3],
        (
            5,
            "\"at\" must be a number of seconds from 0 to 1e10, got -1".into()
        )
    );
}

#[test]
fn replayed_requests_are_checked_and_their_paths_encoded() {
    let v = items(concat!(
        r#"{"at": 1, "path": "/a b?q=x y"}"#,
        "\n",
        r#"{"at": 2, "path": "/a", "headers": {"X": "1\r\nY: 2"}}"#,
        "\n",
        r#"{"at": 3, "path": "/a", "headers": {"X\nY": "1"}}"#,
        "\n",
        r#"{"at": 4, "path": "/a\r\nX: 1"}"#,
        "\n",
        r#"{"at": 5, "path": "/a", "headers": {"Content-Length": "9"}, "body": "x"}"#,
        "\n",
    ))
    .unwrap();
    match &v[0] {
        Item::Record { record, .. } => assert_eq!(record.path, "/a%20b?q=x%20y"),
        other => panic!("{other:?}"),
    }
    for (i, expect) in [
        (1, "invalid header 'X: 1\\r\\nY: 2'"),
        (2, "the header name 'X\\nY' is not a token"),
        (3, "path '/a\\r\\nX: 1' holds a line break"),
        (4, "header 'Content-Length: 9' contradicts the body"),
    ] {
        match &v[i] {
            Item::Malformed(m) => {
                assert_eq!(m.line, i as u64 + 1);
                assert!(m.reason.starts_with(expect), "{}", m.reason);
            }
            other => panic!("{i}: {other:?}"),
        }
    }
    let r = parse_ncsa_line(
        "1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] \"GET /caf\u{e9}/%41{x} HTTP/1.1\" 200 1",
    )
    .unwrap();
    assert_eq!(r.path, "/caf%C3%A9/%41%7Bx%7D");
}

#[test]
fn ncsa_lines_spread_evenly_over_their_second() {
    let log = "\
127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] \"GET /a.gif HTTP/1.0\" 200 2326\n\
127.0.0.1 - - [10/Oct/2000:13:55:36 -0700] \"POST /b HTTP/1.1\" 201 5 \"http://ref/\" \"curl/8\"\n\
127.0.0.1 - - [10/Oct/2000:13:55:36 -0700] \"GET /c HTTP/1.1\" 200 5 \"-\" \"Mozilla/5.0 (X11)\"\n\
127.0.0.1 - - [10/Oct/2000:13:55:35 -0700] \"GET /late-logged HTTP/1.1\" 200 5\n\
10.0.0.2 - - [10/Oct/2000:13:55:38 -0700] \"HEAD /d HTTP/1.1\" 200 0\n";
    assert_eq!(
        offsets(log),
        vec![
            (1, 0.0, "GET /a.gif".into()),
            (2, 0.25, "POST /b".into()),
            (3, 0.5, "GET /c".into()),
            // Logged at completion with an earlier second: it joins the current one.
            (4, 0.75, "GET /late-logged".into()),
            (5, 2.0, "HEAD /d".into()),
        ]
    );
    // 2000-10-10 20:55:36 UTC.
    assert_eq!(
        parse_ncsa_time("10/Oct/2000:13:55:36 -0700"),
        Some(971_211_336)
    );
    assert_eq!(parse_ncsa_time("01/Jan/1970:00:00:00 +0000"), Some(0));
    assert_eq!(
        parse_ncsa_time("29/Feb/2024:12:00:00 +0100"),
        Some(1_709_204_400)
    );
}

#[test]
fn malformed_ncsa_lines_are_reported() {
    for (line, reason) in [
        (
            "127.0.0.1 - - 10/Oct/2000 \"GET / HTTP/1.1\" 200 1",
            "no [timestamp]",
        ),
        (
            "127.0.0.1 - - [10/Foo/2000:13:55:36 -0700] \"GET / HTTP/1.1\" 200 1",
            "timestamp is not",
        ),
        (
            "127.0.0.1 - - [10/Oct/2000:13:55:36 -0700] \"-\" 400 0",
            "request line is not 'METHOD path PROTOCOL'",
        ),
        (
            "127.0.0.1 - - [10/Oct/2000:13:55:36 -0700] \"G=T / HTTP/1.1\" 400 0",
            "invalid HTTP method 'G=T'",
        ),
        (
            "127.0.0.1 - - [10/Oct/2000:13:55:36 -0700] 200",
            "no quoted request line",
        ),
    ] {
        let e = parse_ncsa_line(line).unwrap_err().to_string();
        assert!(e.starts_with(reason), "{line}: {e}");
    }
}

#[test]
fn a_malformed_line_is_named_even_when_it_leaves_one_record_and_pipes_are_refused() {
    let p = Path::new("t.jsonl");
    for bad in [
        r#"{"at": 1e300, "path": "/"}"#,
        r#"{"at": 0, "path": "/a\r\nX: 1"}"#,
        r#"{"at": 0, "path": "/", "headers": {"X": "a\u0000b"}}"#,
    ] {
        let text = format!("{bad}\n{{\"at\": 1, \"path\": \"/b\"}}\n");
        let e = ReplayPlan::scan_reader(text.as_bytes(), p, 1.0, false)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("--replay t.jsonl: 1 of 2 lines are malformed") && e.contains("line 1: "),
            "{bad}: {e}"
        );
    }
    // A FIFO (as `<(cat trace)` gives) would be empty when the run streams it again.
    let dir = std::env::temp_dir().join(format!("candor-replay-fifo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("trace");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo on a path of our own temporary directory.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            let _ = std::fs::write(
                &fifo,
                "{\"at\": 0, \"path\": \"/\"}\n{\"at\": 1, \"path\": \"/\"}\n",
            );
        })
    };
    let e = ReplayPlan::scan(&fifo, 1.0, false).unwrap_err().to_string();
    assert!(e.contains("not a regular file"), "{e}");
    let _ = writer.join();
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn more_than_one_percent_malformed_refuses_unless_lenient() {
    let mut text = String::new();
    for i in 0..98 {
        text.push_str(&format!("{{\"at\": {i}, \"path\": \"/\"}}\n"));
    }
    text.push_str("garbage\n{\"at\": 99}\n");
    let p = Path::new("trace.jsonl");
    let e = ReplayPlan::scan_reader(text.as_bytes(), p, 1.0, false).unwrap_err();
    assert_eq!(
        e.to_string(),
        "--replay trace.jsonl: 2 of 100 lines are malformed (more than 1%), the first at line 99: not JSON: expected value at line 1 column 1; fix the trace or pass --lenient to skip them"
    );
    let plan = ReplayPlan::scan_reader(text.as_bytes(), p, 2.0, true).unwrap();
    assert_eq!((plan.records, plan.malformed_count), (98, 2));
    assert_eq!(plan.format, TraceFormat::JsonLines);
    assert_eq!(plan.duration_ns(), 48_500_000_001);
    // Exactly 1% passes.
    let one = format!(
        "{}bad\n",
        text.lines()
            .take(98)
            .map(|l| format!("{l}\n"))
            .collect::<String>()
            + "{\"at\": 98, \"path\": \"/\"}\n"
    );
    assert_eq!(
        ReplayPlan::scan_reader(one.as_bytes(), p, 1.0, false)
            .unwrap()
            .malformed_count,
        1
    );
    assert_eq!(
        ReplayPlan::scan_reader(&b"\n\n"[..], p, 1.0, false).unwrap_err(),
        ReplayError::Empty("trace.jsonl".into())
    );
    assert!(matches!(
        ReplayPlan::scan(Path::new("/nonexistent/trace"), 1.0, false),
        Err(ReplayError::Read { .. })
    ));
    assert_eq!(
        ReplayPlan::scan_reader(&b""[..], p, 0.0, false).unwrap_err(),
        ReplayError::Speed(0.0)
    );
}

#[test]
fn a_trace_without_a_rate_is_refused_naming_its_lines() {
    let p = Path::new("t.jsonl");
    let scan = |text: &str, speed: f64| {
        ReplayPlan::scan_reader(text.as_bytes(), p, speed, false)
            .unwrap_err()
            .to_string()
    };
    let tail = "a replay needs records spread over time (two or more, at different times)";
    assert_eq!(
        scan("\n{\"at\": 7, \"path\": \"/\"}\n", 1.0),
        format!("--replay t.jsonl: line 2 is the trace's only record: {tail}")
    );
    assert_eq!(
        scan("{\"at\": 3, \"path\": \"/a\"}\n{\"at\": 3, \"path\": \"/b\"}\n{\"at\": 3.0, \"path\": \"/c\"}\n", 1.0),
        format!("--replay t.jsonl: all 3 records (lines 1 to 3) are at the same time: {tail}")
    );
    // One NCSA line is one record too; two in one second are spread over it and pass.
    let ncsa = "127.0.0.1 - - [10/Oct/2000:13:55:36 -0700] \"GET /a HTTP/1.0\" 200 2326\n";
    assert!(scan(ncsa, 1.0).contains("line 1 is the trace's only record"));
    let two = ReplayPlan::scan_reader(ncsa.repeat(2).as_bytes(), p, 1.0, false).unwrap();
    assert_eq!(two.records, 2);
    // Lines, but no record: the first bad line and why, not "no records".
    assert_eq!(
        scan("{\"at\": \"NaN\", \"path\": \"/\"}\n", 1.0),
        "--replay t.jsonl: none of the 1 lines is a record; line 1: \"at\" must be a number of seconds from 0 to 1e10, got \"NaN\""
    );
    assert_eq!(
        scan("{\"at\": 1e300, \"path\": \"/\"}\n", 1.0),
        "--replay t.jsonl: none of the 1 lines is a record; line 1: \"at\" must be a number of seconds from 0 to 1e10, got 1e+300"
    );
    // An absurd timestamp among good ones is a malformed line, named.
    let e = scan("{\"at\": 0, \"path\": \"/\"}\n{\"at\": 1e300, \"path\": \"/\"}\n{\"at\": 2, \"path\": \"/\"}\n", 1.0);
    assert!(
        e.contains(
            "the first at line 2: \"at\" must be a number of seconds from 0 to 1e10, got 1e+300"
        ),
        "{e}"
    );
    // A speed that stretches a real trace past what a schedule can count.
    let e = scan(
        "{\"at\": 0, \"path\": \"/\"}\n{\"at\": 1e9, \"path\": \"/\"}\n",
        0.01,
    );
    assert!(e.starts_with("--replay t.jsonl: line 2: the record is 1e9 s after the first (at --speed 0.01), beyond the longest replay"), "{e}");
}

#[test]
fn streams_split_records_by_index_and_encode_them() {
    let dir = std::env::temp_dir().join(format!("candor-replay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("burst.jsonl");
    // 3000 records (several batches): 300 in the first 100 ms, then one per 10 ms.
    let mut text = String::new();
    for i in 0..3000u64 {
        let at = if i < 300 {
            i as f64 / 3000.0
        } else {
            0.1 + (i - 300) as f64 / 100.0
        };
        text.push_str(&format!("{{\"at\": {at}, \"path\": \"/r/{i}\"}}\n"));
    }
    std::fs::write(&path, text).unwrap();
    let plan = ReplayPlan::scan(&path, 2.0, false).unwrap();
    let mut all = Vec::new();
    for lane in 0..3 {
        let mut s = plan.stream("h", lane, 3).unwrap();
        while let Some((e, bytes)) = s.peek() {
            assert_eq!(e.seq % 3, lane);
            let expect = format!(
                "GET /r/{} HTTP/1.1\r\nHost: h\r\n{}\r\n",
                e.seq,
                candor_wire::request_form::USER_AGENT_LINE
            );
            assert_eq!(bytes, expect.as_bytes());
            all.push((e.seq, e.offset_ns));
            s.advance();
        }
        s.finish().unwrap();
    }
    all.sort_unstable();
    assert_eq!(all.len(), 3000);
    assert!(all.iter().enumerate().all(|(i, e)| e.0 == i as u64));
    // At speed 2, record 299 (at 99.67 ms) is sent at 49.83 ms: the burst stays a burst.
    assert_eq!(all[299].1, (299.0 / 3000.0 / 2.0 * 1e9) as u64);
    assert_eq!(all[2999].1, ((0.1 + 2699.0 / 100.0) / 2.0 * 1e9) as u64);
    std::fs::remove_dir_all(&dir).unwrap();
}
