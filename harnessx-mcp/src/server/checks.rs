//! What the server answers itself before a message reaches the protocol layer: a message that is
//! not JSON gets JSON-RPC's parse error (`-32700`, id `null`), and a `tools/call` whose params
//! are not a tool name with an object of arguments gets invalid params (`-32602`, with the
//! request's id), so a client learns which of its messages was wrong instead of hearing nothing
//! (stdio) or a bare HTTP status.

use serde_json::{Value, json};

/// JSON-RPC's code for a message that is not JSON.
pub(crate) const PARSE_ERROR: i64 = -32700;

/// JSON-RPC's code for a request whose params do not fit its method.
pub(crate) const INVALID_PARAMS: i64 = -32602;

/// What to do with one incoming message.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Verdict {
    /// Hand it to the protocol layer.
    Forward,
    /// Answer it with this JSON-RPC error response (and do not forward it).
    Answer(Value),
}

fn error(id: Value, code: i64, message: String) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// Checks one message (a line over stdio, a body over HTTP).
pub(crate) fn check(raw: &[u8]) -> Verdict {
    let message: Value = match serde_json::from_slice(raw) {
        Ok(v) => v,
        Err(e) => {
            return Verdict::Answer(error(
                Value::Null,
                PARSE_ERROR,
                format!("Parse error: the message is not JSON ({e}); send one JSON-RPC message"),
            ));
        }
    };
    let Some(object) = message.as_object() else {
        return Verdict::Forward;
    };
    if object.get("method").and_then(Value::as_str) != Some("tools/call") {
        return Verdict::Forward;
    }
    let Some(id) = object.get("id").cloned() else {
        return Verdict::Forward;
    };
    let problem = match object.get("params") {
        None => Some("`params` is missing; give {\"name\": TOOL, \"arguments\": {...}}".to_owned()),
        Some(Value::Object(params)) => match (params.get("name"), params.get("arguments")) {
            (None, _) => Some("`params.name` is missing; name the tool to call".to_owned()),
            (Some(name), _) if !name.is_string() => Some(format!(
                "`params.name` is {name}, not a tool name (a string)"
            )),
            (_, Some(args)) if !(args.is_object() || args.is_null()) => Some(format!(
                "`params.arguments` is {}, not an object of arguments",
                kind(args)
            )),
            _ => None,
        },
        Some(other) => Some(format!("`params` is {}, not an object", kind(other))),
    };
    match problem {
        Some(p) => Verdict::Answer(error(id, INVALID_PARAMS, format!("Invalid params: {p}"))),
        None => Verdict::Forward,
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(raw: &str) -> Value {
        match check(raw.as_bytes()) {
            Verdict::Answer(v) => v,
            Verdict::Forward => panic!("forwarded: {raw}"),
        }
    }

    #[test]
    fn garbage_is_a_parse_error_with_a_null_id() {
        let a = answer("this is not json");
        assert_eq!(a["id"], Value::Null);
        assert_eq!(a["error"]["code"], PARSE_ERROR);
        assert!(
            a["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("Parse error: the message is not JSON (")
        );
    }

    #[test]
    fn malformed_tool_calls_are_invalid_params_with_their_id() {
        let a = answer(
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","arguments":[1]}}"#,
        );
        assert_eq!(a["id"], 7);
        assert_eq!(a["error"]["code"], INVALID_PARAMS);
        assert_eq!(
            a["error"]["message"],
            "Invalid params: `params.arguments` is an array, not an object of arguments"
        );
        let a =
            answer(r#"{"jsonrpc":"2.0","id":"q","method":"tools/call","params":{"arguments":{}}}"#);
        assert_eq!(a["id"], "q");
        assert_eq!(
            a["error"]["message"],
            "Invalid params: `params.name` is missing; name the tool to call"
        );
        let a = answer(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":3}"#);
        assert_eq!(
            a["error"]["message"],
            "Invalid params: `params` is a number, not an object"
        );
        let a = answer(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}"#);
        assert_eq!(
            a["error"]["message"],
            "Invalid params: `params.name` is 5, not a tool name (a string)"
        );
        let a = answer(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#);
        assert!(
            a["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("Invalid params: `params` is missing")
        );
    }

    #[test]
    fn everything_else_is_forwarded() {
        for ok in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"[1,2]"#,
        ] {
            assert_eq!(check(ok.as_bytes()), Verdict::Forward, "{ok}");
        }
    }
}
