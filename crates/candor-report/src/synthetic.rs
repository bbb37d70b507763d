//! Deterministic synthetic results for tests, snapshots and demos of the reports: a plausible
//! latency distribution (log-normal-ish body, a slow tail and periodic stalls) made from a fixed
//! seed, so the same call always gives byte-identical output.

use candor_core::results::{
    EncodedHistograms, Environment, Interval, IntervalStats, Kind, Mode, PhaseResults,
    RequestCounts, RunResults, StatusCounts,
};
use candor_core::{new_histogram, Recorder};

/// SplitMix64: tiny, deterministic, good enough to shape test data.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A run of `seconds` one-second intervals at `rate` requests/s with typical latency `base_ns`
/// (one warm-up second first). `stall_every` > 0 adds a stall in every such interval.
pub fn synthetic_run(
    seed: u64,
    seconds: u32,
    rate: u64,
    base_ns: u64,
    stall_every: u32,
) -> RunResults {
    let mut rng = Rng(seed);
    let mut main = Recorder::new();
    let mut warm = Recorder::new();
    let mut intervals = Vec::new();
    let mut completed_total = 0;
    for sec in 0..=seconds {
        let warmup = sec == 0;
        let mut r = Recorder::new();
        let stall = stall_every > 0 && sec > 0 && sec % stall_every == 0;
        for i in 0..rate {
            let u = rng.unit().max(1e-12);
            // Exponential-ish body with a heavy tail: -ln(u) has mean 1.
            let mut service = (base_ns as f64 * (0.6 + 0.5 * -u.ln())) as u64;
            if rng.unit() < 0.002 {
                service *= 8;
            }
            let mut lag = 2_000 + (rng.unit() * 20_000.0) as u64;
            if stall && i < rate / 10 {
                // Requests queued behind a stall wait for it: that wait is send lag.
                lag += (rate / 10 - i) * 1_000_000_000 / rate;
            }
            r.record(service + lag, service, lag);
        }
        completed_total += if warmup { 0 } else { rate };
        let stats = |h| IntervalStats::of(h);
        intervals.push(Interval {
            start_s: sec as f64,
            length_s: 1.0,
            warmup,
            completed: rate,
            failed: if stall { 3 } else { 0 },
            response_time: stats(&r.response),
            service_time: stats(&r.service),
            send_lag: stats(&r.send_lag),
            first_byte: IntervalStats::of_recorded(&r.first_byte),
            histograms: EncodedHistograms::of(&r),
            stream: None,
        });
        if warmup {
            warm.add(&r);
        } else {
            main.add(&r);
        }
    }
    let failed = intervals
        .iter()
        .filter(|i| !i.warmup)
        .map(|i| i.failed)
        .sum::<u64>();
    let requests = RequestCounts {
        intended: completed_total + failed,
        completed: completed_total,
        failed,
        errors: candor_core::results::ErrorCounts {
            timeout: failed,
            ..Default::default()
        },
        status: StatusCounts {
            s2xx: completed_total,
            ..Default::default()
        },
        bytes_written: completed_total * 80,
        bytes_read: completed_total * 120,
        ..Default::default()
    };
    let warm_requests = RequestCounts {
        intended: rate,
        completed: rate,
        ..Default::default()
    };
    let duration = seconds as f64;
    RunResults {
        candor_version: "0.1.0".into(),
        command_line: vec![
            "candor".into(),
            "run".into(),
            format!("--rate={rate}"),
            format!("--duration={seconds}s"),
            "http://127.0.0.1:8080/".into(),
        ],
        start_time_unix_s: 1_767_225_600.0 + seed as f64,
        environment: Environment {
            cpu_model: "Synthetic CPU @ 3.00GHz".into(),
            cores: 8,
            kernel: "6.1.0-synthetic".into(),
            hostname: "testhost".into(),
        },
        warmup: Some(PhaseResults::from_recorder(
            &warm,
            &new_histogram(),
            warm_requests,
            1.0,
            Some(rate as f64),
        )),
        intervals,
        ..RunResults::new(
            Kind::Run,
            Mode::OpenLoop,
            "http://127.0.0.1:8080/",
            serde_json::json!({
                "rate": rate, "duration_s": seconds, "warmup_s": 1, "connections": 16, "timeout_ms": 2000,
            }),
            PhaseResults::from_recorder(
                &main,
                &new_histogram(),
                requests,
                duration,
                Some(rate as f64),
            ),
        )
    }
}

/// [`synthetic_run`] (5 measured seconds at `rate`, stalls every 2 s) as a run of a load profile
/// and named requests: stage 1 holds `rate` over the first 2 s, stage 2 ramps `rate..2·rate` over
/// the last 3 s; the measured intervals go to `names` in turn. Stage and name books are made from
/// the intervals' own histograms and counts, so they add up to the totals exactly.
pub fn synthetic_workload_run(seed: u64, rate: u64, names: &[&str]) -> RunResults {
    use candor_core::workload_results::StageResults;
    let mut r = synthetic_run(seed, 5, rate, 1_000_000, 2);
    let measured: Vec<&Interval> = r.intervals.iter().filter(|i| !i.warmup).collect();
    let book = |ivs: &[&Interval], duration_s: f64, target: Option<f64>| {
        let mut rec = Recorder::new();
        let (mut completed, mut failed) = (0, 0);
        for iv in ivs {
            rec.add(&iv.histograms.decode().expect("synthetic histograms decode"));
            completed += iv.completed;
            failed += iv.failed;
        }
        let requests = RequestCounts {
            intended: completed + failed,
            completed,
            failed,
            errors: candor_core::results::ErrorCounts {
                timeout: failed,
                ..Default::default()
            },
            status: StatusCounts {
                s2xx: completed,
                ..Default::default()
            },
            ..Default::default()
        };
        PhaseResults::from_recorder(&rec, &new_histogram(), requests, duration_s, target)
    };
    let rate = rate as f64;
    r.workload.stages = vec![
        StageResults {
            start_s: 0.0,
            from_per_s: rate,
            to_per_s: rate,
            results: book(&measured[..2], 2.0, Some(rate)),
        },
        StageResults {
            start_s: 2.0,
            from_per_s: rate,
            to_per_s: 2.0 * rate,
            results: book(&measured[2..], 3.0, Some(1.5 * rate)),
        },
    ];
    for (k, name) in names.iter().enumerate() {
        let mine: Vec<&Interval> = measured
            .iter()
            .enumerate()
            .filter(|(i, _)| i % names.len() == k)
            .map(|(_, iv)| *iv)
            .collect();
        r.workload
            .by_request
            .insert(name.to_string(), book(&mine, 5.0, None));
    }
    r
}
