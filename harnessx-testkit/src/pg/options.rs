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
    tls: Option<ServerTls>,
}

/// The server's certificate chain and key, PEM.
#[derive(Clone)]
pub(crate) struct ServerTls {
    pub(crate) certificate_chain: String,
    pub(crate) private_key: String,
}

impl std::fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerTls").finish_non_exhaustive()
    }
}

impl Default for PgOptions {
    /// `fsync` on (a commit is durable, as in production), no other settings.
    fn default() -> Self {
        PgOptions {
            fsync: true,
            settings: Vec::new(),
            tls: None,
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

    /// Turns TLS on (`ssl = on`) with this certificate chain (the server's certificate first,
    /// then any intermediates) and private key, both PEM. They are written to the data
    /// directory as `server.crt` and `server.key` (the server's defaults), mode 0600 and owned
    /// by the server's user, as PostgreSQL requires of a key. Plain-text connections are still
    /// accepted (`host` lines in `pg_hba.conf`).
    ///
    /// ```
    /// use harnessx_testkit::PgOptions;
    /// # let (certificate_pem, key_pem) = (String::new(), String::new());
    /// let options = PgOptions::default().tls(certificate_pem, key_pem);
    /// # let _ = options;
    /// ```
    #[must_use]
    pub fn tls(
        mut self,
        certificate_chain: impl Into<String>,
        private_key: impl Into<String>,
    ) -> Self {
        self.tls = Some(ServerTls {
            certificate_chain: certificate_chain.into(),
            private_key: private_key.into(),
        });
        self
    }
}

impl PgOptions {
    /// The `-c name=value` server settings these options stand for, `fsync` first, then
    /// `ssl=on` with [`PgOptions::tls`].
    pub(crate) fn server_settings(&self) -> Vec<(String, String)> {
        let fsync = if self.fsync { "on" } else { "off" };
        let ssl = self
            .tls
            .as_ref()
            .map(|_| ("ssl".to_owned(), "on".to_owned()));
        std::iter::once(("fsync".to_owned(), fsync.to_owned()))
            .chain(ssl)
            .chain(self.settings.iter().cloned())
            .collect()
    }

    /// The certificate and key of [`PgOptions::tls`].
    pub(crate) fn server_tls(&self) -> Option<&ServerTls> {
        self.tls.as_ref()
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
        let options = PgOptions::default().setting("a", "b").tls("cert", "key");
        assert_eq!(
            on(&options.server_settings()),
            ["fsync=on", "ssl=on", "a=b"]
        );
        assert_eq!(
            format!("{options:?}").matches("key").count(),
            0,
            "{options:?}"
        );
    }
}
