//! What `grep` feeds its searcher: a file's bytes with every line cut to [`MAX_LINE_BYTES`], read
//! in chunks that each check the call's cancellation first.
//!
//! A regular expression runs over a whole line at once, so one huge line (a 5 MB minified file)
//! would let a costly pattern run for minutes without a chance to stop. Cutting lines bounds the
//! work between two checks of the cancellation token; the newline that ends a cut line is kept,
//! so line numbers stay right.

use std::io::{self, Read};

use tokio_util::sync::CancellationToken;

/// The most bytes of one line that `grep` searches; the rest of a longer line is skipped, and
/// the result says how many lines were cut.
pub(crate) const MAX_LINE_BYTES: usize = 64 * 1024;

/// The error a read returns once the call is cancelled; the search stops with it.
pub(crate) fn cancelled() -> io::Error {
    io::Error::other("the search was cancelled")
}

/// A reader that cuts every line of `inner` to `max` bytes and stops once `cancel` fires.
pub(crate) struct LineCap<'c, R> {
    inner: R,
    max: usize,
    cancel: &'c CancellationToken,
    /// Bytes of the current line passed on so far.
    line: usize,
    /// The current line was cut: its bytes are dropped up to the next newline.
    skipping: bool,
    /// How many lines were cut.
    cut: usize,
}

impl<'c, R: Read> LineCap<'c, R> {
    /// Wraps `inner`, cutting lines to `max` bytes.
    pub(crate) fn new(inner: R, max: usize, cancel: &'c CancellationToken) -> Self {
        LineCap {
            inner,
            max,
            cancel,
            line: 0,
            skipping: false,
            cut: 0,
        }
    }

    /// How many lines were longer than the cap and searched only in their first bytes.
    pub(crate) fn cut_lines(&self) -> usize {
        self.cut
    }

    /// Reads at most `len` bytes (the file's length when it was opened) into `buf`, replacing
    /// its contents, with every line cut to the cap, as the reader would give them.
    pub(crate) fn read_capped(&mut self, buf: &mut Vec<u8>, len: u64) -> io::Result<()> {
        if self.cancel.is_cancelled() {
            return Err(cancelled());
        }
        let len = usize::try_from(len).map_err(io::Error::other)?;
        buf.clear();
        buf.resize(len, 0);
        let mut filled = 0;
        while filled < len {
            match self.inner.read(&mut buf[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        let kept = self.filter(&mut buf[..filled]);
        buf.truncate(kept);
        Ok(())
    }

    /// Keeps what may be searched of `buf` at its front and returns its length.
    fn filter(&mut self, buf: &mut [u8]) -> usize {
        if !self.skipping && self.line + buf.len() <= self.max {
            // No line can reach the cap within this chunk (the common case: every chunk of a
            // file with short lines): pass it on whole, noting where its last line stands.
            self.line = match memchr::memrchr(b'\n', buf) {
                Some(at) => buf.len() - at - 1,
                None => self.line + buf.len(),
            };
            return buf.len();
        }
        let (mut read, mut write) = (0, 0);
        while read < buf.len() {
            let rest = &buf[read..];
            let end = memchr::memchr(b'\n', rest);
            let segment = end.unwrap_or(rest.len());
            let keep = if self.skipping {
                0
            } else {
                let room = self.max - self.line;
                if segment > room {
                    self.skipping = true;
                    self.cut += 1;
                }
                segment.min(room)
            };
            if read != write {
                buf.copy_within(read..read + keep, write);
            }
            write += keep;
            self.line += keep;
            read += segment;
            if end.is_some() {
                buf[write] = b'\n';
                write += 1;
                read += 1;
                self.line = 0;
                self.skipping = false;
            }
        }
        write
    }
}

impl<R: Read> Read for LineCap<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            if self.cancel.is_cancelled() {
                return Err(cancelled());
            }
            let n = self.inner.read(buf)?;
            if n == 0 {
                return Ok(0);
            }
            let kept = self.filter(&mut buf[..n]);
            if kept > 0 {
                return Ok(kept);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    fn capped(text: &[u8], max: usize, chunk: usize) -> (Vec<u8>, usize) {
        struct Chunks<'a>(&'a [u8], usize);
        impl Read for Chunks<'_> {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let n = self.0.len().min(self.1).min(buf.len());
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let token = CancellationToken::new();
        let mut reader = LineCap::new(Chunks(text, chunk), max, &token);
        let mut out = Vec::new();
        reader.read_to_end(&mut out).expect("an in-memory read");
        (out, reader.cut_lines())
    }

    #[test]
    fn long_lines_are_cut_and_counted_whatever_the_chunk_size() {
        let text = b"short\n0123456789abcdef\nok\n0123456789\nlast-no-newline-long";
        for chunk in [1, 3, 7, 64] {
            let (out, cut) = capped(text, 10, chunk);
            assert_eq!(
                String::from_utf8(out).expect("utf-8"),
                "short\n0123456789\nok\n0123456789\nlast-no-ne",
                "chunk {chunk}"
            );
            assert_eq!(cut, 2, "chunk {chunk}");
        }
    }

    #[test]
    fn a_whole_read_cuts_lines_like_the_stream() {
        let text = b"short\n0123456789abcdef\nok\n0123456789\nlast-no-newline-long";
        let token = CancellationToken::new();
        let mut reader = LineCap::new(&text[..], 10, &token);
        let mut buf = b"stale".to_vec();
        reader
            .read_capped(&mut buf, text.len() as u64)
            .expect("an in-memory read");
        assert_eq!(buf, capped(text, 10, 64).0);
        assert_eq!(reader.cut_lines(), 2);
        // Only the length known when the file was opened is read.
        let mut reader = LineCap::new(&text[..], 10, &token);
        reader.read_capped(&mut buf, 5).expect("an in-memory read");
        assert_eq!(buf, b"short");
        token.cancel();
        let mut reader = LineCap::new(&text[..], 10, &token);
        let err = reader.read_capped(&mut buf, 5).unwrap_err();
        assert_eq!(err.to_string(), "the search was cancelled");
    }

    /// An endless line: without the cancellation check, the search below would never end.
    struct Endless(Arc<AtomicU64>);

    impl Read for Endless {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.0.fetch_add(1, Ordering::SeqCst);
            buf.fill(b'a');
            Ok(buf.len())
        }
    }

    #[test]
    fn a_search_of_an_endless_line_stops_once_cancelled() {
        use grep_regex::RegexMatcher;
        use grep_searcher::{SearcherBuilder, sinks::UTF8};

        let reads = Arc::new(AtomicU64::new(0));
        let token = CancellationToken::new();
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let (searcher_reads, searcher_token) = (Arc::clone(&reads), token.clone());
        std::thread::spawn(move || {
            let matcher = RegexMatcher::new_line_matcher("b").expect("a valid pattern");
            let reader = LineCap::new(Endless(searcher_reads), MAX_LINE_BYTES, &searcher_token);
            let result = SearcherBuilder::new().build().search_reader(
                &matcher,
                reader,
                UTF8(|_, _| Ok(true)),
            );
            let _ = done_tx.send(result.map_err(|e| e.to_string()));
        });
        while reads.load(Ordering::SeqCst) < 10 {
            std::thread::yield_now();
        }
        token.cancel();
        let result = done_rx
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("the search stopped after the cancellation");
        assert_eq!(result, Err("the search was cancelled".to_owned()));
    }
}
