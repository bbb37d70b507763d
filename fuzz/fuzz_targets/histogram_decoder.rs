//! Fuzzes the binary histogram decoder (V0, V1, V2, plain and compressed) directly, which the
//! text-level target reaches only through valid base64.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(h) = candor_report::codec::decode_bytes(data) {
        let _ = candor_report::codec::java_value_at_percentile(&h, 99.9);
        let _ = candor_report::hgrm::write_hgrm(&h, 5, 1e6);
    }
});
