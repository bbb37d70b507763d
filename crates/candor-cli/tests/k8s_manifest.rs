//! The manifest `candor k8s` prints, checked offline against the Kubernetes API schema by
//! `kubernetes-validate` (PyPI; it bundles the schemas, so no cluster and no network are needed;
//! scripts/install-test-deps.sh installs it). The tests are ignored by a plain `cargo test` and
//! run by scripts/test.sh (`--include-ignored`), where a missing validator fails them.

mod common;
use common::candor;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Kubernetes version validated against: a release still common in production clusters, which
/// has every field the manifest uses (Indexed Jobs are GA since 1.24).
const K8S_VERSION: &str = "1.30.0";
const START_AT: &str = "2026-11-22T01:00:00Z";

/// The validator's command: the console script, or the module through python3 when pip put the
/// script outside PATH (`pip install --user`).
fn validator() -> Vec<String> {
    let candidates: [&[&str]; 2] = [
        &["kubernetes-validate"],
        &["python3", "-m", "kubernetes_validate"],
    ];
    for c in candidates {
        let works = Command::new(c[0])
            .args(&c[1..])
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if works {
            return c.iter().map(|s| s.to_string()).collect();
        }
    }
    panic!(
        "kubernetes-validate is not installed: run scripts/install-test-deps.sh \
         (pip install kubernetes-validate)"
    );
}

/// A scratch directory of one test (tests run in parallel and each removes its own).
fn dir(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("candor-k8s-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn k8s(args: &[&str]) -> String {
    let out = candor()
        .arg("k8s")
        .args(["--start-at", START_AT])
        .args(args)
        .output()
        .expect("run candor k8s");
    assert!(
        out.status.success(),
        "candor k8s {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn validate(v: &[String], file: &Path) -> (bool, String) {
    let out = Command::new(&v[0])
        .args(&v[1..])
        .args(["--strict", "-k", K8S_VERSION])
        .arg(file)
        .output()
        .expect("run kubernetes-validate");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

const VARIANTS: [&[&str]; 4] = [
    // Shared volume and logs.
    &[
        "--shards", "4", "--image", "ghcr.io/x/candor:0.1", "--pvc", "candor-results", "--", "-R",
        "40k", "-c", "64", "-d", "60s", "http://svc:8080/",
    ],
    // Logs only, Guaranteed QoS, awkward header text, a body YAML 1.1 reads as a boolean.
    &[
        "--shards", "2", "--image", "registry.local:5000/candor@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        "--name", "checkout-load", "--namespace", "perf", "--cpu", "1500m", "--memory", "1Gi",
        "--guaranteed", "--", "-R", "2k", "-H", "X-Note: a: b # c \"q\" $(HOME)", "--body", "on",
        "http://svc/",
    ],
    // No shell in the image: volume only.
    &[
        "--shards", "8", "--image", "candor:latest", "--pvc", "r", "--no-shell", "--binary",
        "/usr/local/bin/candor", "--", "-R", "80k", "-t", "4", "-c", "128", "--warmup", "10s",
        "http://svc:8080/checkout",
    ],
    // Live view: container port and scrape annotations.
    &[
        "--shards", "3", "--image", "candor:latest", "--live-port", "9464", "--", "-R", "3k",
        "http://svc:8080/",
    ],
];

#[test]
#[ignore = "needs kubernetes-validate (Python): scripts/test.sh"]
fn manifests_validate_against_the_kubernetes_schema() {
    let v = validator();
    let d = dir("manifests");
    for (i, args) in VARIANTS.iter().enumerate() {
        let file = d.join(format!("job-{i}.yaml"));
        std::fs::write(&file, k8s(args)).unwrap();
        let (ok, text) = validate(&v, &file);
        eprintln!("{}", text.trim());
        assert!(ok, "manifest {i} ({args:?}) does not validate:\n{text}");
        assert!(text.contains("passed for resource job/"), "{text}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// The validator is not a rubber stamp: a misspelt field, a wrong type and a string where the
/// schema wants an integer are all refused under --strict.
#[test]
#[ignore = "needs kubernetes-validate (Python): scripts/test.sh"]
fn the_validator_refuses_broken_manifests() {
    let v = validator();
    let d = dir("refuses");
    let good = k8s(VARIANTS[0]);
    for (from, to) in [
        ("\"completionMode\":", "\"completionMod\":"),
        ("\"backoffLimit\": 0", "\"backoffLimit\": \"zero\""),
        (
            "\"restartPolicy\": \"Never\"",
            "\"restartPolicy\": [\"Never\"]",
        ),
    ] {
        assert!(good.contains(from), "{from} not in the manifest");
        let file = d.join("broken.yaml");
        std::fs::write(&file, good.replacen(from, to, 1)).unwrap();
        let (ok, text) = validate(&v, &file);
        assert!(!ok, "validator accepted '{to}':\n{text}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// The YAML reads back (with the validator's own YAML parser, PyYAML) as exactly the JSON form of
/// the same manifest: quoting and indentation lose nothing, however odd the user's text.
#[test]
#[ignore = "needs kubernetes-validate (Python): scripts/test.sh"]
fn yaml_reads_back_as_the_json_manifest() {
    validator();
    let d = dir("yaml");
    for (i, args) in VARIANTS.iter().enumerate() {
        let yaml_file = d.join(format!("rt-{i}.yaml"));
        std::fs::write(&yaml_file, k8s(args)).unwrap();
        let mut json_args = vec!["--format", "json"];
        json_args.extend_from_slice(args);
        let json: serde_json::Value = serde_json::from_str(&k8s(&json_args)).unwrap();
        let out = Command::new("python3")
            .args([
                "-c",
                "import json, sys, yaml; docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d is not None]; print(json.dumps(docs))",
            ])
            .arg(&yaml_file)
            .output()
            .expect("python3 (installed with kubernetes-validate)");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let docs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(docs, serde_json::json!([json]), "variant {i}");
    }
    let _ = std::fs::remove_dir_all(&d);
}
