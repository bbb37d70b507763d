//! Formatting a log line, two ways, with latency and allocations side by side: into a fresh
//! `String` on every call (`format!`), and with `write!` into one buffer that is cleared and
//! reused. The same text either way; the first allocates on every call, the second only while
//! its buffer grows during the warm-up. The second run is also gated with
//! `max_allocations_per_iteration(0)`, as a test or `cargo bench` would gate "this path
//! allocates nothing"; the first is given the same limit to show what a failure looks like.
//!
//! `cargo run --release -p candor-harness --example log_format [-- --help]`

use candor_core::hist::value_at;
use candor_harness::{CountingAllocator, Harness, HarnessResults, Iteration};
use std::fmt::Write as _;

#[global_allocator]
static ALLOC: CountingAllocator = CountingAllocator::new();

const HELP: &str = "\
Formats a log line into a fresh String per call, then with write! into a reused buffer, at
100,000 lines/s, and prints latency and allocations per iteration side by side. Both runs are
checked with max_allocations_per_iteration(0): the fresh String fails it, the reused buffer
passes (the exit status is 1 if the reused buffer fails).

usage: cargo run --release -p candor-harness --example log_format [-- OPTIONS]
  --iterations N   iterations per measured run (default 200000)
  --runs N         measured runs per variant (default 3)
  --jitter         also run the OS jitter monitor thread
  --quiet          print only the side-by-side table, not the JLBH-style runs
  -h, --help       print this help
";

/// What a trading system might log per order.
struct Order {
    id: u64,
    symbol: &'static str,
    price: f64,
    qty: u32,
    buy: bool,
}

fn next_order(seed: &mut u64) -> Order {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    Order {
        id: *seed >> 20,
        symbol: ["EURUSD", "GBPUSD", "USDJPY"][(*seed % 3) as usize],
        price: 1.0 + (*seed % 100_000) as f64 / 100_000.0,
        qty: (*seed % 1_000) as u32 + 1,
        buy: *seed & 1 == 0,
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Variant {
    FreshString,
    ReusedBuffer,
}

impl Variant {
    fn label(self) -> &'static str {
        match self {
            Variant::FreshString => "format! into a fresh String",
            Variant::ReusedBuffer => "write! into a reused buffer",
        }
    }
}

struct Options {
    iterations: u64,
    runs: u32,
    jitter: bool,
    quiet: bool,
}

fn main() {
    match real_main() {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("log_format: {e}");
            std::process::exit(2);
        }
    }
}

fn parse_args() -> Result<Option<Options>, String> {
    let mut o = Options {
        iterations: 200_000,
        runs: 3,
        jitter: false,
        quiet: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--iterations" => {
                let v = value("--iterations")?;
                o.iterations = v.parse().map_err(|_| format!("bad --iterations {v:?}"))?;
            }
            "--runs" => {
                let v = value("--runs")?;
                o.runs = v.parse().map_err(|_| format!("bad --runs {v:?}"))?;
            }
            "--jitter" => o.jitter = true,
            "--quiet" => o.quiet = true,
            "-h" | "--help" => {
                print!("{HELP}");
                return Ok(None);
            }
            "--bench" => {}
            other => return Err(format!("unknown argument {other:?} (try --help)")),
        }
    }
    Ok(Some(o))
}

fn real_main() -> Result<i32, String> {
    let Some(o) = parse_args()? else {
        return Ok(0);
    };
    let mut all = Vec::new();
    for variant in [Variant::FreshString, Variant::ReusedBuffer] {
        if !o.quiet {
            println!("\n==== {} ====\n", variant.label());
        }
        let mut harness = Harness::builder()
            .name(variant.label())
            .throughput(100_000)
            .warmup_iterations(20_000)
            .iterations(o.iterations)
            .runs(o.runs)
            .record_os_jitter(o.jitter)
            .max_allocations_per_iteration(0)
            .print(!o.quiet)
            .build()
            .map_err(|e| e.to_string())?;
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut buf = String::new();
        let results = harness.run(move |_ctx: &mut Iteration| {
            let o = next_order(&mut seed);
            let side = if o.buy { "BUY" } else { "SELL" };
            match variant {
                Variant::FreshString => {
                    let line = format!(
                        "INFO order id={} sym={} side={} px={:.5} qty={}",
                        o.id, o.symbol, side, o.price, o.qty
                    );
                    std::hint::black_box(&line);
                }
                Variant::ReusedBuffer => {
                    buf.clear();
                    // Writing into a String cannot fail.
                    let _ = write!(
                        buf,
                        "INFO order id={} sym={} side={} px={:.5} qty={}",
                        o.id, o.symbol, side, o.price, o.qty
                    );
                    std::hint::black_box(&buf);
                }
            }
        });
        all.push((variant, results));
    }
    println!("\n==== side by side: end to end (us) and allocations per iteration, all runs ====\n");
    println!(
        "{:<30}{:>9}{:>9}{:>9}{:>9}{:>9}{:>12}{:>9}{:>11}{:>12}  check",
        "", "p50", "p99", "p99.9", "p99.99", "max", "allocs/it", "max", "bytes/it", "allocating"
    );
    let mut reused_failed = false;
    for (variant, r) in &all {
        println!("{}", row(variant.label(), r));
        if *variant == Variant::ReusedBuffer && !r.passed() {
            reused_failed = true;
        }
    }
    for (variant, r) in &all {
        println!("\n{}:\n{}", variant.label(), r.allocations_text());
    }
    Ok(if reused_failed { 1 } else { 0 })
}

fn row(label: &str, r: &HarnessResults) -> String {
    let h = r.merged_end_to_end();
    let us = |p: f64| format!("{:.2}", value_at(&h, p) as f64 / 1e3);
    let (mean, max, bytes, share) = match r.allocations() {
        Some(a) => (
            format!("{:.3}", a.per_iteration_mean()),
            a.max_per_iteration.to_string(),
            format!("{:.1}", a.bytes_per_iteration_mean()),
            format!("{:.2}%", a.allocating_share() * 100.0),
        ),
        None => ("not counted".into(), "-".into(), "-".into(), "-".into()),
    };
    format!(
        "{label:<30}{:>9}{:>9}{:>9}{:>9}{:>9}{mean:>12}{max:>9}{bytes:>11}{share:>12}  {}",
        us(50.0),
        us(99.0),
        us(99.9),
        us(99.99),
        us(100.0),
        if r.passed() { "PASS" } else { "FAIL" }
    )
}
