//! The raw attribute options: `#[tool(...)]` on the function and `#[arg(...)]` on a parameter,
//! as written, before any value is checked (see `valid.rs` for the resolved forms).

use darling::ast::NestedMeta;
use darling::{FromAttributes, FromMeta};
use proc_macro2::{Span, TokenStream};
use syn::spanned::Spanned;
use syn::{Expr, Meta};

/// The options of `#[tool(...)]`, each kept as written so `valid.rs` can word its own errors.
#[derive(Debug, Default, FromMeta)]
pub struct ToolArgs {
    /// `name = "..."`: the name the model calls (default: the function's name).
    pub name: Option<Raw>,
    /// `description = "..."`: replaces the description taken from the doc comment.
    pub description: Option<Raw>,
    /// `permission = "allow" | "ask" | "deny"` (or `PermissionLevel::Allow`, ...).
    pub permission: Option<Raw>,
    /// `concurrent = true | false`: whether calls may overlap (default `true`).
    pub concurrent: Option<Raw>,
    /// `replay_policy = "safe" | "idempotent" | "manual"` (or `ReplayPolicy::Safe`, ...).
    pub replay_policy: Option<Raw>,
    /// `timeout_seconds = 120` or `= 2.5`: the tool's own time limit.
    pub timeout_seconds: Option<Raw>,
    /// `retry = 3` (maximum attempts) or
    /// `retry(max_attempts = 3, initial_backoff_ms = 200, max_backoff_ms = 5000, multiplier = 2.0)`.
    pub retry: Option<Raw>,
    /// `crate = path`: where the `harnessx` crate is (default `::harnessx`).
    #[darling(rename = "crate")]
    pub krate: Option<Raw>,
}

impl ToolArgs {
    /// Parses the attribute's arguments; unknown and duplicate keys are errors on their token.
    ///
    /// When some keys are wrong, the errors come back together with the options that could be
    /// read, so their values are still checked in the same pass.
    pub fn parse(tokens: TokenStream) -> (Self, Option<darling::Error>) {
        let items = match NestedMeta::parse_meta_list(tokens) {
            Ok(items) => items,
            Err(e) => return (Self::default(), Some(e.into())),
        };
        match Self::from_list(&items) {
            Ok(args) => (args, None),
            Err(errors) => (
                Self::from_list(&known_once(&items)).unwrap_or_default(),
                Some(errors),
            ),
        }
    }
}

/// The items whose key `ToolArgs` knows, each key kept once (its first occurrence).
fn known_once(items: &[NestedMeta]) -> Vec<NestedMeta> {
    const KEYS: &[&str] = &[
        "name",
        "description",
        "permission",
        "concurrent",
        "replay_policy",
        "timeout_seconds",
        "retry",
        "crate",
    ];
    let mut seen: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for item in items {
        let NestedMeta::Meta(meta) = item else {
            continue;
        };
        let Some(key) = meta.path().get_ident().map(ToString::to_string) else {
            continue;
        };
        if KEYS.contains(&key.as_str()) && !seen.contains(&key) {
            seen.push(key);
            out.push(item.clone());
        }
    }
    out
}

/// The options of `#[arg(...)]` on one parameter (several `#[arg]` attributes merge).
#[derive(Debug, Default, FromAttributes)]
#[darling(attributes(arg))]
pub struct ArgAttrs {
    /// `default = expr`: the value used when the model leaves the argument out; it makes the
    /// parameter optional and is shown as `"default"` in the schema.
    pub default: Option<Raw>,
    /// `description = "..."`: documents the parameter (instead of an `Args:` entry).
    pub description: Option<Raw>,
}

/// One option value as written: a bare word, `key = expr`, or `key(...)`.
#[derive(Debug, Clone)]
pub enum Raw {
    /// `key` alone.
    Word(Span),
    /// `key = expr`; string literals stay literals.
    Value(Expr),
    /// `key(...)` with its parsed items and the span of the whole list.
    List(Vec<NestedMeta>, Span),
}

impl Raw {
    /// The span of the value (or of the key, for a bare word).
    pub fn span(&self) -> Span {
        match self {
            Self::Word(span) | Self::List(_, span) => *span,
            Self::Value(expr) => expr.span(),
        }
    }
}

impl FromMeta for Raw {
    fn from_meta(meta: &Meta) -> darling::Result<Self> {
        Ok(match meta {
            Meta::Path(path) => Self::Word(path.span()),
            Meta::NameValue(nv) => Self::Value(ungroup(&nv.value).clone()),
            Meta::List(list) => Self::List(
                NestedMeta::parse_meta_list(list.tokens.clone())?,
                list.span(),
            ),
        })
    }
}

/// Looks through the invisible groups that `macro_rules!` expansion wraps around expressions.
fn ungroup(expr: &Expr) -> &Expr {
    match expr {
        Expr::Group(g) => ungroup(&g.expr),
        other => other,
    }
}

/// The options of the list form `retry(...)`.
#[derive(Debug, Default, FromMeta)]
pub struct RetryArgs {
    /// Total attempts including the first (at least 1).
    pub max_attempts: Option<Raw>,
    /// Wait before the second attempt, in milliseconds.
    pub initial_backoff_ms: Option<Raw>,
    /// Upper bound for one wait, in milliseconds.
    pub max_backoff_ms: Option<Raw>,
    /// Factor applied to the wait after each attempt (at least 1.0).
    pub multiplier: Option<Raw>,
}
