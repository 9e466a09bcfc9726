//! The `#[tool]` attribute macro for harnessx (work in progress: currently passes the item through).
use proc_macro::TokenStream;

/// Turns a function into a harnessx tool.
#[proc_macro_attribute]
pub fn tool(_attr: TokenStream, item: TokenStream) -> TokenStream {
    item
}
