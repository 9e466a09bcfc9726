//! HTML to readable Markdown: the page's title and its content without scripts, styles,
//! navigation and form controls.
//!
//! The work is bounded whatever the page: a scan of its tags refuses pages that plainly nest
//! deeper than [`MAX_NESTING_DEPTH`] or have more than [`MAX_TAGS`] tags, and the parser stops
//! as soon as the tree it builds passes the depth or size limits of [`parse`]. A refused page is
//! returned as plain text, read by a single loop over its tags, after a note saying why.

use std::collections::HashMap;

use super::parse::{self, TooLarge};

/// Elements dropped with everything inside them: they carry code, styling, navigation or
/// controls rather than the page's content.
const NOISE: [&str; 17] = [
    "head", "script", "style", "noscript", "template", "nav", "svg", "canvas", "iframe", "object",
    "embed", "button", "select", "input", "textarea", "dialog", "link",
];

/// Nesting depth above which a page is not converted to Markdown: the same limit the parser's
/// tree is held to ([`parse::MAX_DEPTH`]), checked first by a scan of the tags, so that a page
/// that plainly nests deeper is never parsed.
pub(crate) const MAX_NESTING_DEPTH: usize = parse::MAX_DEPTH;

/// Tags (start and end) above which a page is not parsed. html5ever searches its stack of open
/// elements (up to [`MAX_NESTING_DEPTH`] deep) for most tags, end tags it ignores included, so
/// this bounds the parser's work even for tags that build no nodes.
pub(crate) const MAX_TAGS: usize = 200_000;

/// The stack of the thread htmd runs on. Its recursion takes a few kilobytes per level of the
/// tree in debug builds and the tree is at most [`MAX_NESTING_DEPTH`] deep; a 2 MiB thread
/// (tokio's blocking pool, a test thread) overflows below 1000 levels. Only the part of the stack
/// actually used is committed.
const CONVERTER_STACK_BYTES: usize = 64 * 1024 * 1024;

/// The only elements that never have content or an end tag: a `/` before the `>` of any other
/// HTML element is ignored by the parser (`<div/>` opens a `div` like `<div>`).
const VOID: [&str; 13] = [
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track",
    "wbr",
];

/// Elements whose end tag pages often leave out; the parser closes them at the next sibling of
/// the same kind, so they do not nest and are not counted. (`rb`, `rt`, `rp` and `rtc` are
/// closed that way only inside a `ruby`, so they are counted.)
const OPTIONAL_END: [&str; 14] = [
    "p", "li", "dt", "dd", "tr", "td", "th", "option", "optgroup", "thead", "tbody", "tfoot",
    "colgroup", "caption",
];

/// HTML elements that end SVG or MathML content when they start inside it: the parser closes the
/// foreign elements and reads on as HTML.
const BREAKOUT: [&str; 45] = [
    "b",
    "big",
    "blockquote",
    "body",
    "br",
    "center",
    "code",
    "dd",
    "div",
    "dl",
    "dt",
    "em",
    "embed",
    "font",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "head",
    "hr",
    "i",
    "img",
    "li",
    "listing",
    "menu",
    "meta",
    "nobr",
    "ol",
    "p",
    "pre",
    "ruby",
    "s",
    "small",
    "span",
    "strong",
    "strike",
    "sub",
    "sup",
    "table",
    "tt",
    "u",
    "ul",
    "var",
];

/// Elements whose content the parser reads as text up to their end tag (outside SVG and MathML).
const RAW_TEXT: [&str; 8] = [
    "script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes",
];

/// Elements the plain-text fallback drops with their content, when their end tag is present.
const PLAIN_SKIP: [&str; 7] = [
    "head", "script", "style", "noscript", "template", "svg", "nav",
];

/// Elements after which the plain-text fallback starts a new line.
const BLOCK: [&str; 27] = [
    "address",
    "article",
    "aside",
    "blockquote",
    "br",
    "dd",
    "div",
    "dl",
    "dt",
    "fieldset",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hr",
    "li",
    "main",
    "p",
    "pre",
    "section",
    "tr",
];

/// A converted page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Converted {
    /// The `<title>`, when the page has a non-empty one.
    pub(crate) title: Option<String>,
    /// The content as Markdown.
    pub(crate) markdown: String,
}

/// Converts an HTML document. CPU-bound on large pages: call it on the blocking pool.
pub(crate) fn to_markdown(html: &str) -> Converted {
    let title = title(html);
    let (depth, tags) = nesting_depth_and_tags(html);
    if depth > MAX_NESTING_DEPTH {
        let markdown = plain_fallback(html, Fallback::Nesting(Some(depth)));
        return Converted { title, markdown };
    }
    if tags > MAX_TAGS {
        let markdown = plain_fallback(html, Fallback::Size);
        return Converted { title, markdown };
    }
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(NOISE.to_vec())
        .scripting_enabled(false)
        .build();
    // The tree is not `Send`: it is parsed and walked on the converter's thread.
    let converted = std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("harnessx-html".to_owned())
            .stack_size(CONVERTER_STACK_BYTES)
            .spawn_scoped(scope, || {
                parse::parse(html).map(|tree| converter.tree_to_markdown(&tree))
            })
            .ok()?
            .join()
            .ok()
    });
    let markdown = match converted {
        Some(Ok(md)) => tidy(&md),
        Some(Err(TooLarge::Depth)) => plain_fallback(html, Fallback::Nesting(None)),
        Some(Err(TooLarge::Nodes)) => plain_fallback(html, Fallback::Size),
        Some(Err(TooLarge::Work)) => plain_fallback(html, Fallback::Work),
        // The thread starts unless the system is out of threads, and htmd does not panic on
        // malformed markup; should either happen, the page still gets its text.
        None => plain_fallback(html, Fallback::Failed),
    };
    Converted { title, markdown }
}

/// Why a page is returned as plain text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fallback {
    /// It nests deeper than [`MAX_NESTING_DEPTH`]: about this deep by the scan of its tags, or
    /// `None` when the parser found it so.
    Nesting(Option<usize>),
    /// It has more than [`MAX_TAGS`] tags or [`parse::MAX_NODES`] nodes.
    Size,
    /// Parsing and converting it would take more than [`parse::MAX_WORK`].
    Work,
    /// The converter's thread could not run.
    Failed,
}

/// The plain text of a page that is not converted to Markdown, after a note saying why.
fn plain_fallback(html: &str, why: Fallback) -> String {
    let text = plain_text(html);
    let reason = match why {
        Fallback::Nesting(Some(depth)) => format!(
            "This page nests its elements about {depth} levels deep, more than the \
             {MAX_NESTING_DEPTH} that can be converted to Markdown safely"
        ),
        Fallback::Nesting(None) => format!(
            "This page nests its elements more than {MAX_NESTING_DEPTH} levels deep, more than \
             can be converted to Markdown safely"
        ),
        Fallback::Size => format!(
            "This page has more than {MAX_TAGS} tags or {} elements and text runs, more than can \
             be converted to Markdown within this tool's limits",
            parse::MAX_NODES
        ),
        Fallback::Work => "Converting this page to Markdown would take more work than this \
                           tool allows (much of its content sits hundreds of levels deep)"
            .to_owned(),
        Fallback::Failed => "This page could not be converted to Markdown".to_owned(),
    };
    format!("({reason}, so this is its plain text, without links or formatting.)\n\n{text}")
}

/// The text of the first `<title>` element, with entities decoded and whitespace collapsed.
fn title(html: &str) -> Option<String> {
    let lower = html.to_ascii_lowercase();
    let open = lower.find("<title")?;
    let content_start = open + lower[open..].find('>')? + 1;
    let content_end = content_start + lower[content_start..].find("</title")?;
    // The title is text (the parser reads tags in it as text); decode it without a parser, which
    // also keeps a title stuffed with nested tags away from htmd's recursion.
    let text = decode_entities(&html[content_start..content_end]);
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    (!text.is_empty()).then_some(text)
}

/// One tag found by [`scan`].
struct Tag<'a> {
    /// The lowercase name.
    name: String,
    /// `</name>`.
    end: bool,
    /// `<name/>` where the parser honours the slash: on SVG and MathML elements (an HTML element
    /// that breaks out of SVG or MathML does not count as one). Void elements are closed at once
    /// too, slash or not; see [`VOID`].
    self_closing: bool,
    /// The text from `<` to `>` inclusive.
    raw: &'a str,
}

/// What [`scan`] hands its visitor.
enum Piece<'a> {
    /// Text between tags.
    Text(&'a str),
    /// A start or end tag.
    Tag(Tag<'a>),
}

/// Walks `html` as text and tags, without building a tree: comments, doctypes and processing
/// instructions are skipped, and the content of raw-text elements (`script`, `style`, ...)
/// outside SVG and MathML is passed over up to their end tag. `raw_text` says whether to pass over
/// raw-text content.
fn scan<'a>(html: &'a str, raw_text: bool, mut visit: impl FnMut(Piece<'a>)) {
    let lower = html.to_ascii_lowercase();
    let mut at = 0;
    let mut foreign = 0usize;
    while at < html.len() {
        let Some(lt) = html[at..].find('<').map(|i| at + i) else {
            visit(Piece::Text(&html[at..]));
            return;
        };
        if lt > at {
            visit(Piece::Text(&html[at..lt]));
        }
        let rest = &lower[lt..];
        if let Some(body) = rest.strip_prefix("<!--") {
            // A comment ends at `-->` or `--!>`; `<!-->` and `<!--->` end at once.
            let end = if body.starts_with('>') {
                Some(5)
            } else if body.starts_with("->") {
                Some(6)
            } else {
                comment_end(body).map(|e| e + 4)
            };
            at = end.map_or(html.len(), |e| lt + e);
            continue;
        }
        let bytes = rest.as_bytes();
        let end = bytes.get(1) == Some(&b'/');
        let name_start = if end { 2 } else { 1 };
        if !bytes.get(name_start).is_some_and(u8::is_ascii_alphabetic) {
            if bytes.get(1).is_some_and(|b| *b == b'!' || *b == b'?') {
                // A doctype, CDATA section or processing instruction.
                at = rest.find('>').map_or(html.len(), |e| lt + e + 1);
            } else {
                visit(Piece::Text(&html[lt..lt + 1]));
                at = lt + 1;
            }
            continue;
        }
        let name_len = rest[name_start..]
            .find(|c: char| c.is_ascii_whitespace() || c == '/' || c == '>')
            .unwrap_or(rest.len() - name_start);
        let name = rest[name_start..name_start + name_len].to_owned();
        let close = rest.find('>').map_or(html.len(), |e| lt + e + 1);
        let raw = &html[lt..close];
        at = close;
        let mut in_foreign = foreign > 0;
        if in_foreign && !end && BREAKOUT.contains(&name.as_str()) {
            foreign = 0;
            in_foreign = false;
        }
        let self_closing = raw.ends_with("/>") && (in_foreign || name == "svg" || name == "math");
        if name == "svg" || name == "math" {
            if end {
                foreign = foreign.saturating_sub(1);
            } else if !self_closing {
                foreign += 1;
            }
        }
        let skip_content = raw_text && !end && foreign == 0 && RAW_TEXT.contains(&name.as_str());
        visit(Piece::Tag(Tag {
            name: name.clone(),
            end,
            self_closing,
            raw,
        }));
        if skip_content {
            let close_tag = format!("</{name}");
            at = if name == "script" {
                script_end(&lower, at)
            } else {
                lower[at..].find(&close_tag).map_or(html.len(), |i| at + i)
            };
        }
    }
}

/// The end of a comment's body (just past its `-->` or `--!>`), in one pass.
fn comment_end(body: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = body[from..].find("--") {
        let dashes = from + i;
        let after = &body[dashes + 2..];
        if after.starts_with('>') {
            return Some(dashes + 3);
        }
        if after.starts_with("!>") {
            return Some(dashes + 4);
        }
        from = dashes + 1;
    }
    None
}

/// Where a script's content that starts at `from` ends: at its `</script`, unless an
/// `<!--` ... `<script` inside it makes the parser wait for a second one.
fn script_end(lower: &str, from: usize) -> usize {
    let mut at = from;
    let mut escaped = false;
    let mut double = false;
    while at < lower.len() {
        let rest = &lower[at..];
        if rest.starts_with("</script") {
            if !double {
                return at;
            }
            double = false;
            at += 8;
        } else if !escaped && rest.starts_with("<!--") {
            escaped = true;
            at += 4;
        } else if escaped && rest.starts_with("-->") {
            escaped = false;
            double = false;
            at += 3;
        } else if escaped && rest.starts_with("<script") {
            double = true;
            at += 7;
        } else {
            at += rest.chars().next().map_or(1, char::len_utf8);
        }
    }
    lower.len()
}

/// How deep `html` nests its elements, roughly, and how many tags it has. The depth counts start
/// tags minus end tags, not counting void elements, SVG and MathML elements closed by `/>`, and
/// elements whose end tag is optional; every other `<name/>` nests, as it does for the parser. It
/// is the larger of two counts: one that passes over raw-text content as the parser does, and
/// one that reads every tag, so that markup cannot hide nesting from the check by posing as
/// script or style text. The tags are those of the second count, an upper bound.
pub(crate) fn nesting_depth_and_tags(html: &str) -> (usize, usize) {
    let count = |raw_text: bool| {
        let mut depth = 0usize;
        let mut max = 0usize;
        let mut tags = 0usize;
        scan(html, raw_text, |piece| {
            if let Piece::Tag(tag) = piece {
                tags += 1;
                let name = tag.name.as_str();
                if tag.self_closing || VOID.contains(&name) || OPTIONAL_END.contains(&name) {
                    return;
                }
                if tag.end {
                    depth = depth.saturating_sub(1);
                } else {
                    depth += 1;
                    max = max.max(depth);
                }
            }
        });
        (max, tags)
    };
    let (parsed_depth, _) = count(true);
    let (every_tag_depth, tags) = count(false);
    (parsed_depth.max(every_tag_depth), tags)
}

/// The nesting depth of [`nesting_depth_and_tags`].
#[cfg(test)]
fn nesting_depth(html: &str) -> usize {
    nesting_depth_and_tags(html).0
}

/// The page's text without parsing it into a tree: tags removed (with `head`, `script`, `style`
/// and the like dropped whole when their end tag is present), a line break after block
/// elements, basic entities decoded, and whitespace collapsed.
fn plain_text(html: &str) -> String {
    let lower = html.to_ascii_lowercase();
    let mut out = String::with_capacity(html.len() / 2);
    let mut skip_until: Option<usize> = None;
    let mut offset = 0usize;
    // The next `</name` at or after a position, per name, so that many unclosed `<nav>`s cost
    // one search rather than one each (a later search can only find the same one, or none).
    let mut next_close: HashMap<String, Option<usize>> = HashMap::new();
    scan(html, true, |piece| {
        let (start, len) = match &piece {
            Piece::Text(t) => (t.as_ptr() as usize - html.as_ptr() as usize, t.len()),
            Piece::Tag(tag) => (
                tag.raw.as_ptr() as usize - html.as_ptr() as usize,
                tag.raw.len(),
            ),
        };
        offset = start + len;
        if skip_until.is_some_and(|end| start < end) {
            return;
        }
        skip_until = None;
        match piece {
            Piece::Text(text) => out.push_str(&decode_entities(text)),
            Piece::Tag(tag) => {
                let name = tag.name.as_str();
                if !tag.end
                    && !tag.self_closing
                    && PLAIN_SKIP.contains(&name)
                    && let Some(close) = next_close_tag(&mut next_close, &lower, offset, name)
                {
                    skip_until = Some(close + 1);
                    return;
                }
                if BLOCK.contains(&name) {
                    out.push('\n');
                } else {
                    out.push(' ');
                }
            }
        }
    });
    let collapsed: Vec<String> = out
        .lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    tidy(&collapsed.join("\n"))
}

/// The position of the next `</name` at or after `from`, remembered per name: a later search
/// from further on finds the same one when it is still ahead, and none when there was none.
fn next_close_tag(
    cache: &mut HashMap<String, Option<usize>>,
    lower: &str,
    from: usize,
    name: &str,
) -> Option<usize> {
    if let Some(cached) = cache.get(name)
        && cached.is_none_or(|at| at >= from)
    {
        return *cached;
    }
    let found = lower[from..].find(&format!("</{name}")).map(|i| from + i);
    cache.insert(name.to_owned(), found);
    found
}

/// Decodes `&amp;`, `&lt;`, `&gt;`, `&quot;`, `&apos;`, `&#39;`, `&nbsp;` and numeric character
/// references; anything else is kept as written.
fn decode_entities(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        // `;` is ASCII, so its byte position is a character boundary.
        let Some(semi) = rest.bytes().take(12).position(|b| b == b';') else {
            out.push('&');
            rest = &rest[1..];
            continue;
        };
        let entity = &rest[1..semi];
        let decoded = match entity {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            "nbsp" => Some(' '),
            _ => entity
                .strip_prefix("#x")
                .or_else(|| entity.strip_prefix("#X"))
                .map(|hex| u32::from_str_radix(hex, 16))
                .or_else(|| entity.strip_prefix('#').map(str::parse::<u32>))
                .and_then(Result::ok)
                .and_then(char::from_u32),
        };
        match decoded {
            Some(c) => {
                out.push(c);
                rest = &rest[semi + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Collapses runs of blank lines and trims trailing spaces, which pages full of layout markup
/// produce in bulk.
fn tidy(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len());
    let mut blank = 0;
    for line in markdown.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank += 1;
            if blank > 1 {
                continue;
            }
        } else {
            blank = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_content_and_drops_noise() {
        let page = r#"<!doctype html><html><head><title> The  &amp; Page </title>
            <style>body{color:red}</style><script>var secret = 1;</script></head>
            <body><nav><a href="/">Home</a> | <a href="/about">About</a></nav>
            <h1>Heading</h1><p>Some <b>bold</b> text and a <a href="https://x.test/">link</a>.</p>
            <ul><li>one</li><li>two</li></ul><button>Click</button>
            <script>alert(1)</script></body></html>"#;
        let c = to_markdown(page);
        assert_eq!(c.title.as_deref(), Some("The & Page"));
        assert!(c.markdown.contains("# Heading"), "{}", c.markdown);
        assert!(c.markdown.contains("**bold**"), "{}", c.markdown);
        assert!(
            c.markdown.contains("[link](https://x.test/)"),
            "{}",
            c.markdown
        );
        assert!(c.markdown.contains("one"), "{}", c.markdown);
        for noise in [
            "secret",
            "alert",
            "color:red",
            "Home",
            "Click",
            "The & Page",
        ] {
            assert!(!c.markdown.contains(noise), "{noise} in {}", c.markdown);
        }
    }

    #[test]
    fn a_deeply_nested_page_becomes_plain_text_without_a_parser() {
        let depth = 200_000;
        let page = format!(
            "<html><head><title>Deep &amp; dark</title><script>var x = '<b>';</script></head>\
             <body>{}<p>Bottom &lt;text&gt; &#169;&#x41; here</p>{}</body></html>",
            "<div>".repeat(depth),
            "</div>".repeat(depth)
        );
        assert!(nesting_depth(&page) > MAX_NESTING_DEPTH);
        let c = to_markdown(&page);
        assert_eq!(c.title.as_deref(), Some("Deep & dark"));
        assert!(
            c.markdown.starts_with(&format!(
                "(This page nests its elements about {} levels deep, more than the 512 that can \
                 be converted to Markdown safely, so this is its plain text, without links or \
                 formatting.)\n\nBottom <text> ©A here",
                depth + 3
            )),
            "{}",
            &c.markdown[..c.markdown.len().min(400)]
        );
        assert!(!c.markdown.contains("var x"), "{}", c.markdown);
        // Unclosed nesting counts too.
        assert!(
            to_markdown(&"<span>".repeat(depth))
                .markdown
                .starts_with("(This page nests")
        );
    }

    #[test]
    fn nesting_cannot_hide_in_script_style_or_comments() {
        let n = 1000;
        // `</div>` inside script text does not close anything.
        let in_script = "<div><script></div></script>".repeat(n);
        assert!(
            nesting_depth(&in_script) >= n,
            "{}",
            nesting_depth(&in_script)
        );
        // Inside SVG, <style> is not raw text; divs break out of it and nest.
        let svg = format!("<svg><style>{}", "<div><!--</div>-->".repeat(n));
        assert!(nesting_depth(&svg) >= n, "{}", nesting_depth(&svg));
        // `<!--<script>` inside a script makes the parser wait for a second `</script>`.
        let escaped = "<div><script><!--<script></script></div></script>".repeat(n);
        assert!(nesting_depth(&escaped) >= n, "{}", nesting_depth(&escaped));
        // A comment ends at `--!>` too.
        let comment = "<div><!-- x --!></div> -->".repeat(n);
        assert!(nesting_depth(&comment) <= 1, "{}", nesting_depth(&comment));
    }

    #[test]
    fn ordinary_nesting_is_counted_loosely_and_converted() {
        let page = "<!DOCTYPE html><html><body><!-- <div><div> --><br><img src=x /><p>a<p>b\
                    <ul><li>x<li>y</ul><div><span>t</span></div></body></html>";
        assert_eq!(nesting_depth(page), 4);
        // Just under the limit, the page still goes through htmd (on a test thread's stack).
        let deep = format!("{}<p>deep</p>{}", "<div>".repeat(500), "</div>".repeat(500));
        assert!(nesting_depth(&deep) <= MAX_NESTING_DEPTH);
        let c = to_markdown(&deep);
        assert_eq!(c.markdown, "deep");
    }

    /// Inputs that would make a naive scan quadratic; each is scanned in one pass (a quadratic
    /// scan of these would take minutes, so a regression shows as this test hanging; the time
    /// itself is not asserted).
    #[test]
    fn adversarial_pages_are_scanned_in_one_pass() {
        let n = 400_000;
        // (page, whether the 1000 divs appended are markup, as the parser sees them)
        for (page, markup) in [
            ("<nav>".repeat(n), true),
            ("<head><x>".repeat(n), true),
            ("<!---->".repeat(n), true),
            // One long comment, then one script that never ends: the divs are comment or
            // script text for the parser too.
            ("<!-- - - -".repeat(n), false),
            ("<script><!--<script>".repeat(n), false),
            // Title text to the parser, but the count that reads every tag counts them: a
            // harmless over-count.
            ("<title>".repeat(n), true),
            ("&&&&&&&&;".repeat(n), true),
            ("<".repeat(n), true),
        ] {
            let c = to_markdown(&format!("{page}{}", "<div>".repeat(1000)));
            assert_eq!(
                c.markdown.starts_with("(This page nests"),
                markup,
                "{}",
                &page[..20]
            );
        }
    }

    #[test]
    fn pages_within_the_tree_depth_limit_convert_and_deeper_ones_do_not() {
        // Nested lists and tables count one level per `<ul>` / `<table>` in the scan, but the
        // tree is two (ul, li) and four (table, tbody, tr, td) levels deep per step: the parser's
        // tree decides. html, body and the text take three levels.
        let lists = |n: usize| {
            format!(
                "{}deep list{}",
                "<ul><li>".repeat(n),
                "</li></ul>".repeat(n)
            )
        };
        let tables = |n: usize| {
            format!(
                "{}deep cell{}",
                "<table><tr><td>".repeat(n),
                "</td></tr></table>".repeat(n)
            )
        };
        let within = (MAX_NESTING_DEPTH - 3) / 2;
        for (page, text) in [
            (lists(within), "deep list"),
            (tables(within / 2), "deep cell"),
        ] {
            let c = to_markdown(&page);
            assert!(!c.markdown.starts_with('('), "{}", &c.markdown[..100]);
            assert!(c.markdown.contains(text));
        }
        for page in [lists(MAX_NESTING_DEPTH - 2), tables(MAX_NESTING_DEPTH - 2)] {
            assert!(nesting_depth(&page) <= MAX_NESTING_DEPTH);
            let c = to_markdown(&page);
            assert!(
                c.markdown.starts_with(
                    "(This page nests its elements more than 512 levels deep, more than can be \
                     converted to Markdown safely, so this is its plain text, without links or \
                     formatting.)\n\n"
                ),
                "{}",
                &c.markdown[..100]
            );
        }
    }

    /// `<div/>` and `<marquee/>` open elements like `<div>` and `<marquee>`: 20 000 or 100 000 of
    /// them, bare or between words, are refused by the scan and returned as plain text.
    #[test]
    fn self_closing_lookalikes_nest_and_become_plain_text() {
        for (tag, sizes) in [
            ("<div/>", &[20_000, 100_000][..]),
            ("<marquee/>", &[20_000, 100_000][..]),
            ("<div />", &[20_000][..]),
            ("<MARQUEE/>", &[20_000][..]),
        ] {
            for &n in sizes {
                for piece in [tag.to_owned(), format!("{tag}word ")] {
                    let page = format!("<title>Deep</title>{}", piece.repeat(n));
                    assert!(nesting_depth(&page) >= n, "{tag}");
                    let c = to_markdown(&page);
                    assert_eq!(c.title.as_deref(), Some("Deep"));
                    assert!(
                        c.markdown.starts_with(&format!(
                            "(This page nests its elements about {n} levels deep, more than the \
                             512 that can be converted to Markdown safely, so this is its plain \
                             text, without links or formatting.)"
                        )),
                        "{tag}: {}",
                        &c.markdown[..c.markdown.len().min(200)]
                    );
                    assert_eq!(
                        c.markdown.matches("word").count(),
                        if piece.len() > tag.len() { n } else { 0 }
                    );
                }
            }
        }
        // Void elements, and SVG elements, do close themselves.
        let page = format!(
            "{}<svg>{}</svg>",
            "<br/><img/>".repeat(1000),
            "<path/>".repeat(1000)
        );
        assert!(nesting_depth(&page) <= 1, "{}", nesting_depth(&page));
        // An HTML element breaks out of SVG, and its slash is ignored again.
        let breakout = format!("<svg>{}", "<div/>".repeat(1000));
        assert!(
            nesting_depth(&breakout) >= 1000,
            "{}",
            nesting_depth(&breakout)
        );
    }

    /// Nesting the scan does not see (end tags the parser ignores) is caught by the parser's
    /// own tree, which stops at the limit.
    #[test]
    fn nesting_the_scan_misses_is_stopped_by_the_parser() {
        let page = format!("{}<p>bottom</p>", "<span></div>".repeat(5000));
        assert!(nesting_depth(&page) <= 1);
        let c = to_markdown(&page);
        assert!(
            c.markdown.starts_with(
                "(This page nests its elements more than 512 levels deep, more than can be \
                 converted to Markdown safely, so this is its plain text, without links or \
                 formatting.)\n\nbottom"
            ),
            "{}",
            &c.markdown[..c.markdown.len().min(200)]
        );
    }

    /// Pages within the depth limit whose parsing or conversion would still take long: too many
    /// tags, or tags and lines hundreds of levels deep.
    #[test]
    fn pages_too_costly_to_convert_become_plain_text() {
        let many_tags = "<i>x</i>".repeat(MAX_TAGS / 2 + 1);
        assert!(to_markdown(&many_tags).markdown.starts_with(
            "(This page has more than 200000 tags or 100000 elements and text runs, more than \
                 can be converted to Markdown within this tool's limits, so this is its plain \
                 text, without links or formatting.)\n\nx x x"
        ));
        let work_note = "(Converting this page to Markdown would take more work than this tool \
                         allows (much of its content sits hundreds of levels deep), so this is its \
                         plain text, without links or formatting.)";
        // End tags that close nothing, each searched for through 500 open elements.
        let unmatched = format!("{}{}words", "<span>".repeat(500), "</x>".repeat(50_000));
        let c = to_markdown(&unmatched);
        assert!(c.markdown.starts_with(work_note), "{}", &c.markdown[..200]);
        assert!(c.markdown.ends_with("words"));
        // Lines quoted 500 levels deep: each line would be prefixed once per level.
        let quoted = format!("{}{}", "<blockquote>".repeat(500), "a<br>".repeat(40_000));
        assert!(to_markdown(&quoted).markdown.starts_with(work_note));
    }

    #[test]
    fn the_fallback_note_says_why() {
        let page = "<p>a &amp; b</p><div>c</div>";
        assert_eq!(
            plain_fallback(page, Fallback::Nesting(Some(600))),
            "(This page nests its elements about 600 levels deep, more than the 512 that can be \
             converted to Markdown safely, so this is its plain text, without links or \
             formatting.)\n\na & b\n\nc"
        );
        assert_eq!(
            plain_fallback(page, Fallback::Failed),
            "(This page could not be converted to Markdown, so this is its plain text, without \
             links or formatting.)\n\na & b\n\nc"
        );
    }

    #[test]
    fn decodes_basic_entities_and_keeps_the_rest() {
        assert_eq!(
            decode_entities(
                "a &amp; b &lt;&gt; &quot;q&quot; &#39;s&apos; &nbsp;&#x263A; &bogus; & é&#xZZ;"
            ),
            "a & b <> \"q\" 's' \u{a0}☺ &bogus; & é&#xZZ;".replace('\u{a0}', " ")
        );
    }

    #[test]
    fn no_title_is_none() {
        assert_eq!(to_markdown("<p>x</p>").title, None);
        assert_eq!(to_markdown("<title>  </title><p>x</p>").title, None);
    }
}
