//! Reading a concept's Markdown with pulldown-cmark (so code blocks, escapes and reference
//! links are read as CommonMark reads them): its links, resolved to concept IDs, and its plain
//! text for the search index.

use std::collections::BTreeSet;

use pulldown_cmark::{Event, HeadingLevel, LinkType, Options, Parser, Tag, TagEnd};

use super::LinkKind;

/// A link as written in a concept's body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct RawLink {
    /// Where it points, as written (after CommonMark's unescaping).
    pub(super) destination: String,
    /// Its text.
    pub(super) text: String,
    /// A link or a citation.
    pub(super) kind: LinkKind,
}

/// The links in `body`, in document order. Links under a heading whose text is `Citations`
/// (any level; until the next heading of that level or higher) are citations. Autolinks and
/// e-mail links are skipped: they never point to a concept.
pub(super) fn extract(body: &str) -> Vec<RawLink> {
    let mut links = Vec::new();
    let mut citations_level: Option<HeadingLevel> = None;
    let mut heading: Option<(HeadingLevel, String)> = None;
    let mut open: Option<RawLink> = None;
    for event in Parser::new_ext(body, Options::empty()) {
        match event {
            Event::Start(Tag::Heading { level, .. }) => heading = Some((level, String::new())),
            Event::End(TagEnd::Heading(_)) => {
                if let Some((level, text)) = heading.take() {
                    if text.trim().eq_ignore_ascii_case("citations") {
                        citations_level = Some(level);
                    } else if citations_level.is_some_and(|c| level <= c) {
                        citations_level = None;
                    }
                }
            }
            Event::Start(Tag::Link {
                link_type,
                dest_url,
                ..
            }) if !matches!(link_type, LinkType::Autolink | LinkType::Email) => {
                open = Some(RawLink {
                    destination: dest_url.into_string(),
                    text: String::new(),
                    kind: if citations_level.is_some() {
                        LinkKind::Citation
                    } else {
                        LinkKind::Link
                    },
                });
            }
            Event::End(TagEnd::Link) => {
                if let Some(mut link) = open.take() {
                    link.text = link.text.split_whitespace().collect::<Vec<_>>().join(" ");
                    links.push(link);
                }
            }
            Event::Text(text) | Event::Code(text) => {
                if let Some((_, heading)) = &mut heading {
                    heading.push_str(&text);
                }
                if let Some(link) = &mut open {
                    link.text.push_str(&text);
                }
            }
            Event::SoftBreak | Event::HardBreak => {
                if let Some(link) = &mut open {
                    link.text.push(' ');
                }
            }
            _ => {}
        }
    }
    links
}

/// The text of `body` without Markdown syntax or link destinations (what search matches and
/// snippets show): blocks end with a line break, words inside a block are joined by spaces.
pub(super) fn plain_text(body: &str) -> String {
    let mut text = String::with_capacity(body.len());
    for event in Parser::new_ext(body, Options::empty()) {
        match event {
            Event::Text(t) | Event::Code(t) => text.push_str(&t),
            Event::SoftBreak | Event::HardBreak => text.push(' '),
            Event::End(
                TagEnd::Paragraph | TagEnd::Heading(_) | TagEnd::Item | TagEnd::CodeBlock,
            ) => text.push('\n'),
            _ => {}
        }
    }
    text
}

/// Where a link leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Target {
    /// A concept of the bundle.
    Concept(String),
    /// A `.md` file the bundle does not have (its would-be ID).
    Missing(String),
    /// A path that climbs out of the bundle.
    Outside,
    /// Not a concept link: a URL, an anchor, a reserved file, an image or other resource.
    Other,
}

/// Resolves `destination`, written in concept `from`, against the bundle's concept `ids`.
/// Paths starting with `/` are bundle-relative, others relative to `from`'s folder; a
/// `#fragment` or `?query` is dropped and `%XX` escapes are decoded.
pub(super) fn resolve(from: &str, destination: &str, ids: &BTreeSet<String>) -> Target {
    let destination = destination.trim();
    if destination.is_empty()
        || destination.starts_with('#')
        || destination.starts_with("//")
        || has_scheme(destination)
    {
        return Target::Other;
    }
    let path = destination
        .split(['#', '?'])
        .next()
        .map(percent_decode)
        .unwrap_or_default();
    let mut parts: Vec<&str> = if path.starts_with('/') {
        Vec::new()
    } else {
        from.split('/').collect()
    };
    if !path.starts_with('/') {
        parts.pop(); // `from`'s own name: links are relative to its folder
    }
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Target::Outside;
                }
            }
            other => parts.push(other),
        }
    }
    let Some(last) = parts.last() else {
        return Target::Other;
    };
    if let Some(stem) = last.strip_suffix(".md") {
        if *last == "index.md" || *last == "log.md" || stem.is_empty() {
            return Target::Other;
        }
        let id = format!("{}{stem}", prefix(&parts));
        return if ids.contains(&id) {
            Target::Concept(id)
        } else {
            Target::Missing(id)
        };
    }
    // Without `.md`: a concept ID written directly counts; anything else (a folder, an image,
    // a data file) is a resource.
    let id = parts.join("/");
    if ids.contains(&id) {
        Target::Concept(id)
    } else {
        Target::Other
    }
}

fn prefix(parts: &[&str]) -> String {
    parts[..parts.len() - 1]
        .iter()
        .map(|p| format!("{p}/"))
        .collect()
}

/// `scheme:` as RFC 3986 spells it (`https:`, `mailto:`), before any `/`.
fn has_scheme(destination: &str) -> bool {
    let Some((scheme, _)) = destination.split_once(':') else {
        return false;
    };
    scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// Decodes `%XX` escapes; invalid escapes and non-UTF-8 results are kept as written.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = text.get(i + 1..i + 3)
            && let Ok(byte) = u8::from_str_radix(hex, 16)
        {
            out.push(byte);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids() -> BTreeSet<String> {
        ["tables/orders", "tables/customers", "glossary", "my file"]
            .into_iter()
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn links_and_citations_are_found_outside_code() {
        let body = "See [the *orders*\ntable](orders.md) and [ref][c].\n\n\
                    ```\n[not a link](x.md)\n```\n\n`[code](y.md)` <https://example.com>\n\n\
                    ![a chart](chart.png)\n\n# Citations\n\n- [Glossary](/glossary.md)\n\n\
                    ## Sub\n\n[also cited](../x.md)\n\n# Next\n\n[plain](z.md)\n\n\
                    [c]: customers.md\n";
        let links = extract(body);
        let got: Vec<(&str, &str, LinkKind)> = links
            .iter()
            .map(|l| (l.destination.as_str(), l.text.as_str(), l.kind))
            .collect();
        assert_eq!(
            got,
            [
                ("orders.md", "the orders table", LinkKind::Link),
                ("customers.md", "ref", LinkKind::Link),
                ("/glossary.md", "Glossary", LinkKind::Citation),
                ("../x.md", "also cited", LinkKind::Citation),
                ("z.md", "plain", LinkKind::Link),
            ]
        );
    }

    #[test]
    fn plain_text_drops_syntax_and_destinations() {
        assert_eq!(
            plain_text("# Title\n\nSee [the *orders*](orders.md) and `code`.\n\n- one\n- two\n"),
            "Title\nSee the orders and code.\none\ntwo\n"
        );
    }

    #[test]
    fn destinations_resolve_like_paths() {
        let ids = ids();
        let from = "tables/orders";
        let cases = [
            ("customers.md", Target::Concept("tables/customers".into())),
            (
                "./customers.md#keys",
                Target::Concept("tables/customers".into()),
            ),
            ("../glossary.md", Target::Concept("glossary".into())),
            ("/glossary.md?x=1", Target::Concept("glossary".into())),
            (
                "/tables/customers",
                Target::Concept("tables/customers".into()),
            ),
            ("../my%20file.md", Target::Concept("my file".into())),
            ("gone.md", Target::Missing("tables/gone".into())),
            ("../../outside.md", Target::Outside),
            ("index.md", Target::Other),
            ("../log.md", Target::Other),
            ("chart.png", Target::Other),
            ("https://example.com/a.md", Target::Other),
            ("mailto:a@b.c", Target::Other),
            ("//cdn.example.com/x.md", Target::Other),
            ("#section", Target::Other),
            ("", Target::Other),
            ("..", Target::Other),
        ];
        for (destination, expected) in cases {
            assert_eq!(resolve(from, destination, &ids), expected, "{destination}");
        }
        assert_eq!(
            resolve("glossary", "tables/orders.md", &ids),
            Target::Concept("tables/orders".into())
        );
        assert_eq!(percent_decode("a%2"), "a%2");
        assert_eq!(percent_decode("%ff"), "%ff");
    }
}
