//! Reading the doc comment: the tool description and the parameter documentation in an `Args:`
//! section or a rustdoc `# Arguments` list (doc lines are read by clap's rules).

use proc_macro2::Span;
use syn::{Attribute, Expr, Lit, Meta};

use crate::ctxt::Ctxt;

/// What the doc comment says.
#[derive(Debug, Default)]
pub struct Docs {
    /// The text before the first recognised section, multiple lines kept.
    pub description: String,
    /// The documented parameters, in the order written.
    pub args: Vec<ArgDoc>,
}

/// One documented parameter.
#[derive(Debug)]
pub struct ArgDoc {
    /// The name as written (without a raw-identifier prefix).
    pub name: String,
    /// The text, continuation lines joined by a space.
    pub text: String,
    /// The doc line that documents it.
    pub span: Span,
}

/// One line of the doc comment and the attribute it came from.
struct Line {
    text: String,
    span: Span,
}

impl Line {
    fn is_blank(&self) -> bool {
        self.text.trim().is_empty()
    }

    fn indent(&self) -> usize {
        self.text.len() - self.text.trim_start().len()
    }
}

/// The kinds of section a doc comment may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Section {
    /// Google style `Args:` (also `Arguments:`, `Parameters:`).
    Args,
    /// Rustdoc `# Arguments` with a list of ``* `name` - text`` items.
    RustdocArgs,
    /// Any other recognised section (`Returns:`, `# Examples`, ...): not part of the description.
    Other,
}

const GOOGLE_ARGS: &[&str] = &["Args", "Arguments", "Parameters", "Params"];
const GOOGLE_OTHER: &[&str] = &[
    "Returns", "Return", "Yields", "Raises", "Errors", "Examples", "Example", "Note", "Notes",
    "Panics", "Safety", "Warning", "Warnings",
];
const RUSTDOC_ARGS: &[&str] = &["Arguments", "Args", "Parameters"];
const RUSTDOC_OTHER: &[&str] = &[
    "Returns", "Errors", "Examples", "Example", "Panics", "Safety", "Notes",
];

/// Reads the doc comment from the function's attributes.
pub fn parse(attrs: &[Attribute], errors: &mut Ctxt) -> Docs {
    let lines = doc_lines(attrs);
    let mut docs = Docs::default();

    // Split into the description and the sections, outside code fences.
    let mut description: Vec<&Line> = Vec::new();
    let mut sections: Vec<(Section, &Line, Vec<&Line>)> = Vec::new();
    let mut in_fence = false;
    for line in &lines {
        let trimmed = line.text.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
        }
        let header = if in_fence {
            None
        } else {
            section_of(&line.text)
        };
        match (header, sections.last_mut()) {
            (Some(kind), _) => sections.push((kind, line, Vec::new())),
            (None, Some((_, _, body))) => body.push(line),
            (None, None) => description.push(line),
        }
    }
    docs.description = join_paragraphs(&description);

    for (kind, header, body) in sections {
        match kind {
            Section::Args => parse_google_args(header, &body, &mut docs.args, errors),
            Section::RustdocArgs => parse_rustdoc_args(&body, &mut docs.args, errors),
            Section::Other => {}
        }
    }
    docs
}

/// The doc attributes as lines: one leading space stripped, trailing whitespace dropped.
fn doc_lines(attrs: &[Attribute]) -> Vec<Line> {
    let mut lines = Vec::new();
    for attr in attrs {
        let Meta::NameValue(nv) = &attr.meta else {
            continue;
        };
        if !nv.path.is_ident("doc") {
            continue;
        }
        let Expr::Lit(expr) = &nv.value else {
            continue;
        };
        let Lit::Str(s) = &expr.lit else {
            continue;
        };
        for raw in s.value().split('\n') {
            let raw = raw.strip_suffix('\r').unwrap_or(raw);
            let text = raw.strip_prefix(' ').unwrap_or(raw).trim_end();
            lines.push(Line {
                text: text.to_owned(),
                span: s.span(),
            });
        }
    }
    lines
}

fn section_of(text: &str) -> Option<Section> {
    let t = text.trim();
    if let Some(head) = t.strip_suffix(':') {
        if GOOGLE_ARGS.contains(&head) {
            return Some(Section::Args);
        }
        if GOOGLE_OTHER.contains(&head) {
            return Some(Section::Other);
        }
        return None;
    }
    let hashes = t.bytes().take_while(|&b| b == b'#').count();
    if (1..=6).contains(&hashes) && t[hashes..].starts_with(' ') {
        let head = t[hashes..].trim();
        if RUSTDOC_ARGS.contains(&head) {
            return Some(Section::RustdocArgs);
        }
        if RUSTDOC_OTHER.contains(&head) {
            return Some(Section::Other);
        }
    }
    None
}

/// Drops leading and trailing blank lines and keeps the rest as written.
fn join_paragraphs(lines: &[&Line]) -> String {
    let start = lines.iter().position(|l| !l.is_blank());
    let end = lines.iter().rposition(|l| !l.is_blank());
    match (start, end) {
        (Some(s), Some(e)) => lines[s..=e]
            .iter()
            .map(|l| l.text.as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// `name: text` or `name (type): text`; `None` when the line has another shape.
fn google_entry(text: &str) -> Option<(String, String)> {
    let t = text.trim();
    let name_len = ident_len(t)?;
    let (name, rest) = t.split_at(name_len);
    let mut rest = rest.trim_start();
    if let Some(after_paren) = rest.strip_prefix('(') {
        let close = after_paren.find(')')?;
        rest = after_paren[close + 1..].trim_start();
    }
    let text = rest.strip_prefix(':')?.trim();
    Some((strip_raw(name), text.to_owned()))
}

/// The length of a leading identifier (`r#` prefix allowed), if the text starts with one.
fn ident_len(t: &str) -> Option<usize> {
    let body = t.strip_prefix("r#").unwrap_or(t);
    let prefix = t.len() - body.len();
    let mut chars = body.char_indices();
    let (_, first) = chars.next()?;
    if !(first == '_' || first.is_alphabetic()) {
        return None;
    }
    let end = chars
        .find(|(_, c)| !(c.is_alphanumeric() || *c == '_'))
        .map_or(body.len(), |(i, _)| i);
    Some(prefix + end)
}

fn strip_raw(name: &str) -> String {
    name.strip_prefix("r#").unwrap_or(name).to_owned()
}

fn parse_google_args(header: &Line, body: &[&Line], args: &mut Vec<ArgDoc>, errors: &mut Ctxt) {
    let header_indent = header.indent();
    let mut entry_indent: Option<usize> = None;
    let mut current: Option<usize> = None;
    for line in body {
        if line.is_blank() {
            current = None;
            continue;
        }
        let indent = line.indent();
        let entry = google_entry(&line.text);
        match entry_indent {
            Some(ei) if indent > ei => match current {
                Some(i) => append(&mut args[i].text, line.text.trim()),
                None => errors.at(
                    line.span,
                    "this line in `Args:` belongs to no parameter: start it with \
                         `name: description`, or indent it under the entry it continues",
                ),
            },
            Some(ei) if indent < ei && indent <= header_indent => return,
            None if indent <= header_indent && entry.is_none() => return,
            _ => {
                entry_indent.get_or_insert(indent);
                current = push_entry(
                    args,
                    entry,
                    line,
                    "write each `Args:` entry as `name: description` (or \
                     `name (type): description`), and indent continuation lines under their \
                     entry",
                    errors,
                );
            }
        }
    }
}

/// ``* `name` - text`` (also `-`/`+` bullets, a bare name, and `:`/`–`/`—` separators).
fn rustdoc_item(rest: &str) -> Option<(String, String)> {
    let rest = rest.trim();
    let (name, after) = if let Some(quoted) = rest.strip_prefix('`') {
        let close = quoted.find('`')?;
        let name = quoted[..close].trim();
        if ident_len(name) != Some(name.len()) {
            return None;
        }
        (name, &quoted[close + 1..])
    } else {
        let len = ident_len(rest)?;
        rest.split_at(len)
    };
    let after = after.trim_start();
    let text = if after.is_empty() {
        ""
    } else {
        ["-", ":", "–", "—"]
            .iter()
            .find_map(|sep| after.strip_prefix(sep))?
            .trim()
    };
    Some((strip_raw(name), text.to_owned()))
}

fn parse_rustdoc_args(body: &[&Line], args: &mut Vec<ArgDoc>, errors: &mut Ctxt) {
    let mut current: Option<usize> = None;
    for line in body {
        if line.is_blank() {
            current = None;
            continue;
        }
        let trimmed = line.text.trim_start();
        let bullet = ["* ", "- ", "+ "]
            .iter()
            .find_map(|b| trimmed.strip_prefix(b));
        match bullet {
            Some(rest) => {
                current = push_entry(
                    args,
                    rustdoc_item(rest),
                    line,
                    "write each `# Arguments` item as ``* `name` - description``",
                    errors,
                );
            }
            None => match current {
                Some(i) if line.indent() > 0 => append(&mut args[i].text, trimmed),
                _ => current = None,
            },
        }
    }
}

/// Records a parsed entry and returns its index, or records how to write the line.
fn push_entry(
    args: &mut Vec<ArgDoc>,
    entry: Option<(String, String)>,
    line: &Line,
    fix: &str,
    errors: &mut Ctxt,
) -> Option<usize> {
    match entry {
        Some((name, text)) => {
            args.push(ArgDoc {
                name,
                text,
                span: line.span,
            });
            Some(args.len() - 1)
        }
        None => {
            errors.at(line.span, fix);
            None
        }
    }
}

fn append(text: &mut String, more: &str) {
    if !text.is_empty() {
        text.push(' ');
    }
    text.push_str(more);
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::parse_quote;

    fn read(item: syn::ItemFn) -> (Docs, Vec<String>) {
        let mut errors = Ctxt::new();
        let docs = parse(&item.attrs, &mut errors);
        let messages = errors.messages();
        (docs, messages)
    }

    fn pairs(docs: &Docs) -> Vec<(&str, &str)> {
        docs.args
            .iter()
            .map(|a| (a.name.as_str(), a.text.as_str()))
            .collect()
    }

    #[test]
    fn google_args_with_types_and_continuations() {
        let (docs, errors) = read(parse_quote! {
            /// Fetch a page.
            /// Keeps the text only.
            ///
            /// Second paragraph.
            ///
            /// Args:
            ///     url (str): The address
            ///         to fetch.
            ///     max_length: Cap on the text.
            ///
            /// Returns:
            ///     The text.
            fn f() {}
        });
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(
            docs.description,
            "Fetch a page.\nKeeps the text only.\n\nSecond paragraph."
        );
        assert_eq!(
            pairs(&docs),
            [
                ("url", "The address to fetch."),
                ("max_length", "Cap on the text.")
            ]
        );
    }

    #[test]
    fn rustdoc_arguments_list() {
        let (docs, errors) = read(parse_quote! {
            /// Search the web.
            ///
            /// # Arguments
            ///
            /// * `query` - What to look for,
            ///   in plain words.
            /// * `r#type` - Result kind.
            /// - limit: How many.
            ///
            /// # Examples
            ///
            /// ```
            /// # Arguments
            /// * `nope` - inside a fence
            /// ```
            fn f() {}
        });
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(docs.description, "Search the web.");
        assert_eq!(
            pairs(&docs),
            [
                ("query", "What to look for, in plain words."),
                ("type", "Result kind."),
                ("limit", "How many.")
            ]
        );
    }

    #[test]
    fn no_sections_keeps_everything() {
        let (docs, _) = read(parse_quote! {
            ///
            ///  Indented line.
            /// Note: this is not a header.
            ///
            fn f() {}
        });
        assert_eq!(
            docs.description,
            " Indented line.\nNote: this is not a header."
        );
        assert!(docs.args.is_empty());
    }

    #[test]
    fn malformed_entries_are_errors() {
        let (_, errors) = read(parse_quote! {
            /// Do it.
            ///
            /// Args:
            ///     a - no colon
            ///     b: fine
            fn f() {}
        });
        assert_eq!(errors.len(), 1);
        assert!(errors[0].starts_with("write each `Args:` entry as `name: description`"));

        let (_, errors) = read(parse_quote! {
            /// # Arguments
            /// * `a` = wrong separator
            fn f() {}
        });
        assert_eq!(
            errors,
            ["write each `# Arguments` item as ``* `name` - description``"]
        );
    }

    #[test]
    fn args_section_ends_at_outdented_text() {
        let (docs, errors) = read(parse_quote! {
            /// Do it.
            ///
            /// Args:
            ///     a: First.
            /// Trailing prose that is not an entry.
            fn f() {}
        });
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(pairs(&docs), [("a", "First.")]);
    }

    #[test]
    fn block_doc_comments_split_into_lines() {
        let (docs, errors) = read(parse_quote! {
            #[doc = "\n Add things.\n\n Args:\n     x: The x.\n"]
            fn f() {}
        });
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(docs.description, "Add things.");
        assert_eq!(pairs(&docs), [("x", "The x.")]);
    }
}
