//! An invalid value for a field with a fixed set of values names the allowed values, in the
//! words of the schema the model saw (`anyOf`, never `oneOf`).

use harnessx::{ToolCall, ToolDefinition, ToolOutput, ToolRegistry, handler_fn};
use serde_json::{Value, json};

async fn message(schema: Value, args: Value) -> String {
    let registry = ToolRegistry::new();
    registry
        .register_tool(ToolDefinition::new(
            "paint",
            "Paint.",
            schema,
            handler_fn(|_, _| async { Ok(ToolOutput::text("ok")) }),
        ))
        .unwrap();
    let result = registry
        .execute(&ToolCall::json("c1", "paint", args), None)
        .await;
    assert!(result.is_error);
    result.content
}

#[tokio::test]
async fn a_plain_enum_names_the_allowed_values() {
    let schema = json!({
        "type": "object",
        "properties": {"colour": {"type": "string", "enum": ["red", "green", "blue"]}},
        "required": ["colour"]
    });
    assert_eq!(
        message(schema, json!({"colour": "pink"})).await,
        "Invalid arguments for `paint`: field `colour`: \"pink\" is not one of \"red\", \"green\" or \"blue\". Fix it and call `paint` again."
    );
}

#[tokio::test]
async fn a_documented_enum_names_its_values_without_speaking_of_one_of() {
    // The shape schemars gives a Rust enum whose variants have doc comments, behind a `$ref`.
    let schema = json!({
        "type": "object",
        "properties": {"colour": {"$ref": "#/$defs/Colour"}},
        "required": ["colour"],
        "$defs": {"Colour": {"oneOf": [
            {"const": "red", "description": "Warm."},
            {"enum": ["blue"], "description": "Cold."}
        ]}}
    });
    let text = message(schema, json!({"colour": "pink"})).await;
    assert_eq!(
        text,
        "Invalid arguments for `paint`: field `colour`: \"pink\" is not one of the allowed values: \"red\", \"blue\". Fix it and call `paint` again."
    );
}

#[tokio::test]
async fn other_alternatives_are_described_as_the_model_saw_them() {
    let schema = json!({
        "type": "object",
        "properties": {"size": {"oneOf": [{"type": "integer"}, {"type": "string", "pattern": "^[0-9]+px$"}]}}
    });
    let text = message(schema.clone(), json!({"size": true})).await;
    assert_eq!(
        text,
        "Invalid arguments for `paint`: field `size`: true matches none of the alternatives (`anyOf`). Fix it and call `paint` again."
    );
    let both = json!({
        "type": "object",
        "properties": {"size": {"oneOf": [{"type": "integer"}, {"type": "number"}]}}
    });
    let text = message(both, json!({"size": 3})).await;
    assert_eq!(
        text,
        "Invalid arguments for `paint`: field `size`: 3 matches more than one of the alternatives (`anyOf`); send a value that matches exactly one. Fix it and call `paint` again."
    );
    assert!(!text.contains("oneOf"));
}
