//! docs/harness.md's first example is examples/quickstart.rs, which `cargo test` builds: this
//! test keeps the two identical, so the documented code is the code that compiles and runs (every
//! Rust block of the page is also a doc-test of the crate, see `lib.rs`).

fn first_rust_block(md: &str) -> String {
    let start = md.find("```rust").expect("a rust block");
    let start = start + md[start..].find('\n').expect("fence line") + 1;
    let len = md[start..].find("```").expect("closed block");
    md[start..start + len].to_string()
}

/// The example without its `//!` header: the program as the doc shows it.
fn program(src: &str) -> String {
    src.lines()
        .skip_while(|l| l.starts_with("//!"))
        .skip_while(|l| l.trim().is_empty())
        .map(|l| format!("{l}\n"))
        .collect()
}

#[test]
fn the_docs_first_example_is_the_compiled_quickstart() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/");
    let md = std::fs::read_to_string(format!("{root}../../docs/harness.md")).unwrap();
    let src = std::fs::read_to_string(format!("{root}examples/quickstart.rs")).unwrap();
    let block = first_rust_block(&md);
    assert_eq!(block, program(&src));
    // A whole program, as written: nothing the reader has to guess.
    assert!(block.contains("fn main()") && block.contains("fn do_parse()"));
    // Only candor-harness: no other crate of the workspace named.
    assert!(!block.contains("candor_core") && !src.contains("candor_core"));
}
