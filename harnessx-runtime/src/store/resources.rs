//! [`ResourceStore`]: the platform's stored resources — agents, and whatever else a host keeps
//! beside its runs — each a chain of versions in the same database as the runs, so every
//! process sharing the store sees a change at once and a restart keeps it.
//!
//! A resource is a `kind` (`agent`), a `name` and a JSON body the host defines. Every write is
//! a new version; old versions stay readable, so a run that started on version 3 resumes on
//! version 3 after the resource moved on (or was deleted). A write names the version it
//! expects to replace ([`Expect`]), so two people changing one resource at once cannot silently
//! overwrite each other.

use harnessx::BoxFuture;
use serde_json::Value;

use crate::error::StoreError;

/// One version of a stored resource.
#[derive(Debug, Clone, PartialEq)]
pub struct Resource {
    /// Its kind (`agent`).
    pub kind: String,
    /// Its name, unique within the kind.
    pub name: String,
    /// Its version: 1 for the first, one more for each change (never reused, even after a
    /// delete).
    pub version: u64,
    /// The body the host stored.
    pub body: Value,
    /// When this version was written (ms since the Unix epoch).
    pub created_ms: i64,
}

/// What a write expects to find.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// No live resource of this name (never created, or deleted): a create.
    Absent,
    /// The live resource at exactly this version: a change made from what was read.
    Version(u64),
}

/// A write that found something else than it expected: the current version (`None`: no live
/// resource).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{}", match .current {
    Some(v) => format!("the resource is at version {v} now"),
    None => "the resource does not exist (or was deleted)".to_owned(),
})]
pub struct Conflict {
    /// The live version, if any.
    pub current: Option<u64>,
}

/// What seeding a resource from a configuration file did.
#[derive(Debug, Clone, PartialEq)]
pub enum Seeded {
    /// The resource did not exist: it was created at version 1.
    Created(Resource),
    /// The file's body differs from what it seeded last time: it became a new version (over
    /// any change made since through the API).
    Changed(Resource),
    /// The file says what it said last time: the stored resource (with the API's changes, or
    /// deleted) was left alone.
    Unchanged,
}

/// Where stored resources live: both run stores implement it, in the same database.
pub trait ResourceStore: Send + Sync + 'static {
    /// A resource at `version`, or its live version when `None` (then `None` once deleted).
    fn resource<'a>(
        &'a self,
        kind: &'a str,
        name: &'a str,
        version: Option<u64>,
    ) -> BoxFuture<'a, Result<Option<Resource>, StoreError>>;

    /// Every live resource of a kind, by name.
    fn resources<'a>(&'a self, kind: &'a str) -> BoxFuture<'a, Result<Vec<Resource>, StoreError>>;

    /// Writes `body` as the resource's next version if it is as `expect`ed.
    fn put_resource<'a>(
        &'a self,
        kind: &'a str,
        name: &'a str,
        body: Value,
        expect: Expect,
    ) -> BoxFuture<'a, Result<Result<Resource, Conflict>, StoreError>>;

    /// Deletes the live resource (its versions stay for the runs that use them); `false` when
    /// there was none.
    fn delete_resource<'a>(
        &'a self,
        kind: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Seeds a resource from a configuration file: creates it, makes the file's body a new
    /// version when the file changed since the last seed, or leaves it alone (see [`Seeded`]).
    /// Safe when several processes start at once with the same file.
    fn seed_resource<'a>(
        &'a self,
        kind: &'a str,
        name: &'a str,
        body: Value,
    ) -> BoxFuture<'a, Result<Seeded, StoreError>>;
}

/// Implements [`ResourceStore`] for a store whose inherent `async fn`s of the same names do the work
/// (the SQLite and PostgreSQL stores): each trait method boxes the inherent method's future. An
/// inherent method comes first in method resolution, so `self.name(..)` here calls it, not the
/// trait method. Items given in braces after the type join the impl.
macro_rules! boxed_resource_store {
    ($store:ty $({ $($item:item)* })?) => {
        impl ResourceStore for $store {
            $($($item)*)?

            fn resource<'a>(
                &'a self,
                kind: &'a str,
                name: &'a str,
                version: Option<u64>,
            ) -> BoxFuture<'a, Result<Option<Resource>, StoreError>> {
                Box::pin(self.resource(kind, name, version))
            }

            fn resources<'a>(&'a self, kind: &'a str) -> BoxFuture<'a, Result<Vec<Resource>, StoreError>> {
                Box::pin(self.resources(kind))
            }

            fn put_resource<'a>(
                &'a self,
                kind: &'a str,
                name: &'a str,
                body: Value,
                expect: Expect,
            ) -> BoxFuture<'a, Result<Result<Resource, Conflict>, StoreError>> {
                Box::pin(self.put_resource(kind, name, body, expect))
            }

            fn delete_resource<'a>(
                &'a self,
                kind: &'a str,
                name: &'a str,
            ) -> BoxFuture<'a, Result<bool, StoreError>> {
                Box::pin(self.delete_resource(kind, name))
            }

            fn seed_resource<'a>(
                &'a self,
                kind: &'a str,
                name: &'a str,
                body: Value,
            ) -> BoxFuture<'a, Result<Seeded, StoreError>> {
                Box::pin(self.seed_resource(kind, name, body))
            }
        }
    };
}
pub(crate) use boxed_resource_store;

/// The version a write makes, and whether the stored state allows it: `current` is the
/// resource's row (its version and whether it is deleted), `None` when it never existed.
pub(crate) fn next_version(current: Option<(u64, bool)>, expect: Expect) -> Result<u64, Conflict> {
    let live = current.and_then(|(v, deleted)| (!deleted).then_some(v));
    match (expect, live) {
        (Expect::Absent, None) => Ok(current.map_or(1, |(v, _)| v + 1)),
        (Expect::Version(want), Some(v)) if want == v => Ok(v + 1),
        (_, live) => Err(Conflict { current: live }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_follow_the_expectation() {
        assert_eq!(next_version(None, Expect::Absent), Ok(1));
        assert_eq!(next_version(Some((3, true)), Expect::Absent), Ok(4));
        assert_eq!(
            next_version(Some((3, false)), Expect::Absent),
            Err(Conflict { current: Some(3) })
        );
        assert_eq!(next_version(Some((3, false)), Expect::Version(3)), Ok(4));
        assert_eq!(
            next_version(Some((4, false)), Expect::Version(3)),
            Err(Conflict { current: Some(4) })
        );
        assert_eq!(
            next_version(Some((4, true)), Expect::Version(4)),
            Err(Conflict { current: None })
        );
        assert_eq!(
            Conflict { current: Some(4) }.to_string(),
            "the resource is at version 4 now"
        );
        assert_eq!(
            Conflict { current: None }.to_string(),
            "the resource does not exist (or was deleted)"
        );
    }
}
