//! The `#[tool]` attribute macro for [harnessx](https://docs.rs/harnessx).
//!
//! Use it through the re-export `harnessx::tool`; the documentation, with examples, lives there.

mod ast;
mod attr;
mod ctxt;
mod docs;
mod expand;
mod valid;

#[cfg(test)]
mod tests;

use proc_macro::TokenStream;

/// Turns a function into a harnessx tool that is still an ordinary function.
///
/// See `harnessx::tool` for the rules and examples.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::expand(attr.into(), item.into()).into()
}
