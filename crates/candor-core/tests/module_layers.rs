//! candor-core's modules form layers: no module reaches, directly or through others, back to
//! itself (the results contract once had results <-> recorded <-> workload_results).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Each module's `crate::` references outside comments and its `#[cfg(test)]` module.
fn module_edges(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut edges = BTreeMap::new();
    for entry in std::fs::read_dir(src).expect("src/") {
        let path = entry.expect("an entry").path();
        let name = path
            .file_stem()
            .expect("a name")
            .to_string_lossy()
            .to_string();
        if path.extension().is_none_or(|e| e != "rs") || name == "lib" {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("a source file");
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        let mut uses = BTreeSet::new();
        for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
            for (i, _) in line.match_indices("crate::") {
                let rest = &line[i + "crate::".len()..];
                let module: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !module.is_empty() && module != name {
                    uses.insert(module);
                }
            }
        }
        edges.insert(name, uses);
    }
    edges
}

/// A cycle through `from`, as the path of modules, if there is one.
fn cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        m: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == m) {
            let mut c = path[at..].to_vec();
            c.push(m.to_string());
            return Some(c);
        }
        if done.contains(m) {
            return None;
        }
        path.push(m.to_string());
        for next in edges.get(m).into_iter().flatten() {
            if let Some(c) = visit(next, edges, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(m.to_string());
        None
    }
    let mut done = BTreeSet::new();
    edges
        .keys()
        .find_map(|m| visit(m, edges, &mut Vec::new(), &mut done))
}

#[test]
fn no_module_of_candor_core_depends_on_itself_through_others() {
    let edges = module_edges(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    assert!(edges.contains_key("results"), "{edges:?}");
    assert_eq!(cycle(&edges), None, "{edges:?}");
}

#[test]
fn the_cycle_finder_finds_a_circle_of_three() {
    let edge = |a: &str, b: &[&str]| (a.to_string(), b.iter().map(|s| s.to_string()).collect());
    let edges: BTreeMap<String, BTreeSet<String>> = [
        edge("results", &["recorded", "hist"]),
        edge("recorded", &["workload_results"]),
        edge("workload_results", &["results"]),
        edge("hist", &[]),
    ]
    .into_iter()
    .collect();
    assert_eq!(
        cycle(&edges).expect("a cycle"),
        ["recorded", "workload_results", "results", "recorded"]
    );
    let mut broken = edges.clone();
    broken.insert("workload_results".into(), BTreeSet::new());
    assert_eq!(cycle(&broken), None);
}

/// The `[dependencies]` of a workspace crate, by name.
fn dependencies_of(krate: &str) -> BTreeSet<String> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(krate)
        .join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest).expect("a manifest");
    let section = text
        .split("\n[")
        .find(|s| s.starts_with("dependencies]"))
        .expect("a [dependencies] section");
    section
        .lines()
        .skip(1)
        .filter_map(|l| l.split(['=', '.']).next())
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty() && !n.starts_with('#'))
        .collect()
}

#[test]
fn the_engine_returns_numbers_and_depends_on_no_analysis_or_report() {
    // Verdicts, English and results files are built above the engine (candor-runner).
    let deps = dependencies_of("candor-load");
    assert!(deps.contains("candor-core"), "{deps:?}");
    for above in ["candor-analysis", "candor-report", "candor-runner"] {
        assert!(
            !deps.contains(above),
            "candor-load depends on {above}: {deps:?}"
        );
    }
}
