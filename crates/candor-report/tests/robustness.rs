//! Stable-toolchain companion of the cargo-fuzz targets in fuzz/: thousands of deterministic
//! mutations of real logs and encodings go through the readers, which must answer with a value
//! or an error and never panic. (cargo fuzz needs nightly; this runs in every `cargo test`.)

use base64::Engine as _;
use candor_report::codec::{decode_bytes, java_value_at_percentile};
use candor_report::hlog::{read_hlog, results_from_hlog, write_hlog, TimeRange};
use candor_report::synthetic::synthetic_run;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*: deterministic, so a failure reproduces from the iteration number.
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

fn mutate(rng: &mut Rng, data: &mut Vec<u8>) {
    const INTERESTING: &[u8] = b",.-0123456789eE#[]=\n\r +/ATagHIST\"";
    for _ in 0..=rng.below(4) {
        if data.is_empty() {
            data.push(b'0');
        }
        let i = rng.below(data.len());
        match rng.below(8) {
            0 => data[i] ^= 1 << rng.below(8),
            1 => data[i] = INTERESTING[rng.below(INTERESTING.len())],
            2 => data.truncate(i),
            3 => {
                data.remove(i);
            }
            4 => data.insert(i, INTERESTING[rng.below(INTERESTING.len())]),
            5 => {
                // Duplicate a slice: repeated lines, repeated fields.
                let end = (i + rng.below(64)).min(data.len());
                let chunk = data[i..end].to_vec();
                let at = rng.below(data.len());
                data.splice(at..at, chunk);
            }
            6 => data[i] = rng.next() as u8,
            _ => {
                let end = (i + rng.below(16)).min(data.len());
                data.drain(i..end);
            }
        }
    }
}

fn exercise_log(text: &str) -> bool {
    let mut ok = false;
    for range in [
        TimeRange::default(),
        TimeRange::relative(Some(1.0), Some(3.0)),
    ] {
        if let Ok(log) = read_hlog(text, &range) {
            ok = true;
            for tag in log.tags() {
                let total = log.total(tag.as_deref());
                let _ = java_value_at_percentile(&total, 99.9);
            }
            let _ = results_from_hlog(&log, None, "mutated");
        }
    }
    ok
}

#[test]
fn mutated_logs_never_panic() {
    let vectors = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/hdrhistogram/");
    let mut seeds = vec![write_hlog(&synthetic_run(3, 3, 50, 1_000_000, 2)).into_bytes()];
    for f in [
        "jHiccup-2.0.1.logV0.hlog",
        "jHiccup-2.0.6.logV1.hlog",
        "tagged-Log.logV2.hlog",
    ] {
        // The first dozen lines keep each iteration fast while covering every encoding.
        let text = std::fs::read_to_string(format!("{vectors}{f}")).unwrap();
        let head: String = text.lines().take(12).map(|l| format!("{l}\n")).collect();
        seeds.push(head.into_bytes());
    }
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut accepted, mut rejected) = (0, 0);
    for _ in 0..1500 {
        let mut data = seeds[rng.below(seeds.len())].clone();
        mutate(&mut rng, &mut data);
        let text = String::from_utf8_lossy(&data);
        if exercise_log(&text) {
            accepted += 1;
        } else {
            rejected += 1;
        }
    }
    eprintln!("mutated logs: {accepted} read, {rejected} rejected with an error, no panic");
    // Both outcomes must occur, or the mutations are not exercising the reader.
    assert!(
        accepted > 50 && rejected > 50,
        "accepted {accepted}, rejected {rejected}"
    );
}

#[test]
fn mutated_encodings_never_panic() {
    let vectors = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/hdrhistogram/");
    let mut seeds: Vec<Vec<u8>> = Vec::new();
    for f in [
        "jHiccup-2.0.1.logV0.hlog",
        "jHiccup-2.0.6.logV1.hlog",
        "ycsb.logV1.hlog",
        "jHiccup-2.0.7S.logV2.hlog",
    ] {
        let text = std::fs::read_to_string(format!("{vectors}{f}")).unwrap();
        let line = text.lines().find(|l| l.contains("HIST")).unwrap();
        let b64 = line.rsplit(',').next().unwrap();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap();
        // Also the inflated (plain) form, so the plain decoders get mutated directly.
        let mut inflated = Vec::new();
        use std::io::Read;
        flate2::read::ZlibDecoder::new(&bytes[8..])
            .read_to_end(&mut inflated)
            .unwrap();
        seeds.push(bytes);
        seeds.push(inflated);
    }
    seeds.push(std::fs::read(format!("{vectors}seq-nums.histz")).unwrap());
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let (mut accepted, mut rejected) = (0, 0);
    for _ in 0..3000 {
        let mut data = seeds[rng.below(seeds.len())].clone();
        mutate(&mut rng, &mut data);
        if std::env::var("ROBUST_TRACE").is_ok() {
            eprintln!(
                "iteration {} len {} head {:02x?}",
                accepted + rejected,
                data.len(),
                &data[..data.len().min(48)]
            );
        }
        match decode_bytes(&data) {
            Ok(h) => {
                accepted += 1;
                let _ = java_value_at_percentile(&h, 99.9);
                let _ = candor_report::hgrm::write_hgrm(&h, 5, 1e6);
            }
            Err(_) => rejected += 1,
        }
    }
    eprintln!("mutated encodings: {accepted} decoded, {rejected} rejected with an error, no panic");
    assert!(
        accepted > 50 && rejected > 50,
        "accepted {accepted}, rejected {rejected}"
    );
}
