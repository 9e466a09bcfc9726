//! Agent Skills: loading and checking skill folders, and the read-only `Skill` tool.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use harnessx::skills::{SKILL_TOOL, SkillError, Skills, installed_skills, register_skills};
use harnessx::{
    Agent, AgentError, ApprovalDecision, PermissionLevel, PermissionManager, ToolCall,
    ToolDefinition, ToolOutput, ToolRegistry, ToolResult, handler_fn,
};
use serde_json::{Value, json};
use tempfile::TempDir;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn skill_md(name: &str, description: &str, body: &str) -> String {
    format!(
        "---\nname: {name}\ndescription: {description}\nlicense: MIT\nmetadata:\n  version: \"1.2\"\n---\n{body}\n"
    )
}

/// Two good skills, one with resource files, plus a secret outside the skills folder.
fn good_set() -> (TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("skills");
    write(
        &root.join("pdf-forms/SKILL.md"),
        &skill_md(
            "pdf-forms",
            "Fill in PDF forms.\n  Use when a task mentions a form.",
            "# Filling forms\n\nRead reference/fields.md first.",
        ),
    );
    write(
        &root.join("pdf-forms/reference/fields.md"),
        "Field names are case-sensitive.",
    );
    write(&root.join("pdf-forms/scripts/fill.py"), "print('fill')\n");
    write(&root.join("pdf-forms/.hidden"), "not listed");
    write(
        &root.join("release-notes/SKILL.md"),
        &skill_md(
            "release-notes",
            "Write release notes.",
            "Group by component.",
        ),
    );
    write(
        &root.join("README.md"),
        "Files beside the skill folders are ignored.",
    );
    write(&root.join(".git/config"), "hidden folders are ignored");
    write(&tmp.path().join("secret.txt"), "TOP SECRET");
    (tmp, root)
}

fn call(args: Value) -> ToolCall {
    ToolCall::json("s1", SKILL_TOOL, args)
}

async fn run(registry: &ToolRegistry, args: Value) -> ToolResult {
    registry.execute(&call(args), None).await
}

#[tokio::test]
async fn a_good_set_is_listed_in_the_description_and_served() {
    let (_tmp, root) = good_set();
    let skills = Skills::load(&root).unwrap();
    assert_eq!(skills.names(), ["pdf-forms", "release-notes"]);
    let pdf = skills.get("pdf-forms").unwrap();
    assert_eq!(
        pdf.description(),
        "Fill in PDF forms. Use when a task mentions a form."
    );
    assert_eq!(
        pdf.body(),
        "# Filling forms\n\nRead reference/fields.md first."
    );
    assert_eq!(pdf.fields()["license"], "MIT");
    assert_eq!(pdf.fields()["metadata"], json!({"version": "1.2"}));
    assert_eq!(pdf.folder(), root.join("pdf-forms"));

    let registry = ToolRegistry::new();
    register_skills(&registry, skills).unwrap();
    let def = registry.get_tool(SKILL_TOOL).unwrap();
    assert!(
        def.description.ends_with(
            "Available skills:\n- pdf-forms: Fill in PDF forms. Use when a task mentions a form.\n\
             - release-notes: Write release notes."
        ),
        "{}",
        def.description
    );
    assert_eq!(def.input_schema["required"], json!(["name"]));

    let result = run(&registry, json!({"name": "pdf-forms"})).await;
    assert!(!result.is_error, "{result:?}");
    assert_eq!(
        result.content,
        format!(
            "# Skill: pdf-forms\n\nThis skill's folder is `{}`; paths in its instructions are \
             relative to it (run its scripts from there with a shell tool, if you have one).\n\n\
             Files in this skill (read one with Skill {{\"name\": \"pdf-forms\", \"file\": \"<path>\"}}):\n\
             - reference/fields.md (31 bytes)\n- scripts/fill.py (14 bytes)\n\n## Instructions\n\n\
             # Filling forms\n\nRead reference/fields.md first.",
            root.join("pdf-forms").display()
        )
    );
    let structured = result.structured.unwrap();
    assert_eq!(structured["files"][0]["path"], "reference/fields.md");
    assert_eq!(structured["files_truncated"], false);

    let result = run(&registry, json!({"name": "release-notes"})).await;
    assert_eq!(
        result.content,
        format!(
            "# Skill: release-notes\n\nThis skill's folder is `{}`; paths in its instructions \
             are relative to it (run its scripts from there with a shell tool, if you have one).\n\n\
             This skill has no other files.\n\n## Instructions\n\nGroup by component.",
            root.join("release-notes").display()
        )
    );

    let result = run(
        &registry,
        json!({"name": "pdf-forms", "file": "reference/fields.md"}),
    )
    .await;
    assert!(!result.is_error, "{result:?}");
    assert_eq!(result.content, "Field names are case-sensitive.");
    let result = run(
        &registry,
        json!({"name": "pdf-forms", "file": "./scripts/../scripts/fill.py"}),
    )
    .await;
    assert!(result.is_error, "`..` is refused even when it stays inside");
    let result = run(
        &registry,
        json!({"name": "pdf-forms", "file": "./scripts/fill.py"}),
    )
    .await;
    assert_eq!(result.content, "print('fill')\n");
}

#[tokio::test]
async fn the_tool_is_read_only_and_never_asks() {
    let (_tmp, root) = good_set();
    let registry = ToolRegistry::new();
    register_skills(&registry, Skills::load(&root).unwrap()).unwrap();
    let def = registry.get_tool(SKILL_TOOL).unwrap();
    assert_eq!(def.permission, Some(PermissionLevel::Allow));
    assert_eq!(def.annotations.read_only_hint, Some(true));
    assert_eq!(def.annotations.destructive_hint, Some(false));

    let asked = Arc::new(Mutex::new(0));
    let count = Arc::clone(&asked);
    let strict = PermissionManager::new(PermissionLevel::Ask).with_approval(move |_req| {
        *count.lock().unwrap() += 1;
        async { ApprovalDecision::Deny }
    });
    let result = registry
        .execute(&call(json!({"name": "release-notes"})), Some(&strict))
        .await;
    assert!(!result.is_error, "{result:?}");
    assert_eq!(*asked.lock().unwrap(), 0);
}

#[tokio::test]
async fn an_unknown_name_lists_the_available_skills() {
    let (_tmp, root) = good_set();
    let registry = ToolRegistry::new();
    register_skills(&registry, Skills::load(&root).unwrap()).unwrap();
    let result = run(&registry, json!({"name": "pdf-form"})).await;
    assert!(result.is_error);
    assert_eq!(
        result.content,
        "There is no skill named `pdf-form`. Did you mean `pdf-forms`? Available skills: \
         pdf-forms, release-notes. Call Skill again with one of these names."
    );
    let result = run(&registry, json!({"name": "zzz"})).await;
    assert_eq!(
        result.content,
        "There is no skill named `zzz`. Available skills: pdf-forms, release-notes. Call Skill \
         again with one of these names."
    );
}

#[cfg(unix)]
#[tokio::test]
async fn paths_cannot_leave_the_skill_folder() {
    let (tmp, root) = good_set();
    let secret = tmp.path().join("secret.txt");
    let folder = root.join("pdf-forms");
    std::os::unix::fs::symlink(&secret, folder.join("secret-link.txt")).unwrap();
    std::os::unix::fs::symlink(tmp.path(), folder.join("up")).unwrap();
    std::os::unix::fs::symlink(
        folder.join("reference/fields.md"),
        folder.join("inner-link.md"),
    )
    .unwrap();
    let registry = ToolRegistry::new();
    register_skills(&registry, Skills::load(&root).unwrap()).unwrap();

    let cases = [
        (
            "../../secret.txt",
            "`../../secret.txt` contains `..`; a skill's files are read from inside its folder \
             only. Give a path relative to skill `pdf-forms`'s folder without `..`.",
        ),
        (
            "reference/../../../secret.txt",
            "`reference/../../../secret.txt` contains `..`; a skill's files are read from inside \
             its folder only. Give a path relative to skill `pdf-forms`'s folder without `..`.",
        ),
        (
            &*secret.to_string_lossy(),
            &*format!(
                "`{}` is an absolute path; give a path inside skill `pdf-forms`'s folder, \
                 relative to it, such as `reference/api.md`.",
                secret.display()
            ),
        ),
        (
            "secret-link.txt",
            "`secret-link.txt` in skill `pdf-forms` is a symbolic link; links are not followed \
             because they can lead outside the skill's folder. Read the file it stands for by \
             its own path, if that is inside the skill.",
        ),
        (
            "up/secret.txt",
            "`up` in skill `pdf-forms` is a symbolic link; links are not followed because they \
             can lead outside the skill's folder. Read the file it stands for by its own path, \
             if that is inside the skill.",
        ),
        (
            "inner-link.md",
            "`inner-link.md` in skill `pdf-forms` is a symbolic link; links are not followed \
             because they can lead outside the skill's folder. Read the file it stands for by \
             its own path, if that is inside the skill.",
        ),
    ];
    for (file, expected) in cases {
        let result = run(&registry, json!({"name": "pdf-forms", "file": file})).await;
        assert!(result.is_error, "{file}: {result:?}");
        assert_eq!(result.content, expected, "{file}");
        assert!(!result.content.contains("TOP SECRET"));
    }
    // Links are not listed either.
    let listing = run(&registry, json!({"name": "pdf-forms"})).await.content;
    assert!(!listing.contains("link"), "{listing}");
    assert!(!listing.contains("up/"), "{listing}");
}

#[tokio::test]
async fn file_problems_are_explained() {
    let (_tmp, root) = good_set();
    let folder = root.join("pdf-forms");
    std::fs::write(
        folder.join("logo.png"),
        [0x89, b'P', b'N', b'G', 0xff, 0xfe],
    )
    .unwrap();
    std::fs::write(folder.join("big.txt"), vec![b'a'; 1024 * 1024 + 1]).unwrap();
    let registry = ToolRegistry::new();
    register_skills(&registry, Skills::load(&root).unwrap()).unwrap();
    let cases = [
        (
            "missing.md",
            "skill `pdf-forms` has no file `missing.md`. Call Skill with {\"name\": \
             \"pdf-forms\"} to see its files.",
        ),
        (
            "reference",
            "`reference` is a folder in skill `pdf-forms`, not a file. Call Skill with \
             {\"name\": \"pdf-forms\"} to see its files.",
        ),
        (
            "scripts/fill.py/x",
            "`scripts/fill.py` in skill `pdf-forms` is a file, not a folder, so \
             `scripts/fill.py/x` does not exist. Call Skill with {\"name\": \"pdf-forms\"} to \
             see its files.",
        ),
        (
            "logo.png",
            "`logo.png` in skill `pdf-forms` is not a text file (it is not UTF-8), so it cannot \
             be shown. Use the skill's instructions to decide how to use it.",
        ),
        (
            "big.txt",
            "`big.txt` in skill `pdf-forms` is 1048577 bytes, more than the 1048576 bytes the \
             Skill tool reads. Use the skill's instructions without it.",
        ),
        (
            "",
            "`file` is empty. Call Skill with {\"name\": \"pdf-forms\"} to see its files, then \
             give one of their paths.",
        ),
    ];
    let long = "n".repeat(300);
    let result = run(&registry, json!({"name": "pdf-forms", "file": long})).await;
    assert!(result.is_error);
    assert!(
        result
            .content
            .starts_with(&format!("cannot read `{long}` in skill `pdf-forms`: "))
            && result.content.ends_with(". Continue without it."),
        "{}",
        result.content
    );
    for (file, expected) in cases {
        let result = run(&registry, json!({"name": "pdf-forms", "file": file})).await;
        assert!(result.is_error, "{file}: {result:?}");
        assert_eq!(result.content, expected, "{file}");
    }
}

#[cfg(unix)]
#[tokio::test]
async fn a_fifo_is_refused_without_hanging() {
    let (_tmp, root) = good_set();
    let fifo = root.join("pdf-forms/pipe");
    let status = std::process::Command::new("mkfifo").arg(&fifo).status();
    if !status.is_ok_and(|s| s.success()) {
        assert!(
            std::env::var_os("CI").is_none(),
            "mkfifo (coreutils) is missing"
        );
        eprintln!("skipping: mkfifo is not available");
        return;
    }
    let registry = ToolRegistry::new();
    register_skills(&registry, Skills::load(&root).unwrap()).unwrap();
    let result = run(&registry, json!({"name": "pdf-forms", "file": "pipe"})).await;
    assert_eq!(
        result.content,
        "`pipe` in skill `pdf-forms` is not a regular file (a pipe, socket or device); only \
         files can be read."
    );
}

#[cfg(unix)]
#[test]
fn a_fifo_skill_md_fails_the_load_at_once_and_a_huge_one_is_not_read() {
    let tmp = tempfile::tempdir().unwrap();
    let folder = tmp.path().join("piped");
    std::fs::create_dir(&folder).unwrap();
    let status = std::process::Command::new("mkfifo")
        .arg(folder.join("SKILL.md"))
        .status();
    if !status.is_ok_and(|s| s.success()) {
        assert!(
            std::env::var_os("CI").is_none(),
            "mkfifo (coreutils) is missing"
        );
        eprintln!("skipping: mkfifo is not available");
        return;
    }
    // Without a writer, a blocking open would wait forever.
    let err = Skills::from_folders([&folder]).unwrap_err();
    assert!(matches!(err, SkillError::NotAFile { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!(
            "`{}` is not a regular file (a pipe, socket or device); a skill's SKILL.md must be a \
             file",
            folder.join("SKILL.md").display()
        )
    );

    let big = tmp.path().join("big");
    std::fs::create_dir(&big).unwrap();
    let file = std::fs::File::create(big.join("SKILL.md")).unwrap();
    // Sparse: 512 MB that take no room, and would take seconds to read whole.
    file.set_len(512 * 1024 * 1024).unwrap();
    let err = Skills::from_folders([&big]).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "`{}` is 536870912 bytes, more than the 1048576 bytes a SKILL.md may have; move long \
             material into files of the skill folder the instructions point to",
            big.join("SKILL.md").display()
        )
    );
}

/// Files to write: (path, contents).
type Files<'a> = Vec<(&'a str, &'a [u8])>;

fn load_err(files: &[(&str, &[u8])]) -> (TempDir, SkillError) {
    let tmp = tempfile::tempdir().unwrap();
    for (path, bytes) in files {
        let path = tmp.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
    let err = Skills::load_strict(tmp.path()).unwrap_err();
    (tmp, err)
}

#[test]
fn every_bad_folder_is_an_error_naming_it() {
    let long = "d".repeat(1025);
    let long_md = format!("---\nname: wordy\ndescription: {long}\n---\n");
    let cases: Vec<(&str, Files, String)> = vec![
        (
            "no SKILL.md",
            vec![
                ("empty/notes.txt", b"x"),
                ("ok/SKILL.md", b"---\nname: ok\ndescription: d\n---\n"),
            ],
            "skill folder `{root}/empty` has no SKILL.md; add one whose front matter gives the \
             skill's `name` and `description`, or move the folder out of the skills directory"
                .into(),
        ),
        (
            "no front matter",
            vec![("plain/SKILL.md", b"# Just Markdown\n")],
            "`{root}/plain/SKILL.md` cannot be used: it does not start with YAML front matter (a \
             `---` line, `key: value` lines, then a closing `---` line)"
                .into(),
        ),
        (
            "unclosed",
            vec![("open/SKILL.md", b"---\nname: open\ndescription: d\n")],
            "`{root}/open/SKILL.md` cannot be used: its front matter opens with `---` but has no \
             closing `---` line; add one after the last field"
                .into(),
        ),
        (
            "bad yaml",
            vec![(
                "yaml/SKILL.md",
                b"---\nname: yaml\ndescription: [unclosed\n---\n",
            )],
            "`{root}/yaml/SKILL.md` cannot be used: its front matter is not valid YAML (line "
                .into(),
        ),
        (
            "a list",
            vec![("list/SKILL.md", b"---\n- name\n- description\n---\n")],
            "`{root}/list/SKILL.md` cannot be used: its front matter is not a set of `key: \
             value` fields (it is a list or a single value)"
                .into(),
        ),
        (
            "no name",
            vec![("anon/SKILL.md", b"---\ndescription: d\n---\n")],
            "`{root}/anon/SKILL.md` has no `name` in its front matter; add `name: ...` as text"
                .into(),
        ),
        (
            "no description",
            vec![("nodesc/SKILL.md", b"---\nname: nodesc\n---\n")],
            "`{root}/nodesc/SKILL.md` has no `description` in its front matter; add \
             `description: ...` as text"
                .into(),
        ),
        (
            "description is a list",
            vec![(
                "listdesc/SKILL.md",
                b"---\nname: listdesc\ndescription: [a]\n---\n",
            )],
            "`{root}/listdesc/SKILL.md` has no `description` in its front matter; add \
             `description: ...` as text"
                .into(),
        ),
        (
            "empty description",
            vec![(
                "blank/SKILL.md",
                b"---\nname: blank\ndescription: \"  \"\n---\n",
            )],
            "skill folder `{root}/blank` has an empty `description`; say what the skill does and \
             when to use it"
                .into(),
        ),
        (
            "long description",
            vec![("wordy/SKILL.md", long_md.as_bytes())],
            "skill folder `{root}/wordy` has a description of 1025 characters; shorten it to at \
             most 1024 and move the details into the body of SKILL.md"
                .into(),
        ),
        (
            "bad name",
            vec![(
                "PDF_Forms/SKILL.md",
                b"---\nname: PDF_Forms\ndescription: d\n---\n",
            )],
            "skill folder `{root}/PDF_Forms` names its skill `PDF_Forms`, which is not a valid \
             skill name: use 1 to 64 lowercase letters, digits and single `-` between them, not \
             first or last (such as `pdf-forms`)"
                .into(),
        ),
        (
            "name differs from folder",
            vec![(
                "pdf/SKILL.md",
                b"---\nname: pdf-forms\ndescription: d\n---\n",
            )],
            "skill folder `{root}/pdf` names its skill `pdf-forms`, but a skill's name must equal \
             its folder's name; rename the folder or the skill"
                .into(),
        ),
        (
            "not UTF-8",
            vec![(
                "latin/SKILL.md",
                b"---\nname: latin\ndescription: caf\xe9\n---\n",
            )],
            "`{root}/latin/SKILL.md` is not UTF-8 text; save it as UTF-8".into(),
        ),
        (
            "no folders",
            vec![("README.md", b"nothing here")],
            "`{root}` holds no skill folders; put each skill in its own folder there, with a \
             SKILL.md"
                .into(),
        ),
    ];
    for (what, files, expected) in cases {
        let (tmp, err) = load_err(&files);
        let expected = expected.replace("{root}", &tmp.path().display().to_string());
        let message = err.to_string();
        assert!(
            message.starts_with(&expected),
            "{what}:\n{message}\n{expected}"
        );
    }
}

#[test]
fn duplicate_names_and_unreadable_paths_are_errors() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    for root in [&a, &b] {
        write(
            &root.path().join("pdf/SKILL.md"),
            &skill_md("pdf", "d", "b"),
        );
    }
    let err = Skills::from_folders([a.path().join("pdf"), b.path().join("pdf")]).unwrap_err();
    assert!(matches!(err, SkillError::Duplicate { .. }));
    assert_eq!(
        err.to_string(),
        format!(
            "two skills are named `pdf`: `{}` and `{}`; rename one of them (and its folder)",
            a.path().join("pdf").display(),
            b.path().join("pdf").display()
        )
    );
    let merged = Skills::load(a.path())
        .unwrap()
        .merge(Skills::load(b.path()).unwrap());
    assert!(matches!(merged, Err(SkillError::Duplicate { .. })));

    let missing = a.path().join("nope");
    let err = Skills::load(&missing).unwrap_err();
    assert!(matches!(err, SkillError::Read { .. }));
    assert_eq!(
        err.to_string(),
        format!("cannot read `{}`", missing.display())
    );
    // A single skill folder loads as one skill.
    assert_eq!(Skills::load(a.path().join("pdf")).unwrap().names(), ["pdf"]);
    assert_eq!(
        Skills::from_folders([a.path().join("pdf")]).unwrap().len(),
        1
    );
}

#[tokio::test]
async fn the_builder_registers_skill_and_adds_up_sources() {
    let (_tmp, root) = good_set();
    let extra = tempfile::tempdir().unwrap();
    write(
        &extra.path().join("triage/SKILL.md"),
        &skill_md("triage", "Sort bugs.", "Label."),
    );
    let agent = Agent::builder()
        .model(harnessx::model::TestModel::new())
        .capability(Skills::load(&root).unwrap())
        .capability(Skills::load(extra.path().join("triage")).unwrap())
        .build()
        .unwrap();
    assert_eq!(
        agent.tools().list_tools(),
        ["Skill", "write_todos", "read_todos"]
    );
    assert_eq!(
        installed_skills(agent.tools()).names(),
        ["pdf-forms", "release-notes", "triage"]
    );
    assert!(
        agent
            .tools()
            .get_tool(SKILL_TOOL)
            .unwrap()
            .description
            .contains("- triage: Sort bugs.")
    );
    assert_eq!(installed_skills(agent.tools()).len(), 3);

    // The same skill twice fails the build, naming both folders.
    let err = Agent::builder()
        .model(harnessx::model::TestModel::new())
        .capability(Skills::load(&root).unwrap())
        .capability(Skills::load(root.join("pdf-forms")).unwrap())
        .build()
        .unwrap_err();
    assert!(matches!(&err, AgentError::Setup { capability, .. } if capability == "skills"));
    let source = std::error::Error::source(&err).unwrap();
    assert!(
        matches!(
            source.downcast_ref::<SkillError>(),
            Some(SkillError::Duplicate { .. })
        ),
        "{source}"
    );

    // An agent without skills has no Skill tool.
    let plain = Agent::builder()
        .model(harnessx::model::TestModel::new())
        .build()
        .unwrap();
    assert!(!plain.tools().contains(SKILL_TOOL));
    assert!(installed_skills(plain.tools()).is_empty());
}

#[tokio::test]
async fn a_model_loads_a_skill_during_a_run() {
    let (_tmp, root) = good_set();
    let model = harnessx::model::TestModel::new()
        .then_call(SKILL_TOOL, json!({"name": "release-notes"}))
        .then_reply("done");
    let agent = Agent::builder()
        .model(model.clone())
        .capability(Skills::load(&root).unwrap())
        .build()
        .unwrap();
    assert_eq!(agent.run("Write the notes").await.unwrap().output, "done");
    let sent = &model.requests()[1].messages;
    assert!(sent.iter().any(|m| matches!(
        m,
        harnessx::Message::Tool { content, .. } if content.contains("Group by component.")
    )));
}

#[test]
fn another_tool_named_skill_is_a_registration_error() {
    let (_tmp, root) = good_set();
    let registry = ToolRegistry::new();
    registry
        .register_tool(ToolDefinition::new(
            SKILL_TOOL,
            "Mine.",
            json!({"type": "object"}),
            handler_fn(|_, _| async { Ok(ToolOutput::text("x")) }),
        ))
        .unwrap();
    let err = register_skills(&registry, Skills::load(&root).unwrap()).unwrap_err();
    assert!(matches!(err, SkillError::Registry(_)));
    assert_eq!(
        err.to_string(),
        "a tool named `Skill` is already registered; pass `replace(true)` to replace it deliberately"
    );
}
