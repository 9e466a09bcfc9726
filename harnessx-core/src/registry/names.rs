//! Name repair: map a name the model got wrong by formatting only to the one tool it means; and
//! the hash the registry's name table uses.

/// The registry's table of tools by name.
pub(crate) type NameTable<V> =
    indexmap::IndexMap<String, V, std::hash::BuildHasherDefault<NameHasher>>;

/// A fast hash for tool names (the multiply-rotate hash of rustc's `FxHasher`), instead of the
/// default SipHash, which costs more than the rest of a lookup. Its weakness, inputs crafted to
/// collide, needs control of the keys inserted: only the application registers names (at most
/// 64 bytes each), and the model's names are only looked up, after the 256-byte cap.
#[derive(Default)]
pub(crate) struct NameHasher(u64);

impl std::hash::Hasher for NameHasher {
    fn write(&mut self, bytes: &[u8]) {
        const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0; 8];
            word.copy_from_slice(chunk);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(word)).wrapping_mul(SEED);
        }
        for &byte in chunks.remainder() {
            self.0 = (self.0.rotate_left(5) ^ u64::from(byte)).wrapping_mul(SEED);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// The prefixes models put in front of tool names.
const PREFIXES: [&str; 3] = ["functions.", "tools.", "default_api:"];

/// The formatting-free key of a name: prefixes stripped, words split on `-`, `_`, `.`, spaces and
/// camelCase boundaries, lowercased, joined with `_`. Linear in the name's length.
pub(crate) fn normalize(name: &str) -> String {
    let mut s = name.trim();
    loop {
        let before = s.len();
        for p in PREFIXES {
            if let Some(head) = s.get(..p.len())
                && head.eq_ignore_ascii_case(p)
            {
                s = &s[p.len()..];
            }
        }
        // Each pass strips a prefix or ends the loop; comparing lengths keeps a pass O(1).
        if s.len() == before {
            break;
        }
    }
    let mut words: Vec<String> = Vec::new();
    let mut cur = String::new();
    let chars: Vec<char> = s.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if matches!(c, '-' | '_' | '.' | ' ' | '\t') {
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
            continue;
        }
        if c.is_uppercase() && !cur.is_empty() {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            // fooBar -> foo|Bar ; HTTPServer -> HTTP|Server
            if prev.is_lowercase() || prev.is_ascii_digit() || (prev.is_uppercase() && next_lower) {
                words.push(std::mem::take(&mut cur));
            }
        }
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words.join("_")
}

/// Up to three registered names close to `wanted` by spelling, best first. The engine calls it
/// only for names of at most [`MAX_TOOL_NAME_BYTES`](crate::engine::MAX_TOOL_NAME_BYTES) bytes,
/// so each comparison is bounded by that length times a registered name's (at most 64 bytes).
pub(crate) fn suggestions<'a>(wanted: &str, names: impl Iterator<Item = &'a str>) -> Vec<String> {
    let key = normalize(wanted);
    let lower = wanted.to_lowercase();
    let mut scored: Vec<(f64, &str)> = names
        .map(|n| {
            let a = strsim::jaro_winkler(&key, &normalize(n));
            let b = strsim::normalized_levenshtein(&lower, &n.to_lowercase());
            (a.max(b), n)
        })
        .filter(|(score, _)| *score >= 0.7)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    scored
        .into_iter()
        .take(3)
        .map(|(_, n)| n.to_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formatting_variants_share_a_key() {
        for v in [
            "search_web",
            "Search_Web",
            "search-web",
            "searchWeb",
            "SearchWeb",
            "search.web",
            "search web",
            "functions.search_web",
            "tools.searchWeb",
            "default_api:search-web",
            "SEARCH_WEB",
        ] {
            assert_eq!(normalize(v), "search_web", "{v}");
        }
        assert_eq!(normalize("HTTPServer"), "http_server");
        assert_ne!(normalize("search_webs"), "search_web");
        // Multi-byte text where a prefix would end never panics.
        assert_eq!(normalize("Ⱥm.\u{b4fe5}YѨ"), "ⱥm_\u{b4fe5}yѩ");
    }

    #[test]
    fn suggestions_rank_by_similarity() {
        let names = ["search_web", "read_file", "write_file", "search_docs"];
        let s = suggestions("serch_web", names.iter().copied());
        assert_eq!(s.first().map(String::as_str), Some("search_web"));
        assert!(s.len() <= 3);
        assert!(suggestions("zzzzzz", names.iter().copied()).is_empty());
    }
}
