//! Escaping for the HTML pages, written once: text and attribute values, and JSON embedded in a
//! `<script>` element.

/// `s` as HTML text or a quoted attribute value.
pub fn html_text(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            _ => o.push(c),
        }
    }
    o
}

/// JSON text made safe inside a `<script>` element: `</` there would end the element early and
/// `<!--` could keep it from ending; `\u003c` means `<` to a JSON parser.
pub fn script_json(json: &str) -> String {
    // Every `<` (only ever inside a JSON string) becomes `\u003c`: neither `</script>` nor
    // `<!--` can then change how the HTML parser reads the data block.
    json.replace('<', "\\u003c")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_and_script_ends_are_neutralised() {
        assert_eq!(
            html_text(r#"<a href="x">Tom & 'Jerry'</a>"#),
            "&lt;a href=&quot;x&quot;&gt;Tom &amp; &#39;Jerry&#39;&lt;/a&gt;"
        );
        for label in ["</script><b>", "<!--<script>"] {
            let json = serde_json::json!({ "label": label }).to_string();
            let safe = script_json(&json);
            assert!(!safe.contains('<'), "{safe}");
            let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
            assert_eq!(back["label"], label);
        }
    }
}
