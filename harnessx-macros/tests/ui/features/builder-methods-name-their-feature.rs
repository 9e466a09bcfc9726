// harnessx comes here without its default features, so `knowledge`, `skills` and `mcp` are off:
// calling their builder methods must fail with an error naming the feature to turn on.
use harnessx::{Agent, TestModel};

fn main() {
    let _ = Agent::builder().model(TestModel::new()).skills("skills/").build();
    let _ = Agent::builder().model(TestModel::new()).knowledge("docs/").build();
    let _ = Agent::builder().model(TestModel::new()).mcp_server("files").build();
}
