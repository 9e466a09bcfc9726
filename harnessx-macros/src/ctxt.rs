//! The error collector shared by every phase: all problems are reported in one pass, each
//! spanned on the tokens it concerns.

use std::fmt::Display;

use proc_macro2::Span;
use quote::ToTokens;

/// Collects errors; [`Ctxt::finish`] turns them into one `syn::Error` (several `compile_error!`s).
#[derive(Default)]
pub struct Ctxt {
    errors: Option<syn::Error>,
}

impl Ctxt {
    /// An empty collector.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records an error (a `syn::Error`, or a `darling::Error` with all the errors it holds).
    pub fn push(&mut self, error: impl Into<syn::Error>) {
        let error = error.into();
        match &mut self.errors {
            Some(all) => all.combine(error),
            None => self.errors = Some(error),
        }
    }

    /// Records an error at one span (a doc line, a single token).
    pub fn at(&mut self, span: Span, message: impl Display) {
        self.push(syn::Error::new(span, message));
    }

    /// Records an error covering all of `tokens` (a whole type or pattern, even on stable Rust).
    pub fn on(&mut self, tokens: &dyn ToTokens, message: impl Display) {
        self.push(syn::Error::new_spanned(tokens, message));
    }

    /// Keeps the value of a darling result, recording its errors.
    pub fn handle<T>(&mut self, result: darling::Result<T>) -> Option<T> {
        match result {
            Ok(value) => Some(value),
            Err(e) => {
                self.push(e);
                None
            }
        }
    }

    /// `Ok` when nothing went wrong, else every error recorded.
    pub fn finish(self) -> syn::Result<()> {
        match self.errors {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// The messages recorded so far, in order.
    #[cfg(test)]
    pub fn messages(self) -> Vec<String> {
        self.errors
            .into_iter()
            .flat_map(|e| e.into_iter().map(|e| e.to_string()).collect::<Vec<_>>())
            .collect()
    }
}
