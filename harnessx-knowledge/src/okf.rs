//! Open Knowledge Format bundles and the read-only concept tools `search_concepts`,
//! `read_concept` and `get_neighbors`.
//!
//! An [OKF](https://github.com/GoogleCloudPlatform/knowledge-catalog) bundle is a directory of
//! Markdown concepts. Each file opens with YAML front matter: `type` is required; `title`,
//! `description`, `resource` and `tags` are the recommended fields. OKF v0.2's provenance, trust
//! and lifecycle fields are read too: `generated` (`by`, and `at`, the concept's
//! [timestamp](Concept::timestamp), with v0.1's `timestamp` as the fallback), `verified` (and
//! the [trust tier](Trust) it gives), `status` (a [deprecated](Concept::is_deprecated) concept
//! is flagged and ranked last), `stale_after` and `sources`. Any other field is kept. A concept's ID is its path in the bundle without `.md`
//! (`tables/orders.md` is `tables/orders`). Markdown links between concepts, document-relative
//! (`../tables/customers.md`) or bundle-relative (`/tables/customers.md`), are the edges of the
//! bundle's graph; links under a `# Citations` heading are citations. `index.md` and `log.md`
//! are reserved at every level and are not concepts.
//!
//! Feature `okf` (not on by default; it turns `knowledge` on).
//!
//! [`OkfBundle::load`] reads a bundle and indexes it for full-text search (SQLite FTS5, with
//! Porter stemming). `search_concepts` scores the concepts of every attached bundle on one
//! scale: word weights come from all bundles together and each concept gets a relevance in
//! `(0, 1)`, so a large bundle's best match is not buried under a small bundle's, and a match is
//! never shown as `0.00`. English stop words (`the`, `for`, `in`, ...) are left out of queries.
//! How the score is made, and why raw bm25 scores of separate indexes cannot be merged, is
//! explained in the `rank` module's source. A broken link, a missing
//! `type` or front matter that does not parse never fails the load: the concept is kept with
//! what could be read and the problem is listed in [`OkfBundle::diagnostics`] (and noted in the
//! tools' results for that concept). [`attach_okf`] (or `Agent::builder().knowledge(bundle)`)
//! registers the three tools with the first bundle; detaching the last one removes them.
//!
//! ```
//! use harnessx::ToolRegistry;
//! use harnessx::knowledge::okf::{OkfBundle, attach_okf, SEARCH_CONCEPTS, READ_CONCEPT, GET_NEIGHBORS};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! std::fs::create_dir(dir.path().join("tables"))?;
//! std::fs::write(
//!     dir.path().join("tables/orders.md"),
//!     "---\ntype: table\ntitle: Orders\n---\nOne row per order; see [customers](customers.md).\n",
//! )?;
//! std::fs::write(
//!     dir.path().join("tables/customers.md"),
//!     "---\ntype: table\ntitle: Customers\n---\nOne row per customer.\n",
//! )?;
//! let bundle = OkfBundle::load(dir.path())?.named("warehouse");
//! assert_eq!(bundle.ids(), ["tables/customers", "tables/orders"]);
//! assert_eq!(bundle.incoming("tables/customers")[0].from, "tables/orders");
//! assert!(bundle.diagnostics().is_empty());
//!
//! let registry = ToolRegistry::new();
//! let handle = attach_okf(&registry, bundle)?;
//! assert_eq!(registry.list_tools(), [SEARCH_CONCEPTS, READ_CONCEPT, GET_NEIGHBORS]);
//! handle.detach();
//! assert!(registry.list_tools().is_empty());
//! # Ok(()) }
//! ```

mod agent;
mod get_neighbors;
mod index;
mod links;
mod load;
mod lookup;
mod rank;
mod read_concept;
mod search_concepts;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde_json::{Map, Value};

pub use get_neighbors::GET_NEIGHBORS;
pub use read_concept::READ_CONCEPT;
pub use search_concepts::SEARCH_CONCEPTS;

use super::{ATTACHING, NEXT_ID};
use harnessx_core::error::RegistryError;
use harnessx_core::registry::{ToolRegistry, WeakToolRegistry};

/// The three tools a bundle brings, in registration order.
pub const OKF_TOOLS: [&str; 3] = [SEARCH_CONCEPTS, READ_CONCEPT, GET_NEIGHBORS];

/// A loaded, indexed OKF bundle. Cheap to clone (clones share it).
#[derive(Clone)]
pub struct OkfBundle {
    name: String,
    inner: Arc<Bundle>,
}

pub(crate) struct Bundle {
    root: PathBuf,
    concepts: BTreeMap<String, Concept>,
    /// Links into each concept, in the order of their sources' IDs.
    incoming: BTreeMap<String, Vec<Link>>,
    diagnostics: Vec<Diagnostic>,
    index: index::ConceptIndex,
}

impl std::fmt::Debug for OkfBundle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OkfBundle")
            .field("name", &self.name)
            .field("root", &self.inner.root)
            .field("concepts", &self.inner.concepts.len())
            .field("diagnostics", &self.inner.diagnostics.len())
            .finish_non_exhaustive()
    }
}

impl OkfBundle {
    /// Reads the bundle in the directory `root` and indexes it. Its name is the directory's
    /// name. Only an unreadable `root` is an error; problems inside the bundle are
    /// [`diagnostics`](Self::diagnostics). Reads every file now: call it at start-up (or in
    /// `spawn_blocking`), not inside a latency-sensitive task.
    pub fn load(root: impl AsRef<Path>) -> Result<Self, OkfError> {
        let root = root.as_ref();
        let inner = load::load(root)?;
        let name = std::fs::canonicalize(root)
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "knowledge".to_owned());
        Ok(Self {
            name,
            inner: Arc::new(inner),
        })
    }

    /// Sets the name shown with its concepts (and used to pick it when several are attached).
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The bundle's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The directory it was loaded from.
    pub fn root(&self) -> &Path {
        &self.inner.root
    }

    /// The concept with this ID.
    pub fn concept(&self, id: &str) -> Option<&Concept> {
        self.inner.concepts.get(id)
    }

    /// Every concept ID, sorted.
    pub fn ids(&self) -> Vec<&str> {
        self.inner.concepts.keys().map(String::as_str).collect()
    }

    /// The concepts, sorted by ID.
    pub fn concepts(&self) -> impl Iterator<Item = &Concept> {
        self.inner.concepts.values()
    }

    /// The links into the concept `id` from other concepts.
    pub fn incoming(&self, id: &str) -> &[Link] {
        self.inner.incoming.get(id).map_or(&[], Vec::as_slice)
    }

    /// The problems found while loading: files skipped, front matter that could not be read,
    /// missing `type`s, broken links. Never fatal.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.inner.diagnostics
    }

    /// The diagnostics about the file of concept `id`.
    pub fn diagnostics_for(&self, id: &str) -> Vec<&Diagnostic> {
        let path = format!("{id}.md");
        self.inner
            .diagnostics
            .iter()
            .filter(|d| d.path == path)
            .collect()
    }
}

/// One concept: its front matter, body and outgoing links.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Concept {
    /// The path in the bundle without `.md`, with `/` separators.
    pub id: String,
    /// Every front matter field as written (empty when it could not be read).
    pub front_matter: Map<String, Value>,
    /// The Markdown after the front matter.
    pub body: String,
    /// Links to other concepts in the bundle, in document order (broken links are diagnostics).
    pub links: Vec<Link>,
}

/// A front-matter value as text, trimmed; `None` when missing, not a string, or blank.
fn nonblank(value: Option<&Value>) -> Option<&str> {
    value
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

impl Concept {
    fn text(&self, key: &str) -> Option<&str> {
        nonblank(self.front_matter.get(key))
    }

    /// `type`: what kind of concept it is (required by OKF; `None` when missing).
    pub fn concept_type(&self) -> Option<&str> {
        self.text("type")
    }

    /// `title`.
    pub fn title(&self) -> Option<&str> {
        self.text("title")
    }

    /// `description`.
    pub fn description(&self) -> Option<&str> {
        self.text("description")
    }

    /// `resource`: what the concept describes (a table, a URL, ...).
    pub fn resource(&self) -> Option<&str> {
        self.text("resource")
    }

    /// When the content last changed, as written: OKF v0.2's `generated.at`, else v0.1's
    /// `timestamp` (which `generated.at` supersedes).
    ///
    /// ```
    /// # use harnessx::knowledge::okf::OkfBundle;
    /// # let dir = tempfile::tempdir()?;
    /// std::fs::write(
    ///     dir.path().join("revenue.md"),
    ///     "---\ntype: Metric\ngenerated: { by: human:ana, at: 2026-06-20T22:53:05Z }\n---\n",
    /// )?;
    /// let bundle = OkfBundle::load(dir.path())?;
    /// let revenue = bundle.concept("revenue").unwrap();
    /// assert_eq!(revenue.timestamp(), Some("2026-06-20T22:53:05Z"));
    /// assert_eq!(revenue.generated_by(), Some("human:ana"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn timestamp(&self) -> Option<&str> {
        self.generated("at").or_else(|| self.text("timestamp"))
    }

    /// `generated.by`: who or what wrote the content (an actor such as
    /// `reference_agent/gemini-2.5-pro` or `human:ana`).
    pub fn generated_by(&self) -> Option<&str> {
        self.generated("by")
    }

    fn generated(&self, key: &str) -> Option<&str> {
        nonblank(self.front_matter.get("generated").and_then(|g| g.get(key)))
    }

    /// `status`, as written: `draft`, `stable` or `deprecated` (OKF reads a missing status as
    /// `stable`).
    pub fn status(&self) -> Option<&str> {
        self.text("status")
    }

    /// Whether the concept's `status` is `deprecated`: kept for links and history, no longer
    /// current. Search ranks deprecated concepts after all others and says that they are.
    ///
    /// ```
    /// # use harnessx::knowledge::okf::OkfBundle;
    /// # let dir = tempfile::tempdir()?;
    /// std::fs::write(dir.path().join("old.md"), "---\ntype: Metric\nstatus: deprecated\n---\n")?;
    /// let bundle = OkfBundle::load(dir.path())?;
    /// assert!(bundle.concept("old").unwrap().is_deprecated());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_deprecated(&self) -> bool {
        self.status()
            .is_some_and(|s| s.eq_ignore_ascii_case("deprecated"))
    }

    /// `verified`: who confirmed the content and when, in the order written (a single
    /// `{ by, at }` mapping counts as a list of one). Entries without a `by` are left out.
    ///
    /// ```
    /// # use harnessx::knowledge::okf::{OkfBundle, Trust};
    /// # let dir = tempfile::tempdir()?;
    /// std::fs::write(
    ///     dir.path().join("revenue.md"),
    ///     "---\ntype: Metric\nverified:\n  - { by: process:nightly, at: 2026-06-26T02:00:00Z }\n  - { by: human:ana, at: 2026-06-25T09:00:00Z }\n---\n",
    /// )?;
    /// let bundle = OkfBundle::load(dir.path())?;
    /// let revenue = bundle.concept("revenue").unwrap();
    /// assert_eq!(revenue.verified()[1].by, "human:ana");
    /// assert_eq!(revenue.trust(), Trust::HumanReviewed);
    /// assert_eq!(revenue.last_verified(), Some("2026-06-26T02:00:00Z"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn verified(&self) -> Vec<Verification> {
        let entries = match self.front_matter.get("verified") {
            Some(Value::Array(list)) => list.iter().collect(),
            Some(one @ Value::Object(_)) => vec![one],
            _ => Vec::new(),
        };
        entries
            .into_iter()
            .filter_map(|entry| {
                let field = |key: &str| nonblank(entry.get(key)).map(str::to_owned);
                Some(Verification {
                    by: field("by")?,
                    at: field("at"),
                })
            })
            .collect()
    }

    /// The latest `at` of [`verified`](Self::verified), as written.
    pub fn last_verified(&self) -> Option<&str> {
        let entries: Vec<&Value> = match self.front_matter.get("verified") {
            Some(Value::Array(list)) => list.iter().collect(),
            Some(one @ Value::Object(_)) => vec![one],
            _ => Vec::new(),
        };
        entries
            .into_iter()
            .filter(|e| e.get("by").and_then(Value::as_str).is_some())
            .filter_map(|e| nonblank(e.get("at")))
            .max()
    }

    /// The trust tier OKF derives from [`verified`](Self::verified).
    pub fn trust(&self) -> Trust {
        let verified = self.verified();
        if verified.iter().any(|v| v.by.starts_with("human:")) {
            Trust::HumanReviewed
        } else if verified.is_empty() {
            Trust::Unverified
        } else {
            Trust::MachineConfirmed
        }
    }

    /// `stale_after`: the date (`YYYY-MM-DD`) from which the content is stale, as written.
    pub fn stale_after(&self) -> Option<&str> {
        self.text("stale_after")
    }

    /// Whether the concept is stale on `date` (`YYYY-MM-DD`): it has a `stale_after` date that
    /// is `date` or earlier. A `stale_after` that is not a date never makes a concept stale (it
    /// is a [diagnostic](OkfBundle::diagnostics) instead).
    ///
    /// ```
    /// # use harnessx::knowledge::okf::OkfBundle;
    /// # let dir = tempfile::tempdir()?;
    /// std::fs::write(dir.path().join("fx.md"), "---\ntype: Metric\nstale_after: 2026-09-23\n---\n")?;
    /// let bundle = OkfBundle::load(dir.path())?;
    /// let fx = bundle.concept("fx").unwrap();
    /// assert!(!fx.is_stale_on("2026-09-22"));
    /// assert!(fx.is_stale_on("2026-09-23"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_stale_on(&self, date: &str) -> bool {
        self.stale_after()
            .and_then(iso_date)
            .is_some_and(|after| iso_date(date).is_some_and(|today| today >= after))
    }

    /// Whether the concept is stale today (UTC); see [`is_stale_on`](Self::is_stale_on).
    pub fn is_stale(&self) -> bool {
        self.is_stale_on(&today())
    }

    /// `sources`: the materials the content derives from, in the order written. Entries
    /// without a `resource` (which OKF requires in each) are left out.
    ///
    /// ```
    /// # use harnessx::knowledge::okf::OkfBundle;
    /// # let dir = tempfile::tempdir()?;
    /// std::fs::write(
    ///     dir.path().join("events.md"),
    ///     "---\ntype: Table\nsources:\n  - id: ga4\n    resource: https://example.com/ga4\n    usage_count: 5000\n---\n",
    /// )?;
    /// let bundle = OkfBundle::load(dir.path())?;
    /// let sources = bundle.concept("events").unwrap().sources();
    /// assert_eq!(sources[0].resource, "https://example.com/ga4");
    /// assert_eq!(sources[0].id.as_deref(), Some("ga4"));
    /// assert_eq!(sources[0].usage_count, Some(5000));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn sources(&self) -> Vec<Source> {
        let Some(Value::Array(entries)) = self.front_matter.get("sources") else {
            return Vec::new();
        };
        entries
            .iter()
            .filter_map(|entry| {
                let text = |key: &str| nonblank(entry.get(key)).map(str::to_owned);
                Some(Source {
                    resource: text("resource")?,
                    id: text("id"),
                    title: text("title"),
                    author: text("author"),
                    usage_count: entry.get("usage_count").and_then(Value::as_u64),
                    last_modified: text("last_modified"),
                })
            })
            .collect()
    }

    /// `tags`: a list of tags (a single text value counts as one tag).
    pub fn tags(&self) -> Vec<&str> {
        match self.front_matter.get("tags") {
            Some(Value::String(tag)) => vec![tag.as_str()],
            Some(Value::Array(tags)) => tags.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        }
    }
}

/// One `verified` entry: who confirmed a concept, and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Verification {
    /// The actor: `human:<id>`, `process:<id>` or `<producer>/<version>`.
    pub by: String,
    /// When, as written (an ISO 8601 date and time).
    pub at: Option<String>,
}

/// How far a concept has been confirmed, from its `verified` entries (OKF's trust tiers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Trust {
    /// No `verified` entry.
    Unverified,
    /// Verified by processes or agents only.
    MachineConfirmed,
    /// Verified by a person (a `human:` actor).
    HumanReviewed,
}

impl Trust {
    /// `unverified`, `machine-confirmed` or `human-reviewed`.
    pub fn as_str(self) -> &'static str {
        match self {
            Trust::Unverified => "unverified",
            Trust::MachineConfirmed => "machine-confirmed",
            Trust::HumanReviewed => "human-reviewed",
        }
    }
}

/// One `sources` entry: a material a concept derives from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Source {
    /// What it is: a URL, a path in the bundle, or a description of a scope.
    pub resource: String,
    /// The key footnotes in the body cite it by.
    pub id: Option<String>,
    /// A readable name.
    pub title: Option<String>,
    /// Who or what produced it (an actor).
    pub author: Option<String>,
    /// How often it was used over the concept's `usage_window`.
    pub usage_count: Option<u64>,
    /// When it last changed (`YYYY-MM-DD`).
    pub last_modified: Option<String>,
}

/// The `YYYY-MM-DD` at the start of `text` (a date, or a date and time), when it is one.
pub(crate) fn iso_date(text: &str) -> Option<&str> {
    let date = text.trim().get(..10)?;
    let b = date.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    (digits(0..4) && b[4] == b'-' && digits(5..7) && b[7] == b'-' && digits(8..10)).then_some(date)
}

/// Today's date in UTC, `YYYY-MM-DD`.
fn today() -> String {
    let days = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() / 86_400) as i64;
    // Howard Hinnant's `civil_from_days`.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// A link from one concept to another.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Link {
    /// The linking concept's ID.
    pub from: String,
    /// The linked concept's ID.
    pub to: String,
    /// The link's text.
    pub text: String,
    /// A plain link, or a citation (a link under a `Citations` heading).
    pub kind: LinkKind,
}

/// What a link is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum LinkKind {
    /// A link in the text.
    Link,
    /// A link under a `Citations` heading.
    Citation,
}

impl LinkKind {
    /// `link` or `citation`.
    pub fn as_str(self) -> &'static str {
        match self {
            LinkKind::Link => "link",
            LinkKind::Citation => "citation",
        }
    }
}

/// A problem found while loading a bundle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// The file concerned, relative to the bundle root (`tables/orders.md`).
    pub path: String,
    /// What kind of problem it is.
    pub kind: DiagnosticKind,
    /// What is wrong and what was done about it.
    pub message: String,
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// The kinds of [`Diagnostic`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum DiagnosticKind {
    /// The front matter is missing or does not parse; the concept is kept without fields.
    FrontMatter,
    /// The front matter has no `type`.
    MissingType,
    /// A recommended field has the wrong shape (a list where text belongs, ...).
    InvalidField,
    /// A link points to a concept the bundle does not have, or outside the bundle.
    BrokenLink,
    /// A file was not loaded (a symbolic link, not UTF-8, too large, unreadable).
    Skipped,
}

/// A bundle that cannot be loaded at all.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OkfError {
    /// The bundle's root directory cannot be read.
    #[error("cannot read the OKF bundle at `{path}`; give the path of a readable directory")]
    Read {
        /// The directory.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The full-text index could not be built.
    #[error("could not build the search index of the OKF bundle at `{path}`")]
    Index {
        /// The bundle's directory.
        path: PathBuf,
        /// SQLite's error.
        #[source]
        source: rusqlite::Error,
    },
}

/// The bundles attached to one registry, kept in its shared state.
#[derive(Default)]
pub(crate) struct Attached {
    bundles: Mutex<Vec<(u64, OkfBundle)>>,
}

impl Attached {
    /// The attached bundles, in attachment order.
    pub(crate) fn list(&self) -> Vec<OkfBundle> {
        let bundles = self.bundles.lock().unwrap_or_else(|p| p.into_inner());
        bundles.iter().map(|(_, b)| b.clone()).collect()
    }
}

/// Attaches an OKF bundle to `registry`. The first attachment registers `search_concepts`,
/// `read_concept` and `get_neighbors` (read-only, never ask).
///
/// Fails when the registry has another tool of one of those names, or when a bundle of the
/// same name is attached already (rename one with [`OkfBundle::named`]).
pub fn attach_okf(registry: &ToolRegistry, bundle: OkfBundle) -> Result<OkfHandle, RegistryError> {
    let _turn = ATTACHING.lock().unwrap_or_else(|p| p.into_inner());
    let attached: Arc<Attached> = match registry.state::<Arc<Attached>>() {
        Some(state) => Arc::clone(&state),
        None => {
            let fresh = Arc::new(Attached::default());
            registry.insert_state(Arc::clone(&fresh));
            fresh
        }
    };
    let mut bundles = attached.bundles.lock().unwrap_or_else(|p| p.into_inner());
    if bundles.iter().any(|(_, b)| b.name == bundle.name) {
        return Err(RegistryError::Config(format!(
            "an OKF bundle named `{}` is already attached; give this one another name with \
             `OkfBundle::named`",
            bundle.name
        )));
    }
    if bundles.is_empty() {
        let definitions = [
            search_concepts::definition(Arc::clone(&attached)),
            read_concept::definition(Arc::clone(&attached)),
            get_neighbors::definition(Arc::clone(&attached)),
        ];
        for (i, definition) in definitions.into_iter().enumerate() {
            if let Err(e) = registry.register_tool(definition) {
                for name in &OKF_TOOLS[..i] {
                    registry.unregister(name);
                }
                return Err(e);
            }
        }
    }
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let name = bundle.name.clone();
    bundles.push((id, bundle));
    Ok(OkfHandle {
        id,
        name,
        registry: registry.downgrade(),
    })
}

/// Detaches a bundle; detaching the last one removes the three tools. Returns whether it was
/// attached.
pub fn detach_okf(registry: &ToolRegistry, handle: &OkfHandle) -> bool {
    let _turn = ATTACHING.lock().unwrap_or_else(|p| p.into_inner());
    let Some(attached) = registry.state::<Arc<Attached>>() else {
        return false;
    };
    let mut bundles = attached.bundles.lock().unwrap_or_else(|p| p.into_inner());
    let before = bundles.len();
    bundles.retain(|(id, _)| *id != handle.id);
    let removed = bundles.len() < before;
    if removed && bundles.is_empty() {
        for name in OKF_TOOLS {
            registry.unregister(name);
        }
    }
    removed
}

/// The bundles attached to `registry`, in attachment order.
pub fn attached_okf(registry: &ToolRegistry) -> Vec<OkfHandle> {
    let Some(attached) = registry.state::<Arc<Attached>>() else {
        return Vec::new();
    };
    let bundles = attached.bundles.lock().unwrap_or_else(|p| p.into_inner());
    bundles
        .iter()
        .map(|(id, b)| OkfHandle {
            id: *id,
            name: b.name.clone(),
            registry: registry.downgrade(),
        })
        .collect()
}

/// One attachment of a bundle to a registry, returned by [`attach_okf`].
#[derive(Debug, Clone)]
pub struct OkfHandle {
    id: u64,
    name: String,
    registry: WeakToolRegistry,
}

impl OkfHandle {
    /// The bundle's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Detaches it from the registry it was attached to (see [`detach_okf`]).
    pub fn detach(&self) -> bool {
        self.registry
            .upgrade()
            .is_some_and(|registry| detach_okf(&registry, self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_error_names_the_bundle() {
        let err = OkfError::Index {
            path: PathBuf::from("kb/warehouse"),
            source: rusqlite::Error::InvalidQuery,
        };
        assert_eq!(
            err.to_string(),
            "could not build the search index of the OKF bundle at `kb/warehouse`"
        );
        assert!(std::error::Error::source(&err).is_some());
    }

    #[test]
    fn link_kinds_are_named() {
        assert_eq!(LinkKind::Link.as_str(), "link");
        assert_eq!(LinkKind::Citation.as_str(), "citation");
        assert_eq!(
            serde_json::to_value(LinkKind::Citation).unwrap(),
            "citation"
        );
    }
}
