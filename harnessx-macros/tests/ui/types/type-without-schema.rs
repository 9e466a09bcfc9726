use harnessx::tool;

/// A point without serde or schemars derives.
pub struct Point {
    pub x: f64,
    pub y: f64,
}

/// Distance from the origin.
#[tool]
fn norm(point: Point) -> f64 {
    (point.x * point.x + point.y * point.y).sqrt()
}

fn main() {}
