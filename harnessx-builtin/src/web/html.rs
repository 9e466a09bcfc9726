//! HTML to readable Markdown: the page's title and its content without scripts, styles,
//! navigation and form controls.

/// Elements dropped with everything inside them: they carry code, styling, navigation or
/// controls rather than the page's content.
const NOISE: [&str; 17] = [
    "head", "script", "style", "noscript", "template", "nav", "svg", "canvas", "iframe", "object",
    "embed", "button", "select", "input", "textarea", "dialog", "link",
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
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(NOISE.to_vec())
        .scripting_enabled(false)
        .build();
    let markdown = match converter.convert(html) {
        Ok(md) => tidy(&md),
        // htmd's parser does not fail on malformed markup; keep the raw text if it ever does.
        Err(_) => html.to_owned(),
    };
    Converted { title, markdown }
}

/// The text of the first `<title>` element, with entities decoded and whitespace collapsed.
fn title(html: &str) -> Option<String> {
    let lower = html.to_ascii_lowercase();
    let open = lower.find("<title")?;
    let content_start = open + lower[open..].find('>')? + 1;
    let content_end = content_start + lower[content_start..].find("</title")?;
    let raw = &html[content_start..content_end];
    let text = htmd::HtmlToMarkdown::new()
        .convert(&format!("<p>{raw}</p>"))
        .unwrap_or_else(|_| raw.to_owned());
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    (!text.is_empty()).then_some(text)
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
    fn no_title_is_none() {
        assert_eq!(to_markdown("<p>x</p>").title, None);
        assert_eq!(to_markdown("<title>  </title><p>x</p>").title, None);
    }
}
