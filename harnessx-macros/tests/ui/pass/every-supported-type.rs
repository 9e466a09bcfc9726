use std::collections::{BTreeMap, HashMap};

use harnessx::{ToolOutput, ToolRegistry, tool};

/// A colour.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub enum Colour {
    /// Red.
    Red,
    /// Green.
    Green,
}

/// A filter.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Filter {
    /// The field.
    pub field: String,
    /// Optional colour.
    pub colour: Option<Colour>,
}

/// Everything at once.
#[tool]
#[allow(clippy::too_many_arguments)]
fn everything(
    text: String,
    flag: bool,
    small: u8,
    big: i128,
    ratio: f32,
    maybe: Option<f64>,
    nested: Vec<Vec<Option<String>>>,
    by_name: HashMap<String, Vec<u16>>,
    ordered: BTreeMap<String, bool>,
    any: serde_json::Value,
    colour: Colour,
    filters: Vec<Filter>,
    array: [i32; 3],
    r#type: String,
    mut counter: u64,
) -> ToolOutput {
    counter += 1;
    let _ = (text, flag, small, big, ratio, maybe, nested, by_name, ordered, any, colour, filters, array, r#type, counter);
    ToolOutput::text("ok")
}

/// Returns nothing.
#[tool]
fn nothing() {}

/// Returns a map.
#[tool]
fn scores() -> BTreeMap<String, Vec<i32>> {
    BTreeMap::new()
}

fn main() {
    let registry = ToolRegistry::new();
    registry.register_tool(everything).unwrap();
    registry.register_tool(nothing).unwrap();
    registry.register_tool(scores).unwrap();
}
