use std::cell::RefCell;

use harnessx::{State, tool};

/// Read shared state that is not `Sync`.
#[tool]
fn read(cache: State<RefCell<String>>) -> String {
    cache.borrow().clone()
}

fn main() {}
