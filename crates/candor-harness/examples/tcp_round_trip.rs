//! A loopback TCP echo timed end to end from each round trip's intended start, with a probe for
//! each half of the trip (JLBH's "effect of throughput on latency" experiment), swept over
//! several throughputs: latency rises with throughput, first at the high percentiles, and past
//! the machine's capacity the end-to-end times grow with the queue while the halves stay short.
//!
//! `cargo run --release -p candor-harness --example tcp_round_trip [-- --rates 5000,50000,100000,200000,300000 --seconds 1 --runs 3 --quiet]`
//!
//! The client (the benchmark thread) writes 24 bytes: the iteration's stamp and its send time.
//! The server thread reads them, records client2server = now - send time through a `Sampler`,
//! and answers with its own send time; the client records server2client on reading the answer.
//! The jitter monitor is off: on a 2-core machine it would take the core the server needs.

use candor_core::hist::{value_at, Histo};
use candor_core::now_ns;
use candor_harness::{Harness, HarnessResults, Iteration};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};

const MSG: usize = 24;

const HELP: &str = "\
Times a loopback TCP echo end to end from each round trip's intended start, with a probe for
each half, at several throughputs, and prints a table of latency by throughput.

usage: cargo run --release -p candor-harness --example tcp_round_trip [-- OPTIONS]
  --rates R1,R2,..  round trips per second to sweep (default 5000,50000,100000,200000,300000)
  --seconds S       length of each run, in seconds (default 1)
  --runs N          measured runs per rate (default 3)
  --quiet           print only the final table, not each run
  -h, --help        print this help
";

struct Options {
    rates: Vec<u64>,
    seconds: f64,
    runs: u32,
    quiet: bool,
}

fn main() {
    if let Err(e) = real_main() {
        eprintln!("tcp_round_trip: {e}");
        std::process::exit(2);
    }
}

fn parse_args() -> Result<Options, String> {
    let mut o = Options {
        rates: vec![5_000, 50_000, 100_000, 200_000, 300_000],
        seconds: 1.0,
        runs: 3,
        quiet: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--rates" => {
                let v = value("--rates")?;
                o.rates = v
                    .split(',')
                    .map(|r| r.trim().parse::<u64>().ok().filter(|&r| r > 0))
                    .collect::<Option<Vec<_>>>()
                    .ok_or(format!("bad --rates {v:?} (want e.g. 5000,10000)"))?;
            }
            "--seconds" => {
                let v = value("--seconds")?;
                o.seconds = v
                    .parse::<f64>()
                    .ok()
                    .filter(|s| *s > 0.0 && s.is_finite())
                    .ok_or(format!("bad --seconds {v:?}"))?;
            }
            "--runs" => {
                let v = value("--runs")?;
                o.runs = v.parse().map_err(|_| format!("bad --runs {v:?}"))?;
            }
            "--quiet" => o.quiet = true,
            "-h" | "--help" => {
                print!("{HELP}");
                std::process::exit(0);
            }
            "--bench" => {}
            other => return Err(format!("unknown argument {other:?} (try --help)")),
        }
    }
    Ok(o)
}

fn real_main() -> Result<(), String> {
    let o = parse_args()?;
    let mut rows = Vec::new();
    for &rate in &o.rates {
        if !o.quiet {
            println!("\n==== {rate} round trips/s ====\n");
        }
        rows.push((
            rate,
            measure(rate, &o).map_err(|e| format!("at {rate}/s: {e}"))?,
        ));
    }
    println!("\nRound-trip latency by throughput (us, all runs merged; end to end is from the intended start)");
    println!(
        "{:>9} {:>10} | {:>9} {:>9} {:>9} {:>9} {:>10} | {:>8} {:>8} | {:>8} {:>8}",
        "target/s",
        "achieved/s",
        "e2e p50",
        "p90",
        "p99",
        "p99.9",
        "worst",
        "c2s p50",
        "p99",
        "s2c p50",
        "p99"
    );
    for (rate, r) in &rows {
        let e2e = r.merged_end_to_end();
        let c2s = r.merged_probe(r.probe_id("client2server").expect("registered"));
        let s2c = r.merged_probe(r.probe_id("server2client").expect("registered"));
        let achieved = r.runs().iter().map(|x| x.iterations()).sum::<u64>() as f64
            / (r.runs().iter().map(|x| x.duration_ns()).sum::<u64>() as f64 / 1e9);
        let us = |h: &Histo, p: f64| value_at(h, p) as f64 / 1e3;
        println!(
            "{:>9} {:>10.0} | {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>10.1} | {:>8.1} {:>8.1} | {:>8.1} {:>8.1}",
            rate,
            achieved,
            us(&e2e, 50.0),
            us(&e2e, 90.0),
            us(&e2e, 99.0),
            us(&e2e, 99.9),
            us(&e2e, 100.0),
            us(&c2s, 50.0),
            us(&c2s, 99.0),
            us(&s2c, 50.0),
            us(&s2c, 99.0)
        );
    }
    for (rate, r) in &rows {
        for w in r.warnings() {
            println!("at {rate}/s: warning: {w}");
        }
    }
    Ok(())
}

fn measure(rate: u64, o: &Options) -> Result<HarnessResults, String> {
    let iterations = ((rate as f64 * o.seconds) as u64).max(1);
    let mut b = Harness::builder()
        .name(format!("tcp loopback round trip at {rate}/s"))
        .throughput(rate)
        .warmup_iterations(5_000)
        .iterations(iterations)
        .runs(o.runs)
        .record_os_jitter(false)
        .print(!o.quiet);
    let c2s = b.add_probe("client2server");
    let s2c = b.add_probe("server2client");
    let mut harness = b.build().map_err(|e| e.to_string())?;

    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("bind: {e}"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let mut sampler = harness.sampler();
    let server = std::thread::spawn(move || -> std::io::Result<()> {
        let (mut s, _) = listener.accept()?;
        s.set_nodelay(true)?;
        let mut buf = [0u8; MSG];
        loop {
            match s.read_exact(&mut buf) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(()),
                Err(e) => return Err(e),
            }
            let sent = u64::from_le_bytes(buf[16..24].try_into().expect("8 bytes"));
            sampler.sample(c2s, now_ns().saturating_sub(sent));
            buf[16..24].copy_from_slice(&now_ns().to_le_bytes());
            s.write_all(&buf)?;
        }
    });
    let mut client = TcpStream::connect(addr).map_err(|e| format!("connect: {e}"))?;
    client.set_nodelay(true).map_err(|e| e.to_string())?;

    let mut io_error: Option<std::io::Error> = None;
    let results = harness.run(|ctx: &mut Iteration| {
        if io_error.is_some() {
            return;
        }
        let mut buf = [0u8; MSG];
        buf[..16].copy_from_slice(&ctx.stamp().to_bytes());
        buf[16..24].copy_from_slice(&now_ns().to_le_bytes());
        let r = client
            .write_all(&buf)
            .and_then(|_| client.read_exact(&mut buf));
        match r {
            Ok(()) => {
                let sent = u64::from_le_bytes(buf[16..24].try_into().expect("8 bytes"));
                ctx.sample(s2c, now_ns().saturating_sub(sent));
            }
            Err(e) => io_error = Some(e),
        }
    });
    drop(client);
    match server.join() {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(format!("server: {e}")),
        Err(_) => return Err("server thread panicked".into()),
    }
    if let Some(e) = io_error {
        return Err(format!("client: {e}"));
    }
    Ok(results)
}
