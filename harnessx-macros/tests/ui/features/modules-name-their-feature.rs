// harnessx comes here without its default features: the modules of the opt-in integrations are
// missing, and the error for each must name the feature it needs.
use harnessx::knowledge::SqliteKnowledgeBase;
use harnessx::mcp::McpServer;
use harnessx::skills::Skills;

fn main() {}
