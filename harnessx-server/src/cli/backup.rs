//! `harnessx backup FILE`: copies the SQLite database `serve` would open (the same `--config`,
//! `--db` and `HARNESSX_DATABASE_URL`) into a new file with SQLite's online backup API, while a
//! server may be running on it.

use std::path::PathBuf;
use std::process::ExitCode;

use harnessx_runtime::SqliteStore;

use crate::config::Config;
use crate::server::{Database, ServeOptions};

pub(crate) async fn backup(
    config: &Config,
    db: Option<String>,
    file: PathBuf,
) -> Result<ExitCode, String> {
    let options = ServeOptions {
        database: db,
        ..ServeOptions::default()
    };
    let path = match Database::choose(config, &options).map_err(|e| e.to_string())? {
        Database::Postgres(_) => {
            return Err(
                "the database is PostgreSQL, which `harnessx backup` does not copy; back \
                        it up with `pg_dump -Fc` and restore it with `pg_restore` (see \"Backup \
                        and restore\" in harnessx/docs/production.md)"
                    .into(),
            );
        }
        Database::Sqlite(path) if path == ":memory:" => {
            return Err(
                "the database is `:memory:`: it keeps nothing, so there is nothing to back up"
                    .into(),
            );
        }
        Database::Sqlite(path) => path,
    };
    let report = {
        let (path, file) = (path.clone(), file.clone());
        tokio::task::spawn_blocking(move || SqliteStore::backup(path, file))
            .await
            .map_err(|e| format!("the backup stopped: {e}"))?
            .map_err(|e| e.to_string())?
    };
    println!(
        "backed up {path} to {}: {} run{}, {} bytes, schema version {}",
        file.display(),
        report.runs,
        if report.runs == 1 { "" } else { "s" },
        report.bytes,
        report.schema_version
    );
    Ok(ExitCode::SUCCESS)
}
