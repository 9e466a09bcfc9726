use harnessx::{ToolContext, tool};

/// Name the call.
#[tool]
fn whoami(#[arg(description = "The context.")] ctx: ToolContext) -> String {
    ctx.call_id().to_owned()
}

fn main() {}
