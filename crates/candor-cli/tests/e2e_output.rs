//! End-to-end tests of what candor writes: a reader that closes the pipe early ends every
//! printing command quietly, two outputs never share a path or stdout, an unwritable output is
//! found before the load, and the reports say only what is true.

mod common;

use candor_report::synthetic::synthetic_run;
use common::candor;
use std::path::PathBuf;
use std::process::{Command, Output};

fn dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("candor-e2e-output-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs `cmd` with stdout a pipe whose reader is already gone: every write to it fails with
/// EPIPE, deterministically (no race with a `head` that may or may not have exited yet).
fn with_closed_stdout(mut cmd: Command) -> Output {
    let mut fds = [0; 2];
    // SAFETY: pipe(2) fills both descriptors, which are owned from here on.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: fds[0] and fds[1] were just returned by pipe(2) and nothing else owns them.
    let (reader, writer) = unsafe {
        use std::os::fd::FromRawFd;
        (
            std::os::fd::OwnedFd::from_raw_fd(fds[0]),
            std::os::fd::OwnedFd::from_raw_fd(fds[1]),
        )
    };
    drop(reader);
    cmd.stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap()
}

/// Runs `cmd` with stdout and stderr both the one pipe whose reader is gone (`2>&1 | head -1`
/// once head has exited): the exit status is all that can be seen.
fn with_both_closed(mut cmd: Command) -> std::process::ExitStatus {
    let mut fds = [0; 2];
    // SAFETY: pipe(2) fills both descriptors, which are owned from here on.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: fds[0] and fds[1] were just returned by pipe(2) and nothing else owns them.
    let (reader, writer) = unsafe {
        use std::os::fd::FromRawFd;
        (
            std::os::fd::OwnedFd::from_raw_fd(fds[0]),
            std::os::fd::OwnedFd::from_raw_fd(fds[1]),
        )
    };
    drop(reader);
    let err = writer.try_clone().unwrap();
    cmd.stdout(writer).stderr(err).status().unwrap()
}

/// Exit 0 with nothing on stderr: no panic, no "Broken pipe" error.
fn quiet(what: &str, o: &Output) {
    let e = stderr(o);
    assert_eq!(o.status.code(), Some(0), "{what}: {e}");
    assert!(
        !e.contains("panicked") && !e.contains("Broken pipe"),
        "{what}: {e}"
    );
}

#[test]
fn a_closed_pipe_ends_every_printing_command_quietly() {
    let d = dir();
    let a = d.join("pipe-a.json");
    let b = d.join("pipe-b.json");
    std::fs::write(&a, synthetic_run(1, 4, 100, 1_000_000, 0).to_json_pretty()).unwrap();
    std::fs::write(&b, synthetic_run(2, 4, 100, 1_000_000, 0).to_json_pretty()).unwrap();
    let merged = d.join("pipe-merged.json");
    let _ = std::fs::remove_file(&merged);
    let mut cases: Vec<(&str, Vec<String>)> = vec![
        ("report", vec!["report".into(), a.display().to_string()]),
        (
            "report --hgrm -",
            vec![
                "report".into(),
                a.display().to_string(),
                "--hgrm".into(),
                "-".into(),
            ],
        ),
        (
            "compare",
            vec![
                "compare".into(),
                a.display().to_string(),
                b.display().to_string(),
            ],
        ),
        ("man", vec!["man".into()]),
        ("completions", vec!["completions".into(), "bash".into()]),
        (
            "k8s",
            [
                "k8s",
                "--shards",
                "2",
                "--image",
                "candor:1",
                "--",
                "http://127.0.0.1:1/",
                "-R",
                "10",
                "-d",
                "1s",
            ]
            .map(String::from)
            .to_vec(),
        ),
    ];
    // A command that writes a file besides printing still writes it.
    cases.push((
        "merge",
        vec![
            "merge".into(),
            a.display().to_string(),
            b.display().to_string(),
            "-o".into(),
            merged.display().to_string(),
        ],
    ));
    for (what, args) in cases {
        let mut cmd = candor();
        cmd.args(&args);
        quiet(what, &with_closed_stdout(cmd));
    }
    assert!(merged.exists(), "merge wrote its -o");
    // A run: the report, or the JSON itself, to a reader that has gone; the files still written.
    let _serial = common::serial();
    let server = common::Server::start(&[]);
    for json_flag in ["-", "file"] {
        let hlog = d.join(format!("pipe-run-{json_flag}.hlog"));
        let json = d.join("pipe-run.json");
        let _ = std::fs::remove_file(&hlog);
        let mut cmd = candor();
        cmd.args(["run", "-q", "-R", "100", "-d", "300ms", "--hlog"])
            .arg(&hlog)
            .arg("--json");
        if json_flag == "-" {
            cmd.arg("-");
        } else {
            cmd.arg(&json);
        }
        cmd.arg(&server.url);
        quiet(&format!("run --json {json_flag}"), &with_closed_stdout(cmd));
        assert!(
            hlog.exists(),
            "run --json {json_flag}: --hlog still written"
        );
    }
    // stderr gone too, with the notes a live view and a report print there: the run ends as
    // usual (a panic exits 101) and writes its results.
    let json = d.join("pipe-both.json");
    let _ = std::fs::remove_file(&json);
    let mut cmd = candor();
    cmd.args([
        "run",
        "-q",
        "-R",
        "100",
        "-d",
        "300ms",
        "--live",
        "127.0.0.1:0",
    ])
    .arg("--json")
    .arg(&json)
    .arg(&server.url);
    assert_eq!(with_both_closed(cmd).code(), Some(0));
    assert!(json.exists(), "the results were written");
}

/// Exit 1 with one line on stderr containing every part of `want`, well before a 30 s run.
fn refused_before_the_run(what: &str, o: &Output, started: std::time::Instant, want: &[&str]) {
    let e = stderr(o);
    assert_eq!(o.status.code(), Some(1), "{what}: {e}");
    assert_eq!(e.trim_end().lines().count(), 1, "{what}: one line: {e}");
    for w in want {
        assert!(e.contains(w), "{what}: {w:?} in {e}");
    }
    assert!(
        started.elapsed() < std::time::Duration::from_secs(15),
        "{what}: refused before the 30 s load, not after ({:?})",
        started.elapsed()
    );
}

#[test]
fn two_outputs_on_one_place_are_refused_before_the_run() {
    let _serial = common::serial();
    let server = common::Server::start(&[]);
    let d = dir();
    let f = d.join("same.json");
    let link = d.join("same-link.json");
    let hard = d.join("same-hard.json");
    let old = "previous results";
    std::fs::write(&f, old).unwrap();
    let _ = std::fs::remove_file(&link);
    let _ = std::fs::remove_file(&hard);
    std::os::unix::fs::symlink(&f, &link).unwrap();
    std::fs::hard_link(&f, &hard).unwrap();
    let fresh = d.join("fresh.out");
    let _ = std::fs::remove_file(&fresh);
    let (f, link, hard, fresh) = (
        f.display().to_string(),
        link.display().to_string(),
        hard.display().to_string(),
        fresh.display().to_string(),
    );
    let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
        (
            vec!["--json", &f, "--hlog", &f],
            vec!["--json and --hlog", &f],
        ),
        (
            vec!["--json", &f, "--hgrm", &f],
            vec!["--json and --hgrm", &f],
        ),
        (
            vec!["--hlog", &f, "--hgrm", &link],
            vec!["--hlog and --hgrm"],
        ),
        (
            vec!["--json", &hard, "--hgrm", &f],
            vec!["--json and --hgrm"],
        ),
        (vec!["--json", &fresh, "--hlog", &fresh], vec![&fresh]),
        (
            vec!["--json", "-", "--hlog", "-"],
            vec!["--json and --hlog", "stdout"],
        ),
    ];
    for (outputs, want) in cases {
        let started = std::time::Instant::now();
        let o = candor()
            .args(["run", "-q", "-R", "100", "-d", "30s"])
            .args(&outputs)
            .arg(&server.url)
            .output()
            .unwrap();
        refused_before_the_run(&outputs.join(" "), &o, started, &want);
    }
    // An output on a file the load reads: the trace, the request set, the body.
    let trace = d.join("inputs-trace.jsonl");
    let body = d.join("inputs-body.txt");
    std::fs::write(
        &trace,
        "{\"at\": 0, \"path\": \"/\"}\n{\"at\": 30, \"path\": \"/\"}\n",
    )
    .unwrap();
    std::fs::write(&body, "hello").unwrap();
    for (args, input) in [
        (vec!["--replay", trace.to_str().unwrap(), "--json"], &trace),
        (
            vec![
                "-R",
                "100",
                "-d",
                "30s",
                "--body-file",
                body.to_str().unwrap(),
                "--hgrm",
            ],
            &body,
        ),
    ] {
        let started = std::time::Instant::now();
        let o = candor()
            .args(["run", "-q"])
            .args(&args)
            .arg(input)
            .arg(&server.url)
            .output()
            .unwrap();
        refused_before_the_run(&args.join(" "), &o, started, &["is also an input"]);
    }
    let started = std::time::Instant::now();
    let o = candor()
        .args(["sweep", "--rates", "100,200", "-d", "15s", "--body-file"])
        .arg(&body)
        .arg("--json")
        .arg(&body)
        .arg(&server.url)
        .output()
        .unwrap();
    refused_before_the_run(
        "sweep --json on its body",
        &o,
        started,
        &["--json", "is also an input"],
    );
    assert_eq!(std::fs::read_to_string(&body).unwrap(), "hello");
    // Nothing was destroyed, and no empty file was left behind.
    assert_eq!(std::fs::read_to_string(&f).unwrap(), old);
    assert!(!std::path::Path::new(&fresh).exists());
    // Two outputs on stdout, one of them by the name /dev/stdout, when stdout is a pipe.
    let started = std::time::Instant::now();
    let o = candor()
        .args(["run", "-q", "-R", "100", "-d", "30s", "--json", "-"])
        .args(["--hlog", "/dev/stdout"])
        .arg(&server.url)
        .stdout(std::process::Stdio::piped())
        .output()
        .unwrap();
    refused_before_the_run("- and /dev/stdout", &o, started, &["--json and --hlog"]);
}

#[test]
fn an_output_that_takes_no_writes_is_refused_before_the_load() {
    // procfs opens /proc/version for write as root and refuses only the write itself; as
    // another user the open already fails. Either way: before the load, one line.
    let _serial = common::serial();
    let server = common::Server::start(&[]);
    for (cmd, flag) in [
        ("run", "--json"),
        ("run", "--hlog"),
        ("run", "--hgrm"),
        ("sweep", "--json"),
        ("capacity", "--json"),
    ] {
        let started = std::time::Instant::now();
        let mut c = candor();
        c.arg(cmd);
        match cmd {
            "run" => c.args(["-q", "-R", "100", "-d", "30s"]),
            "sweep" => c.args(["--rates", "100,200", "-d", "15s"]),
            _ => c.args(["--slo", "p99<1s", "-d", "15s"]),
        };
        let o = c
            .args([flag, "/proc/version"])
            .arg(&server.url)
            .output()
            .unwrap();
        refused_before_the_run(
            &format!("{cmd} {flag}"),
            &o,
            started,
            &[flag, "/proc/version", "cannot write there"],
        );
    }
}

#[test]
fn report_merge_and_correct_refuse_an_output_on_an_input_or_another_output() {
    let d = dir();
    let a = d.join("in-a.json");
    let b = d.join("in-b.json");
    let text = synthetic_run(1, 4, 100, 1_000_000, 0).to_json_pretty();
    std::fs::write(&a, &text).unwrap();
    std::fs::write(&b, synthetic_run(2, 4, 100, 1_000_000, 0).to_json_pretty()).unwrap();
    let (sa, sb) = (a.display().to_string(), b.display().to_string());
    let x = d.join("x.out").display().to_string();
    let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
        (
            vec!["report", &sa, "--hlog", &sa],
            vec!["--hlog", "also an input"],
        ),
        (
            vec!["report", &sa, "--hgrm", &x, "--hlog", &x],
            vec!["--hgrm and --hlog"],
        ),
        (
            vec!["report", &sa, &sb, "--hgrm", &x, "--hlog", &x],
            vec!["--hgrm and --hlog"],
        ),
        (
            vec!["report", &sa, "--hgrm", &x, "-o", &x],
            vec!["--hgrm and -o"],
        ),
        (
            vec!["report", &sa, "-o", "/proc/version"],
            vec!["cannot write there"],
        ),
        // Two inputs' distributions on one stdout (it wrote files named "-.1.out").
        (
            vec!["report", &sa, &sb, "--hgrm", "-"],
            vec!["--hgrm and --hgrm", "stdout"],
        ),
        (
            vec!["merge", &sa, &sb, "-o", &sb],
            vec!["-o", "also an input"],
        ),
        (
            vec!["correct", "--expected-interval", "1ms", &sa, "--hgrm", &sa],
            vec!["--hgrm", "also an input"],
        ),
    ];
    // A merged file left in the directory being merged is one of its inputs the next time.
    let shards = d.join("in-dir");
    std::fs::create_dir_all(&shards).unwrap();
    std::fs::write(shards.join("a.json"), &text).unwrap();
    std::fs::write(shards.join("merged.json"), &text).unwrap();
    let (sdir, smerged) = (
        shards.display().to_string(),
        shards.join("merged.json").display().to_string(),
    );
    let mut cases = cases;
    cases.push((vec!["merge", &sdir, "-o", &smerged], vec!["also an input"]));
    for (args, want) in cases {
        let o = candor().args(&args).output().unwrap();
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {e}");
        assert_eq!(e.trim_end().lines().count(), 1, "{args:?}: {e}");
        for w in want {
            assert!(e.contains(w), "{args:?}: {w:?} in {e}");
        }
    }
    assert_eq!(
        std::fs::read_to_string(&a).unwrap(),
        text,
        "the input is intact"
    );
}

#[test]
fn report_and_compare_refuse_what_merge_refuses() {
    let d = dir();
    let good = d.join("valid-good.json");
    std::fs::write(
        &good,
        synthetic_run(1, 4, 100, 1_000_000, 0).to_json_pretty(),
    )
    .unwrap();
    type Damage = Box<dyn Fn(&mut serde_json::Value)>;
    let damaged: Vec<(&str, Damage, &str)> = vec![
        (
            "notbase64",
            Box::new(|v| v["histograms"]["response_time"] = "!!!notbase64".into()),
            "histograms.response_time is not an HdrHistogram",
        ),
        (
            "interval-histogram",
            Box::new(|v| v["intervals"][0]["histograms"]["send_lag"] = "AAAA".into()),
            "intervals[0].histograms.send_lag",
        ),
        (
            "duration",
            Box::new(|v| v["duration_s"] = 1e308.into()),
            "duration_s = ",
        ),
        (
            "rate",
            Box::new(|v| v["rate"]["achieved_per_s"] = 1e300.into()),
            "achieved_per_s = ",
        ),
    ];
    for (name, damage, why) in damaged {
        let mut v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&good).unwrap()).unwrap();
        damage(&mut v);
        let bad = d.join(format!("valid-{name}.json"));
        std::fs::write(&bad, v.to_string()).unwrap();
        for args in [
            vec!["report".to_string(), bad.display().to_string()],
            vec![
                "compare".to_string(),
                good.display().to_string(),
                bad.display().to_string(),
            ],
            vec![
                "merge".to_string(),
                good.display().to_string(),
                bad.display().to_string(),
                "-o".into(),
                d.join("valid-merged.json").display().to_string(),
            ],
        ] {
            let o = candor().args(&args).output().unwrap();
            let e = stderr(&o);
            assert_eq!(o.status.code(), Some(1), "{name} {}: {e}", args[0]);
            assert_eq!(e.trim_end().lines().count(), 1, "{name}: one line: {e}");
            assert!(e.contains(why), "{name} {}: {why:?} in {e}", args[0]);
            assert!(
                e.contains(&bad.display().to_string()),
                "names the file: {e}"
            );
            assert!(
                o.stdout.is_empty(),
                "{name}: nothing printed before the error"
            );
        }
    }
}

#[test]
fn replay_errors_name_the_line_and_what_is_wrong() {
    let d = dir();
    for (name, trace, want) in [
        (
            "one",
            "{\"at\": 1, \"path\": \"/\"}\n",
            "line 1 is the trace's only record",
        ),
        (
            "same",
            "{\"at\": 1, \"path\": \"/\"}\n{\"at\": 1, \"path\": \"/b\"}\n",
            "all 2 records (lines 1 to 2) are at the same time",
        ),
        (
            "huge",
            "{\"at\": 1e300, \"path\": \"/\"}\n",
            "line 1: \"at\" must be a number of seconds from 0 to 1e10, got 1e+300",
        ),
        (
            "nan",
            "{\"at\": \"NaN\", \"path\": \"/\"}\n",
            "line 1: \"at\" must be a number of seconds from 0 to 1e10, got \"NaN\"",
        ),
    ] {
        let path = d.join(format!("trace-{name}.jsonl"));
        std::fs::write(&path, trace).unwrap();
        // Refused while the flags are read: no server is needed, none is contacted.
        let o = candor()
            .args(["run", "-q", "--replay"])
            .arg(&path)
            .arg("http://127.0.0.1:9/")
            .output()
            .unwrap();
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{name}: {e}");
        assert_eq!(e.trim_end().lines().count(), 1, "{name}: one line: {e}");
        assert!(e.contains(want), "{name}: {want:?} in {e}");
        assert!(!e.contains("rate"), "{name}: not about a rate: {e}");
    }
}

/// With an output on stdout (`-`), stdout carries that output alone and the text goes to stderr,
/// in every command that has both (as `run --json -` always did).
#[test]
fn an_output_on_stdout_is_all_that_stdout_carries() {
    let d = dir();
    let a = d.join("alone-a.json");
    let b = d.join("alone-b.json");
    std::fs::write(&a, synthetic_run(1, 12, 100, 1_000_000, 0).to_json_pretty()).unwrap();
    std::fs::write(&b, synthetic_run(2, 12, 100, 1_000_000, 0).to_json_pretty()).unwrap();
    let (sa, sb) = (a.display().to_string(), b.display().to_string());
    let json = |o: &Output, what: &str| {
        let text = String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(0), "{what}: {}", stderr(o));
        serde_json::from_str::<serde_json::Value>(&text)
            .unwrap_or_else(|e| panic!("{what}: stdout is not JSON alone ({e}): {text}"));
        assert!(!stderr(o).is_empty(), "{what}: the text went to stderr");
    };
    let o = candor()
        .args(["compare", &sa, &sb, "--json", "-"])
        .output()
        .unwrap();
    json(&o, "compare --json -");
    // An .hgrm on stdout: its lines only, the summary on stderr.
    let o = candor()
        .args(["report", &sa, "--hgrm", "-"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(out.trim_start().starts_with("Value"), "{out}");
    assert!(!out.contains("== "), "no text report in the .hgrm: {out}");
    assert!(stderr(&o).contains("== "), "the text report on stderr");
    let _serial = common::serial();
    let server = common::Server::start(&[]);
    let o = candor()
        .args([
            "sweep", "-q", "--rates", "50,100", "-d", "300ms", "--pause", "0s",
        ])
        .args(["--json", "-"])
        .arg(&server.url)
        .output()
        .unwrap();
    json(&o, "sweep --json -");
}
