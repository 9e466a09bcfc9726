//! [`ResourceStore`] on PostgreSQL: the writers of one resource take turns on a transaction
//! advisory lock, so processes writing it at once (two people, or servers seeding from the
//! same file at start-up) each see the other's version.

use deadpool_postgres::GenericClient;
use harnessx::BoxFuture;
use serde_json::Value;

use super::retry::{Attempt, pg, pg_commit};
use super::{PostgresStore, exec, json, one, opt, parse, rows};
use crate::error::StoreError;
use crate::store::resources::{Conflict, Expect, Resource, ResourceStore, Seeded, next_version};

fn version(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

fn signed(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// Waits for this resource's other writers (until the transaction ends).
async fn lock<C: GenericClient>(c: &C, kind: &str, name: &str) -> Result<(), Attempt> {
    exec(
        c,
        "locking a resource",
        "SELECT pg_advisory_xact_lock(hashtext($1 || '/' || $2))",
        &[&kind, &name],
    )
    .await?;
    Ok(())
}

/// The resource's row: its version and whether it is deleted.
async fn head<C: GenericClient>(
    c: &C,
    kind: &str,
    name: &str,
) -> Result<Option<(u64, bool)>, Attempt> {
    Ok(opt(
        c,
        "reading a resource",
        "SELECT version, deleted FROM resources WHERE kind = $1 AND name = $2",
        &[&kind, &name],
    )
    .await?
    .map(|r| (version(r.get(0)), r.get(1))))
}

/// Writes version `v` of a resource and makes it the live one.
async fn write_version<C: GenericClient>(
    c: &C,
    kind: &str,
    name: &str,
    v: u64,
    body: &Value,
    seed: Option<&str>,
) -> Result<Resource, Attempt> {
    const WHAT: &str = "writing a resource";
    let text = json(body)?;
    let created_ms: i64 = one(
        c,
        WHAT,
        "INSERT INTO resource_versions (kind, name, version, body, created_ms)
         VALUES ($1, $2, $3, $4, harnessx_now_ms()) RETURNING created_ms",
        &[&kind, &name, &signed(v), &text],
    )
    .await?
    .get(0);
    exec(
        c,
        WHAT,
        "INSERT INTO resources (kind, name, version, deleted, seed, updated_ms)
         VALUES ($1, $2, $3, false, $4, $5)
         ON CONFLICT (kind, name) DO UPDATE SET version = $3, deleted = false,
           seed = COALESCE($4, resources.seed), updated_ms = $5",
        &[&kind, &name, &signed(v), &seed, &created_ms],
    )
    .await?;
    Ok(Resource {
        kind: kind.to_owned(),
        name: name.to_owned(),
        version: v,
        body: body.clone(),
        created_ms,
    })
}

fn to_resource(kind: &str, r: &tokio_postgres::Row) -> Result<Resource, StoreError> {
    let name: String = r.get(0);
    let v: i64 = r.get(1);
    Ok(Resource {
        body: parse(&format!("{kind} `{name}` version {v}"), r.get(2))?,
        kind: kind.to_owned(),
        name,
        version: version(v),
        created_ms: r.get(3),
    })
}

// The `ResourceStore` methods, boxed into the trait's own by `boxed_resource_store!` below.
impl PostgresStore {
    async fn resource(
        &self,
        kind: &str,
        name: &str,
        version: Option<u64>,
    ) -> Result<Option<Resource>, StoreError> {
        const WHAT: &str = "reading a resource";
        self.retry(WHAT, || async {
            let c = self.client(WHAT).await?;
            let row = match version {
                Some(v) => {
                    opt(
                        &c,
                        WHAT,
                        "SELECT name, version, body, created_ms FROM resource_versions
                         WHERE kind = $1 AND name = $2 AND version = $3",
                        &[&kind, &name, &signed(v)],
                    )
                    .await?
                }
                None => {
                    opt(
                        &c,
                        WHAT,
                        "SELECT v.name, v.version, v.body, v.created_ms
                         FROM resources r JOIN resource_versions v
                           ON v.kind = r.kind AND v.name = r.name AND v.version = r.version
                         WHERE r.kind = $1 AND r.name = $2 AND NOT r.deleted",
                        &[&kind, &name],
                    )
                    .await?
                }
            };
            Ok(row.map(|r| to_resource(kind, &r)).transpose()?)
        })
        .await
    }

    async fn resources(&self, kind: &str) -> Result<Vec<Resource>, StoreError> {
        const WHAT: &str = "listing resources";
        self.retry(WHAT, || async {
            let c = self.client(WHAT).await?;
            let found = rows(
                &c,
                WHAT,
                "SELECT v.name, v.version, v.body, v.created_ms
                 FROM resources r JOIN resource_versions v
                   ON v.kind = r.kind AND v.name = r.name AND v.version = r.version
                 WHERE r.kind = $1 AND NOT r.deleted ORDER BY r.name",
                &[&kind],
            )
            .await?;
            Ok(found
                .iter()
                .map(|r| to_resource(kind, r))
                .collect::<Result<Vec<_>, _>>()?)
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
        const WHAT: &str = "writing a resource";
        self.retry(WHAT, || async {
            let mut c = self.client(WHAT).await?;
            let tx = c.transaction().await.map_err(pg(WHAT))?;
            lock(&tx, kind, name).await?;
            let out = match next_version(head(&tx, kind, name).await?, expect) {
                Ok(v) => Ok(write_version(&tx, kind, name, v, &body, None).await?),
                Err(conflict) => Err(conflict),
            };
            tx.commit().await.map_err(pg_commit(WHAT))?;
            Ok(out)
        })
        .await
    }

    async fn delete_resource(&self, kind: &str, name: &str) -> Result<bool, StoreError> {
        const WHAT: &str = "deleting a resource";
        self.retry(WHAT, || async {
            let c = self.client(WHAT).await?;
            let n = exec(
                &c,
                WHAT,
                "UPDATE resources SET deleted = true, updated_ms = harnessx_now_ms()
                 WHERE kind = $1 AND name = $2 AND NOT deleted",
                &[&kind, &name],
            )
            .await?;
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
        const WHAT: &str = "seeding a resource";
        let text = json(&body)?;
        self.retry(WHAT, || async {
            let mut c = self.client(WHAT).await?;
            let tx = c.transaction().await.map_err(pg(WHAT))?;
            lock(&tx, kind, name).await?;
            let seed = opt(
                &tx,
                WHAT,
                "SELECT seed FROM resources WHERE kind = $1 AND name = $2",
                &[&kind, &name],
            )
            .await?
            .map(|r| r.get::<_, Option<String>>(0));
            let out = match seed {
                Some(Some(last)) if last == text => Seeded::Unchanged,
                Some(_) => {
                    let v = head(&tx, kind, name).await?.map_or(1, |(v, _)| v + 1);
                    Seeded::Changed(write_version(&tx, kind, name, v, &body, Some(&text)).await?)
                }
                None => {
                    Seeded::Created(write_version(&tx, kind, name, 1, &body, Some(&text)).await?)
                }
            };
            tx.commit().await.map_err(pg_commit(WHAT))?;
            Ok(out)
        })
        .await
    }
}

crate::store::resources::boxed_resource_store!(PostgresStore);
