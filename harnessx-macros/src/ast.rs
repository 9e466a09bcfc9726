//! The function a `#[tool]` attribute sits on, taken apart into the pieces the later phases need.

use syn::{FnArg, Ident, ItemFn, Pat, ReturnType, Type};

use crate::attr::ArgAttrs;
use crate::ctxt::Ctxt;

/// The annotated function.
pub struct ToolFn<'a> {
    /// The function as the user wrote it.
    pub item: &'a ItemFn,
    /// Its parameters in order (receivers and unnamed patterns are reported and left out).
    pub params: Vec<Param<'a>>,
    /// The declared return type; `None` for `()`.
    pub output: Option<&'a Type>,
}

/// One named parameter.
pub struct Param<'a> {
    /// The binding name.
    pub ident: &'a Ident,
    /// The declared type.
    pub ty: &'a Type,
    /// Its `#[arg(...)]` options.
    pub arg: ArgAttrs,
}

impl<'a> ToolFn<'a> {
    /// Takes the function apart, reporting parameters the macro cannot name.
    pub fn from_syn(item: &'a ItemFn, errors: &mut Ctxt) -> Self {
        let mut params = Vec::new();
        for input in &item.sig.inputs {
            let typed = match input {
                FnArg::Typed(typed) => typed,
                FnArg::Receiver(receiver) => {
                    errors.push(syn::Error::new_spanned(
                        receiver,
                        "`#[tool]` goes on free functions: the model cannot send a `self`; \
                             move the body into a free function and pass what it needs as \
                             parameters or `State<T>`",
                    ));
                    continue;
                }
            };
            let arg = ArgAttrs::parse(&typed.attrs, errors);
            let ident = match &*typed.pat {
                Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => &p.ident,
                other => {
                    errors.push(syn::Error::new_spanned(
                        other,
                        "give this parameter a plain name (`name: Type`): the model sends \
                             arguments by name, so patterns cannot be tool parameters",
                    ));
                    continue;
                }
            };
            params.push(Param {
                ident,
                ty: &typed.ty,
                arg,
            });
        }
        let output = match &item.sig.output {
            ReturnType::Default => None,
            ReturnType::Type(_, ty) => Some(&**ty),
        };
        Self {
            item,
            params,
            output,
        }
    }
}

/// The last segment of a path type, looking through parentheses and invisible groups.
pub fn last_segment(ty: &Type) -> Option<&syn::PathSegment> {
    match ty {
        Type::Path(p) => p.path.segments.last(),
        Type::Paren(p) => last_segment(&p.elem),
        Type::Group(g) => last_segment(&g.elem),
        _ => None,
    }
}
