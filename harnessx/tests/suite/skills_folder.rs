//! A skills folder shaped like the public one: many skills, one of them with a description over
//! the limit. Valid skills load; the others are diagnostics, or errors when loading strictly.

use std::path::Path;

use harnessx::Agent;
use harnessx::model::TestModel;
use harnessx::skills::{SkillError, Skills};

fn write_skill(root: &Path, name: &str, description: &str) {
    let folder = root.join(name);
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(
        folder.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: {description}\n---\n# {name}\n"),
    )
    .unwrap();
}

/// Seventeen skills, one of whose descriptions is 1,068 characters.
fn public_shaped_folder() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    for i in 0..16 {
        write_skill(tmp.path(), &format!("skill-{i:02}"), "Does one thing well.");
    }
    write_skill(tmp.path(), "wordy", &"w".repeat(1068));
    tmp
}

#[test]
fn one_over_long_description_does_not_block_the_others() {
    let tmp = public_shaped_folder();
    let skills = Skills::load(tmp.path()).unwrap();
    assert_eq!(skills.len(), 16);
    assert!(skills.get("wordy").is_none());
    let [diagnostic] = skills.diagnostics() else {
        panic!("one diagnostic expected: {:?}", skills.diagnostics())
    };
    assert_eq!(
        diagnostic.to_string(),
        format!(
            "skill folder `{}` has a description of 1068 characters; shorten it to at most 1024 \
             and move the details into the body of SKILL.md",
            tmp.path().join("wordy").display()
        )
    );

    let err = Skills::load_strict(tmp.path()).unwrap_err();
    assert!(
        matches!(err, SkillError::DescriptionTooLong { chars: 1068, .. }),
        "{err}"
    );
}

#[test]
fn the_builder_loads_the_valid_skills_of_a_folder() {
    let tmp = public_shaped_folder();
    let agent = Agent::builder()
        .model(TestModel::new())
        .capability(Skills::load(tmp.path()).unwrap())
        .build()
        .unwrap();
    assert_eq!(harnessx::skills::installed_skills(agent.tools()).len(), 16);
    // Strict loading, handed to the builder, keeps a bad folder fatal.
    assert!(Skills::load_strict(tmp.path()).is_err());
}

#[test]
fn hyphens_only_between_characters() {
    for bad in ["-pdf", "pdf-", "pdf--forms"] {
        let tmp = tempfile::tempdir().unwrap();
        write_skill(tmp.path(), bad, "d");
        write_skill(tmp.path(), "fine", "d");
        let skills = Skills::load(tmp.path()).unwrap();
        assert_eq!(skills.names(), ["fine"], "{bad}");
        assert!(
            matches!(&*skills.diagnostics()[0], SkillError::InvalidName { name, .. } if name == bad),
            "{bad}"
        );
    }
}

async fn run_skill(
    registry: &harnessx::ToolRegistry,
    args: serde_json::Value,
) -> harnessx::ToolResult {
    registry
        .run(None)
        .execute(&harnessx::ToolCall::new("c1", "Skill", args.to_string()))
        .await
}

#[tokio::test]
async fn long_instructions_come_in_pages_after_the_file_list() {
    let tmp = tempfile::tempdir().unwrap();
    let folder = tmp.path().join("big");
    std::fs::create_dir_all(folder.join("reference")).unwrap();
    std::fs::write(folder.join("reference/forms.md"), "Fields.").unwrap();
    // About 74 KB of instructions in 1,500 numbered lines.
    let body: String = (0..1500)
        .map(|i| format!("Line {i:04}: {}\n", "x".repeat(40)))
        .collect();
    std::fs::write(
        folder.join("SKILL.md"),
        format!("---\nname: big\ndescription: A long skill.\n---\n{body}"),
    )
    .unwrap();
    let registry = harnessx::ToolRegistry::new();
    harnessx::skills::register_skills(&registry, Skills::load(tmp.path()).unwrap()).unwrap();

    let first = run_skill(&registry, serde_json::json!({"name": "big"})).await;
    assert!(!first.is_error, "{}", first.content);
    assert!(!first.truncated, "the page fits under the result cap");
    let files_at = first
        .content
        .find("- reference/forms.md (7 bytes)")
        .unwrap();
    assert!(files_at < first.content.find("Line 0000").unwrap());
    assert!(first.content.contains(&folder.display().to_string()));
    let next = first.structured.as_ref().unwrap()["next_offset"]
        .as_u64()
        .unwrap();
    assert!(first.content.ends_with(&format!(
        "[Instructions continue: lines 1-{next} of 1500 shown. Call Skill with {{\"name\": \"big\", \"offset\": {next}}} for the rest.]"
    )));

    let rest = run_skill(
        &registry,
        serde_json::json!({"name": "big", "offset": next}),
    )
    .await;
    assert!(rest.content.contains(&format!("Line {next:04}:")));
    assert!(rest.content.contains("Line 1499:"));
    assert!(rest.structured.unwrap()["next_offset"].is_null());

    let two = run_skill(
        &registry,
        serde_json::json!({"name": "big", "offset": 10, "limit": 2}),
    )
    .await;
    assert!(two.content.contains("Line 0010:") && two.content.contains("Line 0011:"));
    assert!(!two.content.contains("Line 0012:"));

    let past = run_skill(
        &registry,
        serde_json::json!({"name": "big", "offset": 1500}),
    )
    .await;
    assert!(past.is_error);
    assert!(past.content.contains(
        "`offset` 1500 is past the end of the instructions, which have 1500 lines; use an offset below 1500."
    ), "{}", past.content);

    let wrong_case = run_skill(
        &registry,
        serde_json::json!({"name": "big", "file": "reference/FORMS.md"}),
    )
    .await;
    assert!(wrong_case.is_error);
    assert!(wrong_case.content.contains(
        "skill `big` has no file `reference/FORMS.md`; did you mean `reference/forms.md`? File names are case-sensitive."
    ), "{}", wrong_case.content);
}
