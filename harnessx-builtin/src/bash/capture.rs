//! Output capping: keep the head and the tail of a command's output, count what is cut between.

use std::collections::VecDeque;

/// Collects a stream of output bytes in bounded memory: the first `head` bytes and the last
/// `tail` bytes are kept, everything between is only counted.
///
/// ```
/// use harnessx_builtin::bash::OutputCapture;
/// let mut capture = OutputCapture::new(10);
/// capture.push(b"line 1\nline 2\nline 3\nline 4\n");
/// let out = capture.finish();
/// assert_eq!(out.total_bytes, 28);
/// assert!(out.omitted_bytes > 0);
/// assert!(out.text.starts_with("line "));
/// assert!(out.text.contains("bytes"));
/// ```
#[derive(Debug, Clone)]
pub struct OutputCapture {
    head: Vec<u8>,
    head_limit: usize,
    tail: VecDeque<u8>,
    tail_limit: usize,
    total_bytes: u64,
    total_newlines: u64,
}

/// A command's output as the model sees it: the kept head and tail with a line between them
/// saying how much was omitted.
///
/// ```
/// use harnessx_builtin::bash::OutputCapture;
/// let mut capture = OutputCapture::new(1000);
/// capture.push(b"done\n");
/// let out = capture.finish();
/// assert_eq!((out.text.as_str(), out.total_lines, out.omitted_bytes), ("done\n", 1, 0));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapturedOutput {
    /// The text shown: the whole output, or its head, an omission line and its tail.
    pub text: String,
    /// How many bytes the command wrote in all.
    pub total_bytes: u64,
    /// How many lines the command wrote in all (a last line without a newline counts).
    pub total_lines: u64,
    /// How many bytes were cut from the middle (0 when everything is shown).
    pub omitted_bytes: u64,
    /// How many line breaks fell in the omitted part.
    pub omitted_lines: u64,
    /// The output was not valid UTF-8; invalid bytes are shown as U+FFFD.
    pub lossy_utf8: bool,
}

impl OutputCapture {
    /// A capture that keeps at most `max_bytes` bytes: the first half and the last half.
    pub fn new(max_bytes: usize) -> Self {
        let head_limit = max_bytes / 2;
        let tail_limit = max_bytes - head_limit;
        Self {
            head: Vec::with_capacity(head_limit.min(64 * 1024)),
            head_limit,
            tail: VecDeque::with_capacity(tail_limit.min(64 * 1024)),
            tail_limit,
            total_bytes: 0,
            total_newlines: 0,
        }
    }

    /// Adds a chunk of output.
    pub fn push(&mut self, mut bytes: &[u8]) {
        self.total_bytes += bytes.len() as u64;
        self.total_newlines += count_newlines(bytes) as u64;
        let room = self.head_limit - self.head.len();
        if room > 0 {
            let take = room.min(bytes.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        if bytes.len() >= self.tail_limit {
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - self.tail_limit..]);
        } else {
            let overflow = (self.tail.len() + bytes.len()).saturating_sub(self.tail_limit);
            self.tail.drain(..overflow);
            self.tail.extend(bytes);
        }
    }

    /// How many bytes were pushed so far.
    pub fn total_bytes(&self) -> u64 {
        self.total_bytes
    }

    /// The text to show, with the omission line when output was cut.
    pub fn finish(self) -> CapturedOutput {
        let kept = self.head.len() as u64 + self.tail.len() as u64;
        let total_lines = self.total_newlines
            + u64::from(
                self.tail
                    .back()
                    .or(self.head.last())
                    .is_some_and(|&b| b != b'\n'),
            );
        let mut head = self.head;
        let mut tail: Vec<u8> = self.tail.into();
        if kept == self.total_bytes {
            head.append(&mut tail);
            let (text, lossy_utf8) = decode(&head);
            return CapturedOutput {
                text,
                total_bytes: self.total_bytes,
                total_lines,
                omitted_bytes: 0,
                omitted_lines: 0,
                lossy_utf8,
            };
        }
        // Cut on character boundaries so the kept parts do not end or start mid-character.
        let head_cut = utf8_complete_prefix(&head);
        let tail_skip = tail
            .iter()
            .take(3)
            .take_while(|&&b| (0x80..0xC0).contains(&b))
            .count();
        let shown_newlines = count_newlines(&head[..head_cut]) + count_newlines(&tail[tail_skip..]);
        let omitted_bytes = self.total_bytes - head_cut as u64 - (tail.len() - tail_skip) as u64;
        let omitted_lines = self.total_newlines - shown_newlines as u64;
        let (head_text, lossy_head) = decode(&head[..head_cut]);
        let (tail_text, lossy_tail) = decode(&tail[tail_skip..]);
        let mut text = head_text;
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!(
            "[... {omitted_bytes} bytes ({omitted_lines} lines) omitted from the middle of the \
             output; {} bytes in all. To see them, send the output to a file and read it in parts, \
             or filter it with grep, head or tail ...]\n",
            self.total_bytes
        ));
        text.push_str(&tail_text);
        CapturedOutput {
            text,
            total_bytes: self.total_bytes,
            total_lines,
            omitted_bytes,
            omitted_lines,
            lossy_utf8: lossy_head || lossy_tail,
        }
    }
}

fn count_newlines(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| b == b'\n').count()
}

fn decode(bytes: &[u8]) -> (String, bool) {
    match String::from_utf8_lossy(bytes) {
        std::borrow::Cow::Borrowed(s) => (s.to_owned(), false),
        std::borrow::Cow::Owned(s) => (s, true),
    }
}

/// The length of `bytes` without a UTF-8 sequence cut off at its end.
fn utf8_complete_prefix(bytes: &[u8]) -> usize {
    let len = bytes.len();
    for back in 1..=3.min(len) {
        let b = bytes[len - back];
        if b < 0x80 {
            return len;
        }
        if b >= 0xC0 {
            let needed = match b {
                0xC0..=0xDF => 2,
                0xE0..=0xEF => 3,
                _ => 4,
            };
            return if needed > back { len - back } else { len };
        }
    }
    len
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_output_is_kept_whole() {
        let mut c = OutputCapture::new(100);
        c.push(b"a\nb");
        let out = c.finish();
        assert_eq!(out.text, "a\nb");
        assert_eq!(out.total_lines, 2);
        assert_eq!(out.omitted_bytes, 0);
        assert!(!out.lossy_utf8);
    }

    #[test]
    fn counts_are_exact_across_chunks() {
        let mut c = OutputCapture::new(20);
        let data: Vec<u8> = (0..100)
            .flat_map(|i| format!("{i}\n").into_bytes())
            .collect();
        for chunk in data.chunks(7) {
            c.push(chunk);
        }
        let out = c.finish();
        assert_eq!(out.total_bytes, 290);
        assert_eq!(out.total_lines, 100);
        // head: "0\n1\n2\n3\n4\n" (10 bytes), tail: "\n97\n98\n99\n" (10 bytes)
        assert!(
            out.text
                .starts_with("0\n1\n2\n3\n4\n[... 270 bytes (91 lines) omitted")
        );
        assert!(out.text.ends_with("...]\n\n97\n98\n99\n"), "{:?}", out.text);
        assert_eq!(out.omitted_bytes, 270);
        assert_eq!(out.omitted_lines, 91);
    }

    #[test]
    fn cuts_never_split_a_character() {
        let mut c = OutputCapture::new(7);
        c.push("ééééééééé".as_bytes());
        let out = c.finish();
        assert!(!out.lossy_utf8, "{:?}", out.text);
        // head keeps 3 bytes: one whole "é" and half of the next, which is dropped
        assert!(out.text.starts_with("é\n[... 12 bytes"), "{:?}", out.text);
        assert!(out.text.ends_with("...]\néé"), "{:?}", out.text);
        assert_eq!(out.omitted_bytes, 12);
    }

    #[test]
    fn invalid_bytes_are_replaced_and_flagged() {
        let mut c = OutputCapture::new(100);
        c.push(b"ok \xff end");
        let out = c.finish();
        assert_eq!(out.text, "ok \u{FFFD} end");
        assert!(out.lossy_utf8);
    }
}
