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

/// JSON text made safe inside a `<script>` element: `</` there would end the element early, and
/// `<\/` means the same to a JSON parser.
pub fn script_json(json: &str) -> String {
    json.replace("</", "<\\/")
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
        let json = serde_json::json!({"label": "</script><b>"}).to_string();
        let safe = script_json(&json);
        assert!(!safe.contains("</"));
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back["label"], "</script><b>");
    }
}
