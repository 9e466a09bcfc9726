//! The console in a real browser: the `harnessx serve` binary on 127.0.0.1 with scripted
//! agents, and `tests/browser/console.test.mjs` run by `node`, driving Debian's `chromium`
//! headless through `playwright-core` (installed by `.ci/install-browser.sh`). Screenshots of each
//! page land in `target/console-screenshots/`; with `HARNESSX_DOCS_SCREENSHOT=1` the Tools tab's
//! is also copied to `harnessx/docs/console-tools-tab.png` (the server guide's picture).
//!
//! The Connectors page signs a connector in through a real redirect: this test starts
//! `harnessx-testkit`'s authorization server and protected MCP server (feature `oauth`) on
//! 127.0.0.1 and passes their addresses to the node test, which adds the connector with the
//! page's form and presses Sign in.
//!
//! A second test runs two servers on one PostgreSQL database and
//! `tests/browser/two-servers.test.mjs` with two browsers, one on each: what one person changes
//! in the console on server A, the other sees on server B.
//!
//! A separate test binary: it runs two server processes and a browser for about half a minute,
//! and shares nothing with the API suite. With `CI` set, a missing `node`, `chromium`,
//! `playwright-core` or MCP test server fails the test; without it the test says what is missing
//! and returns.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

const KEY: &str = "browser-test-key-0123456789abcdef";

/// The key sealing the servers' connector sign-in tokens.
const SECRET_KEY: &str = "5f4dcc3b5aa765d61d8327deb882cf995f4dcc3b5aa765d61d8327deb882cf99";

/// The agents the browser test talks to, all on the scripted model.
fn config_text(workspace: &Path, memory_server: &Path) -> String {
    format!(
        r##"
[connectors.notes]
command = "node"
args = ["{memory}"]
env = {{ MEMORY_FILE_PATH = "{memory_file}" }}

[connectors.offline]
command = "/nonexistent/harnessx-no-such-mcp-server"
connect_timeout_seconds = 5

[agents.toolcheck]
model = "script"
instructions = "Report your tools."
builtins = [{{ name = "fetch_url" }}]
connectors = [{{ name = "notes", tools = ["read_graph", "create_entities"] }}]
script = [
  {{ call = "list_my_tools", arguments = {{}} }},
  {{ reply = "{{result}}" }},
]

[agents.asker]
model = "script"
instructions = "Ask which format to export."
script = [
  {{ ask = {{ questions = [{{ header = "Format", question = "Which format?", options = [{{ label = "CSV", description = "Comma-separated values" }}, {{ label = "JSON" }}] }}] }} }},
  {{ reply = "saw: {{result}}" }},
]

[agents.librarian]
model = "script"
instructions = "Look it up in the handbook."
script = [
  {{ call = "knowledge_search", arguments = {{ query = "How do I reach the VPN?" }} }},
  {{ reply = "found: {{result}}" }},
]

[agents.picker]
model = "script"
script = [
  {{ ask = {{ questions = [{{ header = "Channels", question = "Where should alerts go?", multi_select = true, options = [{{ label = "Email" }}, {{ label = "SMS" }}, {{ label = "Slack" }}] }}] }} }},
  {{ reply = "saw: {{result}}" }},
]

[agents.writer]
model = "script"
script = [
  {{ reply = "# Report\n\nAll **done**, with `code`, *care*, a [guide](https://example.com/guide) and [this](javascript:alert(1)).\n\n- one\n- two\n\n```\nlet x = 1;\n```\n\n<img src=x onerror=alert(1)>" }},
]

[agents.scribe]
model = "script"
builtins = [{{ name = "write_file", options = {{ permission = "ask", base_path = "{workspace}" }} }}]
script = [
  {{ call = "write_file", arguments = {{ path = "report.md", content = "# Report\nline 2\nline 3\nline 4\nline 5\nline 6\nline 7\nline 8\nline 9\nline 10\nline 11\nline 12\nline 13\nline 14\nline 15\nline 16\nline 17\nline 18\nline 19\nline 20\n" }} }},
  {{ reply = "saw: {{result}}" }},
]

[agents.approver]
model = "script"
builtins = [{{ name = "list_directory", options = {{ permission = "ask", base_path = "{workspace}" }} }}]
script = [
  {{ call = "list_directory", arguments = {{ path = "." }} }},
  {{ reply = "saw: {{result}}" }},
]
"##,
        memory = memory_server.display(),
        memory_file = workspace.join("memory.jsonl").display(),
        workspace = workspace.display(),
    )
}

/// Fails under `CI`, otherwise says why the test does nothing.
fn missing(what: &str) {
    let message = format!("{what} is missing; run `bash .ci/install-browser.sh`");
    assert!(std::env::var_os("CI").is_none(), "{message}");
    eprintln!("skipping the console browser test: {message}");
}

fn target_dir() -> PathBuf {
    // CARGO_TARGET_TMPDIR is `<target>/tmp`.
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .map_or_else(|| PathBuf::from("target"), Path::to_path_buf)
}

/// Starts the `harnessx` binary: `harnessx serve --config … --bind 127.0.0.1:0 --db …` (a SQLite
/// file or a PostgreSQL URL), with `ASK_USER_TIMEOUT_SECONDS` when `window` is given, and returns
/// it with the URL it prints.
async fn harnessx_serve(
    config: &Path,
    db: impl AsRef<std::ffi::OsStr>,
    window: Option<&str>,
) -> (Child, String) {
    let mut serve = Command::new(env!("CARGO_BIN_EXE_harnessx"));
    serve
        .arg("serve")
        .arg("--config")
        .arg(config)
        .args(["--bind", "127.0.0.1:0", "--db"])
        .arg(db)
        .env("HARNESSX_API_KEYS", KEY)
        .env("HARNESSX_SECRET_KEY", SECRET_KEY)
        .env_remove("ASK_USER_TIMEOUT_SECONDS")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(seconds) = window {
        serve.env("ASK_USER_TIMEOUT_SECONDS", seconds);
    }
    let mut child = serve.spawn().expect("the harnessx binary starts");
    let stderr = child.stderr.take().expect("stderr is piped");
    let mut lines = BufReader::new(stderr).lines();
    let url = tokio::time::timeout(Duration::from_secs(60), async {
        let mut said = String::new();
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(url) = line.strip_prefix("harnessx serving on ") {
                return url.to_owned();
            }
            said.push_str(&line);
            said.push('\n');
        }
        panic!("harnessx serve exited before serving:\n{said}");
    })
    .await
    .expect("harnessx serve printed its address within a minute");
    // Keep reading its log so the pipe never fills.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, url)
}

/// What the browser tests need: `node`, Chromium, playwright-core and the reference MCP memory
/// server. `None` (after [`missing`]) when one is not installed.
struct Browser {
    crate_dir: &'static Path,
    browser_dir: PathBuf,
    chromium: String,
    memory_server: PathBuf,
}

impl Browser {
    fn find() -> Option<Self> {
        let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
        let browser_dir = crate_dir.join("tests/browser");
        let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
        // `node` and the memory server (the test's connector), skipping or failing like the rest.
        let memory_server = harnessx_testkit::npm::reference_server("server-memory")?;
        if !Path::new(&chromium).exists() {
            missing(&format!("chromium ({chromium})"));
            return None;
        }
        if !browser_dir
            .join("node_modules/playwright-core/package.json")
            .exists()
        {
            missing("playwright-core (harnessx-server/tests/browser/node_modules)");
            return None;
        }
        Some(Self {
            crate_dir,
            browser_dir,
            chromium,
            memory_server,
        })
    }

    /// `node {script}` in `tests/browser` with `env`, within 5 minutes; fails the test with its
    /// output unless it succeeds.
    async fn run(&self, script: &str, env: &[(&str, &std::ffi::OsStr)], shots: &Path) {
        let mut node = Command::new("node");
        node.arg(script)
            .current_dir(&self.browser_dir)
            .env("CHROMIUM", &self.chromium)
            .env("SCREENSHOTS", shots)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .kill_on_drop(true);
        let output = tokio::time::timeout(Duration::from_secs(300), node.output())
            .await
            .unwrap_or_else(|_| panic!("{script} did not finish within 5 minutes"))
            .expect("node could not be started");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        println!("{stdout}");
        eprintln!("{stderr}");
        assert!(
            output.status.success(),
            "{script} failed ({}):\n{stdout}\n{stderr}",
            output.status
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_in_headless_chromium() {
    let Some(browser) = Browser::find() else {
        return;
    };
    let crate_dir = browser.crate_dir;
    let memory_server = &browser.memory_server;

    let oauth = harnessx_testkit::oauth::OAuthServers::start(true)
        .await
        .expect("the authorization server and protected MCP server start");
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(workspace.path().join("notes.txt"), "n").unwrap();
    std::fs::create_dir(workspace.path().join("sub")).unwrap();
    std::fs::write(workspace.path().join("sub/inner.txt"), "i").unwrap();
    let config = workspace.path().join("harnessx.toml");
    std::fs::write(&config, config_text(workspace.path(), memory_server)).unwrap();
    let (mut server, base) = harnessx_serve(&config, &workspace.path().join("runs.db"), None).await;
    // The same agents on a server whose questions expire after 2 seconds.
    let (mut expiring, expiry) =
        harnessx_serve(&config, &workspace.path().join("expiring.db"), Some("2")).await;

    let shots = target_dir().join("console-screenshots");
    let _ = std::fs::remove_dir_all(&shots);
    let (mcp_url, issuer) = (oauth.url(), oauth.issuer());
    let docs_shot = crate_dir.join("../harnessx/docs/console-tools-tab.png");
    let mut env: Vec<(&str, &std::ffi::OsStr)> = vec![
        ("HARNESSX_URL", base.as_ref()),
        ("HARNESSX_EXPIRY_URL", expiry.as_ref()),
        ("HARNESSX_KEY", KEY.as_ref()),
        ("OAUTH_MCP_URL", mcp_url.as_ref()),
        ("OAUTH_ISSUER", issuer.as_ref()),
    ];
    if std::env::var_os("HARNESSX_DOCS_SCREENSHOT").is_some() {
        env.push(("DOCS_SCREENSHOT", docs_shot.as_os_str()));
    }
    browser.run("console.test.mjs", &env, &shots).await;
    let _ = server.kill().await;
    let _ = expiring.kill().await;
    let exchanges = oauth.with(|auth| auth.exchanges);
    assert_eq!(exchanges, 1, "the browser's sign-in exchanged one code");
    for page in [
        "sign-in",
        "agents",
        "agent-settings",
        "agent-tools",
        "conversation-question",
        "conversation-answered",
        "conversation-approval",
        "conversation-approval-edited",
        "conversation-timeline",
        "conversation-markdown",
        "conversation-cancelled",
        "conversations",
        "conversation-expired",
        "knowledge",
        "knowledge-base",
        "agent-knowledge",
        "knowledge-375",
        "agent-tools-375",
        "conversation-375",
        "sign-in-375",
        "conversation-question-375",
        "connectors-needs-sign-in",
        "connectors-signed-in",
        "webhooks",
    ] {
        let png = shots.join(format!("{page}.png"));
        let bytes = std::fs::read(&png).unwrap_or_default();
        assert!(
            bytes.starts_with(b"\x89PNG"),
            "no screenshot at {}",
            png.display()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_in_one_browser_on_server_a_shows_in_another_on_server_b() {
    let Some(browser) = Browser::find() else {
        return;
    };
    let Some(pg) = harnessx_testkit::require_or_skip() else {
        return;
    };
    let workspace = tempfile::tempdir().unwrap();
    let config = workspace.path().join("harnessx.toml");
    std::fs::write(
        &config,
        "[agents.replier]\nmodel = \"script\"\nscript = [{ reply = \"hello\" }]\n",
    )
    .unwrap();
    let (mut a, a_url) = harnessx_serve(&config, pg.url(), None).await;
    let (mut b, b_url) = harnessx_serve(&config, pg.url(), None).await;
    let env: [(&str, &std::ffi::OsStr); 3] = [
        ("HARNESSX_A_URL", a_url.as_ref()),
        ("HARNESSX_B_URL", b_url.as_ref()),
        ("HARNESSX_KEY", KEY.as_ref()),
    ];
    let shots = target_dir().join("console-screenshots-two-servers");
    browser.run("two-servers.test.mjs", &env, &shots).await;
    let _ = a.kill().await;
    let _ = b.kill().await;
}
