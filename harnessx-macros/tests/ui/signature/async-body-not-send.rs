use std::rc::Rc;

use harnessx::tool;

/// Hold something that is not `Send` across an `.await`.
#[tool]
async fn hold(text: String) -> String {
    let shared = Rc::new(text);
    tokio::task::yield_now().await;
    (*shared).clone()
}

fn main() {}
