//! The tap on a stdio server's stdout: the tools whose listing says they need the tasks API, and
//! replies too large for the transport, replaced by an error reply to the request they answer.

use std::collections::HashSet;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, ready};

use memchr::memmem;
use rmcp::model::ErrorData;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, ReadBuf};
use tokio::process::ChildStdout;

/// The longest stdout line the tap inspects for task-only tools; longer lines pass unread.
const TAP_MAX_LINE: usize = 4 * 1024 * 1024;
/// The largest message read from a server's stdout (rmcp's default, set explicitly). The tap
/// hands the transport no line this long: it replaces the line with an error reply to the
/// request it answers, so the call fails at once, naming its size.
pub(crate) const MAX_MESSAGE_BYTES: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;
/// An oversized reply that has not ended by this many bytes is answered without waiting for its
/// end, so a server that never ends its line cannot hold a call until its time limit.
const OVERSIZED_REPORT_BYTES: u64 = 4 * MAX_MESSAGE_BYTES as u64;
/// Bytes kept of the start and the end of an oversized line, to find its `id`.
const ID_SCAN_BYTES: usize = 8 * 1024;
/// The JSON-RPC error code of the stand-in for an oversized reply (implementation-defined range).
const OVERSIZED_CODE: i32 = -32_099;
/// The key under `error.data` of that stand-in: `{"bytes": n, "complete": bool}`.
const OVERSIZED_KEY: &str = "harnessx/oversized";

/// What the tap shares with its connection: the names of tools whose listing said
/// `execution.taskSupport: "required"`, and how many tool listings are in flight. The tap
/// searches a line for that field only when the line starts while a listing is in flight, so
/// a call's reply passes with no search and a long reply split across reads is not copied.
#[derive(Default)]
pub(crate) struct TaskTools {
    names: Mutex<HashSet<String>>,
    listings: AtomicUsize,
}

/// [`TaskTools`], shared.
pub(crate) type TaskRequired = Arc<TaskTools>;

impl TaskTools {
    /// The names of the tools that need the tasks API.
    pub(crate) fn names(&self) -> MutexGuard<'_, HashSet<String>> {
        self.names.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Marks a tool listing in flight until the returned guard is dropped: from before its
    /// request is sent until its reply was read (or the listing was given up).
    pub(crate) fn listing(&self) -> Listing<'_> {
        self.listings.fetch_add(1, Ordering::SeqCst);
        Listing(self)
    }

    fn listing_in_flight(&self) -> bool {
        self.listings.load(Ordering::SeqCst) > 0
    }
}

/// A tool listing in flight (see [`TaskTools::listing`]).
pub(crate) struct Listing<'a>(&'a TaskTools);

impl Drop for Listing<'_> {
    fn drop(&mut self) {
        self.0.listings.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A reply too large for the transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OversizedReply {
    /// Its size in bytes, or what had arrived when it was answered.
    pub(crate) bytes: u64,
    /// Whether the whole line had arrived (else it is at least `bytes` long).
    pub(crate) complete: bool,
}

impl OversizedReply {
    /// The reply an error stands in for, when it is the tap's stand-in.
    pub(crate) fn of(error: &ErrorData) -> Option<Self> {
        if error.code.0 != OVERSIZED_CODE {
            return None;
        }
        let data = error.data.as_ref()?.get(OVERSIZED_KEY)?;
        Some(Self {
            bytes: data.get("bytes")?.as_u64()?,
            complete: data.get("complete")?.as_bool()?,
        })
    }

    /// The stand-in error reply to the request `id` (as written in the server's line), or
    /// `None` when that is not a JSON-RPC id.
    fn stand_in(self, id: &str) -> Option<Vec<u8>> {
        let id: Value = serde_json::from_str(id).ok()?;
        let reply = json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {
                "code": OVERSIZED_CODE,
                "message": format!(
                    "the reply was {}{} bytes, more than the {MAX_MESSAGE_BYTES} bytes read in one message",
                    if self.complete { "" } else { "more than " },
                    self.bytes
                ),
                "data": { OVERSIZED_KEY: { "bytes": self.bytes, "complete": self.complete } },
            },
        });
        let mut line = serde_json::to_vec(&reply).ok()?;
        line.push(b'\n');
        Some(line)
    }
}

/// Passes the server's stdout to the transport while reading each line: a line that lists tools
/// notes those whose `execution.taskSupport` is `"required"` (rmcp's `Tool` type drops that
/// field, and harnessx cannot run such tools), and a line too long for the transport is cut off
/// and followed by an error reply to the request it answers, so the call waiting for it fails at
/// once instead of at its time limit. Every other line passes unchanged, read where it lies.
pub(crate) struct TapReader {
    inner: ChildStdout,
    lines: ReplyLines,
    /// Bytes for the transport before more are read from the server: a stand-in reply and what
    /// followed the line it replaced.
    pending: Vec<u8>,
    /// How much of `pending` was handed out.
    handed: usize,
}

impl TapReader {
    pub(crate) fn new(inner: ChildStdout, task_required: TaskRequired) -> Self {
        Self {
            inner,
            lines: ReplyLines::new(task_required),
            pending: Vec::new(),
            handed: 0,
        }
    }
}

impl AsyncRead for TapReader {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.handed < this.pending.len() {
                let n = buf.remaining().min(this.pending.len() - this.handed);
                buf.put_slice(&this.pending[this.handed..this.handed + n]);
                this.handed += n;
                if this.handed == this.pending.len() {
                    this.pending.clear();
                    this.handed = 0;
                }
                return Poll::Ready(Ok(()));
            }
            let before = buf.filled().len();
            ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
            let read = &buf.filled()[before..];
            if read.is_empty() {
                return Poll::Ready(Ok(())); // the end of the server's output
            }
            let passed = this.lines.pass(read);
            if passed == read.len() {
                return Poll::Ready(Ok(()));
            }
            // An oversized line (rare): the rest of this read goes through `pending`.
            this.lines.filter(&read[passed..], &mut this.pending);
            buf.set_filled(before + passed);
            if passed > 0 {
                return Poll::Ready(Ok(()));
            }
            // Nothing of this read passed (all of it was the oversized line): hand out the
            // stand-in if there is one, else read on — an empty read would mean the end.
        }
    }
}

/// What the tap reads of the lines passing through it: each line's length, and its first
/// [`ID_SCAN_BYTES`] while it is split across reads (an oversized reply's `id`). A line that
/// starts while a tool listing is in flight is also searched for task-only tools: where it
/// lies when it arrives whole in one read, else kept (up to [`TAP_MAX_LINE`]) until it ends.
struct ReplyLines {
    line: Vec<u8>,
    overflow: bool,
    task_required: TaskRequired,
    /// The current line started while a tool listing was in flight: it is searched.
    scan: bool,
    /// The length of the current line so far (without its line end).
    length: u64,
    /// The start of the current line, kept once it is split across reads.
    head: Vec<u8>,
    /// The end of the current line so far, kept while an oversized line is cut off.
    tail: Vec<u8>,
    /// The current line is oversized: its bytes are dropped until it ends.
    cutting: bool,
    /// The current oversized line was answered with a stand-in already.
    answered: bool,
}

impl ReplyLines {
    fn new(task_required: TaskRequired) -> Self {
        Self {
            line: Vec::new(),
            overflow: false,
            task_required,
            scan: false,
            length: 0,
            head: Vec::new(),
            tail: Vec::new(),
            cutting: false,
            answered: false,
        }
    }

    /// Reads `bytes` as they pass, up to the first that may not pass as it is: the start of
    /// the piece that makes a line oversized, or the first byte while one is being cut off.
    /// Returns how many passed.
    fn pass(&mut self, bytes: &[u8]) -> usize {
        if self.cutting {
            return 0;
        }
        let mut at = 0;
        while at < bytes.len() {
            let rest = &bytes[at..];
            let newline = memchr::memchr(b'\n', rest);
            let piece = &rest[..newline.unwrap_or(rest.len())];
            if self.length + piece.len() as u64 >= MAX_MESSAGE_BYTES as u64 {
                return at;
            }
            if self.length == 0 {
                self.scan = self.task_required.listing_in_flight();
            }
            match newline {
                Some(_) if self.length == 0 => {
                    if self.scan {
                        note_task_required(piece, &self.task_required);
                    }
                }
                Some(_) => {
                    self.keep(piece);
                    if self.scan && !self.overflow {
                        note_task_required(&self.line, &self.task_required);
                    }
                }
                None => self.keep(piece),
            }
            at += piece.len();
            if newline.is_some() {
                at += 1;
                self.end_line();
            }
        }
        at
    }

    /// Reads `bytes` that start within or at an oversized line, appending to `out` what the
    /// transport gets: the line's start up to what it may read of one line, then a line end
    /// (the transport reads that start as a malformed message and ignores it), then — once the
    /// line ends, or once it has grown past [`OVERSIZED_REPORT_BYTES`] — the stand-in error
    /// reply, and then whatever follows the line, read as ever.
    fn filter(&mut self, mut bytes: &[u8], out: &mut Vec<u8>) {
        while !bytes.is_empty() {
            let passed = self.pass(bytes);
            out.extend_from_slice(&bytes[..passed]);
            bytes = &bytes[passed..];
            if bytes.is_empty() {
                break;
            }
            if !self.cutting {
                // The transport may still read this much of the line and its end.
                let room = (MAX_MESSAGE_BYTES as u64 - 1 - self.length) as usize;
                self.keep(&bytes[..room]);
                // The end of what passed starts the tail, for an `id` written last.
                self.tail
                    .extend_from_slice(&bytes[room.saturating_sub(ID_SCAN_BYTES)..room]);
                out.extend_from_slice(&bytes[..room]);
                out.push(b'\n');
                bytes = &bytes[room..];
                self.cutting = true;
                self.overflow = true;
                self.line = Vec::new();
            }
            let newline = memchr::memchr(b'\n', bytes);
            let piece = &bytes[..newline.unwrap_or(bytes.len())];
            self.cut(piece);
            bytes = &bytes[piece.len()..];
            if newline.is_some() {
                bytes = &bytes[1..];
                if !self.answered {
                    self.answer(true, out);
                }
                self.end_line();
            } else if !self.answered && self.length > OVERSIZED_REPORT_BYTES {
                self.answer(false, out);
            }
        }
    }

    /// Counts a piece of a line that passes, keeping its start and, when the line is searched,
    /// (up to [`TAP_MAX_LINE`]) its text.
    fn keep(&mut self, bytes: &[u8]) {
        self.length += bytes.len() as u64;
        let room = ID_SCAN_BYTES.saturating_sub(self.head.len());
        self.head.extend_from_slice(&bytes[..bytes.len().min(room)]);
        if self.overflow || !self.scan {
            return;
        }
        if self.line.len() + bytes.len() > TAP_MAX_LINE {
            self.overflow = true;
            self.line = Vec::new();
        } else {
            self.line.extend_from_slice(bytes);
        }
    }

    /// Counts a piece of an oversized line being cut off, keeping its last bytes.
    fn cut(&mut self, bytes: &[u8]) {
        self.length += bytes.len() as u64;
        let last = &bytes[bytes.len().saturating_sub(ID_SCAN_BYTES)..];
        self.tail.extend_from_slice(last);
        let excess = self.tail.len().saturating_sub(ID_SCAN_BYTES);
        self.tail.drain(..excess);
    }

    /// Appends the stand-in reply for the current oversized line to `out`, when its `id` can be
    /// read (from its start, or from its end once it is `complete`).
    fn answer(&mut self, complete: bool, out: &mut Vec<u8>) {
        self.answered = true;
        let bytes = self.length;
        tracing::warn!(
            bytes,
            "an MCP server sent a message larger than {MAX_MESSAGE_BYTES} bytes; it is dropped"
        );
        let id = reply_id(&self.head).or_else(|| complete.then(|| last_id(&self.tail)).flatten());
        if let Some(line) = id.and_then(|id| OversizedReply { bytes, complete }.stand_in(&id)) {
            out.extend_from_slice(&line);
        }
    }

    fn end_line(&mut self) {
        self.line.clear();
        self.overflow = false;
        self.length = 0;
        self.head.clear();
        self.tail.clear();
        self.cutting = false;
        self.answered = false;
    }
}

/// A searcher for `needle`, built once: building one costs more than a search of a short line.
macro_rules! finder {
    ($needle:expr) => {{
        static FINDER: std::sync::LazyLock<memmem::Finder<'static>> =
            std::sync::LazyLock::new(|| memmem::Finder::new($needle));
        &*FINDER
    }};
}

/// The top-level `"id"` of a JSON-RPC message from the start of its line: the first `"id":`
/// before any `"result"`, `"error"` or `"params"` member (after which an `"id"` may belong to the
/// payload). Numbers and strings are returned as written.
fn reply_id(head: &[u8]) -> Option<String> {
    let id_at = finder!(b"\"id\"").find(head)?;
    let before = &head[..id_at];
    let after_payload = [
        finder!(b"\"result\""),
        finder!(b"\"error\""),
        finder!(b"\"params\""),
    ]
    .iter()
    .any(|k| k.find(before).is_some());
    if after_payload {
        return None;
    }
    id_value(&head[id_at + 4..])
}

/// The last `"id":` value in the end of a line, for servers that write the id after the result.
fn last_id(tail: &[u8]) -> Option<String> {
    static FINDER: std::sync::LazyLock<memmem::FinderRev<'static>> =
        std::sync::LazyLock::new(|| memmem::FinderRev::new(b"\"id\""));
    let id_at = FINDER.rfind(tail)?;
    id_value(&tail[id_at + 4..])
}

/// `bytes` after any leading JSON whitespace.
fn trim_start(bytes: &[u8]) -> &[u8] {
    let start = bytes
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(bytes.len());
    &bytes[start..]
}

/// The value after a key: `: 5` or `: "abc"` (a string is returned with its quotes).
fn id_value(after_key: &[u8]) -> Option<String> {
    let value = trim_start(trim_start(after_key).strip_prefix(b":")?);
    if let Some(string) = value.strip_prefix(b"\"") {
        let end = memchr::memchr(b'"', string)?;
        return Some(format!("\"{}\"", String::from_utf8_lossy(&string[..end])));
    }
    let end = value
        .iter()
        .position(|c| !(c.is_ascii_digit() || *c == b'-'))
        .unwrap_or(value.len());
    (end > 0).then(|| String::from_utf8_lossy(&value[..end]).into_owned())
}

/// Records tools marked `taskSupport: "required"` in a `tools/list` result line.
fn note_task_required(line: &[u8], into: &TaskTools) {
    if finder!(b"taskSupport").find(line).is_none() {
        return;
    }
    let Ok(message) = serde_json::from_slice::<serde_json::Value>(line) else {
        return;
    };
    let Some(tools) = message.pointer("/result/tools").and_then(|t| t.as_array()) else {
        return;
    };
    let mut set = into.names();
    for tool in tools {
        let required = tool
            .pointer("/execution/taskSupport")
            .and_then(|v| v.as_str())
            == Some("required");
        if let Some(name) = tool.get("name").and_then(|n| n.as_str()) {
            if required {
                set.insert(name.to_owned());
            } else {
                set.remove(name);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_read_from_the_start_or_the_end_of_a_line() {
        assert_eq!(
            reply_id(br#"{"jsonrpc":"2.0","id":17,"result":{"content":[{"id":3"#).as_deref(),
            Some("17")
        );
        assert_eq!(
            reply_id(br#"{"jsonrpc":"2.0","id":"a-1","result":"#).as_deref(),
            Some("\"a-1\"")
        );
        assert_eq!(reply_id(br#"{"jsonrpc":"2.0","result":{"id":3,"#), None);
        assert_eq!(last_id(br#"xxx"}]},"id":42}"#).as_deref(), Some("42"));
        // Ids are read as written, around any whitespace; a line with no usable id has none.
        assert_eq!(
            reply_id(br#"{ "id" :  -3 , "result":{}}"#).as_deref(),
            Some("-3")
        );
        assert_eq!(
            reply_id("{\"id\":\"café\",\"result\":{}}".as_bytes()).as_deref(),
            Some("\"café\"")
        );
        assert_eq!(reply_id(br#"{"id":true,"result":{}}"#), None);
        assert_eq!(reply_id(br#"{"id":"unterminated"#), None);
        assert_eq!(last_id(br#"no id here"#), None);
    }

    /// What the transport gets of `chunks` read one after another, as `TapReader` hands it on.
    fn through(lines: &mut ReplyLines, chunks: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        for chunk in chunks {
            let passed = lines.pass(chunk);
            out.extend_from_slice(&chunk[..passed]);
            if passed < chunk.len() {
                lines.filter(&chunk[passed..], &mut out);
            }
        }
        out
    }

    /// A reply of `text_bytes` bytes of text to request `id`, its id first or last.
    fn reply(id: &str, text_bytes: usize, id_last: bool) -> Vec<u8> {
        let mut line = if id_last {
            br#"{"jsonrpc":"2.0","result":{"content":[{"type":"text","text":""#.to_vec()
        } else {
            format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":""#)
                .into_bytes()
        };
        line.resize(line.len() + text_bytes, b'x');
        line.extend_from_slice(b"\"}]}");
        if id_last {
            line.extend_from_slice(format!(r#","id":{id}}}"#).as_bytes());
        } else {
            line.push(b'}');
        }
        line
    }

    /// The transport's lines: each without its line end.
    fn split_lines(out: &[u8]) -> Vec<&[u8]> {
        out.strip_suffix(b"\n")
            .unwrap_or(out)
            .split(|b| *b == b'\n')
            .collect()
    }

    /// The stand-in reply a line of the transport is, as rmcp would read it.
    fn stand_in(line: &[u8]) -> (Value, OversizedReply) {
        let message: Value = serde_json::from_slice(line).expect("the stand-in is JSON");
        let error: ErrorData =
            serde_json::from_value(message["error"].clone()).expect("a JSON-RPC error");
        let reply = OversizedReply::of(&error).expect("the stand-in names the reply's size");
        (message["id"].clone(), reply)
    }

    /// Lines are read the same whether they arrive whole in one read (looked at in place) or
    /// split across reads (kept until they end): a tool list marks its task-only tools.
    #[test]
    fn whole_and_split_lines_are_read_alike() {
        let list = br#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"t","execution":{"taskSupport":"required"}}]}}"#;
        for split in [None, Some(1), Some(40), Some(list.len())] {
            let set = TaskRequired::default();
            let _listing = set.listing();
            let mut lines = ReplyLines::new(set.clone());
            let mut text = b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}\n".to_vec();
            text.extend_from_slice(list);
            text.push(b'\n');
            let out = match split {
                None => through(&mut lines, &[&text]),
                Some(at) => {
                    let at = at + text.len() - list.len() - 1;
                    through(&mut lines, &[&text[..at], &text[at..]])
                }
            };
            assert_eq!(out, text, "passed unchanged (split at {split:?})");
            assert!(set.names().contains("t"), "split at {split:?}");
            assert_eq!(lines.length, 0, "the line ended (split at {split:?})");
        }
    }

    /// Only a line that starts while a tool listing is in flight is searched: other lines pass
    /// unread and a line split across reads is not kept, whether a listing starts in its middle
    /// or ends there.
    #[test]
    fn only_lines_that_start_during_a_listing_are_searched() {
        let list = br#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"t","execution":{"taskSupport":"required"}}]}}"#;
        let mut text = list.to_vec();
        text.push(b'\n');
        let set = TaskRequired::default();
        let mut lines = ReplyLines::new(set.clone());
        assert_eq!(through(&mut lines, &[&text]), text);
        assert!(set.names().is_empty(), "no listing in flight: not searched");

        let (start, end) = text.split_at(30);
        through(&mut lines, &[start]);
        assert!(
            lines.line.is_empty(),
            "a split line that is not searched is not kept"
        );
        let listing = set.listing();
        through(&mut lines, &[end]);
        assert!(
            set.names().is_empty(),
            "the line started before the listing"
        );

        through(&mut lines, &[start]);
        drop(listing);
        through(&mut lines, &[end]);
        assert!(
            set.names().contains("t"),
            "the line started during the listing"
        );

        let other = set.listing();
        let again = set.listing();
        drop(other);
        set.names().clear();
        through(&mut lines, &[&text]);
        assert!(set.names().contains("t"), "one listing still in flight");
        drop(again);
        assert!(!set.listing_in_flight());
    }

    /// A reply too long for the transport reaches it cut off (a malformed line it ignores),
    /// followed by an error reply to the same request naming the size, and what follows the
    /// reply passes unchanged — wherever the reads split it, with the id first or last.
    #[test]
    fn an_oversized_reply_is_replaced_by_an_error_reply_to_its_request() {
        let after = b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}\n";
        for (id, id_last) in [("5", false), ("\"call-9\"", true)] {
            let mut text = reply(id, MAX_MESSAGE_BYTES + 10, id_last);
            let size = text.len() as u64;
            text.push(b'\n');
            text.extend_from_slice(after);
            let cuts = [
                vec![],
                vec![100],
                vec![MAX_MESSAGE_BYTES - 2, MAX_MESSAGE_BYTES + 3],
                vec![text.len() - after.len() - 1],
                vec![text.len() - 5],
            ];
            for cut in cuts {
                let mut chunks: Vec<&[u8]> = Vec::new();
                let mut from = 0;
                for &at in &cut {
                    chunks.push(&text[from..at]);
                    from = at;
                }
                chunks.push(&text[from..]);
                let mut lines = ReplyLines::new(TaskRequired::default());
                let out = through(&mut lines, &chunks);
                let got = split_lines(&out);
                assert_eq!(got.len(), 3, "id {id}, reads cut at {cut:?}");
                assert_eq!(got[0], &text[..MAX_MESSAGE_BYTES - 1], "the cut-off start");
                let (got_id, oversized) = stand_in(got[1]);
                assert_eq!(got_id, serde_json::from_str::<Value>(id).unwrap());
                assert_eq!(
                    oversized,
                    OversizedReply {
                        bytes: size,
                        complete: true
                    },
                    "id {id}, reads cut at {cut:?}"
                );
                assert_eq!(got[2], &after[..after.len() - 1], "what followed");
                assert_eq!(lines.length, 0);
            }
        }
    }

    /// The longest line the transport reads passes whole; one byte more and it is replaced.
    #[test]
    fn the_limit_is_the_transports_to_the_byte() {
        let longest = reply("1", 0, false);
        let pad = MAX_MESSAGE_BYTES - 1 - longest.len();
        let mut line = reply("1", pad, false);
        assert_eq!(line.len(), MAX_MESSAGE_BYTES - 1);
        line.push(b'\n');
        let mut lines = ReplyLines::new(TaskRequired::default());
        assert_eq!(
            through(&mut lines, &[&line]),
            line,
            "a line of the longest size passes"
        );

        let mut line = reply("1", pad + 1, false);
        line.push(b'\n');
        let out = through(&mut lines, &[&line]);
        let got = split_lines(&out);
        assert_eq!(got.len(), 2);
        assert_eq!(stand_in(got[1]).1.bytes, MAX_MESSAGE_BYTES as u64);
    }

    /// A server that never ends an oversized line gets its call answered once the line passes
    /// four times the limit; the line is dropped until it ends, and what follows passes.
    #[test]
    fn a_line_that_never_ends_is_answered_without_waiting_for_its_end() {
        let mut lines = ReplyLines::new(TaskRequired::default());
        let start = br#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":""#;
        let mut out = through(&mut lines, &[start]);
        let chunk = vec![b'x'; 1 << 20];
        let mut sent = start.len() as u64;
        while sent <= OVERSIZED_REPORT_BYTES {
            out.extend(through(&mut lines, &[&chunk]));
            sent += chunk.len() as u64;
        }
        let got = split_lines(&out);
        assert_eq!(
            got.len(),
            2,
            "the cut-off start and the stand-in, with no wait for the end"
        );
        let (id, oversized) = stand_in(got[1]);
        assert_eq!(id, json!(7));
        assert_eq!(
            oversized,
            OversizedReply {
                bytes: sent,
                complete: false
            }
        );
        let tail = through(
            &mut lines,
            &[b"xx\"}]}}\n{\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n"],
        );
        assert_eq!(
            tail, b"{\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n",
            "only what followed"
        );
    }

    /// A stand-in is recognised by its code and its data; a server's own error is not one, and
    /// an id that is not JSON gets no stand-in.
    #[test]
    fn stand_ins_are_told_from_server_errors() {
        let reply = OversizedReply {
            bytes: 20_000_000,
            complete: true,
        };
        let line = reply.stand_in("12").expect("a stand-in");
        assert_eq!(
            stand_in(line.strip_suffix(b"\n").unwrap()),
            (json!(12), reply)
        );
        let server_error = ErrorData::new(
            rmcp::model::ErrorCode(OVERSIZED_CODE),
            "something else",
            Some(json!({"bytes": 3})),
        );
        assert_eq!(OversizedReply::of(&server_error), None);
        assert_eq!(reply.stand_in("nope"), None);
    }

    /// Through the reader itself, over a real pipe and a transport-sized read buffer: the
    /// stand-in and what follows it are handed out across reads.
    #[tokio::test]
    async fn the_reader_hands_on_the_stand_in_across_reads() {
        use tokio::io::AsyncBufReadExt;
        let script = format!(
            r#"printf '{{"jsonrpc":"2.0","id":3,"result":"'; head -c {} /dev/zero | tr '\0' x; printf '"}}\n{{"jsonrpc":"2.0","method":"n"}}\n'"#,
            MAX_MESSAGE_BYTES + 1000
        );
        let mut child = tokio::process::Command::new("sh")
            .args(["-c", &script])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("sh starts");
        let reader = TapReader::new(
            child.stdout.take().expect("stdout"),
            TaskRequired::default(),
        );
        let mut reader = tokio::io::BufReader::with_capacity(8 * 1024, reader);
        let mut got = Vec::new();
        loop {
            let mut line = Vec::new();
            if reader.read_until(b'\n', &mut line).await.expect("read") == 0 {
                break;
            }
            got.push(line);
        }
        child.wait().await.expect("sh exits");
        assert_eq!(got.len(), 3);
        assert_eq!(
            got[0].len(),
            MAX_MESSAGE_BYTES,
            "the cut-off start and its line end"
        );
        let (id, oversized) = stand_in(got[1].strip_suffix(b"\n").unwrap());
        assert_eq!(id, json!(3));
        assert!(oversized.complete && oversized.bytes > MAX_MESSAGE_BYTES as u64);
        assert_eq!(got[2], b"{\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n");
    }

    #[test]
    fn tool_lists_mark_task_required_tools() {
        let set = TaskRequired::default();
        let line = br#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"a","inputSchema":{}},{"name":"b","execution":{"taskSupport":"required"}},{"name":"c","execution":{"taskSupport":"optional"}}]}}"#;
        note_task_required(line, &set);
        let got = set.names().clone();
        assert_eq!(got, HashSet::from(["b".to_owned()]));
        note_task_required(br#"{"not json"#, &set);
        assert_eq!(set.names().len(), 1);
    }
}
