//! What a waiting run asks a person, in one shape wherever the API shows it: a run's
//! `needs_input`, a conversation's `pending_question`, and the `pending` of a `question`,
//! `approval` or `recovery` frame of the run's event stream.

use harnessx::journal::PendingKind;
use harnessx_runtime::RunId;
use harnessx_runtime::store::Asked;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One thing a run waits for: a question (`ask_user`), an approval, or a recovery question (a
/// `manual` call whose outcome is unknown).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Pending {
    /// `question`, `approval` or `recovery`: also the name of the event-stream frame that
    /// announced it.
    pub kind: String,
    /// The waiting run.
    pub run_id: i64,
    /// The model's call id of the call it concerns (an answer names it).
    pub call_id: String,
    /// The model turn (1-based) of the call.
    pub turn: u32,
    /// The call's position in its turn.
    pub index: u32,
    /// The tool to approve, or the tool whose call may or may not have taken effect (absent for
    /// a question).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// The call's arguments (approvals and recovery questions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub arguments: Option<Value>,
    /// A question's form (`{"form": "simple", "question"}` or `{"form": "structured",
    /// "questions": [..]}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub form: Option<Value>,
    /// An approval's tool description, to show the person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Why a recovery question is asked: `interrupted` or `timed_out`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// When an unanswered question expires (RFC 3339, UTC); `null` for approvals and recovery
    /// questions, which wait for a person however long it takes.
    pub deadline: Option<String>,
}

impl Pending {
    /// What run `run` waits for, as the API shows it.
    pub fn of(run: RunId, asked: &Asked) -> Self {
        let p = &asked.pending;
        let mut pending = Self {
            kind: String::new(),
            run_id: run.0,
            call_id: p.call_id.clone(),
            turn: p.key.turn,
            index: p.key.index,
            tool_name: None,
            arguments: None,
            form: None,
            description: None,
            reason: None,
            deadline: asked.deadline_ms.map(super::rfc3339),
        };
        match &p.kind {
            PendingKind::Question { form, .. } => {
                pending.kind = "question".into();
                pending.form = serde_json::to_value(form).ok();
            }
            PendingKind::Approval { request } => {
                pending.kind = "approval".into();
                pending.tool_name = Some(request.tool_name.clone());
                pending.arguments = Some(request.arguments.clone());
                pending.description = Some(request.description.clone());
            }
            PendingKind::Recovery {
                reason,
                tool_name,
                arguments,
            } => {
                pending.kind = "recovery".into();
                pending.tool_name = Some(tool_name.clone());
                pending.arguments = Some(arguments.clone());
                pending.reason = serde_json::to_value(reason)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned));
            }
        }
        pending
    }
}
