use harnessx::{State, ToolContext, ToolError, ToolRegistry, tool};

/// An HTTP client stand-in.
pub struct Client;

/// Fetch a page.
///
/// # Arguments
///
/// * `url` - The address.
#[tool(concurrent = false)]
pub async fn fetch_url(
    url: String,
    #[arg(default = 20_000)] max_length: usize,
    client: State<Client>,
    ctx: harnessx::ToolContext,
) -> Result<String, ToolError> {
    let _ = (client, ctx);
    Ok(url.chars().take(max_length).collect())
}

/// Name the call.
#[tool]
async fn whoami(ctx: ToolContext) -> String {
    ctx.call_id().to_owned()
}

async fn direct() -> Result<String, ToolError> {
    let client = State(std::sync::Arc::new(Client));
    fetch_url("https://example.com".to_owned(), 10, client, ToolContext::new("c", "t")).await
}

fn main() {
    let registry = ToolRegistry::new();
    registry.register_tool(fetch_url).unwrap();
    registry.register_tool(whoami).unwrap();
    let _ = direct;
}
