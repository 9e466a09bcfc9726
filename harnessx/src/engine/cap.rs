//! The result cap: one result's text is cut to a byte budget on a character boundary.

use crate::output::ToolResult;

/// Cuts `result.content` to at most `max_bytes` bytes (marker included), on a character boundary,
/// sets `truncated`, and appends a marker saying how much was cut and how to get the rest.
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
    let total = result.content.len();
    if total <= max_bytes {
        return;
    }
    // Size the marker with the widest numbers it can hold, so the final text never exceeds the cap.
    let marker = |kept: usize| {
        format!(
            "\n\n[truncated: the result was {total} bytes; the first {kept} are shown and {} were cut. \
             Ask for less at a time (an offset, a limit, or a narrower query) to see the rest.]",
            total - kept
        )
    };
    let budget = max_bytes.saturating_sub(marker(max_bytes).len());
    let mut cut = budget.min(total);
    while !result.content.is_char_boundary(cut) {
        cut -= 1;
    }
    result.content.truncate(cut);
    if budget > 0 {
        result.content.push_str(&marker(cut));
    }
    result.truncated = true;
}
