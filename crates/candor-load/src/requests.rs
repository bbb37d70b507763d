//! Request sets: many different HTTP requests in a JSON-lines file, parsed once before the run.
//!
//! One JSON object per line: `{"method": "POST", "path": "/items?id=7", "headers":
//! {"Content-Type": "application/json"}, "body": "{\"x\":1}"}`. Every field but `path` is
//! optional (method GET, no headers, empty body); `headers` may also be a list of "Name: value"
//! strings. Blank lines and lines starting with `#` are ignored.
//!
//! A line may also carry `"name"` (its name in the per-request breakdown; default method and
//! path), `"weight"` (a positive number: requests are drawn in proportion to it), and its own
//! checks `"check_status"` (as `--check-status`) and `"check_body"` (as `--check-body`).

use crate::config::RequestSpec;
use crate::status::StatusSet;
use serde_json::Value;

/// One line of a request set: the request and what the workload features add to it.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestLine {
    pub spec: RequestSpec,
    /// The name in the breakdown: `"name"`, or the method and path template.
    pub name: String,
    pub weight: Option<f64>,
    pub check_status: Option<StatusSet>,
    pub check_body: Option<String>,
}

/// Parses a request-set file; errors name the line.
pub fn parse_request_set(text: &str) -> Result<Vec<RequestSpec>, String> {
    Ok(parse_request_lines(text)?
        .into_iter()
        .map(|l| l.spec)
        .collect())
}

/// Parses a request-set file with names, weights and per-line checks; errors name the line.
pub fn parse_request_lines(text: &str) -> Result<Vec<RequestLine>, String> {
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
        const FIELDS: [&str; 8] = [
            "method",
            "path",
            "headers",
            "body",
            "name",
            "weight",
            "check_status",
            "check_body",
        ];
        if let Some(unknown) = obj.keys().find(|k| !FIELDS.contains(&k.as_str())) {
            return Err(at(format!("unknown field \"{unknown}\"")));
        }
        let name = text_field("name")?.unwrap_or_else(|| format!("{method} {path}"));
        let weight = match obj.get("weight") {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                v.as_f64()
                    .filter(|w| *w > 0.0 && w.is_finite())
                    .ok_or_else(|| at(format!("\"weight\" must be a positive number, got {v}")))?,
            ),
        };
        let check_status = text_field("check_status")?
            .map(|t| {
                StatusSet::parse(&t).map_err(|e| at(format!("invalid \"check_status\" '{t}': {e}")))
            })
            .transpose()?;
        let check_body = text_field("check_body")?;
        if check_body.as_deref() == Some("") {
            return Err(at("\"check_body\" must not be empty".into()));
        }
        out.push(RequestLine {
            spec: RequestSpec {
                method,
                path,
                headers,
                body,
            },
            name,
            weight,
            check_status,
            check_body,
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
        assert!(parse_request_set("{\"path\": \"/\", \"weight\": 0}")
            .unwrap_err()
            .starts_with("line 1: \"weight\" must be a positive number, got 0"));
        assert!(
            parse_request_set("{\"path\": \"/\", \"check_status\": \"abc\"}")
                .unwrap_err()
                .starts_with("line 1: invalid \"check_status\" 'abc'")
        );
    }

    #[test]
    fn names_weights_and_checks() {
        let lines = parse_request_lines(
            "{\"path\": \"/a\", \"name\": \"home\", \"weight\": 3, \"check_status\": \"200\", \"check_body\": \"ok\"}\n{\"method\": \"post\", \"path\": \"/u/{{seq}}\"}",
        )
        .unwrap();
        assert_eq!(lines[0].name, "home");
        assert_eq!(lines[0].weight, Some(3.0));
        assert!(lines[0].check_status.as_ref().unwrap().accepts(200));
        assert!(!lines[0].check_status.as_ref().unwrap().accepts(201));
        assert_eq!(lines[0].check_body.as_deref(), Some("ok"));
        assert_eq!(lines[1].name, "POST /u/{{seq}}");
        assert_eq!(lines[1].weight, None);
    }
}
