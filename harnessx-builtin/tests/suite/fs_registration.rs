//! Registering the filesystem bundle: selection, options, permissions, concurrency, sandboxes.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use harnessx::{PermissionLevel, ToolRegistry};
use harnessx_builtin::{
    FILESYSTEM_TOOLS, FilesystemOptions, apply_sandbox_limits, register_filesystem_tools,
};
use serde_json::json;

use super::fs_support::{DirSandbox, call, ok};

#[test]
fn the_whole_bundle_registers_in_order_with_the_spec_concurrency() {
    for permission in [
        None,
        Some(PermissionLevel::Allow),
        Some(PermissionLevel::Ask),
        Some(PermissionLevel::Deny),
    ] {
        let registry = ToolRegistry::new();
        let names = register_filesystem_tools(
            &registry,
            FilesystemOptions {
                permission,
                ..FilesystemOptions::default()
            },
        )
        .unwrap();
        assert_eq!(names, FILESYSTEM_TOOLS);
        assert_eq!(registry.list_tools(), FILESYSTEM_TOOLS);
        for name in FILESYSTEM_TOOLS {
            let def = registry.get_tool(name).unwrap();
            let concurrent = matches!(name, "read_file" | "glob" | "grep" | "list_directory");
            assert_eq!(def.concurrent, concurrent, "{name} with {permission:?}");
            assert_eq!(def.permission, permission);
            assert_eq!(
                def.timeout, None,
                "host file tools use the registry default"
            );
            let schema = &def.input_schema;
            assert_eq!(schema["type"], "object");
            assert_eq!(schema["additionalProperties"], false);
            for hidden in [
                "max_read_bytes",
                "max_directory_entries",
                "max_search_results",
                "base_path",
                "output_dir",
            ] {
                assert!(
                    schema["properties"].get(hidden).is_none(),
                    "{name} exposes {hidden}"
                );
            }
            assert!(
                def.description.len() > 80,
                "{name} needs a real description"
            );
        }
    }
}

#[test]
fn include_and_exclude_select_tools_and_unknown_names_fail() {
    let registry = ToolRegistry::new();
    let names = register_filesystem_tools(
        &registry,
        FilesystemOptions {
            include: Some(vec![
                "list_directory".into(),
                "read_file".into(),
                "grep".into(),
            ]),
            exclude: vec!["grep".into()],
            ..FilesystemOptions::default()
        },
    )
    .unwrap();
    assert_eq!(names, ["read_file", "list_directory"]);

    let err = register_filesystem_tools(
        &ToolRegistry::new(),
        FilesystemOptions {
            include: Some(vec!["read".into(), "cat".into()]),
            ..FilesystemOptions::default()
        },
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "`include` names `read`, `cat`, which are not tools of the filesystem bundle; its tools \
         are: read_file, write_file, edit_file, delete, glob, grep, list_directory, generate_file"
    );
    let err = register_filesystem_tools(
        &ToolRegistry::new(),
        FilesystemOptions {
            exclude: vec!["rm".into()],
            ..FilesystemOptions::default()
        },
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("`exclude` names `rm`, which is not a tool of the filesystem bundle;")
    );
}

#[test]
fn unknown_options_and_bad_values_fail_naming_the_field() {
    let err = serde_json::from_value::<FilesystemOptions>(json!({"base_dir": "/tmp"})).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("unknown field `base_dir`, expected one of"),
        "{err}"
    );
    let err = serde_json::from_value::<FilesystemOptions>(json!({"permission": "sometimes"}))
        .unwrap_err();
    assert!(
        err.to_string().contains("unknown variant `sometimes`"),
        "{err}"
    );

    let err = register_filesystem_tools(
        &ToolRegistry::new(),
        FilesystemOptions {
            max_read_bytes: 0,
            ..FilesystemOptions::default()
        },
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "filesystem option `max_read_bytes` must be at least 1; leave it out for the default"
    );
}

#[test]
fn the_base_path_must_exist_and_be_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    let err = register_filesystem_tools(
        &ToolRegistry::new(),
        FilesystemOptions {
            base_path: Some(missing.clone()),
            ..FilesystemOptions::default()
        },
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "filesystem option `base_path`: `{}` does not exist; create the directory first or fix the path",
            missing.display()
        )
    );
    let file = dir.path().join("file");
    std::fs::write(&file, "x").unwrap();
    let err = register_filesystem_tools(
        &ToolRegistry::new(),
        FilesystemOptions {
            base_path: Some(file.clone()),
            ..FilesystemOptions::default()
        },
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "filesystem option `base_path`: `{}` is not a directory; give the directory the tools should work in",
            file.display()
        )
    );
}

#[test]
fn duplicates_fail_before_anything_is_registered_unless_replace() {
    let registry = ToolRegistry::new();
    register_filesystem_tools(
        &registry,
        FilesystemOptions {
            include: Some(vec!["grep".into()]),
            ..FilesystemOptions::default()
        },
    )
    .unwrap();
    let err = register_filesystem_tools(&registry, FilesystemOptions::default()).unwrap_err();
    assert!(
        matches!(err, harnessx::RegistryError::Duplicate(ref n) if n == "grep"),
        "{err}"
    );
    assert_eq!(registry.list_tools(), ["grep"]);
    let names = register_filesystem_tools(
        &registry,
        FilesystemOptions {
            replace: true,
            ..FilesystemOptions::default()
        },
    )
    .unwrap();
    assert_eq!(names.len(), 8);
}

#[tokio::test]
async fn a_sandbox_that_owns_its_filesystem_takes_the_file_tools() {
    let base = tempfile::tempdir().unwrap();
    let sandbox_root = tempfile::tempdir().unwrap();
    std::fs::write(base.path().join("where.txt"), "base path\n").unwrap();
    std::fs::write(sandbox_root.path().join("where.txt"), "sandbox\n").unwrap();

    let registry = ToolRegistry::new();
    registry.set_sandbox(Some(Arc::new(DirSandbox {
        root: sandbox_root.path().to_owned(),
        mount_point: None,
    })));
    register_filesystem_tools(
        &registry,
        FilesystemOptions {
            base_path: Some(base.path().to_owned()),
            ..FilesystemOptions::default()
        },
    )
    .unwrap();
    for name in FILESYSTEM_TOOLS {
        assert_eq!(
            registry.get_tool(name).unwrap().timeout,
            Some(Duration::from_secs(300))
        );
    }
    let r = call(&registry, "read_file", json!({"path": "where.txt"})).await;
    assert!(ok(&r).contains("1\tsandbox"), "{}", r.content);
    // Inside the sandbox, an absolute path is the sandbox's own view of its filesystem.
    let r = call(&registry, "read_file", json!({"path": "/where.txt"})).await;
    assert!(ok(&r).contains("1\tsandbox"), "{}", r.content);
    let r = call(&registry, "read_file", json!({"path": "../where.txt"})).await;
    assert!(r.is_error);
}

#[tokio::test]
async fn apply_sandbox_limits_updates_tools_registered_before_the_sandbox() {
    let sandbox_root = tempfile::tempdir().unwrap();
    let registry = ToolRegistry::new();
    register_filesystem_tools(
        &registry,
        FilesystemOptions {
            include: Some(vec!["read_file".into(), "write_file".into()]),
            permission: Some(PermissionLevel::Ask),
            ..FilesystemOptions::default()
        },
    )
    .unwrap();
    assert_eq!(registry.get_tool("read_file").unwrap().timeout, None);
    registry.set_sandbox(Some(Arc::new(DirSandbox {
        root: sandbox_root.path().to_owned(),
        mount_point: None,
    })));
    apply_sandbox_limits(&registry);
    for name in ["read_file", "write_file"] {
        let def = registry.get_tool(name).unwrap();
        assert_eq!(def.timeout, Some(Duration::from_secs(300)));
        assert_eq!(
            def.permission,
            Some(PermissionLevel::Ask),
            "other metadata is kept"
        );
    }
    assert!(!registry.get_tool("write_file").unwrap().concurrent);
}

#[tokio::test]
async fn paths_at_the_sandbox_mount_point_are_read_inside_its_root() {
    let sandbox_root = tempfile::tempdir().unwrap();
    std::fs::create_dir(sandbox_root.path().join("src")).unwrap();
    std::fs::write(sandbox_root.path().join("src/lib.rs"), "pub fn f() {}\n").unwrap();
    let registry = ToolRegistry::new();
    registry.set_sandbox(Some(Arc::new(DirSandbox {
        root: sandbox_root.path().to_owned(),
        mount_point: Some(PathBuf::from("/workspace")),
    })));
    register_filesystem_tools(&registry, FilesystemOptions::default()).unwrap();
    for path in ["/workspace/src/lib.rs", "src/lib.rs", "/src/lib.rs"] {
        let r = call(&registry, "read_file", json!({"path": path})).await;
        assert!(ok(&r).contains("1\tpub fn f() {}"), "{path}: {}", r.content);
    }
    let r = call(
        &registry,
        "read_file",
        json!({"path": "/workspace/../etc/passwd"}),
    )
    .await;
    assert!(
        r.is_error && r.content.contains("contains `..`"),
        "{}",
        r.content
    );
}
