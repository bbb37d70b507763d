//! A plain function benchmark: sorting a 64-element array, 50,000 times a second, three runs of
//! 100,000. Each call is timed from its intended start, so a call delayed by the one before it
//! (or by the machine) counts its wait.
//!
//! `cargo run --release -p candor-harness --example function [-- --json results.json]`

use candor_harness::{Harness, Iteration};

const HELP: &str = "\
Benchmarks sorting a 64-element array at 50,000 calls/s (3 runs of 100,000), each call timed
from its intended start, and prints JLBH-style results.

usage: cargo run --release -p candor-harness --example function [-- OPTIONS]
  --json PATH   also write the results JSON (candor's results model) to PATH
  -h, --help    print this help
";

fn main() {
    let mut json: Option<String> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--json" => match args.next() {
                Some(p) => json = Some(p),
                None => fail("--json needs a path"),
            },
            "-h" | "--help" => {
                print!("{HELP}");
                return;
            }
            "--bench" => {}
            other => fail(&format!("unknown argument {other:?} (try --help)")),
        }
    }
    let mut harness = match Harness::builder()
        .name("sort 64 u32")
        .throughput(50_000)
        .warmup_iterations(20_000)
        .iterations(100_000)
        .runs(3)
        .build()
    {
        Ok(h) => h,
        Err(e) => fail(&e.to_string()),
    };
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let results = harness.run(move |_ctx: &mut Iteration| {
        let mut a = [0u32; 64];
        for x in a.iter_mut() {
            // xorshift: different input every call, no allocation.
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            *x = seed as u32;
        }
        a.sort_unstable();
        std::hint::black_box(&a);
    });
    if let Some(path) = json {
        match results.write_json(&path) {
            Ok(()) => println!("wrote {path}"),
            Err(e) => fail(&e.to_string()),
        }
    }
}

fn fail(msg: &str) -> ! {
    eprintln!("function: {msg}");
    std::process::exit(2);
}
