//! Memory store figures: full-text search over 10 000 memories and a single save, for the
//! in-memory store and the SQLite store (WAL, FTS5).

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use harnessx_builtin::memory::{
    InMemoryStore, MemoryLimits, MemoryStore, SearchQuery, SqliteMemoryStore,
};

const MEMORIES: usize = 10_000;
const WORDS: [&str; 24] = [
    "deploy", "database", "postgres", "user", "prefers", "metric", "units", "vault", "key",
    "staging", "replica", "backup", "nightly", "cargo", "build", "cache", "timezone", "meeting",
    "tuesday", "release", "notes", "api", "token", "rotation",
];

fn text(i: usize) -> String {
    (0..12)
        .map(|k| WORDS[(i * 7 + k * 13 + i / 3) % WORDS.len()])
        .collect::<Vec<_>>()
        .join(" ")
}

fn limits() -> MemoryLimits {
    MemoryLimits {
        max_memories: 1_000_000,
        ..MemoryLimits::default()
    }
}

fn fill(rt: &tokio::runtime::Runtime, store: &dyn MemoryStore) {
    rt.block_on(async {
        for i in 0..MEMORIES {
            store
                .save(text(i), vec![WORDS[i % 5].to_owned()])
                .await
                .expect("save");
        }
    });
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let sqlite: Arc<dyn MemoryStore> = Arc::new(
        SqliteMemoryStore::open_with_limits(dir.path().join("bench.db"), limits()).expect("open"),
    );
    let in_memory: Arc<dyn MemoryStore> = Arc::new(InMemoryStore::with_limits(limits()));
    fill(&rt, sqlite.as_ref());
    fill(&rt, in_memory.as_ref());

    let mut group = c.benchmark_group("memory");
    for (name, store) in [("sqlite", &sqlite), ("in_memory", &in_memory)] {
        group.bench_function(format!("search_10k/{name}"), |b| {
            b.to_async(&rt).iter(|| async {
                let query = SearchQuery {
                    text: "postgres replica backup".into(),
                    tag: None,
                    limit: 10,
                };
                black_box(store.search(query).await.expect("search"))
            });
        });
        // Save then delete, so the store stays at 10 000 memories however many iterations run.
        group.bench_function(format!("save_and_delete/{name}"), |b| {
            b.to_async(&rt).iter(|| async {
                let saved = store
                    .save(
                        "The staging replica lags a minute".into(),
                        vec!["ops".into()],
                    )
                    .await
                    .expect("save");
                black_box(store.delete(saved.id).await.expect("delete"))
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
