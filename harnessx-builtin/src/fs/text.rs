//! Text shaping shared by the tools: cutting long lines and formatting byte counts.

/// The most characters of one line `read_file` shows before cutting it.
pub(crate) const MAX_LINE_CHARS: usize = 2_000;
/// The most characters of one matching line `grep` shows.
pub(crate) const MAX_PREVIEW_CHARS: usize = 300;

/// Cuts `line` to at most `max` characters, adding a marker that says how much was cut.
pub(crate) fn cut_line(line: &str, max: usize) -> String {
    match line.char_indices().nth(max) {
        None => line.to_owned(),
        Some((at, _)) => format!(
            "{}… [line cut: {} more bytes not shown]",
            &line[..at],
            line.len() - at
        ),
    }
}

/// A preview of a long matching line: a window of at most `max` characters that starts a little
/// before the match at byte `focus`, with markers on the cut sides.
pub(crate) fn preview(line: &str, focus: usize, max: usize) -> String {
    let total = line.chars().count();
    if total <= max {
        return line.to_owned();
    }
    let focus = focus.min(line.len());
    let focus_char = line.char_indices().take_while(|(i, _)| *i < focus).count();
    let start = focus_char.saturating_sub(max / 4).min(total - max);
    let window: String = line.chars().skip(start).take(max).collect();
    let before = if start > 0 { "…" } else { "" };
    let after = if start + max < total { "…" } else { "" };
    format!("{before}{window}{after} [long line: {total} characters, preview shown]")
}

/// `n` followed by `singular` or `plural`.
pub(crate) fn count(n: usize, singular: &str, plural: &str) -> String {
    if n == 1 {
        format!("1 {singular}")
    } else {
        format!("{n} {plural}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_line_marks_the_cut() {
        assert_eq!(cut_line("short", 10), "short");
        assert_eq!(
            cut_line("ééééé", 2),
            "éé… [line cut: 6 more bytes not shown]"
        );
    }

    #[test]
    fn preview_keeps_the_match_in_view() {
        let line = format!("{}NEEDLE{}", "a".repeat(1000), "b".repeat(1000));
        let p = preview(&line, 1000, 100);
        assert!(p.contains("NEEDLE"), "{p}");
        assert!(p.starts_with('…') && p.contains("… [long line: 2006 characters"));
    }
}
