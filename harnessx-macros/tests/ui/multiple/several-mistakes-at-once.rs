use harnessx::tool;

/// Search the catalogue.
///
/// Args:
///     query: What to look for.
///     limit: How many results.
#[tool(permission = "sometimes", concurrent = "no", timeout_seconds = -1)]
fn search<T>(query: &str, (page, size): (u32, u32), filters: std::collections::HashMap<i32, String>) -> Vec<String> {
    let _ = (query, page, size, filters);
    Vec::new()
}

fn main() {}
