//! Nanoseconds per `ThreadScript::next_request` in steady state: the dynamic script of
//! bench/scripts/dynamic_request.lua (a new path and header each call), beside a script without
//! request() (the fixed request, no Lua call), with LuaJIT's compiler on and off.
//!
//! `cargo bench -p candor-script --bench next_request [-- --calls N]`

use candor_script::{ScriptHost, Target};
use std::path::{Path, PathBuf};
use std::time::Instant;

fn main() {
    let mut calls: u64 = 2_000_000;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--calls" {
            calls = args.next().and_then(|n| n.parse().ok()).expect("--calls N");
        }
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dynamic = root.join("bench/scripts/dynamic_request.lua");
    let dir = std::env::temp_dir().join(format!("candor-script-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let source = std::fs::read_to_string(&dynamic).unwrap();
    let interpreted = dir.join("dynamic_request_jit_off.lua");
    std::fs::write(&interpreted, format!("jit.off()\n{source}")).unwrap();
    let fixed = dir.join("fixed.lua");
    std::fs::write(&fixed, "wrk.path = \"/fixed\"\n").unwrap();

    println!("{:<36} {:>10} {:>12}", "script", "ns/call", "lua ns/call");
    for (label, path) in [
        ("dynamic request(), JIT on", dynamic.as_path()),
        ("dynamic request(), JIT off", interpreted.as_path()),
        ("no request() (fixed bytes)", fixed.as_path()),
    ] {
        let (per_call, lua) = measure(path, calls);
        println!("{label:<36} {per_call:>10.1} {lua:>12.1}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// Mean ns per call over `calls` calls after as many warm-up calls (JIT compiled, buffer grown).
fn measure(script: &Path, calls: u64) -> (f64, f64) {
    let mut host = ScriptHost::load(script, vec![], Target::url("http://127.0.0.1:8080/")).unwrap();
    let mut thread = host.setup_threads(1).unwrap().pop().unwrap();
    let mut out = Vec::with_capacity(512);
    for _ in 0..calls {
        out.clear();
        thread.next_request(&mut out).unwrap();
    }
    let lua_before = thread.total_lua_ns();
    let start = Instant::now();
    for _ in 0..calls {
        out.clear();
        std::hint::black_box(thread.next_request(&mut out).unwrap());
    }
    let elapsed = start.elapsed().as_nanos() as f64;
    let lua = (thread.total_lua_ns() - lua_before) as f64;
    (elapsed / calls as f64, lua / calls as f64)
}
