//! The JLBH coordinated-omission example: 100,000 iterations/s, and every 10,000th iteration
//! busy-waits 1 ms. Run with correction on, then off, and compare with docs/truth.md ("In-process hiccup"):
//! corrected, 1% of samples are affected (p99 at the edge, p99.9 ~0.9 ms, p99.99 ~1 ms);
//! uncorrected, only 1 in 10,000 is slow (p99.9 sub-microsecond, p99.99 at the 1 ms edge).
//!
//! `cargo run --release -p candor-harness --example hiccup [-- --help]`
//! Defaults: 3 runs of 400,000 iterations per mode (about 25 s in all).
//! bench/jlbh_parity.py runs it beside JLBH's own version of the example.

use candor_core::hist::value_at;
use candor_core::now_ns;
use candor_harness::{Harness, HarnessResults, Iteration, Phase};

const HELP: &str = "\
JLBH's coordinated-omission example: 100,000 iterations/s, every 10,000th iteration busy-waits
1 ms. Runs it with correction on, then off, and compares the end-to-end times with the expected
distributions of docs/truth.md (\"In-process hiccup\").

usage: cargo run --release -p candor-harness --example hiccup [-- OPTIONS]
  --iterations N     iterations per measured run (default 400000)
  --runs N           measured runs per mode (default 3)
  --correction MODE  on, off or both (default both)
  --no-jitter        do not run the OS jitter monitor thread (it spins on a core of its own;
                     on a machine with 2 cores it competes with the benchmark thread)
  --json DIR         write hiccup-correction-on.json and -off.json (with .hlog and .html) to DIR
  --forgive-wait-stalls
                     JLBH's accounting of machine stalls: a stall of the benchmark thread while
                     it waits for the schedule restarts the schedule instead of delaying the
                     iterations due during it (see Config::forgive_wait_stalls)
  --catch-up-cost    instead, measure what one queued iteration costs the harness: every
                     iteration already late (1e9/s), the benchmark only records its end; prints
                     run time / iterations per run (default 5000000 iterations; JLBH's
                     counterpart is bench/jlbh/JlbhHiccup.java `cost`)
  -h, --help         print this help
";

const HICCUP_EVERY: u64 = 10_000;
const HICCUP_NS: u64 = 1_000_000;

fn main() {
    if let Err(e) = real_main() {
        eprintln!("hiccup: {e}");
        std::process::exit(2);
    }
}

fn real_main() -> Result<(), String> {
    let mut iterations = 400_000u64;
    let mut runs = 3u32;
    let mut json_dir: Option<String> = None;
    let mut jitter = true;
    let mut modes = vec![true, false];
    let mut catch_up_cost = false;
    let mut forgive = false;
    let mut iterations_given = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--iterations" => {
                let v = value("--iterations")?;
                iterations = v.parse().map_err(|_| format!("bad --iterations {v:?}"))?;
                iterations_given = true;
            }
            "--runs" => {
                let v = value("--runs")?;
                runs = v.parse().map_err(|_| format!("bad --runs {v:?}"))?;
            }
            "--json" => json_dir = Some(value("--json")?),
            "--correction" => {
                modes = match value("--correction")?.as_str() {
                    "on" => vec![true],
                    "off" => vec![false],
                    "both" => vec![true, false],
                    v => return Err(format!("bad --correction {v:?} (want on, off or both)")),
                }
            }
            "--no-jitter" => jitter = false,
            "--catch-up-cost" => catch_up_cost = true,
            "--forgive-wait-stalls" => forgive = true,
            "-h" | "--help" => {
                print!("{HELP}");
                return Ok(());
            }
            "--bench" => {}
            other => return Err(format!("unknown argument {other:?} (try --help)")),
        }
    }
    if catch_up_cost {
        return measure_catch_up_cost(
            if iterations_given {
                iterations
            } else {
                5_000_000
            },
            runs,
        );
    }
    let mut all = Vec::new();
    for correct in modes {
        println!(
            "\n==== coordinated-omission correction {} ====\n",
            if correct { "ON" } else { "OFF" }
        );
        let mut harness = Harness::builder()
            .name(format!(
                "hiccup (correction {})",
                if correct { "on" } else { "off" }
            ))
            .throughput(100_000)
            .warmup_iterations(40_000)
            .iterations(iterations)
            .runs(runs)
            .account_for_coordinated_omission(correct)
            .forgive_wait_stalls(forgive)
            .record_os_jitter(jitter)
            .jitter_threshold_ns(1_000)
            .build()
            .map_err(|e| e.to_string())?;
        // Counts across warm-up and runs, as JLBH's example does.
        let mut count = 0u64;
        let results = harness.run(move |ctx: &mut Iteration| {
            if count.is_multiple_of(HICCUP_EVERY) {
                let until = now_ns() + HICCUP_NS;
                while now_ns() < until {
                    std::hint::spin_loop();
                }
            }
            count += 1;
            ctx.end_now();
        });
        if let Some(dir) = &json_dir {
            let path = format!(
                "{dir}/hiccup-correction-{}.json",
                if correct { "on" } else { "off" }
            );
            results.write_json(&path).map_err(|e| e.to_string())?;
            let hlog = path.replace(".json", ".hlog");
            results.write_hlog(&hlog).map_err(|e| e.to_string())?;
            let html = path.replace(".json", ".html");
            results
                .write_html(
                    &html,
                    &format!("hiccup, correction {}", if correct { "on" } else { "off" }),
                )
                .map_err(|e| e.to_string())?;
            println!("wrote {path}, {hlog}, {html}");
        }
        all.push((correct, results));
    }
    println!("\n==== against docs/truth.md, In-process hiccup (all runs merged) ====");
    for (correct, r) in &all {
        check(*correct, r);
    }
    Ok(())
}

/// The harness's own cost per iteration while it catches up (no pacing wait, nothing measured
/// but the end): after a hiccup, each queued iteration adds this to the ones behind it, so with
/// 100 queued per hiccup the corrected p99 sits about 100 times this above the edge.
fn measure_catch_up_cost(iterations: u64, runs: u32) -> Result<(), String> {
    let mut harness = Harness::builder()
        .name("catch-up cost")
        .throughput(1_000_000_000)
        .warmup_iterations(1_000_000)
        .iterations(iterations)
        .runs(runs)
        .record_os_jitter(false)
        .print(false)
        .build()
        .map_err(|e| e.to_string())?;
    let r = harness.run(|ctx: &mut Iteration| {
        ctx.end_now();
    });
    for run in r.runs() {
        println!(
            "catch-up cost run {}: {:.1} ns/iteration ({} iterations in {:.3}s)",
            match run.phase() {
                Phase::Run(n) => n,
                Phase::Warmup => 0,
            },
            run.duration_ns() as f64 / run.iterations() as f64,
            run.iterations(),
            run.duration_ns() as f64 / 1e9
        );
    }
    Ok(())
}

fn check(correct: bool, r: &HarnessResults) {
    let h = r.merged_end_to_end();
    let us = |p: f64| value_at(&h, p) as f64 / 1e3;
    let slow = h.count_between(500_000, u64::MAX);
    let per_hiccup = slow as f64 / (h.len() as f64 / HICCUP_EVERY as f64);
    println!(
        "correction {:<3}: {} samples  p50 {:.2}us  p99 {:.2}us  p99.9 {:.1}us  p99.99 {:.1}us  max {:.1}us  \
         samples >= 0.5ms per hiccup {:.1} (expected {})",
        if correct { "on" } else { "off" },
        h.len(),
        us(50.0),
        us(99.0),
        us(99.9),
        us(99.99),
        us(100.0),
        per_hiccup,
        if correct { "~50: the hiccup and the next 49 queued iterations" } else { "~1: the hiccup only" }
    );
    let hiccups = h.len() as f64 / HICCUP_EVERY as f64;
    let bands: Vec<String> = (0..11u64)
        .map(|b| {
            let n = h.count_between(b * 100_000, (b + 1) * 100_000 - 1);
            format!("{:.1}", n as f64 / hiccups)
        })
        .collect();
    println!(
        "    samples per hiccup in 100us bands from 0 to 1.1ms (expected {}): {}",
        if correct {
            "~10 in each band up to 1ms, the first band also holds the normal samples"
        } else {
            "0 except the first band and the one holding 1ms"
        },
        bands.join(" ")
    );
    for run in r.runs() {
        let h = run.end_to_end();
        let us = |p: f64| value_at(h, p) as f64 / 1e3;
        println!(
            "    run {}: p99 {:.2}us p99.9 {:.2}us p99.99 {:.2}us max {:.2}us",
            match run.phase() {
                Phase::Run(n) => n,
                Phase::Warmup => 0,
            },
            us(99.0),
            us(99.9),
            us(99.99),
            us(100.0)
        );
    }
}
