//! Every HdrHistogram vector from other implementations decodes to the values Java gives
//! (table in tests/data/README.md).

use candor_report::codec::{decode_bytes, java_value_at_percentile};
use candor_report::hlog::{read_hlog, TimeRange};

fn vector(name: &str) -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/hdrhistogram/");
    std::fs::read_to_string(format!("{path}{name}")).unwrap_or_else(|e| panic!("{path}{name}: {e}"))
}

fn vector_bytes(name: &str) -> Vec<u8> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/hdrhistogram/");
    std::fs::read(format!("{path}{name}")).unwrap_or_else(|e| panic!("{path}{name}: {e}"))
}

/// (intervals, total count, p99.9, max) over the untagged stream in `range`.
fn check(name: &str, range: Option<(f64, f64)>, expected: (usize, u64, u64, u64)) {
    let r = match range {
        Some((s, e)) => TimeRange {
            start_s: s,
            end_s: e,
            absolute: false,
        },
        None => TimeRange::default(),
    };
    let log = read_hlog(&vector(name), &r).unwrap_or_else(|e| panic!("{name}: {e}"));
    let n = log.stream(None).count();
    let total = log.total(None);
    let got = (
        n,
        total.len(),
        java_value_at_percentile(&total, 99.9),
        total.max(),
    );
    eprintln!(
        "{name} {range:?}: intervals {} count {} p99.9 {} max {}",
        got.0, got.1, got.2, got.3
    );
    assert_eq!(got, expected, "{name} {range:?}");
}

#[test]
fn jhiccup_v2_log_1_2() {
    let f = "jHiccup-2.0.7S.logV2.hlog";
    check(f, None, (62, 48761, 1745879039, 1796210687));
    check(f, Some((5.0, 20.0)), (15, 11664, 1536163839, 1544552447));
    check(f, Some((40.0, 60.0)), (20, 15830, 1779433471, 1796210687));
    let log = read_hlog(&vector(f), &TimeRange::default()).unwrap();
    assert_eq!(log.start_time_s, Some(1441812279.474));
    assert_eq!(log.format_version.as_deref(), Some("1.2"));
}

#[test]
fn jhiccup_v1_log_1_1() {
    let f = "jHiccup-2.0.6.logV1.hlog";
    check(f, None, (88, 65964, 1829765119, 1888485375));
    check(f, Some((5.0, 20.0)), (15, 11213, 1019740159, 1032323071));
    check(f, Some((50.0, 80.0)), (29, 22630, 1871708159, 1888485375));
    let log = read_hlog(&vector(f), &TimeRange::default()).unwrap();
    assert_eq!(log.start_time_s, Some(1438867590.285));
}

#[test]
fn jhiccup_v0_log_1_01() {
    let f = "jHiccup-2.0.1.logV0.hlog";
    check(f, None, (81, 61256, 1510998015, 1569718271));
    check(f, Some((20.0, 45.0)), (25, 18492, 459007, 623103));
    check(f, Some((46.0, 80.0)), (34, 25439, 1209008127, 1234173951));
    let log = read_hlog(&vector(f), &TimeRange::default()).unwrap();
    assert_eq!(log.start_time_s, Some(1438869961.225));
}

#[test]
fn ycsb_v1_absolute_timestamps() {
    let f = "ycsb.logV1.hlog";
    check(f, None, (602, 300056, 1214463, 1546239));
    check(f, Some((0.0, 180.0)), (180, 90033, 1375231, 1546239));
    check(f, Some((180.0, 700.0)), (421, 209686, 530, 17775));
    let log = read_hlog(&vector(f), &TimeRange::default()).unwrap();
    assert_eq!(log.base_time_s, 0.0, "absolute timestamps");
    assert_eq!(log.start_time_s, Some(1438613579.295));
}

#[test]
fn tagged_log_streams_are_separate_and_equal() {
    let f = "tagged-Log.logV2.hlog";
    let log = read_hlog(&vector(f), &TimeRange::default()).unwrap();
    assert_eq!(log.tags(), vec![None, Some("A".to_string())]);
    let untagged = log.total(None);
    let a = log.total(Some("A"));
    assert_eq!(
        (log.stream(None).count(), log.stream(Some("A")).count()),
        (21, 21)
    );
    assert_eq!((untagged.len(), a.len()), (16145, 16145));
    assert_eq!(untagged, a);
    let mut all = candor_report::codec::java_accumulator();
    for i in &log.intervals {
        candor_report::codec::add_exact(&mut all, &i.histogram);
    }
    assert_eq!(all.len(), 32290);
    assert_eq!(java_value_at_percentile(&all, 99.9), 1536163839);
    assert_eq!(all.max(), 1544552447);
}

fn seq_values() -> Vec<u64> {
    vector("seq-nums.txt")
        .lines()
        .map(|l| l.trim().parse().expect("a number per line"))
        .collect()
}

fn check_seq(h: &candor_core::Histo) {
    let values = seq_values();
    let mut expected =
        hdrhistogram::Histogram::<u64>::new_with_bounds(1, i64::MAX as u64, 3).unwrap();
    for &v in &values {
        expected.record(v).unwrap();
    }
    assert_eq!(h.len(), values.len() as u64);
    let a: Vec<_> = h
        .iter_recorded()
        .map(|v| (v.value_iterated_to(), v.count_at_value()))
        .collect();
    let b: Vec<_> = expected
        .iter_recorded()
        .map(|v| (v.value_iterated_to(), v.count_at_value()))
        .collect();
    assert_eq!(a, b, "every bucket count equals the recorded values'");
    assert_eq!(h.max(), expected.max());
}

#[test]
fn seq_nums_plain_v2() {
    check_seq(&decode_bytes(&vector_bytes("seq-nums.hist")).unwrap());
}

#[test]
fn seq_nums_compressed_v2() {
    check_seq(&decode_bytes(&vector_bytes("seq-nums.histz")).unwrap());
}
