//! Tool names: `mcp_<server>_<tool>` sanitised to what model APIs accept, capped with a hash.

/// The longest name model APIs accept.
const MAX_NAME: usize = 64;
/// Length of the hash suffix (hex digits).
const HASH_DIGITS: usize = 8;

/// Replaces every character outside `[a-zA-Z0-9_-]` with `_`.
pub(crate) fn sanitize(raw: &str) -> String {
    raw.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The plain exposed name `mcp_<server>_<tool>`, sanitised; `None` when it is too long.
pub(crate) fn plain(server: &str, tool: &str) -> Option<String> {
    let name = sanitize(&format!("mcp_{server}_{tool}"));
    (name.len() <= MAX_NAME).then_some(name)
}

/// The hashed exposed name: the sanitised name cut to leave room for `_` and an 8-digit hash of
/// the original server and tool names, so distinct tools never share it.
pub(crate) fn hashed(server: &str, tool: &str) -> String {
    let name = sanitize(&format!("mcp_{server}_{tool}"));
    let keep = MAX_NAME - 1 - HASH_DIGITS;
    let head = &name[..name.len().min(keep)];
    let hash = fnv1a(format!("{server}\u{0}{tool}").as_bytes());
    format!("{head}_{:08x}", hash as u32)
}

/// FNV-1a, 64 bits: stable across builds and platforms, unlike `std`'s hasher.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

/// Assigns exposed names to one server's tools, in order. A tool gets its plain name when that
/// fits, is unchanged by sanitising or unclaimed, and is not `taken` by another source;
/// otherwise the hashed name. Tools whose names survive sanitising unchanged are served first,
/// so `a_b` keeps its plain name when the server also has `a.b`.
pub(crate) fn assign<'a>(
    server: &str,
    tools: impl IntoIterator<Item = &'a str>,
    taken: impl Fn(&str) -> bool,
) -> Vec<(String, String)> {
    let tools: Vec<&str> = tools.into_iter().collect();
    let mut order: Vec<usize> = (0..tools.len()).collect();
    order.sort_by_key(|&i| sanitize(tools[i]) != tools[i]);
    let mut used = std::collections::HashSet::new();
    let mut out = vec![String::new(); tools.len()];
    for i in order {
        let tool = tools[i];
        let name = match plain(server, tool) {
            Some(p) if !used.contains(&p) && !taken(&p) => p,
            _ => hashed(server, tool),
        };
        used.insert(name.clone());
        out[i] = name;
    }
    tools
        .iter()
        .zip(out)
        .map(|(t, n)| ((*t).to_owned(), n))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid(name: &str) -> bool {
        (1..=64).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    }

    #[test]
    fn plain_names_are_prefixed_and_sanitised() {
        assert_eq!(
            plain("fs", "read_file").as_deref(),
            Some("mcp_fs_read_file")
        );
        assert_eq!(plain("ev", "get-sum").as_deref(), Some("mcp_ev_get-sum"));
        assert_eq!(
            plain("my server", "files.read").as_deref(),
            Some("mcp_my_server_files_read")
        );
    }

    #[test]
    fn long_names_are_cut_with_a_stable_hash() {
        let tool = "x".repeat(128);
        assert!(plain("srv", &tool).is_none());
        let a = hashed("srv", &tool);
        assert!(valid(&a), "{a}");
        assert_eq!(a.len(), 64);
        assert_eq!(a, hashed("srv", &tool));
        let b = hashed("srv", &format!("{tool}y"));
        assert_ne!(a, b);
    }

    #[test]
    fn sanitising_collisions_get_distinct_names() {
        let names = assign("s", ["a.b", "a_b", "c"], |_| false);
        assert_eq!(names[1], ("a_b".to_owned(), "mcp_s_a_b".to_owned()));
        assert!(names[0].1.starts_with("mcp_s_a_b_") && valid(&names[0].1));
        assert_eq!(names[2].1, "mcp_s_c");
    }

    #[test]
    fn names_taken_elsewhere_are_hashed() {
        let names = assign("a", ["b_c"], |n| n == "mcp_a_b_c");
        assert_ne!(names[0].1, "mcp_a_b_c");
        assert!(valid(&names[0].1));
    }
}
