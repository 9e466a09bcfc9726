//! The settings a test cluster starts with.

/// Settings for [`PgCluster::start_with`](crate::PgCluster::start_with).
///
/// ```
/// use harnessx_testkit::PgOptions;
///
/// // A faster, non-durable server for a test that measures nothing.
/// let options = PgOptions::default().fsync(false).setting("max_connections", "200");
/// # let _ = options;
/// ```
#[derive(Debug, Clone)]
pub struct PgOptions {
    fsync: bool,
    settings: Vec<(String, String)>,
}

impl Default for PgOptions {
    /// `fsync` on (a commit is durable, as in production), no other settings.
    fn default() -> Self {
        PgOptions {
            fsync: true,
            settings: Vec::new(),
        }
    }
}

impl PgOptions {
    /// Turns the server's `fsync` on (the default) or off. Off makes commits cheaper and a
    /// machine crash able to lose them; a benchmark must leave it on.
    #[must_use]
    pub fn fsync(mut self, on: bool) -> Self {
        self.fsync = on;
        self
    }

    /// Passes `-c name=value` to the server, e.g. `("max_connections", "200")`.
    #[must_use]
    pub fn setting(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.settings.push((name.into(), value.into()));
        self
    }
}

impl PgOptions {
    /// The `-c name=value` server settings these options stand for, `fsync` first.
    pub(crate) fn server_settings(&self) -> Vec<(String, String)> {
        let fsync = if self.fsync { "on" } else { "off" };
        std::iter::once(("fsync".to_owned(), fsync.to_owned()))
            .chain(self.settings.iter().cloned())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fsync_is_on_unless_turned_off_and_settings_follow_in_order() {
        let on = |s: &[(String, String)]| {
            s.iter()
                .map(|(n, v)| format!("{n}={v}"))
                .collect::<Vec<_>>()
        };
        assert_eq!(on(&PgOptions::default().server_settings()), ["fsync=on"]);
        let options = PgOptions::default()
            .fsync(false)
            .setting("max_connections", "200")
            .setting("a", "b");
        assert_eq!(
            on(&options.server_settings()),
            ["fsync=off", "max_connections=200", "a=b"]
        );
    }
}
