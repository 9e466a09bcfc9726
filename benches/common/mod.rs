//! What the benches share: reading their numeric knobs from the environment.

/// A number from the environment variable `name`, if it is set to one.
pub fn env_number<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}
