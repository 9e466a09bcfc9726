//! Finding the PostgreSQL server programs: `PATH` first, then the highest version directory.

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::TestkitError;

/// The programs a cluster needs, all from one directory.
pub(crate) const PROGRAMS: [&str; 3] = ["initdb", "pg_ctl", "postgres"];

/// Where Debian and Ubuntu install each server version (`/usr/lib/postgresql/15/bin`, ...).
pub(crate) const DEBIAN_ROOT: &str = "/usr/lib/postgresql";

/// The directory holding all of [`PROGRAMS`]: a `PATH` entry with `initdb` (or the directory
/// its symlink points into), else `<root>/<highest version>/bin`.
pub(crate) fn find_bin_dir(path_var: Option<&OsStr>, root: &Path) -> Result<PathBuf, TestkitError> {
    let mut searched = Vec::new();
    // The most complete directory seen, to name what is missing when none is whole.
    let mut best: Option<Vec<&'static str>> = None;
    let consider = |dir: &Path, best: &mut Option<Vec<&'static str>>| {
        let missing = missing_in(dir);
        if best.as_ref().is_none_or(|b| missing.len() < b.len()) {
            *best = Some(missing.clone());
        }
        missing.is_empty()
    };

    for dir in path_var.map(std::env::split_paths).into_iter().flatten() {
        searched.push(dir.display().to_string());
        if !is_executable(&dir.join("initdb")) {
            continue;
        }
        // /usr/local/bin/initdb -> /usr/lib/postgresql/15/bin/initdb: use the real directory,
        // where pg_ctl finds the matching postgres.
        if let Some(real) = std::fs::canonicalize(dir.join("initdb"))
            .ok()
            .and_then(|p| p.parent().map(Path::to_path_buf))
            && consider(&real, &mut best)
        {
            return Ok(real);
        }
        if consider(&dir, &mut best) {
            return Ok(dir);
        }
    }

    let mut versions: Vec<(Vec<u32>, PathBuf)> = std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name();
            let version = parse_version(name.to_str()?)?;
            Some((version, entry.path().join("bin")))
        })
        .collect();
    versions.sort();
    searched.push(format!("{}/*/bin", root.display()));
    for (_, dir) in versions.iter().rev() {
        if consider(dir, &mut best) {
            return Ok(dir.clone());
        }
    }

    let missing = best.unwrap_or_else(|| PROGRAMS.to_vec());
    Err(TestkitError::PostgresNotFound {
        missing: missing
            .iter()
            .map(|p| format!("`{p}`"))
            .collect::<Vec<_>>()
            .join(", "),
        searched: if searched.len() > 1 {
            format!(
                "PATH ({}) and {}",
                searched[..searched.len() - 1].join(":"),
                searched[searched.len() - 1]
            )
        } else {
            searched.join("")
        },
    })
}

fn missing_in(dir: &Path) -> Vec<&'static str> {
    PROGRAMS
        .into_iter()
        .filter(|p| !is_executable(&dir.join(p)))
        .collect()
}

fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// `"15"` → `[15]`, `"9.6"` → `[9, 6]`; anything else is not a version directory.
fn parse_version(name: &str) -> Option<Vec<u32>> {
    name.split('.').map(|part| part.parse().ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    fn program(dir: &Path, name: &str, mode: u32) {
        std::fs::create_dir_all(dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    fn server(dir: &Path) {
        for p in PROGRAMS {
            program(dir, p, 0o755);
        }
    }

    #[test]
    fn picks_the_highest_complete_version_numerically() {
        let root = tempfile::tempdir().unwrap();
        server(&root.path().join("9.6/bin"));
        server(&root.path().join("15/bin"));
        server(&root.path().join("16/bin"));
        // 17 lacks postgres, so it cannot be used.
        program(&root.path().join("17/bin"), "initdb", 0o755);
        program(&root.path().join("17/bin"), "pg_ctl", 0o755);
        std::fs::create_dir_all(root.path().join("not-a-version/bin")).unwrap();
        let found = find_bin_dir(Some(OsStr::new("")), root.path()).unwrap();
        assert_eq!(found, root.path().join("16/bin"));
    }

    #[test]
    fn path_wins_over_the_version_directories_and_symlinks_are_followed() {
        let root = tempfile::tempdir().unwrap();
        let real = root.path().join("lib/postgresql/14/bin");
        server(&real);
        server(&root.path().join("lib/postgresql/16/bin"));
        let local = root.path().join("local/bin");
        std::fs::create_dir_all(&local).unwrap();
        // Only initdb is linked onto PATH, the way /usr/local/bin often holds it.
        std::os::unix::fs::symlink(real.join("initdb"), local.join("initdb")).unwrap();
        let path: OsString = std::env::join_paths([root.path().join("empty"), local]).unwrap();
        let found = find_bin_dir(Some(&path), &root.path().join("lib/postgresql")).unwrap();
        assert_eq!(found, real.canonicalize().unwrap());
    }

    #[test]
    fn a_path_directory_with_only_some_programs_is_skipped() {
        let root = tempfile::tempdir().unwrap();
        let partial = root.path().join("partial");
        program(&partial, "initdb", 0o755);
        server(&root.path().join("pg/13/bin"));
        let found = find_bin_dir(Some(partial.as_os_str()), &root.path().join("pg")).unwrap();
        assert_eq!(found, root.path().join("pg/13/bin"));
    }

    #[test]
    fn nothing_installed_names_every_program_and_where_it_looked() {
        let root = tempfile::tempdir().unwrap();
        let err = find_bin_dir(
            Some(OsStr::new("/nonexistent-a:/nonexistent-b")),
            root.path(),
        )
        .unwrap_err();
        let text = err.to_string();
        assert_eq!(
            text,
            format!(
                "PostgreSQL server program(s) not found: `initdb`, `pg_ctl`, `postgres` (searched \
                 PATH (/nonexistent-a:/nonexistent-b) and {}/*/bin); install the server: \
                 `apt-get install postgresql` on Debian, or run `.ci/install-postgres.sh`",
                root.path().display()
            )
        );
    }

    #[test]
    fn a_partial_install_names_only_what_is_missing() {
        let root = tempfile::tempdir().unwrap();
        program(&root.path().join("15/bin"), "initdb", 0o755);
        program(&root.path().join("15/bin"), "pg_ctl", 0o755);
        // Present but not executable: counts as missing.
        program(&root.path().join("15/bin"), "postgres", 0o644);
        let err = find_bin_dir(None, root.path()).unwrap_err();
        let TestkitError::PostgresNotFound { missing, searched } = &err else {
            panic!("{err}")
        };
        assert_eq!(missing, "`postgres`");
        assert_eq!(searched, &format!("{}/*/bin", root.path().display()));
    }

    #[test]
    fn versions_parse_numerically() {
        assert_eq!(parse_version("9.6"), Some(vec![9, 6]));
        assert_eq!(parse_version("15"), Some(vec![15]));
        assert_eq!(parse_version("15beta"), None);
        assert!(parse_version("10") > parse_version("9.6"));
    }
}
