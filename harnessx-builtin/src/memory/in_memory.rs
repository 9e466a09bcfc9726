//! [`InMemoryStore`]: memories in a map, gone when the process ends. For tests, short-lived
//! agents, and as the helper's default.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::SystemTime;

use harnessx::BoxFuture;

use super::sanitize::{self, words};
use super::{
    ListQuery, Memory, MemoryError, MemoryHit, MemoryLimits, MemoryPage, MemoryStore, SearchQuery,
};

/// A [`MemoryStore`] in process memory, with the same cleaning and limits as the durable store.
///
/// Search scores each memory by how many of the query's words it contains (content and tags),
/// with repeated words counting less and less; ties go to the newer memory.
///
/// ```
/// use harnessx_builtin::memory::{InMemoryStore, MemoryStore, SearchQuery};
/// # tokio_test(async {
/// let store = InMemoryStore::new();
/// store.save("The deploy key lives in vault".into(), vec!["ops".into()]).await.unwrap();
/// let hits = store.search(SearchQuery { text: "vault".into(), ..Default::default() }).await.unwrap();
/// assert_eq!(hits[0].memory.content, "The deploy key lives in vault");
/// # });
/// # fn tokio_test(f: impl std::future::Future<Output = ()>) {
/// #     tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
/// # }
/// ```
#[derive(Debug, Default)]
pub struct InMemoryStore {
    limits: MemoryLimits,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    next_id: i64,
    memories: BTreeMap<i64, Entry>,
}

/// A memory and its words (content and tags), split once at save for search.
#[derive(Debug)]
struct Entry {
    memory: Memory,
    words: Vec<String>,
}

impl InMemoryStore {
    /// An empty store with the default [`MemoryLimits`].
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty store with these limits.
    pub fn with_limits(limits: MemoryLimits) -> Self {
        Self {
            limits,
            state: Mutex::default(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn save_now(&self, content: &str, tags: &[String]) -> Result<Memory, MemoryError> {
        // Cleaning, checking and indexing the caller's input happen before the lock is taken.
        let (content, tags) = sanitize::new_memory(content, tags, &self.limits)?;
        let words = words(&content)
            .chain(tags.iter().flat_map(|t| words(t).collect::<Vec<_>>()))
            .collect();
        let mut state = self.state();
        if state.memories.len() >= self.limits.max_memories {
            return Err(MemoryError::Full {
                limit: self.limits.max_memories,
            });
        }
        state.next_id += 1;
        let memory = Memory {
            id: state.next_id,
            content,
            tags,
            created_at: SystemTime::now(),
        };
        state.memories.insert(
            memory.id,
            Entry {
                memory: memory.clone(),
                words,
            },
        );
        Ok(memory)
    }

    fn search_now(&self, query: &SearchQuery) -> Result<Vec<MemoryHit>, MemoryError> {
        let terms = sanitize::search_terms(&query.text, &self.limits)?;
        let tag = sanitize::tag_filter(query.tag.as_deref());
        let limit = sanitize::clamp_limit(query.limit, &self.limits);
        let state = self.state();
        let mut scored: Vec<(f64, &Memory)> = state
            .memories
            .values()
            .rev()
            .filter(|e| has_tag(&e.memory, tag.as_deref()))
            .filter_map(|e| {
                let score = score(&e.words, &terms);
                (score > 0.0).then_some((score, &e.memory))
            })
            .collect();
        // Stable sort: equal scores keep newest-first order. Only the kept hits are cloned.
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        Ok(scored
            .into_iter()
            .take(limit)
            .map(|(score, memory)| MemoryHit {
                memory: memory.clone(),
                score,
            })
            .collect())
    }

    fn list_now(&self, query: &ListQuery) -> MemoryPage {
        let tag = sanitize::tag_filter(query.tag.as_deref());
        let limit = sanitize::clamp_limit(query.limit, &self.limits);
        let state = self.state();
        let matching: Vec<&Memory> = state
            .memories
            .values()
            .rev()
            .map(|e| &e.memory)
            .filter(|m| has_tag(m, tag.as_deref()))
            .collect();
        MemoryPage {
            total: matching.len(),
            memories: matching
                .into_iter()
                .skip(query.offset)
                .take(limit)
                .cloned()
                .collect(),
        }
    }
}

fn has_tag(memory: &Memory, tag: Option<&str>) -> bool {
    tag.is_none_or(|t| memory.tags.iter().any(|m| m.eq_ignore_ascii_case(t)))
}

/// Σ over query words of tf / (tf + 1): each word found adds up to 1, repeats add less.
fn score(doc: &[String], terms: &[String]) -> f64 {
    terms
        .iter()
        .map(|term| {
            let tf = doc.iter().filter(|w| *w == term).count() as f64;
            tf / (tf + 1.0)
        })
        .sum()
}

impl MemoryStore for InMemoryStore {
    fn save(
        &self,
        content: String,
        tags: Vec<String>,
    ) -> BoxFuture<'_, Result<Memory, MemoryError>> {
        Box::pin(async move { self.save_now(&content, &tags) })
    }

    fn search(&self, query: SearchQuery) -> BoxFuture<'_, Result<Vec<MemoryHit>, MemoryError>> {
        Box::pin(async move { self.search_now(&query) })
    }

    fn list(&self, query: ListQuery) -> BoxFuture<'_, Result<MemoryPage, MemoryError>> {
        Box::pin(async move { Ok(self.list_now(&query)) })
    }

    fn delete(&self, id: i64) -> BoxFuture<'_, Result<bool, MemoryError>> {
        Box::pin(async move { Ok(self.state().memories.remove(&id).is_some()) })
    }

    fn limits(&self) -> &MemoryLimits {
        &self.limits
    }
}
