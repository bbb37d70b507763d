//! Finding a key's value in JSON text without parsing it into values (and so without
//! allocating): used on every event of a stream and every WebSocket reply, where only one or
//! two keys matter. A key is `"key"` followed by `:` where the byte before it is `{` or `,`
//! (whitespace aside), which a key has and a string's contents cannot (its quotes are escaped).

/// The bytes after `key:` (whitespace skipped) at the first place `key` (quotes included, e.g.
/// `b"\"id\""`) is a key, at any depth.
pub fn value_of<'a>(data: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    for at in memchr::memmem::find_iter(data, key) {
        let before = data[..at].iter().rev().find(|b| !b.is_ascii_whitespace());
        if !matches!(before, Some(b'{' | b',')) {
            continue;
        }
        let rest = data[at + key.len()..].trim_ascii_start();
        if let Some(value) = rest.strip_prefix(b":") {
            return Some(value.trim_ascii_start());
        }
    }
    None
}

/// The unsigned integer a value starts with (`42,...` -> 42), if it starts with one.
pub fn leading_number(value: &[u8]) -> Option<u64> {
    let digits = value.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || digits > 19 {
        return None;
    }
    value[..digits].iter().try_fold(0u64, |n, d| {
        n.checked_mul(10)?.checked_add(u64::from(d - b'0'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_found_at_any_depth_and_never_inside_strings() {
        let j = br#"{"a": {"id" : 7}, "s": "x \"id\": 9"}"#;
        assert_eq!(value_of(j, b"\"id\"").and_then(leading_number), Some(7));
        let only_in_string = br#"{"s": "\"id\": 9"}"#;
        assert_eq!(value_of(only_in_string, b"\"id\""), None);
        // A value that happens to equal the key is not a key (the byte before is a colon).
        assert_eq!(
            value_of(br#"{"k":"id","id":3}"#, b"\"id\""),
            Some(&b"3}"[..])
        );
    }

    #[test]
    fn numbers_are_read_only_when_whole_and_in_range() {
        assert_eq!(leading_number(b"123,"), Some(123));
        assert_eq!(leading_number(b"\"1\""), None);
        assert_eq!(leading_number(b"99999999999999999999"), None);
        assert_eq!(leading_number(b""), None);
    }
}
