//! The first example of docs/harness.md, compiled: everything below this header is the doc's
//! block as written (tests/docs_example.rs checks they are identical, and the doc's blocks are
//! doc-tests of candor-harness). It uses nothing but `candor-harness`. Run it with
//! `cargo run --release -p candor-harness --example quickstart`.

/// Stands for the first stage of the code under test.
fn do_parse() {
    std::hint::black_box((0..200u64).sum::<u64>());
}

/// Stands for the rest of it.
fn do_rest() {
    std::hint::black_box((0..800u64).product::<u64>());
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    use candor_harness::{now_ns, Harness, Iteration};

    let mut builder = Harness::builder()
        .name("parse then rest") // printed on every run and summary, `target` in the JSON
        .throughput(100_000) // iterations per second
        .warmup_iterations(40_000)
        .iterations(1_000_000) // per run
        .runs(3)
        .account_for_coordinated_omission(true)
        .record_os_jitter(true)
        .jitter_threshold_ns(1_000)
        .pause_after_warmup(std::time::Duration::from_millis(100));
    let parse = builder.add_probe("parse"); // -> ProbeId
    let mut harness = builder.build()?; // validates the settings
    let results = harness.run(|ctx: &mut Iteration| {
        let t = now_ns();
        do_parse();
        ctx.sample(parse, now_ns() - t);
        do_rest();
        // returning ends the iteration; or call ctx.end_now() / ctx.sample_end_to_end(end_ns)
    });
    results.write_json("bench.json")?; // same JSON model as `candor run`, kind "harness"
    results.write_hlog("bench.hlog")?; // HdrHistogram interval log (Java tools read it)
    results.write_html("bench.html", "my bench")?; // the HTML report of `candor report -o`
    Ok(())
}
