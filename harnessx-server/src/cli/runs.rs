//! The commands about runs already started: `runs` (a list), `show` (one run: its state, what
//! it waits for, its transcript), `answer`, `approve`, `recover` and `cancel`.

use std::process::ExitCode;
use std::time::Duration;

use futures::StreamExt;
use harnessx_runtime::RecoveryChoice;
use serde_json::Value;

use crate::api::{AnswerBody, RunBody};
use crate::client::{Client, ClientError, RunQuery};

use super::Reply;
use super::client::{Place, explain};
use super::run::{answer_later, picked};
use super::terminal::shown;

/// How long `show` waits for a run's first stored event, and then for each next one, before
/// it takes the transcript as read (a run still going keeps sending).
const FIRST_EVENT: Duration = Duration::from_secs(3);
const NEXT_EVENT: Duration = Duration::from_millis(500);

/// The longest argument or result `show` prints of a tool call.
const SHOWN_CHARS: usize = 200;

/// The API's name of a decision given on the command line: `allow` (`allow_once`),
/// `conversation` (`allow_for_conversation`; `always` too) or `deny`, in any case.
pub(crate) fn decision_name(given: &str) -> Result<&'static str, String> {
    match given.trim().to_ascii_lowercase().as_str() {
        "allow" | "allow_once" | "y" | "yes" => Ok("allow_once"),
        "conversation" | "allow_for_conversation" | "always" | "a" => Ok("allow_for_conversation"),
        "deny" | "n" | "no" => Ok("deny"),
        other => Err(format!(
            "`{other}` is not a decision; use allow (this call), conversation (this tool for the \
             rest of the conversation) or deny"
        )),
    }
}

/// A recovery choice given on the command line, with its text.
pub(crate) fn recovery_choice(given: &str, text: Option<String>) -> Result<RecoveryChoice, String> {
    match given.trim().to_ascii_lowercase().replace('_', "-").as_str() {
        "took-effect" => Ok(RecoveryChoice::TookEffect { result: text }),
        "run-again" if text.is_some() => {
            Err("run-again takes no text: the call runs again as it was".into())
        }
        "run-again" => Ok(RecoveryChoice::RunAgain),
        "skip" => Ok(RecoveryChoice::Skip {
            note: text.unwrap_or_default(),
        }),
        _ => Err(format!(
            "`{given}` is not a recovery choice; use took-effect [RESULT], run-again or skip [NOTE]"
        )),
    }
}

fn cut(text: &str) -> String {
    let mut out: String = text.chars().take(SHOWN_CHARS).collect();
    if text.chars().count() > SHOWN_CHARS {
        out.push('…');
    }
    out
}

/// `harnessx runs`.
pub(crate) async fn list(
    client: &Client,
    agent: Option<String>,
    state: Option<String>,
    limit: Option<u32>,
) -> Result<ExitCode, String> {
    let mut query = RunQuery::new();
    if let Some(a) = agent {
        query = query.agent(a);
    }
    if let Some(s) = state {
        query = query.state(s);
    }
    if let Some(n) = limit {
        query = query.limit(n);
    }
    let list = client.runs(&query).await.map_err(explain)?;
    if list.runs.is_empty() {
        outln!("no runs");
        return Ok(ExitCode::SUCCESS);
    }
    outln!("{:>6}  {:<14} {:<16} input", "id", "state", "agent");
    for run in &list.runs {
        let input: String = run.input.chars().take(50).collect();
        outln!(
            "{:>6}  {:<14} {:<16} {}",
            run.id,
            shown(&run.state),
            shown(&run.agent),
            shown(&input)
        );
    }
    if list.next_before.is_some() {
        outln!("(more runs: raise --limit, up to 200)");
    }
    Ok(ExitCode::SUCCESS)
}

/// What `pending` asks, as lines to print.
fn pending_lines(pending: &Value) -> Vec<String> {
    let mut lines = Vec::new();
    match pending["kind"].as_str() {
        Some("question") => {
            let form = &pending["form"];
            if form["form"].as_str() == Some("simple") {
                lines.push(format!("? {}", form["question"].as_str().unwrap_or("")));
                for (i, c) in form["choices"].as_array().into_iter().flatten().enumerate() {
                    lines.push(format!("    {}. {}", i + 1, c.as_str().unwrap_or("")));
                }
            }
            for q in form["questions"].as_array().into_iter().flatten() {
                lines.push(format!(
                    "? [{}] {}",
                    q["header"].as_str().unwrap_or(""),
                    q["question"].as_str().unwrap_or("")
                ));
                for (i, o) in q["options"].as_array().into_iter().flatten().enumerate() {
                    lines.push(format!(
                        "    {}. {}",
                        i + 1,
                        o["label"].as_str().unwrap_or("")
                    ));
                }
            }
        }
        Some("approval") => lines.push(format!(
            "! approval: `{}` wants to run with {}",
            pending["tool_name"].as_str().unwrap_or(""),
            cut(&pending["arguments"].to_string())
        )),
        Some("recovery") => lines.push(format!(
            "! recovery: `{}` with {} was cut off before its outcome was known",
            pending["tool_name"].as_str().unwrap_or(""),
            cut(&pending["arguments"].to_string())
        )),
        _ => {}
    }
    lines
}

/// What an `answered` event's reply said.
fn reply_shown(reply: &Value) -> String {
    match reply["type"].as_str() {
        Some("answer") => {
            let user = &reply["reply"];
            match user["type"].as_str() {
                Some("free_text") => user["text"].as_str().unwrap_or("").to_owned(),
                _ => user["answers"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|a| {
                        let mut parts: Vec<String> = a["selected"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(|s| s.as_str().map(str::to_owned))
                            .collect();
                        parts.extend(a["text"].as_str().map(str::to_owned));
                        parts.join(", ")
                    })
                    .collect::<Vec<_>>()
                    .join("; "),
            }
        }
        Some("expired") => format!(
            "nobody answered within {} s",
            reply["window_seconds"].as_u64().unwrap_or(0)
        ),
        Some("decision") => reply["decision"].as_str().unwrap_or("").replace('_', " "),
        Some("recovery") => reply["choice"]["choice"]
            .as_str()
            .unwrap_or("")
            .replace('_', " "),
        _ => reply.to_string(),
    }
}

/// The run's transcript from its stored events: what the person said, the model's text, the
/// tool calls and results, what was asked and answered.
async fn transcript(client: &Client, run: &RunBody) -> Result<Vec<String>, String> {
    let finished = matches!(run.state.as_str(), "completed" | "failed" | "cancelled");
    let mut frames = client.events(run.id, 0).await.map_err(explain)?;
    let mut lines = vec![format!("you: {}", run.input)];
    let mut text = String::new();
    let flush = |text: &mut String, lines: &mut Vec<String>| {
        if !text.trim().is_empty() {
            lines.push(format!("assistant: {}", text.trim()));
        }
        text.clear();
    };
    let mut first = true;
    let mut calls = std::collections::HashSet::new();
    loop {
        let next = if finished {
            frames.next().await
        } else {
            let wait = if first { FIRST_EVENT } else { NEXT_EVENT };
            match tokio::time::timeout(wait, frames.next()).await {
                Ok(next) => next,
                Err(_) => break,
            }
        };
        first = false;
        let Some(frame) = next else { break };
        let frame = frame.map_err(explain)?;
        let data = &frame.data;
        match frame.event.as_str() {
            "text_delta" => text.push_str(data["text"].as_str().unwrap_or("")),
            "turn_completed" => flush(&mut text, &mut lines),
            "tool_call_started" => {
                flush(&mut text, &mut lines);
                // A call a resumed run makes again (reading its answer back) is shown once.
                let call = data["call_id"].as_str().unwrap_or("").to_owned();
                if !call.is_empty() && !calls.insert(call) {
                    continue;
                }
                lines.push(format!(
                    "→ {}({})",
                    data["name"].as_str().unwrap_or(""),
                    cut(data["arguments"].as_str().unwrap_or(""))
                ));
            }
            "tool_result" => {
                let result = &data["result"];
                let error = if result["is_error"].as_bool() == Some(true) {
                    "error: "
                } else {
                    ""
                };
                lines.push(format!(
                    "← {error}{}",
                    cut(result["content"].as_str().unwrap_or(""))
                ));
            }
            "question" | "approval" | "recovery" => {
                flush(&mut text, &mut lines);
                lines.extend(pending_lines(&data["pending"]));
            }
            "answered" => lines.push(format!("  answered: {}", reply_shown(&data["reply"]))),
            "failed" => {
                flush(&mut text, &mut lines);
                lines.push(format!("failed: {}", data["error"].as_str().unwrap_or("")));
            }
            "completed" => flush(&mut text, &mut lines),
            _ => {}
        }
    }
    flush(&mut text, &mut lines);
    Ok(lines)
}

/// `harnessx show RUN`.
pub(crate) async fn show(client: &Client, place: &Place, id: i64) -> Result<ExitCode, String> {
    let run = client.run(id).await.map_err(explain)?;
    let version = run
        .agent_version
        .map(|v| format!(" (version {v})"))
        .unwrap_or_default();
    outln!(
        "run {} of {}{version}, created {}",
        run.id,
        shown(&run.agent),
        run.created_at
    );
    outln!("conversation: {}", shown(&run.conversation));
    outln!("state: {}", shown(&run.state));
    if let Some(pending) = run.needs_input.first() {
        let kind = pending.kind.as_str();
        outln!("waits for {}:", waits_for_phrase(kind));
        let pending = serde_json::to_value(pending).unwrap_or_default();
        for line in pending_lines(&pending) {
            outln!("  {}", shown(&line));
        }
        outln!("answer it:");
        outln!(
            "{}",
            shown(&answer_later(run.id, kind, &run.conversation, place))
        );
    }
    if let Some(output) = &run.output {
        outln!("output: {}", shown(output));
    }
    if let Some(error) = &run.error {
        outln!("error: {}", shown(error));
    }
    outln!("\ntranscript:");
    for line in transcript(client, &run).await? {
        outln!("  {}", shown(&line).replace('\n', "\n    "));
    }
    Ok(ExitCode::SUCCESS)
}

fn waits_for_phrase(kind: &str) -> &'static str {
    match kind {
        "approval" => "an approval",
        "recovery" => "a recovery decision",
        _ => "an answer",
    }
}

/// A refusal of an answer: for one of the wrong kind, what the run waits for and the command
/// that answers it.
async fn refused(client: &Client, place: &Place, id: i64, e: ClientError) -> String {
    if e.code != "wrong_kind" {
        return explain(e);
    }
    let Ok(run) = client.run(id).await else {
        return explain(e);
    };
    let Some(kind) = run.needs_input.first().map(|p| p.kind.clone()) else {
        return explain(e);
    };
    let what = e.message.split(';').next().unwrap_or_default().to_owned();
    format!(
        "{what}; nothing was changed. Answer it with:\n{}",
        answer_later(id, &kind, &run.conversation, place)
    )
}

/// The labels given, each as the option of the run's question it names in another case.
async fn canonical_labels(client: &Client, id: i64, labels: Vec<String>) -> Vec<String> {
    let Ok(run) = client.run(id).await else {
        return labels;
    };
    let Some(question) = run
        .needs_input
        .iter()
        .find(|p| p.kind == "question")
        .and_then(|p| p.form.as_ref())
        .and_then(|form| form["questions"].as_array())
        .and_then(|qs| qs.first())
        .cloned()
    else {
        return labels;
    };
    let options: Vec<&str> = question["options"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|o| o["label"].as_str())
        .collect();
    labels
        .into_iter()
        .map(|label| match picked(&label, &options) {
            Some(found) if found.len() == 1 && label.parse::<usize>().is_err() => {
                found.into_iter().next().unwrap_or(label)
            }
            _ => label,
        })
        .collect()
}

fn done(run: &RunBody) -> ExitCode {
    outln!("run {} is {}", run.id, shown(&run.state));
    ExitCode::SUCCESS
}

/// `harnessx answer`.
pub(crate) async fn answer(
    client: &Client,
    place: &Place,
    id: i64,
    reply: Reply,
) -> Result<ExitCode, String> {
    let sent = match reply {
        Reply::Text(text) => client.answer(id, &AnswerBody::text(text)).await,
        Reply::Select(labels) => {
            let labels = canonical_labels(client, id, labels).await;
            client.answer(id, &AnswerBody::selected(labels)).await
        }
        Reply::Decision(d) => client.approve(id, decision_name(&d)?).await,
    };
    match sent {
        Ok(run) => Ok(done(&run)),
        Err(e) => Err(refused(client, place, id, e).await),
    }
}

/// `harnessx approve`.
pub(crate) async fn approve(
    client: &Client,
    place: &Place,
    id: i64,
    decision: &str,
) -> Result<ExitCode, String> {
    match client.approve(id, decision_name(decision)?).await {
        Ok(run) => Ok(done(&run)),
        Err(e) => Err(refused(client, place, id, e).await),
    }
}

/// `harnessx recover`.
pub(crate) async fn recover(
    client: &Client,
    place: &Place,
    id: i64,
    choice: &str,
    text: Option<String>,
) -> Result<ExitCode, String> {
    let body = AnswerBody {
        recovery: Some(recovery_choice(choice, text)?),
        ..AnswerBody::default()
    };
    match client.answer(id, &body).await {
        Ok(run) => Ok(done(&run)),
        Err(e) => Err(refused(client, place, id, e).await),
    }
}

/// `harnessx cancel`.
pub(crate) async fn cancel(client: &Client, id: i64) -> Result<ExitCode, String> {
    let run = client.cancel(id).await.map_err(explain)?;
    Ok(done(&run))
}

/// `harnessx runs prune --older-than AGE`: through the API, so it deletes as the server's own
/// retention does, on either store, locally or against `--server`.
pub(crate) async fn prune(
    client: &Client,
    older_than: std::time::Duration,
) -> Result<ExitCode, String> {
    let pruned: serde_json::Value = client
        .post(
            "/runs/prune",
            &serde_json::json!({"older_than_seconds": older_than.as_secs()}),
        )
        .await
        .map_err(explain)?;
    let deleted = pruned["deleted"].as_u64().unwrap_or(0);
    outln!(
        "deleted {deleted} finished run{} (those that finished before {})",
        if deleted == 1 { "" } else { "s" },
        shown(pruned["finished_before"].as_str().unwrap_or("the cut-off"))
    );
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions_and_recovery_choices_are_named() {
        assert_eq!(decision_name("Allow"), Ok("allow_once"));
        assert_eq!(
            recovery_choice("took_effect", Some("42".into())),
            Ok(RecoveryChoice::TookEffect {
                result: Some("42".into())
            })
        );
        assert_eq!(
            recovery_choice("run-again", Some("x".into())).unwrap_err(),
            "run-again takes no text: the call runs again as it was"
        );
        assert_eq!(
            recovery_choice("later", None).unwrap_err(),
            "`later` is not a recovery choice; use took-effect [RESULT], run-again or skip [NOTE]"
        );
    }
}
