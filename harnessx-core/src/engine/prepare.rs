//! Before a call runs: refuse oversized input, resolve the name (with repair), parse and
//! validate the arguments. Every error result leaves here already cut to the result cap.

use std::sync::Arc;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::output::{ToolCall, ToolErrorKind, ToolResult};
use crate::output::{echo, truncate_result};
use crate::registry::names::{normalize, suggestions};
use crate::registry::{RegisteredTool, ToolRegistry};
use crate::schema::{json_kind, required_fields};

/// The longest tool name the engine looks up: 256 bytes.
///
/// Registered names are at most 64 bytes; with the prefixes name repair strips
/// (`default_api:` is the longest) and the separators it ignores, a name the model meant for a
/// real tool stays far below this. A longer name is refused before any lookup, repair or
/// suggestion work, which is what keeps that work small: it is linear in the name and, per
/// registered tool, bounded by 256 × 64 steps.
pub const MAX_TOOL_NAME_BYTES: usize = 256;

/// The longest argument text the engine parses: 4 MiB.
///
/// A model's whole reply is bounded by its output limit (tens of thousands of tokens, well under
/// 1 MiB today), so 4 MiB leaves room for every genuine call, including a large file written in
/// one go, while bounding what parsing and schema validation of one call can cost. Longer text
/// is refused before it is parsed; the model is told to split the work into smaller calls.
pub const MAX_ARGUMENT_BYTES: usize = 4 * 1024 * 1024;

/// A call whose tool is known and whose arguments passed the schema.
pub(crate) struct Prepared {
    pub tool: Arc<RegisteredTool>,
    pub args: Value,
    /// No other call runs beside this one (a direct call, a turn of one call): its handler is
    /// then polled in the caller's task on any runtime, since a task of its own would buy no
    /// parallelism, only a hop to another thread and back (see `inline`).
    pub alone: bool,
}

/// Prepares `call`; `alone` when no other call runs beside it (see [`Prepared::alone`]).
pub(crate) fn prepare(
    registry: &ToolRegistry,
    call: &ToolCall,
    alone: bool,
) -> Result<Prepared, Box<ToolResult>> {
    checked_prepare(registry, call, alone).map_err(|mut result| {
        // Error results echo the model's input: they get the same cap as every other result.
        truncate_result(&mut result, registry.call_policy().max_result_bytes);
        result
    })
}

fn checked_prepare(
    registry: &ToolRegistry,
    call: &ToolCall,
    alone: bool,
) -> Result<Prepared, Box<ToolResult>> {
    check_sizes(registry, call)?;
    let tool = resolve(registry, call)?;
    let name = &tool.definition.name;
    let args = parse_arguments(
        name,
        &call.arguments,
        &tool.definition.input_schema,
        tool.schema.properties(),
    )
    .map_err(|msg| {
        Box::new(ToolResult::error(
            &call.id,
            name,
            ToolErrorKind::MalformedArguments,
            msg,
        ))
    })?;
    tool.schema.validate(name, &args).map_err(|msg| {
        Box::new(ToolResult::error(
            &call.id,
            name,
            ToolErrorKind::InvalidArguments,
            msg,
        ))
    })?;
    Ok(Prepared { tool, args, alone })
}

/// Refuses a name longer than [`MAX_TOOL_NAME_BYTES`] or argument text longer than
/// [`MAX_ARGUMENT_BYTES`], before any repair or parsing work.
fn check_sizes(registry: &ToolRegistry, call: &ToolCall) -> Result<(), Box<ToolResult>> {
    let size = call.name.len();
    if size > MAX_TOOL_NAME_BYTES {
        return Err(Box::new(ToolResult::error(
            &call.id,
            echo(&call.name),
            ToolErrorKind::UnknownTool,
            format!(
                "The tool name `{}` is {size} bytes long, over the limit of \
                 {MAX_TOOL_NAME_BYTES} bytes, so it was not looked up and the call was not run. \
                 Call again with the exact name of one of the available tools: {}.",
                echo(&call.name),
                available(&registry.list_tools()),
            ),
        )));
    }
    let size = call.arguments.len();
    if size > MAX_ARGUMENT_BYTES {
        return Err(Box::new(ToolResult::error(
            &call.id,
            &call.name,
            ToolErrorKind::MalformedArguments,
            format!(
                "The arguments for `{}` are {size} bytes long, over the limit of \
                 {MAX_ARGUMENT_BYTES} bytes (4 MiB), so they were not read and the tool did not \
                 run. Split the work into several smaller calls.",
                call.name
            ),
        )));
    }
    Ok(())
}

/// The tool list an error message offers.
fn available(names: &[impl AsRef<str>]) -> String {
    if names.is_empty() {
        return "none".to_owned();
    }
    let names: Vec<&str> = names.iter().map(AsRef::as_ref).collect();
    names.join(", ")
}

/// An exact name always wins; otherwise a name that differs only by formatting is repaired when
/// exactly one tool matches. Anything else is an error result with suggestions.
fn resolve(
    registry: &ToolRegistry,
    call: &ToolCall,
) -> Result<Arc<RegisteredTool>, Box<ToolResult>> {
    if let Some(tool) = registry.lookup(&call.name) {
        return Ok(tool);
    }
    let key = normalize(&call.name);
    let tools = registry.snapshot();
    let matches: Vec<&Arc<RegisteredTool>> = if key.is_empty() {
        Vec::new()
    } else {
        tools
            .iter()
            .filter(|t| normalize(&t.definition.name) == key)
            .collect()
    };
    if let [only] = matches.as_slice() {
        return Ok(Arc::clone(only));
    }
    let names: Vec<&str> = tools.iter().map(|t| t.definition.name.as_str()).collect();
    let available = available(&names);
    let message = if matches.len() > 1 {
        let candidates: Vec<&str> = matches.iter().map(|t| t.definition.name.as_str()).collect();
        format!(
            "The tool name `{}` is ambiguous: it matches {}. The call was not run. Call again with \
             the exact name. Available tools: {available}.",
            call.name,
            candidates.join(" and ")
        )
    } else {
        let close = suggestions(&call.name, names.iter().copied());
        let hint = if close.is_empty() {
            String::new()
        } else {
            format!(" Did you mean: {}?", close.join(", "))
        };
        format!(
            "Unknown tool `{}`.{hint} The call was not run. Call again with one of the available \
             tools: {available}.",
            call.name
        )
    };
    Err(Box::new(ToolResult::error(
        &call.id,
        &call.name,
        ToolErrorKind::UnknownTool,
        message,
    )))
}

/// Parses argument text into a JSON object, room for `properties` keys made at once (the number
/// the schema declares). Empty text counts as `{}` when nothing is required.
pub(crate) fn parse_arguments(
    tool: &str,
    raw: &str,
    schema: &Value,
    properties: usize,
) -> Result<Value, String> {
    // Models send an object with no space around it nearly always: trimming is then skipped.
    let text = if raw.starts_with('{') && raw.ends_with('}') {
        raw
    } else {
        raw.trim()
    };
    if text.is_empty() {
        let required = required_fields(schema);
        if required.is_empty() {
            return Ok(Value::Object(Default::default()));
        }
        let fields: Vec<String> = required.iter().map(|f| format!("`{f}`")).collect();
        return Err(format!(
            "The call to `{tool}` had no arguments, but it needs a JSON object with its required \
             fields: {}. The tool did not run. Send the call again with the arguments.",
            fields.join(", ")
        ));
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let parsed = TopLevel { properties }
        .deserialize(&mut de)
        .and_then(|value| de.end().map(|()| value));
    match parsed {
        Ok(Value::Object(map)) => Ok(Value::Object(map)),
        Ok(other) => Err(format!(
            "The arguments for `{tool}` must be a JSON object, but they are {}. The tool did not \
             run. Send the call again with a JSON object.",
            json_kind(&other)
        )),
        Err(e) if e.is_eof() => Err(format!(
            "The arguments for `{tool}` were cut off before the JSON ended ({e}). The tool did not \
             run. Send the call again with the complete JSON object."
        )),
        Err(e) => Err(format!(
            "The arguments for `{tool}` are not valid JSON ({e}). The tool did not run. Send the \
             call again with a valid JSON object."
        )),
    }
}

/// The arguments' top level: an object is read into a map with room for the schema's
/// properties, made once instead of grown key by key; any other value is read only for its kind,
/// which the error names.
struct TopLevel {
    properties: usize,
}

impl<'de> DeserializeSeed<'de> for TopLevel {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for TopLevel {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        // Capped: a schema's count is a hint, not a promise of what the model sends.
        let mut map = Map::with_capacity(self.properties.min(64));
        while let Some(key) = access.next_key::<String>()? {
            let value = access.next_value::<Value>()?;
            // As `serde_json::Value` reads an object: a repeated key keeps its last value.
            map.insert(key, value);
        }
        Ok(Value::Object(map))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        while access.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Value::Array(Vec::new()))
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_str<E>(self, _: &str) -> Result<Value, E> {
        Ok(Value::String(String::new()))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
}

/// JSON with object keys sorted at every level, so equal arguments give equal text.
pub(crate) fn canonical_json(v: &Value) -> String {
    fn write(v: &Value, out: &mut String) {
        match v {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                out.push('{');
                for (i, k) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String(k.clone()).to_string());
                    out.push(':');
                    write(&map[k], out);
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(item, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut out = String::new();
    write(v, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn canonical_json_sorts_keys_deeply() {
        let a = json!({"b": 1, "a": {"y": [1, {"d": 2, "c": 3}], "x": null}});
        let b: Value =
            serde_json::from_str(r#"{"a":{"x":null,"y":[1,{"c":3,"d":2}]},"b":1}"#).unwrap();
        assert_eq!(canonical_json(&a), canonical_json(&b));
        assert_eq!(
            canonical_json(&a),
            r#"{"a":{"x":null,"y":[1,{"c":3,"d":2}]},"b":1}"#
        );
    }

    #[test]
    fn argument_errors_are_specific() {
        let schema = json!({"type": "object", "required": ["a"]});
        let open = json!({"type": "object"});
        assert_eq!(
            parse_arguments("t", "", &schema, 1).unwrap_err(),
            "The call to `t` had no arguments, but it needs a JSON object with its required \
             fields: `a`. The tool did not run. Send the call again with the arguments."
        );
        let two = json!({"type": "object", "required": ["path", "content"]});
        assert!(
            parse_arguments("t", " ", &two, 2)
                .unwrap_err()
                .contains("required fields: `path`, `content`.")
        );
        assert_eq!(parse_arguments("t", "  ", &open, 0).unwrap(), json!({}));
        assert!(
            parse_arguments("t", "[1]", &open, 0)
                .unwrap_err()
                .contains("they are an array")
        );
        assert!(
            parse_arguments("t", r#"{"a": "abc"#, &open, 0)
                .unwrap_err()
                .contains("cut off")
        );
        assert!(
            parse_arguments("t", r#"{"a" 1}"#, &open, 0)
                .unwrap_err()
                .contains("not valid JSON")
        );
    }

    #[test]
    fn arguments_read_as_serde_json_reads_them_whatever_the_room_made() {
        let open = json!({"type": "object"});
        for text in [
            r#"{"a": 2, "b": 3}"#,
            r#"{"a": 1, "a": 2}"#,
            r#"{"nested": {"x": [1, 2.5, "s", null, true, {"y": {}}]}, "z": "\u00e9\n"}"#,
            r#"{}"#,
            "\n\t {\"padded\": true} \n",
        ] {
            let expected: Value = serde_json::from_str(text).unwrap();
            for properties in [0, 1, 2, 1000] {
                let parsed = parse_arguments("t", text, &open, properties).unwrap();
                assert_eq!(parsed, expected, "{text} with room for {properties}");
            }
        }
        // A repeated key keeps its last value and its first place, as in `serde_json::Value`.
        let keys: Vec<String> = parse_arguments("t", r#"{"b": 1, "a": 2, "b": 3}"#, &open, 2)
            .unwrap()
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        assert_eq!(keys, ["b", "a"]);
    }

    #[test]
    fn arguments_that_are_not_an_object_are_named_by_kind() {
        let open = json!({"type": "object"});
        for (text, kind) in [
            (r#""text""#, "a string"),
            ("12", "a number"),
            ("-3", "a number"),
            ("1.5", "a number"),
            ("true", "a boolean"),
            ("null", "null"),
            (r#"[{"a": [1, 2]}, "x"]"#, "an array"),
        ] {
            let message = parse_arguments("t", text, &open, 3).unwrap_err();
            assert!(
                message.contains(&format!("they are {kind}.")),
                "{text}: {message}"
            );
        }
        let cut = parse_arguments("t", r#"[1, {"a": "#, &open, 0).unwrap_err();
        assert!(cut.contains("cut off"), "{cut}");
        let trailing = parse_arguments("t", r#"{"a": 1} {"b": 2}"#, &open, 1).unwrap_err();
        assert!(trailing.contains("not valid JSON"), "{trailing}");
        let bad_inside = parse_arguments("t", r#"[1, {"a" 2}]"#, &open, 0).unwrap_err();
        assert!(bad_inside.contains("not valid JSON"), "{bad_inside}");
    }
}
