//! `request()` called N times in a loop, for instruction counts under valgrind:
//! `cargo build --release -p candor-script --example call_loop`, then
//! `valgrind --tool=cachegrind target/release/examples/call_loop SCRIPT N` at two N.
use candor_script::{ScriptHost, ScriptOptions, ScriptTarget};
use std::path::PathBuf;

fn main() {
    let mut args = std::env::args().skip(1);
    let script = PathBuf::from(args.next().expect("SCRIPT"));
    let calls: u64 = args.next().and_then(|n| n.parse().ok()).expect("N");
    let jit = std::env::var_os("JIT").is_some();
    let target = ScriptTarget::url("http://127.0.0.1:8080/");
    let mut host = ScriptHost::load_with(
        &script,
        vec![],
        target,
        ScriptOptions {
            jit,
            ..Default::default()
        },
    )
    .unwrap();
    let mut thread = host.setup_threads(1).unwrap().pop().unwrap();
    let mut out = Vec::with_capacity(512);
    for _ in 0..calls {
        out.clear();
        std::hint::black_box(thread.next_request(&mut out).unwrap());
    }
}
