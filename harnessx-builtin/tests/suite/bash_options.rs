//! register_bash_tools: selection, options, registered metadata, schema and description.

use std::time::Duration;

use harnessx::{PermissionLevel, RegistryError, ReplayPolicy, ToolContext, ToolRegistry};
use harnessx_builtin::bash::{BASH_TOOLS, BashOptions, register_bash_tools};
use serde_json::json;

fn config_error(options: BashOptions) -> String {
    match register_bash_tools(&ToolRegistry::new(), options) {
        Err(RegistryError::Config(message)) => message,
        other => panic!("expected a config error, got {other:?}"),
    }
}

#[test]
fn registers_run_bash_with_its_own_limit_serial_and_manual() {
    let registry = ToolRegistry::builder()
        .default_timeout_seconds(60.0)
        .build();
    let names = register_bash_tools(&registry, BashOptions::default()).unwrap();
    assert_eq!(names, BASH_TOOLS);
    let def = registry.get_tool("run_bash").unwrap();
    // A command's 300 s, then the time to stop it (2 s) and read what is left (0.25 s), and 1 s.
    assert_eq!(def.timeout, Some(Duration::from_secs_f64(303.25)));
    assert_eq!(
        registry.effective_timeout(&def),
        Duration::from_secs_f64(303.25)
    );
    assert!(!def.concurrent);
    assert_eq!(def.replay_policy, ReplayPolicy::Manual);
    assert_eq!(def.permission, None, "inherits the agent's policy");
    assert_eq!(def.annotations.read_only_hint, Some(false));
}

#[test]
fn schema_has_command_and_optional_timeout() {
    let registry = ToolRegistry::new();
    register_bash_tools(&registry, BashOptions::default()).unwrap();
    let schema = registry.get_tool("run_bash").unwrap().input_schema;
    assert_eq!(schema["required"], json!(["command"]));
    assert_eq!(schema["additionalProperties"], json!(false));
    assert_eq!(schema["properties"]["command"]["type"], json!("string"));
    assert_eq!(
        schema["properties"]["timeout"]["type"],
        json!(["number", "null"])
    );
    assert_eq!(
        schema["properties"]["timeout"]["description"],
        json!("Seconds before the command is stopped. Default 300 s, at most 300 s.")
    );
}

#[test]
fn description_says_what_it_does_its_limits_and_how_to_see_more() {
    let registry = ToolRegistry::new();
    let options = BashOptions {
        default_timeout_seconds: Some(60.0),
        max_output_bytes: 10_000,
        ..BashOptions::default()
    };
    register_bash_tools(&registry, options).unwrap();
    let description = registry.get_tool("run_bash").unwrap().description;
    for needle in [
        "Run a shell command with `bash -c`",
        "Commands run in the sandbox the application bound, or else on the host.",
        "Stdin is closed",
        "Background processes are ended",
        "`timeout` seconds (default 60 s, at most 300 s)",
        "at most 10000 bytes are shown, the beginning and the end",
        "sed -n '200,400p' out.txt",
    ] {
        assert!(
            description.contains(needle),
            "missing {needle:?} in {description}"
        );
    }
}

#[test]
fn permission_and_replace_are_applied() {
    let registry = ToolRegistry::new();
    let options = BashOptions {
        permission: Some(PermissionLevel::Ask),
        ..BashOptions::default()
    };
    register_bash_tools(&registry, options.clone()).unwrap();
    assert_eq!(
        registry.get_tool("run_bash").unwrap().permission,
        Some(PermissionLevel::Ask)
    );
    let again = register_bash_tools(&registry, options.clone());
    assert!(matches!(again, Err(RegistryError::Duplicate(name)) if name == "run_bash"));
    let replaced = BashOptions {
        replace: true,
        ..options
    };
    assert_eq!(
        register_bash_tools(&registry, replaced).unwrap(),
        ["run_bash"]
    );
}

#[test]
fn include_and_exclude_select_tools() {
    let registry = ToolRegistry::new();
    let only = BashOptions {
        include: Some(vec!["run_bash".into()]),
        ..BashOptions::default()
    };
    assert_eq!(register_bash_tools(&registry, only).unwrap(), ["run_bash"]);
    let none = BashOptions {
        exclude: vec!["run_bash".into()],
        replace: true,
        ..BashOptions::default()
    };
    let fresh = ToolRegistry::new();
    assert!(register_bash_tools(&fresh, none).unwrap().is_empty());
    assert!(fresh.is_empty());
}

#[test]
fn unknown_names_fail_listing_the_valid_ones() {
    let include = BashOptions {
        include: Some(vec!["bash".into()]),
        ..BashOptions::default()
    };
    assert_eq!(
        config_error(include),
        "`include` names `bash`, which is not a tool of the bash bundle; its tools are: run_bash"
    );
    let exclude = BashOptions {
        exclude: vec!["run_shell".into()],
        ..BashOptions::default()
    };
    assert_eq!(
        config_error(exclude),
        "`exclude` names `run_shell`, which is not a tool of the bash bundle; its tools are: run_bash"
    );
}

#[test]
fn out_of_range_options_fail_naming_the_option() {
    assert_eq!(
        config_error(BashOptions {
            timeout_seconds: -1.0,
            ..BashOptions::default()
        }),
        "bash option `timeout_seconds` must be a finite number of seconds of at least 0, but it is -1"
    );
    assert_eq!(
        config_error(BashOptions {
            timeout_seconds: 0.0,
            ..BashOptions::default()
        }),
        "bash option `timeout_seconds` is 0, but a command needs time to run; give the longest a \
         command may run, in seconds"
    );
    // Grace periods near the largest duration: an error, not an overflow.
    assert_eq!(
        config_error(BashOptions {
            kill_grace_seconds: 1.8e19,
            drain_seconds: 1.8e19,
            ..BashOptions::default()
        }),
        "bash options `timeout_seconds + kill_grace_seconds + drain_seconds + 1` come to more \
         than 86400 seconds; lower them"
    );
    assert_eq!(
        config_error(BashOptions {
            default_timeout_seconds: Some(500.0),
            ..BashOptions::default()
        }),
        "bash option `default_timeout_seconds` is 500, but it must be more than 0 and at most 300 \
         (`timeout_seconds`)"
    );
    assert_eq!(
        config_error(BashOptions {
            max_output_bytes: 10,
            ..BashOptions::default()
        }),
        "bash option `max_output_bytes` is 10, but it must be at least 256"
    );
    assert!(
        config_error(BashOptions {
            kill_grace_seconds: f64::NAN,
            ..BashOptions::default()
        })
        .starts_with("bash option `kill_grace_seconds` must be a finite number")
    );
}

#[test]
fn options_parse_from_json_and_refuse_unknown_keys() {
    let options: BashOptions = serde_json::from_value(json!({
        "include": ["run_bash"],
        "permission": "deny",
        "max_output_bytes": 4096
    }))
    .unwrap();
    assert_eq!(options.permission, Some(PermissionLevel::Deny));
    assert_eq!(options.max_output_bytes, 4096);
    assert_eq!(options.timeout_seconds, 300.0);
    let err = serde_json::from_value::<BashOptions>(json!({"max_output": 1})).unwrap_err();
    assert!(
        err.to_string().starts_with("unknown field `max_output`"),
        "{err}"
    );
}

#[tokio::test]
async fn a_direct_handler_call_without_a_command_is_refused() {
    let registry = ToolRegistry::new();
    register_bash_tools(&registry, BashOptions::default()).unwrap();
    let def = registry.get_tool("run_bash").unwrap();
    let err = def
        .handler
        .call(json!({}), ToolContext::new("c", "run_bash"))
        .await
        .unwrap_err();
    assert_eq!(
        err.message(),
        "Invalid arguments for `run_bash`: field `command` must be a string holding the script to \
         run. Fix it and call `run_bash` again."
    );
}

#[tokio::test]
async fn scripts_no_process_can_take_are_refused() {
    let registry = ToolRegistry::new();
    register_bash_tools(&registry, BashOptions::default()).unwrap();
    let call =
        |command: String| harnessx::ToolCall::json("c", "run_bash", json!({ "command": command }));
    let nul = registry.execute(&call("echo a\u{0}b".into()), None).await;
    assert!(nul.is_error);
    assert_eq!(
        nul.content,
        "Invalid arguments for `run_bash`: field `command` contains a NUL character, which a shell \
         command cannot hold. Remove it (write binary data with `printf '\\0'`) and call \
         `run_bash` again."
    );
    let long = registry
        .execute(&call(format!("echo {}", "x".repeat(140_000))), None)
        .await;
    assert_eq!(
        long.content,
        "Invalid arguments for `run_bash`: field `command` is 140005 bytes, more than the 131039 \
         one command can hold. Write the script to a file first and run it with `bash <file>`, or \
         split it into several calls."
    );
    // Just under the limit still runs (the limit leaves room for the gate in front of it).
    let fits = format!(": {}", "x".repeat(131_037));
    assert_eq!(fits.len(), 131_039);
    let ok = registry.execute(&call(fits), None).await;
    assert_eq!(ok.content, "(no output)\n[exit code 0]");
}
