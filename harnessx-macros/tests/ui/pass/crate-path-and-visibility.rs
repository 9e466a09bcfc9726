mod tools {
    use renamed::tool;

    /// Add two numbers.
    #[tool(crate = renamed)]
    pub fn add(a: i64, b: i64) -> i64 {
        a + b
    }
}

extern crate harnessx as renamed;

fn main() {
    assert_eq!(tools::add(1, 2), 3);
    let registry = renamed::ToolRegistry::new();
    registry.register_tool(tools::add).unwrap();
    let pointer: fn(i64, i64) -> i64 = *tools::add;
    assert_eq!(pointer(2, 2), 4);
}
