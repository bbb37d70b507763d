//! `cargo bench -p candor-harness`: the harness driven from a bench target (`harness = false`),
//! here timing a binary search in a sorted 4,096-entry table at 100,000 lookups/s.

use candor_harness::{Harness, Iteration};

fn main() {
    // Cargo passes `--bench` (and any filter); this target has one benchmark and ignores them.
    let table: Vec<u64> = (0..4096u64).map(|i| i * 7 + 3).collect();
    let mut harness = match Harness::builder()
        .name("binary search, 4096 entries")
        .throughput(100_000)
        .warmup_iterations(50_000)
        .iterations(200_000)
        .runs(3)
        .build()
    {
        Ok(h) => h,
        Err(e) => {
            eprintln!("bench: {e}");
            std::process::exit(2);
        }
    };
    let mut key = 1u64;
    // The harness prints the runs, the summary and any warnings.
    harness.run(move |_ctx: &mut Iteration| {
        key = key
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let probe = (key >> 33) % (4096 * 7 + 3);
        std::hint::black_box(table.binary_search(&probe).is_ok());
    });
}
