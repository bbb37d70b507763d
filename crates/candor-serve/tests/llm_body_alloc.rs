//! Checks that `candor serve --llm` skips the fields of a request body it does not need without
//! building them, by counting heap allocations while a body is parsed. Its own test binary, so
//! that the counting allocator sees no other test.

use candor_serve::llm_body::RequestBody;

#[global_allocator]
static ALLOCATOR: candor_testkit::CountingAllocator = candor_testkit::CountingAllocator;

#[test]
fn skipped_fields_are_not_built() {
    // 100,000 one-element arrays: as a `serde_json::Value` each would be a heap-allocated
    // vector, 100,000 allocations; skipped, none of them exists.
    let mut body = br#"{"stream":true,"prompt":"one two three","pad":[[0]"#.to_vec();
    for _ in 1..100_000 {
        body.extend_from_slice(b",[0]");
    }
    body.extend_from_slice(br#"],"deep":{"a":[{"b":"c\"d"}]}}"#);
    let before = candor_testkit::this_thread_allocations();
    let parsed = RequestBody::read(&body[..]).unwrap();
    let allocations = candor_testkit::this_thread_allocations() - before;
    assert!(parsed.stream);
    assert_eq!(parsed.prompt_words, 3);
    // The reader's scratch buffer (strings with escapes, the nesting stack of skipped values)
    // grows a few times; 100 is far below the 100,000 of building the array.
    assert!(
        allocations < 100,
        "{allocations} allocations to parse a body of 100,000 skipped arrays"
    );
    let built = candor_testkit::this_thread_allocations();
    let value: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let built = candor_testkit::this_thread_allocations() - built;
    // The comparison the bound stands on: the same body as a `Value`.
    assert!(built >= 100_000, "{built} allocations for the Value");
    drop(value);
}
