//! `cargo bench -p candor-harness`: the harness used from a bench target (`harness = false`).
fn main() {}
