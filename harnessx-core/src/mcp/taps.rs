//! Taps on a stdio server's pipes. On stdout: the tools whose listing says they need the tasks
//! API, and replies too large for the transport, reported to the call waiting for them. On stdin:
//! which JSON-RPC request carries which call.

use std::collections::{HashMap, HashSet, VecDeque};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use memchr::memmem;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::process::{ChildStdin, ChildStdout};
use tokio::sync::oneshot;

/// The longest stdout line the tap inspects; longer lines are passed on unread.
const TAP_MAX_LINE: usize = 4 * 1024 * 1024;
/// The largest message read from a server's stdout (rmcp's default, set explicitly): a longer
/// line is dropped by the transport, and the call it answers fails at once, naming its size.
pub(crate) const MAX_MESSAGE_BYTES: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;
/// An oversized reply that has not ended by this many bytes is reported without waiting for its
/// end, so a server that never ends its line cannot hold a call until its time limit.
const OVERSIZED_REPORT_BYTES: u64 = 4 * MAX_MESSAGE_BYTES as u64;
/// Bytes of each line kept by the stdio taps to find a message's `id` (and the call marker).
const ID_SCAN_BYTES: usize = 8 * 1024;

/// The names of tools whose listing said `execution.taskSupport: "required"`.
pub(crate) type TaskRequired = Arc<Mutex<HashSet<String>>>;

/// Calls waiting for replies, so that a reply too large to read fails its call at once.
///
/// Each call puts a marker in its request's `_meta` (`"harnessx/call": n`); the stdin tap reads
/// the JSON-RPC `id` of the request carrying it, and the stdout tap reads the `id` of a line too
/// long for the transport, which drops it. The call with that id then gets the line's size.
#[derive(Clone, Default)]
pub(crate) struct ReplyWatch(Arc<Mutex<WatchState>>);

#[derive(Default)]
struct WatchState {
    next: u64,
    /// Marker → the call waiting.
    waiting: HashMap<u64, oneshot::Sender<OversizedReply>>,
    /// JSON-RPC id (as written) → marker.
    ids: HashMap<String, u64>,
}

/// A reply dropped for its size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OversizedReply {
    /// Its size in bytes, or what had arrived when it was reported.
    pub(crate) bytes: u64,
    /// Whether the whole line had arrived (else it is at least `bytes` long).
    pub(crate) complete: bool,
}

/// A call's place in the [`ReplyWatch`]; it leaves when dropped.
pub(crate) struct Waiting {
    watch: ReplyWatch,
    marker: u64,
    /// Fires when the reply to this call was too large.
    pub(crate) oversized: oneshot::Receiver<OversizedReply>,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        // Closed first, the receiver is not woken when its sender is dropped below: the task
        // dropping this is the one that polled it, and a wake-up would only make the runtime
        // poll that task once more for nothing after every call.
        self.oversized.close();
        let mut state = self.watch.lock();
        state.waiting.remove(&self.marker);
        let marker = self.marker;
        state.ids.retain(|_, m| *m != marker);
    }
}

impl ReplyWatch {
    fn lock(&self) -> std::sync::MutexGuard<'_, WatchState> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers a call; put [`Waiting::marker`]'s value under [`CALL_MARKER`] in its `_meta`.
    pub(crate) fn wait(&self) -> Waiting {
        let (tx, rx) = oneshot::channel();
        let mut state = self.lock();
        state.next += 1;
        let marker = state.next;
        state.waiting.insert(marker, tx);
        Waiting {
            watch: self.clone(),
            marker,
            oversized: rx,
        }
    }

    fn request_sent(&self, id: String, marker: u64) {
        let mut state = self.lock();
        if state.waiting.contains_key(&marker) {
            state.ids.insert(id, marker);
        }
    }

    fn oversized(&self, id: &str, reply: OversizedReply) {
        let mut state = self.lock();
        if let Some(marker) = state.ids.remove(id)
            && let Some(tx) = state.waiting.remove(&marker)
        {
            let _ = tx.send(reply);
        }
    }
}

impl Waiting {
    /// The marker that identifies this call's request.
    pub(crate) fn marker(&self) -> u64 {
        self.marker
    }
}

/// The `_meta` key of the marker that ties a request to its [`Waiting`] call.
pub(crate) const CALL_MARKER: &str = "harnessx/call";

/// Passes the server's stdout through unchanged while reading each line that lists tools, to
/// note the tools whose `execution.taskSupport` is `"required"` (rmcp's `Tool` type drops that
/// field, and harnessx cannot run such tools), and measuring every line, to report a reply the
/// transport drops for its size to the call waiting for it.
pub(crate) struct TapReader {
    inner: ChildStdout,
    lines: ReplyLines,
}

impl TapReader {
    pub(crate) fn new(
        inner: ChildStdout,
        task_required: TaskRequired,
        replies: ReplyWatch,
    ) -> Self {
        Self {
            inner,
            lines: ReplyLines::new(task_required, replies),
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
        let before = buf.filled().len();
        let poll = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = &poll {
            this.lines.observe(&buf.filled()[before..]);
        }
        poll
    }
}

/// What the stdout tap reads of the lines passing through it. A line that arrives whole in one
/// read — every ordinary reply — is looked at where it lies; only a line split across reads is
/// kept (its text up to [`TAP_MAX_LINE`], its first and last [`ID_SCAN_BYTES`]) until it ends.
struct ReplyLines {
    line: Vec<u8>,
    overflow: bool,
    task_required: TaskRequired,
    /// The length of the current line so far.
    length: u64,
    /// The start and the end of the current line, to find its `id`.
    head: Vec<u8>,
    tail: VecDeque<u8>,
    /// The current line was reported as oversized already.
    reported: bool,
    replies: ReplyWatch,
}

impl ReplyLines {
    fn new(task_required: TaskRequired, replies: ReplyWatch) -> Self {
        Self {
            line: Vec::new(),
            overflow: false,
            task_required,
            length: 0,
            head: Vec::new(),
            tail: VecDeque::new(),
            reported: false,
            replies,
        }
    }

    fn observe(&mut self, bytes: &[u8]) {
        let mut rest = bytes;
        while let Some(pos) = memchr::memchr(b'\n', rest) {
            let piece = &rest[..pos];
            if self.length == 0 {
                self.whole_line(piece);
            } else {
                self.push(piece);
                if !self.overflow {
                    note_task_required(&self.line, &self.task_required);
                }
                self.end_line();
            }
            rest = &rest[pos + 1..];
        }
        self.push(rest);
    }

    /// A line that arrived in one piece, read in place.
    fn whole_line(&self, line: &[u8]) {
        if line.len() > MAX_MESSAGE_BYTES {
            let head = &line[..ID_SCAN_BYTES];
            let tail = &line[line.len() - ID_SCAN_BYTES..];
            report(&self.replies, head, tail, line.len() as u64, true);
        } else {
            note_task_required(line, &self.task_required);
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        self.measure(bytes);
        if self.overflow {
            return;
        }
        if self.line.len() + bytes.len() > TAP_MAX_LINE {
            self.overflow = true;
            self.line.clear();
        } else {
            self.line.extend_from_slice(bytes);
        }
    }

    /// Counts a piece of the current line, keeping its first and last bytes; reports it once it
    /// is known to be oversized and has either ended or grown past [`OVERSIZED_REPORT_BYTES`].
    fn measure(&mut self, bytes: &[u8]) {
        self.length += bytes.len() as u64;
        let room = ID_SCAN_BYTES.saturating_sub(self.head.len());
        self.head.extend_from_slice(&bytes[..bytes.len().min(room)]);
        let last = &bytes[bytes.len().saturating_sub(ID_SCAN_BYTES)..];
        self.tail.extend(last);
        let excess = self.tail.len().saturating_sub(ID_SCAN_BYTES);
        self.tail.drain(..excess);
        if !self.reported && self.length > OVERSIZED_REPORT_BYTES {
            self.report_kept(false);
        }
    }

    fn end_line(&mut self) {
        if !self.reported && self.length > MAX_MESSAGE_BYTES as u64 {
            self.report_kept(true);
        }
        self.line.clear();
        self.overflow = false;
        self.length = 0;
        self.head.clear();
        self.tail.clear();
        self.reported = false;
    }

    /// Reports the kept line as oversized.
    fn report_kept(&mut self, complete: bool) {
        self.reported = true;
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        report(&self.replies, &self.head, &tail, self.length, complete);
    }
}

/// Tells the call waiting for an oversized line (found by the `id` in its first bytes, or for a
/// complete line its last) that the transport dropped it.
fn report(replies: &ReplyWatch, head: &[u8], tail: &[u8], bytes: u64, complete: bool) {
    let id = reply_id(head).or_else(|| if complete { last_id(tail) } else { None });
    tracing::warn!(
        bytes,
        "an MCP server sent a message larger than {MAX_MESSAGE_BYTES} bytes; it is dropped"
    );
    if let Some(id) = id {
        replies.oversized(&id, OversizedReply { bytes, complete });
    }
}

/// Passes requests to the server's stdin unchanged while reading the start of each line, to tie
/// the JSON-RPC `id` of a `tools/call` request to the call marker in its `_meta`.
pub(crate) struct TapWriter {
    inner: ChildStdin,
    requests: RequestLines,
}

impl TapWriter {
    pub(crate) fn new(inner: ChildStdin, replies: ReplyWatch) -> Self {
        Self {
            inner,
            requests: RequestLines {
                head: Vec::new(),
                replies,
            },
        }
    }
}

/// What the stdin tap reads of the requests passing through it: the start of each line, looked
/// at in place when the line starts in the bytes at hand (every ordinary request), kept up to
/// [`ID_SCAN_BYTES`] otherwise.
struct RequestLines {
    head: Vec<u8>,
    replies: ReplyWatch,
}

impl RequestLines {
    fn observe(&mut self, bytes: &[u8]) {
        let mut rest = bytes;
        while let Some(pos) = memchr::memchr(b'\n', rest) {
            if self.head.is_empty() {
                self.request(&rest[..pos.min(ID_SCAN_BYTES)]);
            } else {
                self.keep(&rest[..pos]);
                self.request(&self.head);
                self.head.clear();
            }
            rest = &rest[pos + 1..];
        }
        self.keep(rest);
    }

    fn request(&self, head: &[u8]) {
        if let (Some(id), Some(marker)) = (reply_id(head), call_marker(head)) {
            self.replies.request_sent(id, marker);
        }
    }

    fn keep(&mut self, bytes: &[u8]) {
        let room = ID_SCAN_BYTES.saturating_sub(self.head.len());
        self.head.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }
}

impl AsyncWrite for TapWriter {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = &poll {
            let n = *n;
            self.requests.observe(&buf[..n]);
        }
        poll
    }

    /// Passed on whole: a message and its line end leave in one `writev`, so the server reads
    /// the request in one go instead of its text and then, after another wake-up, its newline.
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(written)) = &poll {
            // rmcp's framing: one message and its line end, both written. The message is then
            // a whole line, read in place.
            if let [message, end] = bufs
                && **end == *b"\n"
                && *written == message.len() + 1
                && self.requests.head.is_empty()
                && memchr::memchr(b'\n', message).is_none()
            {
                self.requests
                    .request(&message[..message.len().min(ID_SCAN_BYTES)]);
                return poll;
            }
            let mut left = *written;
            for buf in bufs {
                if left == 0 {
                    break;
                }
                let taken = left.min(buf.len());
                self.requests.observe(&buf[..taken]);
                left -= taken;
            }
        }
        poll
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
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

/// The call marker in a request's `_meta`, when it has one.
fn call_marker(head: &[u8]) -> Option<u64> {
    let key = CALL_MARKER.as_bytes();
    let after = finder!(CALL_MARKER.as_bytes())
        .find_iter(head)
        .map(|at| (&head[..at], &head[at + key.len()..]))
        .find(|(before, after)| before.ends_with(b"\"") && after.starts_with(b"\""))
        .map(|(_, after)| &after[1..])?;
    let value = trim_start(trim_start(after).strip_prefix(b":")?);
    let end = value
        .iter()
        .position(|c| !c.is_ascii_digit())
        .unwrap_or(value.len());
    std::str::from_utf8(&value[..end]).ok()?.parse().ok()
}

/// Records tools marked `taskSupport: "required"` in a `tools/list` result line.
fn note_task_required(line: &[u8], into: &TaskRequired) {
    if finder!(b"taskSupport").find(line).is_none() {
        return;
    }
    let Ok(message) = serde_json::from_slice::<serde_json::Value>(line) else {
        return;
    };
    let Some(tools) = message.pointer("/result/tools").and_then(|t| t.as_array()) else {
        return;
    };
    let mut set = into.lock().unwrap_or_else(|p| p.into_inner());
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
    fn ids_and_markers_are_read_from_the_start_or_the_end_of_a_line() {
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
        assert_eq!(
            call_marker(br#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"_meta":{"harnessx/call":9},"name":"a"}}"#),
            Some(9)
        );
        assert_eq!(call_marker(br#"{"id":4,"method":"tools/list"}"#), None);
        // The marker is a key of its own: the same text inside a value is not it.
        assert_eq!(
            call_marker(
                br#"{"id":4,"params":{"a":"x harnessx/call y","_meta":{ "harnessx/call" : 12 }}}"#
            ),
            Some(12)
        );
        assert_eq!(call_marker(br#"{"params":{"harnessx/call":"7"}}"#), None);
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

    /// A request written as a message and its line end in one vectored write (as rmcp's framed
    /// writer does) is passed on whole and still tied to the call whose marker it carries.
    #[tokio::test]
    async fn vectored_writes_are_passed_on_whole_and_read() {
        use tokio::io::AsyncWriteExt;
        let mut cat = tokio::process::Command::new("cat")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("cat starts");
        let replies = ReplyWatch::default();
        let waiting = replies.wait();
        let mut tap = TapWriter::new(cat.stdin.take().expect("stdin"), replies.clone());
        assert!(tap.is_write_vectored());
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":31,"method":"tools/call","params":{{"_meta":{{"{CALL_MARKER}":{}}},"name":"a"}}}}"#,
            waiting.marker()
        );
        let parts = [
            std::io::IoSlice::new(line.as_bytes()),
            std::io::IoSlice::new(b"\n"),
        ];
        let written = tap.write_vectored(&parts).await.expect("written");
        assert_eq!(
            written,
            line.len() + 1,
            "the message and its newline left together"
        );
        assert_eq!(replies.lock().ids.get("31"), Some(&waiting.marker()));
        drop(tap);
        cat.wait().await.expect("cat exits");
    }

    /// A finished call leaves the watch without waking its own task (a wake-up per call made
    /// the runtime poll the caller once more after every MCP call); an oversized reply still
    /// wakes the call waiting for it.
    #[test]
    fn leaving_the_watch_wakes_nobody_and_an_oversized_reply_wakes_its_call() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::task::{Wake, Waker};
        struct Count(AtomicUsize);
        impl Wake for Count {
            fn wake(self: Arc<Self>) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let replies = ReplyWatch::default();
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(Arc::clone(&count));
        let mut cx = Context::from_waker(&waker);

        let mut waiting = replies.wait();
        assert!(Pin::new(&mut waiting.oversized).poll(&mut cx).is_pending());
        drop(waiting);
        assert_eq!(count.0.load(Ordering::SeqCst), 0, "leaving woke the task");
        let state = replies.lock();
        assert!(state.waiting.is_empty() && state.ids.is_empty());
        drop(state);

        let mut waiting = replies.wait();
        replies.request_sent("7".to_owned(), waiting.marker());
        assert!(Pin::new(&mut waiting.oversized).poll(&mut cx).is_pending());
        let reply = OversizedReply {
            bytes: 20_000_000,
            complete: true,
        };
        replies.oversized("7", reply);
        assert_eq!(
            count.0.load(Ordering::SeqCst),
            1,
            "the waiting call was woken"
        );
        assert_eq!(
            Pin::new(&mut waiting.oversized).poll(&mut cx),
            Poll::Ready(Ok(reply))
        );
    }

    /// Lines are read the same whether they arrive whole in one read (looked at in place) or
    /// split across reads (kept until they end): a tool list marks its task-only tools, an
    /// oversized reply reaches the call waiting for it with its size, and a request ties its id
    /// to its call's marker.
    #[test]
    fn whole_and_split_lines_are_read_alike() {
        let list = br#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"t","execution":{"taskSupport":"required"}}]}}"#;
        for split in [None, Some(1), Some(40), Some(list.len())] {
            let set = TaskRequired::default();
            let mut lines = ReplyLines::new(set.clone(), ReplyWatch::default());
            let mut text = b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}\n".to_vec();
            text.extend_from_slice(list);
            text.push(b'\n');
            match split {
                None => lines.observe(&text),
                Some(at) => {
                    let at = at + text.len() - list.len() - 1;
                    lines.observe(&text[..at]);
                    lines.observe(&text[at..]);
                }
            }
            assert!(set.lock().unwrap().contains("t"), "split at {split:?}");
            assert_eq!(lines.length, 0, "the line ended (split at {split:?})");
        }

        let big = {
            let mut line =
                br#"{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":""#.to_vec();
            line.resize(MAX_MESSAGE_BYTES + 10, b'x');
            line.extend_from_slice(b"\"}]}}\n");
            line
        };
        for split in [None, Some(100)] {
            let replies = ReplyWatch::default();
            let mut waiting = replies.wait();
            replies.request_sent("5".to_owned(), waiting.marker());
            let mut lines = ReplyLines::new(TaskRequired::default(), replies.clone());
            match split {
                None => lines.observe(&big),
                Some(at) => {
                    lines.observe(&big[..at]);
                    lines.observe(&big[at..]);
                }
            }
            let reply = waiting.oversized.try_recv().expect("the call was told");
            assert_eq!(
                reply,
                OversizedReply {
                    bytes: big.len() as u64 - 1,
                    complete: true
                },
                "split at {split:?}"
            );
        }

        let replies = ReplyWatch::default();
        let first = replies.wait();
        let second = replies.wait();
        let mut requests = RequestLines {
            head: Vec::new(),
            replies: replies.clone(),
        };
        let request = |id: u32, marker: u64| {
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"_meta":{{"{CALL_MARKER}":{marker}}},"name":"a"}}}}"#
            )
        };
        let whole = format!("{}\n", request(8, first.marker()));
        requests.observe(whole.as_bytes());
        let split = format!("{}\n", request(9, second.marker()));
        requests.observe(&split.as_bytes()[..20]);
        requests.observe(&split.as_bytes()[20..]);
        let state = replies.lock();
        assert_eq!(state.ids.get("8"), Some(&first.marker()));
        assert_eq!(state.ids.get("9"), Some(&second.marker()));
    }

    #[test]
    fn tool_lists_mark_task_required_tools() {
        let set = TaskRequired::default();
        let line = br#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"a","inputSchema":{}},{"name":"b","execution":{"taskSupport":"required"}},{"name":"c","execution":{"taskSupport":"optional"}}]}}"#;
        note_task_required(line, &set);
        let got = set.lock().unwrap().clone();
        assert_eq!(got, HashSet::from(["b".to_owned()]));
        note_task_required(br#"{"not json"#, &set);
        assert_eq!(set.lock().unwrap().len(), 1);
    }
}
