//! Generating the tool: the phases joined in order (`try_expand`), the code emitted on success,
//! and the fallback emitted on failure (the user's function unchanged plus the errors).

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{Expr, ItemFn, Lit, Type};

use crate::ast::{ToolFn, last_segment};
use crate::attr::{ToolArgs, is_arg_attr};
use crate::ctxt::Ctxt;
use crate::docs;
use crate::valid::{self, Tool};

/// Expands `#[tool(attr)] item`.
pub fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    let func: ItemFn = match syn::parse2(item.clone()) {
        Ok(func) => func,
        Err(_) => {
            let error = syn::Error::new(
                Span::call_site(),
                "`#[tool]` goes on a free function (`fn` or `async fn`)",
            )
            .into_compile_error();
            return quote!(#item #error);
        }
    };
    match try_expand(attr, &func) {
        Ok(tokens) => tokens,
        Err(errors) => fallback(&func, errors),
    }
}

/// Parse → read the docs → validate → generate. Every phase runs even after an error, so all
/// mistakes are reported at once.
fn try_expand(attr: TokenStream, func: &ItemFn) -> syn::Result<TokenStream> {
    let mut errors = Ctxt::new();
    let args = ToolArgs::parse(attr, &mut errors);
    let parsed = ToolFn::from_syn(func, &mut errors);
    let docs = docs::parse(&func.attrs, &mut errors);
    let tool = valid::check(args, parsed, docs, &mut errors);
    errors.finish()?;
    Ok(generate(&tool))
}

/// The user's function unchanged (minus the `#[arg]` attributes the macro consumes) and the
/// errors: one mistake gives one error, and completion keeps working.
fn fallback(func: &ItemFn, errors: syn::Error) -> TokenStream {
    let func = strip_arg_attrs(func.clone());
    let errors = errors.into_compile_error();
    quote!(#func #errors)
}

fn strip_arg_attrs(mut func: ItemFn) -> ItemFn {
    for input in &mut func.sig.inputs {
        if let syn::FnArg::Typed(typed) = input {
            typed.attrs.retain(|a| !is_arg_attr(a));
        }
    }
    func
}

fn generate(tool: &Tool<'_>) -> TokenStream {
    let krate = &tool.krate;
    let p = quote!(#krate::__private);
    let item = tool.func.item;
    let vis = &item.vis;
    let ident = &item.sig.ident;
    let is_async = item.sig.asyncness.is_some();

    let struct_attrs: Vec<_> = item.attrs.iter().filter(|a| on_struct(a)).collect();
    let cfg_attrs: Vec<_> = item
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("cfg"))
        .collect();

    let inner_ident = hidden("__harnessx_tool_fn");
    let mut inner = strip_arg_attrs(item.clone());
    inner.sig.ident = inner_ident.clone();
    inner.vis = syn::Visibility::Inherited;
    inner.attrs.retain(|a| !on_struct(a));

    let tys: Vec<&Type> = tool.func.params.iter().map(|p| p.ty).collect();
    let ret = match tool.func.output {
        Some(ty) => quote!(#ty),
        None => quote!(()),
    };
    let vars: Vec<_> = (0..tys.len())
        .map(|i| format_ident!("__harnessx_p{i}"))
        .collect();

    // The function pointer the struct derefs to, so the tool is still callable; for an async
    // function also its future as one that is `Send`, which the pointer's box and the handler's
    // both hold.
    let future_ident = hidden("__harnessx_tool_future");
    let (fn_ty, pointer, call_wrapper) = if is_async {
        let call_ident = hidden("__harnessx_tool_call");
        let fn_ty = quote!(fn(#(#tys),*) -> #p::BoxFuture<'static, #ret>);
        // The one place the future must be `Send`: an error here points at the function's name.
        let future_ty = quote_spanned!(ident.span()=>
            impl ::core::future::Future<Output = #ret> + ::core::marker::Send + 'static);
        let wrapper = quote! {
            fn #future_ident(#(#vars: #tys),*) -> #future_ty {
                #inner_ident(#(#vars),*)
            }
            fn #call_ident(#(#vars: #tys),*) -> #p::BoxFuture<'static, #ret> {
                ::std::boxed::Box::pin(#future_ident(#(#vars),*))
            }
        };
        (fn_ty, call_ident, wrapper)
    } else {
        (quote!(fn(#(#tys),*) -> #ret), inner_ident.clone(), quote!())
    };

    // Where each parameter comes from is chosen by its type's traits (`FromToolContext`: the
    // runtime supplies it; otherwise the model sends it), never by its name. Each type is
    // checked in exactly one place (`.ops()`, `output::<R>()`), spanned on the type, so an
    // unsupported type gives exactly one error.
    let mut checks = Vec::new();
    let mut specs = Vec::new();
    let mut extract = Vec::new();
    let mut names = Vec::new();
    let mut slots = Vec::new();
    for (i, ((param, info), var)) in tool
        .func
        .params
        .iter()
        .zip(&tool.params)
        .zip(&vars)
        .enumerate()
    {
        let ty = param.ty;
        let span = ty.span();
        let ops = format_ident!("__harnessx_param{i}");
        checks.push(quote_spanned! {span=>
            let #ops = (&&#p::Probe::<#ty>::new()).__harnessx_source().ops();
        });
        if let Some(arg_span) = info.arg_span {
            checks.push(quote_spanned!(arg_span=> let #ops = #p::model_argument(#ops);));
        }
        let name = param.ident.unraw().to_string();
        let slot = format_ident!("__harnessx_slot{i}");
        names.push(name.clone());
        slots.push(slot.clone());
        let description = match &info.description {
            Some(d) => quote!(::core::option::Option::Some(#d)),
            None => quote!(::core::option::Option::None),
        };
        match &info.default {
            Some(expr) => {
                let value = default_expr(ty, expr);
                extract.push(quote! {
                    let #var = match (#ops.take_opt)(#slot, #name)? {
                        ::core::option::Option::Some(value) => value,
                        ::core::option::Option::None => #value,
                    };
                });
                specs.push(quote! {
                    #p::spec_with_default(&#ops, &mut __harnessx_generator, #name, #description, #value)
                });
            }
            None => {
                extract.push(quote! {
                    let #var = #p::ParamSource::take(&#ops, #slot, &__harnessx_ctx, #name)?;
                });
                specs.push(quote! {
                    #p::ParamSource::spec(&#ops, &mut __harnessx_generator, #name, #description)
                });
            }
        }
    }

    let returns_result = tool
        .func
        .output
        .and_then(last_segment)
        .is_some_and(|s| s.ident == "Result");
    let ret_span = tool.func.output.map_or_else(Span::call_site, |t| t.span());
    let output_ops = if returns_result {
        quote_spanned!(ret_span=> let __harnessx_output = #p::result_output::<#ret>();)
    } else {
        quote_spanned!(ret_span=> let __harnessx_output = #p::output::<#ret>();)
    };
    // The handler reads the arguments when it is called and returns one box: the function's
    // future with the conversion of its value, or for a synchronous body, which runs on the
    // blocking pool, the wait for it there.
    let call = if is_async {
        quote!(async move { __harnessx_convert(#future_ident(#(#vars),*).await) })
    } else {
        quote!(#p::run_blocking(move || __harnessx_convert(#inner_ident(#(#vars),*))))
    };

    let count = specs.len();
    let name = &tool.name;
    let description = &tool.description;
    let builders = options(tool, &p);

    quote! {
        #(#struct_attrs)*
        #[allow(non_camel_case_types)]
        #[derive(Clone, Copy, Debug)]
        #vis struct #ident;

        #(#cfg_attrs)*
        const _: () = {
            #inner
            #call_wrapper

            impl ::core::ops::Deref for #ident {
                type Target = #fn_ty;
                fn deref(&self) -> &Self::Target {
                    const POINTER: #fn_ty = #pointer;
                    &POINTER
                }
            }

            impl #p::IntoTool for #ident {
                fn into_tool(self) -> #p::ToolDefinition {
                    #[allow(unused_imports)]
                    use #p::{ViaArguments as _, ViaContext as _};
                    #(#checks)*
                    #output_ops
                    let mut __harnessx_generator = #p::schema_generator();
                    let mut __harnessx_specs: [::core::option::Option<#p::ParamSpec>; #count] =
                        [#(#specs),*];
                    let __harnessx_schema =
                        #p::build_input_schema(&mut __harnessx_specs, __harnessx_generator);
                    let __harnessx_handler = #p::tool_handler(
                        move |__harnessx_args: #p::serde_json::Value, __harnessx_ctx: #p::ToolContext| {
                            let [#(#slots),*] = #p::slots(__harnessx_args, [#(#names),*]);
                            #(#extract)*
                            let __harnessx_convert = __harnessx_output.convert;
                            ::core::result::Result::Ok(::std::boxed::Box::pin(#call))
                        },
                    );
                    #p::ToolDefinition::new(#name, #description, __harnessx_schema, __harnessx_handler)
                        #(#builders)*
                }
            }
        };
    }
}

/// Attributes that describe the item (docs, `cfg`, `deprecated`) go on the struct; the others
/// stay on the function.
fn on_struct(attr: &syn::Attribute) -> bool {
    ["doc", "cfg", "deprecated"]
        .iter()
        .any(|name| attr.path().is_ident(name))
}

/// The `ToolDefinition` builder calls for the options that were set.
fn options(tool: &Tool<'_>, p: &TokenStream) -> Vec<TokenStream> {
    let some = |value: Option<TokenStream>| match value {
        Some(v) => quote!(::core::option::Option::Some(#v)),
        None => quote!(::core::option::Option::None),
    };
    let mut builders = Vec::new();
    if let Some(level) = &tool.permission {
        builders.push(quote!(.with_permission(#p::PermissionLevel::#level)));
    }
    if let Some(concurrent) = tool.concurrent {
        builders.push(quote!(.with_concurrent(#concurrent)));
    }
    if let Some(policy) = &tool.replay_policy {
        builders.push(quote!(.with_replay_policy(#p::ReplayPolicy::#policy)));
    }
    if let Some(seconds) = tool.timeout_seconds {
        let seconds = proc_macro2::Literal::f64_suffixed(seconds);
        builders.push(quote!(.with_timeout_seconds(#seconds)));
    }
    if let Some(retry) = &tool.retry {
        let max = retry.max_attempts;
        let initial = some(retry.initial_backoff_ms.map(|v| quote!(#v)));
        let max_backoff = some(retry.max_backoff_ms.map(|v| quote!(#v)));
        let multiplier = some(retry.multiplier.map(|m| {
            let m = proc_macro2::Literal::f64_suffixed(m);
            quote!(#m)
        }));
        builders.push(quote!(.with_retry(#p::retry(#max, #initial, #max_backoff, #multiplier))));
    }
    builders
}

/// The default as a value of the parameter's type; for a `String` parameter a string literal
/// is converted, so `#[arg(default = "auto")]` works.
fn default_expr(ty: &Type, expr: &Expr) -> TokenStream {
    let span = expr.span();
    let is_string = last_segment(ty).is_some_and(|s| s.ident == "String");
    match expr {
        Expr::Lit(l) if is_string && matches!(l.lit, Lit::Str(_)) => quote_spanned! {span=>
            ::std::string::String::from(#expr)
        },
        _ => quote_spanned! {span=>
            {
                let __harnessx_default: #ty = #expr;
                __harnessx_default
            }
        },
    }
}

/// An identifier the user's code cannot see or clash with.
fn hidden(name: &str) -> syn::Ident {
    syn::Ident::new(name, Span::mixed_site())
}
