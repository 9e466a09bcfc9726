//! Assembling a streamed turn: text, tool calls gathered by index from their fragments, usage and
//! the stop reason, emitting [`ModelStreamEvent`]s as pieces arrive.

use super::sse::SseEvent;
use super::{ModelError, ModelResponse, ModelStreamEvent, StopReason, Thinking, Usage};
use harnessx_core::output::ToolCall;

/// A provider's reading of its event stream.
pub(crate) trait TurnDecoder: Send + 'static {
    /// Reads one server-sent event, returning what it adds to the turn.
    fn on_event(&mut self, event: SseEvent) -> Result<Vec<ModelStreamEvent>, ModelError>;

    /// Whether the provider signalled the end of the turn (nothing more needs reading).
    fn is_done(&self) -> bool;

    /// The assembled turn once the byte stream ended or [`is_done`](Self::is_done); an error
    /// when the stream stopped before the turn was complete.
    fn finish(&mut self) -> Result<ModelResponse, ModelError>;
}

#[derive(Debug)]
struct CallSlot {
    key: u64,
    id: String,
    name: String,
    arguments: String,
    started: bool,
}

/// Gathers a turn's pieces. Tool-call arguments are kept exactly as sent, however malformed.
#[derive(Debug, Default)]
pub(crate) struct TurnAssembler {
    text: String,
    calls: Vec<CallSlot>,
    /// Thinking blocks under the provider's block index, in the order they started.
    thinking: Vec<(u64, Thinking)>,
    pub(crate) usage: Usage,
    pub(crate) stop_reason: Option<StopReason>,
    /// The model that answered, as the provider names it.
    pub(crate) model: Option<String>,
    /// The provider's identifier of the response.
    pub(crate) id: Option<String>,
}

impl TurnAssembler {
    /// Adds answer text.
    pub(crate) fn text(&mut self, text: &str, out: &mut Vec<ModelStreamEvent>) {
        if text.is_empty() {
            return;
        }
        self.text.push_str(text);
        out.push(ModelStreamEvent::TextDelta {
            text: text.to_owned(),
        });
    }

    /// Keeps the first non-empty `model` and `id` the provider sends.
    pub(crate) fn identify(&mut self, model: Option<&str>, id: Option<&str>) {
        let keep = |slot: &mut Option<String>, value: Option<&str>| {
            if slot.is_none()
                && let Some(value) = value.filter(|v| !v.is_empty())
            {
                *slot = Some(value.to_owned());
            }
        };
        keep(&mut self.model, model);
        keep(&mut self.id, id);
    }

    /// Starts the thinking block the provider numbers `key`.
    pub(crate) fn thinking_block(&mut self, key: u64, block: Thinking) {
        self.thinking.push((key, block));
    }

    /// Adds reasoning text and signature text to the thinking block under `key`; false when
    /// there is no such readable block.
    pub(crate) fn thinking_delta(&mut self, key: u64, text: &str, signature: &str) -> bool {
        let block = self.thinking.iter_mut().find(|(k, _)| *k == key);
        match block {
            Some((
                _,
                Thinking::Thinking {
                    thinking,
                    signature: sig,
                },
            )) => {
                thinking.push_str(text);
                sig.push_str(signature);
                true
            }
            _ => false,
        }
    }

    /// Whether a call under `key` exists.
    pub(crate) fn has_call(&self, key: u64) -> bool {
        self.calls.iter().any(|c| c.key == key)
    }

    /// The key of the newest call.
    pub(crate) fn last_call_key(&self) -> Option<u64> {
        self.calls.last().map(|c| c.key)
    }

    /// The number of calls so far.
    pub(crate) fn call_count(&self) -> usize {
        self.calls.len()
    }

    /// Adds to the call the provider numbers `key`: its id and name when first given, and an
    /// argument fragment. The call is announced once its name is known.
    pub(crate) fn call(
        &mut self,
        key: u64,
        id: Option<&str>,
        name: Option<&str>,
        fragment: &str,
        out: &mut Vec<ModelStreamEvent>,
    ) {
        let index = match self.calls.iter().position(|c| c.key == key) {
            Some(i) => i,
            None => {
                self.calls.push(CallSlot {
                    key,
                    id: String::new(),
                    name: String::new(),
                    arguments: String::new(),
                    started: false,
                });
                self.calls.len() - 1
            }
        };
        let slot = &mut self.calls[index];
        if let Some(id) = id.filter(|s| !s.is_empty())
            && slot.id.is_empty()
        {
            slot.id = id.to_owned();
        }
        if let Some(name) = name.filter(|s| !s.is_empty())
            && slot.name.is_empty()
        {
            slot.name = name.to_owned();
        }
        slot.arguments.push_str(fragment);
        if slot.started {
            if !fragment.is_empty() {
                out.push(ModelStreamEvent::ToolCallDelta {
                    index,
                    fragment: fragment.to_owned(),
                });
            }
        } else if !slot.name.is_empty() {
            slot.started = true;
            if slot.id.is_empty() {
                slot.id = format!("call_{index}");
            }
            out.push(ModelStreamEvent::ToolCallStarted {
                index,
                id: slot.id.clone(),
                name: slot.name.clone(),
            });
            if !slot.arguments.is_empty() {
                out.push(ModelStreamEvent::ToolCallDelta {
                    index,
                    fragment: slot.arguments.clone(),
                });
            }
        }
    }

    /// The assembled turn. A call the provider never named keeps an empty name, so the engine
    /// answers it with an error result instead of it vanishing.
    pub(crate) fn response(&self) -> ModelResponse {
        let tool_calls: Vec<ToolCall> = self
            .calls
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let id = if c.id.is_empty() {
                    format!("call_{i}")
                } else {
                    c.id.clone()
                };
                ToolCall::new(id, c.name.clone(), c.arguments.clone())
            })
            .collect();
        let stop_reason = match self.stop_reason {
            Some(StopReason::EndTurn) | None if !tool_calls.is_empty() => StopReason::ToolUse,
            Some(r) => r,
            None => StopReason::EndTurn,
        };
        let mut response = ModelResponse::text(self.text.clone())
            .with_tool_calls(tool_calls)
            .with_usage(self.usage)
            .with_stop_reason(stop_reason)
            .with_thinking(self.thinking.iter().map(|(_, t)| t.clone()).collect());
        response.model = self.model.clone();
        response.id = self.id.clone();
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleaved_fragments_assemble_by_key_and_announce_in_order() {
        let mut a = TurnAssembler::default();
        let mut out = Vec::new();
        a.call(0, Some("c0"), Some("read"), "", &mut out);
        a.call(1, Some("c1"), Some("grep"), "{\"q\"", &mut out);
        a.call(0, None, None, "{\"path\":", &mut out);
        a.call(1, None, None, ":1}", &mut out);
        a.call(0, None, None, "\"a\"}", &mut out);
        let r = a.response();
        assert_eq!(
            r.tool_calls[0],
            ToolCall::new("c0", "read", "{\"path\":\"a\"}")
        );
        assert_eq!(r.tool_calls[1], ToolCall::new("c1", "grep", "{\"q\":1}"));
        assert_eq!(r.stop_reason, StopReason::ToolUse);
        assert!(matches!(
            &out[0],
            ModelStreamEvent::ToolCallStarted { index: 0, .. }
        ));
        assert!(matches!(
            &out[1],
            ModelStreamEvent::ToolCallStarted { index: 1, .. }
        ));
        assert_eq!(out.len(), 6);
    }

    #[test]
    fn a_call_is_announced_when_its_name_arrives_with_what_came_before() {
        let mut a = TurnAssembler::default();
        let mut out = Vec::new();
        a.call(5, None, None, "{\"a\"", &mut out);
        assert!(out.is_empty());
        a.call(5, None, Some("t"), ":1}", &mut out);
        assert_eq!(
            out,
            vec![
                ModelStreamEvent::ToolCallStarted {
                    index: 0,
                    id: "call_0".into(),
                    name: "t".into()
                },
                ModelStreamEvent::ToolCallDelta {
                    index: 0,
                    fragment: "{\"a\":1}".into()
                },
            ]
        );
    }

    #[test]
    fn an_unnamed_call_is_kept() {
        let mut a = TurnAssembler::default();
        a.call(0, None, None, "{", &mut Vec::new());
        assert_eq!(
            a.response().tool_calls,
            vec![ToolCall::new("call_0", "", "{")]
        );
    }
}
