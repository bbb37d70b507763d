//! Request sets: many different HTTP requests in a JSON-lines file, parsed once before the run.
//!
//! One JSON object per line: `{"method": "POST", "path": "/items?id=7", "headers":
//! {"Content-Type": "application/json"}, "body": "{\"x\":1}"}`. Every field but `path` is
//! optional (method GET, no headers, empty body); `headers` may also be a list of "Name: value"
//! strings. Blank lines and lines starting with `#` are ignored.

use crate::config::RequestSpec;
use serde_json::Value;

/// Parses a request-set file; errors name the line.
pub fn parse_request_set(text: &str) -> Result<Vec<RequestSpec>, String> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = |m: String| format!("line {}: {m}", n + 1);
        let v: Value = serde_json::from_str(line).map_err(|e| at(format!("not JSON: {e}")))?;
        let obj = v
            .as_object()
            .ok_or_else(|| at("expected a JSON object".into()))?;
        let text_field = |k: &str| -> Result<Option<String>, String> {
            match obj.get(k) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(at(format!("\"{k}\" must be a string"))),
            }
        };
        let path = text_field("path")?.ok_or_else(|| at("missing \"path\"".into()))?;
        let method = text_field("method")?
            .unwrap_or_else(|| "GET".into())
            .to_ascii_uppercase();
        let body = text_field("body")?.unwrap_or_default().into_bytes();
        let headers = match obj.get("headers") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Object(map)) => map
                .iter()
                .map(|(k, v)| match v {
                    Value::String(s) => Ok(format!("{k}: {s}")),
                    other => Ok(format!("{k}: {other}")),
                })
                .collect::<Result<Vec<_>, String>>()?,
            Some(Value::Array(items)) => items
                .iter()
                .map(|h| {
                    h.as_str()
                        .filter(|s| s.contains(':'))
                        .map(str::to_string)
                        .ok_or_else(|| at("headers must be \"Name: value\" strings".into()))
                })
                .collect::<Result<Vec<_>, String>>()?,
            Some(_) => return Err(at("\"headers\" must be an object or a list".into())),
        };
        if let Some(unknown) = obj
            .keys()
            .find(|k| !["method", "path", "headers", "body"].contains(&k.as_str()))
        {
            return Err(at(format!("unknown field \"{unknown}\"")));
        }
        out.push(RequestSpec {
            method,
            path,
            headers,
            body,
        });
    }
    if out.is_empty() {
        return Err("the request set is empty".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lines_and_defaults() {
        let text = "# a comment\n{\"path\": \"/a\"}\n\n{\"method\": \"post\", \"path\": \"/b\", \"headers\": {\"X\": \"1\"}, \"body\": \"hi\"}\n{\"path\": \"/c\", \"headers\": [\"Y: 2\"]}\n";
        let set = parse_request_set(text).unwrap();
        assert_eq!(set.len(), 3);
        assert_eq!(set[0].method, "GET");
        assert_eq!(set[1].method, "POST");
        assert_eq!(set[1].headers, vec!["X: 1"]);
        assert_eq!(set[1].body, b"hi");
        assert_eq!(set[2].headers, vec!["Y: 2"]);
    }

    #[test]
    fn errors_name_the_line() {
        assert!(parse_request_set("{\"path\": \"/a\"}\nnot json")
            .unwrap_err()
            .starts_with("line 2"));
        assert!(parse_request_set("{\"method\": \"GET\"}")
            .unwrap_err()
            .contains("missing \"path\""));
        assert!(parse_request_set("{\"path\": \"/\", \"bogus\": 1}")
            .unwrap_err()
            .contains("unknown field"));
        assert!(parse_request_set("# only a comment").is_err());
    }
}
