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
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    cmd.stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap()
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
}
