//! One test body, every store: [`durable_tests!`] instantiates each listed test once on SQLite
//! (in memory) and once on PostgreSQL (a database of its own in a throwaway cluster that the
//! tests of one binary share while any of them runs; with `CI` set, a missing PostgreSQL fails).

use std::sync::Arc;
#[cfg(feature = "postgres")]
use std::sync::atomic::{AtomicU64, Ordering};
#[cfg(feature = "postgres")]
use std::sync::{Mutex, Weak};

#[cfg(feature = "postgres")]
use harnessx_runtime::PostgresStore;
use harnessx_runtime::{RunStore, SqliteStore};
use harnessx_testkit::PgCluster;

/// Which engine a test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Sqlite,
    #[cfg(feature = "postgres")]
    Postgres,
}

/// Makes fresh, empty stores of one engine for a test.
pub struct Stores {
    pub engine: Engine,
    cluster: Option<Arc<PgCluster>>,
}

#[cfg(feature = "postgres")]
static CLUSTER: Mutex<Weak<PgCluster>> = Mutex::new(Weak::new());
#[cfg(feature = "postgres")]
static DATABASES: AtomicU64 = AtomicU64::new(0);

impl Stores {
    pub fn sqlite() -> Self {
        Self {
            engine: Engine::Sqlite,
            cluster: None,
        }
    }

    /// `None` (after printing why) when PostgreSQL is not installed and `CI` is unset.
    #[cfg(feature = "postgres")]
    pub fn postgres() -> Option<Self> {
        let mut shared = CLUSTER.lock().unwrap_or_else(|p| p.into_inner());
        let cluster = match shared.upgrade() {
            Some(c) => c,
            None => {
                let c = Arc::new(harnessx_testkit::require_or_skip()?);
                *shared = Arc::downgrade(&c);
                c
            }
        };
        Some(Self {
            engine: Engine::Postgres,
            cluster: Some(cluster),
        })
    }

    /// The cluster, on PostgreSQL.
    pub fn cluster(&self) -> Option<&PgCluster> {
        self.cluster.as_deref()
    }

    /// A new, empty store.
    pub async fn fresh(&self) -> Arc<dyn RunStore> {
        match &self.cluster {
            #[cfg(feature = "postgres")]
            Some(cluster) => Arc::new(
                PostgresStore::connect(&fresh_database(cluster).await)
                    .await
                    .unwrap(),
            ),
            _ => Arc::new(SqliteStore::in_memory().unwrap()),
        }
    }
}

/// Creates a database of its own in `cluster`; returns its URL.
#[cfg(feature = "postgres")]
pub async fn fresh_database(cluster: &PgCluster) -> String {
    let name = format!("t{}", DATABASES.fetch_add(1, Ordering::SeqCst));
    let (client, connection) = tokio_postgres::connect(&cluster.url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    let driver = tokio::spawn(connection);
    client
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .await
        .unwrap();
    drop(client);
    let _ = driver.await;
    format!("postgresql://postgres@127.0.0.1:{}/{name}", cluster.port())
}

/// Instantiates `async fn name(stores: Stores)` tests for each engine, in modules `sqlite` and
/// `postgres`.
#[macro_export]
macro_rules! durable_tests {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name($crate::common::stores::Stores::sqlite()).await
                }
            )*
        }
        #[cfg(feature = "postgres")]
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let Some(stores) = $crate::common::stores::Stores::postgres() else { return };
                    super::$name(stores).await
                }
            )*
        }
    };
}
