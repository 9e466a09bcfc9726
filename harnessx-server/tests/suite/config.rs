//! Agents from a file: unknown keys and bad values name the key and line; a scripted agent runs
//! offline; no config serves one offline agent. At start every agent's tools are built and its
//! model's key looked for, so what would fail the first run fails the start, naming the line;
//! what works but is likely a mistake is a warning naming the line.

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

/// `Config::check_start_with` on `text` with an environment holding `env`.
fn start(text: &str, env: &[(&str, &str)]) -> Result<Vec<String>, String> {
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    Config::parse(text)
        .map_err(|e| e.to_string())?
        .check_start_with(&|name| env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()))
        .map_err(|e| e.to_string())
}

#[test]
fn a_model_a_letter_off_is_named() {
    assert_eq!(
        err("[agents.a]\nmodel = \"scirpt\"\n"),
        "line 2: `agents.a.model`: `scirpt` is not a model; did you mean `script` (the scripted \
         model)?"
    );
    assert_eq!(
        err("[agents.a]\n\nmodel = \"antropic:claude-sonnet-4-5\"\n"),
        "line 3: `agents.a.model`: the model spec `antropic:claude-sonnet-4-5` names the unknown \
         provider `antropic`; did you mean `anthropic:claude-sonnet-4-5`?"
    );
}

#[test]
fn a_provider_without_its_key_names_the_line_that_chose_it() {
    let text = "[agents.helper]\ninstructions = \"Help.\"\n\nmodel = \"openai:gpt-4o\"\n";
    assert_eq!(
        start(text, &[]).unwrap_err(),
        "line 4: `agents.helper.model`: model = \"openai:gpt-4o\" needs OPENAI_API_KEY: set it \
         to your API key in the server's environment, or set OPENAI_BASE_URL to a server that \
         needs no key"
    );
    assert_eq!(start(text, &[("OPENAI_API_KEY", "sk-test")]), Ok(vec![]));
    assert_eq!(
        start(text, &[("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1")]),
        Ok(vec![])
    );
    assert_eq!(
        start(text, &[("OPENAI_BASE_URL", "ftp://x")]).unwrap_err(),
        "line 4: `agents.helper.model`: OPENAI_BASE_URL is `ftp://x`, which is not a usable base \
         URL (the scheme is `ftp`); set it to an http(s) URL such as `http://localhost:11434/v1`"
    );
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), text).unwrap();
    let loaded = Config::load(file.path()).unwrap();
    assert_eq!(
        loaded.check_start_with(&|_| None).unwrap_err().to_string(),
        format!(
            "{}: line 4: `agents.helper.model`: model = \"openai:gpt-4o\" needs OPENAI_API_KEY: \
             set it to your API key in the server's environment, or set OPENAI_BASE_URL to a \
             server that needs no key",
            file.path().display()
        )
    );
}

#[test]
fn built_in_tools_are_built_at_start() {
    let e = start(
        "[agents.a]\nmodel = \"script\"\nbuiltins = [\n  { name = \"filesystem\", options = { base_path = \"/nonexistent/harnessx-work\" } },\n]\n",
        &[],
    )
    .unwrap_err();
    assert_eq!(
        e,
        "line 4: `agents.a.builtins[0]`: filesystem option `base_path`: \
         `/nonexistent/harnessx-work` does not exist; create the directory first or fix the path"
    );
    let e = start(
        "[agents.a]\nmodel = \"script\"\nbuiltins = [{ name = \"read_file\", options = { base_path = \"/tmp\" } }, { name = \"filesystem\", options = { base_path = \"/tmp\" } }]\n",
        &[],
    )
    .unwrap_err();
    assert!(
        e.starts_with("line 3: `agents.a.builtins[1]`: "),
        "a tool loaded twice is found at start: {e}"
    );
}

#[test]
fn likely_mistakes_are_warnings_naming_the_line() {
    assert_eq!(
        start("", &[]).unwrap(),
        [
            "the configuration defines no agents ([agents.NAME] tables); only agents already stored \
          in the database, or added with POST /v2/agents or the console, can run"
        ]
    );
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        r#"[agents.a]
model = "script"
builtins = [
  {{ name = "read_file" }},
  {{ name = "list_directory", options = {{ base_path = "{}" }} }},
]
script = [
  {{ call = "read_file", arguments = {{ path = "x" }} }},
  {{ call = "list_my_tools", arguments = {{}} }},
  {{ reply = "{{result}}" }},
]

[agents.quiet]
model = "script"
ask_user = false
script = [{{ ask = "Proceed?" }}]
"#,
        dir.path().display()
    );
    assert_eq!(
        start(&text, &[]).unwrap(),
        [
            "line 4: `agents.a.builtins[0]`: the file tools of `read_file` have no `base_path`, \
             so they read and write anywhere the server's user may; give `base_path` to keep \
             them in one folder",
            "line 9: `agents.a.script[1]`: calls `list_my_tools`, which agent `a` does not have \
             (its tools: ask_user, list_directory, read_file); the run gets an unknown-tool error \
             at this turn",
            "line 16: `agents.quiet.script[0]`: asks the user, but `ask_user = false` takes \
             `ask_user` away from agent `quiet`; the run gets an unknown-tool error at this turn",
        ]
    );
    // A connector's tools are known once it is reached: any of its names may be called.
    let text = "[connectors.files]\ncommand = \"x\"\n\n[agents.a]\nmodel = \"script\"\nconnectors = [{ name = \"files\" }]\nscript = [{ call = \"mcp_files_read_file\", arguments = {} }]\n";
    assert_eq!(start(text, &[]), Ok(vec![]));
}
