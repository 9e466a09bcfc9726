//! Context parameters are recognised by trait (`FromToolContext`), not by name: user types
//! called `State` and `ToolContext` are ordinary arguments, and the real ones still work under
//! another name.

use harnessx::{ToolRegistry, tool};
use schemars::JsonSchema;
use serde::Deserialize;

/// A US state, sent by the model.
#[derive(Deserialize, JsonSchema)]
pub struct State {
    /// Its two-letter code.
    pub code: String,
}

mod mine {
    /// The model's view of a ticket.
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    pub struct ToolContext {
        /// The ticket id.
        pub ticket: u64,
    }
}

type Ctx = harnessx::ToolContext;
type Shared = harnessx::State<String>;

/// Look a state up.
#[tool]
fn capital(state: State, ticket: mine::ToolContext, ctx: Ctx, greeting: Shared) -> String {
    format!("{} {} #{} ({})", *greeting, state.code, ticket.ticket, ctx.call_id())
}

fn main() {
    let registry = ToolRegistry::new();
    registry.insert_state(String::from("hello"));
    let def = registry.register_tool(capital).unwrap();
    assert_eq!(def.input_schema["required"], serde_json::json!(["state", "ticket"]));
}
