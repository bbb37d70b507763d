//! What `candor serve --llm` reads from a request body, parsed as the bytes arrive: only the
//! fields that shape the answer are kept, everything else is skipped without being built.
//!
//! A body held as a `serde_json::Value` cost about 17 times its size (a 16 MB array of zeros
//! became 284 MB, kept until the stream ended). Skipping with `IgnoredAny` builds nothing, so a
//! body costs the connection's read buffer plus, for a string whose words are counted (`prompt`,
//! a message's `content`), serde_json's scratch copy of it.
//!
//! Types are as loose as the `Value` lookups this replaces: a value of another type than
//! expected is ignored (as `as_bool()` and the like gave `None`), never a refusal, and any JSON
//! value is a body (one that is not an object asks for nothing). Duplicate keys: the last counts.

use super::prefix::BlockHashes;
use serde::de::{
    self, Deserialize, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor,
};
use std::fmt;
use std::io::Read;

/// The fields of a completion request that its answer depends on.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct RequestBody {
    /// `"stream": true`.
    pub stream: bool,
    /// `max_tokens`, or else `max_completion_tokens`, when a non-negative integer.
    pub max_tokens: Option<u64>,
    /// `"stream_options": {"include_usage": true}`.
    pub include_usage: bool,
    /// Words (split on whitespace) of the string `prompt` and of every message's string
    /// `content`.
    pub prompt_words: u64,
    /// Embeddings: the inputs of `input` (a string is one; an array's strings, or arrays of
    /// token ids, are one each; an array of token ids alone is one), and their tokens (each
    /// string's by its words, see `timing::prompt_tokens`; a token-id array's by its length).
    pub inputs: u64,
    pub input_tokens: u64,
}

impl RequestBody {
    /// Parses a body from `reader` to its end; only JSON whitespace may follow the value.
    pub fn read(reader: impl Read) -> Result<RequestBody, serde_json::Error> {
        RequestBody::read_hashing(reader, None)
    }

    /// As [`read`](Self::read), feeding the prompt's words, in the body's order, to `blocks`
    /// (the prefix cache's hashes) when given.
    pub fn read_hashing(
        reader: impl Read,
        blocks: Option<&mut BlockHashes>,
    ) -> Result<RequestBody, serde_json::Error> {
        let mut de = serde_json::Deserializer::from_reader(reader);
        let top = TopSeed(blocks).deserialize(&mut de)?;
        de.end()?;
        Ok(RequestBody {
            stream: top.stream.unwrap_or(false),
            max_tokens: top.max_tokens.or(top.max_completion_tokens),
            include_usage: top.include_usage.0.unwrap_or(false),
            prompt_words: top.prompt_words + top.message_words,
            inputs: top.input.count,
            input_tokens: top.input.tokens,
        })
    }
}

/// One JSON value as the loose lookups saw it; containers are skipped.
enum Scalar {
    Bool(bool),
    U64(u64),
    Other,
}

impl Scalar {
    fn as_bool(&self) -> Option<bool> {
        match self {
            Scalar::Bool(b) => Some(*b),
            _ => None,
        }
    }
    fn as_u64(&self) -> Option<u64> {
        match self {
            Scalar::U64(n) => Some(*n),
            _ => None,
        }
    }
}

/// The visitor methods of the values a container visitor does not look into: they count as
/// its default.
macro_rules! scalars_are_default {
    () => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
    };
}

struct ScalarVisitor;

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = Scalar;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Scalar, E> {
        Ok(Scalar::Bool(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Scalar, E> {
        Ok(Scalar::U64(v))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Scalar, E> {
        Ok(Scalar::Other)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Scalar, E> {
        Ok(Scalar::Other)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Scalar, E> {
        Ok(Scalar::Other)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Scalar, E> {
        Ok(Scalar::Other)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Scalar, A::Error> {
        IgnoredAny.visit_seq(seq).map(|_| Scalar::Other)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Scalar, A::Error> {
        IgnoredAny.visit_map(map).map(|_| Scalar::Other)
    }
}

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Scalar, D::Error> {
        d.deserialize_any(ScalarVisitor)
    }
}

/// The keys the server looks at, wherever they are; any other is skipped with its value.
#[derive(serde::Deserialize)]
#[serde(field_identifier, rename_all = "snake_case")]
enum Key {
    Stream,
    MaxTokens,
    MaxCompletionTokens,
    StreamOptions,
    IncludeUsage,
    Prompt,
    Messages,
    Content,
    Input,
    #[serde(other)]
    Other,
}

/// The top-level object.
#[derive(Default)]
struct Top {
    stream: Option<bool>,
    max_tokens: Option<u64>,
    max_completion_tokens: Option<u64>,
    include_usage: StreamOptions,
    prompt_words: u64,
    message_words: u64,
    input: Inputs,
}

/// An embeddings request's `input`: how many inputs, and their tokens.
#[derive(Default)]
struct Inputs {
    count: u64,
    tokens: u64,
}

/// One element of an `input` array: a string's tokens, a token-id array's length, or (a bare
/// number, the array being one input of token ids) one token.
enum InputItem {
    Text(u64),
    Ids(u64),
    Id,
    Other,
}

/// `stream_options.include_usage`.
#[derive(Default)]
struct StreamOptions(Option<bool>);

/// Where a prompt's words go besides their count: the prefix cache's block hashes, when on.
type Sink<'a> = Option<&'a mut BlockHashes>;

impl<'de> Deserialize<'de> for StreamOptions {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<StreamOptions, D::Error> {
        d.deserialize_any(StreamOptionsVisitor)
    }
}

struct StreamOptionsVisitor;

/// Implements `DeserializeSeed` for a seed that is its own visitor, through `deserialize_any`.
macro_rules! seed_is_visitor {
    ($seed:ident, $value:ty) => {
        impl<'de> DeserializeSeed<'de> for $seed<'_> {
            type Value = $value;
            fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<$value, D::Error> {
                d.deserialize_any(self)
            }
        }
    };
}

/// Deserializes `$ty` by handing any JSON value to `$visitor`.
macro_rules! deserialize_any_with {
    ($ty:ty, $visitor:ident) => {
        struct $visitor;
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<$ty, D::Error> {
                d.deserialize_any($visitor)
            }
        }
    };
}

deserialize_any_with!(Inputs, InputsVisitor);
deserialize_any_with!(InputItem, InputItemVisitor);

impl<'de> Visitor<'de> for InputsVisitor {
    type Value = Inputs;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Inputs, E> {
        Ok(Inputs::default())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Inputs, E> {
        Ok(Inputs::default())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Inputs, E> {
        Ok(Inputs::default())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Inputs, E> {
        Ok(Inputs::default())
    }
    fn visit_unit<E: de::Error>(self) -> Result<Inputs, E> {
        Ok(Inputs::default())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Inputs, A::Error> {
        let mut inputs = Inputs::default();
        let mut ids = 0u64;
        while let Some(item) = seq.next_element::<InputItem>()? {
            match item {
                InputItem::Text(t) | InputItem::Ids(t) => {
                    inputs.count += 1;
                    inputs.tokens = inputs.tokens.saturating_add(t);
                }
                InputItem::Id => ids += 1,
                InputItem::Other => {}
            }
        }
        if ids > 0 {
            // An array of token ids is one input.
            inputs.count += 1;
            inputs.tokens = inputs.tokens.saturating_add(ids);
        }
        Ok(inputs)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Inputs, E> {
        Ok(Inputs {
            count: 1,
            tokens: super::timing::prompt_tokens(v.split_whitespace().count() as u64),
        })
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Inputs, A::Error> {
        IgnoredAny.visit_map(map).map(|_| Inputs::default())
    }
}

impl<'de> Visitor<'de> for InputItemVisitor {
    type Value = InputItem;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<InputItem, E> {
        Ok(InputItem::Text(super::timing::prompt_tokens(
            v.split_whitespace().count() as u64,
        )))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<InputItem, E> {
        Ok(InputItem::Id)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<InputItem, E> {
        Ok(InputItem::Other)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<InputItem, E> {
        Ok(InputItem::Other)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<InputItem, E> {
        Ok(InputItem::Other)
    }
    fn visit_unit<E: de::Error>(self) -> Result<InputItem, E> {
        Ok(InputItem::Other)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<InputItem, A::Error> {
        let mut n = 0u64;
        while seq.next_element::<IgnoredAny>()?.is_some() {
            n += 1;
        }
        Ok(InputItem::Ids(n))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<InputItem, A::Error> {
        IgnoredAny.visit_map(map).map(|_| InputItem::Other)
    }
}

/// The top-level object, its prompt's words fed to the sink.
struct TopSeed<'a>(Sink<'a>);
/// The words of a string (`prompt`, a message's `content`), fed to the sink.
struct WordsSeed<'a>(Sink<'a>);
/// The words of every message's `content`.
struct MessagesSeed<'a>(Sink<'a>);
/// The words of one message's `content`.
struct MessageSeed<'a>(Sink<'a>);

seed_is_visitor!(TopSeed, Top);
seed_is_visitor!(WordsSeed, u64);
seed_is_visitor!(MessagesSeed, u64);
seed_is_visitor!(MessageSeed, u64);

impl<'de> Visitor<'de> for TopSeed<'_> {
    type Value = Top;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    scalars_are_default!();
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Top, A::Error> {
        IgnoredAny.visit_seq(seq).map(|_| Top::default())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Top, A::Error> {
        let mut sink = self.0;
        let mut top = Top::default();
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::Stream => top.stream = map.next_value::<Scalar>()?.as_bool(),
                Key::MaxTokens => top.max_tokens = map.next_value::<Scalar>()?.as_u64(),
                Key::MaxCompletionTokens => {
                    top.max_completion_tokens = map.next_value::<Scalar>()?.as_u64()
                }
                Key::StreamOptions => top.include_usage = map.next_value()?,
                Key::Prompt => {
                    top.prompt_words = map.next_value_seed(WordsSeed(sink.as_deref_mut()))?
                }
                Key::Messages => {
                    top.message_words = map.next_value_seed(MessagesSeed(sink.as_deref_mut()))?
                }
                Key::Input => top.input = map.next_value()?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(top)
    }
}

impl<'de> Visitor<'de> for StreamOptionsVisitor {
    type Value = StreamOptions;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    scalars_are_default!();
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<StreamOptions, A::Error> {
        IgnoredAny.visit_seq(seq).map(|_| StreamOptions::default())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<StreamOptions, A::Error> {
        let mut options = StreamOptions::default();
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::IncludeUsage => options.0 = map.next_value::<Scalar>()?.as_bool(),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(options)
    }
}

impl<'de> Visitor<'de> for WordsSeed<'_> {
    type Value = u64;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<u64, E> {
        Ok(0)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<u64, E> {
        Ok(0)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<u64, E> {
        Ok(0)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<u64, E> {
        Ok(0)
    }
    fn visit_unit<E: de::Error>(self) -> Result<u64, E> {
        Ok(0)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<u64, E> {
        let mut sink = self.0;
        let mut n = 0u64;
        for word in v.split_whitespace() {
            n += 1;
            if let Some(hashes) = sink.as_deref_mut() {
                hashes.word(word);
            }
        }
        Ok(n)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<u64, A::Error> {
        IgnoredAny.visit_seq(seq).map(|_| 0)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<u64, A::Error> {
        IgnoredAny.visit_map(map).map(|_| 0)
    }
}

impl<'de> Visitor<'de> for MessagesSeed<'_> {
    type Value = u64;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    scalars_are_default!();
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<u64, A::Error> {
        let mut sink = self.0;
        let mut words = 0u64;
        while let Some(n) = seq.next_element_seed(MessageSeed(sink.as_deref_mut()))? {
            words = words.saturating_add(n);
        }
        Ok(words)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<u64, A::Error> {
        IgnoredAny.visit_map(map).map(|_| 0)
    }
}

impl<'de> Visitor<'de> for MessageSeed<'_> {
    type Value = u64;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    scalars_are_default!();
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<u64, A::Error> {
        IgnoredAny.visit_seq(seq).map(|_| 0)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<u64, A::Error> {
        let mut sink = self.0;
        let mut words = 0u64;
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::Content => words = map.next_value_seed(WordsSeed(sink.as_deref_mut()))?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(words)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(json: &str) -> RequestBody {
        RequestBody::read(json.as_bytes()).unwrap()
    }

    #[test]
    fn the_fields_that_shape_the_answer_are_read() {
        let body = read(
            r#"{"model":"m","stream":true,"max_tokens":7,"stream_options":{"include_usage":true},
                "messages":[{"role":"system","content":"be brief"},{"role":"user","content":"one two\tthree"}]}"#,
        );
        assert_eq!(
            body,
            RequestBody {
                stream: true,
                max_tokens: Some(7),
                include_usage: true,
                prompt_words: 5,
                inputs: 0,
                input_tokens: 0,
            }
        );
        let body = read(r#"{"prompt":"a b\nc","max_completion_tokens":3}"#);
        assert_eq!(body.prompt_words, 3);
        assert_eq!(body.max_tokens, Some(3));
        assert!(!body.stream && !body.include_usage);
        // max_tokens wins over max_completion_tokens, whatever the order.
        assert_eq!(
            read(r#"{"max_completion_tokens":3,"max_tokens":5}"#).max_tokens,
            Some(5)
        );
    }

    #[test]
    fn values_of_other_types_are_ignored_not_refused() {
        let body = read(
            r#"{"stream":"yes","max_tokens":-1,"max_completion_tokens":2.5,"stream_options":[true],
                "prompt":["a b"],"messages":[0,null,{"content":[{"type":"text","text":"x y"}]},{"content":"p q"}],
                "include_usage":true,"content":"not here"}"#,
        );
        assert_eq!(
            body,
            RequestBody {
                stream: false,
                max_tokens: None,
                include_usage: false,
                prompt_words: 2,
                inputs: 0,
                input_tokens: 0,
            }
        );
        // A body that is not an object asks for nothing.
        assert_eq!(read("[1,2,{\"stream\":true}]"), RequestBody::default());
        assert_eq!(read("  7 "), RequestBody::default());
        // Duplicate keys: the last counts.
        assert!(read(r#"{"stream":false,"stream":true}"#).stream);
    }

    #[test]
    fn an_embeddings_input_is_counted_by_inputs_and_their_tokens() {
        // "a b c" is 3 words, 4 tokens (ceil(3 * 4 / 3)); "x" 1 word, 2 tokens.
        let b = read(r#"{"model":"m","input":["a b c","x"]}"#);
        assert_eq!((b.inputs, b.input_tokens), (2, 6));
        let b = read(r#"{"input":"a b c"}"#);
        assert_eq!((b.inputs, b.input_tokens), (1, 4));
        // Token ids: an array of them is one input; arrays of them one each.
        let b = read(r#"{"input":[1,2,3]}"#);
        assert_eq!((b.inputs, b.input_tokens), (1, 3));
        let b = read(r#"{"input":[[1,2],[3],"a"]}"#);
        assert_eq!((b.inputs, b.input_tokens), (3, 5));
        assert_eq!(read(r#"{"input":{"a":1}}"#).inputs, 0);
        assert_eq!(read(r#"{"prompt":"a"}"#).inputs, 0);
    }

    #[test]
    fn text_that_is_not_one_json_value_is_refused() {
        for bad in [
            "",
            "not json",
            "{\"a\":1} x",
            "{\"a\":[1,2}",
            "{\"a\":\"unterminated",
        ] {
            assert!(RequestBody::read(bad.as_bytes()).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn deep_nesting_in_a_skipped_value_is_skipped_without_recursion() {
        // serde_json skips with a byte per level on a heap stack, not with a stack frame: far
        // past any thread stack's depth, this returns instead of overflowing.
        let deep = format!(
            "{{\"pad\":{}{},\"stream\":true}}",
            "[".repeat(1_000_000),
            "]".repeat(1_000_000)
        );
        assert!(RequestBody::read(deep.as_bytes()).unwrap().stream);
    }
}
