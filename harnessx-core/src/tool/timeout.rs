//! Time limits as callers write them: whole seconds, fractional seconds, or a [`Duration`].

use std::time::Duration;

/// A time limit: a number of seconds (any integer or float type) or a [`Duration`].
///
/// Every place that takes a time limit takes `impl IntoTimeout`, so `120`, `2.5` and
/// `Duration::from_millis(2500)` all work the same way: [`ToolOptions::timeout_seconds`],
/// [`ToolDefinition::with_timeout_seconds`], [`ToolRegistryBuilder::default_timeout_seconds`],
/// [`ToolPolicy::with_default_timeout_seconds`] and
/// [`SubAgent::timeout_seconds`](crate::SubAgent::timeout_seconds). `#[tool(timeout_seconds = 120)]`
/// takes an integer or a float literal too.
///
/// A value that is not a positive number of seconds (zero, negative, NaN, `Duration::ZERO`)
/// becomes [`Duration::ZERO`], which registration refuses with
/// [`RegistryError::InvalidTimeout`](crate::RegistryError::InvalidTimeout); a value too large
/// for a [`Duration`] becomes [`Duration::MAX`], "no practical limit".
///
/// [`ToolOptions::timeout_seconds`]: crate::ToolOptions::timeout_seconds
/// [`ToolDefinition::with_timeout_seconds`]: crate::ToolDefinition::with_timeout_seconds
/// [`ToolRegistryBuilder::default_timeout_seconds`]: crate::ToolRegistryBuilder::default_timeout_seconds
/// [`ToolPolicy::with_default_timeout_seconds`]: crate::ToolPolicy::with_default_timeout_seconds
///
/// ```
/// use std::time::Duration;
/// use harnessx::{IntoTimeout, ToolOptions};
///
/// assert_eq!(120.into_timeout(), Duration::from_secs(120));
/// assert_eq!(2.5.into_timeout(), Duration::from_millis(2500));
/// assert_eq!(Duration::from_secs(3).into_timeout(), Duration::from_secs(3));
/// assert_eq!((-1).into_timeout(), Duration::ZERO); // refused when registered
///
/// let opts = ToolOptions::new().timeout_seconds(120);
/// assert_eq!(opts.timeout, Some(Duration::from_secs(120)));
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a time limit",
    label = "expected a number of seconds or a `Duration`",
    note = "pass seconds as an integer or a float (`120`, `2.5`), or a `std::time::Duration`"
)]
pub trait IntoTimeout {
    /// The limit as a duration ([`Duration::ZERO`] for a value that is not a positive time).
    fn into_timeout(self) -> Duration;
}

impl IntoTimeout for Duration {
    fn into_timeout(self) -> Duration {
        self
    }
}

impl IntoTimeout for f64 {
    fn into_timeout(self) -> Duration {
        super::duration_from_secs(self)
    }
}

impl IntoTimeout for f32 {
    fn into_timeout(self) -> Duration {
        super::duration_from_secs(f64::from(self))
    }
}

// Every unsigned type here is at most 64 bits wide, so `as u64` is lossless.
macro_rules! unsigned {
    ($($t:ty),*) => {$(
        impl IntoTimeout for $t {
            fn into_timeout(self) -> Duration {
                Duration::from_secs(self as u64)
            }
        }
    )*};
}

macro_rules! signed {
    ($($t:ty),*) => {$(
        impl IntoTimeout for $t {
            fn into_timeout(self) -> Duration {
                // Negative seconds are not a time limit: zero, which registration refuses.
                u64::try_from(self).map_or(Duration::ZERO, Duration::from_secs)
            }
        }
    )*};
}

unsigned!(u8, u16, u32, u64, usize);
signed!(i8, i16, i32, i64, isize);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_means_the_same_limit() {
        assert_eq!(120u8.into_timeout(), Duration::from_secs(120));
        assert_eq!(120u64.into_timeout(), Duration::from_secs(120));
        assert_eq!(120usize.into_timeout(), Duration::from_secs(120));
        assert_eq!(120i64.into_timeout(), Duration::from_secs(120));
        assert_eq!(120.0f32.into_timeout(), Duration::from_secs(120));
        assert_eq!(0.25.into_timeout(), Duration::from_millis(250));
        assert_eq!(0.into_timeout(), Duration::ZERO);
        assert_eq!((-3i64).into_timeout(), Duration::ZERO);
        assert_eq!(f64::NAN.into_timeout(), Duration::ZERO);
        assert_eq!((-0.5).into_timeout(), Duration::ZERO);
        assert_eq!(1e300.into_timeout(), Duration::MAX);
        assert_eq!(u64::MAX.into_timeout(), Duration::from_secs(u64::MAX));
    }
}
