//! Knowledge tests (placeholder).
