//! Checking what was parsed and resolving it: attribute values, the tool name, parameter and
//! return types, and the doc comment against the signature. Every problem is reported, each on
//! its own token, worded as the fix.

use proc_macro2::Span;
use syn::ext::IdentExt;
use syn::{Expr, GenericArgument, Ident, Lit, LitStr, Path, PathArguments, Type};

use crate::ast::{ToolFn, last_segment};
use crate::attr::{Raw, RetryArgs, ToolArgs};
use crate::ctxt::Ctxt;
use crate::docs::Docs;

/// A checked `#[tool]`: everything `expand.rs` needs.
pub struct Tool<'a> {
    /// The function.
    pub func: ToolFn<'a>,
    /// The tool name.
    pub name: String,
    /// The tool description.
    pub description: String,
    /// `Allow`, `Ask` or `Deny`, when set.
    pub permission: Option<Ident>,
    /// Whether calls may overlap, when set.
    pub concurrent: Option<bool>,
    /// `Safe`, `Idempotent` or `Manual`, when set.
    pub replay_policy: Option<Ident>,
    /// The tool's own time limit, when set.
    pub timeout_seconds: Option<f64>,
    /// The tool's own retry policy, when set.
    pub retry: Option<Retry>,
    /// The path of the `harnessx` crate.
    pub krate: Path,
    /// Per parameter (same order as `func.params`): its description and default.
    pub params: Vec<ParamInfo>,
}

/// What the docs and `#[arg]` say about one parameter.
#[derive(Default)]
pub struct ParamInfo {
    /// The description shown in the schema.
    pub description: Option<String>,
    /// The default expression.
    pub default: Option<Expr>,
    /// Where its first `#[arg]` option is, when it has any: generated code checks there that
    /// the parameter is one the model sends (its type is not a context type).
    pub arg_span: Option<Span>,
}

/// A resolved `retry` option.
pub struct Retry {
    /// Total attempts including the first.
    pub max_attempts: u32,
    /// Wait before the second attempt, in milliseconds.
    pub initial_backoff_ms: Option<u64>,
    /// Upper bound for one wait, in milliseconds.
    pub max_backoff_ms: Option<u64>,
    /// Backoff factor.
    pub multiplier: Option<f64>,
}

/// Checks everything and resolves the options; problems go to `errors`.
pub fn check<'a>(args: ToolArgs, func: ToolFn<'a>, docs: Docs, errors: &mut Ctxt) -> Tool<'a> {
    check_signature(&func, errors);

    let name = match &args.name {
        Some(raw) => lit_str(raw, "name", errors).and_then(|lit| {
            let name = lit.value();
            check_name(&name, lit.span(), "set `name` to", errors).then_some(name)
        }),
        None => {
            let ident = &func.item.sig.ident;
            let name = ident.unraw().to_string();
            check_name(
                &name,
                ident.span(),
                "rename the function or set `#[tool(name = \"...\")]` to",
                errors,
            )
            .then_some(name)
        }
    }
    .unwrap_or_default();

    let description = match &args.description {
        Some(raw) => lit_str(raw, "description", errors)
            .map(|l| l.value())
            .unwrap_or_default(),
        None => docs.description.clone(),
    };

    let permission = args.permission.as_ref().and_then(|raw| {
        level(
            raw,
            "permission",
            &["allow", "ask", "deny"],
            "\"allow\", \"ask\" or \"deny\"",
            errors,
        )
    });
    let replay_policy = args.replay_policy.as_ref().and_then(|raw| {
        level(
            raw,
            "replay_policy",
            &["safe", "idempotent", "manual"],
            "\"safe\", \"idempotent\" or \"manual\"",
            errors,
        )
    });
    let concurrent = args.concurrent.as_ref().and_then(|raw| match raw {
        Raw::Word(_) => Some(true),
        Raw::Value(Expr::Lit(l)) => match &l.lit {
            Lit::Bool(b) => Some(b.value),
            other => {
                errors.at(other.span(), "`concurrent` takes `true` or `false`");
                None
            }
        },
        other => {
            errors.at(other.span(), "`concurrent` takes `true` or `false`");
            None
        }
    });
    let timeout_seconds = args
        .timeout_seconds
        .as_ref()
        .and_then(|raw| timeout(raw, errors));
    let retry = args.retry.as_ref().and_then(|raw| retry(raw, errors));
    let krate = match &args.krate {
        None => syn::parse_quote!(::harnessx),
        Some(raw) => krate(raw, errors).unwrap_or_else(|| syn::parse_quote!(::harnessx)),
    };

    let params = check_params(&func, &docs, errors);
    Tool {
        func,
        name,
        description,
        permission,
        concurrent,
        replay_policy,
        timeout_seconds,
        retry,
        krate,
        params,
    }
}

fn check_signature(func: &ToolFn<'_>, errors: &mut Ctxt) {
    let sig = &func.item.sig;
    if let Some(param) = sig.generics.params.first() {
        let message = match param {
            syn::GenericParam::Lifetime(_) => {
                "a tool function cannot have lifetime parameters: the model's arguments are \
                 owned values, so take `String`, `Vec<T>`, ... instead of references"
            }
            _ => {
                "a tool function cannot be generic: the schema needs one concrete type per \
                 parameter; replace the type parameter with a concrete type"
            }
        };
        errors.on(param, message);
    } else if let Some(where_clause) = &sig.generics.where_clause {
        errors.on(
            &where_clause,
            "a tool function cannot have a `where` clause: use concrete types",
        );
    }
    if let syn::Safety::Unsafe(unsafety) = &sig.safety {
        errors.on(
            &unsafety,
            "a tool cannot be an `unsafe fn`: the model cannot uphold its safety contract; \
             make the function safe and use `unsafe` blocks inside it",
        );
    }
    if let Some(abi) = &sig.abi {
        errors.on(
            &abi,
            "a tool function cannot declare an ABI: remove the `extern`",
        );
    }
    if let Some(variadic) = &sig.variadic {
        errors.on(&variadic, "a tool function cannot be variadic");
    }
    if let Some(output) = func.output {
        check_return(output, errors);
    }
}

fn check_name(name: &str, span: Span, fix: &str, errors: &mut Ctxt) -> bool {
    let valid = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !valid {
        errors.at(
            span,
            format!(
                "tool name `{name}` is not accepted by model APIs: {fix} 1 to 64 ASCII letters, \
                 digits, `_` or `-`"
            ),
        );
    }
    valid
}

/// The string literal a value is, if it is one.
fn as_lit_str(raw: &Raw) -> Option<&LitStr> {
    match raw {
        Raw::Value(Expr::Lit(l)) => match &l.lit {
            Lit::Str(s) => Some(s),
            _ => None,
        },
        _ => None,
    }
}

fn lit_str(raw: &Raw, key: &str, errors: &mut Ctxt) -> Option<LitStr> {
    let lit = as_lit_str(raw).cloned();
    if lit.is_none() {
        errors.at(
            raw.span(),
            format!("`{key}` takes a string literal: `{key} = \"...\"`"),
        );
    }
    lit
}

/// `"allow"` or `PermissionLevel::Allow` → the variant `Allow`.
fn level(
    raw: &Raw,
    key: &str,
    allowed: &[&str],
    expected: &str,
    errors: &mut Ctxt,
) -> Option<Ident> {
    let named = match raw {
        Raw::Value(Expr::Path(p)) => p
            .path
            .segments
            .last()
            .map(|seg| (seg.ident.to_string(), seg.ident.span())),
        other => as_lit_str(other).map(|s| (s.value(), s.span())),
    };
    let (text, span) = match named {
        Some(named) => named,
        None => {
            errors.at(raw.span(), format!("`{key}` takes one of {expected}"));
            return None;
        }
    };
    let lower = text.to_ascii_lowercase();
    if allowed.contains(&lower.as_str()) {
        let mut variant = lower;
        variant[..1].make_ascii_uppercase();
        Some(Ident::new(&variant, span))
    } else {
        errors.at(span, format!("unknown {key} `{text}`: use {expected}"));
        None
    }
}

fn number(raw: &Raw) -> Option<f64> {
    let Raw::Value(Expr::Lit(l)) = raw else {
        return None;
    };
    match &l.lit {
        Lit::Int(i) => i.base10_parse::<f64>().ok(),
        Lit::Float(f) => f.base10_parse::<f64>().ok(),
        _ => None,
    }
}

fn timeout(raw: &Raw, errors: &mut Ctxt) -> Option<f64> {
    match number(raw) {
        Some(n) if n.is_finite() && n > 0.0 => Some(n),
        _ => {
            errors.at(
                raw.span(),
                "`timeout_seconds` takes a number of seconds greater than 0, such as \
                 `timeout_seconds = 120` or `timeout_seconds = 2.5`",
            );
            None
        }
    }
}

fn integer<T: std::str::FromStr>(raw: &Raw) -> Option<T>
where
    T::Err: std::fmt::Display,
{
    match raw {
        Raw::Value(Expr::Lit(l)) => match &l.lit {
            Lit::Int(i) => i.base10_parse::<T>().ok(),
            _ => None,
        },
        _ => None,
    }
}

fn max_attempts(raw: &Raw, key: &str, errors: &mut Ctxt) -> Option<u32> {
    match integer::<u32>(raw) {
        Some(n) if n >= 1 => Some(n),
        _ => {
            errors.at(
                raw.span(),
                format!(
                    "`{key}` takes the maximum number of attempts, a whole number of at least 1 \
                     (1 means never retry), such as `{key} = 3`"
                ),
            );
            None
        }
    }
}

fn millis(raw: &Raw, key: &str, errors: &mut Ctxt) -> Option<u64> {
    let value = integer::<u64>(raw);
    if value.is_none() {
        errors.at(
            raw.span(),
            format!("`{key}` takes a whole number of milliseconds, such as `{key} = 200`"),
        );
    }
    value
}

fn retry(raw: &Raw, errors: &mut Ctxt) -> Option<Retry> {
    match raw {
        Raw::List(items, _) => {
            let args = RetryArgs::parse(items, errors);
            let max = match &args.max_attempts {
                Some(raw) => max_attempts(raw, "max_attempts", errors),
                None => Some(3),
            };
            let initial = args
                .initial_backoff_ms
                .as_ref()
                .and_then(|r| millis(r, "initial_backoff_ms", errors));
            let max_backoff = args
                .max_backoff_ms
                .as_ref()
                .and_then(|r| millis(r, "max_backoff_ms", errors));
            let multiplier = args.multiplier.as_ref().and_then(|r| match number(r) {
                Some(m) if m.is_finite() && m >= 1.0 => Some(m),
                _ => {
                    errors.at(
                        r.span(),
                        "`multiplier` takes a number of at least 1.0, such as `multiplier = 2.0`",
                    );
                    None
                }
            });
            Some(Retry {
                max_attempts: max?,
                initial_backoff_ms: initial,
                max_backoff_ms: max_backoff,
                multiplier,
            })
        }
        Raw::Value(_) => Some(Retry {
            max_attempts: max_attempts(raw, "retry", errors)?,
            initial_backoff_ms: None,
            max_backoff_ms: None,
            multiplier: None,
        }),
        Raw::Word(span) => {
            errors.at(
                *span,
                "`retry` needs a value: `retry = 3` (maximum attempts) or \
                 `retry(max_attempts = 3, initial_backoff_ms = 200)`",
            );
            None
        }
    }
}

fn krate(raw: &Raw, errors: &mut Ctxt) -> Option<Path> {
    let path = match raw {
        Raw::Value(Expr::Path(p)) => Some(p.path.clone()),
        other => as_lit_str(other).and_then(|s| s.parse::<Path>().ok()),
    };
    if path.is_none() {
        errors.at(
            raw.span(),
            "`crate` takes a path, such as `crate = ::harnessx`",
        );
    }
    path
}

fn check_params(func: &ToolFn<'_>, docs: &Docs, errors: &mut Ctxt) -> Vec<ParamInfo> {
    let mut infos: Vec<ParamInfo> = Vec::with_capacity(func.params.len());
    for param in &func.params {
        let mut info = ParamInfo::default();
        // Whether the runtime or the model supplies a parameter is decided by its type's traits
        // in the generated code; here only the shape of the type is checked.
        if is_state_path(param.ty) {
            check_context_type(param.ty, errors);
        } else {
            check_param_type(param.ty, errors);
        }
        info.arg_span = [&param.arg.default, &param.arg.description]
            .into_iter()
            .flatten()
            .map(Raw::span)
            .next();
        info.default = match &param.arg.default {
            None => None,
            Some(Raw::Value(expr)) => Some(expr.clone()),
            Some(other) => {
                errors.at(
                    other.span(),
                    "`default` takes a value: `#[arg(default = 20)]`",
                );
                None
            }
        };
        info.description = param
            .arg
            .description
            .as_ref()
            .and_then(|raw| lit_str(raw, "description", errors))
            .map(|l| l.value());
        infos.push(info);
    }

    let names: Vec<String> = func
        .params
        .iter()
        .map(|p| p.ident.unraw().to_string())
        .collect();
    let mut seen: Vec<&str> = Vec::new();
    for doc in &docs.args {
        let Some(index) = names.iter().position(|n| *n == doc.name) else {
            let listed = if names.is_empty() {
                "it has no parameters".to_owned()
            } else {
                format!(
                    "its parameters are {}",
                    names
                        .iter()
                        .map(|n| format!("`{n}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            errors.at(
                doc.span,
                format!(
                    "the doc comment documents `{}`, but the function has no parameter named \
                     `{}` ({listed}); fix the name or remove the entry",
                    doc.name, doc.name
                ),
            );
            continue;
        };
        if seen.contains(&doc.name.as_str()) {
            errors.at(
                doc.span,
                format!("`{}` is documented twice; keep one entry", doc.name),
            );
            continue;
        }
        seen.push(&doc.name);
        let info = &mut infos[index];
        if info.description.is_none() && !doc.text.is_empty() {
            info.description = Some(doc.text.clone());
        }
    }
    infos
}

/// A type spelled `State<..>`: a reference inside it gets the shared-state wording.
fn is_state_path(ty: &Type) -> bool {
    last_segment(ty).is_some_and(|s| s.ident == "State")
}

fn check_context_type(ty: &Type, errors: &mut Ctxt) {
    if let Some(seg) = last_segment(ty)
        && seg.ident == "State"
        && let PathArguments::AngleBracketed(args) = &seg.arguments
    {
        for arg in &args.args {
            if let GenericArgument::Type(inner) = arg
                && contains_reference(inner)
            {
                errors.on(
                    &inner,
                    "shared state must be `'static`: use an owned type (wrap it in `Arc` if \
                     needed) instead of a reference",
                );
            }
        }
    }
}

fn contains_reference(ty: &Type) -> bool {
    match ty {
        Type::Reference(_) => true,
        Type::Paren(p) => contains_reference(&p.elem),
        Type::Group(g) => contains_reference(&g.elem),
        Type::Path(p) => p.path.segments.iter().any(|s| match &s.arguments {
            PathArguments::AngleBracketed(a) => a.args.iter().any(|g| match g {
                GenericArgument::Type(t) => contains_reference(t),
                _ => false,
            }),
            _ => false,
        }),
        _ => false,
    }
}

const MAPS: &[&str] = &["HashMap", "BTreeMap", "IndexMap"];

/// Rejects parameter types no JSON value can become, spanned on the type.
fn check_param_type(ty: &Type, errors: &mut Ctxt) {
    match ty {
        Type::Reference(r) => {
            let fix = match &*r.elem {
                Type::Path(p) if p.path.is_ident("str") => "use `String` instead of `&str`".into(),
                Type::Slice(s) => format!(
                    "use `Vec<{}>` instead of a slice reference",
                    quote::ToTokens::to_token_stream(&s.elem)
                ),
                Type::Path(p)
                    if p.path
                        .segments
                        .last()
                        .is_some_and(|s| s.ident == "ToolContext" || s.ident == "State") =>
                {
                    "take it by value: context parameters are cheap to clone".into()
                }
                other => format!(
                    "take `{}` by value",
                    quote::ToTokens::to_token_stream(other)
                ),
            };
            errors.on(
                &r,
                format!("tool parameters must be owned values built from the model's JSON: {fix}"),
            );
        }
        Type::Ptr(p) => errors.on(
            &p,
            "a raw pointer cannot be built from the model's JSON: use an owned type",
        ),
        Type::Tuple(t) => errors.on(
            &t,
            "tuples have no field names the model could use: split them into separate \
             parameters, or use a struct deriving `Deserialize` and `JsonSchema`",
        ),
        Type::ImplTrait(t) => errors.on(
            &t,
            "`impl Trait` cannot be a tool parameter: the schema needs a concrete type",
        ),
        Type::TraitObject(t) => errors.on(
            &t,
            "a trait object cannot be a tool parameter: the schema needs a concrete type",
        ),
        Type::FnPtr(t) => errors.on(
            &t,
            "a function pointer cannot be built from the model's JSON: use a data type",
        ),
        Type::Slice(t) => errors.on(&t, "a slice cannot be a tool parameter: use `Vec<T>`"),
        Type::Never(t) => errors.on(&t, "`!` cannot be a tool parameter"),
        Type::Infer(t) => errors.on(
            &t,
            "name the parameter's type: the schema is inferred from it",
        ),
        Type::Array(a) => check_param_type(&a.elem, errors),
        Type::Paren(p) => check_param_type(&p.elem, errors),
        Type::Group(g) => check_param_type(&g.elem, errors),
        Type::Path(p) => {
            if let Some(q) = &p.qself {
                check_param_type(&q.ty, errors);
            }
            for seg in &p.path.segments {
                let PathArguments::AngleBracketed(args) = &seg.arguments else {
                    continue;
                };
                let types: Vec<&Type> = args
                    .args
                    .iter()
                    .filter_map(|a| match a {
                        GenericArgument::Type(t) => Some(t),
                        _ => None,
                    })
                    .collect();
                if MAPS.iter().any(|m| seg.ident == m)
                    && let Some(key) = types.first()
                    && last_segment(key).is_none_or(|s| s.ident != "String")
                {
                    errors.on(
                        &key,
                        format!(
                            "JSON object keys are strings: use `{}<String, _>` and parse the \
                             keys inside the tool",
                            seg.ident
                        ),
                    );
                    continue;
                }
                for t in types {
                    check_param_type(t, errors);
                }
            }
        }
        _ => {}
    }
}

/// Rejects return types that cannot be named or outlive the call, spanned on the type.
fn check_return(ty: &Type, errors: &mut Ctxt) {
    match ty {
        Type::ImplTrait(t) => errors.on(
            &t,
            "a tool cannot return `impl Trait`: name a concrete type that implements `Serialize`",
        ),
        Type::Ptr(p) => errors.on(
            &p,
            "a tool cannot return a raw pointer: return a value that implements `Serialize`",
        ),
        Type::Paren(p) => check_return(&p.elem, errors),
        Type::Group(g) => check_return(&g.elem, errors),
        Type::Path(p) => {
            for seg in &p.path.segments {
                if let PathArguments::AngleBracketed(args) = &seg.arguments {
                    for arg in &args.args {
                        if let GenericArgument::Type(t) = arg {
                            check_return(t, errors);
                        }
                    }
                }
            }
        }
        _ => {}
    }
}
