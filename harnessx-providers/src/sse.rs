//! A server-sent-events decoder over a byte stream, shared by the HTTP providers.
//!
//! It follows the WHATWG event-stream rules: lines end in `\n`, `\r\n` or `\r`; `data:` lines
//! of one event are joined with `\n`; a blank line dispatches the event; lines starting with `:`
//! are comments; a leading byte-order mark is skipped. Bytes are buffered until a whole line is in,
//! so a chunk boundary in the middle of a line or of a UTF-8 sequence changes nothing.

use std::collections::VecDeque;

use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};

use super::turn::TurnDecoder;
use super::{ModelError, ModelResponse, ModelStreamEvent};

/// The longest line or event accepted; a server sending more without a line break is broken.
const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct SseEvent {
    /// The `event:` field, when the server named the event.
    pub(crate) event: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub(crate) data: String,
}

/// Incremental decoder: feed it chunks, collect whole events.
#[derive(Debug, Default)]
pub(crate) struct SseDecoder {
    /// Bytes of a line not yet terminated.
    line: Vec<u8>,
    /// The previous chunk ended in `\r`, so a leading `\n` in the next one belongs to it.
    after_cr: bool,
    /// Whether the first line has been seen (to strip a byte-order mark).
    started: bool,
    event: Option<String>,
    data: String,
    has_data: bool,
}

impl SseDecoder {
    /// Adds a chunk and returns the events it completed. Fails on a line that is not UTF-8.
    pub(crate) fn feed(&mut self, chunk: &[u8]) -> Result<Vec<SseEvent>, String> {
        let mut out = Vec::new();
        for &b in chunk {
            if self.after_cr {
                self.after_cr = false;
                if b == b'\n' {
                    continue;
                }
            }
            match b {
                b'\n' => self.end_line(&mut out)?,
                b'\r' => {
                    self.after_cr = true;
                    self.end_line(&mut out)?;
                }
                _ => {
                    if self.line.len() + self.data.len() >= MAX_EVENT_BYTES {
                        return Err(format!(
                            "an event in the stream is longer than {} MiB",
                            MAX_EVENT_BYTES / (1024 * 1024)
                        ));
                    }
                    self.line.push(b);
                }
            }
        }
        Ok(out)
    }

    fn end_line(&mut self, out: &mut Vec<SseEvent>) -> Result<(), String> {
        let raw = std::mem::take(&mut self.line);
        let mut line = String::from_utf8(raw)
            .map_err(|e| format!("the event stream holds a line that is not UTF-8 ({e})"))?;
        if !self.started {
            self.started = true;
            if let Some(rest) = line.strip_prefix('\u{feff}') {
                line = rest.to_owned();
            }
        }
        if line.is_empty() {
            if self.has_data {
                out.push(SseEvent {
                    event: self.event.take(),
                    data: std::mem::take(&mut self.data),
                });
            }
            self.event = None;
            self.data.clear();
            self.has_data = false;
            return Ok(());
        }
        if line.starts_with(':') {
            return Ok(());
        }
        let (field, value) = match line.find(':') {
            Some(i) => {
                let value = &line[i + 1..];
                (&line[..i], value.strip_prefix(' ').unwrap_or(value))
            }
            None => (line.as_str(), ""),
        };
        match field {
            "event" => self.event = Some(value.to_owned()),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            _ => {} // `id`, `retry` and unknown fields do not matter to a one-shot response.
        }
        Ok(())
    }
}

/// Reads a streaming response through `decoder`: each server-sent event becomes the stream events
/// it completes, and the end of the turn becomes [`ModelStreamEvent::Completed`]. A body that
/// breaks is a [`ModelError::Transport`]; one that ends before the provider finished the turn is
/// whatever `decoder.finish` says (a [`ModelError::Malformed`]). The stream ends after an error.
///
/// A server that answers a streaming request with a JSON body instead (some proxies and local
/// servers do) gets that body read by `parse_json`, and the turn comes out as a streamed one
/// would: its text as one delta, each tool call as a start and its arguments, then `Completed`.
pub(crate) fn turn_stream<D: TurnDecoder>(
    provider: &'static str,
    response: reqwest::Response,
    decoder: D,
    parse_json: fn(&serde_json::Value) -> Result<ModelResponse, ModelError>,
) -> BoxStream<'static, Result<ModelStreamEvent, ModelError>> {
    let is_json = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("application/json"));
    if is_json {
        return futures::stream::once(async move {
            let body = super::http::read_json(provider, response).await?;
            let events = super::response_events(parse_json(&body)?, usize::MAX);
            Ok::<_, ModelError>(futures::stream::iter(events.into_iter().map(Ok)))
        })
        .try_flatten()
        .boxed();
    }

    struct State<D> {
        bytes: BoxStream<'static, reqwest::Result<bytes::Bytes>>,
        sse: SseDecoder,
        turn: D,
        pending: VecDeque<ModelStreamEvent>,
        error: Option<ModelError>,
        finished: bool,
    }

    impl<D: TurnDecoder> State<D> {
        /// The next item: events already decoded go out before an error that followed them.
        async fn next(&mut self, provider: &str) -> Option<Result<ModelStreamEvent, ModelError>> {
            loop {
                if let Some(event) = self.pending.pop_front() {
                    return Some(Ok(event));
                }
                if let Some(error) = self.error.take() {
                    return Some(Err(error));
                }
                if self.finished {
                    return None;
                }
                if let Err(error) = self.read(provider).await {
                    self.finished = true;
                    self.error = Some(error);
                }
            }
        }

        /// Reads one chunk (or finishes the turn), queueing the events it completes.
        async fn read(&mut self, provider: &str) -> Result<(), ModelError> {
            if !self.turn.is_done() {
                match self.bytes.next().await {
                    Some(Ok(chunk)) => {
                        let events = self
                            .sse
                            .feed(&chunk)
                            .map_err(|m| super::http::malformed(provider, m))?;
                        for event in events {
                            self.pending.extend(self.turn.on_event(event)?);
                            if self.turn.is_done() {
                                break;
                            }
                        }
                        return Ok(());
                    }
                    Some(Err(e)) => return Err(super::http::transport_error(provider, &e)),
                    None => {}
                }
            }
            self.finished = true;
            let response = self.turn.finish()?;
            self.pending
                .push_back(ModelStreamEvent::Completed { response });
            Ok(())
        }
    }

    let state = State {
        bytes: response.bytes_stream().boxed(),
        sse: SseDecoder::default(),
        turn: decoder,
        pending: VecDeque::new(),
        error: None,
        finished: false,
    };
    futures::stream::unfold(state, move |mut st| async move {
        let item = st.next(provider).await?;
        Some((item, st))
    })
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut d = SseDecoder::default();
        let mut out = Vec::new();
        for c in chunks {
            out.extend(d.feed(c).unwrap());
        }
        out
    }

    fn ev(event: Option<&str>, data: &str) -> SseEvent {
        SseEvent {
            event: event.map(str::to_owned),
            data: data.to_owned(),
        }
    }

    #[test]
    fn events_split_anywhere_decode_the_same() {
        let text =
            "event: a\ndata: {\"x\":\"é\"}\n\n: comment\ndata: one\ndata: two\n\n".as_bytes();
        let whole = all(&[text]);
        assert_eq!(
            whole,
            vec![ev(Some("a"), "{\"x\":\"é\"}"), ev(None, "one\ntwo")]
        );
        for cut in 0..text.len() {
            assert_eq!(all(&[&text[..cut], &text[cut..]]), whole, "cut at {cut}");
        }
        let bytes: Vec<&[u8]> = text.chunks(1).collect();
        assert_eq!(all(&bytes), whole);
    }

    #[test]
    fn crlf_cr_bom_and_field_rules() {
        let got = all(&[
            b"\xef\xbb\xbfdata:no-space\r\n\r",
            b"\ndata\r\rid: 7\nretry: 10\ndata:  two spaces\n\n",
        ]);
        assert_eq!(
            got,
            vec![ev(None, "no-space"), ev(None, ""), ev(None, " two spaces")]
        );
    }

    #[test]
    fn an_unterminated_event_is_not_dispatched() {
        assert!(all(&[b"data: cut"]).is_empty());
        assert!(all(&[b"event: x\n\n"]).is_empty());
    }

    #[test]
    fn an_endless_line_is_an_error() {
        let mut d = SseDecoder::default();
        let chunk = vec![b'x'; 1024 * 1024];
        let mut result = Ok(Vec::new());
        for _ in 0..17 {
            result = d.feed(&chunk);
            if result.is_err() {
                break;
            }
        }
        assert_eq!(
            result.unwrap_err(),
            "an event in the stream is longer than 16 MiB"
        );
    }

    #[test]
    fn invalid_utf8_is_an_error() {
        let mut d = SseDecoder::default();
        let err = d.feed(b"data: \xff\n").unwrap_err();
        assert!(err.contains("not UTF-8"), "{err}");
    }
}
