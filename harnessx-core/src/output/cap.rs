//! The result cap: one result's text is cut to a byte budget on a character boundary, and
//! structured content larger than the budget is dropped. Also the shortening of the model's own
//! input (a name, a field, a value) when an error message quotes it back.

use std::borrow::Cow;

use crate::output::ToolResult;

/// How many characters of the model's own input an error message quotes before shortening it.
const ECHO_CHARS: usize = 200;

/// The model's input as an error message quotes it: whole when it is at most 200 characters,
/// else its first 200 characters followed by `… (N bytes)`, N being the whole input's size.
pub(crate) fn echo(text: &str) -> Cow<'_, str> {
    match text.char_indices().nth(ECHO_CHARS) {
        None => Cow::Borrowed(text),
        Some((cut, _)) => Cow::Owned(format!("{}… ({} bytes)", &text[..cut], text.len())),
    }
}

/// Cuts `result.content` to at most `max_bytes` bytes (marker included), on a character boundary,
/// sets `truncated`, and appends a marker saying how much was cut and how to get the rest.
/// Structured content whose JSON is larger than `max_bytes` is dropped (and the result flagged
/// `truncated`): it cannot be cut without breaking it, and the text already carries the answer.
///
/// ```
/// use harnessx::{ToolResult, ToolOutput, truncate_result};
/// let mut r = ToolResult::success("c1", "t", ToolOutput::text("é".repeat(1000)));
/// truncate_result(&mut r, 500);
/// assert!(r.truncated);
/// assert!(r.content.len() <= 500);
/// assert!(r.content.contains("[truncated:"));
/// ```
pub fn truncate_result(result: &mut ToolResult, max_bytes: usize) {
    if result
        .structured
        .as_ref()
        .is_some_and(|v| json_len_exceeds(v, max_bytes))
    {
        result.structured = None;
        result.truncated = true;
    }
    let total = result.content.len();
    if total <= max_bytes {
        return;
    }
    let marker = |kept: usize, cut: usize| {
        format!(
            "\n\n[truncated: the result was {total} bytes; the first {kept} are shown and {cut} were cut. \
             Ask for less at a time (an offset, a limit, or a narrower query) to see the rest.]"
        )
    };
    // Size the marker with the widest numbers it can hold (kept ≤ max_bytes, cut ≤ total), so
    // the final text never exceeds the cap.
    let widest = marker(max_bytes, total).len();
    let mut cut = if widest < max_bytes {
        max_bytes - widest
    } else {
        max_bytes
    };
    while !result.content.is_char_boundary(cut) {
        cut -= 1;
    }
    result.content.truncate(cut);
    if widest < max_bytes {
        result.content.push_str(&marker(cut, total - cut));
    }
    result.truncated = true;
}

/// Whether `value` serialises to more than `limit` bytes, without building the whole text.
fn json_len_exceeds(value: &serde_json::Value, limit: usize) -> bool {
    struct Counter {
        written: usize,
        limit: usize,
    }
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.written += buf.len();
            if self.written > self.limit {
                // Stop serialising as soon as the limit is passed.
                return Err(std::io::Error::other("limit passed"));
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter { written: 0, limit };
    serde_json::to_writer(&mut counter, value).is_err()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ToolOutput;

    #[test]
    fn echoed_input_keeps_200_characters_and_names_the_whole_size() {
        assert_eq!(echo("read_file"), "read_file");
        let exact = "é".repeat(200);
        assert_eq!(echo(&exact), exact);
        let long = "é".repeat(1_000);
        assert_eq!(echo(&long), format!("{}… (2000 bytes)", "é".repeat(200)));
    }

    #[test]
    fn the_cap_holds_at_every_size_near_it() {
        for total in [65_537, 65_600, 99_999, 100_000, 1_000_000] {
            let mut r = ToolResult::success("c", "t", ToolOutput::text("x".repeat(total)));
            truncate_result(&mut r, 65_536);
            assert!(r.content.len() <= 65_536, "{total}: {}", r.content.len());
            assert!(r.truncated);
        }
        // A cap too small for the marker still cuts the text to the cap, without a marker.
        let mut r = ToolResult::success("c", "t", ToolOutput::text("y".repeat(500)));
        truncate_result(&mut r, 50);
        assert_eq!(r.content, "y".repeat(50));
        assert!(r.truncated);
    }

    #[test]
    fn oversized_structured_content_is_dropped_and_flagged() {
        let big = serde_json::json!({"rows": vec!["x".repeat(100); 50]});
        let mut r = ToolResult::success(
            "c",
            "t",
            ToolOutput::text("5000 bytes of rows").with_structured(big),
        );
        truncate_result(&mut r, 1_000);
        assert!(r.structured.is_none());
        assert!(r.truncated);
        assert_eq!(r.content, "5000 bytes of rows");

        let small = serde_json::json!({"rows": 3});
        let mut r = ToolResult::success(
            "c",
            "t",
            ToolOutput::text("3 rows").with_structured(small.clone()),
        );
        truncate_result(&mut r, 1_000);
        assert_eq!(r.structured, Some(small));
        assert!(!r.truncated);
    }
}
