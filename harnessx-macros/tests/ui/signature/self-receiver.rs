use harnessx::tool;

struct Calculator;

impl Calculator {
    /// Add two numbers.
    #[tool]
    fn add(&self, a: i64, b: i64) -> i64 {
        a + b
    }
}

fn main() {}
