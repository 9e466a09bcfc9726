//! The raw attribute options: `#[tool(...)]` on the function, `#[arg(...)]` on a parameter and
//! the list form `retry(...)`, as written, before any value is checked (see `valid.rs` for the
//! resolved forms). Unknown and repeated keys are reported here, each on its key.

use darling::FromMeta;
use darling::ast::NestedMeta;
use proc_macro2::{Span, TokenStream};
use syn::spanned::Spanned;
use syn::{Attribute, Expr, Meta};

use crate::ctxt::Ctxt;

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

const TOOL_KEYS: &[&str] = &[
    "name",
    "description",
    "permission",
    "concurrent",
    "replay_policy",
    "timeout_seconds",
    "retry",
    "crate",
];

impl ToolArgs {
    /// Parses the attribute's arguments. Problems are recorded and the options that could be
    /// read are still returned, so their values are checked in the same pass.
    pub fn parse(tokens: TokenStream, errors: &mut Ctxt) -> Self {
        let items = match NestedMeta::parse_meta_list(tokens) {
            Ok(items) => items,
            Err(e) => {
                errors.push(e);
                return Self::default();
            }
        };
        let items = known_items(&items, TOOL_KEYS, "#[tool]", errors);
        errors.handle(Self::from_list(&items)).unwrap_or_default()
    }
}

/// The options of `#[arg(...)]` on one parameter (several `#[arg]` attributes merge).
#[derive(Debug, Default, FromMeta)]
pub struct ArgAttrs {
    /// `default = expr`: the value used when the model leaves the argument out; it makes the
    /// parameter optional and is shown as `"default"` in the schema.
    pub default: Option<Raw>,
    /// `description = "..."`: documents the parameter (instead of an `Args:` entry).
    pub description: Option<Raw>,
}

const ARG_KEYS: &[&str] = &["default", "description"];

impl ArgAttrs {
    /// Reads every `#[arg(...)]` among a parameter's attributes.
    pub fn parse(attrs: &[Attribute], errors: &mut Ctxt) -> Self {
        let mut items = Vec::new();
        for attr in attrs.iter().filter(|a| is_arg_attr(a)) {
            let parsed = attr
                .meta
                .require_list()
                .and_then(|list| NestedMeta::parse_meta_list(list.tokens.clone()));
            match parsed {
                Ok(list) => items.extend(list),
                Err(_) => errors.on(
                    attr,
                    "write the parameter's options as `#[arg(default = ..., description = \"...\")]`",
                ),
            }
        }
        let items = known_items(&items, ARG_KEYS, "#[arg]", errors);
        errors.handle(Self::from_list(&items)).unwrap_or_default()
    }
}

/// Whether an attribute is `#[arg(...)]`, which the macro consumes.
pub fn is_arg_attr(attr: &Attribute) -> bool {
    attr.path().is_ident("arg")
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

const RETRY_KEYS: &[&str] = &[
    "max_attempts",
    "initial_backoff_ms",
    "max_backoff_ms",
    "multiplier",
];

impl RetryArgs {
    /// Reads the items of `retry(...)`.
    pub fn parse(items: &[NestedMeta], errors: &mut Ctxt) -> Self {
        let items = known_items(items, RETRY_KEYS, "retry(...)", errors);
        errors.handle(Self::from_list(&items)).unwrap_or_default()
    }
}

/// The items whose key is one of `keys`, each key kept once; an unknown key, a repeated key or
/// a bare literal is an error on its token.
fn known_items(
    items: &[NestedMeta],
    keys: &[&str],
    what: &str,
    errors: &mut Ctxt,
) -> Vec<NestedMeta> {
    let mut seen: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for item in items {
        let path = match item {
            NestedMeta::Meta(meta) => meta.path(),
            NestedMeta::NameValueInvalidExpr(invalid) => {
                errors.on(
                    &invalid.value,
                    "this value is not a Rust expression; write a literal or a path",
                );
                continue;
            }
            NestedMeta::Lit(lit) => {
                errors.on(
                    lit,
                    format!(
                        "`{what}` takes `key = value` options, such as `{} = ...`",
                        keys[0]
                    ),
                );
                continue;
            }
        };
        let key = path
            .get_ident()
            .map(ToString::to_string)
            .unwrap_or_else(|| {
                path.segments
                    .iter()
                    .map(|s| s.ident.to_string())
                    .collect::<Vec<_>>()
                    .join("::")
            });
        if !keys.contains(&key.as_str()) {
            let hint = closest(&key, keys)
                .map(|k| format!("did you mean `{k}`? "))
                .unwrap_or_default();
            let list = keys
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ");
            errors.on(
                path,
                format!("`{what}` has no option `{key}`; {hint}the options are {list}"),
            );
        } else if seen.contains(&key) {
            errors.on(path, format!("`{key}` is given twice; keep one"));
        } else {
            seen.push(key);
            out.push(item.clone());
        }
    }
    out
}

/// The known key closest to a misspelt one, if it is close enough to be what was meant.
fn closest<'a>(key: &str, keys: &[&'a str]) -> Option<&'a str> {
    keys.iter()
        .map(|k| (edit_distance(key, k), *k))
        .filter(|(d, k)| *d <= 2.max(k.len() / 3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// Levenshtein distance over characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = if ca == *cb {
                diagonal
            } else {
                1 + diagonal.min(above).min(row[j])
            };
            diagonal = above;
        }
    }
    row[b.len()]
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_only_for_near_misses() {
        assert_eq!(edit_distance("nmae", "name"), 2);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(closest("nmae", TOOL_KEYS), Some("name"));
        assert_eq!(closest("timeout", TOOL_KEYS), None);
        assert_eq!(closest("retyr", TOOL_KEYS), Some("retry"));
        assert_eq!(closest("timeout_secs", TOOL_KEYS), Some("timeout_seconds"));
        assert_eq!(closest("defualt", ARG_KEYS), Some("default"));
        assert_eq!(closest("colour", ARG_KEYS), None);
    }

    #[test]
    fn unknown_repeated_and_literal_items_are_reported() {
        let mut errors = Ctxt::new();
        let items = NestedMeta::parse_meta_list(quote::quote!(
            name = "a",
            nmae = "b",
            name = "c",
            "lit",
            a::b = 1
        ))
        .unwrap();
        let kept = known_items(&items, TOOL_KEYS, "#[tool]", &mut errors);
        assert_eq!(kept.len(), 1);
        assert_eq!(
            errors.messages(),
            [
                "`#[tool]` has no option `nmae`; did you mean `name`? the options are `name`, \
                 `description`, `permission`, `concurrent`, `replay_policy`, `timeout_seconds`, \
                 `retry`, `crate`",
                "`name` is given twice; keep one",
                "`#[tool]` takes `key = value` options, such as `name = ...`",
                "`#[tool]` has no option `a::b`; the options are `name`, `description`, \
                 `permission`, `concurrent`, `replay_policy`, `timeout_seconds`, `retry`, `crate`",
            ]
        );
    }
}
