//! The text of one document, JSON or YAML, into a JSON value, in bounded time.

use serde_json::Value;

use super::{DecodeError, Result, nesting};

/// How deep a YAML document may nest, as [`nesting`] estimates it (the true depth is at
/// most twice this; serde_yaml_ng refuses more than 128 anyway, but only after reading
/// the whole document, at a cost that grows with the square of its depth).
pub const MAX_YAML_NESTING: usize = 64;
/// The largest YAML document read; larger objects are read as JSON (the biggest object
/// Kubernetes stores is 1.5 MiB).
pub const MAX_YAML_BYTES: usize = 2 * 1024 * 1024;
/// serde_json's recursion limit (its `unbounded_depth` feature is off).
pub const MAX_JSON_NESTING: usize = 128;

/// Parses text that is JSON or YAML (a single document) into a JSON value. Text that looks
/// like JSON (`[`, `{}` or `{"`) is parsed strictly as JSON, anything else (including YAML
/// flow style such as `{kind: Pod}`) as YAML; a failure reports the line and column.
/// Both are bounded: JSON by serde_json's recursion limit, YAML by its size and a linear
/// estimate of its depth made before it is parsed, so no document costs more than a few
/// reads of its text.
pub fn parse_document(text: &str) -> Result<Value> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let trimmed = text.trim_start();
    if trimmed.is_empty() {
        return Err(DecodeError::new("", "empty document"));
    }
    if looks_like_json(trimmed) {
        return serde_json::from_str::<Value>(text).map_err(|e| {
            DecodeError::new(
                "",
                format!(
                    "invalid JSON at line {} column {}: {}",
                    e.line(),
                    e.column(),
                    json_message(&e)
                ),
            )
        });
    }
    check_yaml_bounds(text)?;
    serde_yaml_ng::from_str::<Value>(text).map_err(|e| {
        let message = e.to_string();
        match e.location() {
            Some(loc) if !message.contains(" at line ") => DecodeError::new(
                "",
                format!(
                    "invalid YAML at line {} column {}: {message}",
                    loc.line(),
                    loc.column()
                ),
            ),
            _ => DecodeError::new("", format!("invalid YAML: {message}")),
        }
    })
}

/// Refuses YAML too large or too deeply nested to parse in bounded time.
pub fn check_yaml_bounds(text: &str) -> Result<()> {
    if text.len() > MAX_YAML_BYTES {
        return Err(DecodeError::new(
            "",
            format!(
                "a YAML document of {} bytes is over the limit of {MAX_YAML_BYTES} bytes; send it as JSON",
                text.len()
            ),
        ));
    }
    if nesting::nests_deeper_than(text, MAX_YAML_NESTING) {
        return Err(DecodeError::new(
            "",
            format!("YAML nested deeper than the limit of {MAX_YAML_NESTING} levels"),
        ));
    }
    Ok(())
}

/// Whether [`parse_document`] reads `text` as JSON (else as YAML).
pub fn reads_as_json(text: &str) -> bool {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    looks_like_json(text.trim_start())
}

fn looks_like_json(trimmed: &str) -> bool {
    match trimmed.strip_prefix('{') {
        Some(rest) => rest.trim_start().starts_with(['"', '}']),
        None => trimmed.starts_with('['),
    }
}

/// serde_json's message without its trailing " at line L column C", naming the limit
/// of a refusal for depth.
fn json_message(error: &serde_json::Error) -> String {
    let full = error.to_string();
    let message = match full.rfind(" at line ") {
        Some(i) => &full[..i],
        None => &full,
    };
    if message == "recursion limit exceeded" {
        return format!("nested deeper than the limit of {MAX_JSON_NESTING} levels");
    }
    message.to_string()
}
