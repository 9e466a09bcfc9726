//! The by-name catalog: loading built-in tools and bundles by name with JSON options.

pub(crate) mod select;
