//! Copying a SQLite store while a server uses it, with SQLite's online backup API.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::backup::{Backup, StepResult};
use rusqlite::{Connection, OpenFlags};

/// What [`SqliteStore::backup`](super::SqliteStore::backup) wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct BackupReport {
    /// The copy's size in bytes.
    pub bytes: u64,
    /// How many runs the copy holds.
    pub runs: u64,
    /// The copy's schema version.
    pub schema_version: i64,
}

/// Why a backup was not written. Nothing is left at the destination when it fails.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BackupError {
    /// The database to copy does not exist.
    #[error(
        "there is no database at `{path}`; name the file `harnessx serve` uses (--db, \
         HARNESSX_DATABASE_URL or `[store] sqlite`)"
    )]
    NoDatabase {
        /// The path given.
        path: String,
    },
    /// The file is not a harnessx run store.
    #[error("`{path}` is not a harnessx database (it has no schema_version table)")]
    NotAStore {
        /// The path given.
        path: String,
    },
    /// The destination exists already: a backup never overwrites a file.
    #[error("`{path}` already exists; remove it or name a new file for the backup")]
    Exists {
        /// The destination.
        path: String,
    },
    /// SQLite failed (the disk is full, the folder cannot be written, the database stayed busy).
    #[error("backing up `{source_path}` to `{dest}` failed while {context}: {message}")]
    Failed {
        /// The database copied.
        source_path: String,
        /// The destination.
        dest: String,
        /// What was being done.
        context: &'static str,
        /// SQLite's message.
        message: String,
    },
}

/// How long a copy waits in all for a database that stays busy or locked.
const BUSY_FOR: Duration = Duration::from_secs(30);

pub(super) fn backup(source: &Path, dest: &Path) -> Result<BackupReport, BackupError> {
    let shown = source.display().to_string();
    let dest_shown = dest.display().to_string();
    let failed = |context: &'static str| {
        let (source_path, dest) = (shown.clone(), dest_shown.clone());
        move |e: rusqlite::Error| BackupError::Failed {
            source_path,
            dest,
            context,
            message: e.to_string(),
        }
    };
    if !source.is_file() {
        return Err(BackupError::NoDatabase { path: shown });
    }
    if dest.exists() {
        return Err(BackupError::Exists { path: dest_shown });
    }
    // Read-write without create: never makes a file, and reads a WAL database whether or not a
    // server has it open. Nothing is written to it.
    let from = Connection::open_with_flags(
        source,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(failed("opening the database"))?;
    from.busy_timeout(BUSY_FOR)
        .map_err(failed("opening the database"))?;
    let is_store: bool = from
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE name = 'schema_version')",
            [],
            |r| r.get(0),
        )
        .map_err(failed("reading the database"))?;
    if !is_store {
        return Err(BackupError::NotAStore { path: shown });
    }
    let partial = partial_path(dest);
    let _ = std::fs::remove_file(&partial);
    let written = copy(&from, &partial, &failed);
    let report = match written {
        Ok(report) => report,
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            return Err(e);
        }
    };
    // A hard link never replaces a file that appeared meanwhile; where the file system has no
    // hard links, a rename does.
    let placed = match std::fs::hard_link(&partial, dest) {
        Ok(()) => std::fs::remove_file(&partial),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let _ = std::fs::remove_file(&partial);
            return Err(BackupError::Exists { path: dest_shown });
        }
        Err(_) => std::fs::rename(&partial, dest),
    };
    placed.map_err(|e| BackupError::Failed {
        source_path: shown,
        dest: dest_shown,
        context: "moving the copy into place",
        message: e.to_string(),
    })?;
    Ok(report)
}

/// `dest` with `.partial` added: the copy is written there, then moved into place whole.
fn partial_path(dest: &Path) -> PathBuf {
    let mut name = dest.file_name().unwrap_or_default().to_os_string();
    name.push(".partial");
    dest.with_file_name(name)
}

fn copy<F, E>(from: &Connection, to_path: &Path, failed: &F) -> Result<BackupReport, BackupError>
where
    F: Fn(&'static str) -> E,
    E: FnOnce(rusqlite::Error) -> BackupError,
{
    let mut to = Connection::open(to_path).map_err(failed("creating the copy"))?;
    {
        let backup = Backup::new(from, &mut to).map_err(failed("starting the copy"))?;
        // Every page in one step: the copy reads one snapshot of the database under a read
        // transaction, which in WAL mode never blocks the server's writes. (Copying a few
        // pages at a time would start over after each of the server's commits.)
        let started = std::time::Instant::now();
        loop {
            match backup.step(-1).map_err(failed("copying pages"))? {
                StepResult::Done => break,
                StepResult::Busy | StepResult::Locked if started.elapsed() < BUSY_FOR => {
                    std::thread::sleep(Duration::from_millis(50));
                }
                StepResult::More => {}
                _ => {
                    return Err(failed("copying pages")(rusqlite::Error::SqliteFailure(
                        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
                        Some(format!(
                            "the database stayed busy for {} s",
                            BUSY_FOR.as_secs()
                        )),
                    )));
                }
            }
        }
    }
    // One self-contained file (no `-wal` beside it); the server turns WAL on when it opens it.
    to.pragma_update(None, "journal_mode", "DELETE")
        .map_err(failed("finishing the copy"))?;
    let problems: Vec<String> = to
        .prepare("PRAGMA quick_check(10)")
        .and_then(|mut stmt| {
            stmt.query_map([], |r| r.get::<_, String>(0))?
                .collect::<Result<_, _>>()
        })
        .map_err(failed("checking the copy"))?;
    if problems.iter().any(|p| p != "ok") {
        return Err(failed("checking the copy")(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CORRUPT),
            Some(problems.join("; ")),
        )));
    }
    let runs: i64 = to
        .query_row("SELECT COUNT(*) FROM runs", [], |r| r.get(0))
        .map_err(failed("checking the copy"))?;
    let schema_version: i64 = to
        .query_row(
            "SELECT COALESCE(MAX(version), 0) FROM schema_version",
            [],
            |r| r.get(0),
        )
        .map_err(failed("checking the copy"))?;
    drop(to);
    let bytes = std::fs::metadata(to_path).map_or(0, |m| m.len());
    Ok(BackupReport {
        bytes,
        runs: u64::try_from(runs).unwrap_or(0),
        schema_version,
    })
}
