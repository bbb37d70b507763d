//! Fuzzes the interval-log reader: any bytes must give a log or an error, never a panic, with
//! and without a time range, and every stream's total must be computable.
#![no_main]

use candor_report::hlog::{read_hlog, TimeRange};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    for range in [TimeRange::default(), TimeRange::relative(Some(1.0), Some(3.0))] {
        if let Ok(log) = read_hlog(text, &range) {
            for tag in log.tags() {
                let _ = log.total(tag.as_deref());
            }
            let _ = candor_report::hlog::results_from_hlog(&log, None, "fuzz");
        }
    }
});
