//! Interoperability with the reference implementation, Java HdrHistogram 2.2.2 from Maven
//! Central: Java reads candor's `.hlog` and prints exactly candor's `.hgrm`, and Java and candor
//! read every reference vector (tests/data/hdrhistogram) to the same numbers and the same distribution.
//!
//! Needs `java`, `javac` and `mvn` (scripts/install-test-deps.sh installs them): ignored by a plain
//! `cargo test`, run by scripts/test.sh (`--include-ignored`), where a missing tool fails it.

use candor_report::codec::java_value_at_percentile;
use candor_report::hgrm::write_hgrm;
use candor_report::hlog::{read_hlog, write_hlog, TimeRange, TAG_SEND_LAG, TAG_SERVICE_TIME};
use candor_report::synthetic::synthetic_run;
use std::path::{Path, PathBuf};
use std::process::Command;

const JAR: &str = "HdrHistogram-2.2.2.jar";

/// A vector file, the tag to read and the relative time range.
type Case = (&'static str, Option<&'static str>, Option<(f64, f64)>);

fn have(cmd: &str) -> bool {
    Command::new(cmd)
        .arg("-version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
        || Command::new(cmd)
            .arg("--version")
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false)
}

fn work_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    let dir = target.join("java-interop");
    std::fs::create_dir_all(&dir).expect("create java-interop dir");
    dir
}

/// The jar from the local Maven repository, fetched from Maven Central when it is not there yet.
fn jar(dir: &Path) -> PathBuf {
    let local = dir.join(JAR);
    if local.exists() {
        return local;
    }
    let out = Command::new("mvn")
        .args([
            "-q",
            "-B",
            "org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy",
            "-Dartifact=org.hdrhistogram:HdrHistogram:2.2.2",
        ])
        .arg(format!("-DoutputDirectory={}", dir.display()))
        .output()
        .expect("run mvn");
    assert!(
        out.status.success() && local.exists(),
        "mvn could not fetch HdrHistogram 2.2.2: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    local
}

fn compile(dir: &Path, jar: &Path) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/java/CandorInterop.java");
    let out = Command::new("javac")
        .arg("-cp")
        .arg(jar)
        .arg("-d")
        .arg(dir)
        .arg(&src)
        .output()
        .expect("run javac");
    assert!(
        out.status.success(),
        "javac failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn java(dir: &Path, jar: &Path, args: &[&str]) -> String {
    let cp = format!("{}:{}", jar.display(), dir.display());
    let out = Command::new("java")
        .arg("-cp")
        .arg(cp)
        .args(args)
        .output()
        .expect("run java");
    assert!(
        out.status.success(),
        "java {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What CandorInterop prints, computed by candor.
fn candor_view(text: &str, tag: Option<&str>, range: TimeRange) -> String {
    let log = read_hlog(text, &range).expect("candor reads the log");
    let total = log.total(tag);
    format!(
        "intervals {} count {} p99.9 {} max {}\n{}",
        log.stream(tag).count(),
        total.len(),
        java_value_at_percentile(&total, 99.9),
        if total.is_empty() { 0 } else { total.max() },
        write_hgrm(&total, 5, 1e6)
    )
}

#[test]
#[ignore = "needs Java and Maven: scripts/test.sh"]
fn java_hdrhistogram_agrees_with_candor() {
    let missing: Vec<&str> = ["java", "javac", "mvn"]
        .into_iter()
        .filter(|c| !have(c))
        .collect();
    assert!(
        missing.is_empty(),
        "{missing:?} not installed: run scripts/install-test-deps.sh"
    );
    let dir = work_dir();
    let jar = jar(&dir);
    compile(&dir, &jar);

    // 1. candor writes, Java's own HistogramLogProcessor reads: identical percentile distributions.
    let run = synthetic_run(7, 20, 1500, 900_000, 6);
    let hlog = dir.join("candor-run.hlog");
    std::fs::write(&hlog, write_hlog(&run)).unwrap();
    let main = run.main.histograms.decode().unwrap();
    for (tag, h) in [
        (None, &main.response),
        (Some(TAG_SERVICE_TIME), &main.service),
        (Some(TAG_SEND_LAG), &main.send_lag),
    ] {
        let out = dir.join(format!("processor-{}", tag.unwrap_or("untagged")));
        let mut args = vec![
            "org.HdrHistogram.HistogramLogProcessor",
            "-i",
            hlog.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ];
        if let Some(t) = tag {
            args.extend(["-tag", t]);
        }
        java(&dir, &jar, &args);
        let java_hgrm =
            std::fs::read_to_string(out.with_extension("hgrm")).expect("processor wrote .hgrm");
        // The processor prefixes two header lines of its own.
        let java_body: String = java_hgrm
            .lines()
            .skip(2)
            .map(|l| format!("{l}\n"))
            .collect();
        let ours = write_hgrm(h, 5, 1e6);
        assert_eq!(
            java_body, ours,
            "{tag:?}: Java's distribution of candor's log differs from candor's"
        );
        eprintln!(
            "HistogramLogProcessor {:<14} count {:>6} p99.9 {:>10} max {:>10}: .hgrm identical to candor's ({} lines)",
            tag.unwrap_or("(untagged)"),
            h.len(),
            candor_core::hist::value_at(h, 99.9),
            h.max(),
            ours.lines().count()
        );
    }
    // ...and with a relative range, Java's -start/-end against candor's TimeRange.
    let text = std::fs::read_to_string(&hlog).unwrap();
    let java_out = java(
        &dir,
        &jar,
        &["CandorInterop", hlog.to_str().unwrap(), "-", "5", "12"],
    );
    assert_eq!(
        java_out,
        candor_view(&text, None, TimeRange::relative(Some(5.0), Some(12.0)))
    );

    // 2. Every reference vector: Java's reader and candor's give the same numbers and distribution.
    let vectors = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/hdrhistogram/");
    let cases: &[Case] = &[
        ("jHiccup-2.0.7S.logV2.hlog", None, None),
        ("jHiccup-2.0.7S.logV2.hlog", None, Some((5.0, 20.0))),
        ("jHiccup-2.0.6.logV1.hlog", None, None),
        ("jHiccup-2.0.6.logV1.hlog", None, Some((50.0, 80.0))),
        ("jHiccup-2.0.1.logV0.hlog", None, None),
        ("jHiccup-2.0.1.logV0.hlog", None, Some((20.0, 45.0))),
        ("ycsb.logV1.hlog", None, None),
        ("ycsb.logV1.hlog", None, Some((180.0, 700.0))),
        ("tagged-Log.logV2.hlog", None, None),
        ("tagged-Log.logV2.hlog", Some("A"), None),
    ];
    for (file, tag, range) in cases {
        let path = format!("{vectors}{file}");
        let text = std::fs::read_to_string(&path).unwrap();
        let mut args = vec![
            "CandorInterop".to_string(),
            path.clone(),
            tag.unwrap_or("-").to_string(),
        ];
        let r = match range {
            Some((s, e)) => {
                args.push(s.to_string());
                args.push(e.to_string());
                TimeRange::relative(Some(*s), Some(*e))
            }
            None => TimeRange::default(),
        };
        let args_ref: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
        let java_out = java(&dir, &jar, &args_ref);
        let ours = candor_view(&text, *tag, r);
        assert_eq!(java_out, ours, "{file} {tag:?} {range:?}");
        eprintln!(
            "{file:<27} {:<4} {:<12} Java == candor: {}",
            tag.unwrap_or("-"),
            format!("{range:?}"),
            java_out.lines().next().unwrap_or("")
        );
    }
}
