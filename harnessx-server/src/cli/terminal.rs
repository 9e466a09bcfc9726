//! What the CLI prints that it did not write itself — model text, tool arguments and results,
//! questions, option labels, server messages — with control characters made visible, so no
//! tool or model can drive the terminal (set the clipboard with OSC 52, retitle or clear it).

use std::borrow::Cow;
use std::fmt::Write;

/// `text` with every control character but newline and tab shown as an escape (`\u{1b}`):
/// C0 controls, DEL and the C1 controls a terminal also obeys.
///
/// ```
/// use harnessx_server::cli::shown;
/// assert_eq!(shown("plain\ttext\n"), "plain\ttext\n");
/// assert_eq!(shown("\u{1b}]52;c;aGk=\u{7}x"), "\\u{1b}]52;c;aGk=\\u{7}x");
/// ```
pub fn shown(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_hostile) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_hostile(c) {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `text` as a shell word: as it is when it needs no quoting, else in single quotes.
///
/// ```
/// use harnessx_server::cli::quoted;
/// assert_eq!(quoted("runs.db"), "runs.db");
/// assert_eq!(quoted("it's here"), "'it'\\''s here'");
/// ```
pub fn quoted(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_./:@%+=,-".contains(c));
    if plain {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

fn is_hostile(c: char) -> bool {
    c.is_control() && c != '\n' && c != '\t'
}

#[cfg(test)]
mod tests {
    use super::shown;

    #[test]
    fn every_control_but_newline_and_tab_is_made_visible() {
        assert_eq!(shown("a\rb"), "a\\u{d}b");
        assert_eq!(shown("\u{9b}2J"), "\\u{9b}2J");
        assert_eq!(shown("\u{7f}"), "\\u{7f}");
        assert_eq!(shown("émoji 🙂"), "émoji 🙂");
    }
}
