//! Who runs the server programs: the current user, or `nobody` when that is root.

use std::path::Path;
use std::process::Command;

use crate::TestkitError;

/// An unprivileged identity to run PostgreSQL's programs as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RunAs {
    pub(crate) uid: u32,
    pub(crate) gid: u32,
}

impl RunAs {
    /// `None` when the process is not root (then programs run as the current user).
    pub(crate) fn for_current_process() -> Result<Option<RunAs>, TestkitError> {
        if !rustix::process::geteuid().is_root() {
            return Ok(None);
        }
        let passwd = std::fs::read_to_string("/etc/passwd").map_err(|source| TestkitError::Io {
            action: "read",
            path: "/etc/passwd".into(),
            source,
        })?;
        lookup(&passwd, "nobody")
            .map(Some)
            .ok_or(TestkitError::NoUnprivilegedUser)
    }

    /// Makes `command` drop to this identity (std clears supplementary groups, then sets the
    /// group and user ids in the child before it runs).
    pub(crate) fn apply(self, command: &mut Command) {
        use std::os::unix::process::CommandExt;
        command.uid(self.uid).gid(self.gid);
    }

    /// Gives `path` to this identity.
    pub(crate) fn chown(self, path: &Path) -> Result<(), TestkitError> {
        std::os::unix::fs::chown(path, Some(self.uid), Some(self.gid)).map_err(|source| {
            TestkitError::Io {
                action: "hand to the unprivileged user (chown)",
                path: path.to_path_buf(),
                source,
            }
        })
    }
}

/// The uid and gid of `name` in a passwd file's text.
fn lookup(passwd: &str, name: &str) -> Option<RunAs> {
    passwd.lines().find_map(|line| {
        let mut fields = line.split(':');
        if fields.next()? != name {
            return None;
        }
        let _password = fields.next()?;
        Some(RunAs {
            uid: fields.next()?.parse().ok()?,
            gid: fields.next()?.parse().ok()?,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_nobody_in_a_passwd_file() {
        let passwd = "root:x:0:0:root:/root:/bin/bash\n\
                      nobodyelse:x:1:1::/:/bin/false\n\
                      nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
        assert_eq!(
            lookup(passwd, "nobody"),
            Some(RunAs {
                uid: 65534,
                gid: 65534
            })
        );
        assert_eq!(lookup("root:x:0:0::/root:/bin/sh\n", "nobody"), None);
        assert_eq!(lookup("nobody:x:abc:1::/:/bin/false\n", "nobody"), None);
    }

    #[test]
    fn no_unprivileged_user_says_what_to_do() {
        assert_eq!(
            TestkitError::NoUnprivilegedUser.to_string(),
            "running as root, but /etc/passwd has no `nobody` user to run PostgreSQL as (it \
             refuses to run as root); add one, e.g. `useradd --system nobody`, or run the tests \
             as a normal user"
        );
    }
}
