//! Agents from a file: unknown keys and bad values name the key and line; a scripted agent runs
//! offline; no config serves one offline agent.

use harnessx_server::Config;

fn err(text: &str) -> String {
    Config::parse(text).unwrap_err().to_string()
}

#[test]
fn unknown_keys_name_the_key_and_line() {
    let e = err("[agents.a]\nmodel = \"script\"\ninstructons = \"x\"\n");
    assert!(e.contains("line 3") && e.contains("instructons"), "{e}");
    let e = err("[server]\nbind = \"127.0.0.1:1\"\nport = 3\n");
    assert!(e.contains("line 3") && e.contains("port"), "{e}");
    let e = err("[storage]\nsqlite = \"x.db\"\n");
    assert!(e.contains("line 1") && e.contains("storage"), "{e}");
    let e = err("[agents.a]\nmodel = \"script\"\nscript = [{ reply = \"x\", sleep = 1 }]\n");
    assert!(e.contains("line 3") && e.contains("sleep"), "{e}");
}

#[test]
fn bad_values_name_the_key_and_line() {
    let cases = [
        (
            "[store]\nworkers = 0\n",
            "line 2: `store.workers`: 0 is out of range",
        ),
        (
            "[server]\nmax_body_bytes = 10\n",
            "line 2: `server.max_body_bytes`",
        ),
        (
            "[server]\nmax_subscribers = -1\n",
            "line 2: `server.max_subscribers`",
        ),
        (
            "[server]\n\nbind = \"localhost\"\n",
            "line 3: `server.bind`: `localhost` is not an address",
        ),
        (
            "[server]\napi_keys = [\"short\"]\n",
            "line 2: `server.api_keys`: an API key shorter than 16",
        ),
        (
            "[agents.a]\nmodel = \"gpt-4o\"\n",
            "line 2: `agents.a.model`: the model spec `gpt-4o` names no provider",
        ),
        (
            "[agents.a]\nmodel = \"script\"\nscript = [\n  { reply = \"x\" },\n  { reply = \"x\", call = \"t\" },\n]\n",
            "line 5: `agents.a.script[1]`: give exactly one of",
        ),
        (
            "[agents.a]\nmodel = \"script\"\nscript = [{ call = \"t\", arguments = 3 }]\n",
            "line 3: `agents.a.script[0]`: `arguments` must be a table",
        ),
        (
            "[agents.a]\nmodel = \"script\"\nscript = [{ ask = 3 }]\n",
            "`agents.a.script[0]`: `ask` is a question string",
        ),
        (
            "[agents.a]\nmodel = \"script\"\nbuiltins = [{ name = \"fetch\" }]\n",
            "line 3: `agents.a.builtins[0]`: no built-in tool or bundle is named `fetch`",
        ),
        (
            "[agents.a]\nmodel = \"script\"\nbuiltins = [{ name = \"web\", options = { max_lenght = 3 } }]\n",
            "unknown field `max_lenght`",
        ),
        (
            "[agents.a]\nmodel = \"script\"\nconnectors = [{ name = \"crm\" }]\n",
            "line 3: `agents.a.connectors[0].name`: no connector is named `crm`",
        ),
        (
            "[connectors.crm]\ncommand = \"x\"\nurl = \"http://127.0.0.1:1/mcp\"\n",
            "line 1: `connectors.crm`: give either `command`",
        ),
        (
            "[agents.\"bad name\"]\nmodel = \"script\"\n",
            "`agents.bad name`: `bad name` is not a valid name",
        ),
        (
            "[agents.a]\nmodel = \"openai:gpt-4o\"\nscript = [{ reply = \"x\" }]\n",
            "`agents.a.script`: a script is given but the model is `openai:gpt-4o`",
        ),
        ("[agents.a]\nmodel = 3\n", "line 2"),
        (
            "[agents.a]\nmodel = \"script\"\ntool_timeout_seconds = 0\n",
            "line 3: `agents.a.tool_timeout_seconds`: 0 is not a time limit; give a number of \
             seconds above 0 and at most 86400",
        ),
        (
            "[agents.a]\nmodel = \"script\"\n\n[agents.a.tool_timeouts]\nrun_bash = -4\n",
            "line 5: `agents.a.tool_timeouts.run_bash`: -4 is not a time limit",
        ),
    ];
    for (text, expected) in cases {
        let e = err(text);
        assert!(
            e.contains(expected),
            "{text:?}\n  gave: {e}\n  expected: {expected}"
        );
    }
}

#[test]
fn a_file_that_cannot_be_read_names_it() {
    let e = Config::load(std::path::Path::new("/nonexistent/harnessx.toml")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "cannot read the configuration file `/nonexistent/harnessx.toml`"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.toml");
    std::fs::write(&path, "[store]\nworkers = 0\n").unwrap();
    let e = Config::load(&path).unwrap_err().to_string();
    assert!(e.starts_with(&format!("{}: line 2", path.display())), "{e}");
}

#[test]
fn the_offline_configuration_has_one_scripted_agent() {
    let c = Config::offline();
    assert_eq!(c.agents.keys().collect::<Vec<_>>(), ["assistant"]);
    assert_eq!(c.agents["assistant"].model.get_ref(), "script");
}

#[tokio::test]
async fn the_offline_agent_asks_and_replies_over_http() {
    let running = harnessx_server::serve(
        &Config::offline(),
        harnessx_server::ServeOptions::default()
            .bind("127.0.0.1:0".parse().unwrap())
            .api_key(crate::common::KEY)
            .sqlite(":memory:"),
    )
    .await
    .unwrap();
    let s = crate::common::Server::attach(running);
    let id = s.start_run("assistant", "hi").await["id"].as_i64().unwrap();
    s.wait_for(id, &["waiting_input"]).await;
    s.post(
        &format!("/v2/runs/{id}/answer"),
        serde_json::json!({"answers": [{"selected": ["Casually"]}]}),
    )
    .await;
    let done = s.wait_for(id, &["completed"]).await;
    assert!(
        done["output"]
            .as_str()
            .unwrap()
            .starts_with("Hello! You chose:"),
        "{done}"
    );
    assert!(
        done["output"].as_str().unwrap().contains("Casually"),
        "{done}"
    );
}
