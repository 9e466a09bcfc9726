//! The exporters applied to schemas the `#[tool]` macro generated (nested and optional params).

use harnessx::schema::export;
use harnessx::{ToolParams, ToolRegistry, tool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// Where to ship.
#[derive(Debug, Deserialize, JsonSchema)]
struct Address {
    /// Street and number.
    street: String,
    /// Optional floor.
    floor: Option<u8>,
}

/// How fast.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Speed {
    /// Standard delivery.
    Normal,
    /// Same day.
    Express,
}

/// Ship a parcel.
///
/// Args:
///     to: The destination.
///     speed: Delivery speed.
///     note: A note for the courier, or null.
///     copies: How many labels to print.
#[tool]
fn ship(
    to: Address,
    speed: Speed,
    note: Option<String>,
    #[arg(default = 1)] copies: u32,
) -> String {
    format!(
        "{} floor {:?} {speed:?} {note:?} {copies}",
        to.street, to.floor
    )
}

fn params() -> ToolParams {
    let registry = ToolRegistry::new();
    registry.register_tool(ship).expect("`ship` registers");
    registry.get_tool_params().remove(0)
}

fn walk(v: &Value, f: &mut dyn FnMut(&serde_json::Map<String, Value>)) {
    match v {
        Value::Object(m) => {
            f(m);
            m.values().for_each(|c| walk(c, f));
        }
        Value::Array(xs) => xs.iter().for_each(|c| walk(c, f)),
        _ => {}
    }
}

#[test]
fn openai_and_anthropic_wrap_the_neutral_schema() {
    let p = params();
    let o = export::openai(&p);
    assert_eq!(o["function"]["name"], "ship");
    assert_eq!(o["function"]["parameters"], p.input_schema);
    assert_eq!(
        o["function"]["parameters"]["required"],
        json!(["to", "speed", "note"])
    );
    let a = export::anthropic(&p);
    assert_eq!(a["input_schema"], p.input_schema);
    assert_eq!(a["description"], "Ship a parcel.");
}

#[test]
fn openai_strict_on_generated_schema() {
    let p = params();
    let tool = export::openai_strict(&p).unwrap();
    let schema = &tool["function"]["parameters"];
    assert_eq!(schema["required"], json!(["to", "speed", "note", "copies"]));
    assert_eq!(
        schema["properties"]["copies"],
        json!({"type": ["integer", "null"], "minimum": 0, "description": "How many labels to print. Default: 1."})
    );
    // The nested struct in `$defs` is strict too: every property required, no extras.
    let address = &schema["$defs"]["Address"];
    assert_eq!(address["required"], json!(["street", "floor"]));
    assert_eq!(address["additionalProperties"], false);
    walk(schema, &mut |m| {
        if m.contains_key("properties") {
            assert_eq!(m["additionalProperties"], false);
        }
    });

    // What the model sends in strict mode runs through the registry after relaxing.
    let mut args = json!({"to": {"street": "Main 1", "floor": null}, "speed": "express", "note": null, "copies": null});
    export::relax_strict_arguments(&p, &mut args);
    assert_eq!(
        args,
        json!({"to": {"street": "Main 1", "floor": null}, "speed": "express", "note": null})
    );
}

#[tokio::test]
async fn relaxed_strict_arguments_execute() {
    let registry = ToolRegistry::new();
    registry.register_tool(ship).unwrap();
    let p = registry.get_tool_params().remove(0);
    let mut args = json!({"to": {"street": "Main 1", "floor": 2}, "speed": "normal", "note": "ring", "copies": null});
    export::relax_strict_arguments(&p, &mut args);
    let result = registry
        .execute(&harnessx::ToolCall::json("c1", "ship", args), None)
        .await;
    assert!(!result.is_error, "{}", result.content);
    assert_eq!(
        result.content,
        "Main 1 floor Some(2) Normal Some(\"ring\") 1"
    );
}

#[test]
fn gemini_on_generated_schema() {
    let decl = export::gemini(&params());
    let schema = &decl["parameters"];
    assert_eq!(schema["properties"]["to"]["type"], "object");
    assert_eq!(
        schema["properties"]["to"]["description"],
        "The destination."
    );
    assert_eq!(
        schema["properties"]["to"]["properties"]["floor"],
        json!({"type": "integer", "nullable": true, "minimum": 0, "maximum": 255, "description": "Optional floor."})
    );
    assert_eq!(
        schema["properties"]["note"],
        json!({"type": "string", "nullable": true, "description": "A note for the courier, or null."})
    );
    assert_eq!(schema["properties"]["copies"]["default"], 1);
    walk(schema, &mut |m| {
        if let Some(t) = m.get("type") {
            assert!(t.is_string(), "type arrays are not allowed: {t}");
            assert_ne!(t, "null");
        }
        for key in ["$ref", "$defs", "const", "additionalProperties", "oneOf"] {
            assert!(!m.contains_key(key), "`{key}` is not allowed in {m:?}");
        }
    });
}
