//! How memories read to the model: one header line per memory (id, UTC time, tags), then text.

use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use super::Memory;

/// Characters of content `list_memories` shows per memory.
pub(crate) const PREVIEW_CHARS: usize = 200;

/// `[12] 2026-11-30 17:03 UTC · tags: ops, vault` followed by the content (or a preview of it).
pub(crate) fn memory(out: &mut String, memory: &Memory, preview: bool) {
    let _ = write!(out, "[{}] {}", memory.id, utc(memory.created_at));
    if !memory.tags.is_empty() {
        let _ = write!(out, " · tags: {}", memory.tags.join(", "));
    }
    out.push('\n');
    let total = memory.content.chars().count();
    if preview && total > PREVIEW_CHARS {
        let head: String = memory.content.chars().take(PREVIEW_CHARS).collect();
        let _ = write!(
            out,
            "{head}… ({} more characters; search_memories shows the full text)",
            total - PREVIEW_CHARS
        );
    } else {
        out.push_str(&memory.content);
    }
    out.push('\n');
}

/// `YYYY-MM-DD HH:MM UTC`.
pub(crate) fn utc(t: SystemTime) -> String {
    let secs = t
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        rem / 3600,
        (rem % 3600) / 60
    )
}

/// Days since 1970-01-01 → (year, month, day) in the proleptic Gregorian calendar
/// (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn formats_utc_dates() {
        assert_eq!(utc(UNIX_EPOCH), "1970-01-01 00:00 UTC");
        // 2026-11-30 17:03:59 UTC
        assert_eq!(
            utc(UNIX_EPOCH + Duration::from_secs(1_796_058_239)),
            "2026-11-30 17:03 UTC"
        );
        // A leap day.
        assert_eq!(
            utc(UNIX_EPOCH + Duration::from_secs(951_782_400)),
            "2000-02-29 00:00 UTC"
        );
    }
}
