use harnessx::tool;

/// A point.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Point {
    /// Across.
    pub x: f64,
    /// Up.
    pub y: f64,
}

/// Distance from the origin.
#[tool]
fn norm(Point { x, y }: Point) -> f64 {
    (x * x + y * y).sqrt()
}

fn main() {}
