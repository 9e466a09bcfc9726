//! Knowledge bases (placeholder while building).
