//! Nanoseconds per `ThreadScript::next_request` in steady state: the dynamic script of
//! bench/scripts/dynamic_request.lua (a new path and header each call) with LuaJIT's compiler on
//! and off, beside a request() that returns a string built once (the cost of the call itself)
//! and a script without request() (the fixed request, no Lua call). Reported as the
//! thread's CPU time per call (what a busy shared machine does not inflate) and wall time.
//!
//! `cargo bench -p candor-script --bench next_request [-- --calls N]`

use candor_script::{ScriptHost, ScriptOptions, ScriptTarget};
use std::path::{Path, PathBuf};
use std::time::Instant;

fn main() {
    let mut calls: u64 = 1_000_000;
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
    let fixed = dir.join("fixed.lua");
    std::fs::write(&fixed, "wrk.path = \"/fixed\"\n").unwrap();
    let prebuilt = dir.join("prebuilt.lua");
    std::fs::write(
        &prebuilt,
        "local req = wrk.format(nil, \"/prebuilt\")\nfunction request() return req end\n",
    )
    .unwrap();

    let jit = ScriptOptions {
        jit: true,
        ..Default::default()
    };
    let no_jit = ScriptOptions::default();
    println!("{calls} calls after as many warm-up calls");
    println!(
        "{:<36} {:>12} {:>12} {:>14}",
        "script", "cpu ns/call", "wall ns/call", "in Lua ns/call"
    );
    for (label, path, options) in [
        ("dynamic request(), JIT on", dynamic.as_path(), jit),
        ("dynamic request(), JIT off", dynamic.as_path(), no_jit),
        (
            "request() returns a prebuilt string",
            prebuilt.as_path(),
            no_jit,
        ),
        ("no request() (fixed bytes)", fixed.as_path(), no_jit),
    ] {
        let m = measure(path, options, calls);
        println!(
            "{label:<36} {:>12.1} {:>12.1} {:>14.1}",
            m.cpu, m.wall, m.lua
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

struct PerCall {
    cpu: f64,
    wall: f64,
    lua: f64,
}

fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec to write; the thread CPU clock always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn measure(script: &Path, options: ScriptOptions, calls: u64) -> PerCall {
    let target = ScriptTarget::url("http://127.0.0.1:8080/");
    let mut host = ScriptHost::load_with(script, vec![], target, options).unwrap();
    let mut thread = host.setup_threads(1).unwrap().pop().unwrap();
    let mut out = Vec::with_capacity(512);
    for _ in 0..calls {
        out.clear();
        thread.next_request(&mut out).unwrap();
    }
    let lua_before = thread.total_lua_ns();
    let cpu_before = thread_cpu_ns();
    let start = Instant::now();
    for _ in 0..calls {
        out.clear();
        std::hint::black_box(thread.next_request(&mut out).unwrap());
    }
    let wall = start.elapsed().as_nanos() as f64;
    let cpu = (thread_cpu_ns() - cpu_before) as f64;
    let lua = (thread.total_lua_ns() - lua_before) as f64;
    let n = calls as f64;
    PerCall {
        cpu: cpu / n,
        wall: wall / n,
        lua: lua / n,
    }
}
