//! docs/harness.md's first example is examples/quickstart.rs, which `cargo test` builds: this
//! test keeps the two identical, so the documented code is code that compiles.

fn first_rust_block(md: &str) -> String {
    let start = md.find("```rust\n").expect("a rust block") + "```rust\n".len();
    let len = md[start..].find("```").expect("closed block");
    md[start..start + len].to_string()
}

fn marked_region(src: &str) -> String {
    let begin = src
        .find("// BEGIN docs/harness.md\n")
        .expect("BEGIN marker");
    let begin = begin + "// BEGIN docs/harness.md\n".len();
    let end = src[begin..]
        .find("    // END docs/harness.md")
        .expect("END marker");
    src[begin..begin + end]
        .trim_end()
        .lines()
        .map(|l| l.strip_prefix("    ").unwrap_or(l))
        .map(|l| format!("{l}\n"))
        .collect()
}

#[test]
fn the_docs_first_example_is_the_compiled_quickstart() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/");
    let md = std::fs::read_to_string(format!("{root}../../docs/harness.md")).unwrap();
    let src = std::fs::read_to_string(format!("{root}examples/quickstart.rs")).unwrap();
    let block = first_rust_block(&md);
    assert_eq!(block, marked_region(&src));
    // Only candor-harness: no other crate of the workspace named.
    assert!(!block.contains("candor_core") && !src.contains("candor_core"));
}
