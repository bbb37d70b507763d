//! `--tokenizer`'s embedded encodings against tiktoken's own published test vectors
//! (tests/data/tiktoken_vectors.json, copied from openai/tiktoken with its origin and MIT
//! licence noted there): the same text must give the same token ids, so counts are exact.

use candor_workload::tokenizer::Tokenizer;

#[test]
fn the_embedded_encodings_give_tiktokens_published_token_ids() {
    let text = include_str!("data/tiktoken_vectors.json");
    let v: serde_json::Value = serde_json::from_str(text).unwrap();
    assert!(v["licence"].as_str().unwrap().starts_with("MIT"));
    let vectors = v["vectors"].as_array().unwrap();
    assert_eq!(vectors.len(), 8);
    for case in vectors {
        let t = Tokenizer::load(case["encoding"].as_str().unwrap()).unwrap();
        let text = case["text"].as_str().unwrap();
        let want: Vec<u32> = case["tokens"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_u64().unwrap() as u32)
            .collect();
        assert_eq!(t.encode(text), want, "{text:?}");
        assert_eq!(t.count(text), want.len() as u64);
    }
}
