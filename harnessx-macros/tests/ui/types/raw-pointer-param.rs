use harnessx::tool;

/// Read memory.
#[tool]
fn peek(address: *const u8) -> u8 {
    let _ = address;
    0
}

fn main() {}
