//! [`ResourceStore`] on SQLite: each call one transaction on the store's thread.

use harnessx::BoxFuture;
use rusqlite::{OptionalExtension, Transaction, params};
use serde_json::Value;

use super::{SqliteStore, db, json, parse};
use crate::error::StoreError;
use crate::store::now_ms;
use crate::store::resources::{Conflict, Expect, Resource, ResourceStore, Seeded, next_version};

fn version(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

/// The resource's row: its version and whether it is deleted.
fn head(tx: &Transaction<'_>, kind: &str, name: &str) -> Result<Option<(u64, bool)>, StoreError> {
    tx.query_row(
        "SELECT version, deleted FROM resources WHERE kind = ?1 AND name = ?2",
        params![kind, name],
        |r| Ok((version(r.get(0)?), r.get::<_, bool>(1)?)),
    )
    .optional()
    .map_err(db("reading a resource"))
}

/// Writes version `v` of a resource and makes it the live one.
fn write_version(
    tx: &Transaction<'_>,
    kind: &str,
    name: &str,
    v: u64,
    body: &Value,
    seed: Option<&str>,
) -> Result<Resource, StoreError> {
    const WHAT: &str = "writing a resource";
    let now = now_ms();
    let v_i = i64::try_from(v).unwrap_or(i64::MAX);
    tx.execute(
        "INSERT INTO resource_versions (kind, name, version, body, created_ms)
         VALUES (?1, ?2, ?3, ?4, ?5)",
        params![kind, name, v_i, json(body)?, now],
    )
    .map_err(db(WHAT))?;
    tx.execute(
        "INSERT INTO resources (kind, name, version, deleted, seed, updated_ms)
         VALUES (?1, ?2, ?3, 0, ?4, ?5)
         ON CONFLICT (kind, name) DO UPDATE SET version = ?3, deleted = 0,
           seed = COALESCE(?4, seed), updated_ms = ?5",
        params![kind, name, v_i, seed, now],
    )
    .map_err(db(WHAT))?;
    Ok(Resource {
        kind: kind.to_owned(),
        name: name.to_owned(),
        version: v,
        body: body.clone(),
        created_ms: now,
    })
}

/// A version's name, number, body and time, as selected.
type Row = (String, i64, String, i64);

fn row_resource(r: &rusqlite::Row<'_>) -> rusqlite::Result<Row> {
    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
}

fn to_resource(kind: &str, (name, v, body, created_ms): Row) -> Result<Resource, StoreError> {
    Ok(Resource {
        body: parse(&format!("{kind} `{name}` version {v}"), &body)?,
        kind: kind.to_owned(),
        name,
        version: version(v),
        created_ms,
    })
}

// The `ResourceStore` methods, boxed into the trait's own by `boxed_resource_store!` below.
impl SqliteStore {
    async fn resource(
        &self,
        kind: &str,
        name: &str,
        version: Option<u64>,
    ) -> Result<Option<Resource>, StoreError> {
        let (kind, name) = (kind.to_owned(), name.to_owned());
        self.call(move |conn| {
            let want = version.map(|v| i64::try_from(v).unwrap_or(i64::MAX));
            let row = match want {
                Some(v) => conn
                    .query_row(
                        "SELECT name, version, body, created_ms FROM resource_versions
                         WHERE kind = ?1 AND name = ?2 AND version = ?3",
                        params![kind, name, v],
                        row_resource,
                    )
                    .optional(),
                None => conn
                    .query_row(
                        "SELECT v.name, v.version, v.body, v.created_ms
                         FROM resources r JOIN resource_versions v
                           ON v.kind = r.kind AND v.name = r.name AND v.version = r.version
                         WHERE r.kind = ?1 AND r.name = ?2 AND NOT r.deleted",
                        params![kind, name],
                        row_resource,
                    )
                    .optional(),
            }
            .map_err(db("reading a resource"))?;
            row.map(|row| to_resource(&kind, row)).transpose()
        })
        .await
    }

    async fn resources(&self, kind: &str) -> Result<Vec<Resource>, StoreError> {
        let kind = kind.to_owned();
        self.call(move |conn| {
            let mut stmt = conn
                .prepare(
                    "SELECT v.name, v.version, v.body, v.created_ms
                     FROM resources r JOIN resource_versions v
                       ON v.kind = r.kind AND v.name = r.name AND v.version = r.version
                     WHERE r.kind = ?1 AND NOT r.deleted ORDER BY r.name",
                )
                .map_err(db("listing resources"))?;
            let rows = stmt
                .query_map([&kind], row_resource)
                .map_err(db("listing resources"))?
                .collect::<Result<Vec<_>, _>>()
                .map_err(db("listing resources"))?;
            rows.into_iter()
                .map(|row| to_resource(&kind, row))
                .collect()
        })
        .await
    }

    async fn put_resource(
        &self,
        kind: &str,
        name: &str,
        body: Value,
        expect: Expect,
    ) -> Result<Result<Resource, Conflict>, StoreError> {
        let (kind, name) = (kind.to_owned(), name.to_owned());
        self.write("writing a resource", move |tx| {
            match next_version(head(tx, &kind, &name)?, expect) {
                Ok(v) => write_version(tx, &kind, &name, v, &body, None).map(Ok),
                Err(conflict) => Ok(Err(conflict)),
            }
        })
        .await
    }

    async fn delete_resource(&self, kind: &str, name: &str) -> Result<bool, StoreError> {
        let (kind, name) = (kind.to_owned(), name.to_owned());
        self.write("deleting a resource", move |tx| {
            let n = tx
                .execute(
                    "UPDATE resources SET deleted = 1, updated_ms = ?3
                     WHERE kind = ?1 AND name = ?2 AND NOT deleted",
                    params![kind, name, now_ms()],
                )
                .map_err(db("deleting a resource"))?;
            Ok(n > 0)
        })
        .await
    }

    async fn seed_resource(
        &self,
        kind: &str,
        name: &str,
        body: Value,
    ) -> Result<Seeded, StoreError> {
        let (kind, name) = (kind.to_owned(), name.to_owned());
        self.write("seeding a resource", move |tx| {
            let text = json(&body)?;
            let seed: Option<Option<String>> = tx
                .query_row(
                    "SELECT seed FROM resources WHERE kind = ?1 AND name = ?2",
                    params![kind, name],
                    |r| r.get(0),
                )
                .optional()
                .map_err(db("seeding a resource"))?;
            match seed {
                Some(Some(last)) if last == text => Ok(Seeded::Unchanged),
                Some(_) => {
                    let v = head(tx, &kind, &name)?.map_or(1, |(v, _)| v + 1);
                    write_version(tx, &kind, &name, v, &body, Some(&text)).map(Seeded::Changed)
                }
                None => write_version(tx, &kind, &name, 1, &body, Some(&text)).map(Seeded::Created),
            }
        })
        .await
    }
}

crate::store::resources::boxed_resource_store!(SqliteStore);
